/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A guest on the vsock transport (spec/vsock-transport.md), for tests: it
 * speaks what virtio_freqhint's vsock transport speaks -- HELLO, then the
 * whole state after CONFIG, then HINTS -- over AF_VSOCK or a hybrid UNIX
 * socket, and prints what the host sends:
 *
 *   config features=0x7 num_vcpus=2 window=10
 *   ready
 *   feedback seq=1 flags=0x1 op=0..1024 0:0..1024/255 1:0..1024/255
 *   cur-freq seq=1 khz=1600000,0          (with --cur-freq)
 *   closed after 12 ms
 *
 * and it can be hostile on purpose (--flood, --malformed, --no-read,
 * --silent) to check the host's bounds.  Blocking I/O with poll().
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <linux/freqhint_vsock.h>
#include <linux/vm_sockets.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "fh-protocol.h"
#include "fh-testclient-lib.h"

static int fd = -1;
static uint8_t inbuf[4 + FREQHINT_VSOCK_MAX_FRAME];
static size_t in_len;
static gint64 started_us;

static void
put_frame (uint8_t *out, size_t *n, const uint8_t *msg, size_t len)
{
  fh_put_le32 (out + *n, (uint32_t) len);
  memcpy (out + *n + 4, msg, len);
  *n += 4 + len;
}

/* All of buf, or FALSE (the host closed). */
static gboolean
send_all (const uint8_t *buf, size_t len)
{
  while (len) {
    ssize_t n = send (fd, buf, len, MSG_NOSIGNAL);

    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return FALSE;
    buf += n;
    len -= (size_t) n;
  }
  return TRUE;
}

static size_t
hints_msg (uint8_t *m, const FhRecord *recs, guint n)
{
  memset (m, 0, 8 + 16 * n);
  fh_put_le16 (m, VIRTIO_FREQHINT_MSG_HINTS);
  fh_put_le16 (m + 2, (uint16_t) n);
  for (guint i = 0; i < n; i++) {
    uint8_t *r = m + 8 + 16 * i;

    fh_put_le16 (r, recs[i].vcpu);
    fh_put_le16 (r + 2, recs[i].flags);
    fh_put_le16 (r + 4, recs[i].clamp_min);
    fh_put_le16 (r + 6, recs[i].clamp_max);
    fh_put_le16 (r + 8, recs[i].perf);
    fh_put_le32 (r + 12, recs[i].seq);
  }
  return 8 + 16 * (size_t) n;
}

static gboolean
send_hints (const FhRecord *recs, guint n)
{
  static uint8_t m[FREQHINT_VSOCK_MAX_FRAME], frame[4 + FREQHINT_VSOCK_MAX_FRAME];
  size_t len = hints_msg (m, recs, n), fl = 0;

  put_frame (frame, &fl, m, len);
  return send_all (frame, fl);
}

static void
print_feedback (const uint8_t *m, uint32_t len)
{
  uint16_t nv = fh_get_le16 (m + 12);
  g_autoptr (GString) s = g_string_new (NULL);

  g_string_printf (s, "feedback seq=%u flags=0x%x op=%u..%u classes=%u", fh_get_le32 (m + 4),
                   fh_get_le16 (m + 2), fh_get_le16 (m + 8), fh_get_le16 (m + 10),
                   fh_get_le16 (m + 14));
  for (guint i = 0; i < nv && 624 + 8 * (i + 1) <= len; i++) {
    const uint8_t *v = m + 624 + 8 * i;

    g_string_append_printf (s, " %u:%u..%u/%u", i, fh_get_le16 (v), fh_get_le16 (v + 2), v[4]);
  }
  if (fh_get_le16 (m + 14))
    g_string_append_printf (s, " class0=%u..%u", fh_get_le32 (m + 16), fh_get_le32 (m + 20));
  printf ("%s\n", s->str);
}

static void
print_cur_freq (const uint8_t *m, uint32_t len)
{
  uint16_t nv = fh_get_le16 (m + 2);
  g_autoptr (GString) s = g_string_new (NULL);

  if (len != 8 + 4 * (uint32_t) nv) {
    printf ("bad cur-freq of %u bytes for %u vCPUs\n", len, nv);
    return;
  }
  g_string_printf (s, "cur-freq seq=%u khz=", fh_get_le32 (m + 4));
  for (guint i = 0; i < nv; i++)
    g_string_append_printf (s, "%s%u", i ? "," : "", fh_get_le32 (m + 8 + 4 * i));
  printf ("%s\n", s->str);
}

/*
 * Wait up to timeout_ms for a message.  1: one in *m, *len (valid until the
 * next call); 0: timeout; -1: the host closed (printed).
 */
static int
next_msg (int timeout_ms, const uint8_t **m, uint32_t *len)
{
  static size_t drop;
  gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;

  memmove (inbuf, inbuf + drop, in_len - drop);
  in_len -= drop;
  drop = 0;
  for (;;) {
    struct pollfd p = { fd, POLLIN, 0 };
    gint64 left = timeout_ms < 0 ? -1 : (deadline - g_get_monotonic_time ()) / 1000;
    ssize_t n;

    if (in_len >= 4) {
      uint32_t l = fh_get_le32 (inbuf);

      if (l < 2 || l > FREQHINT_VSOCK_MAX_FRAME) {
        printf ("bad frame from the host: %u bytes\n", l);
        return -1;
      }
      if (in_len >= 4 + l) {
        *m = inbuf + 4;
        *len = l;
        drop = 4 + l;
        return 1;
      }
    }
    if (timeout_ms >= 0 && left <= 0)
      return 0;
    if (poll (&p, 1, (int) left) == 0)
      return 0;
    n = recv (fd, inbuf + in_len, sizeof inbuf - in_len, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      printf ("closed after %" G_GINT64_FORMAT " ms\n", (g_get_monotonic_time () - started_us) / 1000);
      return -1;
    }
    in_len += (size_t) n;
  }
}

/* Read and print what the host sends for ms (-1: until it closes). FALSE: it closed. */
static gboolean
drain (int ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) ms * 1000;

  for (;;) {
    const uint8_t *m;
    uint32_t len;
    int left = ms < 0 ? -1 : (int) MAX ((end - g_get_monotonic_time ()) / 1000, 0);
    int r = next_msg (left, &m, &len);

    if (r < 0)
      return FALSE;
    if (r == 0)
      return TRUE;
    if (fh_get_le16 (m) == VIRTIO_FREQHINT_MSG_FEEDBACK)
      print_feedback (m, len);
    else if (fh_get_le16 (m) == VIRTIO_FREQHINT_MSG_CUR_FREQ)
      print_cur_freq (m, len);
    else
      printf ("message type %u of %u bytes\n", fh_get_le16 (m), len);
    fflush (stdout);
  }
}

static int
connect_to (const char *unix_path, gint64 cid, int port)
{
  int s;

  if (unix_path) {
    struct sockaddr_un sa = { .sun_family = AF_UNIX };

    g_strlcpy (sa.sun_path, unix_path, sizeof sa.sun_path);
    s = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s >= 0 && connect (s, (struct sockaddr *) &sa, sizeof sa) == 0)
      return s;
  } else {
    struct sockaddr_vm sa = { .svm_family = AF_VSOCK, .svm_cid = (unsigned) cid,
                              .svm_port = (unsigned) port };

    s = socket (AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s >= 0 && connect (s, (struct sockaddr *) &sa, sizeof sa) == 0)
      return s;
  }
  printf ("connect failed: %s\n", g_strerror (errno));
  if (s >= 0)
    close (s);
  return -1;
}

/* A vCPU thread of a stand-in VM process, named as Cloud Hypervisor names them. */
static void *
vcpu_thread (void *arg)
{
  char name[16];

  g_snprintf (name, sizeof name, "vcpu%u", GPOINTER_TO_UINT (arg));
  prctl (PR_SET_NAME, name, 0, 0, 0);
  for (;;)
    pause ();
  return NULL;
}

/* --bind-port: may this process (as uid, if >= 0) listen on a vsock port?  Printed; 0 either way. */
static int
try_bind (int port, gint64 uid)
{
  struct sockaddr_vm sa = { .svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY,
                            .svm_port = (unsigned) port };
  int s;

  if (uid >= 0 && (setgid ((gid_t) uid) < 0 || setuid ((uid_t) uid) < 0)) {
    printf ("setuid %" G_GINT64_FORMAT ": %s\n", uid, g_strerror (errno));
    return 2;
  }
  s = socket (AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0 || bind (s, (struct sockaddr *) &sa, sizeof sa) < 0 || listen (s, 1) < 0) {
    /* what happened is the answer (the caller matches it): not a failure of ours */
    printf ("bind %d as uid %d: %s\n", port, (int) getuid (), g_strerror (errno));
    return 0;
  }
  printf ("bind %d as uid %d: listening\n", port, (int) getuid ());
  close (s);
  return 0;
}

int
main (int argc, char **argv)
{
  g_autofree char *unix_path = NULL, *malformed = NULL;
  g_auto (GStrv) hint_specs = NULL;
  gint64 cid = -1;
  int port = FREQHINT_VSOCK_PORT, vcpus = 1, hold_ms = -1, connections = 1;
  gboolean stand_in = FALSE;
  gboolean use_stdin = FALSE, no_read = FALSE, silent = FALSE, flood = FALSE, flood_full = FALSE;
  g_autofree char *pidfile = NULL;
  int vcpu_threads = 0, bind_port = -1, burst = 0;
  gboolean reconnect = FALSE, cur_freq = FALSE;
  gint64 as_uid = -1;
  int version = FREQHINT_VSOCK_VERSION;
  const GOptionEntry entries[] = {
    { "unix", 0, 0, G_OPTION_ARG_FILENAME, &unix_path, "hybrid socket to connect to", "PATH" },
    { "vsock", 0, 0, G_OPTION_ARG_INT64, &cid, "CID to connect to (never 2 on a build host)", "CID" },
    { "port", 0, 0, G_OPTION_ARG_INT, &port, "vsock port (default 853)", "PORT" },
    { "vcpus", 0, 0, G_OPTION_ARG_INT, &vcpus, "HELLO num_cpus (default 1)", "N" },
    { "hint", 'H', 0, G_OPTION_ARG_STRING_ARRAY, &hint_specs,
      "vcpu:min:max[:perf][:idle] in the first state (others: no hint)", "SPEC" },
    { "stdin", 0, 0, G_OPTION_ARG_NONE, &use_stdin,
      "then send a HINTS per line of stdin (\"hint SPEC...\"), until EOF", NULL },
    { "hold", 0, 0, G_OPTION_ARG_INT, &hold_ms, "then read for MS and exit (default: until closed)",
      "MS" },
    { "version", 0, 0, G_OPTION_ARG_INT, &version, "HELLO version (default 1)", "N" },
    { "cur-freq", 0, 0, G_OPTION_ARG_NONE, &cur_freq, "offer VIRTIO_FREQHINT_F_CUR_FREQ too", NULL },
    { "silent", 0, 0, G_OPTION_ARG_NONE, &silent, "connect and send nothing", NULL },
    { "connections", 0, 0, G_OPTION_ARG_INT, &connections,
      "with --silent: open N connections, print how many the host left open", "N" },
    { "no-read", 0, 0, G_OPTION_ARG_NONE, &no_read, "never read after CONFIG", NULL },
    { "reconnect", 0, 0, G_OPTION_ARG_NONE, &reconnect,
      "once the host closed us before CONFIG, connect again at once: refused or taken?", NULL },
    { "burst", 0, 0, G_OPTION_ARG_INT, &burst,
      "after CONFIG, N changes of vCPU 0's floor (1..N) back to back, then read for --hold", "N" },
    { "flood", 0, 0, G_OPTION_ARG_NONE, &flood, "after CONFIG, one-record HINTS nonstop", NULL },
    { "flood-full", 0, 0, G_OPTION_ARG_NONE, &flood_full,
      "after CONFIG, whole-state HINTS nonstop", NULL },
    { "malformed", 0, 0, G_OPTION_ARG_STRING, &malformed,
      "after CONFIG (before, for hello-*): short, big, type, length, reserved, record, early", "KIND" },
    { "vcpu-threads", 0, 0, G_OPTION_ARG_INT, &vcpu_threads,
      "first start N threads named vcpu0.. (a stand-in VM process for [vm] pidfile=)", "N" },
    { "pidfile", 0, 0, G_OPTION_ARG_FILENAME, &pidfile, "then write our pid here", "FILE" },
    { "stand-in", 0, 0, G_OPTION_ARG_NONE, &stand_in,
      "be only that process: connect nowhere, wait to be killed", NULL },
    { "bind-port", 0, 0, G_OPTION_ARG_INT, &bind_port,
      "only try to listen on this vsock port (--as-uid: as that user) and say how it went", "PORT" },
    { "as-uid", 0, 0, G_OPTION_ARG_INT64, &as_uid, "with --bind-port", "UID" },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- a guest on freqhint's vsock transport");
  g_autoptr (GError) error = NULL;
  static FhRecord recs[FREQHINT_VSOCK_MAX_VCPUS];
  uint8_t m[64], frame[128];
  size_t fl = 0;
  const uint8_t *msg;
  uint32_t len, seq = 1;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    g_printerr ("fh-vsock-peer: %s\n", error->message);
    return 2;
  }
  setvbuf (stdout, NULL, _IOLBF, 0);
  if (bind_port >= 0)
    return try_bind (bind_port, as_uid);
  for (int i = 0; i < vcpu_threads; i++) {
    pthread_t t;

    pthread_create (&t, NULL, vcpu_thread, GUINT_TO_POINTER ((guint) i));
  }
  if (pidfile) {
    g_autofree char *text = g_strdup_printf ("%d\n", (int) getpid ());

    if (!g_file_set_contents (pidfile, text, -1, &error)) {
      g_printerr ("fh-vsock-peer: %s\n", error->message);
      return 2;
    }
    g_chmod (pidfile, 0644);
  }
  if (stand_in) {
    printf ("stand-in pid %d, %d vCPU threads\n", (int) getpid (), vcpu_threads);
    for (;;)
      pause ();
  }
  if ((!unix_path && cid < 0) ||
      vcpus < 1 || vcpus > FREQHINT_VSOCK_MAX_VCPUS || connections < 1) {
    g_printerr ("fh-vsock-peer: %s\n", error ? error->message : "--unix PATH or --vsock CID");
    return 2;
  }
  setvbuf (stdout, NULL, _IOLBF, 0);
  started_us = g_get_monotonic_time ();
  if (silent) {
    g_autofree int *fds = g_new (int, connections);
    int open = 0;

    for (int i = 0; i < connections; i++)
      fds[i] = connect_to (unix_path, cid, port);
    /* how many the host keeps open after hold_ms, and 2 s later (its handshake timeout) */
    for (int round = 0; round < 2; round++) {
      g_usleep (round ? 2 * G_USEC_PER_SEC : hold_ms > 0 ? (gulong) hold_ms * 1000 : G_USEC_PER_SEC);
      open = 0;
      for (int i = 0; i < connections; i++) {
        struct pollfd p = { fds[i], POLLIN, 0 };
        char c;

        /* still open: nothing to read, or data; closed: EOF or reset */
        if (fds[i] >= 0 && !(poll (&p, 1, 0) == 1 && recv (fds[i], &c, 1, MSG_DONTWAIT) <= 0))
          open++;
      }
      printf ("%sopen %d of %d\n", round ? "then " : "", open, connections);
    }
    return 0;
  }
  fd = connect_to (unix_path, cid, port);
  if (fd < 0)
    return 1;
  printf ("connected\n");

  memset (m, 0, sizeof m);
  fh_put_le16 (m, FREQHINT_VSOCK_MSG_HELLO);
  fh_put_le16 (m + 2, (uint16_t) version);
  fh_put_le32 (m + 4, (1u << VIRTIO_FREQHINT_F_PERF) | (1u << VIRTIO_FREQHINT_F_FEEDBACK) |
                          (1u << VIRTIO_FREQHINT_F_HOST_FREQ) |
                          (cur_freq ? 1u << VIRTIO_FREQHINT_F_CUR_FREQ : 0));
  fh_put_le16 (m + 8, (uint16_t) vcpus);
  if (g_strcmp0 (malformed, "hello-reserved") == 0)
    m[15] = 1;
  put_frame (frame, &fl, m, 16);
  if (g_strcmp0 (malformed, "early") == 0) {
    FhRecord r = { 0 };

    /* HINTS before CONFIG, in the same write as HELLO: the host reads them together */
    put_frame (frame, &fl, m + 32, hints_msg (m + 32, &r, 1));
    send_all (frame, fl);
    return drain (5000) ? 1 : 0;
  }
  if (!send_all (frame, fl) || next_msg (10000, &msg, &len) <= 0) {
    if (reconnect) {
      /* at once, from this process: is the peer's next connection refused? */
      int again = connect_to (unix_path, cid, port);
      struct pollfd p = { again, POLLIN, 0 };
      char c;

      printf ("reconnect %s\n", again >= 0 && poll (&p, 1, 200) == 1 &&
                                        recv (again, &c, 1, MSG_DONTWAIT) <= 0
                                    ? "refused"
                                    : "taken");
    }
    return g_str_has_prefix (malformed ? malformed : "", "hello-") ? 0 : 1;
  }
  if (fh_get_le16 (msg) != FREQHINT_VSOCK_MSG_CONFIG || len != 24) {
    printf ("first message: type %u of %u bytes, not CONFIG\n", fh_get_le16 (msg), len);
    return 1;
  }
  printf ("config features=0x%x num_vcpus=%u window=%u perf_step=%u event_buf_size=%u\n",
          fh_get_le32 (msg + 4), fh_get_le16 (msg + 8), fh_get_le16 (msg + 12),
          fh_get_le16 (msg + 14), fh_get_le32 (msg + 20));

  /* VS-8: the whole state, one record per vCPU */
  for (int i = 0; i < vcpus; i++)
    recs[i] = (FhRecord){ .vcpu = (uint16_t) i };
  for (char **h = hint_specs; h && *h; h++) {
    FhRecord r;

    if (!fhtc_parse_hint (*h, &r, &error) || r.vcpu >= vcpus) {
      g_printerr ("fh-vsock-peer: %s\n", error ? error->message : "vCPU out of range");
      return 2;
    }
    recs[r.vcpu] = r;
  }
  for (int i = 0; i < vcpus; i++)
    recs[i].seq = seq;
  if (!send_hints (recs, (guint) vcpus))
    return 1;
  printf ("ready\n");

  if (malformed) {
    static uint8_t big[4 + FREQHINT_VSOCK_MAX_FRAME + 1];
    uint8_t bad[64] = { 0 };
    size_t bl = 0, n = hints_msg (bad, recs, 1);

    if (strcmp (malformed, "short") == 0) {
      fh_put_le32 (bad, 1); /* a count below a message type */
      bl = 5;
    } else if (strcmp (malformed, "big") == 0) {
      fh_put_le32 (big, FREQHINT_VSOCK_MAX_FRAME + 1);
      send_all (big, 4);
    } else if (strcmp (malformed, "type") == 0) {
      fh_put_le16 (bad, 9);
      put_frame (frame, &bl, bad, n);
      memcpy (bad, frame, bl);
    } else if (strcmp (malformed, "length") == 0) {
      put_frame (frame, &bl, bad, n - 2); /* a record cut short */
      memcpy (bad, frame, bl);
    } else if (strcmp (malformed, "reserved") == 0) {
      bad[5] = 1;
      put_frame (frame, &bl, bad, n);
      memcpy (bad, frame, bl);
    } else if (strcmp (malformed, "record") == 0) {
      /* a bad record is dropped, the connection stays (the device's rule) */
      FhRecord r = { .vcpu = (uint16_t) vcpus, .flags = 1, .clamp_min = 10 };

      send_hints (&r, 1);
      return drain (hold_ms > 0 ? hold_ms : 1000) ? 0 : 1;
    } else {
      g_printerr ("fh-vsock-peer: unknown --malformed %s\n", malformed);
      return 2;
    }
    if (bl)
      send_all (bad, bl);
    return drain (10000) ? 1 : 0; /* the host must close */
  }
  if (flood || flood_full) {
    guint64 sent = 0;
    gint64 t0 = g_get_monotonic_time ();

    for (;;) {
      FhRecord r = recs[0];

      r.seq = ++seq;
      r.clamp_min = (uint16_t) (seq % 512);
      r.flags |= VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID;
      r.clamp_max = 1024;
      if (flood_full) {
        for (int i = 0; i < vcpus; i++)
          recs[i].seq = seq;
      }
      if (!(flood_full ? send_hints (recs, (guint) vcpus) : send_hints (&r, 1)))
        break;
      sent++;
      if (g_get_monotonic_time () - t0 > 20 * G_USEC_PER_SEC)
        break;
    }
    printf ("flood: %" G_GUINT64_FORMAT " messages, closed after %" G_GINT64_FORMAT " ms\n", sent,
            (g_get_monotonic_time () - t0) / 1000);
    return 0;
  }
  if (burst > 0) {
    gint64 t0 = g_get_monotonic_time ();

    /* N changes of vCPU 0 back to back: the host keeps the last, forwards at most one per window */
    for (int i = 1; i <= burst; i++) {
      FhRecord r = { .vcpu = 0, .flags = VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID,
                     .clamp_min = (uint16_t) i, .clamp_max = 1024, .seq = ++seq };

      if (!send_hints (&r, 1))
        return 1;
    }
    printf ("burst %d in %" G_GINT64_FORMAT " ms, last min %d\n", burst,
            (g_get_monotonic_time () - t0) / 1000, burst);
    drain (hold_ms);
    return 0;
  }
  if (no_read) {
    g_usleep ((gulong) (hold_ms > 0 ? hold_ms : 10000) * 1000);
    return 0;
  }
  if (use_stdin) {
    GIOChannel *in = g_io_channel_unix_new (0);
    char *line = NULL;

    drain (200);
    while (g_io_channel_read_line (in, &line, NULL, NULL, NULL) == G_IO_STATUS_NORMAL) {
      g_auto (GStrv) words = g_strsplit (g_strstrip (line), " ", -1);
      FhRecord batch[64];
      guint n = 0;

      g_free (line);
      if (!words[0] || strcmp (words[0], "hint") != 0)
        continue;
      seq++;
      for (char **w = words + 1; *w && n < G_N_ELEMENTS (batch); w++) {
        if (!fhtc_parse_hint (*w, &batch[n], NULL))
          continue;
        batch[n++].seq = seq;
      }
      if (n && !send_hints (batch, n))
        break;
      printf ("sent %u\n", n);
      if (!drain (100))
        return 0;
    }
    g_io_channel_unref (in);
  }
  drain (hold_ms);
  return 0;
}
