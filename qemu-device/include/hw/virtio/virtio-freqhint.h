/*
 * Virtio frequency hint device
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QEMU_VIRTIO_FREQHINT_H
#define QEMU_VIRTIO_FREQHINT_H

#include "hw/virtio/virtio.h"
#include "system/runstate.h"
#include "standard-headers/linux/virtio_freqhint.h"
#include "system/freqhint.h"
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
    uint64_t snapshots;         /* snapshots built (to write or compare) */
    uint64_t cur_freq;          /* CUR_FREQ messages written to the eventq */
} VirtIOFreqHintStats;

struct VirtIOFreqHint {
    VirtIODevice parent_obj;

    VirtQueue *hintq;
    VirtQueue *eventq;          /* NULL without FEEDBACK and CPU_ID */

    /* Properties */
    FreqHintBackend *backend;
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
    uint32_t cur_freq_seq;      /* seq of the last CUR_FREQ written */

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
    uint32_t *cur_khz;          /* per vCPU index; 0: unknown */

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
    QEMUBH *event_bh;           /* every event buffer write (guarded) */
    int64_t last_forward_ms;
    int64_t last_feedback_ms;
    int64_t newest_record_ns;   /* QEMU_CLOCK_HOST; migrated (subsection) */
    bool resend_full;
    bool no_hints_pending;      /* the "no hint" frame of a stop not sent */
    struct virtio_freqhint_record *scratch;  /* num_vcpus records */
    uint8_t *event_buf;         /* event_buf_size bytes */
    /* The last snapshot written, seq zeroed: what the driver knows. */
    uint8_t *feedback_sent;
    bool feedback_sent_valid;
    /* CUR_FREQ: what the driver was last told, and what waits for it. */
    uint8_t *cur_freq_sent;     /* cur_khz[] as written, little endian */
    bool cur_freq_sent_valid;
    bool cur_freq_pending;
    int64_t last_cur_freq_ms;
    QEMUTimer *cur_freq_timer;
    VirtIOFreqHintStats stats;
};

#endif
