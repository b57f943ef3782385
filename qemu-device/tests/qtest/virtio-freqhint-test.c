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
#include <netinet/in.h>
#include <poll.h>
#include "libqtest-single.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qstring.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "libqos/virtio-freqhint.h"
#include "standard-headers/linux/virtio_config.h"
#include "standard-headers/linux/virtio_ring.h"
#include "standard-headers/linux/virtio_pci.h"
#include "standard-headers/linux/virtio_freqhint.h"
#include "system/freqhint-agent.h"

#define NUM_VCPUS           2   /* -smp; the hot-plug test adds one */
#define MAX_VCPUS           3
#define MPIDR_VCPUS         17  /* arm virt: one more than a GICv3 cluster */
#define TIMEOUT_MS          10000
#define QUIET_MS            300
#define RATE_WINDOW_MS      10
#define FORWARD_MS          5
#define MS                  (1000 * 1000)

#define F_PERF              (1ull << VIRTIO_FREQHINT_F_PERF)
#define F_FEEDBACK          (1ull << VIRTIO_FREQHINT_F_FEEDBACK)
#define F_HOST_FREQ         (1ull << VIRTIO_FREQHINT_F_HOST_FREQ)
#define F_CPU_ID            (1ull << VIRTIO_FREQHINT_F_CPU_ID)
#define F_CUR_FREQ          (1ull << VIRTIO_FREQHINT_F_CUR_FREQ)
#define F_VERSION_1         (1ull << VIRTIO_F_VERSION_1)
#define F_ALL               (F_PERF | F_FEEDBACK | F_HOST_FREQ | F_CPU_ID | \
                             F_CUR_FREQ | F_VERSION_1)
/* Bytes of a FEEDBACK message, and of the event buffers the device asks for */
#define FEEDBACK_LEN(n)     (624 + 8 * (n))

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
    int port;                   /* TCP on the loopback instead of UNIX */
    unsigned int conn;          /* connections accepted */
    unsigned int welcomed;      /* the last one that got WELCOME */
    /* What WELCOME answers */
    uint32_t accept_features;   /* ANDed with the offered ones */
    uint32_t keepalive_ms;
    /* What the last HELLO said */
    uint32_t features;
    char name[FH_NAME_MAX];
    uint32_t tids[8];
} FakeAgent;

#define FAKE_AGENT_INIT { .listen_fd = -1, .fd = -1,                     \
                          .accept_features = FH_F_ALL,                  \
                          .keepalive_ms = FH_KEEPALIVE_MAX_MS }

/* Two for migration; "agent" is the one the helpers talk to. */
static FakeAgent agents[2] = { FAKE_AGENT_INIT, FAKE_AGENT_INIT };
static FakeAgent *agent = &agents[0];
/* The device's num_vcpus: the machine's maximum vCPU count. */
static unsigned int num_vcpus = NUM_VCPUS;
/* At least the vCPUs plugged at start-up: their HELLO thread ids are not 0. */
static unsigned int boot_vcpus = NUM_VCPUS;
/* Like a driver, post a new event buffer for each one the device used. */
static bool event_repost = true;
/* timestamp_ns of the last HINTS frame the agent read. */
static int64_t last_hints_ns;

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
    boot_vcpus = NUM_VCPUS;
    event_repost = true;
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

/*
 * A TCP agent on the loopback with a small receive buffer: what it does not
 * read soon fills the device's socket, which then takes frames in part.
 */
static void agent_listen_tcp(FakeAgent *a)
{
    struct sockaddr_in sin = {
        .sin_family = AF_INET,
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
    };
    socklen_t slen = sizeof(sin);
    int rcvbuf = 4096;

    agent_reset(a);
    a->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    g_assert_cmpint(a->listen_fd, >=, 0);
    /* Set before listen(): accepted sockets inherit it with the window. */
    g_assert_cmpint(setsockopt(a->listen_fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
                               sizeof(rcvbuf)), ==, 0);
    g_assert_cmpint(bind(a->listen_fd, (struct sockaddr *)&sin,
                         sizeof(sin)), ==, 0);
    g_assert_cmpint(getsockname(a->listen_fd, (struct sockaddr *)&sin,
                                &slen), ==, 0);
    a->port = ntohs(sin.sin_port);
    g_assert_cmpint(listen(a->listen_fd, 4), ==, 0);
}

/* The pc machine of qemu-system-x86_64 or qemu-system-i386. */
static bool arch_is_x86(void)
{
    return !strcmp(qtest_get_arch(), "x86_64") ||
           !strcmp(qtest_get_arch(), "i386");
}

/*
 * The bus that takes the devices a test adds with device_add: the pc
 * machine's PCI bus takes hot-plugged devices, the virt machine's pcie.0
 * does not, so there they go to a root port made at start-up.
 */
static const char *hotplug_bus(void)
{
    return arch_is_x86() ? "pci.0" : "fhport";
}

/* QEMU options every test machine gets, before its device options. */
static void machine_append_args(GString *cmd_line)
{
    g_string_append_printf(cmd_line, " -smp %d", NUM_VCPUS);
    if (!arch_is_x86()) {
        g_string_append(cmd_line, " -device pcie-root-port,id=fhport,"
                        "chassis=1,addr=05.0");
    }
}

/* QEMU options connecting the device to agent @a. */
static void agent_append_args(GString *cmd_line, FakeAgent *a,
                              const char *extra)
{
    g_autofree char *addr = a->port ?
        g_strdup_printf("host=127.0.0.1,port=%d", a->port) :
        g_strdup_printf("path=%s", a->path);

    machine_append_args(cmd_line);
    g_string_append_printf(cmd_line,
                           " -chardev socket,id=fhchr,%s,reconnect-ms=100"
                           " -object freqhint-agent,id=fhagent,chardev=fhchr"
                           " -global virtio-freqhint-device.backend=fhagent"
                           " %s", addr, extra ? extra : "");
}

static void *agent_before(GString *cmd_line, void *arg)
{
    const HostileCase *c = arg;

    agent_cleanup(NULL);
    agent_listen(agent);
    agent_append_args(cmd_line, agent, c ? c->extra_args : NULL);
    return arg;
}

static void *agent_before_tcp(GString *cmd_line, void *arg)
{
    agent_cleanup(NULL);
    agent_listen_tcp(agent);
    agent_append_args(cmd_line, agent, NULL);
    return arg;
}

/* No agent: -object freqhint-null. */
static void *agent_before_null(GString *cmd_line, void *arg)
{
    agent_cleanup(NULL);
    machine_append_args(cmd_line);
    g_string_append(cmd_line, " -object freqhint-null,id=fhnull"
                    " -global virtio-freqhint-device.backend=fhnull");
    return arg;
}

/* No agent, and extra QEMU options (the test's argument). */
static void *agent_before_null_args(GString *cmd_line, void *arg)
{
    agent_before_null(cmd_line, NULL);
    g_string_append_printf(cmd_line, " %s", (const char *)arg);
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
    uint8_t hdr[sizeof(struct fh_frame_hdr)];
    uint8_t *payload;

    read_exact(agent->fd, hdr, sizeof(hdr));
    g_assert_cmpuint(fh_frame_hdr_get(hdr, len, type), ==, FH_CLOSE_NORMAL);
    payload = g_malloc0(*len + 1);
    read_exact(agent->fd, payload, *len);
    return payload;
}

static void agent_send(uint16_t type, const void *payload, uint32_t len)
{
    size_t hdr = sizeof(struct fh_frame_hdr);
    g_autofree uint8_t *buf = g_malloc(hdr + len);

    fh_frame_hdr_put(buf, len, type);
    memcpy(buf + hdr, payload, len);
    g_assert_cmpint(write(agent->fd, buf, hdr + len), ==, hdr + len);
}

static void agent_ping(uint64_t cookie);

/* The link is up: the agent may PING (before WELCOME a frame closes it). */
static bool agent_is_up(void)
{
    return agent->fd >= 0 && agent->welcomed == agent->conn;
}

/*
 * Let forwarding timers run; nothing may come out.  With the link up a
 * PING proves it without waiting: the device answers in order, so a frame
 * sent before the PONG would be read first.  Before WELCOME only a wait
 * in real time can tell.
 */
static void agent_assert_quiet(QTestState *qts)
{
    qtest_clock_step(qts, 50 * MS);
    if (agent_is_up()) {
        agent_ping(0x9e7);
        return;
    }
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
    last_hints_ns = le64_to_cpu(h.timestamp_ns);
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
    agent->conn++;
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
        uint32_t tid = ldl_le_p(p + sizeof(hello) + 4 * i);

        /* The boot vCPUs have threads; hot-pluggable ones may not yet. */
        if (i < boot_vcpus) {
            g_assert_cmpuint(tid, !=, 0);
        }
        if (i < ARRAY_SIZE(agent->tids)) {
            agent->tids[i] = tid;
        }
    }

    welcome.features = cpu_to_le32(agent->features & agent->accept_features);
    agent_send(FH_MSG_WELCOME, &welcome, sizeof(welcome));
    agent->welcomed = agent->conn;
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
                           "', 'property': 'x-stats'}}");
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

/*
 * Poll query-migrate on @qts until its status is @want ("completed" or
 * "failed"); the other of the two ends the test.
 */
static void wait_migration(QTestState *qts, const char *want)
{
    const char *other = g_str_equal(want, "completed") ? "failed"
                                                       : "completed";
    gint64 start = g_get_monotonic_time();

    for (;;) {
        QDict *rsp = qtest_qmp(qts, "{'execute': 'query-migrate'}");
        const char *status = qdict_get_try_str(qdict_get_qdict(rsp, "return"),
                                               "status");
        bool done = !g_strcmp0(status, want);

        g_assert_cmpstr(status, !=, other);
        qobject_unref(rsp);
        if (done) {
            return;
        }
        g_assert_cmpint(g_get_monotonic_time() - start, <=,
                        TIMEOUT_MS * 1000);
        g_usleep(10 * 1000);
    }
}

/*
 * The next event buffer the device used: its bytes (g_free) and length.
 * The clock steps 1 ms per try with @step (a snapshot waiting for its rate
 * window), else only real time passes.
 */
static uint8_t *event_recv(QTestState *qts, QVirtioFreqHint *fh,
                           uint32_t *len, bool step)
{
    gint64 start = g_get_monotonic_time();
    uint32_t head;

    g_assert_nonnull(fh->eventq);
    for (;;) {
        if (qvirtqueue_get_buf(qts, fh->eventq, &head, len)) {
            uint8_t *p = g_malloc0(fh->event_buf_size);

            g_assert_cmpuint(*len, <=, fh->event_buf_size);
            qtest_memread(qts, fh->event_addr[head], p, *len);
            if (event_repost) {
                qvirtio_freqhint_post_event(fh, fh->event_buf_size);
            }
            return p;
        }
        g_assert_cmpint(g_get_monotonic_time() - start, <=,
                        TIMEOUT_MS * 1000);
        if (step) {
            qtest_clock_step(qts, MS);
        } else {
            g_usleep(1000);
        }
    }
}

static void event_assert_none(QTestState *qts, QVirtioFreqHint *fh)
{
    g_assert_false(qvirtqueue_get_buf(qts, fh->eventq, NULL, NULL));
}

/* A FEEDBACK message, decoded and checked against the message rules. */
typedef struct Feedback {
    uint16_t flags;
    uint32_t seq;
    uint16_t op_floor;
    uint16_t op_ceiling;
    uint16_t num_classes;
    uint8_t classes[VIRTIO_FREQHINT_MAX_FREQ_CLASSES * 76];
    uint16_t floor[8];
    uint16_t ceiling[8];
    uint8_t freq_class[8];
} Feedback;

static void feedback_recv(QTestState *qts, QVirtioFreqHint *fh, Feedback *f,
                          bool step)
{
    uint32_t len;
    g_autofree uint8_t *p = event_recv(qts, fh, &len, step);

    g_assert_cmpuint(lduw_le_p(p), ==, VIRTIO_FREQHINT_MSG_FEEDBACK);
    g_assert_cmpuint(len, ==, FEEDBACK_LEN(num_vcpus));
    g_assert_cmpuint(lduw_le_p(p + 12), ==, num_vcpus);
    g_assert_cmpuint(num_vcpus, <=, ARRAY_SIZE(f->floor));
    f->flags = lduw_le_p(p + 2);
    f->seq = ldl_le_p(p + 4);
    f->op_floor = lduw_le_p(p + 8);
    f->op_ceiling = lduw_le_p(p + 10);
    f->num_classes = lduw_le_p(p + 14);
    g_assert_cmphex(f->flags & ~VIRTIO_FREQHINT_FB_ALL, ==, 0);
    g_assert_cmpuint(f->num_classes, <=, VIRTIO_FREQHINT_MAX_FREQ_CLASSES);
    memcpy(f->classes, p + 16, sizeof(f->classes));
    for (int i = f->num_classes * 76; i < sizeof(f->classes); i++) {
        g_assert_cmpuint(f->classes[i], ==, 0);
    }
    for (int i = 0; i < num_vcpus; i++) {
        const uint8_t *v = p + 624 + 8 * i;

        f->floor[i] = lduw_le_p(v);
        f->ceiling[i] = lduw_le_p(v + 2);
        f->freq_class[i] = v[4];
        g_assert_cmpuint(v[5] | v[6] | v[7], ==, 0);
        g_assert_cmpuint(f->floor[i], <=, f->ceiling[i]);
        g_assert_cmpuint(f->ceiling[i], <=, 1024);
    }
}

/* Expect a snapshot of the no-agent defaults (or with the agent's flag). */
static uint32_t feedback_expect_defaults(QTestState *qts, QVirtioFreqHint *fh,
                                         bool agent_up, bool step)
{
    Feedback f;

    feedback_recv(qts, fh, &f, step);
    g_assert_cmphex(f.flags, ==, agent_up ? VIRTIO_FREQHINT_FB_AGENT : 0);
    g_assert_cmpuint(f.op_floor, ==, 0);
    g_assert_cmpuint(f.op_ceiling, ==, 1024);
    g_assert_cmpuint(f.num_classes, ==, 0);
    for (int i = 0; i < num_vcpus; i++) {
        g_assert_cmpuint(f.floor[i], ==, 0);
        g_assert_cmpuint(f.ceiling[i], ==, 1024);
        g_assert_cmphex(f.freq_class[i], ==, VIRTIO_FREQHINT_NO_FREQ_CLASS);
    }
    return f.seq;
}

/* Expect CPU_IDS; returns the ids (g_free). */
static uint64_t *cpu_ids_recv(QTestState *qts, QVirtioFreqHint *fh)
{
    uint32_t len;
    g_autofree uint8_t *p = event_recv(qts, fh, &len, false);
    uint64_t *ids = g_new(uint64_t, num_vcpus);

    g_assert_cmpuint(lduw_le_p(p), ==, VIRTIO_FREQHINT_MSG_CPU_IDS);
    g_assert_cmpuint(lduw_le_p(p + 2), ==, num_vcpus);
    g_assert_cmpuint(ldl_le_p(p + 4), ==, 0);
    g_assert_cmpuint(len, ==, 8 + 8 * num_vcpus);
    for (int i = 0; i < num_vcpus; i++) {
        ids[i] = ldq_le_p(p + 8 + 8 * i);
    }
    return ids;
}

/*
 * What start_hw's DRIVER_OK brought: CPU_IDS, then the first snapshot
 * (seq 1, no agent yet).
 */
static void events_initial(QTestState *qts, QVirtioFreqHint *fh)
{
    g_free(cpu_ids_recv(qts, fh));
    g_assert_cmpuint(feedback_expect_defaults(qts, fh, false, false), ==, 1);
}

/* A handshake, and the snapshot that says the agent is there. */
static void agent_handshake_events(QTestState *qts, QVirtioFreqHint *fh)
{
    events_initial(qts, fh);
    agent_handshake(qts, true);
    g_assert_cmpuint(feedback_expect_defaults(qts, fh, true, true), ==, 2);
}

/*
 * Start over after a reset as a driver accepting @features, with
 * @event_bufs event buffers of @event_len bytes (0: event_buf_size).
 */
static void driver_reinit(QVirtioFreqHint *fh, uint64_t features,
                          unsigned int event_bufs, uint32_t event_len)
{
    qvirtio_reset(fh->vdev);
    qvirtio_set_acknowledge(fh->vdev);
    qvirtio_set_driver(fh->vdev);
    qvirtio_freqhint_init(fh, features, event_bufs, event_len);
}

/*
 * DEV-1..3, DEV-25: the 16-byte configuration, the features, and what the
 * event queue carries after DRIVER_OK: CPU_IDS, then one snapshot of the
 * no-agent defaults.
 */
static void test_config(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QVirtioDevice *vdev = fh->vdev;
    QTestState *qts = global_qtest;
    g_autofree uint64_t *ids = NULL;

    g_test_queue_destroy(agent_cleanup, NULL);
    g_assert_cmpuint(vdev->device_type, ==, VIRTIO_ID_FREQHINT);
    g_assert_cmpuint(VIRTIO_ID_FREQHINT, ==, 56);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 0), ==, NUM_VCPUS);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 2), ==, NUM_VCPUS);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 4), ==, RATE_WINDOW_MS);
    /* The tuning the driver takes from the device (DEV-25). */
    g_assert_cmpuint(qvirtio_config_readw(vdev, 6), ==, 16);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 8), ==, 20);
    g_assert_cmpuint(qvirtio_config_readw(vdev, 10), ==, 0);
    g_assert_cmpuint(qvirtio_config_readl(vdev, 12), ==,
                     FEEDBACK_LEN(NUM_VCPUS));
    g_assert_cmphex(qvirtio_get_features(vdev) & F_ALL, ==, F_ALL);
    g_assert_false(qvirtio_get_features(vdev) &
                   (1ull << VIRTIO_RING_F_EVENT_IDX));

    /* -smp 2: APIC IDs 0 and 1. */
    ids = cpu_ids_recv(qts, fh);
    g_assert_cmphex(ids[0], ==, 0);
    g_assert_cmphex(ids[1], ==, 1);
    /* No agent: defaults, no host frequencies (DEV-7). */
    g_assert_cmpuint(feedback_expect_defaults(qts, fh, false, false), ==, 1);
    /* Nothing changed: nothing more, however long. */
    qtest_clock_step(qts, 10 * RATE_WINDOW_MS * MS);
    event_assert_none(qts, fh);
    g_assert_cmpint(get_stat(qts, "feedback"), ==, 1);
}

/*
 * DEV-25 with sparse APIC IDs: two sockets of three cores put the second
 * socket's cores at APIC IDs 4..6, and indexes 2..5 have no vCPU yet; the
 * ids are 64-bit, in CPU_IDS.
 */
static void test_cpu_ids(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    const uint64_t want[] = { 0, 1, 2, 4, 5, 6 };
    g_autofree uint64_t *ids = NULL;

    g_test_queue_destroy(agent_cleanup, NULL);
    num_vcpus = ARRAY_SIZE(want);
    g_assert_cmpuint(qvirtio_config_readw(fh->vdev, 0), ==, num_vcpus);
    g_assert_cmpuint(qvirtio_config_readl(fh->vdev, 12), ==,
                     FEEDBACK_LEN(num_vcpus));
    ids = cpu_ids_recv(global_qtest, fh);
    for (int i = 0; i < ARRAY_SIZE(want); i++) {
        g_assert_cmphex(ids[i], ==, want[i]);
    }
    feedback_expect_defaults(global_qtest, fh, false, false);
    /* HELLO knows threads only for the plugged ones. */
    agent_handshake(global_qtest, true);
    g_assert_cmpuint(agent->tids[2], ==, 0);
    g_assert_cmpuint(agent->tids[5], ==, 0);
}

/*
 * DEV-25 on arm virt: the firmware id is the MPIDR affinity.  With GICv3 a
 * cluster holds 16 CPUs (Aff0 0..15), so vCPU 16 is Aff1 1, Aff0 0: 0x100,
 * where its index would say 16.
 */
static void test_cpu_ids_mpidr(void *obj, void *data,
                               QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    g_autofree uint64_t *ids = NULL;

    g_test_queue_destroy(agent_cleanup, NULL);
    num_vcpus = MPIDR_VCPUS;
    g_assert_cmpuint(qvirtio_config_readw(fh->vdev, 0), ==, num_vcpus);
    ids = cpu_ids_recv(global_qtest, fh);
    for (int i = 0; i < 16; i++) {
        g_assert_cmphex(ids[i], ==, i);
    }
    g_assert_cmphex(ids[16], ==, 0x100);
}

static void test_batch(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    Feedback f;
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
        struct fh_grant grants[NUM_VCPUS];
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
    agent_handshake_events(qts, fh);

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

    /* Grants reach the driver as one FEEDBACK snapshot (DEV-33, DEV-37). */
    agent_send(FH_MSG_GRANTS, &grants, sizeof(grants));
    feedback_recv(qts, fh, &f, true);
    g_assert_cmpuint(f.seq, ==, 3);
    g_assert_cmphex(f.flags, ==, VIRTIO_FREQHINT_FB_AGENT);
    g_assert_cmpuint(f.op_floor, ==, 100);
    g_assert_cmpuint(f.op_ceiling, ==, 900);
    g_assert_cmpuint(f.floor[0], ==, 200);
    g_assert_cmpuint(f.ceiling[0], ==, 800);
    g_assert_cmpuint(f.floor[1], ==, 0);
    g_assert_cmpuint(f.ceiling[1], ==, 1024);

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
    /* DEV-20: FB_AGENT clear, the defaults, in one more snapshot. */
    g_assert_cmpuint(feedback_expect_defaults(qts, fh, false, true), ==, 4);
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

/*
 * DEV-8: a device reset withdraws the VM's influence: the vCPUs that held
 * a hint go back to "no hint" on the agent; then the driver gets CPU_IDS
 * and a snapshot again, its seq from 1.
 */
static void test_reset(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record r = REC(1, R_MIN, 900, 0, 0, 1);
    struct virtio_freqhint_record none = REC(1, 0, 0, 0, 0, 0);
    uint8_t buf[64];
    g_autofree struct virtio_freqhint_record *got = NULL;
    unsigned int num;
    uint16_t flags;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake_events(qts, fh);
    wait_used(qts, fh, submit(qts, fh, buf, build_batch(buf, 1, &r, 1)));
    qtest_clock_step(qts, FORWARD_MS * MS);
    got = agent_recv_hints(&num, &flags);
    assert_record(&got[0], &r);
    g_clear_pointer(&got, g_free);

    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    driver_reinit(fh, F_ALL, 2, 0);
    got = agent_recv_hints(&num, &flags);
    g_assert_cmpuint(flags, ==, 0);
    g_assert_cmpuint(num, ==, 1);
    assert_record(&got[0], &none);
    g_free(cpu_ids_recv(qts, fh));
    g_assert_cmpuint(feedback_expect_defaults(qts, fh, true, false), ==, 1);
    agent_assert_quiet(qts);
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
    QTestState *qts = global_qtest;
    struct fh_msg_ping pong = { .cookie = cpu_to_le64(0x1234) };
    struct {
        struct fh_msg_grants g;
        struct fh_grant grants[NUM_VCPUS];
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
    g_assert_cmpint(get_stat(qts, "operator-floor"), ==, 0);
    g_assert_cmpint(get_stat(qts, "operator-ceiling"), ==, 1024);

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

static void agent_send_host_freq(void);
static void agent_send_cur_freq(uint32_t khz0, uint32_t khz1);
static uint32_t cur_freq_expect(QTestState *qts, QVirtioFreqHint *fh,
                                uint32_t khz0, uint32_t khz1, bool step);

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
        struct fh_grant grants[NUM_VCPUS];
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
    struct virtio_freqhint_record after = REC(1, R_MIN, 700, 0, 0, 9);
    QVirtioPCIDevice *pci = container_of(fh->vdev, QVirtioPCIDevice, vdev);
    g_autofree struct virtio_freqhint_record *got = NULL;
    g_autofree char *uri = NULL;
    g_autoptr(GString) dst_cmd = NULL;
    uint8_t buf[64];
    unsigned int num;
    uint16_t flags;
    QDict *stats;
    Feedback f;

    g_test_queue_destroy(agent_cleanup, NULL);
    qos_invalidate_command_line();
    agent_handshake_events(src, fh);
    agent_send(FH_MSG_GRANTS, &grants, sizeof(grants));
    feedback_recv(src, fh, &f, true);
    g_assert_cmpuint(f.seq, ==, 3);
    g_assert_cmpuint(f.op_floor, ==, 100);
    agent_send_host_freq();
    feedback_recv(src, fh, &f, true);
    g_assert_cmpuint(f.seq, ==, 4);
    agent_send_cur_freq(1000000, 2500000);
    g_assert_cmpuint(cur_freq_expect(src, fh, 1000000, 2500000, true), ==, 1);
    /* The kick opens a rate window, and the migration happens inside it. */
    wait_used(src, fh, submit(src, fh, buf, build_batch(buf, 2, r, 2)));
    qtest_clock_step(src, FORWARD_MS * MS);
    g_free(agent_recv_hints(&num, &flags));
    g_assert_cmphex(qtest_readw(src, fh->hintq->used) &
                    VRING_USED_F_NO_NOTIFY, ==, VRING_USED_F_NO_NOTIFY);

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
    wait_migration(src, "completed");
    /* The source stopped: its hints no longer count (PD-9). */
    agent = &agents[0];
    agent_expect_no_hints();

    /* The destination runs: HELLO, then the migrated state (PD-15). */
    qtest_qmp_eventwait(dst, "RESUME");
    agent = &agents[1];
    agent_welcome(dst, true);
    agent_expect_full(r);
    /* When the guest wrote those records came along (a subsection). */
    g_assert_cmpint(last_hints_ns, !=, 0);

    /*
     * DEV-24: the source host's grants and bounds stayed there;
     * the driver hears this host's view (no agent yet when the VM
     * resumed), the snapshot numbering going on from the source's.
     */
    stats = get_stats(dst);
    g_assert_cmpint(qdict_get_int(stats, "operator-floor"), ==, 0);
    g_assert_cmpint(qdict_get_int(stats, "operator-ceiling"), ==, 1024);
    qobject_unref(stats);
    pci->pdev->bus->qts = dst;
    g_assert_cmpuint(feedback_expect_defaults(dst, fh, false, false), ==, 5);
    /* The source's values stayed there too; CUR_FREQ's seq came along. */
    g_assert_cmpuint(cur_freq_expect(dst, fh, 0, 0, false), ==, 2);
    g_assert_cmpuint(feedback_expect_defaults(dst, fh, true, true), ==, 6);
    pci->pdev->bus->qts = src;

    /*
     * The source migrated inside a rate window, so the used ring says
     * VRING_USED_F_NO_NOTIFY; the rate timer that would clear it stayed
     * behind (host state), and without KVM there is no ioeventfd whose
     * start-up kick would run the queue.  The destination must open the
     * queue again by itself, and a driver honouring NO_NOTIFY be heard.
     */
    qtest_clock_step(dst, 2 * RATE_WINDOW_MS * MS);
    g_assert_cmphex(qtest_readw(dst, fh->hintq->used) &
                    VRING_USED_F_NO_NOTIFY, ==, 0);
    pci->pdev->bus->qts = dst;
    wait_used(dst, fh, submit(dst, fh, buf, build_batch(buf, 1, &after, 1)));
    pci->pdev->bus->qts = src;
    qtest_clock_step(dst, FORWARD_MS * MS);
    got = agent_recv_hints(&num, &flags);
    g_assert_cmpuint(num, ==, 1);
    assert_record(&got[0], &after);
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
    int used = 0, notified = 0;
    int64_t notifications, wakeups;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);

    for (int i = 0; i < kicks; i++) {
        struct virtio_freqhint_record r = REC(i % NUM_VCPUS, R_MAX, 0,
                                              i % 1024, 0, i);

        /* What libqos's kick does: notify unless NO_NOTIFY is set. */
        notified += !(qtest_readw(qts, fh->hintq->used) &
                      VRING_USED_F_NO_NOTIFY);
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
        /* Only the driver's notifications count, never the timer's runs. */
        g_assert_cmpint(notifications, ==, notified);
        g_assert_cmpint(notifications, <=, kicks / RATE_WINDOW_MS + 2);
    }
    /* One run of the queue per window, kicked or not. */
    g_assert_cmpint(wakeups, <=, kicks / RATE_WINDOW_MS + 2);
    /* Forwarding is bounded too, and nothing was lost. */
    g_assert_cmpint(get_stat(qts, "forwarded") - NUM_VCPUS, <=,
                    NUM_VCPUS * (kicks / FORWARD_MS + 2));
    g_assert_cmpint(get_stat(qts, "dropped"), ==, 0);
}

/*
 * A wakeup takes at most a burst of buffers (16), however many the driver
 * made available: the rest waits for the next window.
 */
static void test_rate_burst(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    const int total = 41, burst = 16;
    uint8_t buf[64];

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);

    /* The first kick opens a window; the next 40 buffers come inside it. */
    for (int i = 0; i < total; i++) {
        struct virtio_freqhint_record r = REC(i % NUM_VCPUS, R_MAX, 0,
                                              i, 0, i);

        submit(qts, fh, buf, build_batch(buf, 1, &r, 1));
    }
    g_assert_cmpint(get_stat(qts, "buffers"), ==, 1);
    g_assert_cmpint(get_stat(qts, "notifications"), ==, 1);
    for (int w = 1; w <= 3; w++) {
        qtest_clock_step(qts, RATE_WINDOW_MS * MS);
        g_assert_cmpint(get_stat(qts, "buffers"), ==,
                        MIN(1 + w * burst, total));
        g_assert_cmpint(get_stat(qts, "wakeups"), ==, 1 + w);
    }
    /* The last record of each vCPU is what the agent ends up with. */
    g_assert_cmpint(get_stat(qts, "records"), ==, total);
}

/*
 * A wakeup validates no more records than one buffer may carry: 16 full
 * buffers of a 16-vCPU VM cost one buffer per window, not 16 x 16 records
 * under the BQL.
 */
#define RECORDS_VCPUS 16

static void test_rate_records(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record r[RECORDS_VCPUS];
    uint8_t buf[8 + sizeof(r)];
    size_t len;

    g_test_queue_destroy(agent_cleanup, NULL);
    num_vcpus = RECORDS_VCPUS;
    for (int i = 0; i < RECORDS_VCPUS; i++) {
        r[i] = REC(i, R_MAX, 0, 500 + i, 0, i);
    }
    len = build_batch(buf, RECORDS_VCPUS, r, RECORDS_VCPUS);
    /* The first kick opens a window; 16 more full buffers come inside it. */
    for (int i = 0; i <= 16; i++) {
        submit(qts, fh, buf, len);
    }
    g_assert_cmpint(get_stat(qts, "buffers"), ==, 1);
    qtest_clock_step(qts, RATE_WINDOW_MS * MS);
    g_assert_cmpint(get_stat(qts, "wakeups"), ==, 2);
    g_assert_cmpint(get_stat(qts, "buffers"), ==, 2);
    g_assert_cmpint(get_stat(qts, "records"), ==, 2 * RECORDS_VCPUS);
    g_assert_false(get_stat_bool(qts, "broken"));
}

/*
 * A driver that rewrites its status register after every buffer gets the
 * queue run no more often than by kicking: once per rate window.
 */
static void test_rate_status(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QVirtioDevice *vdev = fh->vdev;
    QTestState *qts = global_qtest;
    const int steps = 30;
    uint16_t used_idx = 0;
    int runs = 0;
    uint8_t buf[64];

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);

    for (int i = 0; i < steps; i++) {
        struct virtio_freqhint_record r = REC(i % NUM_VCPUS, R_MAX, 0,
                                              i, 0, i);
        uint16_t idx;

        submit(qts, fh, buf, build_batch(buf, 1, &r, 1));
        vdev->bus->set_status(vdev, vdev->bus->get_status(vdev));
        idx = qtest_readw(qts, fh->hintq->used + 2);
        runs += idx != used_idx;
        used_idx = idx;
        qtest_clock_step(qts, MS);
    }
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    g_assert_cmpint(get_stat(qts, "buffers"), ==, steps);
    g_test_message("%d buffers and status writes in %d ms: the queue ran "
                   "%d times, %" PRId64 " wakeups", steps, steps,
                   runs, get_stat(qts, "wakeups"));
    g_assert_cmpint(runs, <=, steps / RATE_WINDOW_MS + 2);
    g_assert_cmpint(get_stat(qts, "wakeups"), <=, steps / RATE_WINDOW_MS + 2);
}

/*
 * One hostile input to a running driver: the device breaks or refuses the
 * records, QEMU runs on, the agent hears nothing.  Counters are compared
 * with their values before.
 */
static void hostile_one(QVirtioFreqHint *fh, QTestState *qts,
                        const HostileCase *c)
{
    QVirtioDevice *vdev = fh->vdev;
    uint8_t buf[128] = { 0 };
    size_t len;
    uint64_t addr, tail = 0;
    uint32_t head;
    int64_t buffers = get_stat(qts, "buffers");
    int64_t rejected = get_stat(qts, "rejected");

    g_test_message("hostile input: %s", c->name);
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
        g_assert_cmpint(get_stat(qts, "buffers"), ==, buffers);
        g_assert_true(get_stat_bool(qts, "broken"));
        /* DEV-10: no vCPU held a hint, so there is nothing to withdraw. */
    } else {
        wait_used(qts, fh, head);
        g_assert_false(vdev->bus->get_status(vdev) &
                       VIRTIO_CONFIG_S_NEEDS_RESET);
        g_assert_cmpint(get_stat(qts, "rejected") - rejected, ==,
                        c->rejected);
        g_assert_false(get_stat_bool(qts, "broken"));
    }
    g_assert_cmpint(get_stat(qts, "records"), ==, 0);
    agent_assert_quiet(qts);
    assert_running(qts);
}

/* A case with QEMU options of its own (@data): one QEMU for it. */
static void test_hostile(void *obj, void *data, QGuestAllocator *t_alloc)
{
    const HostileCase *c = data;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(global_qtest, !c->extra_args);
    hostile_one(obj, global_qtest, c);
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

static void plug_cpu2(QTestState *qts)
{
    g_autofree char *type = g_strdup_printf("qemu64-%s-cpu",
                                            qtest_get_arch());
    QDict *rsp = qtest_qmp(qts, "{'execute': 'device_add', 'arguments':"
                           " {'driver': %s, 'id': 'cpu-2',"
                           " 'socket-id': 2, 'core-id': 0, 'thread-id': 0}}",
                           type);

    g_assert_true(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
}

/*
 * PD-17: a hot-plugged vCPU is reported with VCPUS and the connection (with
 * the guest's state on the host) stays.
 */
static void test_hotplug(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QTestState *qts = global_qtest;
    uint16_t type;
    uint32_t len;
    g_autofree uint8_t *p = NULL;

    g_test_queue_destroy(agent_cleanup, NULL);
    num_vcpus = MAX_VCPUS;
    agent_handshake(qts, true);
    g_assert_cmpuint(agent->tids[2], ==, 0);

    plug_cpu2(qts);
    p = agent_recv(&type, &len);
    g_assert_cmpuint(type, ==, FH_MSG_VCPUS);
    g_assert_cmpuint(len, ==, sizeof(struct fh_msg_vcpus) + 4 * MAX_VCPUS);
    g_assert_cmpuint(lduw_le_p(p), ==, MAX_VCPUS);
    g_assert_cmpuint(lduw_le_p(p + 2), ==, 0);
    g_assert_cmpuint(ldl_le_p(p + 4), ==, 0);
    g_assert_cmpuint(ldl_le_p(p + 8), ==, agent->tids[0]);
    g_assert_cmpuint(ldl_le_p(p + 12), ==, agent->tids[1]);
    g_assert_cmpuint(ldl_le_p(p + 16), !=, 0);
    g_assert_cmpuint(ldl_le_p(p + 16), !=, agent->tids[0]);
    g_assert_cmpuint(ldl_le_p(p + 16), !=, agent->tids[1]);
    agent_ping(1);
    g_assert_true(get_stat_bool(qts, "agent-connected"));
    g_assert_cmpint(get_stat(qts, "agent-connects"), ==, 1);
}

/*
 * PD-3, PD-17: an agent without FH_F_VCPUS gets CLOSE NORMAL and a new
 * HELLO carrying the current threads.
 */
static void test_hotplug_reconnect(void *obj, void *data,
                                   QGuestAllocator *t_alloc)
{
    QTestState *qts = global_qtest;

    g_test_queue_destroy(agent_cleanup, NULL);
    num_vcpus = MAX_VCPUS;
    agent->accept_features = FH_F_ALL & ~FH_F_VCPUS;
    agent_handshake(qts, true);
    g_assert_cmpuint(agent->tids[2], ==, 0);

    plug_cpu2(qts);
    agent_expect_close(FH_CLOSE_NORMAL);
    agent_handshake(qts, true);
    g_assert_cmpuint(agent->tids[2], !=, 0);
    g_assert_cmpuint(agent->tids[2], !=, agent->tids[0]);
    g_assert_cmpuint(agent->tids[2], !=, agent->tids[1]);
    g_assert_cmpint(get_stat(qts, "agent-connects"), ==, 2);
}

typedef struct {
    struct fh_msg_grants g;
    struct fh_grant grants[NUM_VCPUS];
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
 * FH_F_GRANTS and FH_F_HOST_FREQ are offered only with the 'feedback' and
 * 'host-freq' properties; without FEEDBACK the event queue carries CPU_IDS
 * only (DEV-33).
 */
static void test_feedback_off(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    GrantsFrame f;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);
    g_assert_cmphex(agent->features, ==, FH_F_PERF | FH_F_VCPUS);
    g_assert_cmphex(qvirtio_get_features(fh->vdev) & F_ALL, ==,
                    F_PERF | F_CPU_ID | F_VERSION_1);
    g_free(cpu_ids_recv(qts, fh));
    grants_frame(&f, 100, 900, 200, 800);
    agent_send(FH_MSG_GRANTS, &f, sizeof(f));
    agent_ping(1);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    event_assert_none(qts, fh);
    g_assert_cmpint(get_stat(qts, "operator-floor"), ==, 100);
}

/*
 * PA-14, PD-11: an agent that did not accept FH_F_GRANTS still sends
 * GRANTS; the device takes the operator bounds and leaves grants[] alone.
 */
static void test_grants_not_accepted(void *obj, void *data,
                                     QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    GrantsFrame gf;
    Feedback f;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent->accept_features = FH_F_PERF;
    agent_handshake_events(qts, fh);

    grants_frame(&gf, 100, 900, 200, 800);
    agent_send(FH_MSG_GRANTS, &gf, sizeof(gf));
    agent_ping(1);
    feedback_recv(qts, fh, &f, true);
    g_assert_cmpuint(f.op_floor, ==, 100);
    g_assert_cmpuint(f.op_ceiling, ==, 900);
    g_assert_cmpuint(f.floor[0], ==, 0);
    g_assert_cmpuint(f.ceiling[0], ==, 1024);
    g_assert_true(get_stat_bool(qts, "agent-connected"));
}

/* A HOST_FREQ frame for NUM_VCPUS vCPUs with up to two classes. */
typedef struct {
    struct fh_msg_host_freq h;
    struct virtio_freqhint_freq_class c[2];
    uint8_t freq_class[NUM_VCPUS];
} HostFreqFrame;

static size_t host_freq_frame(HostFreqFrame *f, uint16_t n)
{
    *f = (HostFreqFrame) {
        .h = {
            .num_classes = cpu_to_le16(n),
            .num_vcpus = cpu_to_le16(NUM_VCPUS),
        },
        .c = {
            {
                .min_khz = cpu_to_le32(800000),
                .max_khz = cpu_to_le32(3000000),
                .perf_step = cpu_to_le16(273),
                .num_freqs = cpu_to_le16(3),
                .freqs_khz = { cpu_to_le32(800000), cpu_to_le32(1600000),
                               cpu_to_le32(3000000) },
            },
            {
                .min_khz = cpu_to_le32(400000),
                .max_khz = cpu_to_le32(2000000),
                .perf_step = cpu_to_le16(8),
            },
        },
        .freq_class = { 1, n > 1 ? 0 : VIRTIO_FREQHINT_NO_FREQ_CLASS },
    };
    /* freq_class[] follows the classes actually sent. */
    memmove((uint8_t *)f + sizeof(f->h) + n * sizeof(f->c[0]), f->freq_class,
            NUM_VCPUS);
    return sizeof(f->h) + n * sizeof(f->c[0]) + NUM_VCPUS;
}

/*
 * PD-16, DEV-4, DEV-21, DEV-7: host frequency classes reach the driver
 * in a FEEDBACK snapshot; an invalid HOST_FREQ closes the connection and
 * publishes nothing; a disconnect takes them away.
 */
static void test_host_freq(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    HostFreqFrame f;
    Feedback fb;
    size_t len;
    /* Frame offsets: header 0, class 0 at 8, class 1 at 84, classes 160. */
    struct {
        const char *what;
        unsigned int off;
        unsigned int size;      /* 1, 2 or 4 bytes at off */
        uint32_t val;
        int len_delta;
    } bad[] = {
        { "num_vcpus", 2, 2, NUM_VCPUS + 1 },
        { "reserved", 4, 4, 1 },
        { "min_khz 0", 8, 4, 0 },
        { "min_khz above max_khz", 8, 4, 3000001 },
        { "perf_step 0", 16, 2, 0 },
        { "perf_step 1025", 16, 2, 1025 },
        { "num_freqs 17", 18, 2, 17 },
        { "table not ascending", 24, 4, 800000 },
        { "table out of range", 28, 4, 3000001 },
        { "entry past num_freqs", 32, 4, 1 },
        { "freq_class out of range", 160, 1, 2 },
        { "length", 0, 0, 0, -1 },
    };

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake_events(qts, fh);

    len = host_freq_frame(&f, 2);
    agent_send(FH_MSG_HOST_FREQ, &f, len);
    feedback_recv(qts, fh, &fb, true);
    g_assert_cmpuint(fb.seq, ==, 3);
    g_assert_cmpuint(fb.num_classes, ==, 2);
    g_assert_cmpuint(fb.freq_class[0], ==, 1);
    g_assert_cmpuint(fb.freq_class[1], ==, 0);
    g_assert_cmpuint(ldl_le_p(fb.classes), ==, 800000);
    g_assert_cmpuint(ldl_le_p(fb.classes + 4), ==, 3000000);
    g_assert_cmpuint(lduw_le_p(fb.classes + 8), ==, 273);
    g_assert_cmpuint(lduw_le_p(fb.classes + 10), ==, 3);
    g_assert_cmpuint(ldl_le_p(fb.classes + 20), ==, 3000000);
    g_assert_cmpuint(ldl_le_p(fb.classes + 76), ==, 400000);
    g_assert_cmpuint(lduw_le_p(fb.classes + 76 + 8), ==, 8);

    /* The same again is no news: no snapshot (DEV-33). */
    agent_send(FH_MSG_HOST_FREQ, &f, len);
    agent_ping(1);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    event_assert_none(qts, fh);

    /* The agent goes: no host frequencies (DEV-7). */
    close(agent->fd);
    agent->fd = -1;
    feedback_expect_defaults(qts, fh, false, true);

    for (int i = 0; i < ARRAY_SIZE(bad); i++) {
        uint8_t *b = (uint8_t *)&f;

        g_test_message("bad HOST_FREQ: %s", bad[i].what);
        agent_handshake(qts, true);
        qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
        feedback_expect_defaults(qts, fh, true, true);
        len = host_freq_frame(&f, 2);
        len += bad[i].len_delta;
        if (bad[i].size == 4) {
            stl_le_p(b + bad[i].off, bad[i].val);
        } else if (bad[i].size == 2) {
            stw_le_p(b + bad[i].off, bad[i].val);
        } else if (bad[i].size == 1) {
            b[bad[i].off] = bad[i].val;
        }
        agent_send(FH_MSG_HOST_FREQ, &f, len);
        agent_expect_close(FH_CLOSE_MALFORMED);
        /* DEV-21: nothing of it was taken. */
        feedback_expect_defaults(qts, fh, false, true);
    }

    /* Not accepted: not valid at all. */
    agent->accept_features = FH_F_ALL & ~FH_F_HOST_FREQ & ~FH_F_CUR_FREQ;
    agent_handshake(qts, true);
    len = host_freq_frame(&f, 1);
    agent_send(FH_MSG_HOST_FREQ, &f, len);
    agent_expect_close(FH_CLOSE_PROTOCOL);
    assert_running(qts);
}

/*
 * PD-6: a record arriving when nothing was forwarded within the last
 * interval goes to the agent at once, with no time passing on the device's
 * clock; only what follows within a window waits.
 */
static void test_leading_edge(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record r[3] = {
        REC(0, R_MIN, 300, 0, 0, 1),
        REC(1, R_MIN, 400, 0, 0, 2),
        REC(0, R_MIN, 500, 0, 0, 3),
    };
    g_autofree struct virtio_freqhint_record *got = NULL;
    unsigned int num;
    uint16_t flags;
    uint8_t buf[64];

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);

    for (int i = 0; i < 2; i++) {
        submit(qts, fh, buf, build_batch(buf, 1, &r[i], 1));
        got = agent_recv_hints(&num, &flags);
        g_assert_cmpuint(num, ==, 1);
        assert_record(&got[0], &r[i]);
        g_clear_pointer(&got, g_free);
        qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    }

    /* Two in a row: the first at once, the second at the window's end. */
    submit(qts, fh, buf, build_batch(buf, 1, &r[1], 1));
    submit(qts, fh, buf, build_batch(buf, 1, &r[2], 1));
    got = agent_recv_hints(&num, &flags);
    g_clear_pointer(&got, g_free);
    agent_ping(0x9e7);
    qtest_clock_step(qts, RATE_WINDOW_MS * MS);
    got = agent_recv_hints(&num, &flags);
    g_assert_cmpuint(num, ==, 1);
    assert_record(&got[0], &r[2]);
}

/*
 * DEV-22: a driver that did not negotiate VIRTIO_FREQHINT_F_HOST_FREQ sees
 * no classes and gets no snapshot for a change of them alone.
 */
static void test_host_freq_not_negotiated(void *obj, void *data,
                                          QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    HostFreqFrame hf;
    GrantsFrame gf;
    Feedback f;
    size_t len;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake_events(qts, fh);

    /* Start over as a driver without the feature. */
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    driver_reinit(fh, F_ALL & ~F_HOST_FREQ & ~F_CUR_FREQ, 4, 0);
    g_free(cpu_ids_recv(qts, fh));
    g_assert_cmpuint(feedback_expect_defaults(qts, fh, true, false), ==, 1);

    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    len = host_freq_frame(&hf, 2);
    agent_send(FH_MSG_HOST_FREQ, &hf, len);
    agent_ping(1);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    event_assert_none(qts, fh);

    /* The operator bounds are news to any driver; classes stay hidden. */
    grants_frame(&gf, 100, 1024, 200, 800);
    agent_send(FH_MSG_GRANTS, &gf, sizeof(gf));
    feedback_recv(qts, fh, &f, false);
    g_assert_cmpuint(f.seq, ==, 2);
    g_assert_cmpuint(f.op_floor, ==, 100);
    g_assert_cmpuint(f.num_classes, ==, 0);
    g_assert_cmphex(f.freq_class[0], ==, VIRTIO_FREQHINT_NO_FREQ_CLASS);
}

/* A CUR_FREQ frame for NUM_VCPUS vCPUs. */
typedef struct {
    struct fh_msg_cur_freq h;
    uint32_t cur_khz[NUM_VCPUS];
} CurFreqFrame;

static void cur_freq_frame(CurFreqFrame *f, uint32_t khz0, uint32_t khz1)
{
    *f = (CurFreqFrame) {
        .h = { .num_vcpus = cpu_to_le16(NUM_VCPUS) },
        .cur_khz = { cpu_to_le32(khz0), cpu_to_le32(khz1) },
    };
}

static void agent_send_host_freq(void)
{
    HostFreqFrame hf;
    size_t len = host_freq_frame(&hf, 2);

    agent_send(FH_MSG_HOST_FREQ, &hf, len);
}

static void agent_send_cur_freq(uint32_t khz0, uint32_t khz1)
{
    CurFreqFrame f;

    cur_freq_frame(&f, khz0, khz1);
    agent_send(FH_MSG_CUR_FREQ, &f, sizeof(f));
}

/* Expect a CUR_FREQ of @khz0, @khz1 (6.8a); returns its seq. */
static uint32_t cur_freq_expect(QTestState *qts, QVirtioFreqHint *fh,
                                uint32_t khz0, uint32_t khz1, bool step)
{
    uint32_t len;
    g_autofree uint8_t *p = event_recv(qts, fh, &len, step);

    g_assert_cmpuint(lduw_le_p(p), ==, VIRTIO_FREQHINT_MSG_CUR_FREQ);
    g_assert_cmpuint(len, ==, 8 + 4 * num_vcpus);
    g_assert_cmpuint(lduw_le_p(p + 2), ==, num_vcpus);
    g_assert_cmpuint(ldl_le_p(p + 8), ==, khz0);
    g_assert_cmpuint(ldl_le_p(p + 12), ==, khz1);
    return ldl_le_p(p + 4);
}

/*
 * The agent is up and has sent HOST_FREQ: vCPU 0 in class 1 (400000 ..
 * 2000000 kHz), vCPU 1 in class 0 (800000 .. 3000000), or without a
 * class if @no_class1.  The driver has the snapshot.
 */
static void cur_freq_setup(QTestState *qts, QVirtioFreqHint *fh,
                           bool no_class1)
{
    HostFreqFrame hf;
    Feedback fb;
    size_t len = host_freq_frame(&hf, 2);

    if (no_class1) {
        ((uint8_t *)&hf)[len - 1] = VIRTIO_FREQHINT_NO_FREQ_CLASS;
    }
    agent_handshake(qts, true);
    g_assert_cmphex(agent->features & FH_F_CUR_FREQ, ==, FH_F_CUR_FREQ);
    feedback_recv(qts, fh, &fb, true);
    g_assert_cmphex(fb.flags, ==, VIRTIO_FREQHINT_FB_ACTIVE);
    agent_send(FH_MSG_HOST_FREQ, &hf, len);
    feedback_recv(qts, fh, &fb, true);
    g_assert_cmpuint(fb.num_classes, ==, 2);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
}

/*
 * PD-20, DEV-41: the agent's current frequencies reach the driver in
 * CUR_FREQ messages, only on change, at most one per rate window, never
 * ahead of a due snapshot, all 0 when the agent goes; seq restarts at 1
 * after a reset, and the host's values stay.
 */
static void test_cur_freq(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    GrantsFrame gf;
    Feedback fb;

    g_test_queue_destroy(agent_cleanup, NULL);
    events_initial(qts, fh);
    cur_freq_setup(qts, fh, false);

    /* Leading edge: at once, without the clock moving. */
    agent_send_cur_freq(1000000, 2500000);
    g_assert_cmpuint(cur_freq_expect(qts, fh, 1000000, 2500000, false), ==,
                     1);

    /* The same values are no news. */
    agent_send_cur_freq(1000000, 2500000);
    agent_ping(1);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    event_assert_none(qts, fh);

    /* Changes in a row: the first at once, the latest a window on. */
    agent_send_cur_freq(1100000, 2500000);
    g_assert_cmpuint(cur_freq_expect(qts, fh, 1100000, 2500000, false), ==,
                     2);
    agent_send_cur_freq(1200000, 2500000);
    agent_send_cur_freq(1300000, 0);
    agent_ping(2);
    event_assert_none(qts, fh);
    qtest_clock_step(qts, RATE_WINDOW_MS * MS);
    g_assert_cmpuint(cur_freq_expect(qts, fh, 1300000, 0, false), ==, 3);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    event_assert_none(qts, fh);
    g_assert_cmpint(get_stat(qts, "cur-freq"), ==, 3);

    /*
     * A snapshot due but held by its window holds a CUR_FREQ whose own
     * window is open: the snapshot goes first.
     */
    grants_frame(&gf, 100, 900, 200, 800);
    agent_send(FH_MSG_GRANTS, &gf, sizeof(gf));
    feedback_recv(qts, fh, &fb, false);
    g_assert_cmpuint(fb.op_floor, ==, 100);
    grants_frame(&gf, 200, 900, 200, 800);
    agent_send(FH_MSG_GRANTS, &gf, sizeof(gf));
    agent_send_cur_freq(1400000, 3000000);
    agent_ping(3);
    event_assert_none(qts, fh);
    feedback_recv(qts, fh, &fb, true);
    g_assert_cmpuint(fb.op_floor, ==, 200);
    g_assert_cmpuint(cur_freq_expect(qts, fh, 1400000, 3000000, false), ==,
                     4);

    /* A reset: seq from 1, after the first snapshot; the values stay. */
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    driver_reinit(fh, F_ALL, 4, 0);
    g_free(cpu_ids_recv(qts, fh));
    feedback_recv(qts, fh, &fb, false);
    g_assert_cmpuint(fb.seq, ==, 1);
    g_assert_cmpuint(cur_freq_expect(qts, fh, 1400000, 3000000, false), ==,
                     1);

    /* The agent goes: FB_ACTIVE clear, then every value 0. */
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    close(agent->fd);
    agent->fd = -1;
    feedback_expect_defaults(qts, fh, false, true);
    g_assert_cmpuint(cur_freq_expect(qts, fh, 0, 0, true), ==, 2);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    event_assert_none(qts, fh);
    g_assert_cmpint(get_stat(qts, "cur-freq-seq"), ==, 2);

    /* A new agent: the old values do not come back with its classes. */
    cur_freq_setup(qts, fh, false);
    event_assert_none(qts, fh);
    agent_send_cur_freq(0, 2000000);
    g_assert_cmpuint(cur_freq_expect(qts, fh, 0, 2000000, false), ==, 3);
    assert_running(qts);
}

/*
 * DEV-21, DEV-41: an invalid CUR_FREQ closes the agent link with the
 * reason HOST_FREQ's would, and no value of it reaches the driver.
 */
static void test_cur_freq_invalid(void *obj, void *data,
                                  QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    CurFreqFrame f;
    struct {
        const char *what;
        unsigned int off;
        unsigned int size;      /* 2 or 4 bytes at off */
        uint32_t val;
        int len_delta;
        bool no_class1;         /* vCPU 1 without a class */
        bool no_host_freq;      /* before any HOST_FREQ */
        uint16_t reason;
    } bad[] = {
        { "num_vcpus", 0, 2, NUM_VCPUS + 1 },
        { "reserved", 2, 2, 1 },
        { "reserved2", 4, 4, 1 },
        { "short", 0, 0, 0, -1 },
        { "long", 0, 0, 0, 4 },
        { "below the class", 8, 4, 399999 },
        { "above the class", 12, 4, 3000001 },
        { "vCPU without a class", 0, 0, 0, 0, true },
        { "before HOST_FREQ", 0, 0, 0, 0, false, true, FH_CLOSE_PROTOCOL },
    };

    g_test_queue_destroy(agent_cleanup, NULL);
    events_initial(qts, fh);

    for (int i = 0; i < ARRAY_SIZE(bad); i++) {
        uint8_t *b = (uint8_t *)&f;
        size_t len = sizeof(f) + bad[i].len_delta;
        g_autofree uint8_t *buf = g_malloc0(len);

        g_test_message("bad CUR_FREQ: %s", bad[i].what);
        if (bad[i].no_host_freq) {
            agent_handshake(qts, true);
            feedback_expect_defaults(qts, fh, true, true);
        } else {
            cur_freq_setup(qts, fh, bad[i].no_class1);
        }
        cur_freq_frame(&f, 1000000, 2500000);
        if (bad[i].size == 4) {
            stl_le_p(b + bad[i].off, bad[i].val);
        } else if (bad[i].size == 2) {
            stw_le_p(b + bad[i].off, bad[i].val);
        }
        memcpy(buf, &f, MIN(len, sizeof(f)));
        agent_send(FH_MSG_CUR_FREQ, buf, len);
        agent_expect_close(bad[i].reason ? bad[i].reason
                                         : FH_CLOSE_MALFORMED);
        /* Nothing of it was taken: the driver never hears of a value. */
        feedback_expect_defaults(qts, fh, false, true);
        qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
        event_assert_none(qts, fh);
        g_assert_cmpint(get_stat(qts, "cur-freq"), ==, 0);
    }

    /* Not accepted: not valid at all. */
    agent->accept_features = FH_F_ALL & ~FH_F_CUR_FREQ;
    cur_freq_setup(qts, fh, false);
    agent_send_cur_freq(1000000, 2500000);
    agent_expect_close(FH_CLOSE_PROTOCOL);
    feedback_expect_defaults(qts, fh, false, true);

    /* PD-12: FH_F_CUR_FREQ needs FH_F_HOST_FREQ on the link too. */
    agent->accept_features = FH_F_ALL & ~FH_F_HOST_FREQ;
    agent_welcome(qts, true);
    agent_expect_close(FH_CLOSE_MALFORMED);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    event_assert_none(qts, fh);
    g_assert_cmpint(get_stat(qts, "cur-freq"), ==, 0);
    assert_running(qts);
}

/*
 * DEV-41: a driver that did not negotiate VIRTIO_FREQHINT_F_CUR_FREQ gets
 * no CUR_FREQ; the agent's values are taken all the same.
 */
static void test_cur_freq_not_negotiated(void *obj, void *data,
                                         QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    QDict *stats;
    QList *vcpus;

    g_test_queue_destroy(agent_cleanup, NULL);
    events_initial(qts, fh);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    driver_reinit(fh, F_ALL & ~F_CUR_FREQ, 4, 0);
    events_initial(qts, fh);
    cur_freq_setup(qts, fh, false);

    agent_send_cur_freq(1000000, 2500000);
    agent_ping(1);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    event_assert_none(qts, fh);
    g_assert_cmpint(get_stat(qts, "cur-freq"), ==, 0);
    stats = get_stats(qts);
    vcpus = qdict_get_qlist(stats, "vcpus");
    g_assert_cmpint(qdict_get_int(qobject_to(QDict, qlist_peek(vcpus)),
                                  "cur-khz"), ==, 1000000);
    qobject_unref(stats);

    /* And none when the agent goes: only the snapshot. */
    close(agent->fd);
    agent->fd = -1;
    feedback_expect_defaults(qts, fh, false, true);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    event_assert_none(qts, fh);
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
    struct virtio_freqhint_record none = REC(1, 0, 0, 0, 0, 0);
    g_autofree struct virtio_freqhint_record *got = NULL;
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
    /* DEV-10: the vCPU that held a hint has none on the host either. */
    got = agent_recv_hints(&num, &flags);
    g_assert_cmpuint(num, ==, 1);
    g_assert_cmpuint(flags, ==, 0);
    assert_record(&got[0], &none);

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
 * The agent stops reading and floods PINGs until the PONGs fill the socket
 * and a HINTS frame is refused.  @last gets each vCPU's latest record.
 * Returns the number of rounds.
 */
static unsigned int fill_socket(QTestState *qts, QVirtioFreqHint *fh,
                                struct virtio_freqhint_record *last)
{
    struct fh_msg_ping ping = { .cookie = cpu_to_le64(7) };
    uint8_t buf[64];
    unsigned int round;

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
    return round;
}

/*
 * Read what the device wrote while the agent did not read, up to and
 * including the first FULL frame; returns that frame's records.  PONGs and
 * delta frames of rounds before @round - 1 may come first.
 */
static struct virtio_freqhint_record *agent_read_to_full(unsigned int round)
{
    unsigned int pongs = 0;

    for (;;) {
        uint16_t type;
        uint32_t len;
        g_autofree uint8_t *p = agent_recv(&type, &len);

        if (type == FH_MSG_PONG) {
            pongs++;
            continue;
        }
        g_assert_cmpuint(type, ==, FH_MSG_HINTS);
        if (lduw_le_p(p + 10) & FH_HINTS_F_FULL) {
            g_assert_cmpuint(len, ==, 16 + 16 * NUM_VCPUS);
            g_assert_cmpuint(pongs, >, 0);
            return g_memdup2(p + 16, 16 * NUM_VCPUS);
        }
        /* A delta frame: one record of a round before the last. */
        g_assert_cmpuint(len, ==, 16 + 16);
        g_assert_cmpuint(ldl_le_p(p + 16 + 12), <, round - 1);
    }
}

/*
 * PD-10: a frame the socket cannot take without blocking is dropped whole
 * and counted, and nothing is retried while the socket stays full; once it
 * is writable again the current state goes out, as a FULL frame.
 */
static void test_backpressure(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record last[NUM_VCPUS];
    g_autofree struct virtio_freqhint_record *got = NULL;
    unsigned int round;
    int64_t dropped;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);
    round = fill_socket(qts, fh, last);

    /* No timer keeps trying (and dropping) while the socket is full. */
    dropped = get_stat(qts, "dropped");
    qtest_clock_step(qts, 10 * FORWARD_MS * MS);
    g_assert_cmpint(get_stat(qts, "dropped"), ==, dropped);

    /*
     * Read again, and let no time pass on the device's clock: the FULL
     * frame follows as soon as the socket drains.
     */
    got = agent_read_to_full(round);
    assert_record(&got[0], &last[0]);
    assert_record(&got[1], &last[1]);
    g_assert_cmpint(get_stat(qts, "dropped"), ==, dropped);
    g_assert_true(get_stat_bool(qts, "agent-connected"));
}

/*
 * PD-9 with a full socket: the "no hint" frame of a stop that the socket
 * did not take goes out when it drains, though the stopped VM's clock does
 * not run; the state comes back when the VM runs.
 */
static void test_stop_while_full(void *obj, void *data,
                                 QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record last[NUM_VCPUS];
    g_autofree struct virtio_freqhint_record *got = NULL;
    unsigned int round;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);
    round = fill_socket(qts, fh, last);

    qtest_qmp_assert_success(qts, "{'execute': 'stop'}");
    got = agent_read_to_full(round);
    for (int i = 0; i < NUM_VCPUS; i++) {
        struct virtio_freqhint_record none = REC(i, 0, 0, 0, 0, 0);

        assert_record(&got[i], &none);
    }
    agent_ping(0x9e7);

    qtest_qmp_assert_success(qts, "{'execute': 'cont'}");
    agent_expect_full(last);
}

/*
 * A reply the socket takes only in part.  Over TCP with a small receive
 * buffer, an agent that floods PINGs, with a GRANTS now and then, and reads
 * nothing fills the device's socket until frames go out in part.  The
 * device finishes such a frame when the socket drains and answers the
 * latest PING (PB-4, PB-13): the link stays up and the stream framed.  Had
 * it closed the connection, nothing left in the closed connection's
 * buffer (a GRANTS) may be acted on: the bounds stay at their defaults.
 */
static void test_tcp_flood(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QTestState *qts = global_qtest;
    enum { PINGS = 200, BURSTS = 2500 };
    GrantsFrame g;
    size_t burst_len = PINGS * 16 + 8 + sizeof(g);
    g_autofree uint8_t *burst = g_malloc0(burst_len);
    uint64_t cookie = 0;
    bool closed = false;
    unsigned int pongs = 0;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);
    g_assert_cmpint(fcntl(agent->fd, F_SETFL, O_NONBLOCK), ==, 0);

    grants_frame(&g, 100, 900, 0, 1024);
    stl_le_p(burst + PINGS * 16, sizeof(g));
    stw_le_p(burst + PINGS * 16 + 4, FH_MSG_GRANTS);
    memcpy(burst + PINGS * 16 + 8, &g, sizeof(g));
    for (int b = 0; b < BURSTS && !closed; b++) {
        size_t off = 0;

        for (int i = 0; i < PINGS; i++) {
            stl_le_p(burst + 16 * i, 8);
            stw_le_p(burst + 16 * i + 4, FH_MSG_PING);
            stq_le_p(burst + 16 * i + 8, ++cookie);
        }
        while (off < burst_len) {
            struct pollfd pfd = { .fd = agent->fd, .events = POLLOUT };
            ssize_t n;

            g_assert_cmpint(poll(&pfd, 1, TIMEOUT_MS), ==, 1);
            n = send(agent->fd, burst + off, burst_len - off, MSG_NOSIGNAL);
            if (n < 0 && errno == EAGAIN) {
                continue;
            }
            if (n <= 0) {
                closed = true;
                break;
            }
            off += n;
        }
    }
    if (closed) {
        /* The closed connection's unread frames must not count. */
        g_assert_cmpint(get_stat(qts, "operator-floor"), ==, 0);
        g_assert_cmpint(get_stat(qts, "operator-ceiling"), ==, 1024);
        g_assert_false(get_stat_bool(qts, "agent-connected"));
    }
    g_assert_false(closed);

    /* Everything the device wrote is whole frames; the last PING answered. */
    g_assert_cmpint(fcntl(agent->fd, F_SETFL, 0), ==, 0);
    for (;;) {
        uint16_t type;
        uint32_t len;
        g_autofree uint8_t *p = agent_recv(&type, &len);

        g_assert_cmpuint(type, ==, FH_MSG_PONG);
        g_assert_cmpuint(len, ==, 8);
        pongs++;
        if (ldq_le_p(p) == cookie) {
            break;
        }
    }
    g_test_message("%" PRIu64 " PINGs, %u PONGs", cookie, pongs);
    /* The socket was full: some PINGs got no PONG of their own. */
    g_assert_cmpuint(pongs, <, cookie);
    g_assert_cmpint(get_stat(qts, "operator-floor"), ==, 100);
    g_assert_cmpint(get_stat(qts, "operator-ceiling"), ==, 900);
    agent_ping(cookie + 1);
    g_assert_true(get_stat_bool(qts, "agent-connected"));
    assert_running(qts);
}

/*
 * PB-7: the device closes with TIMEOUT after three keepalive intervals
 * without a frame; any frame starts the count again.
 */
static void test_keepalive(void *obj, void *data, QGuestAllocator *t_alloc)
{
    /* The shortest interval: the keepalive timer is real time. */
    const int interval_ms = FH_KEEPALIVE_MIN_MS;
    gint64 start;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent->keepalive_ms = interval_ms;
    agent_handshake(global_qtest, true);

    /* Four intervals of PINGs half an interval apart: the link stays up. */
    for (int i = 0; i < 8; i++) {
        agent_ping(i);
        g_usleep(interval_ms / 2 * 1000);
    }
    agent_ping(1000);
    start = g_get_monotonic_time();
    agent_expect_close(FH_CLOSE_TIMEOUT);
    g_assert_cmpint(g_get_monotonic_time() - start, >=,
                    (FH_KEEPALIVE_MISSES * interval_ms - 50) * 1000);
    g_assert_false(get_stat_bool(global_qtest, "agent-connected"));
}

/*
 * DEV-33, DEV-37: one snapshot, in one buffer, per change of the host
 * state, on the leading edge; none for a change that changes nothing.
 */
static void test_feedback(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    GrantsFrame g;
    Feedback f;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake_events(qts, fh);
    for (int i = 0; i < 3; i++) {
        qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
        grants_frame(&g, 100, 900, 200 + 100 * i, 800);
        agent_send(FH_MSG_GRANTS, &g, sizeof(g));
        feedback_recv(qts, fh, &f, false);
        g_assert_cmpuint(f.seq, ==, 3 + i);
        g_assert_cmphex(f.flags, ==, VIRTIO_FREQHINT_FB_AGENT);
        g_assert_cmpuint(f.op_floor, ==, 100);
        g_assert_cmpuint(f.floor[0], ==, 200 + 100 * i);
        g_assert_cmpuint(f.ceiling[0], ==, 800);
        event_assert_none(qts, fh);
    }
    /* The same grants again: no news. */
    agent_send(FH_MSG_GRANTS, &g, sizeof(g));
    agent_ping(1);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    event_assert_none(qts, fh);
    g_assert_cmpint(get_stat(qts, "feedback"), ==, 5);
    g_assert_cmpint(get_stat(qts, "feedback-seq"), ==, 5);
}

/*
 * DEV-35: at most one snapshot per rate window: the first change at once,
 * the burst that follows as one snapshot of its latest state when the
 * window ends.
 */
static void test_feedback_rate(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    GrantsFrame g;
    Feedback f;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake_events(qts, fh);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    for (int i = 1; i <= 5; i++) {
        grants_frame(&g, 10 * i, 900, 0, 1024);
        agent_send(FH_MSG_GRANTS, &g, sizeof(g));
        agent_ping(i);
        if (i == 1) {
            feedback_recv(qts, fh, &f, false);
            g_assert_cmpuint(f.op_floor, ==, 10);
        }
        event_assert_none(qts, fh);
    }
    qtest_clock_step(qts, (RATE_WINDOW_MS - 1) * MS);
    event_assert_none(qts, fh);
    qtest_clock_step(qts, MS);
    feedback_recv(qts, fh, &f, false);
    g_assert_cmpuint(f.seq, ==, 4);
    g_assert_cmpuint(f.op_floor, ==, 50);
    qtest_clock_step(qts, 5 * RATE_WINDOW_MS * MS);
    event_assert_none(qts, fh);
    g_assert_cmpint(get_stat(qts, "feedback"), ==, 4);
}

/*
 * The agent up, then the driver starts over with two event buffers only,
 * which CPU_IDS and the first snapshot (seq 1) take: the next snapshot
 * finds none.
 */
static void driver_restart_two_buffers(QTestState *qts, QVirtioFreqHint *fh)
{
    agent_handshake_events(qts, fh);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    event_repost = false;
    driver_reinit(fh, F_ALL, 2, 0);
    g_free(cpu_ids_recv(qts, fh));
    g_assert_cmpuint(feedback_expect_defaults(qts, fh, true, false), ==, 1);
}

/*
 * DEV-35, DEV-36: with no eventq buffer posted a due snapshot waits as
 * "pending", latest state wins, nothing queues, and the hint queue and
 * the agent link go on meanwhile; the next posted buffer gets the one
 * snapshot.
 */
static void test_feedback_no_buffer(void *obj, void *data,
                                    QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record r = REC(0, R_MIN, 300, 0, 0, 1);
    g_autofree struct virtio_freqhint_record *got = NULL;
    unsigned int num;
    uint16_t flags;
    uint8_t buf[64];
    int64_t snapshots;
    GrantsFrame g;
    Feedback f;

    g_test_queue_destroy(agent_cleanup, NULL);
    driver_restart_two_buffers(qts, fh);

    for (int i = 1; i <= 3; i++) {
        qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
        grants_frame(&g, 100 * i, 900, 0, 1024);
        agent_send(FH_MSG_GRANTS, &g, sizeof(g));
        agent_ping(i);
    }
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    g_assert_cmpint(get_stat(qts, "feedback"), ==, 3);
    /*
     * Kicks without a buffer: the pending snapshot is not even built, so a
     * driver that kicks and never posts costs O(1) per kick.
     */
    snapshots = get_stat(qts, "snapshots");
    for (int i = 0; i < 100; i++) {
        fh->vdev->bus->virtqueue_kick(fh->vdev, fh->eventq);
    }
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    g_assert_cmpint(get_stat(qts, "snapshots") - snapshots, <=, 1);

    wait_used(qts, fh, submit(qts, fh, buf, build_batch(buf, 1, &r, 1)));
    got = agent_recv_hints(&num, &flags);
    assert_record(&got[0], &r);

    qvirtio_freqhint_post_event(fh, fh->event_buf_size);
    feedback_recv(qts, fh, &f, false);
    g_assert_cmpuint(f.seq, ==, 2);
    g_assert_cmpuint(f.op_floor, ==, 300);
    qvirtio_freqhint_post_event(fh, fh->event_buf_size);
    qtest_clock_step(qts, 5 * RATE_WINDOW_MS * MS);
    event_assert_none(qts, fh);
}

/*
 * A driver aims an event buffer at the device's own registers: the
 * snapshot's zero at offset 20 of a write into common_cfg would set
 * device_status to 0 and reset the device in the middle of the write.
 * Event buffers are written under the transport's reentrancy guard, so
 * the write is blocked and the device keeps running.
 */
static void test_event_reentrancy(void *obj, void *data,
                                  QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    QVirtioPCIDevice *pci = container_of(fh->vdev, QVirtioPCIDevice, vdev);
    uint64_t cfg = pci->bar.addr + pci->common_cfg_offset;
    uint32_t head;
    GrantsFrame g;

    g_test_queue_destroy(agent_cleanup, NULL);
    g_assert_false(pci->bar.is_io);
    driver_restart_two_buffers(qts, fh);

    head = qvirtqueue_add(qts, fh->eventq, cfg, fh->event_buf_size, true,
                          false);
    qvirtqueue_kick(qts, fh->vdev, fh->eventq, head);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    grants_frame(&g, 100, 900, 0, 1024);
    agent_send(FH_MSG_GRANTS, &g, sizeof(g));
    agent_ping(1);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);

    g_assert_cmpint(get_stat(qts, "feedback"), ==, 4);
    g_assert_cmphex(fh->vdev->bus->get_status(fh->vdev) &
                    VIRTIO_CONFIG_S_DRIVER_OK, ==, VIRTIO_CONFIG_S_DRIVER_OK);
    g_assert_false(get_stat_bool(qts, "broken"));
    assert_running(qts);
}

static void wait_needs_reset(QTestState *qts, QVirtioDevice *vdev)
{
    gint64 start = g_get_monotonic_time();

    while (!(vdev->bus->get_status(vdev) & VIRTIO_CONFIG_S_NEEDS_RESET)) {
        g_assert_cmpint(g_get_monotonic_time() - start, <=,
                        TIMEOUT_MS * 1000);
        qtest_clock_step(qts, MS);
    }
}

/* DEV-31: an eventq buffer shorter than event_buf_size breaks the device. */
static void test_event_short(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;

    g_test_queue_destroy(agent_cleanup, NULL);
    events_initial(qts, fh);
    driver_reinit(fh, F_ALL, 0, 0);
    qvirtio_freqhint_post_event(fh, fh->event_buf_size - 1);
    wait_needs_reset(qts, fh->vdev);
    g_assert_true(get_stat_bool(qts, "broken"));
    g_assert_false(qvirtqueue_get_buf(qts, fh->eventq, NULL, NULL));
    assert_running(qts);
}

/* Write the driver features through the modern common configuration. */
static void write_features(QVirtioDevice *vdev, uint64_t features)
{
    QVirtioPCIDevice *dev = container_of(vdev, QVirtioPCIDevice, vdev);

    for (int sel = 0; sel < 2; sel++) {
        qpci_io_writel(dev->pdev, dev->bar,
                       dev->common_cfg_offset + VIRTIO_PCI_COMMON_GFSELECT,
                       sel);
        qpci_io_writel(dev->pdev, dev->bar,
                       dev->common_cfg_offset + VIRTIO_PCI_COMMON_GF,
                       features >> (32 * sel));
    }
}

/* Negotiate @features after a reset; returns whether FEATURES_OK stuck. */
static bool try_features(QVirtioDevice *vdev, uint64_t features)
{
    uint8_t status;

    qvirtio_reset(vdev);
    qvirtio_set_acknowledge(vdev);
    qvirtio_set_driver(vdev);
    write_features(vdev, features);
    status = vdev->bus->get_status(vdev) | VIRTIO_CONFIG_S_FEATURES_OK;
    vdev->bus->set_status(vdev, status);
    return vdev->bus->get_status(vdev) & VIRTIO_CONFIG_S_FEATURES_OK;
}

/*
 * DEV-1, DEV-28 (issue 26 bug 7), DEV-40: FEATURES_OK fails for a driver
 * without VIRTIO_F_VERSION_1, for HOST_FREQ without FEEDBACK and for
 * CUR_FREQ without HOST_FREQ, on any transport (the check is the
 * device's, not the PCI proxy's).
 */
static void test_features_refused(void *obj, void *data,
                                  QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QVirtioDevice *vdev = fh->vdev;

    g_test_queue_destroy(agent_cleanup, NULL);
    g_assert_false(try_features(vdev, F_ALL & ~F_VERSION_1));
    g_assert_false(try_features(vdev, F_ALL & ~F_FEEDBACK));
    g_assert_false(try_features(vdev, F_ALL & ~F_HOST_FREQ));
    g_assert_false(try_features(vdev, F_ALL & ~F_HOST_FREQ & ~F_FEEDBACK));
    g_assert_true(try_features(vdev, F_ALL & ~F_HOST_FREQ & ~F_FEEDBACK &
                                     ~F_CUR_FREQ));
    g_assert_true(try_features(vdev, F_ALL & ~F_CUR_FREQ));
    g_assert_true(try_features(vdev, F_VERSION_1));
    g_assert_true(try_features(vdev, F_ALL));
    g_assert_false(get_stat_bool(global_qtest, "broken"));
}

/*
 * Issue 26 bug 1: x-query-virtio-status and HMP "info virtio-status" name
 * the device's features instead of aborting QEMU.
 */
static void test_virtio_status(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QTestState *qts = global_qtest;
    const char *path = "/machine/peripheral/" QVIRTIO_FREQHINT_ID
                       "/virtio-backend";
    QDict *rsp, *ret, *host;
    const QListEntry *e;
    g_autofree char *hmp = NULL;
    int named = 0;

    g_test_queue_destroy(agent_cleanup, NULL);
    rsp = qtest_qmp(qts, "{'execute': 'x-query-virtio-status',"
                    " 'arguments': {'path': %s}}", path);
    g_assert_true(qdict_haskey(rsp, "return"));
    ret = qdict_get_qdict(rsp, "return");
    g_assert_cmpint(qdict_get_int(ret, "device-id"), ==, VIRTIO_ID_FREQHINT);
    g_assert_cmpstr(qdict_get_str(ret, "name"), ==, "virtio-freqhint");
    host = qdict_get_qdict(ret, "host-features");
    QLIST_FOREACH_ENTRY(qdict_get_qlist(host, "dev-features"), e) {
        const char *f = qstring_get_str(qobject_to(QString,
                                                   qlist_entry_obj(e)));

        named += g_str_has_prefix(f, "VIRTIO_FREQHINT_F_");
    }
    g_assert_cmpint(named, ==, 5);
    /* Bit 30 is QEMU's VIRTIO_F_BAD_FEATURE; no device bit is unnamed. */
    g_assert_cmphex(qdict_get_try_int(host, "unknown-dev-features", 0) &
                    0xffffff, ==, 0);
    qobject_unref(rsp);

    hmp = qtest_hmp(qts, "info virtio-status %s", path);
    g_assert_nonnull(strstr(hmp, "VIRTIO_FREQHINT_F_CPU_ID"));
    g_assert_nonnull(strstr(hmp, "VIRTIO_FREQHINT_F_CUR_FREQ"));
    assert_running(qts);
}

/*
 * Issue 26 bug 2, DEV-8/DEV-10 with the forward bound: a guest that resets
 * the device in a loop costs the agent nothing while no vCPU holds a hint,
 * and no more than one frame per forward interval when it gives one after
 * every reset.
 */
static void test_reset_loop(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    const int loops = 20;
    uint8_t buf[64];
    int frames = 0;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake_events(qts, fh);
    for (int i = 0; i < loops / 2; i++) {
        driver_reinit(fh, F_ALL, 0, 0);
        qtest_clock_step(qts, MS);
    }
    agent_assert_quiet(qts);

    for (int i = 0; i < loops; i++) {
        struct virtio_freqhint_record r = REC(i % NUM_VCPUS, R_MIN, 100 + i,
                                              0, 0, i);

        driver_reinit(fh, F_ALL, 0, 0);
        submit(qts, fh, buf, build_batch(buf, 1, &r, 1));
        qtest_clock_step(qts, MS);
    }
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    /* Every frame the device sent comes before the PONG. */
    agent_send(FH_MSG_PING, &(struct fh_msg_ping) { .cookie = 1 },
               sizeof(struct fh_msg_ping));
    for (;;) {
        uint16_t type;
        uint32_t len;
        g_autofree uint8_t *p = agent_recv(&type, &len);

        if (type == FH_MSG_PONG) {
            break;
        }
        g_assert_cmpuint(type, ==, FH_MSG_HINTS);
        frames++;
    }
    g_test_message("%d resets with a hint each in %d ms: %d frames", loops,
                   loops, frames);
    g_assert_cmpint(frames, >=, 1);
    /* 20 ms of resets, then two windows: one frame per interval at most. */
    g_assert_cmpint(frames, <=,
                    (loops + 2 * RATE_WINDOW_MS) / FORWARD_MS + 1);
    assert_running(qts);
}

/*
 * Issue 26 bug 6: a kick that reaches the device while the VM is stopped
 * is not handled then (no used ring write, nothing counted); the queue
 * runs when the VM runs again.
 */
static void test_stopped_kick(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record r = REC(0, R_MIN, 400, 0, 0, 5);
    g_autofree struct virtio_freqhint_record *got = NULL;
    uint16_t used_idx, flags;
    unsigned int num;
    uint32_t head;
    uint8_t buf[64];

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake_events(qts, fh);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    qtest_qmp_assert_success(qts, "{'execute': 'stop'}");
    agent_expect_no_hints();

    used_idx = qtest_readw(qts, fh->hintq->used + 2);
    head = submit(qts, fh, buf, build_batch(buf, 1, &r, 1));
    g_assert_cmpint(get_stat(qts, "notifications"), ==, 0);
    g_assert_cmpuint(qtest_readw(qts, fh->hintq->used + 2), ==, used_idx);
    g_assert_cmpint(get_stat(qts, "buffers"), ==, 0);
    agent_assert_quiet(qts);

    qtest_qmp_assert_success(qts, "{'execute': 'cont'}");
    agent_expect_no_hints();
    wait_used(qts, fh, head);
    qtest_clock_step(qts, FORWARD_MS * MS);
    got = agent_recv_hints(&num, &flags);
    g_assert_cmpuint(num, ==, 1);
    assert_record(&got[0], &r);
}

/*
 * Issue 26 bug 10: a driver that clears DRIVER_OK without a reset, with
 * buffers queued, leaves no rate timer running for ever; setting DRIVER_OK
 * again runs the queue.
 */
static void test_driver_ok_cleared(void *obj, void *data,
                                   QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QVirtioDevice *vdev = fh->vdev;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record r[2] = {
        REC(0, R_MIN, 100, 0, 0, 1),
        REC(0, R_MIN, 200, 0, 0, 2),
    };
    uint8_t status = vdev->bus->get_status(vdev);
    uint32_t head;
    int64_t wakeups;
    uint8_t buf[64];

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);
    wait_used(qts, fh, submit(qts, fh, buf, build_batch(buf, 1, &r[0], 1)));
    /* Within the window the kick opened: this one waits for its end. */
    head = submit(qts, fh, buf, build_batch(buf, 1, &r[1], 1));
    vdev->bus->set_status(vdev, status & ~VIRTIO_CONFIG_S_DRIVER_OK);
    wakeups = get_stat(qts, "wakeups");
    for (int i = 0; i < 20; i++) {
        qtest_clock_step(qts, RATE_WINDOW_MS * MS);
    }
    g_assert_cmpint(get_stat(qts, "wakeups"), ==, wakeups);
    g_assert_cmpint(get_stat(qts, "buffers"), ==, 1);

    vdev->bus->set_status(vdev, status);
    wait_used(qts, fh, head);
    g_assert_cmpint(get_stat(qts, "buffers"), ==, 2);
    assert_running(qts);
}

/*
 * Issue 26 bug 5: the agent link needs a socket chardev; anything else is
 * refused with an error that says so, at object-add (issue 42: the object
 * is created after the chardevs and claims its chardev when complete).
 */
static void test_chardev_not_socket(void *obj, void *data,
                                    QGuestAllocator *t_alloc)
{
    QTestState *qts = global_qtest;
    QDict *rsp;

    g_test_queue_destroy(agent_cleanup, NULL);
    qtest_qmp_assert_success(qts, "{'execute': 'chardev-add', 'arguments':"
                             " {'id': 'fhnull', 'backend': {'type': 'null',"
                             " 'data': {}}}}");
    /* A chardev that does not exist fails at object-add too (F5). */
    for (int i = 0; i < 2; i++) {
        const char *chr = i ? "nosuchchr" : "fhnull";

        rsp = qtest_qmp(qts, "{'execute': 'object-add', 'arguments':"
                        " {'qom-type': 'freqhint-agent', 'id': 'fhbad',"
                        " 'chardev': %s}}", chr);
        g_assert_true(qdict_haskey(rsp, "error"));
        g_assert_nonnull(strstr(qdict_get_str(qdict_get_qdict(rsp, "error"),
                                              "desc"),
                                i ? "not found" : "socket chardev"));
        qobject_unref(rsp);
    }
    assert_running(qts);
}

/* @rsp (taken) is an error that mentions @what. */
static void qmp_assert_error(QDict *rsp, const char *what)
{
    const char *desc;

    g_assert_true(qdict_haskey(rsp, "error"));
    desc = qdict_get_str(qdict_get_qdict(rsp, "error"), "desc");
    if (!strstr(desc, what)) {
        g_test_message("error: %s", desc);
    }
    g_assert_nonnull(strstr(desc, what));
    qobject_unref(rsp);
}

/*
 * Issue 26, shape: -object freqhint-agent,chardev= linked with backend=
 * carries the whole protocol; a backend serves one device at a time.
 */
static void test_backend_object(void *obj, void *data,
                                QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record r[2] = {
        REC(0, R_MIN, 300, 0, 0, 1),
        REC(1, R_MAX, 0, 700, 0, 2),
    };
    g_autofree struct virtio_freqhint_record *got = NULL;
    uint8_t buf[64];
    unsigned int num;
    uint16_t flags;
    QDict *rsp;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake_events(qts, fh);
    wait_used(qts, fh, submit(qts, fh, buf, build_batch(buf, 2, r, 2)));
    qtest_clock_step(qts, FORWARD_MS * MS);
    got = agent_recv_hints(&num, &flags);
    g_assert_cmpuint(num, ==, 2);
    assert_record(&got[0], &r[0]);
    assert_record(&got[1], &r[1]);

    rsp = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments': {'path':"
                    " '/machine/peripheral/" QVIRTIO_FREQHINT_ID
                    "/virtio-backend', 'property': 'backend'}}");
    g_assert_cmpstr(qdict_get_str(rsp, "return"), ==, "/objects/fhagent");
    qobject_unref(rsp);

    qmp_assert_error(qtest_qmp(qts, "{'execute': 'device_add', 'arguments':"
                               " {'driver': 'virtio-freqhint-pci',"
                               " 'id': 'fh2', 'bus': %s,"
                               " 'backend': 'fhagent'}}", hotplug_bus()),
                     "already in use");
    /* The device has no chardev= shorthand: one way to configure it. */
    qmp_assert_error(qtest_qmp(qts, "{'execute': 'device_add', 'arguments':"
                               " {'driver': 'virtio-freqhint-pci',"
                               " 'id': 'fh2', 'bus': %s,"
                               " 'chardev': 'fhchr'}}", hotplug_bus()),
                     "chardev");
    /* A backend a device uses cannot go (issue 42, F4). */
    qmp_assert_error(qtest_qmp(qts, "{'execute': 'object-del', 'arguments':"
                               " {'id': 'fhagent'}}"), "in use");
    /* The link stays up. */
    agent_ping(1);
    assert_running(qts);
}

/*
 * The null backend, named or implicit: the device serves the driver (CPU_IDS,
 * the no-agent snapshot, hints accepted and kept), and nothing is forwarded.
 */
static void test_backend_null(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record r[1] = { REC(0, R_MIN, 300, 0, 0, 1) };
    uint8_t buf[64];
    QDict *rsp;

    g_test_queue_destroy(agent_cleanup, NULL);
    events_initial(qts, fh);
    wait_used(qts, fh, submit(qts, fh, buf, build_batch(buf, 1, r, 1)));
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    g_assert_false(get_stat_bool(qts, "agent-connected"));
    g_assert_cmpint(get_stat(qts, "records"), ==, 1);
    g_assert_cmpint(get_stat(qts, "forwarded"), ==, 0);

    /*
     * Without backend=, the device makes a freqhint-null (the empty
     * backend clears the -global).
     */
    qtest_qmp_assert_success(qts, "{'execute': 'device_add', 'arguments':"
                             " {'driver': 'virtio-freqhint-pci',"
                             " 'id': 'fh2', 'bus': %s, 'backend': ''}}",
                             hotplug_bus());
    rsp = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments': {'path':"
                    " '/machine/peripheral/fh2/virtio-backend/"
                    "default-backend', 'property': 'type'}}");
    g_assert_cmpstr(qdict_get_str(rsp, "return"), ==, "freqhint-null");
    qobject_unref(rsp);
    assert_running(qts);
}

/*
 * Issue 26, interfaces: VIRTIO_RING_F_EVENT_IDX is not offered, and asking
 * for it is refused rather than silently dropped.
 */
static void test_event_idx(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;

    g_test_queue_destroy(agent_cleanup, NULL);
    g_assert_false(qvirtio_get_features(fh->vdev) &
                   (1ull << VIRTIO_RING_F_EVENT_IDX));
    qmp_assert_error(qtest_qmp(qts, "{'execute': 'device_add', 'arguments':"
                               " {'driver': 'virtio-freqhint-pci',"
                               " 'id': 'fh2', 'bus': %s, 'event_idx': true}}",
                               hotplug_bus()),
                     "does not support 'event_idx'");
    assert_running(qts);
}

/*
 * A driver using indirect descriptors: one buffer whose header and first
 * record sit in one descriptor of the table and the second record in
 * another is read as one.
 */
static void test_indirect(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    struct virtio_freqhint_record r[2] = {
        REC(0, R_MIN | R_MAX, 100, 900, 0, 1),
        REC(1, R_IDLE, 0, 0, 0, 2),
    };
    g_autofree struct virtio_freqhint_record *got = NULL;
    g_autofree QVRingIndirectDesc *indirect = NULL;
    uint64_t features;
    uint8_t buf[64];
    size_t len, first;
    uint64_t addr;
    unsigned int num;
    uint16_t flags;
    uint32_t head;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake_events(qts, fh);
    features = qvirtio_get_features(fh->vdev);
    g_assert_true(features & (1ull << VIRTIO_RING_F_INDIRECT_DESC));
    features &= ~(QVIRTIO_F_BAD_FEATURE | (1ull << VIRTIO_RING_F_EVENT_IDX));
    driver_reinit(fh, features, QVIRTIO_FREQHINT_EVENT_BUFS, 0);
    g_assert_true(fh->hintq->indirect);

    len = build_batch(buf, 2, r, 2);
    first = len - sizeof(r[1]);
    addr = guest_alloc(fh->alloc, len);
    qtest_memwrite(qts, addr, buf, len);
    indirect = qvring_indirect_desc_setup(qts, fh->vdev, fh->alloc, 2);
    qvring_indirect_desc_add(fh->vdev, qts, indirect, addr, first, false);
    qvring_indirect_desc_add(fh->vdev, qts, indirect, addr + first,
                             len - first, false);
    head = qvirtqueue_add_indirect(qts, fh->hintq, indirect);
    qvirtqueue_kick(qts, fh->vdev, fh->hintq, head);
    wait_used(qts, fh, head);
    qtest_clock_step(qts, FORWARD_MS * MS);
    got = agent_recv_hints(&num, &flags);
    g_assert_cmpuint(num, ==, 2);
    assert_record(&got[0], &r[0]);
    assert_record(&got[1], &r[1]);
    g_assert_cmpint(get_stat(qts, "rejected"), ==, 0);
    g_assert_false(get_stat_bool(qts, "broken"));
    guest_free(fh->alloc, indirect->desc);
}

/* The slot of 'addr': '0x1e' below. */
#define UNPLUG_SLOT 0x1e

/*
 * device_del of a device on its own -object freqhint-agent: the agent hears
 * CLOSE NORMAL and the hang-up, the backend is free again, and a new device
 * on it starts a new session.  x86 only (ACPI PCI hot-unplug).
 */
static void test_unplug(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QTestState *qts = global_qtest;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);

    agent_listen(&agents[1]);
    qtest_qmp_assert_success(qts, "{'execute': 'chardev-add', 'arguments':"
                             " {'id': 'fhchr2', 'backend': {'type': 'socket',"
                             " 'data': {'server': false, 'reconnect-ms': 100,"
                             " 'addr': {'type': 'unix', 'data': {'path': %s}}"
                             "}}}}", agents[1].path);
    qtest_qmp_assert_success(qts, "{'execute': 'object-add', 'arguments':"
                             " {'qom-type': 'freqhint-agent', 'id': 'fhagent2',"
                             " 'chardev': 'fhchr2'}}");
    qtest_qmp_assert_success(qts, "{'execute': 'device_add', 'arguments':"
                             " {'driver': 'virtio-freqhint-pci', 'id': 'fh2',"
                             " 'backend': 'fhagent2',"
                             " 'addr': '0x1e'}}");
    agent = &agents[1];
    agent_handshake(qts, true);

    qpci_unplug_acpi_device_test(qts, "fh2", UNPLUG_SLOT);
    agent_expect_close(FH_CLOSE_NORMAL);
    /* The first device and its agent did not notice. */
    agent = &agents[0];
    agent_ping(1);

    /* The backend serves a new device: a new connection, a new HELLO. */
    qtest_qmp_assert_success(qts, "{'execute': 'device_add', 'arguments':"
                             " {'driver': 'virtio-freqhint-pci', 'id': 'fh3',"
                             " 'backend': 'fhagent2',"
                             " 'addr': '0x1e'}}");
    agent = &agents[1];
    agent_handshake(qts, true);
    assert_running(qts);
}

/*
 * Issue 26 bug 3, DEV-24: a destination whose guest-visible constants
 * differ from the source's fails the migration.
 */
static void test_migrate_mismatch(void *obj, void *data,
                                  QGuestAllocator *t_alloc)
{
    QTestState *src = global_qtest, *dst;
    g_autofree char *uri = NULL;
    g_autoptr(GString) dst_cmd = NULL;

    g_test_queue_destroy(agent_cleanup, NULL);
    qos_invalidate_command_line();
    agent_listen(&agents[1]);
    uri = g_strdup_printf("unix:%s/migration.sock", agents[1].dir);
    dst_cmd = g_string_new(qos_get_current_command_line());
    agent_append_args(dst_cmd, &agents[1],
                      "-global virtio-freqhint-device.rate-window-ms=20");
    dst = qtest_initf("%s -incoming defer", dst_cmd->str);
    qtest_qmp_assert_success(dst, "{'execute': 'migrate-incoming',"
                             " 'arguments': {'uri': %s,"
                             " 'exit-on-error': false}}", uri);
    qtest_qmp_assert_success(src, "{'execute': 'migrate',"
                             " 'arguments': {'uri': %s}}", uri);
    wait_migration(dst, "failed");
    qtest_quit(dst);
}

/*
 * Issue 26 bug 9: the link's chardev is changed (chardev-change) to one
 * that is already connected.  Its CHR_EVENT_OPENED comes while the old
 * session is up, and ends it: the old agent's bounds go, FB_AGENT is
 * cleared until the new agent's WELCOME.
 */
static void test_chardev_change(void *obj, void *data,
                                QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    GrantsFrame g;
    Feedback f;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake_events(qts, fh);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);
    grants_frame(&g, 100, 900, 0, 1024);
    agent_send(FH_MSG_GRANTS, &g, sizeof(g));
    feedback_recv(qts, fh, &f, false);
    g_assert_cmpuint(f.op_floor, ==, 100);

    /* A client without reconnect-ms connects at once. */
    agent_listen(&agents[1]);
    qtest_qmp_assert_success(qts, "{'execute': 'chardev-change', 'arguments':"
                             " {'id': 'fhchr', 'backend': {'type': 'socket',"
                             " 'data': {'server': false, 'addr': {'type':"
                             " 'unix', 'data': {'path': %s}}}}}}",
                             agents[1].path);
    g_assert_false(get_stat_bool(qts, "agent-connected"));
    g_assert_cmpint(get_stat(qts, "operator-floor"), ==, 0);
    feedback_expect_defaults(qts, fh, false, true);

    agent = &agents[1];
    agent_welcome(qts, true);
    g_assert_cmpint(get_stat(qts, "agent-connects"), ==, 2);
    feedback_expect_defaults(qts, fh, true, true);
}

/* Find @pat in @buf exactly once; returns its offset. */
static size_t find_once(const uint8_t *buf, size_t len, const uint8_t *pat,
                        size_t plen)
{
    size_t at = SIZE_MAX;

    for (size_t i = 0; i + plen <= len; i++) {
        if (!memcmp(buf + i, pat, plen)) {
            g_assert_cmpuint(at, ==, SIZE_MAX);
            at = i;
        }
    }
    g_assert_cmpuint(at, !=, SIZE_MAX);
    return at;
}

/*
 * Issue 26 bug 11, DEV-24: a migration stream is no more trusted than the
 * guest.  A record with PERF_VALID for a driver that did not negotiate
 * VIRTIO_FREQHINT_F_PERF (forged into a saved stream: the guest cannot
 * make one) fails the load, though the guest features load after the
 * device's own state.
 */
static void test_migrate_forged_perf(void *obj, void *data,
                                     QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *src = global_qtest, *dst;
    struct virtio_freqhint_record r = REC(1, R_MIN, 777, 0, 0, 0xa5a5a5a5);
    /* The record as the vmsd saves it: big-endian fields. */
    const uint8_t saved[] = { 0, R_MIN, 0x03, 0x09, 0, 0, 0, 0,
                              0xa5, 0xa5, 0xa5, 0xa5 };
    g_autofree char *uri = NULL, *file = NULL;
    g_autofree uint8_t *stream = NULL;
    g_autoptr(GString) dst_cmd = NULL;
    uint8_t buf[64];
    gsize len;
    size_t at;

    g_test_queue_destroy(agent_cleanup, NULL);
    qos_invalidate_command_line();
    events_initial(src, fh);
    driver_reinit(fh, F_ALL & ~F_PERF, 0, 0);
    wait_used(src, fh, submit(src, fh, buf, build_batch(buf, 1, &r, 1)));
    qtest_qmp_assert_success(src, "{'execute': 'stop'}");

    agent_listen(&agents[1]);
    file = g_strdup_printf("%s/vm.state", agents[1].dir);
    uri = g_strdup_printf("file:%s", file);
    qtest_qmp_assert_success(src, "{'execute': 'migrate',"
                             " 'arguments': {'uri': %s}}", uri);
    wait_migration(src, "completed");
    /* PERF_VALID | MIN_VALID, perf 100. */
    g_assert_true(g_file_get_contents(file, (char **)&stream, &len, NULL));
    at = find_once(stream, len, saved, sizeof(saved));
    stream[at + 1] = R_MIN | R_PERF;
    stream[at + 7] = 100;
    g_assert_true(g_file_set_contents(file, (char *)stream, len, NULL));

    dst_cmd = g_string_new(qos_get_current_command_line());
    agent_append_args(dst_cmd, &agents[1], NULL);
    dst = qtest_initf("%s -incoming defer", dst_cmd->str);
    qtest_qmp_assert_success(dst, "{'execute': 'migrate-incoming',"
                             " 'arguments': {'uri': %s,"
                             " 'exit-on-error': false}}", uri);
    wait_migration(dst, "failed");
    unlink(file);
    qtest_quit(dst);
}

/*
 * Issue 26 bug 4: with -smp 3 a HOST_FREQ of one class is 87 bytes, so a
 * GRANTS sent in the same write starts at an odd offset of the device's
 * receive buffer.  Its fields are read byte-wise (the old code read them
 * through a misaligned struct pointer: undefined behaviour that UBSan
 * reports); the snapshot carries exactly what was sent.
 */
static void test_grants_unaligned(void *obj, void *data,
                                  QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;
    const unsigned int n = 3;
    uint8_t b[8 + 8 + 76 + 3 + 8 + 8 + 4 * 3] = { 0 };
    uint8_t *h = b + 8, *g;
    Feedback f;

    g_test_queue_destroy(agent_cleanup, NULL);
    num_vcpus = n;
    agent_handshake_events(qts, fh);
    qtest_clock_step(qts, 2 * RATE_WINDOW_MS * MS);

    fh_frame_hdr_put(b, 8 + 76 + n, FH_MSG_HOST_FREQ);
    stw_le_p(h, 1);
    stw_le_p(h + 2, n);
    stl_le_p(h + 8, 800000);
    stl_le_p(h + 12, 2000000);
    stw_le_p(h + 16, 16);
    h[8 + 76] = 0;
    h[8 + 76 + 1] = VIRTIO_FREQHINT_NO_FREQ_CLASS;
    h[8 + 76 + 2] = 0;
    g = h + 8 + 76 + n;
    g_assert_cmpuint((g - b) % 2, ==, 1);
    fh_frame_hdr_put(g, 8 + 4 * n, FH_MSG_GRANTS);
    stw_le_p(g + 8, 0x0101);
    stw_le_p(g + 10, 0x0302);
    stw_le_p(g + 12, n);
    for (int i = 0; i < n; i++) {
        stw_le_p(g + 16 + 4 * i, 0x0100 + i);
        stw_le_p(g + 18 + 4 * i, 0x0300 + i);
    }
    g_assert_cmpint(write(agent->fd, b, sizeof(b)), ==, sizeof(b));
    agent_ping(1);
    /*
     * Both frames came in one read: the event bottom half writes one
     * snapshot with both.  Should the read split them, HOST_FREQ goes at
     * once (leading edge) and GRANTS at the window's end.
     */
    feedback_recv(qts, fh, &f, false);
    g_assert_cmpuint(f.num_classes, ==, 1);
    if (f.op_floor == 0) {
        feedback_recv(qts, fh, &f, true);
    }
    g_assert_cmpuint(f.op_floor, ==, 0x0101);
    g_assert_cmpuint(f.op_ceiling, ==, 0x0302);
    g_assert_cmpuint(f.num_classes, ==, 1);
    for (int i = 0; i < n; i++) {
        g_assert_cmphex(f.floor[i], ==, 0x0100 + i);
        g_assert_cmphex(f.ceiling[i], ==, 0x0300 + i);
    }
    g_assert_cmphex(f.freq_class[1], ==, VIRTIO_FREQHINT_NO_FREQ_CLASS);
    g_assert_true(get_stat_bool(qts, "agent-connected"));
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

/*
 * Every case without QEMU options of its own, one after the other in one
 * QEMU, the driver starting over (reset, FEATURES_OK, DRIVER_OK) after
 * each: a QEMU per case would cost qos-test a start-up each.
 */
static void test_hostile_all(void *obj, void *data, QGuestAllocator *t_alloc)
{
    QVirtioFreqHint *fh = obj;
    QTestState *qts = global_qtest;

    g_test_queue_destroy(agent_cleanup, NULL);
    agent_handshake(qts, true);
    for (size_t i = 0; i < ARRAY_SIZE(hostile_cases); i++) {
        if (hostile_cases[i].extra_args) {
            continue;
        }
        hostile_one(fh, qts, &hostile_cases[i]);
        driver_reinit(fh, F_ALL, 0, 0);
    }
}

static const HostileCase forced_case = { "forced" };

/*
 * Issue 42 item 5: a machine of many possible vCPUs, one of them plugged,
 * over the agent link: HELLO with a thread id per possible vCPU, the FULL
 * HINTS frame with a record for each, and GRANTS back with a grant for
 * each, the last vCPU's granted range in x-stats.  Not a qos test: the pc
 * machine of the x86 graph stops at 255 vCPUs, while q35 takes
 * FH_MAX_VCPUS; virt with GICv3 takes 512.
 */
typedef struct MaxVcpusCase {
    const char *machine;
    unsigned int vcpus;
} MaxVcpusCase;

static void test_max_vcpus(const void *data)
{
    const MaxVcpusCase *c = data;
    const unsigned int n = c->vcpus;
    size_t len = sizeof(struct fh_msg_grants) + n * sizeof(struct fh_grant);
    g_autofree uint8_t *grants = g_malloc0(len);
    QTestState *qts;
    QDict *stats, *last = NULL;
    QListEntry *e;
    QList *vcpus;

    agent_listen(agent);
    num_vcpus = n;
    boot_vcpus = 1;
    qts = qtest_initf("-machine %s -smp 1,maxcpus=%u"
                      " -chardev socket,id=fhchr,path=%s,reconnect-ms=100"
                      " -object freqhint-agent,id=fhagent,chardev=fhchr"
                      " -device virtio-freqhint-pci,id=" QVIRTIO_FREQHINT_ID
                      ",backend=fhagent", c->machine, n, agent->path);
    agent_handshake(qts, true);

    stw_le_p(grants + offsetof(struct fh_msg_grants, operator_ceiling),
             VIRTIO_FREQHINT_SCALE);
    stw_le_p(grants + offsetof(struct fh_msg_grants, num_grants), n);
    for (int i = 0; i < n; i++) {
        uint8_t *g = grants + sizeof(struct fh_msg_grants) +
                     i * sizeof(struct fh_grant);

        stw_le_p(g + offsetof(struct fh_grant, floor), i % 512);
        stw_le_p(g + offsetof(struct fh_grant, ceiling), 512 + i % 512);
    }
    agent_send(FH_MSG_GRANTS, grants, len);
    agent_ping(n);

    stats = get_stats(qts);
    g_assert_cmpuint(qdict_get_int(stats, "num-vcpus"), ==, n);
    g_assert_true(qdict_get_bool(stats, "agent-connected"));
    vcpus = qdict_get_qlist(stats, "vcpus");
    g_assert_cmpuint(qlist_size(vcpus), ==, n);
    QLIST_FOREACH_ENTRY(vcpus, e) {
        last = qobject_to(QDict, qlist_entry_obj(e));
    }
    g_assert_cmpuint(qdict_get_int(last, "granted-floor"), ==,
                     (n - 1) % 512);
    g_assert_cmpuint(qdict_get_int(last, "granted-ceiling"), ==,
                     512 + (n - 1) % 512);
    qobject_unref(stats);
    qtest_quit(qts);
    agent_cleanup(NULL);
}

static const MaxVcpusCase max_vcpus_q35 = { "q35", FH_MAX_VCPUS };
static const MaxVcpusCase max_vcpus_virt = {
    "virt,gic-version=3 -cpu max", 512
};

static void register_virtio_freqhint_test(void)
{
    QOSGraphTestOptions opts = {
        .before = agent_before,
    };

    qos_add_test("config", "virtio-freqhint", test_config, &opts);
    qos_add_test("batch", "virtio-freqhint", test_batch, &opts);
    qos_add_test("rate-bound", "virtio-freqhint", test_rate_bound, &opts);
    qos_add_test("rate-burst", "virtio-freqhint", test_rate_burst, &opts);
    qos_add_test("rate-status", "virtio-freqhint", test_rate_status, &opts);
    qos_add_test("event-reentrancy", "virtio-freqhint",
                 test_event_reentrancy, &opts);
    opts.arg = (void *)&forced_case;
    qos_add_test("rate-bound-forced", "virtio-freqhint", test_rate_bound,
                 &opts);
    opts.arg = NULL;
    qos_add_test("mixed", "virtio-freqhint", test_mixed, &opts);
    qos_add_test("reset", "virtio-freqhint", test_reset, &opts);
    qos_add_test("migrate", "virtio-freqhint", test_migrate, &opts);
    qos_add_test("agent-protocol", "virtio-freqhint", test_agent_protocol,
                 &opts);
    qos_add_test("host-freq", "virtio-freqhint", test_host_freq, &opts);
    qos_add_test("leading-edge", "virtio-freqhint", test_leading_edge, &opts);
    qos_add_test("grants-not-accepted", "virtio-freqhint",
                 test_grants_not_accepted, &opts);
    qos_add_test("cur-freq", "virtio-freqhint", test_cur_freq, &opts);
    qos_add_test("cur-freq-invalid", "virtio-freqhint", test_cur_freq_invalid,
                 &opts);
    qos_add_test("cur-freq-not-negotiated", "virtio-freqhint",
                 test_cur_freq_not_negotiated, &opts);
    qos_add_test("host-freq-not-negotiated", "virtio-freqhint",
                 test_host_freq_not_negotiated, &opts);
    qos_add_test("broken-withdraws", "virtio-freqhint", test_broken_withdraws,
                 &opts);
    qos_add_test("broken-ring-withdraws", "virtio-freqhint",
                 test_broken_ring_withdraws, &opts);
    qos_add_test("backpressure", "virtio-freqhint", test_backpressure, &opts);
    qos_add_test("stop-while-full", "virtio-freqhint", test_stop_while_full,
                 &opts);
    qos_add_test("keepalive", "virtio-freqhint", test_keepalive, &opts);
    qos_add_test("feedback", "virtio-freqhint", test_feedback, &opts);
    qos_add_test("feedback-rate", "virtio-freqhint", test_feedback_rate,
                 &opts);
    qos_add_test("feedback-no-buffer", "virtio-freqhint",
                 test_feedback_no_buffer, &opts);
    qos_add_test("event-short", "virtio-freqhint", test_event_short, &opts);
    qos_add_test("features-refused", "virtio-freqhint",
                 test_features_refused, &opts);
    qos_add_test("virtio-status", "virtio-freqhint", test_virtio_status,
                 &opts);
    qos_add_test("reset-loop", "virtio-freqhint", test_reset_loop, &opts);
    qos_add_test("stopped-kick", "virtio-freqhint", test_stopped_kick, &opts);
    qos_add_test("driver-ok-cleared", "virtio-freqhint",
                 test_driver_ok_cleared, &opts);
    qos_add_test("chardev-not-socket", "virtio-freqhint",
                 test_chardev_not_socket, &opts);
    qos_add_test("migrate-mismatch", "virtio-freqhint", test_migrate_mismatch,
                 &opts);
    qos_add_test("migrate-forged-perf", "virtio-freqhint",
                 test_migrate_forged_perf, &opts);
    qos_add_test("chardev-change", "virtio-freqhint", test_chardev_change,
                 &opts);
    qos_add_test("event-idx", "virtio-freqhint", test_event_idx, &opts);
    qos_add_test("indirect", "virtio-freqhint", test_indirect, &opts);
    /* x86 only: ACPI PCI hot-unplug. */
    if (arch_is_x86()) {
        qos_add_test("unplug", "virtio-freqhint", test_unplug, &opts);
    }
    /* The cases with QEMU options of their own get a QEMU each. */
    qos_add_test("hostile-all", "virtio-freqhint", test_hostile_all, &opts);
    for (int i = 0; i < ARRAY_SIZE(hostile_cases); i++) {
        g_autofree char *name = g_strdup_printf("hostile/%s",
                                                hostile_cases[i].name);

        if (!hostile_cases[i].extra_args) {
            continue;
        }
        opts.arg = (void *)&hostile_cases[i];
        qos_add_test(name, "virtio-freqhint", test_hostile, &opts);
    }

    /* Tests with extra QEMU options */
    opts.before = agent_before_args;
    opts.arg = (void *)"-S";
    qos_add_test("vm-state", "virtio-freqhint", test_vm_state, &opts);
    opts.arg = (void *)name_args;
    qos_add_test("name", "virtio-freqhint", test_name, &opts);
    opts.arg = (void *)"-smp 3";
    qos_add_test("grants-unaligned", "virtio-freqhint", test_grants_unaligned,
                 &opts);
    /* x86 only: they plug a qemu64 CPU and know APIC ID layouts. */
    if (arch_is_x86()) {
        opts.arg = (void *)"-smp 2,maxcpus=3,sockets=3,cores=1,threads=1";
        qos_add_test("hotplug", "virtio-freqhint", test_hotplug, &opts);
        qos_add_test("hotplug-reconnect", "virtio-freqhint",
                     test_hotplug_reconnect, &opts);
        opts.arg = (void *)"-smp 2,maxcpus=6,sockets=2,cores=3,threads=1";
        qos_add_test("cpu-ids", "virtio-freqhint", test_cpu_ids, &opts);
    }
    /* arm virt: the MPIDR affinity as the firmware id. */
    if (!strcmp(qtest_get_arch(), "aarch64")) {
        opts.arg = (void *)("-machine gic-version=3 -smp "
                            stringify(MPIDR_VCPUS));
        qos_add_test("cpu-ids-mpidr", "virtio-freqhint", test_cpu_ids_mpidr,
                     &opts);
    }

    opts.arg = (void *)"-global virtio-freqhint-device.feedback=off "
                       "-global virtio-freqhint-device.host-freq=off "
                       "-global virtio-freqhint-device.cur-freq=off";
    qos_add_test("feedback-off", "virtio-freqhint", test_feedback_off, &opts);
    opts.arg = NULL;
    opts.before = agent_before;
    qos_add_test("backend-object", "virtio-freqhint", test_backend_object,
                 &opts);
    opts.before = agent_before_null;
    qos_add_test("backend-null", "virtio-freqhint", test_backend_null, &opts);
    opts.before = agent_before_null_args;
    opts.arg = (void *)(arch_is_x86() ? "-smp " stringify(RECORDS_VCPUS) :
                        "-machine gic-version=3 -smp "
                        stringify(RECORDS_VCPUS));
    qos_add_test("rate-records", "virtio-freqhint", test_rate_records, &opts);
    opts.arg = NULL;
    opts.before = agent_before_tcp;
    qos_add_test("tcp-flood", "virtio-freqhint", test_tcp_flood, &opts);

    if (qtest_has_device("virtio-freqhint-pci") &&
        qtest_has_machine(arch_is_x86() ? "q35" : "virt")) {
        qtest_add_data_func("virtio-freqhint-tests/max-vcpus",
                            arch_is_x86() ? &max_vcpus_q35 : &max_vcpus_virt,
                            test_max_vcpus);
    }
}

libqos_init(register_virtio_freqhint_test);
