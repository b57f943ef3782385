/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests: framing, every message's validation, encoder byte layout. */
#include <string.h>

#include <freqhint/vsock_host.h>
#include <glib.h>

#include "fh-protocol.h"
#include "fh-vsock-codec.h"

static uint8_t buf[FH_FRAME_MAX + 64];

static FhFrame
parse_ok (const uint8_t *b, size_t n)
{
  FhFrame f;
  size_t size = 0;
  FhError err = { 0 };

  g_assert_cmpint (fh_frame_parse (b, n, &f, &size, &err), ==, FH_PARSE_FRAME);
  g_assert_cmpuint (size, ==, n);
  return f;
}

static void
expect_parse_error (const uint8_t *b, size_t n, uint16_t reason)
{
  FhFrame f;
  size_t size = 0;
  FhError err = { 0 };

  g_assert_cmpint (fh_frame_parse (b, n, &f, &size, &err), ==, FH_PARSE_ERROR);
  g_assert_cmpuint (err.reason, ==, reason);
  g_assert_cmpstr (err.text, !=, "");
}

static void
test_header (void)
{
  uint8_t payload[8] = { 0 };
  FhFrame f;
  size_t size = 0, n;
  FhError err;

  /* Byte layout: le32 len, le16 type, le16 reserved. */
  n = fh_encode_ping (buf, sizeof buf, FH_MSG_PING, 0x0102030405060708ull);
  g_assert_cmpuint (n, ==, 16);
  g_assert_cmpmem (buf, 8, ((uint8_t[]){ 8, 0, 0, 0, FH_MSG_PING, 0, 0, 0 }), 8);
  g_assert_cmpmem (buf + 8, 8, ((uint8_t[]){ 8, 7, 6, 5, 4, 3, 2, 1 }), 8);

  /* Partial frames need more, at every cut. */
  for (size_t cut = 0; cut < n; cut++)
    g_assert_cmpint (fh_frame_parse (buf, cut, &f, &size, &err), ==, FH_PARSE_NEED_MORE);
  f = parse_ok (buf, n);
  g_assert_cmpuint (f.msg_type, ==, FH_MSG_PING);
  g_assert_cmpuint (f.len, ==, 8);

  /* Two frames back to back: the first is returned with its own size. */
  memcpy (buf + n, buf, n);
  g_assert_cmpint (fh_frame_parse (buf, 2 * n, &f, &size, &err), ==, FH_PARSE_FRAME);
  g_assert_cmpuint (size, ==, n);

  /* Too big is refused from the header alone, before the payload. */
  n = fh_encode_raw (buf, sizeof buf, FH_MAX_PAYLOAD + 1, FH_MSG_HINTS, 0, NULL, 0);
  expect_parse_error (buf, n, FH_CLOSE_TOO_BIG);
  n = fh_encode_raw (buf, sizeof buf, 0xffffffffu, FH_MSG_HINTS, 0, NULL, 0);
  expect_parse_error (buf, n, FH_CLOSE_TOO_BIG);
  /* Exactly the maximum is fine (needs more until it is all there). */
  n = fh_encode_raw (buf, sizeof buf, FH_MAX_PAYLOAD, FH_MSG_HINTS, 0, NULL, 0);
  g_assert_cmpint (fh_frame_parse (buf, n, &f, &size, &err), ==, FH_PARSE_NEED_MORE);

  n = fh_encode_raw (buf, sizeof buf, 8, 0, 0, payload, 8);
  expect_parse_error (buf, n, FH_CLOSE_UNKNOWN_TYPE);
  n = fh_encode_raw (buf, sizeof buf, 8, FH_MSG_MAX + 1, 0, payload, 8);
  expect_parse_error (buf, n, FH_CLOSE_UNKNOWN_TYPE);
  n = fh_encode_raw (buf, sizeof buf, 8, 0xffff, 0, payload, 8);
  expect_parse_error (buf, n, FH_CLOSE_UNKNOWN_TYPE);
  n = fh_encode_raw (buf, sizeof buf, 8, FH_MSG_PING, 1, payload, 8);
  expect_parse_error (buf, n, FH_CLOSE_MALFORMED);
}

static FhHello
make_hello (uint16_t n)
{
  FhHello h = { 0 };

  h.version = FH_PROTO_VERSION;
  h.num_vcpus = n;
  h.features = FH_F_ALL;
  h.qemu_pid = 4242;
  for (int i = 0; i < 16; i++)
    h.uuid[i] = (uint8_t) (0xa0 + i);
  g_strlcpy (h.name, "guest-1", sizeof h.name);
  for (unsigned i = 0; i < n; i++)
    h.tids[i] = 1000 + i;
  return h;
}

static void
expect_hello_error (size_t n, uint16_t reason)
{
  FhFrame f = parse_ok (buf, n);
  FhHello out;
  FhError err = { 0 };

  g_assert_false (fh_decode_hello (&f, &out, &err));
  g_assert_cmpuint (err.reason, ==, reason);
}

static void
test_hello (void)
{
  FhHello h = make_hello (4), out;
  FhError err;
  size_t n = fh_encode_hello (buf, sizeof buf, &h);
  FhFrame f;

  g_assert_cmpuint (n, ==, 8 + 96 + 16);
  /* Spot-check the layout against the header's offsets. */
  g_assert_cmpuint (buf[8 + 2], ==, 4);
  g_assert_cmpuint (buf[8 + 16], ==, 0xa0);
  g_assert_cmpstr ((char *) buf + 8 + 32, ==, "guest-1");
  g_assert_cmpuint (buf[8 + 96], ==, 1000 & 0xff);
  f = parse_ok (buf, n);
  g_assert_true (fh_decode_hello (&f, &out, &err));
  g_assert_cmpuint (out.num_vcpus, ==, 4);
  g_assert_cmpuint (out.qemu_pid, ==, 4242);
  g_assert_cmpuint (out.tids[3], ==, 1003);
  g_assert_cmpstr (out.name, ==, "guest-1");
  g_assert_cmpmem (out.uuid, 16, h.uuid, 16);

  /* The largest HELLO fits a frame. */
  h = make_hello (FH_MAX_VCPUS);
  n = fh_encode_hello (buf, sizeof buf, &h);
  f = parse_ok (buf, n);
  g_assert_true (fh_decode_hello (&f, &out, &err));

  h = make_hello (4);
  /* A peer of another version, earlier or later, is refused as such (PB-11). */
  h.version = FH_PROTO_VERSION + 1;
  expect_hello_error (fh_encode_hello (buf, sizeof buf, &h), FH_CLOSE_VERSION);
  h.version = FH_PROTO_VERSION - 1;
  expect_hello_error (fh_encode_hello (buf, sizeof buf, &h), FH_CLOSE_VERSION);

  h = make_hello (4);
  n = fh_encode_hello (buf, sizeof buf, &h);
  buf[8 + 2] = 0; /* num_vcpus = 0 */
  buf[8 + 3] = 0;
  expect_hello_error (n, FH_CLOSE_MALFORMED);
  n = fh_encode_hello (buf, sizeof buf, &h);
  buf[8 + 2] = 1; /* 1 vCPU but 4 tids: wrong length */
  expect_hello_error (n, FH_CLOSE_MALFORMED);
  n = fh_encode_hello (buf, sizeof buf, &h);
  fh_put_le16 (buf + 8 + 2, FH_MAX_VCPUS + 1); /* one over the limit */
  expect_hello_error (n, FH_CLOSE_MALFORMED);
  /* ... with the length that count would have: the range decides */
  memset (buf, 0, sizeof buf);
  n = fh_encode_raw (buf, sizeof buf, 96 + 4 * (FH_MAX_VCPUS + 1), FH_MSG_HELLO, 0, NULL, 0) +
      96 + 4 * (FH_MAX_VCPUS + 1);
  fh_put_le16 (buf + 8, FH_PROTO_VERSION);
  fh_put_le16 (buf + 8 + 2, FH_MAX_VCPUS + 1);
  expect_hello_error (n, FH_CLOSE_MALFORMED);
  n = fh_encode_hello (buf, sizeof buf, &h);
  buf[8 + 12] = 1; /* reserved */
  expect_hello_error (n, FH_CLOSE_MALFORMED);
  n = fh_encode_hello (buf, sizeof buf, &h);
  memset (buf + 8 + 32, 'x', FH_NAME_MAX); /* name without NUL */
  expect_hello_error (n, FH_CLOSE_MALFORMED);

  /* Truncated: header length says 50. */
  n = fh_encode_hello (buf, sizeof buf, &h);
  buf[0] = 50;
  expect_hello_error (8 + 50, FH_CLOSE_MALFORMED);
  /* Too short to hold even the version. */
  n = fh_encode_raw (buf, sizeof buf, 1, FH_MSG_HELLO, 0, "\1", 1);
  expect_hello_error (n, FH_CLOSE_MALFORMED);
  /* A different message where HELLO is due. */
  n = fh_encode_ping (buf, sizeof buf, FH_MSG_PING, 1);
  expect_hello_error (n, FH_CLOSE_PROTOCOL);
}

static FhHints
make_hints (uint16_t n)
{
  FhHints h = { 0 };

  h.timestamp_ns = 123456789;
  h.num_records = n;
  for (unsigned i = 0; i < n; i++) {
    h.records[i].vcpu = i;
    h.records[i].flags = VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID;
    h.records[i].clamp_min = 100 * i;
    h.records[i].clamp_max = 1024;
    h.records[i].seq = 7 + i;
  }
  return h;
}

static gboolean
hints_decode (const FhHints *h, uint16_t num_vcpus, uint32_t features, FhError *err)
{
  size_t n = fh_encode_hints (buf, sizeof buf, h);
  FhFrame f = parse_ok (buf, n);
  FhHints out;

  return fh_decode_hints (&f, num_vcpus, features, &out, err);
}

typedef struct {
  const char *name;
  uint16_t flags, min, max, perf, vcpu;
  uint32_t features;
  gboolean ok;
} RecordCase;

static void
test_hints (void)
{
  FhHints h = make_hints (4), out;
  FhError err;
  size_t n = fh_encode_hints (buf, sizeof buf, &h);
  FhFrame f = parse_ok (buf, n);
  /* Every record rule of the spec, one row each. */
  static const RecordCase cases[] = {
    { "min+max", 3, 100, 200, 0, 0, 0, TRUE },
    { "no hint", 0, 0, 0, 0, 0, 0, TRUE },
    { "idle only", VIRTIO_FREQHINT_R_IDLE, 0, 0, 0, 0, 0, TRUE },
    { "full scale", 3, 1024, 1024, 0, 0, 0, TRUE },
    { "min == max", 3, 512, 512, 0, 0, 0, TRUE },
    { "perf negotiated", 4, 0, 0, 800, 0, FH_F_PERF, TRUE },
    { "vcpu last", 1, 5, 0, 0, 3, 0, TRUE },
    { "vcpu out of range", 1, 5, 0, 0, 4, 0, FALSE },
    { "unknown flag", 0x10, 0, 0, 0, 0, 0, FALSE },
    { "min over scale", 1, 1025, 0, 0, 0, 0, FALSE },
    { "max over scale", 2, 0, 1025, 0, 0, 0, FALSE },
    { "perf over scale", 4, 0, 0, 1025, 0, FH_F_PERF, FALSE },
    { "min without flag", 2, 5, 10, 0, 0, 0, FALSE },
    { "max without flag", 1, 5, 10, 0, 0, 0, FALSE },
    { "perf without flag", 3, 5, 10, 9, 0, FH_F_PERF, FALSE },
    { "min > max", 3, 600, 500, 0, 0, 0, FALSE },
    { "min > max, max invalid", 1, 600, 0, 0, 0, 0, TRUE },
    { "perf not negotiated", 4, 0, 0, 800, 0, 0, FALSE },
  };

  g_assert_true (fh_decode_hints (&f, 4, 0, &out, &err));
  g_assert_cmpuint (out.num_records, ==, 4);
  g_assert_cmpuint (out.timestamp_ns, ==, 123456789);
  g_assert_cmpuint (out.records[3].clamp_min, ==, 300);
  g_assert_cmpuint (out.records[3].seq, ==, 10);

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
    const RecordCase *c = &cases[i];

    h = make_hints (1);
    h.records[0] = (FhRecord){ c->vcpu, c->flags, c->min, c->max, c->perf, 1 };
    g_test_message ("record case: %s", c->name);
    err.reason = 0xffff;
    g_assert_cmpint (hints_decode (&h, 4, c->features, &err), ==, c->ok);
    if (!c->ok)
      g_assert_cmpuint (err.reason, ==, FH_CLOSE_MALFORMED);
  }

  /* Record reserved field. */
  h = make_hints (2);
  n = fh_encode_hints (buf, sizeof buf, &h);
  buf[8 + 16 + 16 + 10] = 1;
  f = parse_ok (buf, n);
  g_assert_false (fh_decode_hints (&f, 4, 0, &out, &err));

  /* Frame-level rules. */
  h = make_hints (4);
  h.flags = FH_HINTS_F_FULL;
  g_assert_true (hints_decode (&h, 4, 0, &err));
  g_assert_false (hints_decode (&h, 5, 0, &err)); /* FULL needs every vCPU */
  g_assert_false (hints_decode (&h, 3, 0, &err)); /* more records than vCPUs */
  h.flags = 2;
  g_assert_false (hints_decode (&h, 4, 0, &err));
  h = make_hints (1);
  h.num_records = 0;
  g_assert_false (hints_decode (&h, 4, 0, &err));
  h = make_hints (2);
  n = fh_encode_hints (buf, sizeof buf, &h);
  buf[8 + 12] = 1; /* header reserved */
  f = parse_ok (buf, n);
  g_assert_false (fh_decode_hints (&f, 4, 0, &out, &err));
  n = fh_encode_hints (buf, sizeof buf, &h);
  buf[8 + 8] = 3; /* num_records 3, payload holds 2 */
  f = parse_ok (buf, n);
  g_assert_false (fh_decode_hints (&f, 4, 0, &out, &err));
  g_assert_cmpuint (err.reason, ==, FH_CLOSE_MALFORMED);
  /* payload not a multiple of 16 */
  n = fh_encode_hints (buf, sizeof buf, &h);
  buf[0] += 1;
  f = parse_ok (buf, n + 1);
  g_assert_false (fh_decode_hints (&f, 4, 0, &out, &err));
  /* shorter than the hints header */
  n = fh_encode_raw (buf, sizeof buf, 4, FH_MSG_HINTS, 0, "\0\0\0\0", 4);
  f = parse_ok (buf, n);
  g_assert_false (fh_decode_hints (&f, 4, 0, &out, &err));
}

/*
 * Issue 42 item 5: a VM of 1024 vCPUs (at least the vsock transport's
 * limit) fits every per-vCPU message, and its full HINTS is the largest
 * frame there is.
 */
static void
test_max_vcpus (void)
{
  static FhHints h, out;
  static FhGrants g, go;
  static FhVcpus v, vo;
  FhError err;
  FhFrame f;
  size_t n;

  g_assert_cmpuint (FH_MAX_VCPUS, >=, 1024);
  g_assert_cmpuint (FH_MAX_PAYLOAD, ==, 16 + 16 * FH_MAX_VCPUS);

  h = make_hints (FH_MAX_VCPUS);
  for (unsigned i = 0; i < FH_MAX_VCPUS; i++)
    h.records[i].clamp_min = i % 1025;
  h.flags = FH_HINTS_F_FULL;
  n = fh_encode_hints (buf, sizeof buf, &h);
  g_assert_cmpuint (n, ==, FH_FRAME_MAX);
  f = parse_ok (buf, n);
  g_assert_true (fh_decode_hints (&f, FH_MAX_VCPUS, 0, &out, &err));
  g_assert_cmpuint (out.num_records, ==, FH_MAX_VCPUS);
  g_assert_cmpuint (out.records[FH_MAX_VCPUS - 1].vcpu, ==, FH_MAX_VCPUS - 1);
  g_assert_cmpuint (out.records[1000].clamp_min, ==, 1000);
  /* one record more than the limit is no frame at all */
  fh_put_le32 (buf, FH_MAX_PAYLOAD + 16);
  g_assert_cmpint (fh_frame_parse (buf, sizeof buf, &f, &n, &err), ==, FH_PARSE_ERROR);
  g_assert_cmpuint (err.reason, ==, FH_CLOSE_TOO_BIG);
  h.num_records = FH_MAX_VCPUS + 1;
  g_assert_cmpuint (fh_encode_hints (buf, sizeof buf, &h), ==, 0);

  g.operator_ceiling = 1024;
  g.num_grants = FH_MAX_VCPUS;
  for (unsigned i = 0; i < FH_MAX_VCPUS; i++)
    g.grants[i] = (FhGrant){ 0, (uint16_t) (i % 1025) };
  n = fh_encode_grants (buf, sizeof buf, &g);
  g_assert_cmpuint (n, ==, 8 + 8 + 4 * FH_MAX_VCPUS);
  f = parse_ok (buf, n);
  g_assert_true (fh_decode_grants (&f, FH_MAX_VCPUS, &go, &err));
  g_assert_cmpuint (go.grants[FH_MAX_VCPUS - 1].ceiling, ==, (FH_MAX_VCPUS - 1) % 1025);

  v.num_vcpus = FH_MAX_VCPUS;
  for (unsigned i = 0; i < FH_MAX_VCPUS; i++)
    v.tids[i] = 5000 + i;
  n = fh_encode_vcpus (buf, sizeof buf, &v);
  g_assert_cmpuint (n, ==, 8 + 8 + 4 * FH_MAX_VCPUS);
  f = parse_ok (buf, n);
  g_assert_true (fh_decode_vcpus (&f, FH_MAX_VCPUS, &vo, &err));
  g_assert_cmpuint (vo.tids[FH_MAX_VCPUS - 1], ==, 5000 + FH_MAX_VCPUS - 1);
}

static void
test_welcome_grants_close (void)
{
  FhWelcome w = { FH_PROTO_VERSION, FH_F_PERF, 2500 }, wo;
  FhGrants g = { 10, 900, 2, { { 10, 500 }, { 20, 900 } } }, go;
  FhClose co;
  FhError err;
  FhFrame f;
  size_t n;
  uint64_t cookie;

  n = fh_encode_welcome (buf, sizeof buf, &w);
  g_assert_cmpuint (n, ==, 8 + 16);
  f = parse_ok (buf, n);
  g_assert_true (fh_decode_welcome (&f, &wo, &err));
  g_assert_cmpuint (wo.keepalive_ms, ==, 2500);
  g_assert_cmpuint (wo.features, ==, FH_F_PERF);
  buf[8 + 14] = 1;
  g_assert_false (fh_decode_welcome (&f, &wo, &err));

  n = fh_encode_grants (buf, sizeof buf, &g);
  g_assert_cmpuint (n, ==, 8 + 8 + 8);
  f = parse_ok (buf, n);
  g_assert_true (fh_decode_grants (&f, 2, &go, &err));
  g_assert_cmpuint (go.grants[1].ceiling, ==, 900);
  g_assert_false (fh_decode_grants (&f, 3, &go, &err));
  g.grants[0].floor = 600; /* floor > ceiling */
  n = fh_encode_grants (buf, sizeof buf, &g);
  f = parse_ok (buf, n);
  g_assert_false (fh_decode_grants (&f, 2, &go, &err));
  g.grants[0].floor = 0;
  g.operator_ceiling = 1025;
  n = fh_encode_grants (buf, sizeof buf, &g);
  f = parse_ok (buf, n);
  g_assert_false (fh_decode_grants (&f, 2, &go, &err));

  n = fh_encode_ping (buf, sizeof buf, FH_MSG_PONG, 99);
  f = parse_ok (buf, n);
  g_assert_true (fh_decode_ping (&f, &cookie, &err));
  g_assert_cmpuint (cookie, ==, 99);
  n = fh_encode_raw (buf, sizeof buf, 4, FH_MSG_PING, 0, "abcd", 4);
  f = parse_ok (buf, n);
  g_assert_false (fh_decode_ping (&f, &cookie, &err));
  g_assert_cmpuint (fh_encode_ping (buf, sizeof buf, FH_MSG_HELLO, 1), ==, 0);

  n = fh_encode_close (buf, sizeof buf, FH_CLOSE_DUPLICATE, "replaced");
  g_assert_cmpuint (n, ==, 8 + 136);
  f = parse_ok (buf, n);
  g_assert_true (fh_decode_close (&f, &co, &err));
  g_assert_cmpuint (co.reason, ==, FH_CLOSE_DUPLICATE);
  g_assert_cmpstr (co.text, ==, "replaced");
  /* PB-9: an unknown reason, reserved fields set, a text without NUL: still a close. */
  buf[8] = FH_CLOSE_REASON_MAX + 1;
  buf[10] = 1;
  buf[12] = 1;
  g_assert_true (fh_decode_close (&f, &co, &err));
  g_assert_cmpuint (co.reason, ==, FH_CLOSE_REASON_MAX + 1);
  g_assert_cmpstr (fh_close_reason_name (co.reason), ==, "unknown");
  g_assert_cmpstr (co.text, ==, "replaced");
  memset (buf + 16, 'x', FH_TEXT_MAX);
  g_assert_true (fh_decode_close (&f, &co, &err));
  g_assert_cmpstr (co.text, ==, "");
  /* only the length makes a CLOSE malformed */
  n = fh_encode_raw (buf, sizeof buf, 8, FH_MSG_CLOSE, 0, "\0\0\0\0\0\0\0\0", 8);
  f = parse_ok (buf, n);
  g_assert_false (fh_decode_close (&f, &co, &err));
  g_assert_cmpuint (err.reason, ==, FH_CLOSE_MALFORMED);
  /* Overlong text is cut and stays NUL-terminated. */
  {
    char longtext[300];

    memset (longtext, 'y', sizeof longtext - 1);
    longtext[sizeof longtext - 1] = '\0';
    n = fh_encode_close (buf, sizeof buf, FH_CLOSE_NORMAL, longtext);
    f = parse_ok (buf, n);
    g_assert_true (fh_decode_close (&f, &co, &err));
    g_assert_cmpuint (strlen (co.text), ==, FH_TEXT_MAX - 1);
  }

  /* Encoders refuse small buffers. */
  g_assert_cmpuint (fh_encode_close (buf, 20, FH_CLOSE_NORMAL, ""), ==, 0);
}

/* PA-18: HOST_FREQ layout (8 + 76 x classes + vCPUs) and every DEV-4 rule. */
/* PD-20, PA-26: CUR_FREQ's layout and the checks against the latest HOST_FREQ */
/* Two classes (a table, a continuous range) for three vCPUs, the third without one. */
static void
two_classes (FhHostFreq *hf)
{
  memset (hf, 0, sizeof *hf);
  hf->num_classes = 2;
  hf->num_vcpus = 3;
  hf->classes[0] = (FhFreqClass){ 800000, 3200000, 128, 3, { 800000, 1600000, 3200000 } };
  hf->classes[1] = (FhFreqClass){ 400000, 2000000, 51, 0, { 0 } };
  hf->freq_class[0] = 0;
  hf->freq_class[1] = 1;
  hf->freq_class[2] = VIRTIO_FREQHINT_NO_FREQ_CLASS;
}

static void
test_cur_freq (void)
{
  static FhHostFreq hf;
  static FhCurFreq cf, out;
  FhError err;
  FhFrame f;
  size_t n;

  two_classes (&hf);
  memset (&cf, 0, sizeof cf);
  cf.num_vcpus = 3;
  cf.cur_khz[0] = 3200000;
  cf.cur_khz[1] = 400000;
  n = fh_encode_cur_freq (buf, sizeof buf, &cf, &hf);
  g_assert_cmpuint (n, ==, 8 + 8 + 3 * 4);
  g_assert_cmpuint (buf[4], ==, FH_MSG_CUR_FREQ);
  g_assert_cmpuint (buf[8], ==, 3); /* num_vcpus */
  g_assert_cmpuint (buf[16] | buf[17] << 8 | buf[18] << 16, ==, 3200000);
  g_assert_cmpuint (buf[20] | buf[21] << 8 | buf[22] << 16, ==, 400000);
  g_assert_cmpuint (buf[24] | buf[25] | buf[26] | buf[27], ==, 0);
  g_assert_cmpstr (fh_msg_type_name (FH_MSG_CUR_FREQ), ==, "CUR_FREQ");
  f = parse_ok (buf, n);
  g_assert_true (fh_decode_cur_freq (&f, 3, &hf, &out, &err));
  g_assert_cmpuint (out.num_vcpus, ==, 3);
  g_assert_cmpuint (out.cur_khz[0], ==, 3200000);
  g_assert_cmpuint (out.cur_khz[1], ==, 400000);
  g_assert_cmpuint (out.cur_khz[2], ==, 0);

  /* Before any HOST_FREQ: a protocol error, whatever the frame */
  g_assert_false (fh_decode_cur_freq (&f, 3, NULL, &out, &err));
  g_assert_cmpuint (err.reason, ==, FH_CLOSE_PROTOCOL);
  /* HELLO said 4 */
  g_assert_false (fh_decode_cur_freq (&f, 4, &hf, &out, &err));
  g_assert_cmpuint (err.reason, ==, FH_CLOSE_MALFORMED);
  buf[10] = 1; /* reserved */
  g_assert_false (fh_decode_cur_freq (&f, 3, &hf, &out, &err));
  buf[10] = 0;
  buf[15] = 1; /* reserved2 */
  g_assert_false (fh_decode_cur_freq (&f, 3, &hf, &out, &err));
  buf[15] = 0;
  g_assert_true (fh_decode_cur_freq (&f, 3, &hf, &out, &err));
  f.len--; /* length must be exact */
  g_assert_false (fh_decode_cur_freq (&f, 3, &hf, &out, &err));
  g_assert_cmpuint (err.reason, ==, FH_CLOSE_MALFORMED);

  /* Values: each outside its class, or for a vCPU without one, is refused */
  {
    static const struct {
      guint vcpu;
      guint32 khz;
    } bad[] = {
      { 0, 799999 }, { 0, 3200001 }, { 1, 399999 }, { 1, 2000001 }, { 2, 1000000 },
    };

    for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
      static FhCurFreq c;

      c = cf;
      c.cur_khz[bad[i].vcpu] = bad[i].khz;
      g_assert_cmpuint (fh_encode_cur_freq (buf, sizeof buf, &c, &hf), ==, 0);
      cf.cur_khz[bad[i].vcpu] = 0;
      n = fh_encode_cur_freq (buf, sizeof buf, &cf, &hf);
      g_assert_cmpuint (n, >, 0);
      fh_put_le32 (buf + 16 + 4 * bad[i].vcpu, bad[i].khz);
      f = parse_ok (buf, n);
      g_assert_false (fh_decode_cur_freq (&f, 3, &hf, &out, &err));
      g_assert_cmpuint (err.reason, ==, FH_CLOSE_MALFORMED);
      cf.cur_khz[0] = 3200000;
      cf.cur_khz[1] = 400000;
      cf.cur_khz[2] = 0;
    }
  }
  /* The count must match the classes' (HELLO's) */
  cf.num_vcpus = 2;
  g_assert_cmpuint (fh_encode_cur_freq (buf, sizeof buf, &cf, &hf), ==, 0);
}

static void
test_host_freq (void)
{
  static FhHostFreq hf, out;
  FhError err;
  FhFrame f;
  size_t n;

  two_classes (&hf);
  n = fh_encode_host_freq (buf, sizeof buf, &hf);
  g_assert_cmpuint (n, ==, 8 + 8 + 2 * 76 + 3);
  /* byte layout: header, then class 0 at 16, class 1 at 92, classes at 168 */
  g_assert_cmpuint (buf[4], ==, FH_MSG_HOST_FREQ);
  g_assert_cmpuint (buf[8], ==, 2);
  g_assert_cmpuint (buf[10], ==, 3);
  g_assert_cmpuint (buf[16] | buf[17] << 8 | buf[18] << 16, ==, 800000);
  g_assert_cmpuint (buf[16 + 8], ==, 128);
  g_assert_cmpuint (buf[16 + 10], ==, 3);
  g_assert_cmpuint (buf[16 + 12 + 8] | buf[16 + 12 + 9] << 8 | buf[16 + 12 + 10] << 16, ==,
                    3200000);
  g_assert_cmpuint (buf[16 + 12 + 12], ==, 0); /* past num_freqs: zero */
  g_assert_cmpuint (buf[92 + 8], ==, 51);
  g_assert_cmpuint (buf[168], ==, 0);
  g_assert_cmpuint (buf[169], ==, 1);
  g_assert_cmpuint (buf[170], ==, 0xff);
  f = parse_ok (buf, n);
  g_assert_true (fh_decode_host_freq (&f, 3, &out, &err));
  g_assert_cmpuint (out.num_classes, ==, 2);
  g_assert_cmpuint (out.classes[0].freqs_khz[1], ==, 1600000);
  g_assert_cmpuint (out.classes[1].max_khz, ==, 2000000);
  g_assert_cmpuint (out.freq_class[2], ==, 0xff);
  g_assert_false (fh_decode_host_freq (&f, 4, &out, &err)); /* HELLO said 4 */
  g_assert_cmpuint (err.reason, ==, FH_CLOSE_MALFORMED);
  buf[12] = 1; /* reserved */
  g_assert_false (fh_decode_host_freq (&f, 3, &out, &err));
  buf[12] = 0;
  buf[170] = 2; /* a class that does not exist */
  g_assert_false (fh_decode_host_freq (&f, 3, &out, &err));
  buf[170] = 0xff;
  buf[16 + 12 + 12] = 1; /* non-zero past num_freqs */
  g_assert_false (fh_decode_host_freq (&f, 3, &out, &err));
  buf[16 + 12 + 12] = 0;
  g_assert_true (fh_decode_host_freq (&f, 3, &out, &err));
  f.len--; /* length must be exact */
  g_assert_false (fh_decode_host_freq (&f, 3, &out, &err));

  /* zero classes: every vCPU unknown; 9 bytes for one vCPU */
  {
    static FhHostFreq none;

    none.num_vcpus = 1;
    none.freq_class[0] = 0xff;
    n = fh_encode_host_freq (buf, sizeof buf, &none);
    g_assert_cmpuint (n, ==, 8 + 9);
    f = parse_ok (buf, n);
    g_assert_true (fh_decode_host_freq (&f, 1, &out, &err));
    none.freq_class[0] = 0;
    g_assert_cmpuint (fh_encode_host_freq (buf, sizeof buf, &none), ==, 0);
  }

  /* DEV-4: the encoder refuses, and the decoder rejects, each bad class */
  {
    static const FhFreqClass bad[] = {
      { 0, 3200000, 1, 0, { 0 } },                      /* min 0 */
      { 3200000, 800000, 1, 0, { 0 } },                 /* min > max */
      { 800000, 3200000, 0, 0, { 0 } },                 /* perf_step 0 */
      { 800000, 3200000, 1025, 0, { 0 } },              /* perf_step > 1024 */
      { 800000, 3200000, 1, 17, { 0 } },                /* table too long */
      { 800000, 3200000, 1, 2, { 1600000, 1600000 } },  /* not strictly ascending */
      { 800000, 3200000, 1, 2, { 1600000, 1200000 } },  /* descending */
      { 800000, 3200000, 1, 1, { 700000 } },            /* below min */
      { 800000, 3200000, 1, 1, { 3300000 } },           /* above max */
      { 800000, 3200000, 1, 1, { 800000, 900000 } },    /* non-zero past num_freqs */
    };

    for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
      static FhHostFreq h;
      uint8_t *q;

      g_test_message ("bad class %zu", i);
      g_assert_false (fh_freq_class_check (&bad[i], &err));
      memset (&h, 0, sizeof h);
      h.num_classes = 1;
      h.num_vcpus = 1;
      h.classes[0] = bad[i];
      g_assert_cmpuint (fh_encode_host_freq (buf, sizeof buf, &h), ==, 0);
      /* the same bytes written raw: the decoder refuses them too */
      h.classes[0] = hf.classes[1];
      n = fh_encode_host_freq (buf, sizeof buf, &h);
      g_assert_cmpuint (n, >, 0);
      q = buf + 16;
      q[0] = bad[i].min_khz & 0xff; q[1] = bad[i].min_khz >> 8 & 0xff; q[2] = bad[i].min_khz >> 16 & 0xff; q[3] = bad[i].min_khz >> 24;
      q[4] = bad[i].max_khz & 0xff; q[5] = bad[i].max_khz >> 8 & 0xff; q[6] = bad[i].max_khz >> 16 & 0xff; q[7] = bad[i].max_khz >> 24;
      q[8] = bad[i].perf_step & 0xff; q[9] = bad[i].perf_step >> 8;
      q[10] = bad[i].num_freqs & 0xff; q[11] = bad[i].num_freqs >> 8;
      for (int j = 0; j < VIRTIO_FREQHINT_MAX_FREQS; j++)
        for (int b = 0; b < 4; b++)
          q[12 + 4 * j + b] = bad[i].freqs_khz[j] >> (8 * b) & 0xff;
      f = parse_ok (buf, n);
      g_assert_false (fh_decode_host_freq (&f, 1, &out, &err));
      g_assert_cmpuint (err.reason, ==, FH_CLOSE_MALFORMED);
    }
  }
  hf.num_classes = VIRTIO_FREQHINT_MAX_FREQ_CLASSES + 1;
  g_assert_cmpuint (fh_encode_host_freq (buf, sizeof buf, &hf), ==, 0);
  /* a full one fits a frame */
  memset (&hf, 0, sizeof hf);
  hf.num_classes = VIRTIO_FREQHINT_MAX_FREQ_CLASSES;
  hf.num_vcpus = FH_MAX_VCPUS;
  for (int i = 0; i < VIRTIO_FREQHINT_MAX_FREQ_CLASSES; i++) {
    hf.classes[i] = (FhFreqClass){ 100000, 5000000, 1, VIRTIO_FREQHINT_MAX_FREQS, { 0 } };
    for (int j = 0; j < VIRTIO_FREQHINT_MAX_FREQS; j++)
      hf.classes[i].freqs_khz[j] = 100000 + 300000 * (uint32_t) j;
  }
  n = fh_encode_host_freq (buf, sizeof buf, &hf);
  g_assert_cmpuint (n, ==, 8 + 8 + 8 * 76 + FH_MAX_VCPUS);
  f = parse_ok (buf, n);
  g_assert_true (fh_decode_host_freq (&f, FH_MAX_VCPUS, &out, &err));
}

/* PA-19: VCPUS layout (8 + 4 x vCPUs), count and reserved fields checked. */
static void
test_vcpus (void)
{
  static FhVcpus v = { 3, { 101, 0, 103 } }, out;
  FhError err;
  FhFrame f;
  size_t n;

  n = fh_encode_vcpus (buf, sizeof buf, &v);
  g_assert_cmpuint (n, ==, 8 + 8 + 12);
  g_assert_cmpuint (buf[4], ==, FH_MSG_VCPUS);
  g_assert_cmpuint (buf[8], ==, 3);
  g_assert_cmpuint (buf[16], ==, 101);
  g_assert_cmpuint (buf[24], ==, 103);
  f = parse_ok (buf, n);
  g_assert_true (fh_decode_vcpus (&f, 3, &out, &err));
  g_assert_cmpuint (out.tids[0], ==, 101);
  g_assert_cmpuint (out.tids[1], ==, 0);
  g_assert_cmpuint (out.tids[2], ==, 103);
  g_assert_false (fh_decode_vcpus (&f, 2, &out, &err));
  buf[10] = 1;
  g_assert_false (fh_decode_vcpus (&f, 3, &out, &err));
  buf[10] = 0;
  buf[12] = 1;
  g_assert_false (fh_decode_vcpus (&f, 3, &out, &err));
  buf[12] = 0;
  f.len -= 4;
  g_assert_false (fh_decode_vcpus (&f, 3, &out, &err));
  v.num_vcpus = 0;
  g_assert_cmpuint (fh_encode_vcpus (buf, sizeof buf, &v), ==, 0);
  v.num_vcpus = FH_MAX_VCPUS + 1;
  g_assert_cmpuint (fh_encode_vcpus (buf, sizeof buf, &v), ==, 0);
}

/* 4.1a: a relay's HELLO names where the guest came from, and nothing of its own. */
static void
test_relay_hello (void)
{
  FhHello h = { 0 }, out;
  FhError err = { 0 };
  size_t n;
  FhFrame f;

  h.version = FH_PROTO_VERSION;
  h.num_vcpus = 3;
  h.features = FH_F_PERF | FH_F_RELAY;
  h.relay_transport = FH_RELAY_VSOCK;
  h.relay_cid = 42;
  n = fh_encode_hello (buf, sizeof buf, &h);
  g_assert_cmpuint (n, ==, FH_FRAME_HDR_SIZE + 96 + 3 * 4 + sizeof (struct fh_hello_relay));
  f = parse_ok (buf, n);
  g_assert_true (fh_decode_hello (&f, &out, &err));
  g_assert_cmpuint (out.relay_transport, ==, FH_RELAY_VSOCK);
  g_assert_cmpuint (out.relay_cid, ==, 42);
  g_assert_cmpstr (out.relay_path, ==, "");

  /* hybrid: a path and the hypervisor's pid, no CID */
  h.relay_transport = FH_RELAY_HYBRID;
  h.relay_cid = 0;
  h.qemu_pid = 777;
  g_strlcpy (h.relay_path, "/run/fc/v.sock_853", sizeof h.relay_path);
  f = parse_ok (buf, fh_encode_hello (buf, sizeof buf, &h));
  g_assert_true (fh_decode_hello (&f, &out, &err));
  g_assert_cmpstr (out.relay_path, ==, "/run/fc/v.sock_853");
  g_assert_cmpuint (out.qemu_pid, ==, 777);

  /* each of these is MALFORMED: a name, a thread id, a relative path, a CID
   * with a path, a pid for a vsock peer, an unknown transport, reserved set,
   * the tail missing */
  g_strlcpy (h.name, "me", sizeof h.name);
  expect_hello_error (fh_encode_hello (buf, sizeof buf, &h), FH_CLOSE_MALFORMED);
  h.name[0] = '\0';
  h.tids[1] = 5;
  expect_hello_error (fh_encode_hello (buf, sizeof buf, &h), FH_CLOSE_MALFORMED);
  h.tids[1] = 0;
  g_strlcpy (h.relay_path, "v.sock_853", sizeof h.relay_path);
  expect_hello_error (fh_encode_hello (buf, sizeof buf, &h), FH_CLOSE_MALFORMED);
  g_strlcpy (h.relay_path, "/v.sock_853", sizeof h.relay_path);
  h.relay_cid = 3;
  expect_hello_error (fh_encode_hello (buf, sizeof buf, &h), FH_CLOSE_MALFORMED);
  h.relay_transport = FH_RELAY_VSOCK;
  h.relay_path[0] = '\0';
  expect_hello_error (fh_encode_hello (buf, sizeof buf, &h), FH_CLOSE_MALFORMED); /* qemu_pid 777 */
  h.qemu_pid = 0;
  h.relay_transport = 3;
  expect_hello_error (fh_encode_hello (buf, sizeof buf, &h), FH_CLOSE_MALFORMED);
  h.relay_transport = FH_RELAY_VSOCK;
  n = fh_encode_hello (buf, sizeof buf, &h);
  buf[FH_FRAME_HDR_SIZE + 96 + 12 + 2] = 1; /* fh_hello_relay.reserved */
  expect_hello_error (n, FH_CLOSE_MALFORMED);
  n = fh_encode_hello (buf, sizeof buf, &h);
  fh_put_le32 (buf, (uint32_t) (96 + 12)); /* no tail */
  expect_hello_error (FH_FRAME_HDR_SIZE + 96 + 12, FH_CLOSE_MALFORMED);
}

/* A HINTS frame of n records for vCPUs 0..n-1, each a valid floor; its size. */
static size_t
vsock_hints_frame (uint8_t *b, unsigned n)
{
  const size_t len = 8 + 16 * (size_t) n;

  memset (b, 0, 4 + len);
  fh_put_le32 (b, (uint32_t) len);
  fh_put_le16 (b + 4, VIRTIO_FREQHINT_MSG_HINTS);
  fh_put_le16 (b + 6, (uint16_t) n);
  for (unsigned i = 0; i < n; i++) {
    uint8_t *r = b + 4 + 8 + 16 * i;

    fh_put_le16 (r, (uint16_t) (i % FREQHINT_VSOCK_MAX_VCPUS));
    fh_put_le16 (r + 2, VIRTIO_FREQHINT_R_MIN_VALID);
    fh_put_le16 (r + 4, (uint16_t) (i % 1024));
    fh_put_le32 (r + 12, 1);
  }
  return 4 + len;
}

/*
 * VS-4: a guest of FREQHINT_VSOCK_MAX_VCPUS sends its whole state in one
 * frame, and the frame is the largest there is: one record more is
 * refused from the count alone.
 */
static void
test_vsock_max_frame (void)
{
  static uint8_t b[4 + 8 + 16 * (FREQHINT_VSOCK_MAX_VCPUS + 1)];
  static FhHints hints;
  FhFrame f;
  FhError err = { 0 };
  size_t size, n;
  unsigned rejected;

  g_assert_cmpuint (FREQHINT_VSOCK_MAX_FRAME, ==, 16392);
  g_assert_cmpuint (FH_VSOCK_FRAME_MAX, ==, 4 + 16392);

  n = vsock_hints_frame (b, FREQHINT_VSOCK_MAX_VCPUS);
  g_assert_cmpuint (n, ==, FH_VSOCK_FRAME_MAX);
  g_assert_cmpint (fh_vsock_frame_parse (b, n - 1, &f, &size, &err), ==, FH_PARSE_NEED_MORE);
  g_assert_cmpint (fh_vsock_frame_parse (b, n, &f, &size, &err), ==, FH_PARSE_FRAME);
  g_assert_cmpuint (size, ==, n);
  g_assert_true (fh_vsock_decode_hints (&f, FREQHINT_VSOCK_MAX_VCPUS, true, &hints, &rejected,
                                        &err));
  g_assert_cmpuint (rejected, ==, 0);
  g_assert_cmpuint (hints.num_records, ==, FREQHINT_VSOCK_MAX_VCPUS);
  g_assert_cmpuint (hints.records[1023].vcpu, ==, 1023);
  g_assert_cmpuint (hints.records[1023].clamp_min, ==, 1023);
  /* the same frame from a guest of one vCPU fewer has a record too many */
  g_assert_false (fh_vsock_decode_hints (&f, FREQHINT_VSOCK_MAX_VCPUS - 1, true, &hints,
                                         &rejected, &err));

  n = vsock_hints_frame (b, FREQHINT_VSOCK_MAX_VCPUS + 1);
  g_assert_cmpint (fh_vsock_frame_parse (b, 4, &f, &size, &err), ==, FH_PARSE_ERROR);
  g_assert_cmpuint (err.reason, ==, FH_CLOSE_TOO_BIG);
  g_assert_cmpint (fh_vsock_frame_parse (b, n, &f, &size, &err), ==, FH_PARSE_ERROR);
}

/* The vsock transport's guest framing (fh-vsock-codec.h). */
static void
test_vsock_codec (void)
{
  uint8_t b[FH_VSOCK_FRAME_MAX + 8] = { 0 };
  FhVsockHello hello;
  FhFrame f;
  FhHints hints;
  FhError err = { 0 };
  size_t size;
  unsigned rejected;
  static FhVsockFeedback fb;

  /* counts below 2 and above MAX_FRAME are refused from the count alone */
  fh_put_le32 (b, 1);
  g_assert_cmpint (fh_vsock_frame_parse (b, 4, &f, &size, &err), ==, FH_PARSE_ERROR);
  fh_put_le32 (b, FREQHINT_VSOCK_MAX_FRAME + 1);
  g_assert_cmpint (fh_vsock_frame_parse (b, 4, &f, &size, &err), ==, FH_PARSE_ERROR);
  g_assert_cmpuint (err.reason, ==, FH_CLOSE_TOO_BIG);

  /* HELLO */
  fh_put_le32 (b, 16);
  memset (b + 4, 0, 16);
  fh_put_le16 (b + 4, FREQHINT_VSOCK_MSG_HELLO);
  fh_put_le16 (b + 6, 1);
  fh_put_le32 (b + 8, 7);
  fh_put_le16 (b + 12, 4);
  g_assert_cmpint (fh_vsock_frame_parse (b, 19, &f, &size, &err), ==, FH_PARSE_NEED_MORE);
  g_assert_cmpint (fh_vsock_frame_parse (b, 20, &f, &size, &err), ==, FH_PARSE_FRAME);
  g_assert_cmpuint (size, ==, 20);
  g_assert_true (fh_vsock_decode_hello (&f, 256, &hello, &err));
  g_assert_cmpuint (hello.num_cpus, ==, 4);
  g_assert_cmpuint (hello.features, ==, 7);
  g_assert_false (fh_vsock_decode_hello (&f, 3, &hello, &err)); /* more CPUs than allowed */
  b[4 + 15] = 1;
  g_assert_false (fh_vsock_decode_hello (&f, 256, &hello, &err)); /* reserved */
  b[4 + 15] = 0;
  fh_put_le16 (b + 6, 2);
  g_assert_false (fh_vsock_decode_hello (&f, 256, &hello, &err));
  g_assert_cmpuint (err.reason, ==, FH_CLOSE_VERSION);

  /* HINTS: two records, the second breaking the record rules: dropped, counted */
  memset (b, 0, 64);
  fh_put_le32 (b, 8 + 32);
  fh_put_le16 (b + 4, VIRTIO_FREQHINT_MSG_HINTS);
  fh_put_le16 (b + 6, 2);
  fh_put_le16 (b + 12, 1);                                     /* vcpu 1 */
  fh_put_le16 (b + 14, VIRTIO_FREQHINT_R_MIN_VALID);
  fh_put_le16 (b + 16, 300);
  fh_put_le16 (b + 28, 9);                                     /* vcpu 9 of 4 */
  g_assert_cmpint (fh_vsock_frame_parse (b, 44, &f, &size, &err), ==, FH_PARSE_FRAME);
  g_assert_true (fh_vsock_decode_hints (&f, 4, true, &hints, &rejected, &err));
  g_assert_cmpuint (hints.num_records, ==, 1);
  g_assert_cmpuint (rejected, ==, 1);
  g_assert_cmpuint (hints.records[0].clamp_min, ==, 300);
  /* structural: more records than vCPUs, reserved header bytes, a cut record */
  g_assert_false (fh_vsock_decode_hints (&f, 1, true, &hints, &rejected, &err));
  b[4 + 5] = 1;
  g_assert_false (fh_vsock_decode_hints (&f, 4, true, &hints, &rejected, &err));
  b[4 + 5] = 0;
  f.len -= 2;
  g_assert_false (fh_vsock_decode_hints (&f, 4, true, &hints, &rejected, &err));

  /* CONFIG and FEEDBACK as the driver reads them */
  g_assert_cmpuint (fh_vsock_encode_config (b, sizeof b, 3, 0), ==, 0);
  g_assert_cmpuint (fh_vsock_encode_config (b, sizeof b, 3, FREQHINT_VSOCK_MAX_VCPUS + 1), ==, 0);
  g_assert_cmpuint (fh_vsock_encode_config (b, sizeof b, 3, FREQHINT_VSOCK_MAX_VCPUS), ==, 4 + 24);
  g_assert_cmpuint (fh_get_le16 (b + 14), ==, FREQHINT_VSOCK_MAX_VCPUS); /* max_records */
  g_assert_cmpuint (fh_vsock_encode_config (b, sizeof b, 3, 4), ==, 4 + 24);
  g_assert_cmpuint (fh_get_le32 (b), ==, 24);
  g_assert_cmpuint (fh_get_le16 (b + 4), ==, FREQHINT_VSOCK_MSG_CONFIG);
  g_assert_cmpuint (fh_get_le16 (b + 12), ==, 4);                             /* num_vcpus */
  g_assert_cmpuint (fh_get_le16 (b + 16), ==, FREQHINT_VSOCK_HOST_WINDOW_MS); /* rate_window_ms */
  g_assert_cmpuint (fh_get_le32 (b + 24), ==, fh_vsock_feedback_size (4));
  fb.flags = VIRTIO_FREQHINT_FB_ACTIVE;
  fb.seq = 5;
  fb.operator_ceiling = 768;
  fb.num_vcpus = 2;
  fb.grants[1] = (FhGrant){ 100, 700 };
  fb.freq_class[1] = VIRTIO_FREQHINT_NO_FREQ_CLASS;
  g_assert_cmpuint (fh_vsock_encode_feedback (b, sizeof b, &fb), ==, 4 + 624 + 16);
  g_assert_cmpuint (fh_get_le16 (b + 4), ==, VIRTIO_FREQHINT_MSG_FEEDBACK);
  g_assert_cmpuint (fh_get_le32 (b + 8), ==, 5);
  g_assert_cmpuint (fh_get_le16 (b + 4 + 10), ==, 768);
  g_assert_cmpuint (fh_get_le16 (b + 4 + 624 + 8), ==, 100);
  g_assert_cmpuint (fh_get_le16 (b + 4 + 624 + 10), ==, 700);
  g_assert_cmpuint (b[4 + 624 + 12], ==, VIRTIO_FREQHINT_NO_FREQ_CLASS);
  g_assert_cmpuint (fh_vsock_encode_feedback (b, 100, &fb), ==, 0); /* does not fit */
}

static void
test_names (void)
{
  for (int r = 0; r <= FH_CLOSE_REASON_MAX; r++)
    g_assert_cmpint (fh_close_reason_from_name (fh_close_reason_name (r)), ==, r);
  g_assert_cmpint (fh_close_reason_from_name ("nonsense"), ==, -1);
  g_assert_cmpstr (fh_msg_type_name (0), ==, "unknown");
  g_assert_cmpstr (fh_msg_type_name (FH_MSG_GRANTS), ==, "GRANTS");
  g_assert_cmpstr (fh_msg_type_name (FH_MSG_HOST_FREQ), ==, "HOST_FREQ");
  g_assert_cmpstr (fh_msg_type_name (FH_MSG_VCPUS), ==, "VCPUS");
  g_assert_cmpstr (fh_msg_type_name (FH_MSG_MAX + 1), ==, "unknown");
}

/* Random bytes never crash the decoders and never read past the buffer (ASan). */
static void
test_random (void)
{
  GRand *r = g_rand_new_with_seed (1234);

  for (int iter = 0; iter < 20000; iter++) {
    size_t n = g_rand_int_range (r, 0, 200);
    uint8_t *b = g_malloc (n ? n : 1);
    FhFrame f;
    size_t size;
    FhError err;

    for (size_t i = 0; i < n; i++)
      b[i] = (uint8_t) g_rand_int (r);
    if (n >= 8) { /* make plausible headers common */
      b[0] = (uint8_t) (n - 8);
      b[1] = b[2] = b[3] = 0;
      b[4] = (uint8_t) g_rand_int_range (r, 0, FH_MSG_MAX + 2);
      b[5] = b[6] = b[7] = 0;
    }
    if (fh_frame_parse (b, n, &f, &size, &err) == FH_PARSE_FRAME) {
      static FhHello hello;
      static FhHints hints;
      static FhGrants grants;
      FhWelcome w;
      FhClose c;
      uint64_t cookie;

      g_assert_cmpuint (size, <=, n);
      (void) fh_decode_hello (&f, &hello, &err);
      (void) fh_decode_hints (&f, 8, FH_F_ALL, &hints, &err);
      (void) fh_decode_welcome (&f, &w, &err);
      (void) fh_decode_grants (&f, 8, &grants, &err);
      (void) fh_decode_ping (&f, &cookie, &err);
      (void) fh_decode_close (&f, &c, &err);
      {
        static FhHostFreq hf;
        static FhVcpus vc;

        (void) fh_decode_host_freq (&f, 1, &hf, &err);
        (void) fh_decode_vcpus (&f, (uint16_t) ((n - 16) / 4), &vc, &err);
      }
    }
    g_free (b);
  }
  g_rand_free (r);
}

/* PA-6, PB-10: peer text made safe for logs, JSON and labels. */
static void
test_text_sanitize (void)
{
  static const struct {
    const char *in;
    const char *out;
  } cases[] = {
    { "vm-a", "vm-a" },
    { "", "" },
    { "caf\xc3\xa9 \xe2\x9c\x93", "caf\xc3\xa9 \xe2\x9c\x93" }, /* valid UTF-8 stays */
    { "a\nb\tc\x1b[0m", "a\\x0ab\\x09c\\x1b[0m" },
    { "back\\slash \"q\"", "back\\\\slash \"q\"" },
    { "del\x7f", "del\\x7f" },
    { "bad\xff\xfe" "end", "bad\xef\xbf\xbd\xef\xbf\xbd" "end" },    /* U+FFFD each */
    { "c1\xc2\x85 rlo\xe2\x80\xae ls\xe2\x80\xa8", "c1\\u{0085} rlo\\u{202e} ls\\u{2028}" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *s = fh_text_sanitize (cases[i].in, -1);

    g_assert_cmpstr (s, ==, cases[i].out);
    g_assert_true (g_utf8_validate (s, -1, NULL));
    for (const char *p = s; *p; p++)
      g_assert_true ((guchar) *p >= 0x20 && *p != 0x7f);
  }
  /* a length: bytes after it are not read, a NUL inside ends the text */
  {
    g_autofree char *s = fh_text_sanitize ("abc\x01" "def", 4);

    g_assert_cmpstr (s, ==, "abc\\x01");
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/protocol/header", test_header);
  g_test_add_func ("/protocol/text-sanitize", test_text_sanitize);
  g_test_add_func ("/protocol/hello", test_hello);
  g_test_add_func ("/protocol/hints", test_hints);
  g_test_add_func ("/protocol/max-vcpus", test_max_vcpus);
  g_test_add_func ("/protocol/host-freq", test_host_freq);
  g_test_add_func ("/protocol/cur-freq", test_cur_freq);
  g_test_add_func ("/protocol/vcpus", test_vcpus);
  g_test_add_func ("/protocol/welcome-grants-close", test_welcome_grants_close);
  g_test_add_func ("/protocol/names", test_names);
  g_test_add_func ("/protocol/relay-hello", test_relay_hello);
  g_test_add_func ("/protocol/vsock-codec", test_vsock_codec);
  g_test_add_func ("/protocol/vsock-max-frame", test_vsock_max_frame);
  g_test_add_func ("/protocol/random", test_random);
  return g_test_run ();
}
