/*
 * Virtio frequency hint device
 *
 * The guest reports, per vCPU, the utilization clamps and performance
 * request of what it runs.  The device validates each record, keeps the
 * latest one per vCPU and forwards changes, coalesced and rate bounded, to a
 * backend (system/freqhint.h: a host agent, or nothing).  What the
 * host grants comes back to the driver as FEEDBACK snapshots on the event
 * queue.
 *
 * Hints are state, not events: nothing is queued while no agent listens,
 * and a (re)connected agent gets the whole state at once.  The same holds
 * the other way: a snapshot the driver has no buffer for, or that comes
 * within a rate window of the previous one, is kept as "pending" and
 * written, with the state of that moment, when a buffer and the window
 * allow.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qemu/iov.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "hw/boards.h"
#include "hw/core/cpu.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "hw/qdev-properties.h"
#include "hw/qdev-properties-system.h"
#include "hw/virtio/virtio.h"
#include "hw/virtio/virtio-freqhint.h"
#include "system/freqhint-agent.h"
#include "qom/object_interfaces.h"
#include "migration/vmstate.h"
#include "system/runstate.h"
#include "trace.h"

#define FREQHINT_QUEUE_SIZE         64
/*
 * Buffers taken per wakeup, whatever the driver keeps adding (tx_burst),
 * and no more records than one buffer can carry (num_vcpus, at least
 * FREQHINT_BURST): one full buffer already says everything, so the work
 * done under the BQL per window is O(num_vcpus), not 16 times that.
 */
#define FREQHINT_BURST              16
#define FREQHINT_MAX_WINDOW_MS      1000
#define FREQHINT_MAX_INTERVAL_MS    1000

#define FREQHINT_EVENT_FEATURES ((1ULL << VIRTIO_FREQHINT_F_FEEDBACK) | \
                                 (1ULL << VIRTIO_FREQHINT_F_CPU_ID))

static void virtio_freqhint_push_events(VirtIOFreqHint *fh);

/* The no-agent defaults of the host feedback state. */
static void virtio_freqhint_reset_host_state(VirtIOFreqHint *fh)
{
    fh->operator_floor = 0;
    fh->operator_ceiling = VIRTIO_FREQHINT_SCALE;
    for (int i = 0; i < fh->num_vcpus; i++) {
        fh->grants[i].floor = 0;
        fh->grants[i].ceiling = VIRTIO_FREQHINT_SCALE;
    }
    /* DEV-7: no agent, no host frequencies. */
    fh->num_freq_classes = 0;
    memset(fh->freq_classes, 0, sizeof(fh->freq_classes));
    memset(fh->freq_class, VIRTIO_FREQHINT_NO_FREQ_CLASS, fh->num_vcpus);
    /* Nor their current frequencies. */
    memset(fh->cur_khz, 0, fh->num_vcpus * sizeof(*fh->cur_khz));
}

static void virtio_freqhint_make_record(VirtIOFreqHint *fh, unsigned int vcpu,
                                        struct virtio_freqhint_record *rec)
{
    VirtIOFreqHintVcpu *v = &fh->vcpus[vcpu];

    rec->vcpu = cpu_to_le16(vcpu);
    rec->flags = cpu_to_le16(v->flags);
    rec->clamp_min = cpu_to_le16(v->clamp_min);
    rec->clamp_max = cpu_to_le16(v->clamp_max);
    rec->perf = cpu_to_le16(v->perf);
    rec->reserved = 0;
    rec->seq = cpu_to_le32(v->seq);
}

/*
 * Send the first @n records of fh->scratch.  A frame the socket does not
 * take is lost; the backend calls virtio_freqhint_agent_writable() when it
 * can take the state as it is then.
 */
static bool virtio_freqhint_send(VirtIOFreqHint *fh, unsigned int n,
                                 uint16_t flags)
{
    if (!freqhint_backend_send_hints(fh->backend, fh->scratch, n,
                                     flags & FH_HINTS_F_FULL,
                                     fh->newest_record_ns)) {
        /* The next frame carries the whole state again. */
        fh->stats.dropped += n;
        fh->resend_full = true;
        trace_virtio_freqhint_forward_dropped(fh, n);
        return false;
    }
    fh->last_forward_ms = qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL);
    fh->stats.forwarded += n;
    trace_virtio_freqhint_forward(fh, n, flags);
    return true;
}

/*
 * Send what changed since the last frame, or everything when a frame was
 * lost.  Called at most once per forward-interval-ms.
 */
static void virtio_freqhint_forward(VirtIOFreqHint *fh)
{
    unsigned int n = 0;
    uint16_t flags = 0;

    /*
     * A VM that does not run has no influence on the host: its agent was
     * told "no hint" when it stopped, and gets the whole state when it
     * runs again.
     */
    if (!freqhint_backend_is_up(fh->backend) || !fh->vm_running) {
        return;
    }
    for (unsigned int i = 0; i < fh->num_vcpus; i++) {
        if (fh->resend_full || fh->vcpus[i].dirty) {
            virtio_freqhint_make_record(fh, i, &fh->scratch[n++]);
        }
    }
    if (!n) {
        return;
    }
    if (fh->resend_full) {
        flags |= FH_HINTS_F_FULL;
    }

    if (!virtio_freqhint_send(fh, n, flags)) {
        /* No retry from a timer: virtio_freqhint_agent_writable() sends. */
        return;
    }
    fh->resend_full = false;
    for (unsigned int i = 0; i < fh->num_vcpus; i++) {
        fh->vcpus[i].dirty = false;
    }
}

/*
 * Tell the agent that no vCPU has a hint, keeping the device's own state:
 * the VM stopped running.  Its whole state goes out when it runs again.
 */
static void virtio_freqhint_send_no_hints(VirtIOFreqHint *fh)
{
    if (!freqhint_backend_is_up(fh->backend)) {
        return;
    }
    memset(fh->scratch, 0, fh->num_vcpus * sizeof(*fh->scratch));
    for (unsigned int i = 0; i < fh->num_vcpus; i++) {
        fh->scratch[i].vcpu = cpu_to_le16(i);
    }
    timer_del(fh->forward_timer);
    /* Not taken: it goes out when the socket is writable, if still true. */
    fh->no_hints_pending = !virtio_freqhint_send(fh, fh->num_vcpus,
                                                 FH_HINTS_F_FULL);
    fh->resend_full = true;
}

static void virtio_freqhint_schedule_forward(VirtIOFreqHint *fh)
{
    int64_t now = qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL);
    int64_t due = fh->last_forward_ms + fh->forward_interval_ms;

    if (timer_pending(fh->forward_timer)) {
        return;
    }
    if (now >= due) {
        virtio_freqhint_forward(fh);
    } else {
        timer_mod(fh->forward_timer, due);
    }
}

static void virtio_freqhint_forward_timer(void *opaque)
{
    virtio_freqhint_forward(opaque);
}

/*
 * Every vCPU back to "no hint" (a reset, or a driver that broke the
 * device).  Only vCPUs that held a hint are news for the agent, and they
 * go out through the forward interval like any other change: a guest that
 * resets or breaks the device in a loop costs the agent no more frames
 * than one that sends hints.
 */
static void virtio_freqhint_clear_hints(VirtIOFreqHint *fh)
{
    bool held = false;

    for (unsigned int i = 0; i < fh->num_vcpus; i++) {
        VirtIOFreqHintVcpu *v = &fh->vcpus[i];
        bool had = v->flags != 0;

        held |= had;
        *v = (VirtIOFreqHintVcpu) { .dirty = had || v->dirty };
    }
    trace_virtio_freqhint_clear_hints(fh, held);
    if (held) {
        virtio_freqhint_schedule_forward(fh);
    }
}

/*
 * Per-record rules (fh_record_why(), shared with the agent): a bad record
 * is refused, the rest of the batch stays.
 */
static const char *virtio_freqhint_check_record(VirtIOFreqHint *fh,
                                                uint16_t vcpu, uint16_t flags,
                                                uint16_t min, uint16_t max,
                                                uint16_t perf, uint16_t rsvd,
                                                bool check_features)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(fh);
    bool perf_ok = !check_features ||
                   virtio_vdev_has_feature(vdev, VIRTIO_FREQHINT_F_PERF);

    return fh_record_why(fh->num_vcpus, vcpu, flags, min, max, perf, rsvd,
                         perf_ok);
}

static void virtio_freqhint_apply(VirtIOFreqHint *fh,
                                  const struct virtio_freqhint_record *rec)
{
    uint16_t vcpu = le16_to_cpu(rec->vcpu);
    uint16_t flags = le16_to_cpu(rec->flags);
    uint16_t min = le16_to_cpu(rec->clamp_min);
    uint16_t max = le16_to_cpu(rec->clamp_max);
    uint16_t perf = le16_to_cpu(rec->perf);
    const char *why;
    VirtIOFreqHintVcpu *v;

    why = virtio_freqhint_check_record(fh, vcpu, flags, min, max, perf,
                                       le16_to_cpu(rec->reserved), true);
    if (why) {
        fh->stats.rejected++;
        trace_virtio_freqhint_record_rejected(fh, vcpu, flags, why);
        return;
    }

    v = &fh->vcpus[vcpu];
    if (v->dirty) {
        fh->stats.coalesced++;
    }
    v->flags = flags;
    v->clamp_min = min;
    v->clamp_max = max;
    v->perf = perf;
    v->seq = le32_to_cpu(rec->seq);
    v->dirty = true;
    fh->stats.records++;
    trace_virtio_freqhint_record(fh, vcpu, flags, min, max, perf, v->seq);
}

/*
 * Handle one buffer.  Structural errors mark the device broken and nothing
 * of the buffer is used.  Returns the number of records the buffer held,
 * or -1 if the device is now broken.
 */
static int virtio_freqhint_handle_elem(VirtIOFreqHint *fh,
                                       VirtQueueElement *elem)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(fh);
    struct virtio_freqhint_hints hdr;
    size_t len, max_len;
    uint16_t num;

    if (elem->in_num) {
        virtio_error(vdev, "virtio-freqhint: device-writable descriptor "
                     "in a hint buffer");
        return -1;
    }
    len = iov_size(elem->out_sg, elem->out_num);
    max_len = sizeof(hdr) + fh->num_vcpus * sizeof(*fh->scratch);
    if (len < sizeof(hdr) + sizeof(*fh->scratch) || len > max_len) {
        virtio_error(vdev, "virtio-freqhint: hint buffer of %zu bytes", len);
        return -1;
    }
    if (iov_to_buf(elem->out_sg, elem->out_num, 0, &hdr, sizeof(hdr)) !=
        sizeof(hdr)) {
        virtio_error(vdev, "virtio-freqhint: short hint header");
        return -1;
    }
    if (le16_to_cpu(hdr.msg_type) != VIRTIO_FREQHINT_MSG_HINTS) {
        virtio_error(vdev, "virtio-freqhint: unknown message type %u",
                     le16_to_cpu(hdr.msg_type));
        return -1;
    }
    if (hdr.reserved[0] || hdr.reserved[1] || hdr.reserved[2] ||
        hdr.reserved[3]) {
        virtio_error(vdev, "virtio-freqhint: reserved header bytes set");
        return -1;
    }
    num = le16_to_cpu(hdr.num_records);
    if (num == 0 || num > fh->num_vcpus ||
        len != sizeof(hdr) + num * sizeof(*fh->scratch)) {
        virtio_error(vdev, "virtio-freqhint: %u records in %zu bytes",
                     num, len);
        return -1;
    }
    if (iov_to_buf(elem->out_sg, elem->out_num, sizeof(hdr), fh->scratch,
                   num * sizeof(*fh->scratch)) !=
        num * sizeof(*fh->scratch)) {
        virtio_error(vdev, "virtio-freqhint: short hint buffer");
        return -1;
    }

    fh->newest_record_ns = qemu_clock_get_ns(QEMU_CLOCK_HOST);
    for (unsigned int i = 0; i < num; i++) {
        virtio_freqhint_apply(fh, &fh->scratch[i]);
    }
    fh->stats.buffers++;
    return num;
}

/* The driver may be served: DRIVER_OK, not broken, the VM running. */
static bool virtio_freqhint_driver_ready(VirtIOFreqHint *fh)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(fh);

    return vdev->vm_running && !vdev->broken &&
           (vdev->status & VIRTIO_CONFIG_S_DRIVER_OK);
}

/*
 * Take up to FREQHINT_BURST buffers, and stop once they held as many
 * records as one buffer may.  Returns true if anything was consumed; what
 * is left waits for the next wakeup.
 */
static bool virtio_freqhint_drain(VirtIOFreqHint *fh)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(fh);
    unsigned int budget = MAX(fh->num_vcpus, FREQHINT_BURST);
    unsigned int records = 0;
    VirtQueueElement *elem;
    bool used = false;

    for (int n = 0; n < FREQHINT_BURST && records < budget &&
         (elem = virtqueue_pop(fh->hintq, sizeof(VirtQueueElement))); n++) {
        int num = virtio_freqhint_handle_elem(fh, elem);

        if (num < 0) {
            virtqueue_detach_element(fh->hintq, elem, 0);
            g_free(elem);
            break;
        }
        virtqueue_push(fh->hintq, elem, 0);
        g_free(elem);
        records += num;
        used = true;
    }
    if (used) {
        virtio_notify(vdev, fh->hintq);
        virtio_freqhint_schedule_forward(fh);
    }
    /*
     * A driver that broke the device, with a bad buffer or a bad ring,
     * loses its influence until it resets the device.
     */
    if (vdev->broken) {
        virtio_freqhint_clear_hints(fh);
    }
    return used;
}

/*
 * Run the hint queue once, then stay deaf for rate-window-ms: the guest's
 * notifications are off and the rate timer runs the queue next.  Whatever
 * the guest does, the hint queue costs at most one wakeup per window.
 */
static void virtio_freqhint_wakeup(VirtIOFreqHint *fh)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(fh);

    /*
     * A driver that cleared DRIVER_OK without a reset, or a stopped VM:
     * no window opens, so no timer keeps coming back for buffers nobody
     * may take.  Notifications stay on; set_status runs the queue when
     * DRIVER_OK is set again.
     */
    if (!virtio_freqhint_driver_ready(fh) ||
        !virtio_queue_ready(fh->hintq)) {
        virtio_queue_set_notification(fh->hintq, 1);
        return;
    }
    fh->stats.wakeups++;
    virtio_freqhint_drain(fh);
    if (vdev->broken) {
        return;
    }
    virtio_queue_set_notification(fh->hintq, 0);
    timer_mod(fh->rate_timer,
              qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL) + fh->rate_window_ms);
}

static void virtio_freqhint_handle_hintq(VirtIODevice *vdev, VirtQueue *vq)
{
    VirtIOFreqHint *fh = VIRTIO_FREQHINT(vdev);

    /*
     * A kick the stop of the VM flushed out of an ioeventfd (like
     * virtio-net's "device was stopped but VCPU wasn't"): the ring is not
     * touched while the VM is stopped; set_status runs the queue on resume.
     */
    if (!vdev->vm_running) {
        return;
    }
    fh->stats.notifications++;
    trace_virtio_freqhint_kick(fh);
    if (timer_pending(fh->rate_timer)) {
        /* A driver ignoring VRING_USED_F_NO_NOTIFY: the timer drains. */
        return;
    }
    virtio_freqhint_wakeup(fh);
}

/* The end of a rate window. */
static void virtio_freqhint_rate_timer(void *opaque)
{
    VirtIOFreqHint *fh = opaque;

    if (virtio_queue_empty(fh->hintq)) {
        virtio_queue_set_notification(fh->hintq, 1);
        /* A buffer added while notifications were off would wait forever. */
        if (virtio_queue_empty(fh->hintq)) {
            return;
        }
    }
    /* Buffers came during the window: a new one starts. */
    virtio_freqhint_wakeup(fh);
}

/*
 * Event queue.  Buffers are the driver's; a snapshot or CPU_IDS message
 * goes into one only when one is posted, else it waits as a flag.
 */

static bool virtio_freqhint_eventq_negotiated(VirtIOFreqHint *fh)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(fh);

    return fh->eventq && (vdev->guest_features & FREQHINT_EVENT_FEATURES);
}

/* One posted event buffer, or NULL (none posted, or a bad one). */
static VirtQueueElement *virtio_freqhint_event_pop(VirtIOFreqHint *fh)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(fh);
    VirtQueueElement *elem;
    size_t size;

    elem = virtqueue_pop(fh->eventq, sizeof(VirtQueueElement));
    if (!elem) {
        return NULL;
    }
    size = iov_size(elem->in_sg, elem->in_num);
    if (elem->out_num || size < fh->event_buf_size) {
        virtio_error(vdev, "virtio-freqhint: event buffer of %zu writable "
                     "bytes (%u needed), %u readable descriptors", size,
                     fh->event_buf_size, elem->out_num);
        virtqueue_detach_element(fh->eventq, elem, 0);
        g_free(elem);
        virtio_freqhint_clear_hints(fh);
        return NULL;
    }
    return elem;
}

static void virtio_freqhint_event_push(VirtIOFreqHint *fh,
                                       VirtQueueElement *elem, size_t len)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(fh);

    iov_from_buf(elem->in_sg, elem->in_num, 0, fh->event_buf, len);
    virtqueue_push(fh->eventq, elem, len);
    g_free(elem);
    virtio_notify(vdev, fh->eventq);
}

static size_t virtio_freqhint_build_cpu_ids(VirtIOFreqHint *fh)
{
    uint8_t *p = fh->event_buf;

    memset(p, 0, sizeof(struct virtio_freqhint_cpu_ids));
    stw_le_p(p, VIRTIO_FREQHINT_MSG_CPU_IDS);
    stw_le_p(p + 2, fh->num_vcpus);
    p += sizeof(struct virtio_freqhint_cpu_ids);
    for (unsigned int i = 0; i < fh->num_vcpus; i++) {
        stq_le_p(p + 8 * i, fh->cpu_ids[i]);
    }
    return sizeof(struct virtio_freqhint_cpu_ids) + 8 * fh->num_vcpus;
}

/* The whole host feedback state as a FEEDBACK message; seq left zero. */
static size_t virtio_freqhint_build_feedback(VirtIOFreqHint *fh, uint8_t *p)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(fh);
    bool host_freq = virtio_vdev_has_feature(vdev,
                                             VIRTIO_FREQHINT_F_HOST_FREQ);
    uint16_t num_classes = host_freq ? fh->num_freq_classes : 0;
    size_t len = sizeof(struct virtio_freqhint_feedback) +
                 fh->num_vcpus * sizeof(struct virtio_freqhint_vcpu_feedback);
    uint8_t *c;

    memset(p, 0, len);
    stw_le_p(p, VIRTIO_FREQHINT_MSG_FEEDBACK);
    stw_le_p(p + 2, freqhint_backend_is_up(fh->backend) ?
             VIRTIO_FREQHINT_FB_AGENT : 0);
    stw_le_p(p + 8, fh->operator_floor);
    stw_le_p(p + 10, fh->operator_ceiling);
    stw_le_p(p + 12, fh->num_vcpus);
    stw_le_p(p + 14, num_classes);
    c = p + offsetof(struct virtio_freqhint_feedback, classes);
    for (unsigned int i = 0; i < num_classes; i++) {
        const VirtIOFreqHintClass *k = &fh->freq_classes[i];
        uint8_t *e = c + i * sizeof(struct virtio_freqhint_freq_class);

        stl_le_p(e, k->min_khz);
        stl_le_p(e + 4, k->max_khz);
        stw_le_p(e + 8, k->perf_step);
        stw_le_p(e + 10, k->num_freqs);
        for (unsigned int j = 0; j < VIRTIO_FREQHINT_MAX_FREQS; j++) {
            stl_le_p(e + 12 + 4 * j, k->freqs_khz[j]);
        }
    }
    p += sizeof(struct virtio_freqhint_feedback);
    for (unsigned int i = 0; i < fh->num_vcpus; i++) {
        uint8_t *v = p + i * sizeof(struct virtio_freqhint_vcpu_feedback);

        stw_le_p(v, fh->grants[i].floor);
        stw_le_p(v + 2, fh->grants[i].ceiling);
        v[4] = host_freq ? fh->freq_class[i] : VIRTIO_FREQHINT_NO_FREQ_CLASS;
    }
    return len;
}

/* A pending snapshot, on the leading edge and at most one per window. */
static void virtio_freqhint_push_feedback(VirtIOFreqHint *fh)
{
    VirtQueueElement *elem;
    int64_t now, due;
    size_t len;

    now = qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL);
    due = fh->last_feedback_ms + fh->rate_window_ms;
    if (now < due) {
        if (!timer_pending(fh->feedback_timer)) {
            timer_mod(fh->feedback_timer, due);
        }
        return;
    }
    /* Nothing to write into: a kick or a buffer brings us back. */
    if (virtio_queue_empty(fh->eventq)) {
        return;
    }
    /*
     * A change undone while the snapshot waited (an agent that came and
     * went within a window) is no news: the driver has this state.
     */
    len = virtio_freqhint_build_feedback(fh, fh->event_buf);
    fh->stats.snapshots++;
    if (fh->feedback_sent_valid && !memcmp(fh->event_buf, fh->feedback_sent,
                                           len)) {
        fh->feedback_pending = false;
        return;
    }
    elem = virtio_freqhint_event_pop(fh);
    if (!elem) {
        /* The next posted buffer (a kick on the eventq) takes it. */
        return;
    }
    memcpy(fh->feedback_sent, fh->event_buf, len);
    fh->feedback_sent_valid = true;
    stl_le_p(fh->event_buf + 4, ++fh->feedback_seq);
    virtio_freqhint_event_push(fh, elem, len);
    fh->feedback_pending = false;
    fh->last_feedback_ms = now;
    fh->stats.feedback++;
    trace_virtio_freqhint_feedback(fh, fh->feedback_seq,
                                   lduw_le_p(fh->event_buf + 2));
}

/*
 * The vCPUs' current frequencies as the driver may be told them now, into
 * event_buf: 0 while FB_ACTIVE is clear, and for a vCPU without a class or
 * with a value its class does not hold (classes changed since the agent
 * sampled); seq left zero.
 */
static size_t virtio_freqhint_build_cur_freq(VirtIOFreqHint *fh)
{
    bool active = freqhint_backend_is_up(fh->backend);
    uint8_t *p = fh->event_buf;

    stw_le_p(p, VIRTIO_FREQHINT_MSG_CUR_FREQ);
    stw_le_p(p + 2, fh->num_vcpus);
    stl_le_p(p + 4, 0);
    p += sizeof(struct virtio_freqhint_cur_freq);
    for (unsigned int i = 0; i < fh->num_vcpus; i++) {
        uint8_t k = fh->freq_class[i];
        uint32_t khz = fh->cur_khz[i];

        if (!active || k >= fh->num_freq_classes ||
            khz < fh->freq_classes[k].min_khz ||
            khz > fh->freq_classes[k].max_khz) {
            khz = 0;
        }
        stl_le_p(p + 4 * i, khz);
    }
    return sizeof(struct virtio_freqhint_cur_freq) + 4 * fh->num_vcpus;
}

/*
 * A CUR_FREQ if a value changed since the last one the driver got, on the
 * leading edge and at most one per rate window, like a snapshot; built
 * when written, so it carries the latest values.
 */
static void virtio_freqhint_push_cur_freq(VirtIOFreqHint *fh)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(fh);
    size_t vals = fh->num_vcpus * sizeof(uint32_t);
    VirtQueueElement *elem;
    int64_t now, due;
    size_t len;

    if (!fh->cur_freq_pending) {
        return;
    }
    if (!virtio_vdev_has_feature(vdev, VIRTIO_FREQHINT_F_CUR_FREQ)) {
        fh->cur_freq_pending = false;
        return;
    }
    len = virtio_freqhint_build_cur_freq(fh);
    if (fh->cur_freq_sent_valid &&
        !memcmp(fh->event_buf + sizeof(struct virtio_freqhint_cur_freq),
                fh->cur_freq_sent, vals)) {
        /* Changed and changed back, or not for the driver: no news. */
        fh->cur_freq_pending = false;
        trace_virtio_freqhint_cur_freq_unchanged(fh);
        return;
    }
    now = qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL);
    due = fh->last_cur_freq_ms + fh->rate_window_ms;
    if (now < due) {
        if (!timer_pending(fh->cur_freq_timer)) {
            timer_mod(fh->cur_freq_timer, due);
        }
        return;
    }
    if (virtio_queue_empty(fh->eventq)) {
        return;
    }
    elem = virtio_freqhint_event_pop(fh);
    if (!elem) {
        return;
    }
    memcpy(fh->cur_freq_sent,
           fh->event_buf + sizeof(struct virtio_freqhint_cur_freq), vals);
    fh->cur_freq_sent_valid = true;
    stl_le_p(fh->event_buf + 4, ++fh->cur_freq_seq);
    virtio_freqhint_event_push(fh, elem, len);
    fh->cur_freq_pending = false;
    fh->last_cur_freq_ms = now;
    fh->stats.cur_freq++;
    trace_virtio_freqhint_cur_freq(fh, fh->cur_freq_seq);
}

/*
 * Write what the driver is owed: CPU_IDS first (once after DRIVER_OK), then
 * a FEEDBACK snapshot if one is pending, on the leading edge and at most
 * one per rate window, then a CUR_FREQ under the same rules once no
 * snapshot is due.  What cannot go now stays a flag: the message, built
 * when it is written, always carries the latest state.
 */
static void virtio_freqhint_push_events(VirtIOFreqHint *fh)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(fh);
    VirtQueueElement *elem;
    size_t len;

    if (!virtio_freqhint_eventq_negotiated(fh) ||
        !virtio_freqhint_driver_ready(fh) || !fh->vm_running ||
        !virtio_queue_ready(fh->eventq)) {
        return;
    }
    if (fh->cpu_ids_pending) {
        if (virtio_vdev_has_feature(vdev, VIRTIO_FREQHINT_F_CPU_ID)) {
            elem = virtio_freqhint_event_pop(fh);
            if (!elem) {
                return;
            }
            len = virtio_freqhint_build_cpu_ids(fh);
            virtio_freqhint_event_push(fh, elem, len);
            trace_virtio_freqhint_cpu_ids(fh, fh->num_vcpus);
        }
        fh->cpu_ids_pending = false;
    }
    if (fh->feedback_pending &&
        !virtio_vdev_has_feature(vdev, VIRTIO_FREQHINT_F_FEEDBACK)) {
        fh->feedback_pending = false;
    }
    if (fh->feedback_pending) {
        virtio_freqhint_push_feedback(fh);
    }
    /* DEV-41: a CUR_FREQ refers to classes the driver has seen. */
    if (!fh->feedback_pending) {
        virtio_freqhint_push_cur_freq(fh);
    }
}

/*
 * Event buffers are written only from this bottom half, which carries the
 * transport's reentrancy guard: a buffer a driver aimed at the device's
 * own registers cannot reset the device in the middle of a write.  The
 * chardev handler, the timer and the kick only schedule it.
 */
static void virtio_freqhint_event_bh(void *opaque)
{
    virtio_freqhint_push_events(opaque);
}

/*
 * The host feedback state may have changed.  Only a real change makes a
 * snapshot due: the driver's view is compared with the state now.
 */
static void virtio_freqhint_feedback_changed(VirtIOFreqHint *fh,
                                             bool changed)
{
    if (changed) {
        fh->feedback_pending = true;
        qemu_bh_schedule(fh->event_bh);
    }
}

static void virtio_freqhint_feedback_timer(void *opaque)
{
    VirtIOFreqHint *fh = opaque;

    qemu_bh_schedule(fh->event_bh);
}

/* The values the driver may see may have changed: compared when written. */
static void virtio_freqhint_cur_freq_changed(VirtIOFreqHint *fh)
{
    fh->cur_freq_pending = true;
    qemu_bh_schedule(fh->event_bh);
}

static void virtio_freqhint_handle_eventq(VirtIODevice *vdev, VirtQueue *vq)
{
    if (!vdev->vm_running) {
        return;
    }
    qemu_bh_schedule(VIRTIO_FREQHINT(vdev)->event_bh);
}

static void virtio_freqhint_get_config(VirtIODevice *vdev, uint8_t *data)
{
    VirtIOFreqHint *fh = VIRTIO_FREQHINT(vdev);
    struct virtio_freqhint_config cfg = {
        .num_vcpus = cpu_to_le16(fh->num_vcpus),
        .max_records = cpu_to_le16(fh->num_vcpus),
        .rate_window_ms = cpu_to_le16(fh->rate_window_ms),
        .perf_step = cpu_to_le16(fh->perf_step),
        .idle_share = cpu_to_le16(fh->idle_share),
        .event_buf_size = cpu_to_le32(fh->event_buf_size),
    };

    memcpy(data, &cfg, sizeof(cfg));
}

static uint64_t virtio_freqhint_get_features(VirtIODevice *vdev, uint64_t f,
                                             Error **errp)
{
    VirtIOFreqHint *fh = VIRTIO_FREQHINT(vdev);

    return f | fh->host_features;
}

/* DEV-1, DEV-28, DEV-40: FEATURES_OK fails for these drivers. */
static int virtio_freqhint_validate_features(VirtIODevice *vdev)
{
    if (!virtio_vdev_has_feature(vdev, VIRTIO_F_VERSION_1)) {
        return -EINVAL;
    }
    if (virtio_vdev_has_feature(vdev, VIRTIO_FREQHINT_F_HOST_FREQ) &&
        !virtio_vdev_has_feature(vdev, VIRTIO_FREQHINT_F_FEEDBACK)) {
        return -EINVAL;
    }
    if (virtio_vdev_has_feature(vdev, VIRTIO_FREQHINT_F_CUR_FREQ) &&
        !virtio_vdev_has_feature(vdev, VIRTIO_FREQHINT_F_HOST_FREQ)) {
        return -EINVAL;
    }
    return 0;
}

static void virtio_freqhint_set_status(VirtIODevice *vdev, uint8_t status)
{
    VirtIOFreqHint *fh = VIRTIO_FREQHINT(vdev);

    /*
     * Modern only, on every transport.  validate_features refuses
     * FEATURES_OK without VERSION_1; a legacy driver never sets it, so
     * its DRIVER_OK breaks the device, which then serves it nothing.
     */
    if ((status & VIRTIO_CONFIG_S_DRIVER_OK) &&
        !virtio_vdev_has_feature(vdev, VIRTIO_F_VERSION_1) && !vdev->broken) {
        virtio_error(vdev, "virtio-freqhint: the driver did not accept "
                     "VIRTIO_F_VERSION_1");
        return;
    }
    /*
     * The queues are served from a bottom half: the core writes the new
     * status after this returns, which would hide the NEEDS_RESET of a bad
     * buffer found here.
     */
    if (vdev->vm_running && (status & VIRTIO_CONFIG_S_DRIVER_OK)) {
        qemu_bh_schedule(fh->status_bh);
    }
}

/* DRIVER_OK was written (or the VM resumed with it). */
static void virtio_freqhint_status_bh(void *opaque)
{
    VirtIOFreqHint *fh = opaque;

    if (!virtio_freqhint_driver_ready(fh)) {
        return;
    }
    /* Buffers posted before DRIVER_OK get CPU_IDS and the first snapshot. */
    virtio_freqhint_push_events(fh);
    /* Within a window the rate timer runs the queue, whatever the driver. */
    if (timer_pending(fh->rate_timer)) {
        return;
    }
    /*
     * No window is open, so notifications must be on.  A guest resumed on
     * a migration destination may still have VRING_USED_F_NO_NOTIFY in its
     * ring: the rate timer that would clear it is host state, not migrated.
     */
    virtio_queue_set_notification(fh->hintq, 1);
    /* Buffers queued before DRIVER_OK: run the queue, like a kick. */
    if (!virtio_queue_empty(fh->hintq)) {
        virtio_freqhint_wakeup(fh);
    }
}

static void virtio_freqhint_agent_connected(void *opaque)
{
    VirtIOFreqHint *fh = opaque;

    fh->stats.agent_connects++;
    fh->resend_full = true;
    timer_del(fh->forward_timer);
    /* The first frame is a FULL one, even if the VM stopped meanwhile. */
    if (fh->vm_running) {
        virtio_freqhint_forward(fh);
    } else {
        virtio_freqhint_send_no_hints(fh);
    }
    /* FB_AGENT is news. */
    virtio_freqhint_feedback_changed(fh, true);
}

static void virtio_freqhint_agent_disconnected(void *opaque)
{
    VirtIOFreqHint *fh = opaque;

    virtio_freqhint_reset_host_state(fh);
    timer_del(fh->forward_timer);
    fh->no_hints_pending = false;
    virtio_freqhint_feedback_changed(fh, true);
    /* FB_ACTIVE clear: every value 0, after the snapshot that says so. */
    virtio_freqhint_cur_freq_changed(fh);
}

/*
 * The agent's socket refused a frame and takes output again: send the
 * state as it is now (a FULL frame after a drop), within the forwarding
 * interval, or "no hint" if the VM stopped meanwhile.
 */
static void virtio_freqhint_agent_writable(void *opaque)
{
    VirtIOFreqHint *fh = opaque;

    if (!fh->vm_running) {
        if (fh->no_hints_pending) {
            virtio_freqhint_send_no_hints(fh);
        }
        return;
    }
    virtio_freqhint_schedule_forward(fh);
}

static void virtio_freqhint_set_grants(void *opaque, uint16_t floor,
                                       uint16_t ceiling,
                                       const VirtIOFreqHintGrant *grants)
{
    VirtIOFreqHint *fh = opaque;
    bool changed = floor != fh->operator_floor ||
                   ceiling != fh->operator_ceiling;

    fh->operator_floor = floor;
    fh->operator_ceiling = ceiling;
    for (int i = 0; grants && i < fh->num_vcpus; i++) {
        changed |= grants[i].floor != fh->grants[i].floor ||
                   grants[i].ceiling != fh->grants[i].ceiling;
        fh->grants[i] = grants[i];
    }
    trace_virtio_freqhint_grants(fh, floor, ceiling, changed);
    virtio_freqhint_feedback_changed(fh, changed);
}

static void virtio_freqhint_set_host_freq(void *opaque, uint16_t num_classes,
                                          const VirtIOFreqHintClass *c,
                                          const uint8_t *freq_class)
{
    VirtIOFreqHint *fh = opaque;
    VirtIOFreqHintClass classes[VIRTIO_FREQHINT_MAX_FREQ_CLASSES] = {};
    bool changed;

    if (num_classes) {
        memcpy(classes, c, num_classes * sizeof(*c));
    }
    changed = num_classes != fh->num_freq_classes ||
              memcmp(classes, fh->freq_classes, sizeof(classes)) ||
              memcmp(freq_class, fh->freq_class, fh->num_vcpus);
    fh->num_freq_classes = num_classes;
    memcpy(fh->freq_classes, classes, sizeof(classes));
    memcpy(fh->freq_class, freq_class, fh->num_vcpus);
    trace_virtio_freqhint_host_freq(fh, num_classes, changed);
    /* A driver without F_HOST_FREQ sees the same snapshot: no news. */
    changed &= virtio_vdev_has_feature(VIRTIO_DEVICE(fh),
                                       VIRTIO_FREQHINT_F_HOST_FREQ);
    virtio_freqhint_feedback_changed(fh, changed);
    /* A value the new classes do not hold is unknown until resampled. */
    virtio_freqhint_cur_freq_changed(fh);
}

static void virtio_freqhint_set_cur_freq(void *opaque, const uint32_t *cur_khz)
{
    VirtIOFreqHint *fh = opaque;
    size_t size = fh->num_vcpus * sizeof(*cur_khz);
    bool changed = memcmp(cur_khz, fh->cur_khz, size);

    memcpy(fh->cur_khz, cur_khz, size);
    trace_virtio_freqhint_set_cur_freq(fh, changed);
    if (changed) {
        virtio_freqhint_cur_freq_changed(fh);
    }
}

/* Feedback in, from the backend. */
static const FreqHintBackendOps virtio_freqhint_backend_ops = {
    .connected = virtio_freqhint_agent_connected,
    .disconnected = virtio_freqhint_agent_disconnected,
    .writable = virtio_freqhint_agent_writable,
    .set_grants = virtio_freqhint_set_grants,
    .set_host_freq = virtio_freqhint_set_host_freq,
    .set_cur_freq = virtio_freqhint_set_cur_freq,
};

static void virtio_freqhint_reset(VirtIODevice *vdev)
{
    VirtIOFreqHint *fh = VIRTIO_FREQHINT(vdev);

    /*
     * The rate window stays open across a reset (the bound holds whatever
     * the driver does), and so does the feedback window; the host state
     * survives, only the driver's view of it starts over.
     */
    fh->cpu_ids_pending = true;
    fh->feedback_pending = true;
    fh->feedback_sent_valid = false;
    fh->feedback_seq = 0;
    /*
     * The driver knows no current frequency; the host's values stay (host
     * state, DEV-8) and follow the first snapshot if any is known.
     */
    fh->cur_freq_seq = 0;
    memset(fh->cur_freq_sent, 0, fh->num_vcpus * sizeof(uint32_t));
    fh->cur_freq_sent_valid = true;
    fh->cur_freq_pending = true;
    /* The VM's influence goes away, within the forward interval. */
    virtio_freqhint_clear_hints(fh);
}

static void virtio_freqhint_vm_state_change(void *opaque, bool running,
                                            RunState state)
{
    VirtIOFreqHint *fh = opaque;

    fh->vm_running = running;
    freqhint_backend_vm_state(fh->backend, running);
    if (!freqhint_backend_is_up(fh->backend)) {
        return;
    }
    if (running) {
        fh->no_hints_pending = false;
        fh->resend_full = true;
        timer_del(fh->forward_timer);
        virtio_freqhint_forward(fh);
    } else {
        virtio_freqhint_send_no_hints(fh);
    }
}

static void virtio_freqhint_get_stats(Object *obj, Visitor *v,
                                      const char *name, void *opaque,
                                      Error **errp)
{
    VirtIOFreqHint *fh = VIRTIO_FREQHINT(obj);
    VirtIOFreqHintStats *s = &fh->stats;
    bool connected = freqhint_backend_is_up(fh->backend);
    bool broken = VIRTIO_DEVICE(fh)->broken;
    bool ok = false;

    if (!visit_start_struct(v, name, NULL, 0, errp)) {
        return;
    }
    if (!visit_type_uint16(v, "num-vcpus", &fh->num_vcpus, errp) ||
        !visit_type_bool(v, "agent-connected", &connected, errp) ||
        !visit_type_bool(v, "broken", &broken, errp) ||
        !visit_type_uint16(v, "operator-floor", &fh->operator_floor, errp) ||
        !visit_type_uint16(v, "operator-ceiling", &fh->operator_ceiling,
                           errp) ||
        !visit_type_uint64(v, "buffers", &s->buffers, errp) ||
        !visit_type_uint64(v, "notifications", &s->notifications, errp) ||
        !visit_type_uint64(v, "wakeups", &s->wakeups, errp) ||
        !visit_type_uint64(v, "records", &s->records, errp) ||
        !visit_type_uint64(v, "forwarded", &s->forwarded, errp) ||
        !visit_type_uint64(v, "coalesced", &s->coalesced, errp) ||
        !visit_type_uint64(v, "rejected", &s->rejected, errp) ||
        !visit_type_uint64(v, "dropped", &s->dropped, errp) ||
        !visit_type_uint64(v, "agent-connects", &s->agent_connects, errp) ||
        !visit_type_uint64(v, "feedback", &s->feedback, errp) ||
        !visit_type_uint64(v, "snapshots", &s->snapshots, errp) ||
        !visit_type_uint32(v, "feedback-seq", &fh->feedback_seq, errp) ||
        !visit_type_uint64(v, "cur-freq", &s->cur_freq, errp) ||
        !visit_type_uint32(v, "cur-freq-seq", &fh->cur_freq_seq, errp)) {
        goto out;
    }
    if (!visit_start_list(v, "vcpus", NULL, 0, errp)) {
        goto out;
    }
    for (int i = 0; i < fh->num_vcpus; i++) {
        VirtIOFreqHintVcpu *vc = &fh->vcpus[i];
        VirtIOFreqHintGrant *g = &fh->grants[i];

        if (!visit_start_struct(v, NULL, NULL, 0, errp)) {
            goto out_list;
        }
        if (!visit_type_uint16(v, "flags", &vc->flags, errp) ||
            !visit_type_uint16(v, "clamp-min", &vc->clamp_min, errp) ||
            !visit_type_uint16(v, "clamp-max", &vc->clamp_max, errp) ||
            !visit_type_uint16(v, "perf", &vc->perf, errp) ||
            !visit_type_uint32(v, "seq", &vc->seq, errp) ||
            !visit_type_uint16(v, "granted-floor", &g->floor, errp) ||
            !visit_type_uint16(v, "granted-ceiling", &g->ceiling, errp) ||
            !visit_type_uint32(v, "cur-khz", &fh->cur_khz[i], errp) ||
            !visit_check_struct(v, errp)) {
            visit_end_struct(v, NULL);
            goto out_list;
        }
        visit_end_struct(v, NULL);
    }
    ok = visit_check_list(v, errp);
out_list:
    visit_end_list(v, NULL);
    if (ok) {
        visit_check_struct(v, errp);
    }
out:
    visit_end_struct(v, NULL);
}

/*
 * DEV-25: the firmware id (x86: APIC ID, arm: MPIDR affinity) of every
 * possible vCPU, plugged or not, by vCPU index.  The machine lists its
 * possible CPUs in slots of vcpus_count threads; slot k's threads are the
 * vCPU indexes that follow those of slots 0..k-1, and a plugged CPU says
 * its own index; its id is its slot's.  Only machines without a list ask
 * the CPU (get_arch_id): arm CPUs do not implement it and answer their
 * cpu_index, which is the MPIDR affinity only below 16 vCPUs on virt
 * (index 16 is Aff1 = 1, 0x100).  virt, which cannot hot-plug CPUs,
 * leaves vcpus_count 0 (one thread), records no CPU in its slots and
 * creates vCPU n from slot n.  An index no slot accounts for has no id.
 */
static void virtio_freqhint_get_cpu_ids(VirtIOFreqHint *fh, MachineState *ms)
{
    MachineClass *mc = MACHINE_GET_CLASS(ms);
    const CPUArchIdList *possible = NULL;
    CPUState *cpu;
    int64_t index = 0;

    for (int i = 0; i < fh->num_vcpus; i++) {
        fh->cpu_ids[i] = VIRTIO_FREQHINT_CPU_ID_NONE;
    }
    if (mc->possible_cpu_arch_ids) {
        possible = mc->possible_cpu_arch_ids(ms);
    }
    for (int k = 0; possible && k < possible->len; k++) {
        const CPUArchId *slot = &possible->cpus[k];
        int64_t threads = slot->vcpus_count ? slot->vcpus_count : 1;

        /* A slot of one thread: its arch_id is that vCPU's id. */
        if (threads == 1 && index < fh->num_vcpus) {
            fh->cpu_ids[index] = slot->arch_id;
        }
        index += threads;
    }
    CPU_FOREACH(cpu) {
        if (cpu->cpu_index >= fh->num_vcpus) {
            continue;
        }
        if (!possible) {
            fh->cpu_ids[cpu->cpu_index] = CPU_GET_CLASS(cpu)->get_arch_id(cpu);
            continue;
        }
        for (int k = 0; k < possible->len; k++) {
            if (possible->cpus[k].cpu == cpu) {
                fh->cpu_ids[cpu->cpu_index] = possible->cpus[k].arch_id;
            }
        }
    }
}

/*
 * The backend: the one linked with backend=, else a freqhint-null made
 * here, like virtio-rng's default backend.
 */
static bool virtio_freqhint_attach_backend(VirtIOFreqHint *fh, Error **errp)
{
    uint32_t features = 0;

    if (!fh->backend) {
        Object *b = object_new(TYPE_FREQHINT_NULL);

        if (!user_creatable_complete(USER_CREATABLE(b), errp)) {
            object_unref(b);
            return false;
        }
        object_property_add_child(OBJECT(fh), "default-backend", b);
        /* The child property holds the reference now. */
        object_unref(b);
        object_property_set_link(OBJECT(fh), "backend", b, &error_abort);
    }
    if (virtio_has_feature(fh->host_features, VIRTIO_FREQHINT_F_PERF)) {
        features |= FREQHINT_BACKEND_PERF;
    }
    if (virtio_has_feature(fh->host_features, VIRTIO_FREQHINT_F_FEEDBACK)) {
        features |= FREQHINT_BACKEND_GRANTS;
    }
    if (virtio_has_feature(fh->host_features, VIRTIO_FREQHINT_F_HOST_FREQ)) {
        features |= FREQHINT_BACKEND_HOST_FREQ;
    }
    if (virtio_has_feature(fh->host_features, VIRTIO_FREQHINT_F_CUR_FREQ)) {
        features |= FREQHINT_BACKEND_CUR_FREQ;
    }
    return freqhint_backend_attach(fh->backend, fh->num_vcpus, features,
                                   runstate_is_running(),
                                   &virtio_freqhint_backend_ops, fh, errp);
}

static void virtio_freqhint_device_realize(DeviceState *dev, Error **errp)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(dev);
    VirtIOFreqHint *fh = VIRTIO_FREQHINT(dev);
    MachineState *ms = MACHINE(qdev_get_machine());

    if (fh->rate_window_ms == 0 ||
        fh->rate_window_ms > FREQHINT_MAX_WINDOW_MS) {
        error_setg(errp, "'rate-window-ms' must be between 1 and %d",
                   FREQHINT_MAX_WINDOW_MS);
        return;
    }
    if (fh->forward_interval_ms > FREQHINT_MAX_INTERVAL_MS) {
        error_setg(errp, "'x-forward-interval-ms' must not exceed %d",
                   FREQHINT_MAX_INTERVAL_MS);
        return;
    }
    if (fh->perf_step == 0 || fh->perf_step > VIRTIO_FREQHINT_SCALE) {
        error_setg(errp, "'perf-step' must be between 1 and %d",
                   VIRTIO_FREQHINT_SCALE);
        return;
    }
    if (fh->idle_share > VIRTIO_FREQHINT_SCALE) {
        error_setg(errp, "'idle-share' must not exceed %d",
                   VIRTIO_FREQHINT_SCALE);
        return;
    }
    if (virtio_has_feature(fh->host_features, VIRTIO_FREQHINT_F_HOST_FREQ) &&
        !virtio_has_feature(fh->host_features, VIRTIO_FREQHINT_F_FEEDBACK)) {
        error_setg(errp, "'host-freq' needs 'feedback'");
        return;
    }
    if (virtio_has_feature(fh->host_features, VIRTIO_FREQHINT_F_CUR_FREQ) &&
        !virtio_has_feature(fh->host_features, VIRTIO_FREQHINT_F_HOST_FREQ)) {
        error_setg(errp, "'cur-freq' needs 'host-freq'");
        return;
    }
    if (virtio_has_feature(vdev->host_features, VIRTIO_RING_F_EVENT_IDX)) {
        error_setg(errp, "virtio-freqhint does not support 'event_idx': its "
                   "rate bound relies on VRING_USED_F_NO_NOTIFY");
        return;
    }
    if (ms->smp.max_cpus > UINT16_MAX) {
        error_setg(errp, "virtio-freqhint supports at most %d vCPUs",
                   UINT16_MAX);
        return;
    }
    fh->num_vcpus = ms->smp.max_cpus;
    fh->event_buf_size = sizeof(struct virtio_freqhint_feedback) +
        fh->num_vcpus * sizeof(struct virtio_freqhint_vcpu_feedback);

    if (!virtio_freqhint_attach_backend(fh, errp)) {
        return;
    }

    fh->cpu_ids = g_new(uint64_t, fh->num_vcpus);
    fh->mig_cpu_ids = g_new0(uint64_t, fh->num_vcpus);
    fh->mig_num_cpu_ids = fh->num_vcpus;
    virtio_freqhint_get_cpu_ids(fh, ms);

    virtio_init(vdev, VIRTIO_ID_FREQHINT,
                sizeof(struct virtio_freqhint_config));
    fh->hintq = virtio_add_queue(vdev, FREQHINT_QUEUE_SIZE,
                                 virtio_freqhint_handle_hintq);
    if (fh->host_features & FREQHINT_EVENT_FEATURES) {
        fh->eventq = virtio_add_queue(vdev, FREQHINT_QUEUE_SIZE,
                                      virtio_freqhint_handle_eventq);
    }

    fh->vcpus = g_new0(VirtIOFreqHintVcpu, fh->num_vcpus);
    fh->grants = g_new0(VirtIOFreqHintGrant, fh->num_vcpus);
    fh->freq_class = g_new0(uint8_t, fh->num_vcpus);
    fh->cur_khz = g_new0(uint32_t, fh->num_vcpus);
    fh->cur_freq_sent = g_malloc0(fh->num_vcpus * sizeof(uint32_t));
    fh->cur_freq_sent_valid = true;
    fh->scratch = g_new0(struct virtio_freqhint_record, fh->num_vcpus);
    fh->event_buf = g_malloc0(fh->event_buf_size);
    fh->feedback_sent = g_malloc0(fh->event_buf_size);
    virtio_freqhint_reset_host_state(fh);
    fh->cpu_ids_pending = true;
    fh->feedback_pending = true;
    fh->vm_running = runstate_is_running();
    fh->vmstate = qemu_add_vm_change_state_handler(
        virtio_freqhint_vm_state_change, fh);
    fh->last_forward_ms = INT64_MIN / 2;
    fh->last_feedback_ms = INT64_MIN / 2;
    fh->last_cur_freq_ms = INT64_MIN / 2;
    fh->rate_timer = timer_new_ms(QEMU_CLOCK_VIRTUAL,
                                  virtio_freqhint_rate_timer, fh);
    fh->forward_timer = timer_new_ms(QEMU_CLOCK_VIRTUAL,
                                     virtio_freqhint_forward_timer, fh);
    fh->feedback_timer = timer_new_ms(QEMU_CLOCK_VIRTUAL,
                                      virtio_freqhint_feedback_timer, fh);
    fh->cur_freq_timer = timer_new_ms(QEMU_CLOCK_VIRTUAL,
                                      virtio_freqhint_feedback_timer, fh);
    fh->status_bh = virtio_bh_new_guarded(dev, virtio_freqhint_status_bh, fh);
    fh->event_bh = virtio_bh_new_guarded(dev, virtio_freqhint_event_bh, fh);
    freqhint_backend_start(fh->backend);
}

static void virtio_freqhint_device_unrealize(DeviceState *dev)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(dev);
    VirtIOFreqHint *fh = VIRTIO_FREQHINT(dev);

    freqhint_backend_detach(fh->backend);
    qemu_del_vm_change_state_handler(fh->vmstate);
    qemu_bh_delete(fh->event_bh);
    qemu_bh_delete(fh->status_bh);
    timer_free(fh->cur_freq_timer);
    timer_free(fh->feedback_timer);
    timer_free(fh->forward_timer);
    timer_free(fh->rate_timer);
    g_free(fh->feedback_sent);
    g_free(fh->event_buf);
    g_free(fh->scratch);
    g_free(fh->cur_freq_sent);
    g_free(fh->cur_khz);
    g_free(fh->freq_class);
    g_free(fh->grants);
    g_free(fh->vcpus);
    g_free(fh->mig_cpu_ids);
    g_free(fh->cpu_ids);
    if (fh->eventq) {
        virtio_delete_queue(fh->eventq);
    }
    virtio_delete_queue(fh->hintq);
    virtio_cleanup(vdev);
}

static int virtio_freqhint_pre_save(void *opaque)
{
    VirtIOFreqHint *fh = opaque;

    fh->mig_host_features = fh->host_features;
    fh->mig_rate_window_ms = fh->rate_window_ms;
    fh->mig_perf_step = fh->perf_step;
    fh->mig_idle_share = fh->idle_share;
    memcpy(fh->mig_cpu_ids, fh->cpu_ids, fh->num_vcpus * sizeof(uint64_t));
    return 0;
}

static int virtio_freqhint_post_load(void *opaque, int version_id)
{
    VirtIOFreqHint *fh = opaque;

    /*
     * The driver read these once, at probe: a destination that publishes
     * others would leave it working with the source's.
     */
    if (fh->mig_host_features != fh->host_features) {
        error_report("virtio-freqhint: offered features 0x%" PRIx64 " differ "
                     "from the source's 0x%" PRIx64, fh->host_features,
                     fh->mig_host_features);
        return -EINVAL;
    }
    if (fh->mig_rate_window_ms != fh->rate_window_ms ||
        fh->mig_perf_step != fh->perf_step ||
        fh->mig_idle_share != fh->idle_share) {
        error_report("virtio-freqhint: rate-window-ms, perf-step or "
                     "idle-share differ from the source's (%u/%u/%u, here "
                     "%u/%u/%u)", fh->mig_rate_window_ms, fh->mig_perf_step,
                     fh->mig_idle_share, fh->rate_window_ms, fh->perf_step,
                     fh->idle_share);
        return -EINVAL;
    }
    if (memcmp(fh->mig_cpu_ids, fh->cpu_ids,
               fh->num_vcpus * sizeof(uint64_t))) {
        error_report("virtio-freqhint: the vCPUs' firmware ids differ from "
                     "the source's");
        return -EINVAL;
    }
    /* The stream is no more trusted than the guest or the agent. */
    for (int i = 0; i < fh->num_vcpus; i++) {
        VirtIOFreqHintVcpu *v = &fh->vcpus[i];
        const char *why = virtio_freqhint_check_record(fh, i, v->flags,
                                                       v->clamp_min,
                                                       v->clamp_max,
                                                       v->perf, 0, false);

        if (why) {
            error_report("virtio-freqhint: migrated vCPU %d: %s", i, why);
            return -EINVAL;
        }
        /* Not sent to this host's agent yet: resend_full covers it. */
        v->dirty = false;
    }

    /*
     * The destination's agent has seen nothing of this VM yet.  HELLO waits
     * for the VM to run, and the handshake brings the whole state.  Host
     * state was not migrated: the driver gets this host's view (the
     * no-agent defaults until its agent connects) as soon as the VM runs.
     */
    fh->resend_full = true;
    fh->feedback_pending = true;
    fh->feedback_sent_valid = false;
    /*
     * The source's values stay there: a driver that was told any learns
     * this host's (none until its agent samples) after the first snapshot.
     */
    memset(fh->cur_freq_sent, 0, fh->num_vcpus * sizeof(uint32_t));
    fh->cur_freq_sent_valid = fh->cur_freq_seq == 0;
    fh->cur_freq_pending = true;
    return 0;
}

/*
 * Runs after the guest features are loaded (the device vmsd comes before
 * them): a record the negotiated features do not allow is refused here.
 */
static int virtio_freqhint_post_load_device(VirtIODevice *vdev)
{
    VirtIOFreqHint *fh = VIRTIO_FREQHINT(vdev);

    for (int i = 0; i < fh->num_vcpus; i++) {
        VirtIOFreqHintVcpu *v = &fh->vcpus[i];
        const char *why = virtio_freqhint_check_record(fh, i, v->flags,
                                                       v->clamp_min,
                                                       v->clamp_max,
                                                       v->perf, 0, true);

        if (why) {
            error_report("virtio-freqhint: migrated vCPU %d: %s", i, why);
            return -EINVAL;
        }
    }
    return 0;
}

static const VMStateDescription vmstate_virtio_freqhint_vcpu = {
    .name = "virtio-freqhint-vcpu",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT16(flags, VirtIOFreqHintVcpu),
        VMSTATE_UINT16(clamp_min, VirtIOFreqHintVcpu),
        VMSTATE_UINT16(clamp_max, VirtIOFreqHintVcpu),
        VMSTATE_UINT16(perf, VirtIOFreqHintVcpu),
        VMSTATE_UINT32(seq, VirtIOFreqHintVcpu),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * When the guest wrote its newest record: the destination's first FULL
 * frame says it, as the source's would have (0 would tell the agent the
 * records are older than any other).  A subsection, so that a stream
 * without it still loads.
 */
static bool virtio_freqhint_newest_record_needed(void *opaque)
{
    VirtIOFreqHint *fh = opaque;

    return fh->newest_record_ns != 0;
}

/*
 * Where the driver is in the CUR_FREQ sequence (DEV-41 follows 6.8.4): a
 * subsection, absent while none was written and from older sources.
 */
static bool virtio_freqhint_cur_freq_needed(void *opaque)
{
    VirtIOFreqHint *fh = opaque;

    return fh->cur_freq_seq != 0;
}

static const VMStateDescription vmstate_virtio_freqhint_cur_freq = {
    .name = "virtio-freqhint-device/cur-freq",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = virtio_freqhint_cur_freq_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(cur_freq_seq, VirtIOFreqHint),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_virtio_freqhint_newest_record = {
    .name = "virtio-freqhint-device/newest-record",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = virtio_freqhint_newest_record_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_INT64(newest_record_ns, VirtIOFreqHint),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * Guest state only: the records (and when the newest came), where the
 * driver is in the event protocol, and the guest-visible constants to
 * compare.  Grants, classes and operator bounds are the source host's and
 * stay there.
 */
static const VMStateDescription vmstate_virtio_freqhint_device = {
    .name = "virtio-freqhint-device",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = virtio_freqhint_pre_save,
    .post_load = virtio_freqhint_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT16_EQUAL(num_vcpus, VirtIOFreqHint, NULL),
        VMSTATE_UINT64(mig_host_features, VirtIOFreqHint),
        VMSTATE_UINT32(mig_rate_window_ms, VirtIOFreqHint),
        VMSTATE_UINT16(mig_perf_step, VirtIOFreqHint),
        VMSTATE_UINT16(mig_idle_share, VirtIOFreqHint),
        /* num_vcpus matched, so both sides have as many ids. */
        VMSTATE_VARRAY_UINT32(mig_cpu_ids, VirtIOFreqHint, mig_num_cpu_ids, 0,
                              vmstate_info_uint64, uint64_t),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT16(vcpus, VirtIOFreqHint, num_vcpus,
                                             vmstate_virtio_freqhint_vcpu,
                                             VirtIOFreqHintVcpu),
        VMSTATE_UINT32(feedback_seq, VirtIOFreqHint),
        VMSTATE_BOOL(cpu_ids_pending, VirtIOFreqHint),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_virtio_freqhint_newest_record,
        &vmstate_virtio_freqhint_cur_freq,
        NULL
    },
};

static const VMStateDescription vmstate_virtio_freqhint = {
    .name = "virtio-freqhint",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_VIRTIO_DEVICE,
        VMSTATE_END_OF_LIST()
    },
};

static const Property virtio_freqhint_properties[] = {
    DEFINE_PROP_LINK("backend", VirtIOFreqHint, backend,
                     TYPE_FREQHINT_BACKEND, FreqHintBackend *),
    DEFINE_PROP_UINT32("rate-window-ms", VirtIOFreqHint, rate_window_ms, 10),
    /* Host-internal tuning: how often the agent hears of changes. */
    DEFINE_PROP_UINT32("x-forward-interval-ms", VirtIOFreqHint,
                       forward_interval_ms, 5),
    DEFINE_PROP_BIT64("perf", VirtIOFreqHint, host_features,
                      VIRTIO_FREQHINT_F_PERF, true),
    DEFINE_PROP_BIT64("feedback", VirtIOFreqHint, host_features,
                      VIRTIO_FREQHINT_F_FEEDBACK, true),
    DEFINE_PROP_BIT64("host-freq", VirtIOFreqHint, host_features,
                      VIRTIO_FREQHINT_F_HOST_FREQ, true),
    DEFINE_PROP_BIT64("cpu-id", VirtIOFreqHint, host_features,
                      VIRTIO_FREQHINT_F_CPU_ID, true),
    DEFINE_PROP_BIT64("cur-freq", VirtIOFreqHint, host_features,
                      VIRTIO_FREQHINT_F_CUR_FREQ, true),
    DEFINE_PROP_UINT16("perf-step", VirtIOFreqHint, perf_step, 16),
    DEFINE_PROP_UINT16("idle-share", VirtIOFreqHint, idle_share, 20),
};

/*
 * The rate bound relies on VRING_USED_F_NO_NOTIFY, which a driver that
 * negotiated event index ignores: it could notify once per window on top
 * of the timer.  The spec allows EVENT_IDX; this device does not offer
 * it: the transport's event_idx property, on by default, is off here, and
 * event_idx=on is refused at realize rather than silently dropped.
 */
static void virtio_freqhint_instance_init(Object *obj)
{
    virtio_clear_feature(&VIRTIO_DEVICE(obj)->host_features,
                         VIRTIO_RING_F_EVENT_IDX);
}

static void virtio_freqhint_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    VirtioDeviceClass *vdc = VIRTIO_DEVICE_CLASS(klass);

    device_class_set_props(dc, virtio_freqhint_properties);
    dc->vmsd = &vmstate_virtio_freqhint;
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
    vdc->realize = virtio_freqhint_device_realize;
    /* Telemetry for tests and operators; not a stable interface. */
    object_class_property_add(klass, "x-stats", "VirtIOFreqHintStats",
                              virtio_freqhint_get_stats, NULL, NULL, NULL);
    object_class_property_set_description(klass, "x-stats",
        "experimental: the device's counters and per-vCPU state");
    vdc->unrealize = virtio_freqhint_device_unrealize;
    vdc->get_config = virtio_freqhint_get_config;
    vdc->get_features = virtio_freqhint_get_features;
    vdc->validate_features = virtio_freqhint_validate_features;
    vdc->set_status = virtio_freqhint_set_status;
    vdc->reset = virtio_freqhint_reset;
    vdc->post_load = virtio_freqhint_post_load_device;
    vdc->vmsd = &vmstate_virtio_freqhint_device;
}

static const TypeInfo virtio_freqhint_info = {
    .name = TYPE_VIRTIO_FREQHINT,
    .parent = TYPE_VIRTIO_DEVICE,
    .instance_size = sizeof(VirtIOFreqHint),
    .instance_init = virtio_freqhint_instance_init,
    .class_init = virtio_freqhint_class_init,
};

static void virtio_freqhint_register_types(void)
{
    type_register_static(&virtio_freqhint_info);
}

type_init(virtio_freqhint_register_types)
