/*
 * Virtio frequency hint device
 *
 * The guest reports, per vCPU, the utilization clamps and performance
 * request of what it runs.  The device validates each record, keeps the
 * latest one per vCPU and forwards changes, coalesced and rate bounded, to a
 * host agent over a chardev (virtio-freqhint-agent.c).  What the host grants
 * comes back through the configuration space.
 *
 * Hints are state, not events: nothing is queued while no agent listens,
 * and a (re)connected agent gets the whole state at once.
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
#include "migration/vmstate.h"
#include "system/runstate.h"
#include "trace.h"

#define FREQHINT_QUEUE_SIZE         64
/* Buffers taken per wakeup, whatever the driver keeps adding (tx_burst). */
#define FREQHINT_BURST              16
#define FREQHINT_MAX_WINDOW_MS      1000
#define FREQHINT_MAX_INTERVAL_MS    1000

static void virtio_freqhint_reset_grants(VirtIOFreqHint *fh)
{
    fh->operator_floor = 0;
    fh->operator_ceiling = VIRTIO_FREQHINT_SCALE;
    for (int i = 0; i < fh->num_vcpus; i++) {
        fh->grants[i].floor = 0;
        fh->grants[i].ceiling = VIRTIO_FREQHINT_SCALE;
    }
    /* DEV-26: no agent, no host frequencies. */
    fh->num_freq_classes = 0;
    memset(fh->freq_classes, 0, sizeof(fh->freq_classes));
    memset(fh->freq_class, VIRTIO_FREQHINT_NO_FREQ_CLASS,
           sizeof(fh->freq_class));
}

const char *virtio_freqhint_check_freq_class(
    const struct virtio_freqhint_freq_class *c)
{
    uint32_t min = le32_to_cpu(c->min_khz), max = le32_to_cpu(c->max_khz);
    uint16_t step = le16_to_cpu(c->perf_step), n = le16_to_cpu(c->num_freqs);
    uint32_t prev = 0;

    if (min == 0 || min > max) {
        return "bad frequency range";
    }
    if (step == 0 || step > VIRTIO_FREQHINT_SCALE) {
        return "bad perf_step";
    }
    if (n > VIRTIO_FREQHINT_MAX_FREQS) {
        return "too many frequencies";
    }
    for (int i = 0; i < VIRTIO_FREQHINT_MAX_FREQS; i++) {
        uint32_t f = le32_to_cpu(c->freqs_khz[i]);

        if (i >= n ? f != 0 : (f < min || f > max || (i && f <= prev))) {
            return "bad frequency table";
        }
        prev = f;
    }
    return NULL;
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
 * take is lost; the link calls virtio_freqhint_agent_writable() when it
 * can take the state as it is then.
 */
static bool virtio_freqhint_send(VirtIOFreqHint *fh, unsigned int n,
                                 uint16_t flags)
{
    if (!virtio_freqhint_link_send_hints(fh, fh->scratch, n, flags)) {
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
    if (!virtio_freqhint_link_up(fh) || !fh->vm_running) {
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
    if (!virtio_freqhint_link_up(fh)) {
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

/* Every vCPU back to "no hint", and the agent told at once. */
static void virtio_freqhint_clear_hints(VirtIOFreqHint *fh)
{
    memset(fh->vcpus, 0, fh->num_vcpus * sizeof(*fh->vcpus));
    fh->resend_full = true;
    timer_del(fh->forward_timer);
    virtio_freqhint_forward(fh);
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
 * of the buffer is used.  Returns false if the device is now broken.
 */
static bool virtio_freqhint_handle_elem(VirtIOFreqHint *fh,
                                        VirtQueueElement *elem)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(fh);
    struct virtio_freqhint_hints hdr;
    size_t len, max_len;
    uint16_t num;

    if (elem->in_num) {
        virtio_error(vdev, "virtio-freqhint: device-writable descriptor "
                     "in a hint buffer");
        return false;
    }
    len = iov_size(elem->out_sg, elem->out_num);
    max_len = sizeof(hdr) + fh->num_vcpus * sizeof(*fh->scratch);
    if (len < sizeof(hdr) + sizeof(*fh->scratch) || len > max_len) {
        virtio_error(vdev, "virtio-freqhint: hint buffer of %zu bytes "
                     "(expected %zu..%zu)", len,
                     sizeof(hdr) + sizeof(*fh->scratch), max_len);
        return false;
    }
    if (iov_to_buf(elem->out_sg, elem->out_num, 0, &hdr, sizeof(hdr)) !=
        sizeof(hdr)) {
        virtio_error(vdev, "virtio-freqhint: short hint header");
        return false;
    }
    if (le16_to_cpu(hdr.msg_type) != VIRTIO_FREQHINT_MSG_HINTS) {
        virtio_error(vdev, "virtio-freqhint: unknown message type %u",
                     le16_to_cpu(hdr.msg_type));
        return false;
    }
    if (hdr.reserved[0] || hdr.reserved[1] || hdr.reserved[2] ||
        hdr.reserved[3]) {
        virtio_error(vdev, "virtio-freqhint: reserved header bytes set");
        return false;
    }
    num = le16_to_cpu(hdr.num_records);
    if (num == 0 || num > fh->num_vcpus ||
        len != sizeof(hdr) + num * sizeof(*fh->scratch)) {
        virtio_error(vdev, "virtio-freqhint: %u records in %zu bytes",
                     num, len);
        return false;
    }
    if (iov_to_buf(elem->out_sg, elem->out_num, sizeof(hdr), fh->scratch,
                   num * sizeof(*fh->scratch)) !=
        num * sizeof(*fh->scratch)) {
        virtio_error(vdev, "virtio-freqhint: short hint buffer");
        return false;
    }

    fh->newest_record_ns = qemu_clock_get_ns(QEMU_CLOCK_HOST);
    for (unsigned int i = 0; i < num; i++) {
        virtio_freqhint_apply(fh, &fh->scratch[i]);
    }
    fh->stats.buffers++;
    return true;
}

/*
 * Take up to FREQHINT_BURST buffers.  Returns true if anything was
 * consumed; what is left waits for the next wakeup.
 */
static bool virtio_freqhint_drain(VirtIOFreqHint *fh)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(fh);
    VirtQueueElement *elem;
    bool used = false;

    if (!virtio_queue_ready(fh->hintq) ||
        !(vdev->status & VIRTIO_CONFIG_S_DRIVER_OK) || vdev->broken) {
        return false;
    }

    for (int n = 0; n < FREQHINT_BURST &&
         (elem = virtqueue_pop(fh->hintq, sizeof(VirtQueueElement))); n++) {
        if (!virtio_freqhint_handle_elem(fh, elem)) {
            virtqueue_detach_element(fh->hintq, elem, 0);
            g_free(elem);
            break;
        }
        virtqueue_push(fh->hintq, elem, 0);
        g_free(elem);
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

static void virtio_freqhint_get_config(VirtIODevice *vdev, uint8_t *data)
{
    VirtIOFreqHint *fh = VIRTIO_FREQHINT(vdev);
    struct virtio_freqhint_config *cfg = (void *)data;

    memset(data, 0, sizeof(*cfg));
    cfg->num_vcpus = cpu_to_le16(fh->num_vcpus);
    cfg->max_records = cpu_to_le16(fh->num_vcpus);
    cfg->rate_window_ms = cpu_to_le16(fh->rate_window_ms);
    cfg->status = cpu_to_le16(fh->status);
    cfg->operator_floor = cpu_to_le16(fh->operator_floor);
    cfg->operator_ceiling = cpu_to_le16(fh->operator_ceiling);
    cfg->perf_step = cpu_to_le16(fh->perf_step);
    cfg->idle_share = cpu_to_le16(fh->idle_share);
    for (int i = 0; i < VIRTIO_FREQHINT_MAX_VCPUS; i++) {
        cfg->cpu_id[i] = cpu_to_le32(i < fh->num_vcpus ? fh->cpu_ids[i] :
                                     VIRTIO_FREQHINT_CPU_ID_NONE);
    }
    for (int i = 0; i < fh->num_vcpus; i++) {
        cfg->grants[i].floor = cpu_to_le16(fh->grants[i].floor);
        cfg->grants[i].ceiling = cpu_to_le16(fh->grants[i].ceiling);
        cfg->freq_class[i] = fh->freq_class[i];
    }
    cfg->num_freq_classes = cpu_to_le16(fh->num_freq_classes);
    memcpy(cfg->freq_classes, fh->freq_classes, sizeof(cfg->freq_classes));
}

static uint64_t virtio_freqhint_get_features(VirtIODevice *vdev, uint64_t f,
                                             Error **errp)
{
    VirtIOFreqHint *fh = VIRTIO_FREQHINT(vdev);

    /*
     * The rate bound relies on VRING_USED_F_NO_NOTIFY; with event index a
     * driver could still notify once per window on top of the timer.
     */
    virtio_clear_feature(&f, VIRTIO_RING_F_EVENT_IDX);
    return f | fh->host_features;
}

static void virtio_freqhint_set_status(VirtIODevice *vdev, uint8_t status)
{
    VirtIOFreqHint *fh = VIRTIO_FREQHINT(vdev);

    if (!vdev->vm_running || !(status & VIRTIO_CONFIG_S_DRIVER_OK)) {
        return;
    }
    vdev->status = status;
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

void virtio_freqhint_agent_connected(VirtIOFreqHint *fh)
{
    fh->stats.agent_connects++;
    fh->status |= VIRTIO_FREQHINT_S_AGENT;
    virtio_notify_config(VIRTIO_DEVICE(fh));
    fh->resend_full = true;
    timer_del(fh->forward_timer);
    /* The first frame is a FULL one, even if the VM stopped meanwhile. */
    if (fh->vm_running) {
        virtio_freqhint_forward(fh);
    } else {
        virtio_freqhint_send_no_hints(fh);
    }
}

void virtio_freqhint_agent_disconnected(VirtIOFreqHint *fh)
{
    fh->status &= ~VIRTIO_FREQHINT_S_AGENT;
    virtio_freqhint_reset_grants(fh);
    virtio_notify_config(VIRTIO_DEVICE(fh));
    timer_del(fh->forward_timer);
    fh->no_hints_pending = false;
}

/*
 * The agent's socket refused a frame and takes output again: send the
 * state as it is now (a FULL frame after a drop), within the forwarding
 * interval, or "no hint" if the VM stopped meanwhile.
 */
void virtio_freqhint_agent_writable(VirtIOFreqHint *fh)
{
    if (!fh->vm_running) {
        if (fh->no_hints_pending) {
            virtio_freqhint_send_no_hints(fh);
        }
        return;
    }
    virtio_freqhint_schedule_forward(fh);
}

void virtio_freqhint_set_grants(VirtIOFreqHint *fh, uint16_t floor,
                                uint16_t ceiling,
                                const struct virtio_freqhint_grant *grants)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(fh);
    bool changed = floor != fh->operator_floor ||
                   ceiling != fh->operator_ceiling;
    bool grants_changed = false;

    fh->operator_floor = floor;
    fh->operator_ceiling = ceiling;
    for (int i = 0; grants && i < fh->num_vcpus; i++) {
        uint16_t f = le16_to_cpu(grants[i].floor);
        uint16_t c = le16_to_cpu(grants[i].ceiling);

        grants_changed |= f != fh->grants[i].floor ||
                          c != fh->grants[i].ceiling;
        fh->grants[i].floor = f;
        fh->grants[i].ceiling = c;
    }
    /* A driver without the feature does not read grants[]: no news. */
    if (virtio_vdev_has_feature(vdev, VIRTIO_FREQHINT_F_GRANTS)) {
        changed |= grants_changed;
    }
    trace_virtio_freqhint_grants(fh, floor, ceiling, changed);
    if (changed) {
        virtio_notify_config(vdev);
    }
}

void virtio_freqhint_set_host_freq(VirtIOFreqHint *fh, uint16_t num_classes,
                                   const struct virtio_freqhint_freq_class *c,
                                   const uint8_t *freq_class)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(fh);
    struct virtio_freqhint_freq_class classes[
        VIRTIO_FREQHINT_MAX_FREQ_CLASSES] = {};
    bool changed;

    memcpy(classes, c, num_classes * sizeof(*c));
    changed = num_classes != fh->num_freq_classes ||
              memcmp(classes, fh->freq_classes, sizeof(classes)) ||
              memcmp(freq_class, fh->freq_class, fh->num_vcpus);
    fh->num_freq_classes = num_classes;
    memcpy(fh->freq_classes, classes, sizeof(classes));
    memcpy(fh->freq_class, freq_class, fh->num_vcpus);
    trace_virtio_freqhint_host_freq(fh, num_classes, changed);
    /* DEV-22: a driver without the feature does not read them. */
    if (changed && virtio_vdev_has_feature(vdev, VIRTIO_FREQHINT_F_HOST_FREQ)) {
        virtio_notify_config(vdev);
    }
}

static void virtio_freqhint_reset(VirtIODevice *vdev)
{
    VirtIOFreqHint *fh = VIRTIO_FREQHINT(vdev);

    timer_del(fh->rate_timer);
    /* The VM's influence goes away at once, not at the next hint. */
    virtio_freqhint_clear_hints(fh);
}

static void virtio_freqhint_vm_state_change(void *opaque, bool running,
                                            RunState state)
{
    VirtIOFreqHint *fh = opaque;

    fh->vm_running = running;
    if (!virtio_freqhint_link_up(fh)) {
        if (running) {
            virtio_freqhint_link_vm_running(fh);
        }
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
    bool connected = virtio_freqhint_link_up(fh);
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
        !visit_type_uint64(v, "agent-connects", &s->agent_connects, errp)) {
        goto out;
    }
    if (!visit_start_list(v, "vcpus", NULL, 0, errp)) {
        goto out;
    }
    for (int i = 0; i < fh->num_vcpus; i++) {
        VirtIOFreqHintVcpu *vc = &fh->vcpus[i];
        struct virtio_freqhint_grant *g = &fh->grants[i];

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
 * DEV-25: the firmware id (x86: APIC ID) of every possible vCPU, plugged or
 * not, by vCPU index, so that the driver need not guess which of its CPUs
 * is which index.
 */
static void virtio_freqhint_get_cpu_ids(VirtIOFreqHint *fh, MachineState *ms)
{
    MachineClass *mc = MACHINE_GET_CLASS(ms);
    const CPUArchIdList *possible = NULL;

    if (mc->possible_cpu_arch_ids) {
        possible = mc->possible_cpu_arch_ids(ms);
    }
    for (int i = 0; i < fh->num_vcpus; i++) {
        CPUState *cpu = qemu_get_cpu(i);

        if (possible && i < possible->len) {
            fh->cpu_ids[i] = possible->cpus[i].arch_id;
        } else if (cpu) {
            fh->cpu_ids[i] = CPU_GET_CLASS(cpu)->get_arch_id(cpu);
        } else {
            fh->cpu_ids[i] = VIRTIO_FREQHINT_CPU_ID_NONE;
        }
    }
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
        error_setg(errp, "'forward-interval-ms' must not exceed %d",
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
    if (ms->smp.max_cpus > VIRTIO_FREQHINT_MAX_VCPUS) {
        error_setg(errp, "virtio-freqhint supports at most %d vCPUs, "
                   "the machine has %u", VIRTIO_FREQHINT_MAX_VCPUS,
                   ms->smp.max_cpus);
        return;
    }
    fh->num_vcpus = ms->smp.max_cpus;

    fh->cpu_ids = g_new(uint32_t, fh->num_vcpus);
    virtio_freqhint_get_cpu_ids(fh, ms);

    virtio_init(vdev, VIRTIO_ID_FREQHINT,
                sizeof(struct virtio_freqhint_config));
    fh->hintq = virtio_add_queue(vdev, FREQHINT_QUEUE_SIZE,
                                 virtio_freqhint_handle_hintq);

    fh->vcpus = g_new0(VirtIOFreqHintVcpu, fh->num_vcpus);
    fh->grants = g_new0(struct virtio_freqhint_grant, fh->num_vcpus);
    fh->scratch = g_new0(struct virtio_freqhint_record, fh->num_vcpus);
    virtio_freqhint_reset_grants(fh);
    fh->vm_running = runstate_is_running();
    fh->vmstate = qemu_add_vm_change_state_handler(
        virtio_freqhint_vm_state_change, fh);
    fh->last_forward_ms = INT64_MIN / 2;
    fh->rate_timer = timer_new_ms(QEMU_CLOCK_VIRTUAL,
                                  virtio_freqhint_rate_timer, fh);
    fh->forward_timer = timer_new_ms(QEMU_CLOCK_VIRTUAL,
                                     virtio_freqhint_forward_timer, fh);
    virtio_freqhint_link_realize(fh);
}

static void virtio_freqhint_device_unrealize(DeviceState *dev)
{
    VirtIODevice *vdev = VIRTIO_DEVICE(dev);
    VirtIOFreqHint *fh = VIRTIO_FREQHINT(dev);

    virtio_freqhint_link_unrealize(fh);
    qemu_del_vm_change_state_handler(fh->vmstate);
    timer_free(fh->forward_timer);
    timer_free(fh->rate_timer);
    g_free(fh->scratch);
    g_free(fh->grants);
    g_free(fh->vcpus);
    g_free(fh->cpu_ids);
    virtio_del_queue(vdev, 0);
    virtio_cleanup(vdev);
}

static int virtio_freqhint_post_load(void *opaque, int version_id)
{
    VirtIOFreqHint *fh = opaque;

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
        if (fh->grants[i].ceiling > VIRTIO_FREQHINT_SCALE ||
            fh->grants[i].floor > fh->grants[i].ceiling) {
            error_report("virtio-freqhint: migrated grant of vCPU %d out of "
                         "range", i);
            return -EINVAL;
        }
        if (fh->freq_class[i] != VIRTIO_FREQHINT_NO_FREQ_CLASS &&
            fh->freq_class[i] >= fh->num_freq_classes) {
            error_report("virtio-freqhint: migrated frequency class of vCPU "
                         "%d out of range", i);
            return -EINVAL;
        }
    }
    if (fh->operator_ceiling > VIRTIO_FREQHINT_SCALE ||
        fh->operator_floor > fh->operator_ceiling) {
        error_report("virtio-freqhint: migrated operator bounds out of range");
        return -EINVAL;
    }
    if (fh->num_freq_classes > VIRTIO_FREQHINT_MAX_FREQ_CLASSES) {
        error_report("virtio-freqhint: %u migrated frequency classes",
                     fh->num_freq_classes);
        return -EINVAL;
    }
    for (int i = 0; i < VIRTIO_FREQHINT_MAX_FREQ_CLASSES; i++) {
        const char *why = i < fh->num_freq_classes ?
            virtio_freqhint_check_freq_class(&fh->freq_classes[i]) :
            (buffer_is_zero(&fh->freq_classes[i],
                            sizeof(fh->freq_classes[i])) ?
             NULL : "unused class not zero");

        if (why) {
            error_report("virtio-freqhint: migrated frequency class %d: %s",
                         i, why);
            return -EINVAL;
        }
    }

    /*
     * The destination's agent has seen nothing of this VM yet.  HELLO waits
     * for the VM to run, and the handshake brings the whole state.
     */
    fh->resend_full = true;
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

static const VMStateDescription vmstate_virtio_freqhint_grant = {
    .name = "virtio-freqhint-grant",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT16(floor, struct virtio_freqhint_grant),
        VMSTATE_UINT16(ceiling, struct virtio_freqhint_grant),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_virtio_freqhint_device = {
    .name = "virtio-freqhint-device",
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = virtio_freqhint_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT16_EQUAL(num_vcpus, VirtIOFreqHint, NULL),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT16(vcpus, VirtIOFreqHint, num_vcpus,
                                             vmstate_virtio_freqhint_vcpu,
                                             VirtIOFreqHintVcpu),
        VMSTATE_UINT16(operator_floor, VirtIOFreqHint),
        VMSTATE_UINT16(operator_ceiling, VirtIOFreqHint),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT16(grants, VirtIOFreqHint, num_vcpus,
                                             vmstate_virtio_freqhint_grant,
                                             struct virtio_freqhint_grant),
        VMSTATE_UINT16(num_freq_classes, VirtIOFreqHint),
        /* Kept in wire (little-endian) order: the same bytes on any host. */
        VMSTATE_BUFFER_UNSAFE(freq_classes, VirtIOFreqHint, 0,
                              sizeof(struct virtio_freqhint_freq_class) *
                              VIRTIO_FREQHINT_MAX_FREQ_CLASSES),
        VMSTATE_UINT8_ARRAY(freq_class, VirtIOFreqHint,
                            VIRTIO_FREQHINT_MAX_VCPUS),
        VMSTATE_END_OF_LIST()
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
    DEFINE_PROP_CHR("chardev", VirtIOFreqHint, link.chr),
    DEFINE_PROP_UINT32("rate-window-ms", VirtIOFreqHint, rate_window_ms, 10),
    DEFINE_PROP_UINT32("forward-interval-ms", VirtIOFreqHint,
                       forward_interval_ms, 5),
    DEFINE_PROP_BIT64("perf", VirtIOFreqHint, host_features,
                      VIRTIO_FREQHINT_F_PERF, true),
    DEFINE_PROP_BIT64("grants", VirtIOFreqHint, host_features,
                      VIRTIO_FREQHINT_F_GRANTS, true),
    DEFINE_PROP_BIT64("host-freq", VirtIOFreqHint, host_features,
                      VIRTIO_FREQHINT_F_HOST_FREQ, true),
    DEFINE_PROP_UINT16("perf-step", VirtIOFreqHint, perf_step, 16),
    DEFINE_PROP_UINT16("idle-share", VirtIOFreqHint, idle_share, 20),
};

static void virtio_freqhint_instance_init(Object *obj)
{
    object_property_add(obj, "x-stats", "VirtIOFreqHintStats",
                        virtio_freqhint_get_stats, NULL, NULL, NULL);
}

static void virtio_freqhint_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    VirtioDeviceClass *vdc = VIRTIO_DEVICE_CLASS(klass);

    device_class_set_props(dc, virtio_freqhint_properties);
    dc->vmsd = &vmstate_virtio_freqhint;
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
    vdc->realize = virtio_freqhint_device_realize;
    vdc->unrealize = virtio_freqhint_device_unrealize;
    vdc->get_config = virtio_freqhint_get_config;
    vdc->get_features = virtio_freqhint_get_features;
    vdc->set_status = virtio_freqhint_set_status;
    vdc->reset = virtio_freqhint_reset;
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
