/*
 * QTest testcases for virtio-freqhint
 *
 * The test is both sides of the device: the guest driver, through a real
 * virtqueue, and the host agent, listening on the socket the device's
 * chardev connects to.  Every case checks the bytes that reach that socket.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/socket.h>
#include <sys/un.h>
#include <poll.h>
#include "libqtest-single.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "libqos/qgraph.h"
#include "libqos/virtio-freqhint.h"
#include "standard-headers/linux/virtio_config.h"
#include "standard-headers/linux/virtio_freqhint.h"
#include "standard-headers/freqhint/agent_protocol.h"

#define NUM_VCPUS           2   /* -smp; the hot-plug test adds one */
#define MAX_VCPUS           3
#define TIMEOUT_MS          10000
#define QUIET_MS            300
#define RATE_WINDOW_MS      10
#define FORWARD_MS          5
#define MS                  (1000 * 1000)

#define R_MIN       VIRTIO_FREQHINT_R_MIN_VALID
#define R_MAX       VIRTIO_FREQHINT_R_MAX_VALID
#define R_PERF      VIRTIO_FREQHINT_R_PERF_VALID
#define R_IDLE      VIRTIO_FREQHINT_R_IDLE

/* The fake agent: one listening socket per QEMU instance. */
typedef struct FakeAgent {
    char *dir;
    char *path;
    int listen_fd;
    int fd;
    /* What WELCOME answers */
    uint32_t accept_features;   /* ANDed with the offered ones */
    uint32_t keepalive_ms;
    /* What the last HELLO said */
    uint32_t features;
    char name[FH_NAME_MAX];
    uint32_t tids[MAX_VCPUS];
} FakeAgent;

#define FAKE_AGENT_INIT { .listen_fd = -1, .fd = -1,                     \
                          .accept_features = FH_F_ALL,                  \
                          .keepalive_ms = FH_KEEPALIVE_MAX_MS }

/* Two for migration; "agent" is the one the helpers talk to. */
static FakeAgent agents[2] = { FAKE_AGENT_INIT, FAKE_AGENT_INIT };
static FakeAgent *agent = &agents[0];
/* The device's num_vcpus: the machine's maximum vCPU count. */
static unsigned int num_vcpus = NUM_VCPUS;

typedef enum {
    EXPECT_BROKEN,      /* virtio_error(): NEEDS_RESET, buffer not used */
    EXPECT_REJECTED,    /* buffer used, records refused */
} Expect;

/* One hostile input. */
typedef struct HostileCase {
    const char *name;
    const char *extra_args;
    /* Buffer: a header and records, or raw bytes when raw_len is set. */
    uint16_t msg_type;
    uint16_t num_records;
    uint8_t hdr_reserved;
    unsigned int records;
    struct virtio_freqhint_record rec[3];
    size_t raw_len;
    bool writable;          /* the whole buffer device-writable */
    bool writable_tail;     /* a second, device-writable descriptor */
    Expect expect;
    unsigned int rejected;
} HostileCase;

/* A record in wire order; usable in static initializers. */
#define REC(v, f, mn, mx, pf, sq) ((struct virtio_freqhint_record) { \
    .vcpu = const_le16(v), .flags = const_le16(f),                      \
    .clamp_min = const_le16(mn), .clamp_max = const_le16(mx),           \
    .perf = const_le16(pf), .seq = const_le32(sq) })

static void agent_reset(FakeAgent *a)
{
    if (a->fd >= 0) {
        close(a->fd);
    }
    if (a->listen_fd >= 0) {
        close(a->listen_fd);
    }
    if (a->path) {
        unlink(a->path);
    }
    if (a->dir) {
        rmdir(a->dir);
    }
    g_free(a->path);
    g_free(a->dir);
    *a = (FakeAgent) FAKE_AGENT_INIT;
}

static void agent_cleanup(void *unused)
{
    agent_reset(&agents[0]);
    agent_reset(&agents[1]);
    agent = &agents[0];
    num_vcpus = NUM_VCPUS;
}

static void agent_listen(FakeAgent *a)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };

    agent_reset(a);
    a->dir = g_dir_make_tmp("qtest-freqhint-XXXXXX", NULL);
    g_assert_nonnull(a->dir);
    a->path = g_strdup_printf("%s/agent.sock", a->dir);
    g_assert_cmpuint(strlen(a->path), <, sizeof(sun.sun_path));
    strcpy(sun.sun_path, a->path);
    a->listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
    g_assert_cmpint(a->listen_fd, >=, 0);
    g_assert_cmpint(bind(a->listen_fd, (struct sockaddr *)&sun,
                         sizeof(sun)), ==, 0);
    g_assert_cmpint(listen(a->listen_fd, 4), ==, 0);
}

/* QEMU options connecting the device to agent @a. */
static void agent_append_args(GString *cmd_line, FakeAgent *a,
                              const char *extra)
{
    g_string_append_printf(cmd_line,
                           " -smp %d -chardev socket,id=fhchr,path=%s,"
                           "reconnect-ms=100"
                           " -global virtio-freqhint-device.chardev=fhchr %s",
                           NUM_VCPUS, a->path, extra ? extra : "");
}

static void *agent_before(GString *cmd_line, void *arg)
{
    const HostileCase *c = arg;

    agent_cleanup(NULL);
    agent_listen(agent);
    agent_append_args(cmd_line, agent, c ? c->extra_args : NULL);
    return arg;
}

/* For tests whose argument is a string of extra QEMU options. */
static void *agent_before_args(GString *cmd_line, void *arg)
{
    agent_cleanup(NULL);
    agent_listen(agent);
    agent_append_args(cmd_line, agent, arg);
    return arg;
}

static bool wait_readable(int fd, int timeout_ms)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    int ret;

    do {
        ret = poll(&pfd, 1, timeout_ms);
    } while (ret < 0 && errno == EINTR);
    g_assert_cmpint(ret, >=, 0);
    return ret > 0;
}

static void read_exact(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;

    while (len) {
        ssize_t n;

        g_assert_true(wait_readable(fd, TIMEOUT_MS));
        n = read(fd, p, len);
        g_assert_cmpint(n, >, 0);
        p += n;
        len -= n;
    }
}

/* Read one frame; returns its payload (g_free it), its type and length. */
static uint8_t *agent_recv(uint16_t *type, uint32_t *len)
{
    struct fh_frame_hdr hdr;
    uint8_t *payload;

    read_exact(agent->fd, &hdr, sizeof(hdr));
    *len = le32_to_cpu(hdr.len);
    *type = le16_to_cpu(hdr.msg_type);
    g_assert_cmpuint(le16_to_cpu(hdr.reserved), ==, 0);
    g_assert_cmpuint(*len, <=, FH_MAX_PAYLOAD);
    payload = g_malloc0(*len + 1);
    read_exact(agent->fd, payload, *len);
    return payload;
}

static void agent_send(uint16_t type, const void *payload, uint32_t len)
{
    struct fh_frame_hdr hdr = {
        .len = cpu_to_le32(len),
        .msg_type = cpu_to_le16(type),
    };
    g_autofree uint8_t *buf = g_malloc(sizeof(hdr) + len);

    memcpy(buf, &hdr, sizeof(hdr));
    memcpy(buf + sizeof(hdr), payload, len);
    g_assert_cmpint(write(agent->fd, buf, sizeof(hdr) + len), ==,
                    sizeof(hdr) + len);
}

static void agent_assert_quiet(QTestState *qts)
{
    /* Let forwarding timers run; nothing may come out. */
    qtest_clock_step(qts, 50 * MS);
    g_assert_false(wait_readable(agent->fd, QUIET_MS));
}

/* Expect a HINTS frame; returns the records (g_free) and their count. */
static struct virtio_freqhint_record *agent_recv_hints(unsigned int *num,
                                                       uint16_t *flags)
{
    uint16_t type;
    uint32_t len;
    g_autofree uint8_t *p = agent_recv(&type, &len);
    struct fh_msg_hints h;

    g_assert_cmpuint(type, ==, FH_MSG_HINTS);
    g_assert_cmpuint(len, >=, sizeof(h));
    memcpy(&h, p, sizeof(h));
    *num = le16_to_cpu(h.num_records);
    *flags = le16_to_cpu(h.flags);
    g_assert_cmpuint(*num, >=, 1);
    g_assert_cmpuint(*num, <=, num_vcpus);
    g_assert_cmpuint(len, ==, sizeof(h) + *num * 16);
    g_assert_cmpuint(le32_to_cpu(h.reserved), ==, 0);
    return g_memdup2(p + sizeof(h), *num * 16);
}

static void assert_record(const struct virtio_freqhint_record *got,
                          const struct virtio_freqhint_record *want)
{
    g_assert_cmpuint(le16_to_cpu(got->vcpu), ==, le16_to_cpu(want->vcpu));
    g_assert_cmpuint(le16_to_cpu(got->flags), ==, le16_to_cpu(want->flags));
    g_assert_cmpmem(got, sizeof(*got), want, sizeof(*want));
}

/* Accept the device's connection. */
static void agent_accept(void)
{
    g_assert_cmpint(agent->fd, <, 0);
    g_assert_true(wait_readable(agent->listen_fd, TIMEOUT_MS));
    agent->fd = accept(agent->listen_fd, NULL, NULL);
    g_assert_cmpint(agent->fd, >=, 0);
}

/* Accept the device's connection if need be, check HELLO, answer WELCOME. */
static void agent_welcome(QTestState *qts, bool expect_perf)
{
    uint16_t type;
    uint32_t len;
    g_autofree uint8_t *p = NULL;
    struct fh_msg_hello hello;
    struct fh_msg_welcome welcome = {
        .version = cpu_to_le16(FH_PROTO_VERSION),
        .keepalive_ms = cpu_to_le32(agent->keepalive_ms),
    };

    if (agent->fd < 0) {
        agent_accept();
    }
    p = agent_recv(&type, &len);
    g_assert_cmpuint(type, ==, FH_MSG_HELLO);
    g_assert_cmpuint(len, ==, sizeof(hello) + 4 * num_vcpus);
    memcpy(&hello, p, sizeof(hello));
    g_assert_cmpuint(le16_to_cpu(hello.version), ==, FH_PROTO_VERSION);
    g_assert_cmpuint(le16_to_cpu(hello.num_vcpus), ==, num_vcpus);
    g_assert_cmpuint(le32_to_cpu(hello.reserved), ==, 0);
    g_assert_cmpuint(le32_to_cpu(hello.qemu_pid), ==, qtest_pid(qts));
    g_assert_nonnull(memchr(hello.name, 0, sizeof(hello.name)));
    memcpy(agent->name, hello.name, sizeof(agent->name));
    agent->features = le32_to_cpu(hello.features);
    g_assert_cmphex(agent->features & ~FH_F_ALL, ==, 0);
    g_assert_cmpint(!!(agent->features & FH_F_PERF), ==, expect_perf);
    for (int i = 0; i < num_vcpus; i++) {
        agent->tids[i] = ldl_le_p(p + sizeof(hello) + 4 * i);
        /* The boot vCPUs have threads; hot-pluggable ones may not yet. */
        if (i < NUM_VCPUS) {
            g_assert_cmpuint(agent->tids[i], !=, 0);
        }
    }

    welcome.features = cpu_to_le32(agent->features & agent->accept_features);
    agent_send(FH_MSG_WELCOME, &welcome, sizeof(welcome));
}

/* Handshake with a fresh device: the whole (empty) state follows at once. */
static void agent_handshake(QTestState *qts, bool expect_perf)
{
    g_autofree struct virtio_freqhint_record *full = NULL;
    unsigned int num;
    uint16_t flags;

    agent_welcome(qts, expect_perf);
    full = agent_recv_hints(&num, &flags);
    g_assert_cmpuint(flags, ==, FH_HINTS_F_FULL);
    g_assert_cmpuint(num, ==, num_vcpus);
    for (int i = 0; i < num_vcpus; i++) {
        struct virtio_freqhint_record none = REC(i, 0, 0, 0, 0, 0);

        assert_record(&full[i], &none);
    }
}

/* Expect a FULL frame in which no vCPU has a hint. */
static void agent_expect_no_hints(void)
{
    g_autofree struct virtio_freqhint_record *got = NULL;
    unsigned int num;
    uint16_t flags;

    got = agent_recv_hints(&num, &flags);
    g_assert_cmpuint(flags, ==, FH_HINTS_F_FULL);
    g_assert_cmpuint(num, ==, num_vcpus);
    for (int i = 0; i < num_vcpus; i++) {
        struct virtio_freqhint_record none = REC(i, 0, 0, 0, 0, 0);

        assert_record(&got[i], &none);
    }
}

/* Expect a FULL frame carrying @want for vCPUs 0 and 1. */
static void agent_expect_full(const struct virtio_freqhint_record *want)
{
    g_autofree struct virtio_freqhint_record *got = NULL;
    unsigned int num;
    uint16_t flags;

    got = agent_recv_hints(&num, &flags);
    g_assert_cmpuint(flags, ==, FH_HINTS_F_FULL);
    g_assert_cmpuint(num, ==, num_vcpus);
    assert_record(&got[0], &want[0]);
    assert_record(&got[1], &want[1]);
}

static QDict *get_stats(QTestState *qts)
{
    QDict *rsp = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments': "
                           "{'path': '/machine/peripheral/" QVIRTIO_FREQHINT_ID
                           "', 'property': 'stats'}}");
    QDict *ret;

    g_assert_true(qdict_haskey(rsp, "return"));
    ret = qdict_get_qdict(rsp, "return");
    qobject_ref(ret);
    qobject_unref(rsp);
    return ret;
}

static int64_t get_stat(QTestState *qts, const char *name)
{
    QDict *stats = get_stats(qts);
    int64_t v = qdict_get_int(stats, name);

    qobject_unref(stats);
    return v;
}

static bool get_stat_bool(QTestState *qts, const char *name)
{
    QDict *stats = get_stats(qts);
    bool v = qdict_get_bool(stats, name);

    qobject_unref(stats);
    return v;
}

static void assert_running(QTestState *qts)
{
    QDict *rsp = qtest_qmp(qts, "{'execute': 'query-status'}");

    g_assert_true(qdict_haskey(rsp, "return"));
    g_assert_true(qdict_get_bool(qdict_get_qdict(rsp, "return"), "running"));
    qobject_unref(rsp);
}

/* Put one driver -> device buffer on the hint queue and notify. */
static uint32_t submit(QTestState *qts, QVirtioFreqHint *fh,
                       const void *buf, size_t len)
{
    uint64_t addr = guest_alloc(fh->alloc, len);
    uint32_t head;

    qtest_memwrite(qts, addr, buf, len);
    head = qvirtqueue_add(qts, fh->hintq, addr, len, false, false);
    qvirtqueue_kick(qts, fh->vdev, fh->hintq, head);
    return head;
}

static size_t build_batch(uint8_t *buf, uint16_t num,
                          const struct virtio_freqhint_record *recs,
                          unsigned int nrecs)
{
    struct virtio_freqhint_hints hdr = {
        .msg_type = cpu_to_le16(VIRTIO_FREQHINT_MSG_HINTS),
        .num_records = cpu_to_le16(num),
    };

    memcpy(buf, &hdr, sizeof(hdr));
    memcpy(buf + sizeof(hdr), recs, nrecs * sizeof(*recs));
    return sizeof(hdr) + nrecs * sizeof(*recs);
}

/* Wait until the device used @head; time passes, so windows expire. */
static void wait_used(QTestState *qts, QVirtioFreqHint *fh, uint32_t head)
{
    gint64 start = g_get_monotonic_time();
    uint32_t got;

    for (;;) {
        if (qvirtqueue_get_buf(qts, fh->hintq, &got, NULL)) {
            g_assert_cmpuint(got, ==, head);
            return;
        }
        g_assert_cmpint(g_get_monotonic_time() - start, <=,
                        TIMEOUT_MS * 1000);
        qtest_clock_step(qts, MS);
    }
}

static void test_config(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QVirtioDevice *vdev = fh->vdev;

    g_assert_cmpuint(vdev->device_type, ==, VIRTIO_ID_FREQHINT);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 0), ==, NUM_VCPUS);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 2), ==, NUM_VCPUS);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 4), ==, RATE_WINDOW_MS);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 8), ==, 0);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 10), ==, 1024);
    for (int i = 0; i < NUM_VCPUS; i++) {
        g_assert_cmpuint(qvirtio_config_readw(vdev, 16 + 4 * i), ==, 0);
        g_assert_cmpuint(qvirtio_config_readw(vdev, 18 + 4 * i), ==, 1024);
    }
    g_assert_true(qvirtio_get_features(vdev) &
                  (1ull << VIRTIO_FREQHINT_F_GRANTS));
}

static void test_batch(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QVirtioDevice *vdev = fh->vdev;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record r[2] = {
        REC(0, R_MIN | R_MAX, 300, 600, 0, 1),
        REC(1, R_PERF | R_IDLE, 0, 0, 512, 7),
    };
    struct virtio_freqhint_record dup[2] = {
        REC(0, R_MIN, 100, 0, 0, 2),
        REC(0, R_MIN, 200, 0, 0, 3),
    };
    uint8_t buf[64];
    g_autofree struct virtio_freqhint_record *got = NULL;
    unsigned int num;
    uint16_t flags;
    size_t len;
    QDict *stats;
    QList *vcpus;
    QDict *v0;
    struct {
        struct fh_msg_grants g;
        struct virtio_freqhint_grant grants[NUM_VCPUS];
    } grants = {
        .g = {
            .operator_floor = cpu_to_le16(100),
            .operator_ceiling = cpu_to_le16(900),
            .num_grants = cpu_to_le16(NUM_VCPUS),
        },
        .grants = {
            { cpu_to_le16(200), cpu_to_le16(800) },
            { cpu_to_le16(0), cpu_to_le16(1024) },
        },
    };

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);
    g_assert_cmphex(qvirtio_config_readw(vdev, 6), ==,
                    VIRTIO_FREQHINT_S_AGENT);

    /* A batch goes out as it came in. */
    len = build_batch(buf, 2, r, 2);
    wait_used(qts, fh, submit(qts, fh, buf, len));
    qtest_clock_step(qts, FORWARD_MS * MS);
    got = agent_recv_hints(&num, &flags);
    g_assert_cmpuint(num, ==, 2);
    g_assert_cmpuint(flags, ==, 0);
    assert_record(&got[0], &r[0]);
    assert_record(&got[1], &r[1]);
    g_clear_pointer(&got, g_free);

    /* Hints are state: the later record for a vCPU wins. */
    len = build_batch(buf, 2, dup, 2);
    wait_used(qts, fh, submit(qts, fh, buf, len));
    qtest_clock_step(qts, FORWARD_MS * MS);
    got = agent_recv_hints(&num, &flags);
    g_assert_cmpuint(num, ==, 1);
    assert_record(&got[0], &dup[1]);
    g_clear_pointer(&got, g_free);
    g_assert_cmpint(get_stat(qts, "coalesced"), ==, 1);
    g_assert_cmpint(get_stat(qts, "forwarded"), ==, NUM_VCPUS + 2 + 1);
    g_assert_cmpint(get_stat(qts, "rejected"), ==, 0);

    /* Grants reach the guest with a configuration change. */
    agent_send(FH_MSG_GRANTS, &grants, sizeof(grants));
    qvirtio_wait_config_isr(vdev, TIMEOUT_MS * 1000);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 8), ==, 100);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 10), ==, 900);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 16), ==, 200);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 18), ==, 800);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 20), ==, 0);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 22), ==, 1024);

    /* Telemetry: last guest values and grants per vCPU. */
    stats = get_stats(qts);
    g_assert_true(qdict_get_bool(stats, "agent-connected"));
    g_assert_cmpint(qdict_get_int(stats, "agent-connects"), ==, 1);
    vcpus = qdict_get_qlist(stats, "vcpus");
    g_assert_cmpuint(qlist_size(vcpus), ==, NUM_VCPUS);
    v0 = qobject_to(QDict, qlist_peek(vcpus));
    g_assert_cmpint(qdict_get_int(v0, "clamp-min"), ==, 200);
    g_assert_cmpint(qdict_get_int(v0, "seq"), ==, 3);
    g_assert_cmpint(qdict_get_int(v0, "granted-floor"), ==, 200);
    g_assert_cmpint(qdict_get_int(v0, "granted-ceiling"), ==, 800);
    qobject_unref(stats);

    /*
     * The agent goes away: the grants fall back to the defaults; the
     * chardev reconnects and the new agent gets the whole state.
     */
    close(agent->fd);
    agent->fd = -1;
    qvirtio_wait_config_isr(vdev, TIMEOUT_MS * 1000);
    g_assert_cmphex(qvirtio_config_readw(vdev, 6), ==, 0);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 10), ==, 1024);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 16), ==, 0);
    {
        uint16_t type;
        uint32_t hlen;
        g_autofree uint8_t *hello = NULL;
        struct fh_msg_welcome welcome = {
            .version = cpu_to_le16(FH_PROTO_VERSION),
            .features = cpu_to_le32(FH_F_ALL),
            .keepalive_ms = cpu_to_le32(FH_KEEPALIVE_MAX_MS),
        };
        struct virtio_freqhint_record want0 = REC(0, R_MIN, 200, 0, 0, 3);

        g_assert_true(wait_readable(agent->listen_fd, TIMEOUT_MS));
        agent->fd = accept(agent->listen_fd, NULL, NULL);
        g_assert_cmpint(agent->fd, >=, 0);
        hello = agent_recv(&type, &hlen);
        g_assert_cmpuint(type, ==, FH_MSG_HELLO);
        agent_send(FH_MSG_WELCOME, &welcome, sizeof(welcome));
        got = agent_recv_hints(&num, &flags);
        g_assert_cmpuint(flags, ==, FH_HINTS_F_FULL);
        g_assert_cmpuint(num, ==, NUM_VCPUS);
        assert_record(&got[0], &want0);
        assert_record(&got[1], &r[1]);
    }
    g_assert_cmpint(get_stat(qts, "agent-connects"), ==, 2);
}

/* A device reset withdraws the VM's influence at once. */
static void test_reset(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record r = REC(1, R_MIN, 900, 0, 0, 1);
    uint8_t buf[64];
    g_autofree struct virtio_freqhint_record *got = NULL;
    unsigned int num;
    uint16_t flags;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);
    wait_used(qts, fh, submit(qts, fh, buf, build_batch(buf, 1, &r, 1)));
    qtest_clock_step(qts, FORWARD_MS * MS);
    got = agent_recv_hints(&num, &flags);
    assert_record(&got[0], &r);
    g_clear_pointer(&got, g_free);

    qvirtio_reset(fh->vdev);
    got = agent_recv_hints(&num, &flags);
    g_assert_cmpuint(flags, ==, FH_HINTS_F_FULL);
    g_assert_cmpuint(num, ==, NUM_VCPUS);
    for (int i = 0; i < NUM_VCPUS; i++) {
        struct virtio_freqhint_record none = REC(i, 0, 0, 0, 0, 0);

        assert_record(&got[i], &none);
    }
    assert_running(qts);
}

static void agent_expect_close(uint16_t reason)
{
    uint16_t type;
    uint32_t len;
    g_autofree uint8_t *p = agent_recv(&type, &len);
    char buf[16];

    g_assert_cmpuint(type, ==, FH_MSG_CLOSE);
    g_assert_cmpuint(len, ==, sizeof(struct fh_msg_close));
    g_assert_cmpuint(lduw_le_p(p), ==, reason);
    g_assert_nonnull(memchr(p + 8, 0, FH_TEXT_MAX));
    /* Then the device hangs up. */
    g_assert_true(wait_readable(agent->fd, TIMEOUT_MS));
    g_assert_cmpint(read(agent->fd, buf, sizeof(buf)), ==, 0);
    close(agent->fd);
    agent->fd = -1;
}

/* PING the device; the PONG proves everything sent before was handled. */
static void agent_ping(uint64_t cookie)
{
    struct fh_msg_ping ping = { .cookie = cpu_to_le64(cookie) };
    g_autofree uint8_t *p = NULL;
    uint16_t type;
    uint32_t len;

    agent_send(FH_MSG_PING, &ping, sizeof(ping));
    p = agent_recv(&type, &len);
    g_assert_cmpuint(type, ==, FH_MSG_PONG);
    g_assert_cmpmem(p, len, &ping, sizeof(ping));
}

/* The agent is not trusted either: protocol errors close the link only. */
static void test_agent_protocol(void *obj, void *data,
                                QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QVirtioDevice *vdev = fh->vdev;
    QTestState *qts = global_qtest;
    struct fh_msg_ping pong = { .cookie = cpu_to_le64(0x1234) };
    struct {
        struct fh_msg_grants g;
        struct virtio_freqhint_grant grants[NUM_VCPUS];
    } bad = {
        .g = {
            .operator_floor = cpu_to_le16(600),
            .operator_ceiling = cpu_to_le16(500),    /* floor > ceiling */
            .num_grants = cpu_to_le16(NUM_VCPUS),
        },
    };
    uint8_t junk[8] = { 0 };

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);

    agent_ping(0x1122334455667788);
    /* An unsolicited PONG is ignored (PB-6): the link stays up. */
    agent_send(FH_MSG_PONG, &pong, sizeof(pong));
    agent_ping(0x99);

    agent_send(FH_MSG_GRANTS, &bad, sizeof(bad));
    agent_expect_close(FH_CLOSE_MALFORMED);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 8), ==, 0);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 10), ==, 1024);

    /* reconnect-ms brings the device back with a new HELLO. */
    agent_handshake(qts, true);
    agent_send(0x7f, junk, sizeof(junk));
    agent_expect_close(FH_CLOSE_UNKNOWN_TYPE);

    agent_handshake(qts, true);
    agent_send(FH_MSG_HELLO, junk, sizeof(junk));
    agent_expect_close(FH_CLOSE_PROTOCOL);

    /* WELCOME's keepalive_ms must be in range. */
    agent->keepalive_ms = FH_KEEPALIVE_MIN_MS - 1;
    agent_welcome(qts, true);
    agent_expect_close(FH_CLOSE_MALFORMED);
    agent->keepalive_ms = FH_KEEPALIVE_MAX_MS + 1;
    agent_welcome(qts, true);
    agent_expect_close(FH_CLOSE_MALFORMED);
    g_assert_false(get_stat_bool(qts, "agent-connected"));

    g_assert_cmpint(get_stat(qts, "agent-connects"), ==, 3);
    assert_running(qts);
}

/*
 * Migration carries the guest's hints and the configuration; the
 * destination's agent gets the whole state once the VM runs there.
 */
static void test_migrate(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *src = global_qtest, *dst;
    struct virtio_freqhint_record r[2] = {
        REC(0, R_MIN | R_MAX, 300, 600, 0, 1),
        REC(1, R_PERF | R_IDLE, 0, 0, 512, 7),
    };
    struct {
        struct fh_msg_grants g;
        struct virtio_freqhint_grant grants[NUM_VCPUS];
    } grants = {
        .g = {
            .operator_floor = cpu_to_le16(100),
            .operator_ceiling = cpu_to_le16(900),
            .num_grants = cpu_to_le16(NUM_VCPUS),
        },
        .grants = {
            { cpu_to_le16(200), cpu_to_le16(800) },
            { cpu_to_le16(0), cpu_to_le16(1024) },
        },
    };
    g_autofree char *uri = NULL;
    g_autoptr(GString) dst_cmd = NULL;
    gint64 start;
    uint8_t buf[64];
    unsigned int num;
    uint16_t flags;
    QDict *stats;

    g_test_queue_destroy(agent_cleanup, NULL);
    qos_invalidate_command_line();
    agent_handshake(src, true);
    wait_used(src, fh, submit(src, fh, buf, build_batch(buf, 2, r, 2)));
    qtest_clock_step(src, FORWARD_MS * MS);
    g_free(agent_recv_hints(&num, &flags));
    agent_send(FH_MSG_GRANTS, &grants, sizeof(grants));
    qvirtio_wait_config_isr(fh->vdev, TIMEOUT_MS * 1000);

    /* The destination, with an agent of its own. */
    agent_listen(&agents[1]);
    uri = g_strdup_printf("unix:%s/migration.sock", agents[1].dir);
    dst_cmd = g_string_new(qos_get_current_command_line());
    agent_append_args(dst_cmd, &agents[1], NULL);
    dst = qtest_initf("%s -incoming %s", dst_cmd->str, uri);
    agent = &agents[1];
    /* Connected, but no HELLO while the VM waits for its state (PD-1). */
    agent_accept();
    agent_assert_quiet(dst);

    qtest_qmp_assert_success(src, "{'execute': 'migrate',"
                             " 'arguments': {'uri': %s}}", uri);
    start = g_get_monotonic_time();
    for (;;) {
        QDict *rsp = qtest_qmp(src, "{'execute': 'query-migrate'}");
        const char *status = qdict_get_try_str(qdict_get_qdict(rsp, "return"),
                                               "status");
        bool done = !g_strcmp0(status, "completed");

        g_assert_cmpstr(status, !=, "failed");
        qobject_unref(rsp);
        if (done) {
            break;
        }
        g_assert_cmpint(g_get_monotonic_time() - start, <=,
                        TIMEOUT_MS * 1000);
        g_usleep(10 * 1000);
    }
    /* The source stopped: its hints no longer count (PD-9). */
    agent = &agents[0];
    agent_expect_no_hints();

    /* The destination runs: HELLO, then the migrated state (PD-15). */
    qtest_qmp_eventwait(dst, "RESUME");
    agent = &agents[1];
    agent_welcome(dst, true);
    agent_expect_full(r);

    stats = get_stats(dst);
    g_assert_cmpint(qdict_get_int(stats, "operator-floor"), ==, 100);
    g_assert_cmpint(qdict_get_int(stats, "operator-ceiling"), ==, 900);
    qobject_unref(stats);
    qtest_quit(dst);
}

/*
 * The hint queue costs at most one notification per rate window for a
 * driver that honours VRING_USED_F_NO_NOTIFY; a driver that notifies
 * anyway (@data != NULL) gets no more work done by the device.
 */
static void test_rate_bound(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    bool forced = data != NULL;
    const int kicks = 60;   /* below the queue size: no descriptor reuse */
    uint8_t buf[64];
    int used = 0;
    int64_t notifications, wakeups;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);

    for (int i = 0; i < kicks; i++) {
        struct virtio_freqhint_record r = REC(i % NUM_VCPUS, R_MAX, 0,
                                              i % 1024, 0, i);

        submit(qts, fh, buf, build_batch(buf, 1, &r, 1));
        if (forced) {
            fh->vdev->bus->virtqueue_kick(fh->vdev, fh->hintq);
        }
        /* Drive the device as fast as the guest could: every 1 ms. */
        qtest_clock_step(qts, MS);
        while (qvirtqueue_get_buf(qts, fh->hintq, NULL, NULL)) {
            used++;
        }
    }
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    while (qvirtqueue_get_buf(qts, fh->hintq, NULL, NULL)) {
        used++;
    }
    g_assert_cmpint(used, ==, kicks);
    g_assert_cmpint(get_stat(qts, "buffers"), ==, kicks);

    notifications = get_stat(qts, "notifications");
    wakeups = get_stat(qts, "wakeups");
    g_test_message("%d buffers in %d ms: %" PRId64 " notifications, %"
                   PRId64 " wakeups", kicks, kicks, notifications, wakeups);
    g_assert_cmpint(notifications, >=, 1);
    if (forced) {
        g_assert_cmpint(notifications, >=, kicks);
    } else {
        g_assert_cmpint(notifications, <=, kicks / RATE_WINDOW_MS + 2);
    }
    /* One run per kick window plus the timer run that closes it. */
    g_assert_cmpint(wakeups, <=, 2 * (kicks / RATE_WINDOW_MS + 2));
    /* Forwarding is bounded too, and nothing was lost. */
    g_assert_cmpint(get_stat(qts, "forwarded") - NUM_VCPUS, <=,
                    NUM_VCPUS * (kicks / FORWARD_MS + 2));
    g_assert_cmpint(get_stat(qts, "dropped"), ==, 0);
}

static void test_hostile(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QVirtioDevice *vdev = fh->vdev;
    QTestState *qts = global_qtest;
    const HostileCase *c = data;
    uint8_t buf[128] = { 0 };
    size_t len;
    uint64_t addr, tail = 0;
    uint32_t head;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, !c->extra_args);

    if (c->raw_len) {
        build_batch(buf, 1, c->rec, 1);
        len = c->raw_len;
    } else {
        len = build_batch(buf, c->num_records, c->rec, c->records);
    }
    stw_le_p(buf, c->msg_type ? c->msg_type : VIRTIO_FREQHINT_MSG_HINTS);
    buf[4] = c->hdr_reserved;

    addr = guest_alloc(fh->alloc, len);
    qtest_memwrite(qts, addr, buf, len);
    head = qvirtqueue_add(qts, fh->hintq, addr, len, c->writable,
                          c->writable_tail);
    if (c->writable_tail) {
        tail = guest_alloc(fh->alloc, 16);
        qvirtqueue_add(qts, fh->hintq, tail, 16, true, false);
    }
    qvirtqueue_kick(qts, vdev, fh->hintq, head);

    if (c->expect == EXPECT_BROKEN) {
        gint64 start = g_get_monotonic_time();

        while (!(vdev->bus->get_status(vdev) &
                 VIRTIO_CONFIG_S_NEEDS_RESET)) {
            g_assert_cmpint(g_get_monotonic_time() - start, <=,
                            TIMEOUT_MS * 1000);
            qtest_clock_step(qts, MS);
        }
        g_assert_false(qvirtqueue_get_buf(qts, fh->hintq, NULL, NULL));
        g_assert_cmpint(get_stat(qts, "buffers"), ==, 0);
        g_assert_true(get_stat_bool(qts, "broken"));
        /* DEV-10: the broken device's hints stop counting at once. */
        agent_expect_no_hints();
    } else {
        wait_used(qts, fh, head);
        g_assert_false(vdev->bus->get_status(vdev) &
                       VIRTIO_CONFIG_S_NEEDS_RESET);
        g_assert_cmpint(get_stat(qts, "rejected"), ==, c->rejected);
        g_assert_false(get_stat_bool(qts, "broken"));
    }
    g_assert_cmpint(get_stat(qts, "records"), ==, 0);
    agent_assert_quiet(qts);
    assert_running(qts);
}

/* One bad record among good ones: only the bad one is refused. */
static void test_mixed(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record r[2] = {
        REC(0, R_MIN | R_MAX, 700, 300, 0, 1),     /* min > max */
        REC(1, R_MAX, 0, 512, 0, 2),
    };
    uint8_t buf[64];
    g_autofree struct virtio_freqhint_record *got = NULL;
    unsigned int num;
    uint16_t flags;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);
    wait_used(qts, fh, submit(qts, fh, buf, build_batch(buf, 2, r, 2)));
    qtest_clock_step(qts, FORWARD_MS * MS);
    got = agent_recv_hints(&num, &flags);
    g_assert_cmpuint(num, ==, 1);
    assert_record(&got[0], &r[1]);
    g_assert_cmpint(get_stat(qts, "rejected"), ==, 1);
    g_assert_cmpint(get_stat(qts, "records"), ==, 1);
}

/*
 * PD-1, PD-9: HELLO waits until the VM runs (-S here); a VM that stops
 * withdraws its hints and restores them when it runs again.
 */
static void test_vm_state(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record r[2] = {
        REC(0, R_MIN | R_MAX, 300, 600, 0, 1),
        REC(1, R_MAX, 0, 200, 0, 2),
    };
    uint8_t buf[64];
    unsigned int num;
    uint16_t flags;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_accept();
    agent_assert_quiet(qts);

    qtest_qmp_assert_success(qts, "{'execute': 'cont'}");
    agent_handshake(qts, true);
    wait_used(qts, fh, submit(qts, fh, buf, build_batch(buf, 2, r, 2)));
    qtest_clock_step(qts, FORWARD_MS * MS);
    g_free(agent_recv_hints(&num, &flags));
    g_assert_cmpuint(num, ==, 2);

    qtest_qmp_assert_success(qts, "{'execute': 'stop'}");
    agent_expect_no_hints();
    agent_assert_quiet(qts);
    /* The device keeps the guest's state meanwhile. */
    g_assert_cmpint(get_stat(qts, "records"), ==, 2);

    qtest_qmp_assert_success(qts, "{'execute': 'cont'}");
    agent_expect_full(r);
    agent_assert_quiet(qts);
    g_assert_cmpint(get_stat(qts, "agent-connects"), ==, 1);
}

/* PD-2: the name is cut to 63 bytes between two UTF-8 characters. */
#define A10 "aaaaaaaaaa"
#define A62 A10 A10 A10 A10 A10 A10 "aa"
static const char name_args[] = "-name '" A62 "\xc3\xa9" "b'";

static void test_name(void *obj, void *data, QGuestAllocator *t_alloc)
{
    char want[FH_NAME_MAX] = A62;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(global_qtest, true);
    /* Byte 63 would have been the first half of U+00E9. */
    g_assert_cmpmem(agent->name, sizeof(agent->name), want, sizeof(want));
    g_assert_true(g_utf8_validate(agent->name, -1, NULL));
}

/* PD-3: a hot-plugged vCPU makes the device say HELLO again. */
static void test_hotplug(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QTestState *qts = global_qtest;
    QDict *rsp;

    g_test_queue_destroy(agent_cleanup, NULL);
    num_vcpus = MAX_VCPUS;
    agent_handshake(qts, true);
    g_assert_cmpuint(agent->tids[2], ==, 0);

    rsp = qtest_qmp(qts, "{'execute': 'device_add', 'arguments':"
                    " {'driver': 'qemu64-x86_64-cpu', 'id': 'cpu-2',"
                    " 'socket-id': 2, 'core-id': 0, 'thread-id': 0}}");
    g_assert_true(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);

    agent_expect_close(FH_CLOSE_NORMAL);
    agent_handshake(qts, true);
    g_assert_cmpuint(agent->tids[2], !=, 0);
    g_assert_cmpuint(agent->tids[2], !=, agent->tids[0]);
    g_assert_cmpuint(agent->tids[2], !=, agent->tids[1]);
    g_assert_cmpint(get_stat(qts, "agent-connects"), ==, 2);
}

/* 4.7: FH_F_GRANTS is offered only with the 'grants' property. */
static void test_grants_off(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(global_qtest, true);
    g_assert_cmphex(agent->features, ==, FH_F_PERF);
    g_assert_false(qvirtio_get_features(fh->vdev) &
                   (1ull << VIRTIO_FREQHINT_F_GRANTS));
}

typedef struct {
    struct fh_msg_grants g;
    struct virtio_freqhint_grant grants[NUM_VCPUS];
} GrantsFrame;

static void grants_frame(GrantsFrame *f, uint16_t op_floor,
                         uint16_t op_ceiling, uint16_t floor0,
                         uint16_t ceiling0)
{
    *f = (GrantsFrame) {
        .g = {
            .operator_floor = cpu_to_le16(op_floor),
            .operator_ceiling = cpu_to_le16(op_ceiling),
            .num_grants = cpu_to_le16(NUM_VCPUS),
        },
        .grants = {
            { cpu_to_le16(floor0), cpu_to_le16(ceiling0) },
            { cpu_to_le16(0), cpu_to_le16(1024) },
        },
    };
}

/*
 * PA-14, PD-11: an agent that did not accept FH_F_GRANTS still sends
 * GRANTS; the device takes the operator bounds and leaves grants[] alone.
 */
static void test_grants_not_accepted(void *obj, void *data,
                                     QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QVirtioDevice *vdev = fh->vdev;
    GrantsFrame f;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent->accept_features = FH_F_PERF;
    agent_handshake(global_qtest, true);
    qvirtio_wait_config_isr(vdev, TIMEOUT_MS * 1000);     /* S_AGENT */

    grants_frame(&f, 100, 900, 200, 800);
    agent_send(FH_MSG_GRANTS, &f, sizeof(f));
    agent_ping(1);
    qvirtio_wait_config_isr(vdev, TIMEOUT_MS * 1000);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 8), ==, 100);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 10), ==, 900);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 16), ==, 0);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 18), ==, 1024);
    g_assert_true(get_stat_bool(global_qtest, "agent-connected"));
}

/* Read and clear the configuration change bit of the ISR (no MSI-X here). */
static bool config_isr(QVirtioDevice *vdev)
{
    QVirtioPCIDevice *dev = container_of(vdev, QVirtioPCIDevice, vdev);

    g_assert_false(dev->pdev->msix_enabled);
    return qpci_io_readb(dev->pdev, dev->bar, dev->isr_cfg_offset) & 2;
}

/*
 * DEV-22: a driver that did not negotiate VIRTIO_FREQHINT_F_GRANTS gets
 * no configuration change for grants[] alone.
 */
static void test_grants_not_negotiated(void *obj, void *data,
                                       QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QVirtioDevice *vdev = fh->vdev;
    uint64_t features;
    GrantsFrame f;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(global_qtest, true);

    /* Start over as a driver without the feature. */
    qvirtio_reset(vdev);
    agent_expect_no_hints();
    qvirtio_set_acknowledge(vdev);
    qvirtio_set_driver(vdev);
    features = qvirtio_get_features(vdev);
    g_assert_true(features & (1ull << VIRTIO_FREQHINT_F_GRANTS));
    features &= ~(QVIRTIO_F_BAD_FEATURE |
                  (1ull << VIRTIO_RING_F_INDIRECT_DESC) |
                  (1ull << VIRTIO_RING_F_EVENT_IDX) |
                  (1ull << VIRTIO_FREQHINT_F_GRANTS));
    qvirtio_set_features(vdev, features);
    qvirtio_set_driver_ok(vdev);
    g_assert_false(config_isr(vdev));

    grants_frame(&f, 0, 1024, 200, 800);
    agent_send(FH_MSG_GRANTS, &f, sizeof(f));
    agent_ping(1);
    g_assert_false(config_isr(vdev));

    /* The operator bounds are news to any driver. */
    grants_frame(&f, 100, 1024, 200, 800);
    agent_send(FH_MSG_GRANTS, &f, sizeof(f));
    agent_ping(2);
    g_assert_true(config_isr(vdev));
    g_assert_cmpuint(qvirtio_config_readw(vdev, 8), ==, 100);
}

/* Make a buffer available whose head descriptor is out of the ring. */
static void break_ring(QTestState *qts, QVirtioFreqHint *fh)
{
    uint64_t avail = fh->hintq->avail;
    uint16_t idx = qtest_readw(qts, avail + 2);

    qtest_writew(qts, avail + 4 + 2 * (idx % fh->hintq->size), 1000);
    qtest_writew(qts, avail + 2, idx + 1);
    fh->vdev->bus->virtqueue_kick(fh->vdev, fh->hintq);
}

/*
 * DEV-10: a driver that breaks the device, with a bad buffer or a bad
 * ring, loses the hints it gave, once.
 */
static void broken_withdraws(QVirtioFreqHint *fh, bool bad_ring)
{
    QVirtioDevice *vdev = fh->vdev;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record r = REC(1, R_MIN, 900, 0, 0, 1);
    uint8_t buf[64];
    unsigned int num;
    uint16_t flags;
    size_t len;
    gint64 start;
    QDict *stats;
    const QListEntry *e;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);
    wait_used(qts, fh, submit(qts, fh, buf, build_batch(buf, 1, &r, 1)));
    qtest_clock_step(qts, FORWARD_MS * MS);
    g_free(agent_recv_hints(&num, &flags));

    /* Past the rate window: a bad message type, or a bad ring. */
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    if (bad_ring) {
        break_ring(qts, fh);
    } else {
        len = build_batch(buf, 1, &r, 1);
        stw_le_p(buf, 2);
        submit(qts, fh, buf, len);
    }
    start = g_get_monotonic_time();
    while (!(vdev->bus->get_status(vdev) & VIRTIO_CONFIG_S_NEEDS_RESET)) {
        g_assert_cmpint(g_get_monotonic_time() - start, <=,
                        TIMEOUT_MS * 1000);
        qtest_clock_step(qts, MS);
    }
    agent_expect_no_hints();

    /* The device's own state is "no hint" too. */
    stats = get_stats(qts);
    QLIST_FOREACH_ENTRY(qdict_get_qlist(stats, "vcpus"), e) {
        QDict *v = qobject_to(QDict, qlist_entry_obj(e));

        g_assert_cmpint(qdict_get_int(v, "flags"), ==, 0);
    }
    qobject_unref(stats);

    /*
     * A broken device ignores the driver: kicks and status writes send
     * nothing more.
     */
    for (int i = 0; i < 3; i++) {
        vdev->bus->virtqueue_kick(vdev, fh->hintq);
        vdev->bus->set_status(vdev, vdev->bus->get_status(vdev));
        qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    }
    agent_assert_quiet(qts);
    assert_running(qts);
}

static void test_broken_withdraws(void *obj, void *data,
                                  QGuestAllocator *t_alloc)
{
    broken_withdraws(obj, false);
}

static void test_broken_ring_withdraws(void *obj, void *data,
                                       QGuestAllocator *t_alloc)
{
    broken_withdraws(obj, true);
}

/*
 * PD-10: a frame the socket cannot take without blocking is dropped whole
 * and counted, and the next frame carries the whole state.  The agent
 * stops reading and floods PINGs until the PONGs fill the socket.
 */
static void test_backpressure(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record last[NUM_VCPUS];
    struct fh_msg_ping ping = { .cookie = cpu_to_le64(7) };
    g_autofree struct virtio_freqhint_record *got = NULL;
    uint8_t buf[64];
    unsigned int round, pongs = 0;
    uint16_t flags = 0;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);

    for (round = 0; get_stat(qts, "dropped") == 0; round++) {
        struct virtio_freqhint_record r = REC(round % NUM_VCPUS, R_MAX, 0,
                                              100 + round, 0, round);

        /* Below the queue size: libqos does not reuse descriptors. */
        g_assert_cmpuint(round, <, 50);
        for (int i = 0; i < 200; i++) {
            agent_send(FH_MSG_PING, &ping, sizeof(ping));
        }
        last[round % NUM_VCPUS] = r;
        wait_used(qts, fh, submit(qts, fh, buf, build_batch(buf, 1, &r, 1)));
        qtest_clock_step(qts, FORWARD_MS * MS);
    }
    g_assert_cmpuint(round, >=, NUM_VCPUS);
    g_test_message("socket full after %u PINGs, %" PRId64 " records dropped",
                   round * 200, get_stat(qts, "dropped"));

    /*
     * Read again.  Frames sent before the socket filled come first; the
     * one of the last round was dropped, and a FULL frame replaces it.
     */
    for (;;) {
        uint16_t type;
        uint32_t len;
        g_autofree uint8_t *p = NULL;

        if (!wait_readable(agent->fd, 0)) {
            qtest_clock_step(qts, FORWARD_MS * MS);
            g_assert_true(wait_readable(agent->fd, TIMEOUT_MS));
        }
        p = agent_recv(&type, &len);
        if (type == FH_MSG_PONG) {
            pongs++;
            continue;
        }
        g_assert_cmpuint(type, ==, FH_MSG_HINTS);
        flags = lduw_le_p(p + 10);
        if (flags & FH_HINTS_F_FULL) {
            g_assert_cmpuint(len, ==, 16 + 16 * NUM_VCPUS);
            got = g_memdup2(p + 16, 16 * NUM_VCPUS);
            break;
        }
        /* A delta frame: one record of a round before the last. */
        g_assert_cmpuint(len, ==, 16 + 16);
        g_assert_cmpuint(ldl_le_p(p + 16 + 12), <, round - 1);
    }
    g_assert_cmpuint(pongs, >, 0);
    assert_record(&got[0], &last[0]);
    assert_record(&got[1], &last[1]);
    g_assert_cmpint(get_stat(qts, "dropped"), >=, 1);
    g_assert_true(get_stat_bool(qts, "agent-connected"));
}

/*
 * PB-7: the device closes with TIMEOUT after three keepalive intervals
 * without a frame; any frame starts the count again.
 */
static void test_keepalive(void *obj, void *data, QGuestAllocator *t_alloc)
{
    const int interval_ms = 500;
    gint64 start;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent->keepalive_ms = interval_ms;
    agent_handshake(global_qtest, true);

    /* Four intervals of PINGs 100 ms apart: the link stays up. */
    for (int i = 0; i < 4 * interval_ms / 100; i++) {
        agent_ping(i);
        g_usleep(100 * 1000);
    }
    agent_ping(1000);
    start = g_get_monotonic_time();
    agent_expect_close(FH_CLOSE_TIMEOUT);
    g_assert_cmpint(g_get_monotonic_time() - start, >=,
                    (FH_KEEPALIVE_MISSES * interval_ms - 50) * 1000);
    g_assert_false(get_stat_bool(global_qtest, "agent-connected"));
}

#define SREC(v, f, mn, mx, pf, sq) { \
    .vcpu = const_le16(v), .flags = const_le16(f),                      \
    .clamp_min = const_le16(mn), .clamp_max = const_le16(mx),           \
    .perf = const_le16(pf), .seq = const_le32(sq) }
#define BATCH(n, ...) \
    .num_records = (n), .records = (n), .rec = { __VA_ARGS__ }

static const HostileCase hostile_cases[] = {
    { "undersized", .raw_len = 4, .expect = EXPECT_BROKEN },
    { "header-only", .raw_len = 8, .expect = EXPECT_BROKEN },
    { "oversized", BATCH(3, SREC(0, 0, 0, 0, 0, 0), SREC(1, 0, 0, 0, 0, 0),
                         SREC(0, 0, 0, 0, 0, 0)),
      .expect = EXPECT_BROKEN },
    { "count-mismatch", .num_records = 2, .records = 1,
      .rec = { SREC(0, R_MIN, 1, 0, 0, 0) }, .expect = EXPECT_BROKEN },
    { "zero-records", .num_records = 0, .records = 1,
      .rec = { SREC(0, R_MIN, 1, 0, 0, 0) }, .expect = EXPECT_BROKEN },
    { "bad-msg-type", .msg_type = 2, BATCH(1, SREC(0, R_MIN, 1, 0, 0, 0)),
      .expect = EXPECT_BROKEN },
    { "header-reserved", .hdr_reserved = 1,
      BATCH(1, SREC(0, R_MIN, 1, 0, 0, 0)), .expect = EXPECT_BROKEN },
    { "device-writable", .writable = true,
      BATCH(1, SREC(0, R_MIN, 1, 0, 0, 0)), .expect = EXPECT_BROKEN },
    { "writable-tail", .writable_tail = true,
      BATCH(1, SREC(0, R_MIN, 1, 0, 0, 0)), .expect = EXPECT_BROKEN },
    { "vcpu-out-of-range", BATCH(1, SREC(NUM_VCPUS, R_MIN, 1, 0, 0, 0)),
      .expect = EXPECT_REJECTED, .rejected = 1 },
    { "vcpu-0xffff", BATCH(1, SREC(0xffff, R_MIN, 1, 0, 0, 0)),
      .expect = EXPECT_REJECTED, .rejected = 1 },
    { "min-over-1024", BATCH(1, SREC(0, R_MIN, 1025, 0, 0, 0)),
      .expect = EXPECT_REJECTED, .rejected = 1 },
    { "max-over-1024", BATCH(1, SREC(1, R_MAX, 0, 0xffff, 0, 0)),
      .expect = EXPECT_REJECTED, .rejected = 1 },
    { "perf-over-1024", BATCH(1, SREC(1, R_PERF, 0, 0, 2048, 0)),
      .expect = EXPECT_REJECTED, .rejected = 1 },
    { "min-above-max", BATCH(1, SREC(0, R_MIN | R_MAX, 800, 200, 0, 0)),
      .expect = EXPECT_REJECTED, .rejected = 1 },
    { "unknown-flags", BATCH(1, SREC(0, 0x10 | R_MIN, 1, 0, 0, 0)),
      .expect = EXPECT_REJECTED, .rejected = 1 },
    { "value-without-valid", BATCH(1, SREC(0, R_MAX, 5, 100, 0, 0)),
      .expect = EXPECT_REJECTED, .rejected = 1 },
    { "record-reserved", BATCH(1, { .vcpu = 0, .flags = const_le16(R_MIN),
                                    .clamp_min = const_le16(1),
                                    .reserved = const_le16(1) }),
      .expect = EXPECT_REJECTED, .rejected = 1 },
    { "perf-not-negotiated",
      .extra_args = "-global virtio-freqhint-device.perf=off",
      BATCH(2, SREC(0, R_PERF, 0, 0, 100, 0), SREC(1, R_PERF, 0, 0, 200, 0)),
      .expect = EXPECT_REJECTED, .rejected = 2 },
};

static const HostileCase forced_case = { "forced" };

static void register_virtio_freqhint_test(void)
{
    QOSGraphTestOptions opts = {
        .before = agent_before,
    };

    qos_add_test("config", "virtio-freqhint", test_config, &opts);
    qos_add_test("batch", "virtio-freqhint", test_batch, &opts);
    qos_add_test("rate-bound", "virtio-freqhint", test_rate_bound, &opts);
    opts.arg = (void *)&forced_case;
    qos_add_test("rate-bound-forced", "virtio-freqhint", test_rate_bound,
                 &opts);
    opts.arg = NULL;
    qos_add_test("mixed", "virtio-freqhint", test_mixed, &opts);
    qos_add_test("reset", "virtio-freqhint", test_reset, &opts);
    qos_add_test("migrate", "virtio-freqhint", test_migrate, &opts);
    qos_add_test("agent-protocol", "virtio-freqhint", test_agent_protocol,
                 &opts);
    qos_add_test("grants-not-accepted", "virtio-freqhint",
                 test_grants_not_accepted, &opts);
    qos_add_test("grants-not-negotiated", "virtio-freqhint",
                 test_grants_not_negotiated, &opts);
    qos_add_test("broken-withdraws", "virtio-freqhint", test_broken_withdraws,
                 &opts);
    qos_add_test("broken-ring-withdraws", "virtio-freqhint",
                 test_broken_ring_withdraws, &opts);
    qos_add_test("backpressure", "virtio-freqhint", test_backpressure, &opts);
    qos_add_test("keepalive", "virtio-freqhint", test_keepalive, &opts);
    for (int i = 0; i < ARRAY_SIZE(hostile_cases); i++) {
        g_autofree char *name = g_strdup_printf("hostile/%s",
                                                hostile_cases[i].name);

        opts.arg = (void *)&hostile_cases[i];
        qos_add_test(name, "virtio-freqhint", test_hostile, &opts);
    }

    /* Tests with extra QEMU options */
    opts.before = agent_before_args;
    opts.arg = (void *)"-S";
    qos_add_test("vm-state", "virtio-freqhint", test_vm_state, &opts);
    opts.arg = (void *)name_args;
    qos_add_test("name", "virtio-freqhint", test_name, &opts);
    opts.arg = (void *)"-smp 2,maxcpus=3,sockets=3,cores=1,threads=1";
    qos_add_test("hotplug", "virtio-freqhint", test_hotplug, &opts);
    opts.arg = (void *)"-global virtio-freqhint-device.grants=off";
    qos_add_test("grants-off", "virtio-freqhint", test_grants_off, &opts);
}

libqos_init(register_virtio_freqhint_test);
