/*
 * Virtio frequency hint device: the link to the host agent
 *
 * Frames of hw/virtio/virtio-freqhint-agent.h on a socket chardev.
 * QEMU is the client; with reconnect-ms the chardev reconnects on its own
 * and every new connection starts with HELLO, sent once the VM runs: a VM
 * that is paused or waiting for an incoming migration does not claim its
 * identity (a migration's source and destination share the UUID).  The
 * agent is trusted no more than the guest: a frame that breaks the protocol
 * closes the connection, it never reaches the device state.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "qemu/timer.h"
#include "qemu/uuid.h"
#include "qemu/error-report.h"
#include "chardev/char.h"
#include "qapi/error.h"
#include "hw/boards.h"
#include "hw/core/cpu.h"
#include "hw/qdev-core.h"
#include "hw/virtio/virtio.h"
#include "hw/virtio/virtio-freqhint.h"
#include "system/system.h"
#include "trace.h"

#define FH_HDR_SIZE sizeof(struct fh_frame_hdr)

/* What the device offers the guest, it offers the agent. */
static uint32_t virtio_freqhint_offered_features(VirtIOFreqHint *fh)
{
    uint32_t f = 0;

    if (virtio_has_feature(fh->host_features, VIRTIO_FREQHINT_F_PERF)) {
        f |= FH_F_PERF;
    }
    if (virtio_has_feature(fh->host_features, VIRTIO_FREQHINT_F_FEEDBACK)) {
        f |= FH_F_GRANTS;
    }
    if (virtio_has_feature(fh->host_features, VIRTIO_FREQHINT_F_HOST_FREQ)) {
        f |= FH_F_HOST_FREQ;
    }
    /* vCPU hot-plug without starting over. */
    return f | FH_F_VCPUS;
}

static gboolean fh_link_writable(void *do_not_use, GIOCondition cond,
                                 void *opaque);
static bool fh_link_send_vcpus(VirtIOFreqHint *fh);

/* Call fh_link_writable() once the socket takes output again. */
static void fh_link_watch(VirtIOFreqHint *fh)
{
    VirtIOFreqHintLink *link = &fh->link;

    if (!link->tx_watch) {
        link->tx_watch = qemu_chr_fe_add_watch(&link->chr, G_IO_OUT | G_IO_HUP,
                                               fh_link_writable, fh);
    }
}

static void fh_link_unwatch(VirtIOFreqHint *fh)
{
    VirtIOFreqHintLink *link = &fh->link;

    if (link->tx_watch) {
        g_source_remove(link->tx_watch);
        link->tx_watch = 0;
    }
}

/* A frame is partly written: nothing else may go out before its end. */
static bool fh_link_tx_busy(VirtIOFreqHint *fh)
{
    return fh->link.tx_off < fh->link.tx_len;
}

/*
 * Write what is left of the frame in tx_buf.  Returns true when all of it
 * is out; otherwise the rest goes when the socket is writable (PB-4: once a
 * byte of a frame is written, the frame is finished before any other).
 */
static bool fh_link_tx_continue(VirtIOFreqHint *fh)
{
    VirtIOFreqHintLink *link = &fh->link;
    int ret;

    if (!fh_link_tx_busy(fh)) {
        return true;
    }
    ret = qemu_chr_fe_write(&link->chr, link->tx_buf + link->tx_off,
                            link->tx_len - link->tx_off);
    if (ret > 0) {
        link->tx_off += ret;
    } else if (ret < 0 && errno != EAGAIN) {
        qemu_chr_fe_disconnect(&link->chr);
        return false;
    }
    if (fh_link_tx_busy(fh)) {
        fh_link_watch(fh);
        return false;
    }
    link->tx_off = link->tx_len = 0;
    return true;
}

/*
 * Write one frame without blocking the main loop.  Returns false if the
 * socket took none of it: the frame is then gone, never queued, and the
 * socket is watched so that the caller's state goes out when it can.  A
 * frame taken in part is finished from the watch.
 */
static bool fh_link_send(VirtIOFreqHint *fh, uint16_t type,
                         const void *payload, size_t len)
{
    VirtIOFreqHintLink *link = &fh->link;
    int ret;

    assert(len <= FH_MAX_PAYLOAD);
    if (link->state == FREQHINT_LINK_DOWN || fh_link_tx_busy(fh)) {
        trace_virtio_freqhint_link_send_failed(fh, type, len, 0);
        return false;
    }
    fh_frame_hdr_put(link->tx_buf, len, type);
    if (payload != link->tx_buf + FH_HDR_SIZE) {
        memcpy(link->tx_buf + FH_HDR_SIZE, payload, len);
    }

    ret = qemu_chr_fe_write(&link->chr, link->tx_buf, FH_HDR_SIZE + len);
    if (ret == FH_HDR_SIZE + len) {
        trace_virtio_freqhint_link_send(fh, type, len);
        return true;
    }
    trace_virtio_freqhint_link_send_failed(fh, type, len, ret);
    if (link->state == FREQHINT_LINK_DOWN) {
        /* The write found the connection gone and closed it. */
        return false;
    }
    if (ret > 0) {
        link->tx_off = ret;
        link->tx_len = FH_HDR_SIZE + len;
    } else if (ret < 0 && errno != EAGAIN) {
        /* Not a full socket but a broken one: start over. */
        qemu_chr_fe_disconnect(&link->chr);
        return false;
    }
    fh_link_watch(fh);
    return ret > 0;
}

/*
 * The socket takes output again: the rest of a partly written frame, the
 * PONG that did not fit, then whatever the device has to say now.
 */
static gboolean fh_link_writable(void *do_not_use, GIOCondition cond,
                                 void *opaque)
{
    VirtIOFreqHint *fh = opaque;
    VirtIOFreqHintLink *link = &fh->link;

    link->tx_watch = 0;
    if (link->state == FREQHINT_LINK_DOWN || !fh_link_tx_continue(fh)) {
        return G_SOURCE_REMOVE;
    }
    if (link->pong_pending) {
        struct fh_msg_ping pong = { .cookie = cpu_to_le64(link->pong_cookie) };

        if (!fh_link_send(fh, FH_MSG_PONG, &pong, sizeof(pong))) {
            return G_SOURCE_REMOVE;
        }
        link->pong_pending = false;
    }
    if (link->vcpus_pending) {
        if (!fh_link_send_vcpus(fh)) {
            return G_SOURCE_REMOVE;
        }
        link->vcpus_pending = false;
    }
    if (link->state == FREQHINT_LINK_UP && !fh_link_tx_busy(fh)) {
        virtio_freqhint_agent_writable(fh);
    }
    return G_SOURCE_REMOVE;
}

/* Idempotent: a disconnect we asked for also raises CHR_EVENT_CLOSED. */
static void fh_link_down(VirtIOFreqHint *fh)
{
    VirtIOFreqHintLink *link = &fh->link;
    bool was_up = link->state == FREQHINT_LINK_UP;

    if (link->state == FREQHINT_LINK_DOWN) {
        return;
    }
    timer_del(link->timeout_timer);
    fh_link_unwatch(fh);
    link->state = FREQHINT_LINK_DOWN;
    link->epoch++;
    link->rx_len = 0;
    link->tx_off = link->tx_len = 0;
    link->pong_pending = false;
    link->vcpus_pending = false;
    trace_virtio_freqhint_link_down(fh, was_up);
    if (was_up) {
        virtio_freqhint_agent_disconnected(fh);
    }
}

static void fh_link_close(VirtIOFreqHint *fh, uint16_t reason,
                          const char *text)
{
    struct fh_msg_close msg = {
        .reason = cpu_to_le16(reason),
    };

    trace_virtio_freqhint_link_close(fh, reason, text);
    pstrcpy(msg.text, sizeof(msg.text), text);
    fh_link_send(fh, FH_MSG_CLOSE, &msg, sizeof(msg));
    qemu_chr_fe_disconnect(&fh->link.chr);
    fh_link_down(fh);
}

static void fh_link_arm_timeout(VirtIOFreqHint *fh)
{
    VirtIOFreqHintLink *link = &fh->link;
    int64_t ms;

    if (link->state == FREQHINT_LINK_HELLO_SENT) {
        ms = FH_HELLO_TIMEOUT_MS;
    } else {
        ms = (int64_t)link->keepalive_ms * FH_KEEPALIVE_MISSES;
    }
    timer_mod(link->timeout_timer, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + ms);
}

static void fh_link_timeout(void *opaque)
{
    VirtIOFreqHint *fh = opaque;

    fh_link_close(fh, FH_CLOSE_TIMEOUT,
                  fh->link.state == FREQHINT_LINK_UP ?
                  "no frame within the keepalive interval" :
                  "no WELCOME in time");
}

/*
 * The VM name in at most FH_NAME_MAX - 1 bytes, cut between two UTF-8
 * characters so that the agent never sees half of one.  @dst is zeroed.
 */
static void fh_link_copy_name(char *dst, const char *name)
{
    size_t len = strlen(name);

    if (len >= FH_NAME_MAX) {
        /* The character that byte FH_NAME_MAX - 1 belongs to is left out. */
        const char *end = g_utf8_find_prev_char(name, name + FH_NAME_MAX);

        len = end ? end - name : 0;
    }
    memcpy(dst, name, len);
}

/* The host thread of every vCPU index; 0 for vCPUs not plugged. */
static void fh_link_put_tids(VirtIOFreqHint *fh, uint8_t *tids)
{
    for (int i = 0; i < fh->num_vcpus; i++) {
        CPUState *cpu = qemu_get_cpu(i);

        stl_le_p(tids + 4 * i, cpu ? cpu->thread_id : 0);
    }
}

/* PD-17: the current vCPU threads; returns false if the socket refused. */
static bool fh_link_send_vcpus(VirtIOFreqHint *fh)
{
    VirtIOFreqHintLink *link = &fh->link;
    struct fh_msg_vcpus *msg = (void *)(link->tx_buf + FH_HDR_SIZE);
    size_t len = sizeof(*msg) + fh->num_vcpus * sizeof(uint32_t);

    if (fh_link_tx_busy(fh)) {
        fh_link_watch(fh);
        return false;
    }
    memset(msg, 0, len);
    msg->num_vcpus = cpu_to_le16(fh->num_vcpus);
    fh_link_put_tids(fh, (uint8_t *)(msg + 1));
    trace_virtio_freqhint_link_vcpus(fh);
    return fh_link_send(fh, FH_MSG_VCPUS, msg, len);
}

static void fh_link_send_hello(VirtIOFreqHint *fh)
{
    VirtIOFreqHintLink *link = &fh->link;
    struct fh_msg_hello *hello = (void *)(link->tx_buf + FH_HDR_SIZE);
    uint8_t *tids = (uint8_t *)(hello + 1);
    size_t len = sizeof(*hello) + fh->num_vcpus * sizeof(uint32_t);

    memset(hello, 0, len);
    hello->version = cpu_to_le16(FH_PROTO_VERSION);
    hello->num_vcpus = cpu_to_le16(fh->num_vcpus);
    hello->features = cpu_to_le32(virtio_freqhint_offered_features(fh));
    hello->qemu_pid = cpu_to_le32(getpid());
    memcpy(hello->uuid, qemu_uuid.data, sizeof(hello->uuid));
    fh_link_copy_name(hello->name, qemu_name ? qemu_name : "");
    fh_link_put_tids(fh, tids);

    link->state = FREQHINT_LINK_HELLO_SENT;
    fh_link_arm_timeout(fh);
    fh_link_send(fh, FH_MSG_HELLO, hello, len);
}

static bool fh_link_handle_welcome(VirtIOFreqHint *fh, const uint8_t *p,
                                   uint32_t len)
{
    VirtIOFreqHintLink *link = &fh->link;
    uint32_t features, keepalive_ms;

    if (len != sizeof(struct fh_msg_welcome)) {
        fh_link_close(fh, FH_CLOSE_MALFORMED, "WELCOME of wrong size");
        return false;
    }
    features = fh_get_le32(p + offsetof(struct fh_msg_welcome, features));
    keepalive_ms = fh_get_le32(p + offsetof(struct fh_msg_welcome,
                                            keepalive_ms));
    if (fh_get_le16(p) != FH_PROTO_VERSION) {
        fh_link_close(fh, FH_CLOSE_VERSION, "unsupported protocol version");
        return false;
    }
    if (fh_get_le16(p + offsetof(struct fh_msg_welcome, reserved)) ||
        fh_get_le32(p + offsetof(struct fh_msg_welcome, reserved2)) ||
        (features & ~virtio_freqhint_offered_features(fh))) {
        fh_link_close(fh, FH_CLOSE_MALFORMED, "bad WELCOME");
        return false;
    }
    if (keepalive_ms < FH_KEEPALIVE_MIN_MS ||
        keepalive_ms > FH_KEEPALIVE_MAX_MS) {
        fh_link_close(fh, FH_CLOSE_MALFORMED, "keepalive_ms out of range");
        return false;
    }

    link->features = features;
    link->keepalive_ms = keepalive_ms;
    link->state = FREQHINT_LINK_UP;
    trace_virtio_freqhint_link_up(fh, features, link->keepalive_ms);
    fh_link_arm_timeout(fh);
    virtio_freqhint_agent_connected(fh);
    return true;
}

/*
 * The payload sits at any offset of rx_buf (after an odd-sized HOST_FREQ,
 * an odd one): every field is read byte-wise, never through a struct.
 */
static bool fh_link_handle_grants(VirtIOFreqHint *fh, const uint8_t *p,
                                  uint32_t len)
{
    VirtIOFreqHintGrant grants[FH_MAX_VCPUS];
    const uint8_t *g = p + sizeof(struct fh_msg_grants);
    uint16_t floor, ceiling;

    if (len < sizeof(struct fh_msg_grants)) {
        fh_link_close(fh, FH_CLOSE_MALFORMED, "short GRANTS");
        return false;
    }
    floor = fh_get_le16(p + offsetof(struct fh_msg_grants, operator_floor));
    ceiling = fh_get_le16(p + offsetof(struct fh_msg_grants,
                                       operator_ceiling));
    if (fh_get_le16(p + offsetof(struct fh_msg_grants, num_grants)) !=
        fh->num_vcpus ||
        fh_get_le16(p + offsetof(struct fh_msg_grants, reserved)) ||
        len != sizeof(struct fh_msg_grants) +
               fh->num_vcpus * sizeof(struct fh_grant) ||
        !fh_range_ok(floor, ceiling)) {
        fh_link_close(fh, FH_CLOSE_MALFORMED, "bad GRANTS");
        return false;
    }
    for (int i = 0; i < fh->num_vcpus; i++) {
        const uint8_t *e = g + i * sizeof(struct fh_grant);

        grants[i].floor = fh_get_le16(e + offsetof(struct fh_grant, floor));
        grants[i].ceiling = fh_get_le16(e + offsetof(struct fh_grant,
                                                     ceiling));
        if (!fh_range_ok(grants[i].floor, grants[i].ceiling)) {
            fh_link_close(fh, FH_CLOSE_MALFORMED, "bad grant");
            return false;
        }
    }
    /*
     * The operator bounds count either way; per-vCPU grants only if the
     * agent took FH_F_GRANTS (it sends the array regardless).
     */
    virtio_freqhint_set_grants(fh, floor, ceiling,
                               fh->link.features & FH_F_GRANTS ? grants :
                               NULL);
    return true;
}

static void fh_link_get_freq_class(const uint8_t *e, VirtIOFreqHintClass *c)
{
    c->min_khz = fh_get_le32(e + offsetof(struct virtio_freqhint_freq_class,
                                          min_khz));
    c->max_khz = fh_get_le32(e + offsetof(struct virtio_freqhint_freq_class,
                                          max_khz));
    c->perf_step = fh_get_le16(e + offsetof(struct virtio_freqhint_freq_class,
                                            perf_step));
    c->num_freqs = fh_get_le16(e + offsetof(struct virtio_freqhint_freq_class,
                                            num_freqs));
    e += offsetof(struct virtio_freqhint_freq_class, freqs_khz);
    for (int i = 0; i < VIRTIO_FREQHINT_MAX_FREQS; i++) {
        c->freqs_khz[i] = fh_get_le32(e + 4 * i);
    }
}

static bool fh_link_handle_host_freq(VirtIOFreqHint *fh, const uint8_t *p,
                                     uint32_t len)
{
    const size_t csize = sizeof(struct virtio_freqhint_freq_class);
    VirtIOFreqHintClass classes[VIRTIO_FREQHINT_MAX_FREQ_CLASSES];
    const uint8_t *freq_class;
    uint16_t n;

    if (len < sizeof(struct fh_msg_host_freq)) {
        fh_link_close(fh, FH_CLOSE_MALFORMED, "short HOST_FREQ");
        return false;
    }
    n = fh_get_le16(p + offsetof(struct fh_msg_host_freq, num_classes));
    if (n > VIRTIO_FREQHINT_MAX_FREQ_CLASSES ||
        fh_get_le16(p + offsetof(struct fh_msg_host_freq, num_vcpus)) !=
        fh->num_vcpus ||
        fh_get_le32(p + offsetof(struct fh_msg_host_freq, reserved)) ||
        len != sizeof(struct fh_msg_host_freq) + n * csize + fh->num_vcpus) {
        fh_link_close(fh, FH_CLOSE_MALFORMED, "bad HOST_FREQ");
        return false;
    }
    p += sizeof(struct fh_msg_host_freq);
    for (int i = 0; i < n; i++) {
        const char *why;

        fh_link_get_freq_class(p + i * csize, &classes[i]);
        why = virtio_freqhint_check_freq_class(&classes[i]);
        if (why) {
            fh_link_close(fh, FH_CLOSE_MALFORMED, why);
            return false;
        }
    }
    freq_class = p + n * csize;
    for (int i = 0; i < fh->num_vcpus; i++) {
        if (freq_class[i] >= n &&
            freq_class[i] != VIRTIO_FREQHINT_NO_FREQ_CLASS) {
            fh_link_close(fh, FH_CLOSE_MALFORMED, "bad freq_class");
            return false;
        }
    }
    virtio_freqhint_set_host_freq(fh, n, classes, freq_class);
    return true;
}

/* Returns false if the connection was closed. */
static bool fh_link_dispatch(VirtIOFreqHint *fh, uint16_t type,
                             const uint8_t *p, uint32_t len)
{
    VirtIOFreqHintLink *link = &fh->link;

    trace_virtio_freqhint_link_recv(fh, type, len);
    if (type == FH_MSG_CLOSE) {
        if (len == sizeof(struct fh_msg_close)) {
            trace_virtio_freqhint_link_closed_by_agent(fh, fh_get_le16(p));
        }
        qemu_chr_fe_disconnect(&link->chr);
        fh_link_down(fh);
        return false;
    }

    if (link->state == FREQHINT_LINK_CONNECTED) {
        fh_link_close(fh, FH_CLOSE_PROTOCOL, "frame before HELLO");
        return false;
    }
    if (link->state == FREQHINT_LINK_HELLO_SENT) {
        if (type != FH_MSG_WELCOME) {
            fh_link_close(fh, FH_CLOSE_PROTOCOL, "expected WELCOME");
            return false;
        }
        return fh_link_handle_welcome(fh, p, len);
    }

    fh_link_arm_timeout(fh);
    switch (type) {
    case FH_MSG_GRANTS:
        return fh_link_handle_grants(fh, p, len);
    case FH_MSG_HOST_FREQ:
        if (!(link->features & FH_F_HOST_FREQ)) {
            fh_link_close(fh, FH_CLOSE_PROTOCOL, "HOST_FREQ not accepted");
            return false;
        }
        return fh_link_handle_host_freq(fh, p, len);
    case FH_MSG_PING:
    case FH_MSG_PONG:
        if (len != sizeof(struct fh_msg_ping)) {
            fh_link_close(fh, FH_CLOSE_MALFORMED, "PING/PONG of wrong size");
            return false;
        }
        /* The device sends no PING: any PONG is unsolicited and ignored. */
        /*
         * A PONG the socket did not take is sent when it is writable, for
         * the latest PING only; a newer one must not overtake it.
         */
        if (type == FH_MSG_PING &&
            (link->pong_pending || !fh_link_send(fh, FH_MSG_PONG, p, len)) &&
            link->state != FREQHINT_LINK_DOWN) {
            link->pong_pending = true;
            link->pong_cookie = fh_get_le64(p);
            fh_link_watch(fh);
        }
        return true;
    default:
        fh_link_close(fh, FH_CLOSE_PROTOCOL, "unexpected frame");
        return false;
    }
}

static int fh_link_can_read(void *opaque)
{
    VirtIOFreqHint *fh = opaque;

    if (fh->link.state == FREQHINT_LINK_DOWN) {
        return 0;
    }
    return sizeof(fh->link.rx_buf) - fh->link.rx_len;
}

static void fh_link_read(void *opaque, const uint8_t *buf, int size)
{
    VirtIOFreqHint *fh = opaque;
    VirtIOFreqHintLink *link = &fh->link;
    unsigned int epoch = link->epoch;
    size_t off = 0;

    if (link->state == FREQHINT_LINK_DOWN) {
        return;
    }
    size = MIN(size, sizeof(link->rx_buf) - link->rx_len);
    memcpy(link->rx_buf + link->rx_len, buf, size);
    link->rx_len += size;

    while (link->rx_len - off >= FH_HDR_SIZE) {
        const uint8_t *p = link->rx_buf + off;
        uint32_t len;
        uint16_t type;
        uint16_t reason = fh_frame_hdr_get(p, &len, &type);

        if (reason != FH_CLOSE_NORMAL) {
            fh_link_close(fh, reason,
                          reason == FH_CLOSE_TOO_BIG ? "frame too big" :
                          reason == FH_CLOSE_UNKNOWN_TYPE ?
                          "unknown frame type" : "reserved header bits");
            return;
        }
        if (link->rx_len - off < FH_HDR_SIZE + len) {
            break;
        }
        /*
         * A frame's handling may close the connection (a reply the socket
         * took in part, or a write that found it gone): the rest of the
         * buffer belongs to a connection that no longer exists.
         */
        if (!fh_link_dispatch(fh, type, p + FH_HDR_SIZE, len) ||
            link->epoch != epoch) {
            return;
        }
        off += FH_HDR_SIZE + len;
    }
    memmove(link->rx_buf, link->rx_buf + off, link->rx_len - off);
    link->rx_len -= off;
}

static void fh_link_event(void *opaque, QEMUChrEvent event)
{
    VirtIOFreqHint *fh = opaque;
    VirtIOFreqHintLink *link = &fh->link;

    switch (event) {
    case CHR_EVENT_OPENED:
        /*
         * A new connection while the old one was never seen to close:
         * that session is over, with everything the agent said in it.
         */
        fh_link_down(fh);
        fh_link_unwatch(fh);
        link->state = FREQHINT_LINK_CONNECTED;
        link->epoch++;
        link->rx_len = 0;
        link->tx_off = link->tx_len = 0;
        link->pong_pending = false;
        link->vcpus_pending = false;
        link->features = 0;
        link->keepalive_ms = 0;
        trace_virtio_freqhint_link_opened(fh);
        if (fh->vm_running) {
            fh_link_send_hello(fh);
        }
        break;
    case CHR_EVENT_CLOSED:
        fh_link_down(fh);
        break;
    default:
        break;
    }
}

static int fh_link_be_change(void *opaque);

static void fh_link_set_handlers(VirtIOFreqHint *fh)
{
    qemu_chr_fe_set_handlers(&fh->link.chr, fh_link_can_read, fh_link_read,
                             fh_link_event, fh_link_be_change, fh, NULL, true);
}

/*
 * chardev-change moved the link to another chardev.  If the old one was
 * closed, CHR_EVENT_CLOSED ended its session; if both are open, the new
 * one's CHR_EVENT_OPENED does.
 */
static int fh_link_be_change(void *opaque)
{
    VirtIOFreqHint *fh = opaque;
    /* qemu_chr_fe_get_driver() is refused to a frontend with be_change. */
    Chardev *chr = fh->link.chr.chr;

    if (!object_dynamic_cast(OBJECT(chr), TYPE_CHARDEV_SOCKET)) {
        return -1;
    }
    fh_link_set_handlers(fh);
    return 0;
}

bool virtio_freqhint_link_up(VirtIOFreqHint *fh)
{
    return fh->link.state == FREQHINT_LINK_UP;
}

void virtio_freqhint_link_vm_running(VirtIOFreqHint *fh)
{
    if (fh->link.state == FREQHINT_LINK_CONNECTED) {
        fh_link_send_hello(fh);
    }
}

/*
 * A vCPU was plugged or unplugged: the thread ids HELLO gave the agent are
 * out of date.  An agent that accepted FH_F_VCPUS gets the new table and
 * the connection stays; with any other, or during the handshake, start
 * over: the chardev reconnects (reconnect-ms) and the new HELLO has the
 * current ones.
 */
static void fh_link_cpu_changed(DeviceListener *listener, DeviceState *dev)
{
    VirtIOFreqHintLink *link = container_of(listener, VirtIOFreqHintLink,
                                            cpu_listener);
    VirtIOFreqHint *fh = container_of(link, VirtIOFreqHint, link);

    if (!object_dynamic_cast(OBJECT(dev), TYPE_CPU)) {
        return;
    }
    if (link->state == FREQHINT_LINK_UP && (link->features & FH_F_VCPUS)) {
        /* Not taken now: the table as it is then, when the socket drains. */
        link->vcpus_pending = !fh_link_send_vcpus(fh) &&
                              link->state == FREQHINT_LINK_UP;
        return;
    }
    if (link->state == FREQHINT_LINK_HELLO_SENT ||
        link->state == FREQHINT_LINK_UP) {
        fh_link_close(fh, FH_CLOSE_NORMAL, "vCPUs changed");
    }
}

bool virtio_freqhint_link_send_hints(VirtIOFreqHint *fh,
                                     struct virtio_freqhint_record *recs,
                                     unsigned int num, uint16_t flags)
{
    VirtIOFreqHintLink *link = &fh->link;
    struct fh_msg_hints *msg = (void *)(link->tx_buf + FH_HDR_SIZE);
    struct virtio_freqhint_record *out = (void *)(msg + 1);

    assert(virtio_freqhint_link_up(fh) && num && num <= fh->num_vcpus);
    if (fh_link_tx_busy(fh)) {
        /* tx_buf still holds the end of another frame. */
        fh_link_watch(fh);
        return false;
    }
    msg->timestamp_ns = cpu_to_le64(fh->newest_record_ns);
    msg->num_records = cpu_to_le16(num);
    msg->flags = cpu_to_le16(flags);
    msg->reserved = 0;
    memcpy(out, recs, num * sizeof(*recs));
    if (!(link->features & FH_F_PERF)) {
        /* The agent did not take perf requests: do not send any. */
        for (unsigned int i = 0; i < num; i++) {
            out[i].flags &= cpu_to_le16(~VIRTIO_FREQHINT_R_PERF_VALID);
            out[i].perf = 0;
        }
    }
    return fh_link_send(fh, FH_MSG_HINTS, msg,
                        sizeof(*msg) + num * sizeof(*recs));
}

/*
 * Only a plain socket chardev carries the link: with a pipe, file or pty,
 * qemu_chr_fe_disconnect() is a no-op and the link would stay dead after
 * its first protocol error; a mux would take the focus from its other
 * frontends and interleave their bytes with frames.
 */
bool virtio_freqhint_link_realize(VirtIOFreqHint *fh, Error **errp)
{
    VirtIOFreqHintLink *link = &fh->link;

    link->state = FREQHINT_LINK_DOWN;
    if (qemu_chr_fe_backend_connected(&link->chr)) {
        Chardev *chr = qemu_chr_fe_get_driver(&link->chr);

        if (!object_dynamic_cast(OBJECT(chr), TYPE_CHARDEV_SOCKET)) {
            error_setg(errp, "virtio-freqhint: chardev '%s' is a %s; the "
                       "agent link needs a socket chardev (without mux)",
                       chr->label, object_get_typename(OBJECT(chr)));
            return false;
        }
        if (fh->num_vcpus > FH_MAX_VCPUS) {
            error_setg(errp, "virtio-freqhint: the agent protocol carries at "
                       "most %d vCPUs, the machine has %u", FH_MAX_VCPUS,
                       fh->num_vcpus);
            return false;
        }
    }
    link->timeout_timer = timer_new_ms(QEMU_CLOCK_REALTIME, fh_link_timeout,
                                       fh);
    link->cpu_listener.realize = fh_link_cpu_changed;
    link->cpu_listener.unrealize = fh_link_cpu_changed;
    device_listener_register(&link->cpu_listener);
    return true;
}

/* The device is ready for the link's callbacks. */
void virtio_freqhint_link_start(VirtIOFreqHint *fh)
{
    VirtIOFreqHintLink *link = &fh->link;

    if (qemu_chr_fe_backend_connected(&link->chr)) {
        fh_link_set_handlers(fh);
    }
}

void virtio_freqhint_link_unrealize(VirtIOFreqHint *fh)
{
    VirtIOFreqHintLink *link = &fh->link;

    device_listener_unregister(&link->cpu_listener);
    if (link->state != FREQHINT_LINK_DOWN) {
        struct fh_msg_close msg = { .reason = cpu_to_le16(FH_CLOSE_NORMAL) };

        pstrcpy(msg.text, sizeof(msg.text), "device removed");
        fh_link_send(fh, FH_MSG_CLOSE, &msg, sizeof(msg));
        /* The device is going away: no callbacks into it. */
        link->state = FREQHINT_LINK_DOWN;
        timer_del(link->timeout_timer);
        fh_link_unwatch(fh);
        qemu_chr_fe_disconnect(&link->chr);
    }
    qemu_chr_fe_deinit(&link->chr, false);
    timer_free(link->timeout_timer);
}
