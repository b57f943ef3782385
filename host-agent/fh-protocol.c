/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Device <-> agent wire protocol (spec/agent-protocol.md).
 *
 * Every multi-byte field is little-endian on the wire.  Fields are read
 * byte by byte through the helpers below, never by casting the buffer to a
 * struct, so alignment and host byte order never matter and a fuzzer can
 * hand us any bytes.
 */
#include "fh-protocol.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static uint16_t
get_le16 (const uint8_t *p)
{
  return (uint16_t) (p[0] | (p[1] << 8));
}

static uint32_t
get_le32 (const uint8_t *p)
{
  return (uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) |
         ((uint32_t) p[3] << 24);
}

static uint64_t
get_le64 (const uint8_t *p)
{
  return (uint64_t) get_le32 (p) | ((uint64_t) get_le32 (p + 4) << 32);
}

static void
put_le16 (uint8_t *p, uint16_t v)
{
  p[0] = v & 0xff;
  p[1] = v >> 8;
}

static void
put_le32 (uint8_t *p, uint32_t v)
{
  put_le16 (p, v & 0xffff);
  put_le16 (p + 2, v >> 16);
}

static void
put_le64 (uint8_t *p, uint64_t v)
{
  put_le32 (p, (uint32_t) v);
  put_le32 (p + 4, (uint32_t) (v >> 32));
}

void
fh_error_set (FhError *err, uint16_t reason, const char *fmt, ...)
{
  va_list ap;

  if (!err)
    return;
  err->reason = reason;
  va_start (ap, fmt);
  vsnprintf (err->text, sizeof err->text, fmt, ap);
  va_end (ap);
}

static const char *const msg_names[] = {
  [FH_MSG_HELLO] = "HELLO",   [FH_MSG_WELCOME] = "WELCOME", [FH_MSG_HINTS] = "HINTS",
  [FH_MSG_GRANTS] = "GRANTS", [FH_MSG_PING] = "PING",       [FH_MSG_PONG] = "PONG",
  [FH_MSG_CLOSE] = "CLOSE",   [FH_MSG_HOST_FREQ] = "HOST_FREQ", [FH_MSG_VCPUS] = "VCPUS",
};

const char *
fh_msg_type_name (uint16_t msg_type)
{
  if (msg_type >= 1 && msg_type <= FH_MSG_MAX)
    return msg_names[msg_type];
  return "unknown";
}

static const char *const reason_names[] = {
  [FH_CLOSE_NORMAL] = "normal",
  [FH_CLOSE_VERSION] = "version",
  [FH_CLOSE_MALFORMED] = "malformed",
  [FH_CLOSE_TOO_BIG] = "too-big",
  [FH_CLOSE_UNKNOWN_TYPE] = "unknown-type",
  [FH_CLOSE_PROTOCOL] = "protocol",
  [FH_CLOSE_PERMISSION] = "permission",
  [FH_CLOSE_DUPLICATE] = "duplicate",
  [FH_CLOSE_TIMEOUT] = "timeout",
  [FH_CLOSE_OVERLOAD] = "overload",
};

const char *
fh_close_reason_name (uint16_t reason)
{
  if (reason <= FH_CLOSE_REASON_MAX)
    return reason_names[reason];
  return "unknown";
}

int
fh_close_reason_from_name (const char *name)
{
  for (int i = 0; i <= FH_CLOSE_REASON_MAX; i++)
    if (strcmp (name, reason_names[i]) == 0)
      return i;
  return -1;
}

FhParseResult
fh_frame_parse (const uint8_t *buf, size_t avail, FhFrame *frame, size_t *frame_size, FhError *err)
{
  uint32_t len;
  uint16_t type, reserved;

  if (avail < FH_FRAME_HDR_SIZE)
    return FH_PARSE_NEED_MORE;

  len = get_le32 (buf);
  type = get_le16 (buf + 4);
  reserved = get_le16 (buf + 6);

  if (len > FH_MAX_PAYLOAD) {
    fh_error_set (err, FH_CLOSE_TOO_BIG, "frame payload of %u bytes exceeds %zu", len,
                  (size_t) FH_MAX_PAYLOAD);
    return FH_PARSE_ERROR;
  }
  if (type < 1 || type > FH_MSG_MAX) {
    fh_error_set (err, FH_CLOSE_UNKNOWN_TYPE, "unknown message type %u", type);
    return FH_PARSE_ERROR;
  }
  if (reserved != 0) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "frame header reserved field is 0x%04x", reserved);
    return FH_PARSE_ERROR;
  }
  if (avail - FH_FRAME_HDR_SIZE < len)
    return FH_PARSE_NEED_MORE;

  frame->msg_type = type;
  frame->payload = buf + FH_FRAME_HDR_SIZE;
  frame->len = len;
  *frame_size = FH_FRAME_HDR_SIZE + len;
  return FH_PARSE_FRAME;
}

static bool
has_nul (const uint8_t *p, size_t n)
{
  return memchr (p, '\0', n) != NULL;
}

bool
fh_decode_hello (const FhFrame *frame, FhHello *out, FhError *err)
{
  const uint8_t *p = frame->payload;
  size_t want;

  if (frame->msg_type != FH_MSG_HELLO) {
    fh_error_set (err, FH_CLOSE_PROTOCOL, "expected HELLO, got %s",
                  fh_msg_type_name (frame->msg_type));
    return false;
  }
  /* The version is judged first: a future HELLO may have another size. */
  if (frame->len < 2) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HELLO of %u bytes", frame->len);
    return false;
  }
  out->version = get_le16 (p);
  if (out->version != FH_PROTO_VERSION) {
    fh_error_set (err, FH_CLOSE_VERSION, "protocol version %u, agent speaks %u", out->version,
                  FH_PROTO_VERSION);
    return false;
  }
  if (frame->len < sizeof (struct fh_msg_hello)) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HELLO of %u bytes, need at least %zu", frame->len,
                  sizeof (struct fh_msg_hello));
    return false;
  }
  out->num_vcpus = get_le16 (p + 2);
  out->features = get_le32 (p + 4);
  out->qemu_pid = get_le32 (p + 8);
  if (out->num_vcpus < 1 || out->num_vcpus > VIRTIO_FREQHINT_MAX_VCPUS) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HELLO num_vcpus %u out of 1..%u", out->num_vcpus,
                  VIRTIO_FREQHINT_MAX_VCPUS);
    return false;
  }
  want = sizeof (struct fh_msg_hello) + 4 * (size_t) out->num_vcpus;
  if (frame->len != want) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HELLO of %u bytes for %u vCPUs, want %zu", frame->len,
                  out->num_vcpus, want);
    return false;
  }
  if (get_le32 (p + 12) != 0) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HELLO reserved field is non-zero");
    return false;
  }
  memcpy (out->uuid, p + 16, 16);
  if (!has_nul (p + 32, FH_NAME_MAX)) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HELLO name is not NUL-terminated");
    return false;
  }
  memcpy (out->name, p + 32, FH_NAME_MAX);
  for (unsigned i = 0; i < out->num_vcpus; i++)
    out->tids[i] = get_le32 (p + sizeof (struct fh_msg_hello) + 4 * i);
  return true;
}

bool
fh_record_check (const FhRecord *rec, uint16_t num_vcpus, uint32_t features, FhError *err)
{
  static const struct {
    uint16_t flag;
    size_t off;
    const char *name;
  } fields[] = {
    { VIRTIO_FREQHINT_R_MIN_VALID, offsetof (FhRecord, clamp_min), "clamp_min" },
    { VIRTIO_FREQHINT_R_MAX_VALID, offsetof (FhRecord, clamp_max), "clamp_max" },
    { VIRTIO_FREQHINT_R_PERF_VALID, offsetof (FhRecord, perf), "perf" },
  };

  if (rec->vcpu >= num_vcpus) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "record for vCPU %u of %u", rec->vcpu, num_vcpus);
    return false;
  }
  if (rec->flags & ~VIRTIO_FREQHINT_R_ALL) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "vCPU %u: unknown flags 0x%04x", rec->vcpu, rec->flags);
    return false;
  }
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    uint16_t v;

    memcpy (&v, (const uint8_t *) rec + fields[i].off, sizeof v);
    if ((rec->flags & fields[i].flag) && v > VIRTIO_FREQHINT_SCALE) {
      fh_error_set (err, FH_CLOSE_MALFORMED, "vCPU %u: %s %u over %u", rec->vcpu, fields[i].name, v,
                    VIRTIO_FREQHINT_SCALE);
      return false;
    }
    if (!(rec->flags & fields[i].flag) && v != 0) {
      fh_error_set (err, FH_CLOSE_MALFORMED, "vCPU %u: %s %u without its valid flag", rec->vcpu,
                    fields[i].name, v);
      return false;
    }
  }
  if ((rec->flags & VIRTIO_FREQHINT_R_MIN_VALID) && (rec->flags & VIRTIO_FREQHINT_R_MAX_VALID) &&
      rec->clamp_min > rec->clamp_max) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "vCPU %u: clamp_min %u > clamp_max %u", rec->vcpu,
                  rec->clamp_min, rec->clamp_max);
    return false;
  }
  if ((rec->flags & VIRTIO_FREQHINT_R_PERF_VALID) && !(features & FH_F_PERF)) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "vCPU %u: perf without the PERF feature", rec->vcpu);
    return false;
  }
  return true;
}

bool
fh_decode_hints (const FhFrame *frame, uint16_t num_vcpus, uint32_t features, FhHints *out,
                 FhError *err)
{
  const uint8_t *p = frame->payload;
  size_t want;

  if (frame->msg_type != FH_MSG_HINTS || frame->len < sizeof (struct fh_msg_hints)) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HINTS of %u bytes", frame->len);
    return false;
  }
  out->timestamp_ns = get_le64 (p);
  out->num_records = get_le16 (p + 8);
  out->flags = get_le16 (p + 10);
  if (out->num_records < 1 || out->num_records > num_vcpus) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HINTS with %u records for %u vCPUs", out->num_records,
                  num_vcpus);
    return false;
  }
  want = sizeof (struct fh_msg_hints) +
         (size_t) out->num_records * sizeof (struct virtio_freqhint_record);
  if (frame->len != want) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HINTS of %u bytes for %u records, want %zu", frame->len,
                  out->num_records, want);
    return false;
  }
  if (out->flags & ~FH_HINTS_F_ALL) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HINTS unknown flags 0x%04x", out->flags);
    return false;
  }
  if (get_le32 (p + 12) != 0) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HINTS reserved field is non-zero");
    return false;
  }
  if ((out->flags & FH_HINTS_F_FULL) && out->num_records != num_vcpus) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "FULL HINTS with %u records for %u vCPUs",
                  out->num_records, num_vcpus);
    return false;
  }
  for (unsigned i = 0; i < out->num_records; i++) {
    const uint8_t *r =
        p + sizeof (struct fh_msg_hints) + i * sizeof (struct virtio_freqhint_record);
    FhRecord *rec = &out->records[i];

    rec->vcpu = get_le16 (r);
    rec->flags = get_le16 (r + 2);
    rec->clamp_min = get_le16 (r + 4);
    rec->clamp_max = get_le16 (r + 6);
    rec->perf = get_le16 (r + 8);
    rec->seq = get_le32 (r + 12);
    if (get_le16 (r + 10) != 0) {
      fh_error_set (err, FH_CLOSE_MALFORMED, "record %u: reserved field is non-zero", i);
      return false;
    }
    if (!fh_record_check (rec, num_vcpus, features, err))
      return false;
  }
  return true;
}

bool
fh_decode_welcome (const FhFrame *frame, FhWelcome *out, FhError *err)
{
  const uint8_t *p = frame->payload;

  if (frame->msg_type != FH_MSG_WELCOME || frame->len != sizeof (struct fh_msg_welcome)) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "WELCOME of %u bytes", frame->len);
    return false;
  }
  out->version = get_le16 (p);
  out->features = get_le32 (p + 4);
  out->keepalive_ms = get_le32 (p + 8);
  if (out->version != FH_PROTO_VERSION) {
    fh_error_set (err, FH_CLOSE_VERSION, "WELCOME version %u", out->version);
    return false;
  }
  if (get_le16 (p + 2) != 0 || get_le32 (p + 12) != 0) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "WELCOME reserved field is non-zero");
    return false;
  }
  if (out->features & ~FH_F_ALL) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "WELCOME unknown features 0x%x", out->features);
    return false;
  }
  return true;
}

bool
fh_decode_grants (const FhFrame *frame, uint16_t num_vcpus, FhGrants *out, FhError *err)
{
  const uint8_t *p = frame->payload;

  if (frame->msg_type != FH_MSG_GRANTS || frame->len < sizeof (struct fh_msg_grants)) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "GRANTS of %u bytes", frame->len);
    return false;
  }
  out->operator_floor = get_le16 (p);
  out->operator_ceiling = get_le16 (p + 2);
  out->num_grants = get_le16 (p + 4);
  if (get_le16 (p + 6) != 0) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "GRANTS reserved field is non-zero");
    return false;
  }
  if (out->num_grants != num_vcpus ||
      frame->len != sizeof (struct fh_msg_grants) + 4 * (size_t) out->num_grants) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "GRANTS of %u bytes with %u grants for %u vCPUs",
                  frame->len, out->num_grants, num_vcpus);
    return false;
  }
  if (out->operator_ceiling > VIRTIO_FREQHINT_SCALE ||
      out->operator_floor > out->operator_ceiling) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "GRANTS operator range %u..%u", out->operator_floor,
                  out->operator_ceiling);
    return false;
  }
  for (unsigned i = 0; i < out->num_grants; i++) {
    FhGrant *g = &out->grants[i];

    g->floor = get_le16 (p + 8 + 4 * i);
    g->ceiling = get_le16 (p + 10 + 4 * i);
    if (g->ceiling > VIRTIO_FREQHINT_SCALE || g->floor > g->ceiling) {
      fh_error_set (err, FH_CLOSE_MALFORMED, "grant %u range %u..%u", i, g->floor, g->ceiling);
      return false;
    }
  }
  return true;
}

bool
fh_decode_ping (const FhFrame *frame, uint64_t *cookie, FhError *err)
{
  if ((frame->msg_type != FH_MSG_PING && frame->msg_type != FH_MSG_PONG) ||
      frame->len != sizeof (struct fh_msg_ping)) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "%s of %u bytes", fh_msg_type_name (frame->msg_type),
                  frame->len);
    return false;
  }
  *cookie = get_le64 (frame->payload);
  return true;
}

bool
fh_decode_close (const FhFrame *frame, FhClose *out, FhError *err)
{
  const uint8_t *p = frame->payload;

  if (frame->msg_type != FH_MSG_CLOSE || frame->len != sizeof (struct fh_msg_close)) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "CLOSE of %u bytes", frame->len);
    return false;
  }
  /*
   * PB-9: the peer is leaving whatever it wrote, so only the length is
   * judged.  An unknown reason is kept as is (its name is "unknown"),
   * reserved fields are ignored, a text without NUL is dropped.
   */
  out->reason = get_le16 (p);
  if (has_nul (p + 8, FH_TEXT_MAX))
    memcpy (out->text, p + 8, FH_TEXT_MAX);
  else
    out->text[0] = '\0';
  return true;
}

char *
fh_text_sanitize (const char *text, gssize len)
{
  g_autofree char *valid = g_utf8_make_valid (text, len);
  GString *s = g_string_sized_new (strlen (valid));

  for (const char *p = valid; *p; p = g_utf8_next_char (p)) {
    gunichar c = g_utf8_get_char (p);

    if (c == '\\')
      g_string_append (s, "\\\\");
    else if (c < 0x20 || c == 0x7f)
      g_string_append_printf (s, "\\x%02x", c);
    else if (g_unichar_type (c) == G_UNICODE_CONTROL || g_unichar_type (c) == G_UNICODE_FORMAT ||
             g_unichar_type (c) == G_UNICODE_LINE_SEPARATOR ||
             g_unichar_type (c) == G_UNICODE_PARAGRAPH_SEPARATOR)
      g_string_append_printf (s, "\\u{%04x}", c);
    else
      g_string_append_unichar (s, c);
  }
  return g_string_free (s, FALSE);
}

static uint8_t *
begin_frame (uint8_t *out, size_t out_size, uint16_t type, size_t len)
{
  if (len > FH_MAX_PAYLOAD || out_size < FH_FRAME_HDR_SIZE + len)
    return NULL;
  put_le32 (out, (uint32_t) len);
  put_le16 (out + 4, type);
  put_le16 (out + 6, 0);
  memset (out + FH_FRAME_HDR_SIZE, 0, len);
  return out + FH_FRAME_HDR_SIZE;
}

size_t
fh_encode_raw (uint8_t *out, size_t out_size, uint32_t len, uint16_t msg_type, uint16_t reserved,
               const void *payload, size_t payload_size)
{
  if (out_size < FH_FRAME_HDR_SIZE + payload_size)
    return 0;
  put_le32 (out, len);
  put_le16 (out + 4, msg_type);
  put_le16 (out + 6, reserved);
  if (payload_size)
    memcpy (out + FH_FRAME_HDR_SIZE, payload, payload_size);
  return FH_FRAME_HDR_SIZE + payload_size;
}

size_t
fh_encode_hello (uint8_t *out, size_t out_size, const FhHello *hello)
{
  size_t len = sizeof (struct fh_msg_hello) + 4 * (size_t) hello->num_vcpus;
  uint8_t *p;

  if (hello->num_vcpus > VIRTIO_FREQHINT_MAX_VCPUS)
    return 0;
  p = begin_frame (out, out_size, FH_MSG_HELLO, len);
  if (!p)
    return 0;
  put_le16 (p, hello->version);
  put_le16 (p + 2, hello->num_vcpus);
  put_le32 (p + 4, hello->features);
  put_le32 (p + 8, hello->qemu_pid);
  memcpy (p + 16, hello->uuid, 16);
  /* strnlen keeps the padding NUL-filled and the last byte NUL. */
  memcpy (p + 32, hello->name, strnlen (hello->name, FH_NAME_MAX - 1));
  for (unsigned i = 0; i < hello->num_vcpus; i++)
    put_le32 (p + sizeof (struct fh_msg_hello) + 4 * i, hello->tids[i]);
  return FH_FRAME_HDR_SIZE + len;
}

size_t
fh_encode_welcome (uint8_t *out, size_t out_size, const FhWelcome *welcome)
{
  uint8_t *p = begin_frame (out, out_size, FH_MSG_WELCOME, sizeof (struct fh_msg_welcome));

  if (!p)
    return 0;
  put_le16 (p, welcome->version);
  put_le32 (p + 4, welcome->features);
  put_le32 (p + 8, welcome->keepalive_ms);
  return FH_FRAME_HDR_SIZE + sizeof (struct fh_msg_welcome);
}

size_t
fh_encode_hints (uint8_t *out, size_t out_size, const FhHints *hints)
{
  size_t len = sizeof (struct fh_msg_hints) +
               (size_t) hints->num_records * sizeof (struct virtio_freqhint_record);
  uint8_t *p;

  if (hints->num_records > VIRTIO_FREQHINT_MAX_VCPUS)
    return 0;
  p = begin_frame (out, out_size, FH_MSG_HINTS, len);
  if (!p)
    return 0;
  put_le64 (p, hints->timestamp_ns);
  put_le16 (p + 8, hints->num_records);
  put_le16 (p + 10, hints->flags);
  for (unsigned i = 0; i < hints->num_records; i++) {
    uint8_t *r = p + sizeof (struct fh_msg_hints) + i * sizeof (struct virtio_freqhint_record);
    const FhRecord *rec = &hints->records[i];

    put_le16 (r, rec->vcpu);
    put_le16 (r + 2, rec->flags);
    put_le16 (r + 4, rec->clamp_min);
    put_le16 (r + 6, rec->clamp_max);
    put_le16 (r + 8, rec->perf);
    put_le32 (r + 12, rec->seq);
  }
  return FH_FRAME_HDR_SIZE + len;
}

size_t
fh_encode_grants (uint8_t *out, size_t out_size, const FhGrants *grants)
{
  size_t len = sizeof (struct fh_msg_grants) + 4 * (size_t) grants->num_grants;
  uint8_t *p;

  if (grants->num_grants > VIRTIO_FREQHINT_MAX_VCPUS)
    return 0;
  p = begin_frame (out, out_size, FH_MSG_GRANTS, len);
  if (!p)
    return 0;
  put_le16 (p, grants->operator_floor);
  put_le16 (p + 2, grants->operator_ceiling);
  put_le16 (p + 4, grants->num_grants);
  for (unsigned i = 0; i < grants->num_grants; i++) {
    put_le16 (p + 8 + 4 * i, grants->grants[i].floor);
    put_le16 (p + 10 + 4 * i, grants->grants[i].ceiling);
  }
  return FH_FRAME_HDR_SIZE + len;
}

size_t
fh_encode_ping (uint8_t *out, size_t out_size, uint16_t msg_type, uint64_t cookie)
{
  uint8_t *p;

  if (msg_type != FH_MSG_PING && msg_type != FH_MSG_PONG)
    return 0;
  p = begin_frame (out, out_size, msg_type, sizeof (struct fh_msg_ping));
  if (!p)
    return 0;
  put_le64 (p, cookie);
  return FH_FRAME_HDR_SIZE + sizeof (struct fh_msg_ping);
}

size_t
fh_encode_close (uint8_t *out, size_t out_size, uint16_t reason, const char *text)
{
  uint8_t *p = begin_frame (out, out_size, FH_MSG_CLOSE, sizeof (struct fh_msg_close));

  if (!p)
    return 0;
  put_le16 (p, reason);
  if (text)
    memcpy (p + 8, text, strnlen (text, FH_TEXT_MAX - 1));
  return FH_FRAME_HDR_SIZE + sizeof (struct fh_msg_close);
}
