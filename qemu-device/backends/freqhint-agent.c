/*
 * Virtio frequency hint device: freqhint-agent, the host agent backend
 *
 *   -chardev socket,id=fh0,path=/run/freqhint/device.sock,reconnect-ms=1000
 *   -object freqhint-agent,id=agent0,chardev=fh0
 *   -device virtio-freqhint-pci,backend=agent0
 *
 * Frames of system/freqhint-agent.h on a socket chardev.
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
#include "qemu/module.h"
#include "qemu/timer.h"
#include "qemu/uuid.h"
#include "qemu/error-report.h"
#include "chardev/char.h"
#include "chardev/char-fe.h"
#include "qapi/error.h"
#include "qom/object_interfaces.h"
#include "hw/core/cpu.h"
#include "hw/qdev-core.h"
#include "system/freqhint.h"
#include "system/freqhint-agent.h"
#include "system/system.h"
#include "trace.h"

OBJECT_DECLARE_SIMPLE_TYPE(FreqHintAgent, FREQHINT_AGENT)

typedef enum FreqHintAgentState {
    FREQHINT_LINK_DOWN,         /* no agent connection */
    FREQHINT_LINK_CONNECTED,    /* connected, HELLO waits for the VM to run */
    FREQHINT_LINK_HELLO_SENT,   /* waiting for WELCOME */
    FREQHINT_LINK_UP,           /* WELCOME received */
} FreqHintAgentState;

struct FreqHintAgent {
    FreqHintBackend parent_obj;

    char *chr_name;
    CharBackend chr;            /* claimed from complete to finalize */
    bool opened;
    FreqHintAgentState state;
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
    VirtIOFreqHintGrant *grants; /* a GRANTS frame's, num_vcpus of them */
    /* The latest valid HOST_FREQ of this session, to check CUR_FREQ by. */
    bool have_host_freq;
    uint16_t num_classes;
    VirtIOFreqHintClass classes[VIRTIO_FREQHINT_MAX_FREQ_CLASSES];
    uint8_t *freq_class;        /* num_vcpus */
    uint32_t *cur_khz;          /* a CUR_FREQ frame's, num_vcpus */
    uint8_t rx_buf[sizeof(struct fh_frame_hdr) + FH_MAX_PAYLOAD];
    uint8_t tx_buf[sizeof(struct fh_frame_hdr) + FH_MAX_PAYLOAD];
};

#define FH_HDR_SIZE sizeof(struct fh_frame_hdr)

/* What the device offers the guest, it offers the agent. */
static uint32_t fh_agent_offered_features(FreqHintAgent *a)
{
    uint32_t f = 0;

    if (a->parent_obj.features & FREQHINT_BACKEND_PERF) {
        f |= FH_F_PERF;
    }
    if (a->parent_obj.features & FREQHINT_BACKEND_GRANTS) {
        f |= FH_F_GRANTS;
    }
    if (a->parent_obj.features & FREQHINT_BACKEND_HOST_FREQ) {
        f |= FH_F_HOST_FREQ;
    }
    if (a->parent_obj.features & FREQHINT_BACKEND_CUR_FREQ) {
        f |= FH_F_CUR_FREQ;
    }
    /* vCPU hot-plug without starting over. */
    return f | FH_F_VCPUS;
}

static gboolean fh_agent_writable(void *do_not_use, GIOCondition cond,
                                  void *opaque);
static bool fh_agent_send_vcpus(FreqHintAgent *a);

/* Call fh_agent_writable() once the socket takes output again. */
static void fh_agent_watch(FreqHintAgent *a)
{
    if (!a->tx_watch) {
        a->tx_watch = qemu_chr_fe_add_watch(&a->chr, G_IO_OUT | G_IO_HUP,
                                            fh_agent_writable, a);
    }
}

static void fh_agent_unwatch(FreqHintAgent *a)
{
    if (a->tx_watch) {
        g_source_remove(a->tx_watch);
        a->tx_watch = 0;
    }
}

/* A frame is partly written: nothing else may go out before its end. */
static bool fh_agent_tx_busy(FreqHintAgent *a)
{
    return a->tx_off < a->tx_len;
}

/*
 * Write what is left of the frame in tx_buf.  Returns true when all of it
 * is out; otherwise the rest goes when the socket is writable (PB-4: once a
 * byte of a frame is written, the frame is finished before any other).
 */
static bool fh_agent_tx_continue(FreqHintAgent *a)
{
    int ret;

    if (!fh_agent_tx_busy(a)) {
        return true;
    }
    ret = qemu_chr_fe_write(&a->chr, a->tx_buf + a->tx_off,
                            a->tx_len - a->tx_off);
    if (ret > 0) {
        a->tx_off += ret;
    } else if (ret < 0 && errno != EAGAIN) {
        qemu_chr_fe_disconnect(&a->chr);
        return false;
    }
    if (fh_agent_tx_busy(a)) {
        fh_agent_watch(a);
        return false;
    }
    a->tx_off = a->tx_len = 0;
    return true;
}

/*
 * Write one frame without blocking the main loop.  Returns false if the
 * socket took none of it: the frame is then gone, never queued, and the
 * socket is watched so that the caller's state goes out when it can.  A
 * frame taken in part is finished from the watch.
 */
static bool fh_agent_send(FreqHintAgent *a, uint16_t type,
                          const void *payload, size_t len)
{
    int ret;

    assert(len <= FH_MAX_PAYLOAD);
    if (a->state == FREQHINT_LINK_DOWN || fh_agent_tx_busy(a)) {
        trace_freqhint_agent_send_failed(a, type, len, 0);
        return false;
    }
    fh_frame_hdr_put(a->tx_buf, len, type);
    if (payload != a->tx_buf + FH_HDR_SIZE) {
        memcpy(a->tx_buf + FH_HDR_SIZE, payload, len);
    }

    ret = qemu_chr_fe_write(&a->chr, a->tx_buf, FH_HDR_SIZE + len);
    if (ret == FH_HDR_SIZE + len) {
        trace_freqhint_agent_send(a, type, len);
        return true;
    }
    trace_freqhint_agent_send_failed(a, type, len, ret);
    if (a->state == FREQHINT_LINK_DOWN) {
        /* The write found the connection gone and closed it. */
        return false;
    }
    if (ret > 0) {
        a->tx_off = ret;
        a->tx_len = FH_HDR_SIZE + len;
    } else if (ret < 0 && errno != EAGAIN) {
        /* Not a full socket but a broken one: start over. */
        qemu_chr_fe_disconnect(&a->chr);
        return false;
    }
    fh_agent_watch(a);
    return ret > 0;
}

/*
 * The socket takes output again: the rest of a partly written frame, the
 * PONG that did not fit, then whatever the device has to say now.
 */
static gboolean fh_agent_writable(void *do_not_use, GIOCondition cond,
                                  void *opaque)
{
    FreqHintAgent *a = opaque;

    a->tx_watch = 0;
    if (a->state == FREQHINT_LINK_DOWN || !fh_agent_tx_continue(a)) {
        return G_SOURCE_REMOVE;
    }
    if (a->pong_pending) {
        struct fh_msg_ping pong = { .cookie = cpu_to_le64(a->pong_cookie) };

        if (!fh_agent_send(a, FH_MSG_PONG, &pong, sizeof(pong))) {
            return G_SOURCE_REMOVE;
        }
        a->pong_pending = false;
    }
    if (a->vcpus_pending) {
        if (!fh_agent_send_vcpus(a)) {
            return G_SOURCE_REMOVE;
        }
        a->vcpus_pending = false;
    }
    if (a->state == FREQHINT_LINK_UP && !fh_agent_tx_busy(a)) {
        a->parent_obj.ops->writable(a->parent_obj.opaque);
    }
    return G_SOURCE_REMOVE;
}

/* Forget the connection's session: its buffers, timers and pending frames. */
static void fh_agent_new_session(FreqHintAgent *a, FreqHintAgentState state)
{
    timer_del(a->timeout_timer);
    fh_agent_unwatch(a);
    a->state = state;
    a->epoch++;
    a->rx_len = 0;
    a->tx_off = a->tx_len = 0;
    a->pong_pending = false;
    a->vcpus_pending = false;
    a->features = 0;
    a->keepalive_ms = 0;
    a->have_host_freq = false;
}

/* Idempotent: a disconnect we asked for also raises CHR_EVENT_CLOSED. */
static void fh_agent_down(FreqHintAgent *a)
{
    bool was_up = a->state == FREQHINT_LINK_UP;

    if (a->state == FREQHINT_LINK_DOWN) {
        return;
    }
    fh_agent_new_session(a, FREQHINT_LINK_DOWN);
    trace_freqhint_agent_down(a, was_up);
    if (was_up) {
        a->parent_obj.ops->disconnected(a->parent_obj.opaque);
    }
}

static void fh_agent_close(FreqHintAgent *a, uint16_t reason,
                           const char *text)
{
    struct fh_msg_close msg = {
        .reason = cpu_to_le16(reason),
    };

    trace_freqhint_agent_close(a, reason, text);
    pstrcpy(msg.text, sizeof(msg.text), text);
    fh_agent_send(a, FH_MSG_CLOSE, &msg, sizeof(msg));
    qemu_chr_fe_disconnect(&a->chr);
    fh_agent_down(a);
}

static void fh_agent_arm_timeout(FreqHintAgent *a)
{
    int64_t ms;

    if (a->state == FREQHINT_LINK_HELLO_SENT) {
        ms = FH_HELLO_TIMEOUT_MS;
    } else {
        ms = (int64_t)a->keepalive_ms * FH_KEEPALIVE_MISSES;
    }
    timer_mod(a->timeout_timer, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + ms);
}

static void fh_agent_timeout(void *opaque)
{
    FreqHintAgent *a = opaque;

    fh_agent_close(a, FH_CLOSE_TIMEOUT,
                   a->state == FREQHINT_LINK_UP ?
                   "no frame within the keepalive interval" :
                   "no WELCOME in time");
}

/*
 * The VM name in at most FH_NAME_MAX - 1 bytes, cut between two UTF-8
 * characters so that the agent never sees half of one.  @dst is zeroed.
 */
static void fh_agent_copy_name(char *dst, const char *name)
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
static void fh_agent_put_tids(FreqHintAgent *a, uint8_t *tids)
{
    for (int i = 0; i < a->parent_obj.num_vcpus; i++) {
        CPUState *cpu = qemu_get_cpu(i);

        stl_le_p(tids + 4 * i, cpu ? cpu->thread_id : 0);
    }
}

/* PD-17: the current vCPU threads; returns false if the socket refused. */
static bool fh_agent_send_vcpus(FreqHintAgent *a)
{
    struct fh_msg_vcpus *msg = (void *)(a->tx_buf + FH_HDR_SIZE);
    size_t len = sizeof(*msg) + a->parent_obj.num_vcpus * sizeof(uint32_t);

    if (fh_agent_tx_busy(a)) {
        fh_agent_watch(a);
        return false;
    }
    memset(msg, 0, len);
    msg->num_vcpus = cpu_to_le16(a->parent_obj.num_vcpus);
    fh_agent_put_tids(a, (uint8_t *)(msg + 1));
    trace_freqhint_agent_vcpus(a);
    return fh_agent_send(a, FH_MSG_VCPUS, msg, len);
}

static void fh_agent_send_hello(FreqHintAgent *a)
{
    struct fh_msg_hello *hello = (void *)(a->tx_buf + FH_HDR_SIZE);
    uint8_t *tids = (uint8_t *)(hello + 1);
    size_t len = sizeof(*hello) + a->parent_obj.num_vcpus * sizeof(uint32_t);

    memset(hello, 0, len);
    hello->version = cpu_to_le16(FH_PROTO_VERSION);
    hello->num_vcpus = cpu_to_le16(a->parent_obj.num_vcpus);
    hello->features = cpu_to_le32(fh_agent_offered_features(a));
    hello->qemu_pid = cpu_to_le32(getpid());
    memcpy(hello->uuid, qemu_uuid.data, sizeof(hello->uuid));
    fh_agent_copy_name(hello->name, qemu_name ? qemu_name : "");
    fh_agent_put_tids(a, tids);

    a->state = FREQHINT_LINK_HELLO_SENT;
    fh_agent_arm_timeout(a);
    fh_agent_send(a, FH_MSG_HELLO, hello, len);
}

static bool fh_agent_handle_welcome(FreqHintAgent *a, const uint8_t *p,
                                    uint32_t len)
{
    uint32_t features, keepalive_ms;

    if (len != sizeof(struct fh_msg_welcome)) {
        fh_agent_close(a, FH_CLOSE_MALFORMED, "WELCOME of wrong size");
        return false;
    }
    features = fh_get_le32(p + offsetof(struct fh_msg_welcome, features));
    keepalive_ms = fh_get_le32(p + offsetof(struct fh_msg_welcome,
                                            keepalive_ms));
    if (fh_get_le16(p) != FH_PROTO_VERSION) {
        fh_agent_close(a, FH_CLOSE_VERSION, "unsupported protocol version");
        return false;
    }
    if (fh_get_le16(p + offsetof(struct fh_msg_welcome, reserved)) ||
        fh_get_le32(p + offsetof(struct fh_msg_welcome, reserved2)) ||
        (features & ~fh_agent_offered_features(a))) {
        fh_agent_close(a, FH_CLOSE_MALFORMED, "bad WELCOME");
        return false;
    }
    if ((features & FH_F_CUR_FREQ) && !(features & FH_F_HOST_FREQ)) {
        fh_agent_close(a, FH_CLOSE_MALFORMED,
                       "FH_F_CUR_FREQ accepted without FH_F_HOST_FREQ");
        return false;
    }
    if (keepalive_ms < FH_KEEPALIVE_MIN_MS ||
        keepalive_ms > FH_KEEPALIVE_MAX_MS) {
        fh_agent_close(a, FH_CLOSE_MALFORMED, "keepalive_ms out of range");
        return false;
    }

    a->features = features;
    a->keepalive_ms = keepalive_ms;
    a->state = FREQHINT_LINK_UP;
    trace_freqhint_agent_up(a, features, a->keepalive_ms);
    fh_agent_arm_timeout(a);
    a->parent_obj.ops->connected(a->parent_obj.opaque);
    return true;
}

/*
 * The payload sits at any offset of rx_buf (after an odd-sized HOST_FREQ,
 * an odd one): every field is read byte-wise, never through a struct.
 */
static bool fh_agent_handle_grants(FreqHintAgent *a, const uint8_t *p,
                                   uint32_t len)
{
    VirtIOFreqHintGrant *grants = a->grants;
    const uint8_t *g = p + sizeof(struct fh_msg_grants);
    uint16_t floor, ceiling;

    if (len < sizeof(struct fh_msg_grants)) {
        fh_agent_close(a, FH_CLOSE_MALFORMED, "short GRANTS");
        return false;
    }
    floor = fh_get_le16(p + offsetof(struct fh_msg_grants, operator_floor));
    ceiling = fh_get_le16(p + offsetof(struct fh_msg_grants,
                                       operator_ceiling));
    if (fh_get_le16(p + offsetof(struct fh_msg_grants, num_grants)) !=
        a->parent_obj.num_vcpus ||
        fh_get_le16(p + offsetof(struct fh_msg_grants, reserved)) ||
        len != sizeof(struct fh_msg_grants) +
               a->parent_obj.num_vcpus * sizeof(struct fh_grant) ||
        !fh_range_ok(floor, ceiling)) {
        fh_agent_close(a, FH_CLOSE_MALFORMED, "bad GRANTS");
        return false;
    }
    for (int i = 0; i < a->parent_obj.num_vcpus; i++) {
        const uint8_t *e = g + i * sizeof(struct fh_grant);

        grants[i].floor = fh_get_le16(e + offsetof(struct fh_grant, floor));
        grants[i].ceiling = fh_get_le16(e + offsetof(struct fh_grant,
                                                     ceiling));
        if (!fh_range_ok(grants[i].floor, grants[i].ceiling)) {
            fh_agent_close(a, FH_CLOSE_MALFORMED, "bad grant");
            return false;
        }
    }
    /*
     * The operator bounds count either way; per-vCPU grants only if the
     * agent took FH_F_GRANTS (it sends the array regardless).
     */
    a->parent_obj.ops->set_grants(a->parent_obj.opaque, floor, ceiling,
                               a->features & FH_F_GRANTS ? grants :
                               NULL);
    return true;
}

static void fh_agent_get_freq_class(const uint8_t *e, VirtIOFreqHintClass *c)
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

static bool fh_agent_handle_host_freq(FreqHintAgent *a, const uint8_t *p,
                                      uint32_t len)
{
    const size_t csize = sizeof(struct virtio_freqhint_freq_class);
    VirtIOFreqHintClass classes[VIRTIO_FREQHINT_MAX_FREQ_CLASSES];
    const uint8_t *freq_class;
    uint16_t n;

    if (len < sizeof(struct fh_msg_host_freq)) {
        fh_agent_close(a, FH_CLOSE_MALFORMED, "short HOST_FREQ");
        return false;
    }
    n = fh_get_le16(p + offsetof(struct fh_msg_host_freq, num_classes));
    if (n > VIRTIO_FREQHINT_MAX_FREQ_CLASSES ||
        fh_get_le16(p + offsetof(struct fh_msg_host_freq, num_vcpus)) !=
        a->parent_obj.num_vcpus ||
        fh_get_le32(p + offsetof(struct fh_msg_host_freq, reserved)) ||
        len != sizeof(struct fh_msg_host_freq) + n * csize +
               a->parent_obj.num_vcpus) {
        fh_agent_close(a, FH_CLOSE_MALFORMED, "bad HOST_FREQ");
        return false;
    }
    p += sizeof(struct fh_msg_host_freq);
    for (int i = 0; i < n; i++) {
        const char *why;

        fh_agent_get_freq_class(p + i * csize, &classes[i]);
        why = virtio_freqhint_check_freq_class(&classes[i]);
        if (why) {
            fh_agent_close(a, FH_CLOSE_MALFORMED, why);
            return false;
        }
    }
    freq_class = p + n * csize;
    for (int i = 0; i < a->parent_obj.num_vcpus; i++) {
        if (freq_class[i] >= n &&
            freq_class[i] != VIRTIO_FREQHINT_NO_FREQ_CLASS) {
            fh_agent_close(a, FH_CLOSE_MALFORMED, "bad freq_class");
            return false;
        }
    }
    a->have_host_freq = true;
    a->num_classes = n;
    memcpy(a->classes, classes, n * sizeof(classes[0]));
    memcpy(a->freq_class, freq_class, a->parent_obj.num_vcpus);
    a->parent_obj.ops->set_host_freq(a->parent_obj.opaque, n, classes,
                                     freq_class);
    return true;
}

/*
 * Each value 0 or within the range of its vCPU's class in the latest
 * HOST_FREQ; checked as a whole before the device sees any of it.
 */
static bool fh_agent_handle_cur_freq(FreqHintAgent *a, const uint8_t *p,
                                     uint32_t len)
{
    uint16_t n = a->parent_obj.num_vcpus;

    if (!a->have_host_freq) {
        fh_agent_close(a, FH_CLOSE_PROTOCOL, "CUR_FREQ before HOST_FREQ");
        return false;
    }
    if (len < sizeof(struct fh_msg_cur_freq) ||
        fh_get_le16(p + offsetof(struct fh_msg_cur_freq, num_vcpus)) != n ||
        fh_get_le16(p + offsetof(struct fh_msg_cur_freq, reserved)) ||
        fh_get_le32(p + offsetof(struct fh_msg_cur_freq, reserved2)) ||
        len != sizeof(struct fh_msg_cur_freq) + n * sizeof(uint32_t)) {
        fh_agent_close(a, FH_CLOSE_MALFORMED, "bad CUR_FREQ");
        return false;
    }
    p += sizeof(struct fh_msg_cur_freq);
    for (int i = 0; i < n; i++) {
        uint32_t khz = fh_get_le32(p + 4 * i);
        uint8_t k = a->freq_class[i];

        if (khz && (k >= a->num_classes || khz < a->classes[k].min_khz ||
                    khz > a->classes[k].max_khz)) {
            fh_agent_close(a, FH_CLOSE_MALFORMED,
                           "cur_khz outside its vCPU's class");
            return false;
        }
        a->cur_khz[i] = khz;
    }
    a->parent_obj.ops->set_cur_freq(a->parent_obj.opaque, a->cur_khz);
    return true;
}

/* Returns false if the connection was closed. */
static bool fh_agent_dispatch(FreqHintAgent *a, uint16_t type,
                              const uint8_t *p, uint32_t len)
{
    trace_freqhint_agent_recv(a, type, len);
    if (type == FH_MSG_CLOSE) {
        if (len == sizeof(struct fh_msg_close)) {
            trace_freqhint_agent_closed_by_agent(a, fh_get_le16(p));
        }
        qemu_chr_fe_disconnect(&a->chr);
        fh_agent_down(a);
        return false;
    }

    if (a->state == FREQHINT_LINK_CONNECTED) {
        fh_agent_close(a, FH_CLOSE_PROTOCOL, "frame before HELLO");
        return false;
    }
    if (a->state == FREQHINT_LINK_HELLO_SENT) {
        if (type != FH_MSG_WELCOME) {
            fh_agent_close(a, FH_CLOSE_PROTOCOL, "expected WELCOME");
            return false;
        }
        return fh_agent_handle_welcome(a, p, len);
    }

    fh_agent_arm_timeout(a);
    switch (type) {
    case FH_MSG_GRANTS:
        return fh_agent_handle_grants(a, p, len);
    case FH_MSG_HOST_FREQ:
        if (!(a->features & FH_F_HOST_FREQ)) {
            fh_agent_close(a, FH_CLOSE_PROTOCOL, "HOST_FREQ not accepted");
            return false;
        }
        return fh_agent_handle_host_freq(a, p, len);
    case FH_MSG_CUR_FREQ:
        if (!(a->features & FH_F_CUR_FREQ)) {
            fh_agent_close(a, FH_CLOSE_PROTOCOL, "CUR_FREQ not accepted");
            return false;
        }
        return fh_agent_handle_cur_freq(a, p, len);
    case FH_MSG_PING:
    case FH_MSG_PONG:
        if (len != sizeof(struct fh_msg_ping)) {
            fh_agent_close(a, FH_CLOSE_MALFORMED, "PING/PONG of wrong size");
            return false;
        }
        /* The device sends no PING: any PONG is unsolicited and ignored. */
        /*
         * A PONG the socket did not take is sent when it is writable, for
         * the latest PING only; a newer one must not overtake it.
         */
        if (type == FH_MSG_PING &&
            (a->pong_pending || !fh_agent_send(a, FH_MSG_PONG, p, len)) &&
            a->state != FREQHINT_LINK_DOWN) {
            a->pong_pending = true;
            a->pong_cookie = fh_get_le64(p);
            fh_agent_watch(a);
        }
        return true;
    default:
        fh_agent_close(a, FH_CLOSE_PROTOCOL, "unexpected frame");
        return false;
    }
}

static int fh_agent_can_read(void *opaque)
{
    FreqHintAgent *a = opaque;

    if (a->state == FREQHINT_LINK_DOWN) {
        return 0;
    }
    return sizeof(a->rx_buf) - a->rx_len;
}

static void fh_agent_read(void *opaque, const uint8_t *buf, int size)
{
    FreqHintAgent *a = opaque;
    unsigned int epoch = a->epoch;
    size_t off = 0;

    if (a->state == FREQHINT_LINK_DOWN) {
        return;
    }
    size = MIN(size, sizeof(a->rx_buf) - a->rx_len);
    memcpy(a->rx_buf + a->rx_len, buf, size);
    a->rx_len += size;

    while (a->rx_len - off >= FH_HDR_SIZE) {
        const uint8_t *p = a->rx_buf + off;
        uint32_t len;
        uint16_t type;
        uint16_t reason = fh_frame_hdr_get(p, &len, &type);

        if (reason != FH_CLOSE_NORMAL) {
            fh_agent_close(a, reason,
                           reason == FH_CLOSE_TOO_BIG ? "frame too big" :
                           reason == FH_CLOSE_UNKNOWN_TYPE ?
                           "unknown frame type" : "reserved header bits");
            return;
        }
        if (a->rx_len - off < FH_HDR_SIZE + len) {
            break;
        }
        /*
         * A frame's handling may close the connection (a reply the socket
         * took in part, or a write that found it gone): the rest of the
         * buffer belongs to a connection that no longer exists.
         */
        if (!fh_agent_dispatch(a, type, p + FH_HDR_SIZE, len) ||
            a->epoch != epoch) {
            return;
        }
        off += FH_HDR_SIZE + len;
    }
    memmove(a->rx_buf, a->rx_buf + off, a->rx_len - off);
    a->rx_len -= off;
}

static void fh_agent_event(void *opaque, QEMUChrEvent event)
{
    FreqHintAgent *a = opaque;

    switch (event) {
    case CHR_EVENT_OPENED:
        /*
         * A new connection while the old one was never seen to close:
         * that session is over, with everything the agent said in it.
         */
        fh_agent_down(a);
        fh_agent_new_session(a, FREQHINT_LINK_CONNECTED);
        trace_freqhint_agent_opened(a);
        if (a->parent_obj.vm_running) {
            fh_agent_send_hello(a);
        }
        break;
    case CHR_EVENT_CLOSED:
        fh_agent_down(a);
        break;
    default:
        break;
    }
}

static int fh_agent_be_change(void *opaque);

static void fh_agent_set_handlers(FreqHintAgent *a)
{
    qemu_chr_fe_set_handlers(&a->chr, fh_agent_can_read, fh_agent_read,
                             fh_agent_event, fh_agent_be_change, a, NULL, true);
}

/*
 * chardev-change moved the link to another chardev.  If the old one was
 * closed, CHR_EVENT_CLOSED ended its session; if both are open, the new
 * one's CHR_EVENT_OPENED does.
 */
static int fh_agent_be_change(void *opaque)
{
    FreqHintAgent *a = opaque;

    /* qemu_chr_fe_get_driver() is refused to a frontend with be_change. */
    Chardev *chr = a->chr.chr;

    if (!object_dynamic_cast(OBJECT(chr), TYPE_CHARDEV_SOCKET)) {
        return -1;
    }
    fh_agent_set_handlers(a);
    return 0;
}

static bool fh_agent_is_up(FreqHintBackend *b)
{
    return FREQHINT_AGENT(b)->state == FREQHINT_LINK_UP;
}

/* The VM runs: a connection waiting for that sends its HELLO now. */
static void fh_agent_vm_state(FreqHintBackend *b, bool running)
{
    FreqHintAgent *a = FREQHINT_AGENT(b);

    if (running && a->state == FREQHINT_LINK_CONNECTED) {
        fh_agent_send_hello(a);
    }
}

/*
 * A vCPU was plugged or unplugged: the thread ids HELLO gave the agent are
 * out of date.  An agent that accepted FH_F_VCPUS gets the new table and
 * the connection stays; with any other, or during the handshake, start
 * over: the chardev reconnects (reconnect-ms) and the new HELLO has the
 * current ones.
 */
static void fh_agent_cpu_changed(DeviceListener *listener, DeviceState *dev)
{
    FreqHintAgent *a = container_of(listener, FreqHintAgent, cpu_listener);

    if (!object_dynamic_cast(OBJECT(dev), TYPE_CPU)) {
        return;
    }
    if (a->state == FREQHINT_LINK_UP && (a->features & FH_F_VCPUS)) {
        /* Not taken now: the table as it is then, when the socket drains. */
        a->vcpus_pending = !fh_agent_send_vcpus(a) &&
                           a->state == FREQHINT_LINK_UP;
        return;
    }
    if (a->state == FREQHINT_LINK_HELLO_SENT ||
        a->state == FREQHINT_LINK_UP) {
        fh_agent_close(a, FH_CLOSE_NORMAL, "vCPUs changed");
    }
}

static bool fh_agent_send_hints(FreqHintBackend *b,
                                const struct virtio_freqhint_record *recs,
                                unsigned int num, bool full,
                                int64_t timestamp_ns)
{
    FreqHintAgent *a = FREQHINT_AGENT(b);
    struct fh_msg_hints *msg = (void *)(a->tx_buf + FH_HDR_SIZE);
    struct virtio_freqhint_record *out = (void *)(msg + 1);

    if (fh_agent_tx_busy(a)) {
        /* tx_buf still holds the end of another frame. */
        fh_agent_watch(a);
        return false;
    }
    msg->timestamp_ns = cpu_to_le64(timestamp_ns);
    msg->num_records = cpu_to_le16(num);
    msg->flags = cpu_to_le16(full ? FH_HINTS_F_FULL : 0);
    msg->reserved = 0;
    memcpy(out, recs, num * sizeof(*recs));
    if (!(a->features & FH_F_PERF)) {
        /* The agent did not take perf requests: do not send any. */
        for (unsigned int i = 0; i < num; i++) {
            out[i].flags &= cpu_to_le16(~VIRTIO_FREQHINT_R_PERF_VALID);
            out[i].perf = 0;
        }
    }
    return fh_agent_send(a, FH_MSG_HINTS, msg,
                         sizeof(*msg) + num * sizeof(*recs));
}

/*
 * Only a plain socket chardev carries the link: with a pipe, file or pty,
 * qemu_chr_fe_disconnect() is a no-op and the link would stay dead after
 * its first protocol error; a mux would take the focus from its other
 * frontends and interleave their bytes with frames.
 */
static Chardev *fh_agent_find_chardev(FreqHintAgent *a, Error **errp)
{
    Chardev *chr = qemu_chr_find(a->chr_name);

    if (!chr) {
        error_setg(errp, "freqhint-agent: chardev '%s' not found",
                   a->chr_name);
        return NULL;
    }
    if (!object_dynamic_cast(OBJECT(chr), TYPE_CHARDEV_SOCKET)) {
        error_setg(errp, "freqhint-agent: chardev '%s' is a %s; the "
                   "agent link needs a socket chardev (without mux)",
                   chr->label, object_get_typename(OBJECT(chr)));
        return NULL;
    }
    return chr;
}

/*
 * The chardev is claimed when the object is complete, like rng-egd's: -object
 * freqhint-agent is created after the chardevs (system/vl.c), and
 * object-add with a missing or unfit chardev fails there, not at a later
 * device_add.
 */
static void fh_agent_complete(UserCreatable *uc, Error **errp)
{
    FreqHintAgent *a = FREQHINT_AGENT(uc);
    Chardev *chr;

    if (!a->chr_name) {
        error_setg(errp, "freqhint-agent: 'chardev' is not set");
        return;
    }
    chr = fh_agent_find_chardev(a, errp);
    if (!chr || !qemu_chr_fe_init(&a->chr, chr, errp)) {
        return;
    }
    a->opened = true;
}

/* The device's callbacks run only while it is attached. */
static bool fh_agent_attach(FreqHintBackend *b, Error **errp)
{
    FreqHintAgent *a = FREQHINT_AGENT(b);

    if (b->num_vcpus > FH_MAX_VCPUS) {
        error_setg(errp, "freqhint-agent: the agent protocol carries at "
                   "most %d vCPUs, the machine has %u", FH_MAX_VCPUS,
                   b->num_vcpus);
        return false;
    }
    a->state = FREQHINT_LINK_DOWN;
    a->grants = g_new(VirtIOFreqHintGrant, b->num_vcpus);
    a->freq_class = g_new(uint8_t, b->num_vcpus);
    a->cur_khz = g_new(uint32_t, b->num_vcpus);
    a->timeout_timer = timer_new_ms(QEMU_CLOCK_REALTIME, fh_agent_timeout, a);
    a->cpu_listener.realize = fh_agent_cpu_changed;
    a->cpu_listener.unrealize = fh_agent_cpu_changed;
    device_listener_register(&a->cpu_listener);
    return true;
}

/* The device is ready for the link's callbacks. */
static void fh_agent_start(FreqHintBackend *b)
{
    fh_agent_set_handlers(FREQHINT_AGENT(b));
}

static void fh_agent_detach(FreqHintBackend *b)
{
    FreqHintAgent *a = FREQHINT_AGENT(b);

    device_listener_unregister(&a->cpu_listener);
    if (a->state != FREQHINT_LINK_DOWN) {
        struct fh_msg_close msg = { .reason = cpu_to_le16(FH_CLOSE_NORMAL) };

        pstrcpy(msg.text, sizeof(msg.text), "device removed");
        fh_agent_send(a, FH_MSG_CLOSE, &msg, sizeof(msg));
        /* The device is going away: no callbacks into it. */
        a->state = FREQHINT_LINK_DOWN;
        fh_agent_unwatch(a);
        qemu_chr_fe_disconnect(&a->chr);
    }
    /* The chardev stays claimed, for the next device. */
    qemu_chr_fe_set_handlers(&a->chr, NULL, NULL, NULL, NULL, NULL, NULL,
                             true);
    timer_free(a->timeout_timer);
    a->timeout_timer = NULL;
    g_free(a->grants);
    a->grants = NULL;
    g_free(a->freq_class);
    a->freq_class = NULL;
    g_free(a->cur_khz);
    a->cur_khz = NULL;
}

static char *fh_agent_get_chardev(Object *obj, Error **errp)
{
    return g_strdup(FREQHINT_AGENT(obj)->chr_name);
}

static void fh_agent_set_chardev(Object *obj, const char *value, Error **errp)
{
    FreqHintAgent *a = FREQHINT_AGENT(obj);

    if (a->opened) {
        error_setg(errp, "freqhint-agent: 'chardev' cannot change once the "
                   "object is created");
        return;
    }
    g_free(a->chr_name);
    a->chr_name = g_strdup(value);
}

static void fh_agent_finalize(Object *obj)
{
    FreqHintAgent *a = FREQHINT_AGENT(obj);

    qemu_chr_fe_deinit(&a->chr, false);
    g_free(a->chr_name);
}

static void fh_agent_class_init(ObjectClass *klass, void *data)
{
    FreqHintBackendClass *bc = FREQHINT_BACKEND_CLASS(klass);
    UserCreatableClass *ucc = USER_CREATABLE_CLASS(klass);

    /* The object claims its chardev when complete; a device attaches. */
    ucc->complete = fh_agent_complete;
    bc->attach = fh_agent_attach;
    bc->start = fh_agent_start;
    bc->detach = fh_agent_detach;
    object_class_property_add_str(klass, "chardev", fh_agent_get_chardev,
                                  fh_agent_set_chardev);
    /* Hints out, while the VM runs. */
    bc->is_up = fh_agent_is_up;
    bc->vm_state = fh_agent_vm_state;
    bc->send_hints = fh_agent_send_hints;
    object_class_property_set_description(klass, "chardev",
        "socket chardev connected to the host agent");
}

static const TypeInfo fh_agent_types[] = {
    {
        .name = TYPE_FREQHINT_AGENT,
        .parent = TYPE_FREQHINT_BACKEND,
        .instance_size = sizeof(FreqHintAgent),
        .instance_finalize = fh_agent_finalize,
        .class_init = fh_agent_class_init,
    },
};

DEFINE_TYPES(fh_agent_types)
