/*
 * Virtio frequency hint device: the host side of the hints
 *
 * The device keeps the guest's hints and the driver's view of the host;
 * a backend carries the hints to whatever acts on them and brings back
 * what the host grants.  freqhint-agent talks to a host agent over a
 * socket chardev; freqhint-null (also what a device without a backend
 * gets) acts on nothing and grants the no-agent defaults.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef SYSTEM_FREQHINT_H
#define SYSTEM_FREQHINT_H

#include "qom/object.h"
#include "standard-headers/linux/virtio_freqhint.h"

#define TYPE_FREQHINT_BACKEND "freqhint-backend"
OBJECT_DECLARE_TYPE(FreqHintBackend, FreqHintBackendClass, FREQHINT_BACKEND)

#define TYPE_FREQHINT_NULL "freqhint-null"
#define TYPE_FREQHINT_AGENT "freqhint-agent"

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

/* What the backend offers the host, from the device's feature bits. */
#define FREQHINT_BACKEND_PERF       (1u << 0)
#define FREQHINT_BACKEND_GRANTS     (1u << 1)
#define FREQHINT_BACKEND_HOST_FREQ  (1u << 2)
#define FREQHINT_BACKEND_CUR_FREQ   (1u << 3)

/*
 * Feedback in: the backend's calls into its device.  None of them comes
 * before freqhint_backend_start() or after freqhint_backend_detach().
 */
typedef struct FreqHintBackendOps {
    /* The host listens: it wants the whole state (a FULL frame). */
    void (*connected)(void *opaque);
    /* The host went away: what it granted goes with it. */
    void (*disconnected)(void *opaque);
    /* A refused send_hints can be retried with the state of now. */
    void (*writable)(void *opaque);
    /* @grants (num_vcpus entries) is NULL if the host did not grant any. */
    void (*set_grants)(void *opaque, uint16_t floor, uint16_t ceiling,
                       const VirtIOFreqHintGrant *grants);
    /* Classes and per-vCPU class index, both validated. */
    void (*set_host_freq)(void *opaque, uint16_t num_classes,
                          const VirtIOFreqHintClass *classes,
                          const uint8_t *freq_class);
    /*
     * Per vCPU, the frequency in kHz its physical CPU runs at: 0 or within
     * its class of the latest set_host_freq (validated).
     */
    void (*set_cur_freq)(void *opaque, const uint32_t *cur_khz);
} FreqHintBackendOps;

struct FreqHintBackend {
    Object parent_obj;

    /* Set by freqhint_backend_attach(). */
    const FreqHintBackendOps *ops;
    void *opaque;
    uint16_t num_vcpus;
    uint32_t features;          /* FREQHINT_BACKEND_* */
    bool vm_running;
    bool started;
};

struct FreqHintBackendClass {
    ObjectClass parent_class;

    /* Checks that the backend can serve @b->num_vcpus vCPUs. */
    bool (*attach)(FreqHintBackend *b, Error **errp);
    void (*start)(FreqHintBackend *b);
    void (*detach)(FreqHintBackend *b);
    bool (*is_up)(FreqHintBackend *b);
    void (*vm_state)(FreqHintBackend *b, bool running);
    bool (*send_hints)(FreqHintBackend *b,
                       const struct virtio_freqhint_record *recs,
                       unsigned int num, bool full, int64_t timestamp_ns);
};

/*
 * Claim @b for one device of @num_vcpus vCPUs.  The backend calls @ops
 * only once freqhint_backend_start() says the device is ready.
 */
bool freqhint_backend_attach(FreqHintBackend *b, uint16_t num_vcpus,
                             uint32_t features, bool vm_running,
                             const FreqHintBackendOps *ops, void *opaque,
                             Error **errp);
void freqhint_backend_start(FreqHintBackend *b);
void freqhint_backend_detach(FreqHintBackend *b);
/* The host listens: hints sent now take effect. */
bool freqhint_backend_is_up(FreqHintBackend *b);
/* The VM runs or stops (the backend speaks to the host only while it runs). */
void freqhint_backend_vm_state(FreqHintBackend *b, bool running);
/*
 * Send @num records (little endian, as the guest wrote them), all of them
 * if @full.  Returns false if the host could not take them: they are
 * dropped, never queued, and ops->writable() follows when it can.
 */
bool freqhint_backend_send_hints(FreqHintBackend *b,
                                 const struct virtio_freqhint_record *recs,
                                 unsigned int num, bool full,
                                 int64_t timestamp_ns);

/* DEV-4 for one class; returns why it is invalid, or NULL. */
const char *virtio_freqhint_check_freq_class(const VirtIOFreqHintClass *c);

#endif
