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
#include "standard-headers/freqhint/agent_protocol.h"
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
    size_t rx_len;
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
} VirtIOFreqHintStats;

struct VirtIOFreqHint {
    VirtIODevice parent_obj;

    VirtQueue *hintq;

    /* Properties */
    uint64_t host_features;
    uint32_t rate_window_ms;
    uint32_t forward_interval_ms;

    uint16_t num_vcpus;
    /* Guest-originated state: migrated. */
    VirtIOFreqHintVcpu *vcpus;
    /* Guest-visible configuration, host byte order: migrated. */
    uint16_t operator_floor;
    uint16_t operator_ceiling;
    struct virtio_freqhint_grant *grants;

    /*
     * Host state, deliberately not migrated: rate limiting and forwarding
     * restart on the destination, whose agent gets the full state anew.
     */
    uint16_t status;
    bool vm_running;
    VMChangeStateEntry *vmstate;
    QEMUTimer *rate_timer;
    QEMUTimer *forward_timer;
    int64_t last_forward_ms;
    int64_t newest_record_ns;
    bool resend_full;
    struct virtio_freqhint_record *scratch;  /* num_vcpus records */
    VirtIOFreqHintStats stats;
    VirtIOFreqHintLink link;
};

/* virtio-freqhint-agent.c */
void virtio_freqhint_link_realize(VirtIOFreqHint *fh);
void virtio_freqhint_link_unrealize(VirtIOFreqHint *fh);
bool virtio_freqhint_link_up(VirtIOFreqHint *fh);
/* The VM runs: a connection waiting for that sends its HELLO now. */
void virtio_freqhint_link_vm_running(VirtIOFreqHint *fh);
/*
 * Send one FH_MSG_HINTS frame.  Returns false if the agent could not take
 * it (the frame is dropped, never queued).
 */
bool virtio_freqhint_link_send_hints(VirtIOFreqHint *fh,
                                     struct virtio_freqhint_record *recs,
                                     unsigned int num, uint16_t flags);

/* virtio-freqhint.c, called by the link */
void virtio_freqhint_agent_connected(VirtIOFreqHint *fh);
void virtio_freqhint_agent_disconnected(VirtIOFreqHint *fh);
/* @grants is NULL when the agent did not accept FH_F_GRANTS. */
void virtio_freqhint_set_grants(VirtIOFreqHint *fh, uint16_t floor,
                                uint16_t ceiling,
                                const struct virtio_freqhint_grant *grants);

#endif
