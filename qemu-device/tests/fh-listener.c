/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fh-listener: the smallest agent that checks a device's handshake.
 *
 *   fh-listener SOCKET
 *
 * Listens on SOCKET, accepts one connection, validates HELLO by the rules of
 * spec/agent-protocol.md, answers WELCOME, reads the FULL HINTS frame that
 * must follow and prints both as one JSON object on stdout, then stays
 * connected until the device closes the connection.  Exits non-zero (with
 * the reason on stderr) on any deviation or after a timeout.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include <freqhint/agent_protocol.h>

#define TIMEOUT_MS 60000

static void G_GNUC_NORETURN G_GNUC_PRINTF(1, 2) fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("fh-listener: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void read_exact(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;

    while (len) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        ssize_t n;

        if (poll(&pfd, 1, TIMEOUT_MS) <= 0) {
            fail("timed out waiting for data");
        }
        n = read(fd, p, len);
        if (n <= 0) {
            fail("connection closed early");
        }
        p += n;
        len -= (size_t)n;
    }
}

/* One frame; returns the payload (g_free) and fills type and len. */
static uint8_t *read_frame(int fd, uint16_t *type, uint32_t *len)
{
    uint8_t hdr[sizeof(struct fh_frame_hdr)];
    uint8_t *payload;
    uint16_t reason;

    read_exact(fd, hdr, sizeof(hdr));
    reason = fh_frame_hdr_get(hdr, len, type);
    if (reason != FH_CLOSE_NORMAL) {
        fail("bad frame header (%u bytes, type %u): close reason %u",
             *len, *type, reason);
    }
    payload = g_malloc0(*len ? *len : 1);
    read_exact(fd, payload, *len);
    return payload;
}

static int accept_one(const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    struct pollfd pfd;
    int lfd, fd;

    if (strlen(path) >= sizeof(sun.sun_path)) {
        fail("socket path too long");
    }
    strcpy(sun.sun_path, path);
    lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
        listen(lfd, 1) < 0) {
        fail("cannot listen on %s: %s", path, g_strerror(errno));
    }
    pfd = (struct pollfd){ .fd = lfd, .events = POLLIN };
    if (poll(&pfd, 1, TIMEOUT_MS) <= 0) {
        fail("no connection");
    }
    fd = accept(lfd, NULL, NULL);
    if (fd < 0) {
        fail("accept: %s", g_strerror(errno));
    }
    close(lfd);
    unlink(path);
    return fd;
}

int main(int argc, char **argv)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = NULL;
    g_autofree uint8_t *p = NULL;
    g_autofree uint8_t *h = NULL;
    g_autofree char *uuid = NULL;
    g_autofree char *out = NULL;
    struct fh_msg_hello hello;
    struct fh_msg_hints hints;
    struct fh_msg_welcome welcome = { 0 };
    uint8_t frame[sizeof(struct fh_frame_hdr) + sizeof(welcome)];
    uint16_t type, nvcpus, nrec;
    uint32_t len, hlen;
    int fd;

    if (argc != 2) {
        fail("usage: fh-listener SOCKET");
    }
    fd = accept_one(argv[1]);

    p = read_frame(fd, &type, &len);
    if (type != FH_MSG_HELLO) {
        fail("first frame has type %u, not HELLO", type);
    }
    if (len < sizeof(hello)) {
        fail("HELLO of %u bytes", len);
    }
    memcpy(&hello, p, sizeof(hello));
    nvcpus = GUINT16_FROM_LE(hello.num_vcpus);
    if (GUINT16_FROM_LE(hello.version) != FH_PROTO_VERSION) {
        fail("HELLO version %u", GUINT16_FROM_LE(hello.version));
    }
    if (nvcpus < 1 || nvcpus > FH_MAX_VCPUS) {
        fail("HELLO num_vcpus %u", nvcpus);
    }
    if (len != sizeof(hello) + 4u * nvcpus) {
        fail("HELLO of %u bytes for %u vCPUs", len, nvcpus);
    }
    if (hello.reserved || (GUINT32_FROM_LE(hello.features) & ~FH_F_ALL)) {
        fail("HELLO reserved bits set");
    }
    if (!memchr(hello.name, 0, sizeof(hello.name))) {
        fail("HELLO name not terminated");
    }

    welcome.version = GUINT16_TO_LE(FH_PROTO_VERSION);
    welcome.features = hello.features;
    welcome.keepalive_ms = GUINT32_TO_LE(FH_KEEPALIVE_MS);
    fh_frame_hdr_put(frame, sizeof(welcome), FH_MSG_WELCOME);
    memcpy(frame + sizeof(struct fh_frame_hdr), &welcome, sizeof(welcome));
    if (write(fd, frame, sizeof(frame)) != (ssize_t)sizeof(frame)) {
        fail("cannot send WELCOME");
    }

    h = read_frame(fd, &type, &hlen);
    if (type != FH_MSG_HINTS || hlen < sizeof(hints)) {
        fail("expected HINTS after WELCOME, got type %u", type);
    }
    memcpy(&hints, h, sizeof(hints));
    nrec = GUINT16_FROM_LE(hints.num_records);
    if (!(GUINT16_FROM_LE(hints.flags) & FH_HINTS_F_FULL) || nrec != nvcpus ||
        hlen != sizeof(hints) + nrec * sizeof(struct virtio_freqhint_record)) {
        fail("first HINTS is not a FULL frame for %u vCPUs", nvcpus);
    }

    uuid = g_strdup_printf(
        "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
        "%02x%02x%02x%02x%02x%02x",
        hello.uuid[0], hello.uuid[1], hello.uuid[2], hello.uuid[3],
        hello.uuid[4], hello.uuid[5], hello.uuid[6], hello.uuid[7],
        hello.uuid[8], hello.uuid[9], hello.uuid[10], hello.uuid[11],
        hello.uuid[12], hello.uuid[13], hello.uuid[14], hello.uuid[15]);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "version");
    json_builder_add_int_value(b, GUINT16_FROM_LE(hello.version));
    json_builder_set_member_name(b, "num_vcpus");
    json_builder_add_int_value(b, nvcpus);
    json_builder_set_member_name(b, "features");
    json_builder_add_int_value(b, GUINT32_FROM_LE(hello.features));
    json_builder_set_member_name(b, "qemu_pid");
    json_builder_add_int_value(b, GUINT32_FROM_LE(hello.qemu_pid));
    json_builder_set_member_name(b, "uuid");
    json_builder_add_string_value(b, uuid);
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, hello.name);
    json_builder_set_member_name(b, "vcpu_tids");
    json_builder_begin_array(b);
    for (unsigned int i = 0; i < nvcpus; i++) {
        uint32_t tid;

        memcpy(&tid, p + sizeof(hello) + 4 * i, sizeof(tid));
        json_builder_add_int_value(b, GUINT32_FROM_LE(tid));
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "full_hints_records");
    json_builder_add_int_value(b, nrec);
    json_builder_end_object(b);

    root = json_builder_get_root(b);
    json_generator_set_root(gen, root);
    out = json_generator_to_data(gen, NULL);
    printf("%s\n", out);
    fflush(stdout);

    /* Stay connected, so the device reports an agent, until QEMU goes. */
    for (;;) {
        uint8_t buf[512];
        struct pollfd pfd = { .fd = fd, .events = POLLIN };

        if (poll(&pfd, 1, TIMEOUT_MS) <= 0) {
            fail("QEMU did not close the connection");
        }
        if (read(fd, buf, sizeof(buf)) <= 0) {
            break;
        }
    }
    close(fd);
    return 0;
}
