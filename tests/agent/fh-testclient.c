/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fh-testclient: plays a virtio-freqhint device towards freqhintd.
 *
 *   fh-testclient --socket S --uuid U --name N --vcpus 4 --tids 11,12,13,14 \
 *                 --hint 0:512:1024 --hint 1:-:-:800 --hint 2:0:1024:idle
 *
 * Connects, HELLO, waits WELCOME, sends one FULL HINTS frame (vCPUs without
 * --hint get flags 0), then stays connected answering PINGs and printing
 * GRANTS until --hold expires, stdin ends (--stdin) or a signal arrives.
 *
 * --stdin reads commands, one a line:  "hint SPEC..."  (partial HINTS),
 * "full SPEC..." (FULL HINTS), "vcpus TID,..." (VCPUS), "close" (send CLOSE and
 * exit), "sleep MS".  HOST_FREQ frames are printed as "host-freq ...", CUR_FREQ
 * frames as "cur-freq ...".
 *
 * --malformed KIND sends one bad frame (see --help) and then waits for the
 * agent's CLOSE; the exit status says whether its reason matched
 * --expect-close.  The close-* kinds send a CLOSE of our own: with
 * --expect-close none the agent must close without sending any frame
 * but those it may already have queued, and never a CLOSE (PB-9).
 *
 * --name-hex gives the name as hex bytes (hostile names: control bytes,
 * invalid UTF-8).
 *
 * Exit status: 0 as expected; 1 error; 2 usage; 3 the agent closed the
 * connection unexpectedly.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gio/gio.h>

#include <linux/virtio_freqhint.h>

#include "fh-testclient-lib.h"

static volatile sig_atomic_t stop;

static void
on_signal (int sig)
{
  stop = 1;
}

static const char *const malformed_kinds[] = {
  /* before HELLO */
  "too-big", "unknown-type", "reserved-header", "hints-before-hello", "bad-version",
  "short-hello", "hello-wrong-length", "name-no-nul", "zero-vcpus", "silent",
  /* after the handshake */
  "partial-first", "bad-record", "min-gt-max", "over-scale", "bad-flags", "perf-not-negotiated",
  "second-hello", "grants-from-device", "bad-ping", "truncated-hints", "half-frame",
  /* our own CLOSE: a plain one; unknown reason, reserved fields set, no NUL;
   * a hostile text; the wrong length */
  "close-normal", "close-odd", "close-hostile", "close-short",
  /* bad-record half a second after the handshake (GRANTS has gone out) */
  "late-bad-record", NULL,
};

static gboolean
pre_hello_kind (const char *kind)
{
  for (int i = 0; i < 10; i++)
    if (strcmp (kind, malformed_kinds[i]) == 0)
      return TRUE;
  return FALSE;
}

static size_t
build_malformed (const char *kind, const FhHello *hello, uint8_t *buf, size_t size)
{
  FhHints h = { 0 };
  FhHello bad = *hello;
  uint8_t payload[64] = { 0 };
  size_t n;

  h.num_records = 1;
  h.records[0] = (FhRecord){ 0, VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID, 100,
                             200, 0, 1 };
  if (strcmp (kind, "too-big") == 0)
    return fh_encode_raw (buf, size, FH_MAX_PAYLOAD + 1, FH_MSG_HINTS, 0, NULL, 0);
  if (strcmp (kind, "unknown-type") == 0)
    return fh_encode_raw (buf, size, 8, 42, 0, payload, 8);
  if (strcmp (kind, "reserved-header") == 0)
    return fh_encode_raw (buf, size, 8, FH_MSG_PING, 0x5a5a, payload, 8);
  if (strcmp (kind, "hints-before-hello") == 0)
    return fh_encode_hints (buf, size, &h);
  if (strcmp (kind, "bad-version") == 0) {
    bad.version = FH_PROTO_VERSION + 1;
    return fh_encode_hello (buf, size, &bad);
  }
  if (strcmp (kind, "short-hello") == 0) {
    /* version and num_vcpus of a valid HELLO, then nothing */
    uint8_t head[4];

    fh_put_le16 (head, FH_PROTO_VERSION);
    fh_put_le16 (head + 2, 1);
    return fh_encode_raw (buf, size, 4, FH_MSG_HELLO, 0, (const char *) head, 4);
  }
  if (strcmp (kind, "hello-wrong-length") == 0) {
    n = fh_encode_hello (buf, size, hello);
    buf[0] -= 4; /* one tid short: length no longer matches num_vcpus */
    return n - 4;
  }
  if (strcmp (kind, "name-no-nul") == 0) {
    n = fh_encode_hello (buf, size, hello);
    memset (buf + 8 + 32, 'A', FH_NAME_MAX);
    return n;
  }
  if (strcmp (kind, "zero-vcpus") == 0) {
    n = fh_encode_hello (buf, size, hello);
    buf[8 + 2] = buf[8 + 3] = 0;
    return n;
  }
  if (strcmp (kind, "partial-first") == 0)
    return fh_encode_hints (buf, size, &h);
  if (strcmp (kind, "bad-record") == 0 || strcmp (kind, "late-bad-record") == 0) {
    h.records[0].vcpu = hello->num_vcpus;
    return fh_encode_hints (buf, size, &h);
  }
  if (strcmp (kind, "min-gt-max") == 0) {
    h.records[0].clamp_min = 900;
    h.records[0].clamp_max = 100;
    return fh_encode_hints (buf, size, &h);
  }
  if (strcmp (kind, "over-scale") == 0) {
    h.records[0].clamp_max = 2000;
    return fh_encode_hints (buf, size, &h);
  }
  if (strcmp (kind, "bad-flags") == 0) {
    h.records[0].flags |= 0x80;
    return fh_encode_hints (buf, size, &h);
  }
  if (strcmp (kind, "perf-not-negotiated") == 0) {
    h.records[0].flags |= VIRTIO_FREQHINT_R_PERF_VALID;
    h.records[0].perf = 500;
    return fh_encode_hints (buf, size, &h);
  }
  if (strcmp (kind, "second-hello") == 0)
    return fh_encode_hello (buf, size, hello);
  if (strcmp (kind, "grants-from-device") == 0) {
    FhGrants g = { 0, 1024, 1, { { 0, 1024 } } };

    return fh_encode_grants (buf, size, &g);
  }
  if (strcmp (kind, "bad-ping") == 0)
    return fh_encode_raw (buf, size, 4, FH_MSG_PING, 0, payload, 4);
  if (strcmp (kind, "half-frame") == 0) {
    /* The header and half the payload, then nothing: the agent must not
     * wait for the rest forever (keepalive timeout). */
    n = fh_encode_hints (buf, size, &h);
    return FH_FRAME_HDR_SIZE + (n - FH_FRAME_HDR_SIZE) / 2;
  }
  if (strcmp (kind, "close-normal") == 0)
    return fh_encode_close (buf, size, FH_CLOSE_NORMAL, "device going away");
  if (strcmp (kind, "close-odd") == 0) {
    uint8_t p[sizeof (struct fh_msg_close)];

    memset (p, 'z', sizeof p);
    p[0] = 0xe7; /* reason 999 */
    p[1] = 0x03;
    return fh_encode_raw (buf, size, sizeof p, FH_MSG_CLOSE, 0, p, sizeof p);
  }
  if (strcmp (kind, "close-hostile") == 0)
    return fh_encode_close (buf, size, FH_CLOSE_MALFORMED, "bye\n\x1b[31mred\xff\xfe\x7f\\end");
  if (strcmp (kind, "close-short") == 0)
    return fh_encode_raw (buf, size, 8, FH_MSG_CLOSE, 0, payload, 8);
  if (strcmp (kind, "truncated-hints") == 0) {
    n = fh_encode_hints (buf, size, &h);
    buf[8 + 8] = 2; /* claims two records, carries one */
    return n;
  }
  return 0;
}

static void
print_grants (const FhFrame *f, uint16_t num_vcpus)
{
  static FhGrants g;
  FhError err;

  if (!fh_decode_grants (f, num_vcpus, &g, &err)) {
    printf ("bad-grants %s\n", err.text);
    return;
  }
  printf ("grants operator=%u..%u", g.operator_floor, g.operator_ceiling);
  for (unsigned i = 0; i < g.num_grants; i++)
    printf (" %u:%u..%u", i, g.grants[i].floor, g.grants[i].ceiling);
  printf ("\n");
  fflush (stdout);
}

/* The latest valid HOST_FREQ: CUR_FREQ is checked against it (PD-20). */
static FhHostFreq hf;
static gboolean have_hf;

/* "host-freq classes=N K:MIN..MAX/STEP/NFREQS[:F1,F2,...] ... vcpus=C0,C1,..." (PA-18) */
static void
print_host_freq (const FhFrame *f, uint16_t num_vcpus)
{
  FhError err;

  if (!fh_decode_host_freq (f, num_vcpus, &hf, &err)) {
    printf ("bad-host-freq %s\n", err.text);
    fflush (stdout);
    return;
  }
  printf ("host-freq classes=%u", hf.num_classes);
  for (unsigned i = 0; i < hf.num_classes; i++) {
    const FhFreqClass *c = &hf.classes[i];

    printf (" %u:%u..%u/%u/%u", i, c->min_khz, c->max_khz, c->perf_step, c->num_freqs);
    for (unsigned j = 0; j < c->num_freqs; j++)
      printf ("%c%u", j ? ',' : ':', c->freqs_khz[j]);
  }
  printf (" vcpus=");
  for (unsigned i = 0; i < hf.num_vcpus; i++)
    printf ("%s%u", i ? "," : "", hf.freq_class[i]);
  printf ("\n");
  fflush (stdout);
  have_hf = TRUE;
}

/* "cur-freq khz=K0,K1,..." (PA-26), checked as the device would */
static void
print_cur_freq (const FhFrame *f, uint16_t num_vcpus)
{
  static FhCurFreq cf;
  FhError err;

  if (!fh_decode_cur_freq (f, num_vcpus, have_hf ? &hf : NULL, &cf, &err)) {
    printf ("bad-cur-freq %s\n", err.text);
    fflush (stdout);
    return;
  }
  printf ("cur-freq khz=");
  for (unsigned i = 0; i < cf.num_vcpus; i++)
    printf ("%s%u", i ? "," : "", cf.cur_khz[i]);
  printf ("\n");
  fflush (stdout);
}

/* Answer what the agent sends.  Returns -1 on error/close, 0 otherwise. */
static int
handle_agent_frame (FhTestClient *c, const FhFrame *f, uint16_t num_vcpus, gboolean no_pong)
{
  FhError err;
  g_autoptr (GError) error = NULL;

  switch (f->msg_type) {
    case FH_MSG_PING: {
      uint64_t cookie;
      uint8_t buf[32];

      if (!fh_decode_ping (f, &cookie, &err)) {
        printf ("bad-ping %s\n", err.text);
        return -1;
      }
      if (!no_pong && !fhtc_send (c, buf, fh_encode_ping (buf, sizeof buf, FH_MSG_PONG, cookie),
                                  &error))
        return -1;
      return 0;
    }
    case FH_MSG_GRANTS:
      print_grants (f, num_vcpus);
      return 0;
    case FH_MSG_HOST_FREQ:
      print_host_freq (f, num_vcpus);
      return 0;
    case FH_MSG_CUR_FREQ:
      print_cur_freq (f, num_vcpus);
      return 0;
    case FH_MSG_CLOSE: {
      FhClose cl;

      if (fh_decode_close (f, &cl, &err))
        printf ("close reason=%s text=%s\n", fh_close_reason_name (cl.reason), cl.text);
      else
        printf ("bad-close %s\n", err.text);
      fflush (stdout);
      return -1;
    }
    default:
      printf ("unexpected %s\n", fh_msg_type_name (f->msg_type));
      return -1;
  }
}

static gboolean
send_specs (FhTestClient *c, char **specs, gboolean full, uint16_t num_vcpus, uint32_t *seq,
            GError **error)
{
  static FhHints h;

  memset (&h, 0, sizeof h);
  h.timestamp_ns = (uint64_t) g_get_real_time () * 1000;
  if (full) {
    h.flags = FH_HINTS_F_FULL;
    h.num_records = num_vcpus;
    for (uint16_t i = 0; i < num_vcpus; i++)
      h.records[i].vcpu = i;
  }
  for (char **s = specs; s && *s; s++) {
    FhRecord rec;

    if (**s == '\0')
      continue;
    if (!fhtc_parse_hint (*s, &rec, error))
      return FALSE;
    rec.seq = ++*seq;
    if (full && rec.vcpu < num_vcpus) {
      h.records[rec.vcpu] = rec;
    } else {
      if (h.num_records >= FH_MAX_VCPUS) {
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "too many records");
        return FALSE;
      }
      h.records[h.num_records++] = rec;
    }
  }
  if (h.num_records == 0)
    return TRUE;
  return fhtc_send_hints (c, &h, error);
}

/*
 * A stream of valid FULL HINTS frames, one record per vCPU with values that
 * keep changing: the agent must read it all with bounded memory and stay
 * responsive to everyone else.  Blocking writes: the agent sets the pace.
 */
static gboolean
stream (FhTestClient *c, const FhHello *hello, guint64 bytes, gboolean no_pong, uint32_t *seq,
        GError **error)
{
  static FhHints h;
  static uint8_t buf[FH_FRAME_MAX];
  guint64 sent = 0, frames = 0;
  gint64 t0 = g_get_monotonic_time ();

  h.flags = FH_HINTS_F_FULL;
  h.num_records = hello->num_vcpus;
  while (sent < bytes && !stop) {
    size_t n;

    for (guint i = 0; i < h.num_records; i++) {
      guint lo = (guint) ((frames * 37 + i) % 1025);

      h.records[i] = (FhRecord){ (uint16_t) i,
                                 VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID,
                                 (uint16_t) lo, (uint16_t) MAX (lo, 512u), 0, ++*seq };
    }
    n = fh_encode_hints (buf, sizeof buf, &h);
    if (!fhtc_send (c, buf, n, error))
      return FALSE;
    sent += n;
    frames++;
    /* Keep the connection alive meanwhile. */
    while (fhtc_has_frame (c) || poll (&(struct pollfd){ fhtc_fd (c), POLLIN, 0 }, 1, 0) > 0) {
      FhFrame f;

      if (!fhtc_next_frame (c, 1000, &f, error) ||
          handle_agent_frame (c, &f, hello->num_vcpus, no_pong) < 0)
        return FALSE;
    }
  }
  printf ("streamed %" G_GUINT64_FORMAT " bytes in %" G_GUINT64_FORMAT " frames in %.1f s\n", sent,
          frames, (g_get_monotonic_time () - t0) / 1e6);
  fflush (stdout);
  return TRUE;
}

/*
 * Be the peer process the agent can recognise (PA-20): the agent reads who
 * a peer is from its command line, as it would read QEMU's -name/-uuid.  So
 * re-execute this program (same pid) with QEMU-style arguments after "--",
 * and, on a fixture tree (FH_PROC_FIXTURE, the agent's --proc-root), link
 * the fixture's <pid>/cmdline to the real one.  argv_name/argv_uuid NULL:
 * leave that argument out.
 */
static void
become_qemu_like (char **orig_argv, const char *argv_name, gboolean plain_name,
                  const char *argv_uuid)
{
  const char *fix = g_getenv ("FH_PROC_FIXTURE");
  g_autoptr (GPtrArray) args = g_ptr_array_new_with_free_func (g_free);

  if (fix) {
    g_autofree char *dir = g_strdup_printf ("%s/%d", fix, (int) getpid ());
    g_autofree char *link = g_strdup_printf ("%s/cmdline", dir);
    g_autofree char *target = g_strdup_printf ("/proc/%d/cmdline", (int) getpid ());

    g_mkdir_with_parents (dir, 0755);
    unlink (link);
    (void) !symlink (target, link); /* a test may have made it already (other uid) */
  }
  if (g_getenv ("FH_TESTCLIENT_REEXEC"))
    return;
  for (int i = 0; orig_argv[i]; i++)
    g_ptr_array_add (args, g_strdup (orig_argv[i]));
  g_ptr_array_add (args, g_strdup ("--"));
  if (argv_name) {
    /* QemuOpts: a comma in a value is written twice */
    g_auto (GStrv) parts = g_strsplit (argv_name, ",", -1);
    g_autofree char *escaped = g_strjoinv (",,", parts);

    g_ptr_array_add (args, g_strdup ("-name"));
    g_ptr_array_add (args, plain_name ? g_strdup (escaped)
                                      : g_strdup_printf ("guest=%s,debug-threads=on", escaped));
  }
  if (argv_uuid) {
    g_ptr_array_add (args, g_strdup ("-uuid"));
    g_ptr_array_add (args, g_strdup (argv_uuid));
  }
  g_ptr_array_add (args, NULL);
  g_setenv ("FH_TESTCLIENT_REEXEC", "1", TRUE);
  execv ("/proc/self/exe", (char **) args->pdata);
  g_printerr ("fh-testclient: re-exec: %s\n", g_strerror (errno));
  exit (2);
}

int
main (int argc, char **argv)
{
  g_autofree char *socket_path = NULL, *uuid = NULL, *name = NULL, *tids = NULL;
  g_autofree char *malformed = NULL, *expect_close = NULL, *features = NULL, *name_hex = NULL;
  g_autofree char *argv_name = NULL, *argv_uuid = NULL, *relay_path = NULL;
  gint64 relay_cid = -1;
  gboolean argv_none = FALSE, no_read = FALSE;
  g_auto (GStrv) orig_argv = g_strdupv (argv);
  g_auto (GStrv) hints = NULL;
  int vcpus = 1, hold = -1, pid = 0, flood = 0, stream_mib = 0, fork_holder = 0;
  guint64 flooded = 0;
  gint64 next_flood = 0;
  gboolean use_stdin = FALSE, no_pong = FALSE;
  gboolean stdin_unbuffered = FALSE;
  g_autoptr (GOptionContext) ctx = NULL;
  g_autoptr (GError) error = NULL;
  FhTestClient *c;
  static FhHello hello;
  FhWelcome welcome;
  uint32_t seq = 0;
  gint64 deadline;
  int ret = 0;
  const GOptionEntry entries[] = {
    { "socket", 's', 0, G_OPTION_ARG_FILENAME, &socket_path, "freqhintd's device socket", "PATH" },
    { "uuid", 'u', 0, G_OPTION_ARG_STRING, &uuid, "VM UUID (default all zero)", "UUID" },
    { "name", 'n', 0, G_OPTION_ARG_STRING, &name, "VM name", "NAME" },
    { "name-hex", 0, 0, G_OPTION_ARG_STRING, &name_hex, "VM name as hex bytes (any bytes)",
      "HEX" },
    { "vcpus", 0, 0, G_OPTION_ARG_INT, &vcpus, "Number of vCPUs (default 1)", "N" },
    { "tids", 't', 0, G_OPTION_ARG_STRING, &tids, "Comma-separated vCPU thread ids", "TID,..." },
    { "pid", 0, 0, G_OPTION_ARG_INT, &pid, "qemu_pid in HELLO (default our pid)", "PID" },
    { "features", 0, 0, G_OPTION_ARG_STRING, &features,
      "Offered features: perf,grants,host-freq,vcpus,cur-freq (default perf,grants; \"none\" for none)",
      "LIST" },
    { "hint", 'H', 0, G_OPTION_ARG_STRING_ARRAY, &hints,
      "vcpu:min:max[:perf][:idle] or vcpu:none; '-' for an invalid field", "SPEC" },
    { "hold", 0, 0, G_OPTION_ARG_INT, &hold,
      "Seconds to stay connected (default: until a signal or stdin EOF)", "S" },
    { "stdin", 0, 0, G_OPTION_ARG_NONE, &use_stdin, "Read further commands from stdin", NULL },
    { "no-pong", 0, 0, G_OPTION_ARG_NONE, &no_pong, "Do not answer PINGs", NULL },
    { "flood", 0, 0, G_OPTION_ARG_INT, &flood,
      "Send this many one-record HINTS frames per second (load tests)", "HZ" },
    { "malformed", 0, 0, G_OPTION_ARG_STRING, &malformed,
      "Send one bad frame: too-big unknown-type reserved-header hints-before-hello bad-version "
      "short-hello hello-wrong-length name-no-nul zero-vcpus silent partial-first bad-record "
      "min-gt-max over-scale bad-flags perf-not-negotiated second-hello grants-from-device "
      "bad-ping truncated-hints half-frame; or a CLOSE: close-normal close-odd close-hostile "
      "close-short; late-bad-record", "KIND" },
    { "stream-mib", 0, 0, G_OPTION_ARG_INT, &stream_mib,
      "After the handshake, send this many MiB of FULL HINTS frames as fast as the agent "
      "reads them (answering PINGs), print \"streamed N bytes in S s\", then carry on", "MIB" },
    { "argv-name", 0, 0, G_OPTION_ARG_STRING, &argv_name,
      "-name in our own command line, plain form (default: the HELLO name, guest=NAME form)",
      "NAME" },
    { "argv-uuid", 0, 0, G_OPTION_ARG_STRING, &argv_uuid,
      "-uuid in our own command line (default: --uuid)", "UUID" },
    { "fork-holder", 0, 0, G_OPTION_ARG_INT, &fork_holder,
      "After the handshake, fork a child that keeps the socket open this many seconds after "
      "we exit (the peer process is gone, its socket is not)", "S" },
    { "no-read", 0, 0, G_OPTION_ARG_NONE, &no_read,
      "After the handshake, never read the socket again (a peer that stopped reading)", NULL },
    { "argv-none", 0, 0, G_OPTION_ARG_NONE, &argv_none,
      "No -name or -uuid in our own command line", NULL },
    { "relay-cid", 0, 0, G_OPTION_ARG_INT64, &relay_cid,
      "Speak as the vsock front end for a guest of this CID (FH_F_RELAY; no name, UUID or tids)",
      "CID" },
    { "relay-path", 0, 0, G_OPTION_ARG_FILENAME, &relay_path,
      "Speak as the vsock front end for a guest on this hybrid socket (--pid: its VMM)", "PATH" },
    { "expect-close", 0, 0, G_OPTION_ARG_STRING, &expect_close,
      "Exit 0 only if the agent closes with this reason (\"none\": without CLOSE)", "REASON" },
    { NULL }
  };

  ctx = g_option_context_new ("- play a virtio-freqhint device towards freqhintd");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    g_printerr ("fh-testclient: %s\n", error->message);
    return 2;
  }
  if (!socket_path || vcpus < 1 || vcpus > FH_MAX_VCPUS) {
    g_printerr ("fh-testclient: need --socket and 1 <= --vcpus <= %d\n", FH_MAX_VCPUS);
    return 2;
  }
  if (malformed) {
    gboolean known = FALSE;

    for (int i = 0; malformed_kinds[i]; i++)
      known |= strcmp (malformed, malformed_kinds[i]) == 0;
    if (!known) {
      g_printerr ("fh-testclient: unknown --malformed kind \"%s\"\n", malformed);
      return 2;
    }
  }
  if (expect_close && strcmp (expect_close, "none") != 0 &&
      fh_close_reason_from_name (expect_close) < 0) {
    g_printerr ("fh-testclient: unknown close reason \"%s\"\n", expect_close);
    return 2;
  }

  hello.version = FH_PROTO_VERSION;
  hello.num_vcpus = (uint16_t) vcpus;
  hello.features = FH_F_PERF | FH_F_GRANTS;
  if (features) {
    hello.features = 0;
    if (strstr (features, "perf"))
      hello.features |= FH_F_PERF;
    if (strstr (features, "grants"))
      hello.features |= FH_F_GRANTS;
    if (strstr (features, "host-freq"))
      hello.features |= FH_F_HOST_FREQ;
    if (strstr (features, "vcpus"))
      hello.features |= FH_F_VCPUS;
    if (strstr (features, "cur-freq"))
      hello.features |= FH_F_CUR_FREQ;
  }
  hello.qemu_pid = pid ? (uint32_t) pid : (uint32_t) getpid ();
  if (relay_cid >= 0 || relay_path) {
    hello.features |= FH_F_RELAY;
    hello.relay_transport = relay_path ? FH_RELAY_HYBRID : FH_RELAY_VSOCK;
    hello.relay_cid = relay_path ? 0 : (uint32_t) relay_cid;
    g_strlcpy (hello.relay_path, relay_path ? relay_path : "", sizeof hello.relay_path);
    if (!relay_path)
      hello.qemu_pid = 0;
  }
  if (uuid && !fhtc_parse_uuid (uuid, hello.uuid)) {
    g_printerr ("fh-testclient: bad UUID \"%s\"\n", uuid);
    return 2;
  }
  g_strlcpy (hello.name, name ? name : "", sizeof hello.name);
  if (name_hex) {
    size_t len = strlen (name_hex);

    if (len % 2 || len / 2 >= sizeof hello.name) {
      g_printerr ("fh-testclient: bad --name-hex\n");
      return 2;
    }
    memset (hello.name, 0, sizeof hello.name);
    for (size_t i = 0; i < len / 2; i++) {
      int hi = g_ascii_xdigit_value (name_hex[2 * i]), lo = g_ascii_xdigit_value (name_hex[2 * i + 1]);

      if (hi < 0 || lo < 0) {
        g_printerr ("fh-testclient: bad --name-hex\n");
        return 2;
      }
      hello.name[i] = (char) (hi << 4 | lo);
    }
  }
  {
    static const uint8_t nil[16];
    const char *an = argv_none ? NULL : argv_name ? argv_name : hello.name[0] ? hello.name : NULL;
    const char *au = argv_none                            ? NULL
                     : argv_uuid                          ? argv_uuid
                     : memcmp (hello.uuid, nil, 16) != 0 ? uuid
                                                          : NULL;

    become_qemu_like (orig_argv, an, argv_name != NULL, au);
  }
  if (tids) {
    g_auto (GStrv) list = g_strsplit (tids, ",", -1);

    for (guint i = 0; list[i] && i < (guint) vcpus; i++) {
      guint64 t;

      if (!g_ascii_string_to_unsigned (list[i], 10, 0, G_MAXUINT32, &t, NULL)) {
        g_printerr ("fh-testclient: bad tid \"%s\"\n", list[i]);
        return 2;
      }
      hello.tids[i] = (uint32_t) t;
    }
  }

  signal (SIGTERM, on_signal);
  signal (SIGINT, on_signal);
  signal (SIGPIPE, SIG_IGN);

  c = fhtc_connect (socket_path, &error);
  if (!c) {
    g_printerr ("fh-testclient: %s\n", error->message);
    return 1;
  }

  if (malformed) {
    uint8_t buf[FH_FRAME_MAX + 16];
    size_t n;
    FhFrame f;

    if (!pre_hello_kind (malformed)) {
      if (!fhtc_handshake (c, &hello, &welcome, &error))
        goto fail;
      if (strcmp (malformed, "partial-first") != 0 &&
          !send_specs (c, (char *[]){ "0:100:200", NULL }, TRUE, hello.num_vcpus, &seq, &error))
        goto fail;
    }
    if (strcmp (malformed, "late-bad-record") == 0)
      g_usleep (500 * G_TIME_SPAN_MILLISECOND);
    if (strcmp (malformed, "silent") != 0) {
      n = build_malformed (malformed, &hello, buf, sizeof buf);
      if (!n || !fhtc_send (c, buf, n, &error))
        goto fail;
    }
    /* Skip WELCOME/GRANTS/PING until the CLOSE comes. */
    for (;;) {
      FhClose cl;
      FhError err;

      if (!fhtc_next_frame (c, 30000, &f, &error)) {
        if (g_strcmp0 (expect_close, "none") == 0 &&
            g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED)) {
          printf ("closed without CLOSE\n");
          break;
        }
        goto fail;
      }
      if (f.msg_type != FH_MSG_CLOSE)
        continue;
      if (g_strcmp0 (expect_close, "none") == 0) {
        g_printerr ("fh-testclient: the agent answered our CLOSE with a CLOSE\n");
        ret = 1;
        break;
      }
      if (!fh_decode_close (&f, &cl, &err)) {
        g_printerr ("fh-testclient: bad CLOSE: %s\n", err.text);
        ret = 1;
        break;
      }
      printf ("close reason=%s text=%s\n", fh_close_reason_name (cl.reason), cl.text);
      if (expect_close && strcmp (expect_close, fh_close_reason_name (cl.reason)) != 0) {
        g_printerr ("fh-testclient: expected close reason %s, got %s\n", expect_close,
                    fh_close_reason_name (cl.reason));
        ret = 1;
      }
      break;
    }
    fhtc_free (c);
    return ret;
  }

  if (!fhtc_handshake (c, &hello, &welcome, &error))
    goto fail;
  printf ("welcome features=0x%x keepalive_ms=%u\n", welcome.features, welcome.keepalive_ms);
  if (!send_specs (c, hints, TRUE, hello.num_vcpus, &seq, &error))
    goto fail;
  printf ("ready\n");
  fflush (stdout);
  while (no_read && !stop)
    g_usleep (100 * 1000);
  if (fork_holder > 0 && fork () == 0) {
    sleep ((unsigned) fork_holder);
    _exit (0);
  }
  if (stream_mib > 0 && !stream (c, &hello, (guint64) stream_mib << 20, no_pong, &seq, &error))
    goto fail;

  deadline = hold >= 0 ? g_get_monotonic_time () + hold * G_USEC_PER_SEC : -1;
  next_flood = g_get_monotonic_time ();
  while (!stop && (deadline < 0 || g_get_monotonic_time () < deadline)) {
    struct pollfd pfd[2] = { { fhtc_fd (c), POLLIN, 0 }, { 0, POLLIN, 0 } };
    /* Frames that arrived with an earlier read are not signalled by poll(). */
    gboolean buffered = fhtc_has_frame (c);
    int wait_ms = buffered ? 0 : 100;
    int n;

    if (flood > 0) {
      gint64 now = g_get_monotonic_time ();

      while (now >= next_flood) {
        /* Valid records that keep changing: vCPU round robin, min <= max. */
        guint v = (guint) (flooded % (guint64) vcpus);
        guint lo = (guint) ((flooded * 37) % 1025);
        g_autofree char *spec = g_strdup_printf ("%u:%u:%u", v, lo, MAX (lo, 512u));

        if (!send_specs (c, (char *[]){ spec, NULL }, FALSE, hello.num_vcpus, &seq, &error))
          goto fail;
        flooded++;
        next_flood += G_USEC_PER_SEC / flood;
      }
      wait_ms = MIN (wait_ms, (int) ((next_flood - now) / 1000));
    }
    if (use_stdin && !stdin_unbuffered) {
      /* poll() sees the fd, not stdio's buffer: lines written in one burst
       * would wait in the buffer unseen.  Read unbuffered instead. */
      setvbuf (stdin, NULL, _IONBF, 0);
      stdin_unbuffered = TRUE;
    }
    n = poll (pfd, use_stdin ? 2 : 1, wait_ms);

    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0 && !buffered)
      continue;
    if (buffered || pfd[0].revents) {
      FhFrame f;

      if (!fhtc_next_frame (c, 1000, &f, &error)) {
        printf ("disconnected %s\n", error->message);
        ret = 3;
        break;
      }
      if (handle_agent_frame (c, &f, hello.num_vcpus, no_pong) < 0) {
        ret = 3;
        break;
      }
    }
    if (use_stdin && pfd[1].revents) {
      char line[4096];
      g_auto (GStrv) words = NULL;

      if (!fgets (line, sizeof line, stdin))
        break; /* EOF: disconnect */
      g_strstrip (line);
      words = g_strsplit_set (line, " \t", -1);
      if (!words[0] || !*words[0])
        continue;
      if (strcmp (words[0], "hint") == 0 || strcmp (words[0], "full") == 0) {
        if (!send_specs (c, words + 1, words[0][0] == 'f', hello.num_vcpus, &seq, &error))
          goto fail;
        printf ("sent\n");
        fflush (stdout);
      } else if (strcmp (words[0], "vcpus") == 0 && words[1]) {
        /* "vcpus TID,TID,...": a VCPUS frame (PA-19), 0 for an absent vCPU */
        static FhVcpus v;
        g_auto (GStrv) table = g_strsplit (words[1], ",", -1);
        uint8_t frame[FH_FRAME_MAX];
        size_t len;

        memset (&v, 0, sizeof v);
        v.num_vcpus = hello.num_vcpus;
        for (guint i = 0; table[i] && i < v.num_vcpus; i++)
          v.tids[i] = (uint32_t) g_ascii_strtoull (table[i], NULL, 10);
        len = fh_encode_vcpus (frame, sizeof frame, &v);
        if (!fhtc_send (c, frame, len, &error))
          goto fail;
        printf ("sent\n");
        fflush (stdout);
      } else if (strcmp (words[0], "close") == 0) {
        fhtc_send_close (c, FH_CLOSE_NORMAL, "test client done", NULL);
        break;
      } else if (strcmp (words[0], "sleep") == 0 && words[1]) {
        g_usleep (1000 * g_ascii_strtoull (words[1], NULL, 10));
      } else {
        g_printerr ("fh-testclient: unknown command \"%s\"\n", words[0]);
      }
    }
  }
  if (flood > 0)
    printf ("flooded %" G_GUINT64_FORMAT " frames\n", flooded);
  fhtc_free (c);
  return ret;
fail:
  g_printerr ("fh-testclient: %s\n", error ? error->message : "failed");
  fhtc_free (c);
  /* A CLOSE during the handshake is what --expect-close may be waiting for. */
  if (expect_close && error && g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CONNECTION_REFUSED)) {
    g_autofree char *want = g_strdup_printf ("agent closed: %s: ", expect_close);

    if (g_str_has_prefix (error->message, want)) {
      printf ("close reason=%s\n", expect_close);
      return 0;
    }
  }
  return 1;
}
