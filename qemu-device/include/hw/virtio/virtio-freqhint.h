/*
 * Virtio frequency hint device
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QEMU_VIRTIO_FREQHINT_H
#define QEMU_VIRTIO_FREQHINT_H

#include "hw/virtio/virtio.h"
#include "chardev/char-fe.h"
#include "hw/qdev-core.h"
#include "system/runstate.h"
#include "standard-headers/linux/virtio_freqhint.h"
#include "hw/virtio/virtio-freqhint-agent.h"
#include "qom/object.h"

#define TYPE_VIRTIO_FREQHINT "virtio-freqhint-device"
OBJECT_DECLARE_SIMPLE_TYPE(VirtIOFreqHint, VIRTIO_FREQHINT)

/* The latest valid record of one vCPU, in host byte order. */
typedef struct VirtIOFreqHintVcpu {
    uint16_t flags;
    uint16_t clamp_min;
    uint16_t clamp_max;
    uint16_t perf;
    uint32_t seq;
    /* Host state: changed since it was last sent to the agent. */
    bool dirty;
} VirtIOFreqHintVcpu;

/* What the host grants one vCPU, host byte order. */
typedef struct VirtIOFreqHintGrant {
    uint16_t floor;
    uint16_t ceiling;
} VirtIOFreqHintGrant;

/* One host frequency class, host byte order, validated. */
typedef struct VirtIOFreqHintClass {
    uint32_t min_khz;
    uint32_t max_khz;
    uint16_t perf_step;
    uint16_t num_freqs;
    uint32_t freqs_khz[VIRTIO_FREQHINT_MAX_FREQS];
} VirtIOFreqHintClass;

typedef enum VirtIOFreqHintLinkState {
    FREQHINT_LINK_DOWN,         /* no agent connection */
    FREQHINT_LINK_CONNECTED,    /* connected, HELLO waits for the VM to run */
    FREQHINT_LINK_HELLO_SENT,   /* waiting for WELCOME */
    FREQHINT_LINK_UP,           /* WELCOME received */
} VirtIOFreqHintLinkState;

/* The connection to the host agent (virtio-freqhint-agent.c). */
typedef struct VirtIOFreqHintLink {
    CharBackend chr;
    VirtIOFreqHintLinkState state;
    uint32_t features;          /* FH_F_* accepted by WELCOME */
    uint32_t keepalive_ms;
    QEMUTimer *timeout_timer;   /* handshake, then keepalive */
    DeviceListener cpu_listener; /* vCPU hot-plug: HELLO is out of date */
    unsigned int epoch;         /* changes with every open and close */
    size_t rx_len;
    /* tx_buf[tx_off..tx_len): the rest of a frame the socket took in part */
    size_t tx_off;
    size_t tx_len;
    guint tx_watch;             /* waiting for the socket to be writable */
    bool pong_pending;          /* a PONG the socket did not take */
    bool vcpus_pending;         /* a VCPUS frame the socket did not take */
    uint64_t pong_cookie;
    uint8_t rx_buf[sizeof(struct fh_frame_hdr) + FH_MAX_PAYLOAD];
    uint8_t tx_buf[sizeof(struct fh_frame_hdr) + FH_MAX_PAYLOAD];
} VirtIOFreqHintLink;

typedef struct VirtIOFreqHintStats {
    uint64_t buffers;           /* hint buffers accepted from the guest */
    uint64_t notifications;     /* hintq kicks that reached the device */
    uint64_t wakeups;           /* times the device ran the hint queue */
    uint64_t records;           /* records accepted */
    uint64_t forwarded;         /* records sent to the agent */
    uint64_t coalesced;         /* replaced before being sent (or no agent) */
    uint64_t rejected;          /* records refused by validation */
    uint64_t dropped;           /* records in frames the agent could not take */
    uint64_t agent_connects;    /* completed handshakes */
    uint64_t feedback;          /* FEEDBACK snapshots written to the eventq */
} VirtIOFreqHintStats;

struct VirtIOFreqHint {
    VirtIODevice parent_obj;

    VirtQueue *hintq;
    VirtQueue *eventq;          /* NULL without FEEDBACK and CPU_ID */

    /* Properties */
    uint64_t host_features;
    uint32_t rate_window_ms;
    uint32_t forward_interval_ms;
    uint16_t perf_step;
    uint16_t idle_share;

    /* Guest-visible constants, fixed at realize (compared on migration). */
    uint16_t num_vcpus;
    uint32_t event_buf_size;
    uint64_t *cpu_ids;          /* firmware id per vCPU index */

    /* Guest state: migrated. */
    VirtIOFreqHintVcpu *vcpus;
    uint32_t feedback_seq;      /* seq of the last snapshot written */
    bool cpu_ids_pending;       /* CPU_IDS not yet written since DRIVER_OK */
    bool feedback_pending;      /* a snapshot waits for rate and buffer */

    /*
     * Host state, deliberately not migrated: the destination's own agent
     * decides it, and until it connects the no-agent defaults hold.
     */
    uint16_t operator_floor;
    uint16_t operator_ceiling;
    VirtIOFreqHintGrant *grants;
    uint16_t num_freq_classes;
    VirtIOFreqHintClass freq_classes[VIRTIO_FREQHINT_MAX_FREQ_CLASSES];
    uint8_t *freq_class;        /* per vCPU index */

    /* Migration: the source's constants, compared in post_load. */
    uint64_t mig_host_features;
    uint32_t mig_rate_window_ms;
    uint16_t mig_perf_step;
    uint16_t mig_idle_share;
    uint64_t *mig_cpu_ids;
    uint32_t mig_num_cpu_ids;

    /*
     * Host state: rate limiting and forwarding restart on the destination,
     * whose agent gets the full state anew.
     */
    bool vm_running;
    VMChangeStateEntry *vmstate;
    QEMUTimer *rate_timer;
    QEMUTimer *forward_timer;
    QEMUTimer *feedback_timer;
    QEMUBH *status_bh;
    int64_t last_forward_ms;
    int64_t last_feedback_ms;
    int64_t newest_record_ns;
    bool resend_full;
    bool no_hints_pending;      /* the "no hint" frame of a stop not sent */
    struct virtio_freqhint_record *scratch;  /* num_vcpus records */
    uint8_t *event_buf;         /* event_buf_size bytes */
    /* The last snapshot written, seq zeroed: what the driver knows. */
    uint8_t *feedback_sent;
    bool feedback_sent_valid;
    VirtIOFreqHintStats stats;
    VirtIOFreqHintLink link;
};

/* virtio-freqhint-agent.c */
/* Checks the chardev; the link starts with virtio_freqhint_link_start(). */
bool virtio_freqhint_link_realize(VirtIOFreqHint *fh, Error **errp);
void virtio_freqhint_link_start(VirtIOFreqHint *fh);
void virtio_freqhint_link_unrealize(VirtIOFreqHint *fh);
bool virtio_freqhint_link_up(VirtIOFreqHint *fh);
/* The VM runs: a connection waiting for that sends its HELLO now. */
void virtio_freqhint_link_vm_running(VirtIOFreqHint *fh);
/*
 * Send one FH_MSG_HINTS frame.  Returns false if the agent could not take
 * it: the frame is dropped, never queued, and virtio_freqhint_agent_writable()
 * is called once the socket takes output again.
 */
bool virtio_freqhint_link_send_hints(VirtIOFreqHint *fh,
                                     struct virtio_freqhint_record *recs,
                                     unsigned int num, uint16_t flags);

/* virtio-freqhint.c, called by the link */
void virtio_freqhint_agent_connected(VirtIOFreqHint *fh);
void virtio_freqhint_agent_disconnected(VirtIOFreqHint *fh);
/* The socket takes output again after refusing a frame. */
void virtio_freqhint_agent_writable(VirtIOFreqHint *fh);
/* DEV-4 for one class; returns why it is invalid, or NULL. */
const char *virtio_freqhint_check_freq_class(const VirtIOFreqHintClass *c);
/* Classes and per-vCPU class, both already validated. */
void virtio_freqhint_set_host_freq(VirtIOFreqHint *fh, uint16_t num_classes,
                                   const VirtIOFreqHintClass *c,
                                   const uint8_t *freq_class);
/* @grants (num_vcpus entries) is NULL when the agent did not accept them. */
void virtio_freqhint_set_grants(VirtIOFreqHint *fh, uint16_t floor,
                                uint16_t ceiling,
                                const VirtIOFreqHintGrant *grants);

#endif
