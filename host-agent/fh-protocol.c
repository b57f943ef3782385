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
  [FH_MSG_CUR_FREQ] = "CUR_FREQ",
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
  uint16_t type, reason;

  if (avail < FH_FRAME_HDR_SIZE)
    return FH_PARSE_NEED_MORE;

  reason = fh_frame_hdr_get (buf, &len, &type);
  switch (reason) {
    case FH_CLOSE_NORMAL:
      break;
    case FH_CLOSE_TOO_BIG:
      fh_error_set (err, reason, "frame payload of %u bytes exceeds %zu", len,
                    (size_t) FH_MAX_PAYLOAD);
      return FH_PARSE_ERROR;
    case FH_CLOSE_UNKNOWN_TYPE:
      fh_error_set (err, reason, "unknown message type %u", type);
      return FH_PARSE_ERROR;
    default:
      fh_error_set (err, reason, "frame header reserved field is 0x%04x", fh_get_le16 (buf + 6));
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

static bool
all_zero (const uint8_t *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (p[i])
      return false;
  return true;
}

/*
 * 4.1a: a relay's HELLO names no identity of its own, and its tail says
 * where the guest came from: a CID, or a hybrid socket's path.
 */
static bool
decode_relay (FhHello *out, const uint8_t *r, FhError *err)
{
  static const uint8_t nil[16];
  const uint8_t *path = r + offsetof (struct fh_hello_relay, path);

  if (memcmp (out->uuid, nil, 16) != 0 || out->name[0] != '\0') {
    fh_error_set (err, FH_CLOSE_MALFORMED, "relay HELLO with a UUID or name of its own");
    return false;
  }
  for (unsigned i = 0; i < out->num_vcpus; i++)
    if (out->tids[i] != 0) {
      fh_error_set (err, FH_CLOSE_MALFORMED, "relay HELLO with a thread id for vCPU %u", i);
      return false;
    }
  out->relay_transport = fh_get_le16 (r);
  out->relay_cid = fh_get_le32 (r + 4);
  if (fh_get_le16 (r + 2) != 0) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "relay HELLO reserved field is non-zero");
    return false;
  }
  switch (out->relay_transport) {
  case FH_RELAY_VSOCK:
    if (!all_zero (path, FH_RELAY_PATH_MAX) || out->qemu_pid != 0) {
      fh_error_set (err, FH_CLOSE_MALFORMED, "relay HELLO: a vsock peer with a path or a pid");
      return false;
    }
    return true;
  case FH_RELAY_HYBRID: {
    size_t n = strnlen ((const char *) path, FH_RELAY_PATH_MAX);

    if (out->relay_cid != 0 || n == 0 || n == FH_RELAY_PATH_MAX || path[0] != '/' ||
        !all_zero (path + n, FH_RELAY_PATH_MAX - n) || out->qemu_pid == 0) {
      fh_error_set (err, FH_CLOSE_MALFORMED,
                    "relay HELLO: a hybrid peer needs an absolute NUL-padded path, its "
                    "process id and no CID");
      return false;
    }
    memcpy (out->relay_path, path, FH_RELAY_PATH_MAX);
    return true;
  }
  default:
    fh_error_set (err, FH_CLOSE_MALFORMED, "relay HELLO transport %u", out->relay_transport);
    return false;
  }
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
  out->version = fh_get_le16 (p);
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
  out->num_vcpus = fh_get_le16 (p + 2);
  out->features = fh_get_le32 (p + 4);
  out->qemu_pid = fh_get_le32 (p + 8);
  if (out->num_vcpus < 1 || out->num_vcpus > FH_MAX_VCPUS) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HELLO num_vcpus %u out of 1..%u", out->num_vcpus,
                  FH_MAX_VCPUS);
    return false;
  }
  want = sizeof (struct fh_msg_hello) + 4 * (size_t) out->num_vcpus;
  if (out->features & FH_F_RELAY)
    want += sizeof (struct fh_hello_relay);
  if (frame->len != want) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HELLO of %u bytes for %u vCPUs, want %zu", frame->len,
                  out->num_vcpus, want);
    return false;
  }
  if (fh_get_le32 (p + 12) != 0) {
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
    out->tids[i] = fh_get_le32 (p + sizeof (struct fh_msg_hello) + 4 * i);
  out->relay_transport = 0;
  out->relay_cid = 0;
  memset (out->relay_path, 0, sizeof out->relay_path);
  if (out->features & FH_F_RELAY)
    return decode_relay (out, p + sizeof (struct fh_msg_hello) + 4 * (size_t) out->num_vcpus, err);
  return true;
}

/* The rules are spec/include's (fh_record_why), shared with QEMU's device. */
static bool
record_check (const FhRecord *rec, uint16_t reserved, uint16_t num_vcpus, uint32_t features,
              FhError *err)
{
  const char *why = fh_record_why (num_vcpus, rec->vcpu, rec->flags, rec->clamp_min,
                                   rec->clamp_max, rec->perf, reserved, !!(features & FH_F_PERF));

  if (why) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "vCPU %u of %u: %s", rec->vcpu, num_vcpus, why);
    return false;
  }
  return true;
}

uint16_t
fh_record_get (const uint8_t *r, FhRecord *rec)
{
  rec->vcpu = fh_get_le16 (r);
  rec->flags = fh_get_le16 (r + 2);
  rec->clamp_min = fh_get_le16 (r + 4);
  rec->clamp_max = fh_get_le16 (r + 6);
  rec->perf = fh_get_le16 (r + 8);
  rec->seq = fh_get_le32 (r + 12);
  return fh_get_le16 (r + 10);
}

bool
fh_record_check (const FhRecord *rec, uint16_t num_vcpus, uint32_t features, FhError *err)
{
  return record_check (rec, 0, num_vcpus, features, err);
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
  out->timestamp_ns = fh_get_le64 (p);
  out->num_records = fh_get_le16 (p + 8);
  out->flags = fh_get_le16 (p + 10);
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
  if (fh_get_le32 (p + 12) != 0) {
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

    if (!record_check (rec, fh_record_get (r, rec), num_vcpus, features, err))
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
  out->version = fh_get_le16 (p);
  out->features = fh_get_le32 (p + 4);
  out->keepalive_ms = fh_get_le32 (p + 8);
  if (out->version != FH_PROTO_VERSION) {
    fh_error_set (err, FH_CLOSE_VERSION, "WELCOME version %u", out->version);
    return false;
  }
  if (fh_get_le16 (p + 2) != 0 || fh_get_le32 (p + 12) != 0) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "WELCOME reserved field is non-zero");
    return false;
  }
  if (out->features & ~(FH_F_ALL | FH_F_RELAY)) {
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
  out->operator_floor = fh_get_le16 (p);
  out->operator_ceiling = fh_get_le16 (p + 2);
  out->num_grants = fh_get_le16 (p + 4);
  if (fh_get_le16 (p + 6) != 0) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "GRANTS reserved field is non-zero");
    return false;
  }
  if (out->num_grants != num_vcpus ||
      frame->len != sizeof (struct fh_msg_grants) + 4 * (size_t) out->num_grants) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "GRANTS of %u bytes with %u grants for %u vCPUs",
                  frame->len, out->num_grants, num_vcpus);
    return false;
  }
  if (!fh_range_ok (out->operator_floor, out->operator_ceiling)) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "GRANTS operator range %u..%u", out->operator_floor,
                  out->operator_ceiling);
    return false;
  }
  for (unsigned i = 0; i < out->num_grants; i++) {
    FhGrant *g = &out->grants[i];

    g->floor = fh_get_le16 (p + 8 + 4 * i);
    g->ceiling = fh_get_le16 (p + 10 + 4 * i);
    if (!fh_range_ok (g->floor, g->ceiling)) {
      fh_error_set (err, FH_CLOSE_MALFORMED, "grant %u range %u..%u", i, g->floor, g->ceiling);
      return false;
    }
  }
  return true;
}

#define FREQ_CLASS_SIZE ((size_t) sizeof (struct virtio_freqhint_freq_class))

bool
fh_freq_class_check (const FhFreqClass *c, FhError *err)
{
  if (c->min_khz == 0 || c->min_khz > c->max_khz) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "frequency class range %u..%u kHz", c->min_khz,
                  c->max_khz);
    return false;
  }
  if (c->perf_step < 1 || c->perf_step > VIRTIO_FREQHINT_SCALE) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "frequency class perf_step %u", c->perf_step);
    return false;
  }
  if (c->num_freqs > VIRTIO_FREQHINT_MAX_FREQS) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "frequency class with %u frequencies", c->num_freqs);
    return false;
  }
  for (unsigned i = 0; i < VIRTIO_FREQHINT_MAX_FREQS; i++) {
    uint32_t f = c->freqs_khz[i];

    if (i >= c->num_freqs) {
      if (f != 0) {
        fh_error_set (err, FH_CLOSE_MALFORMED, "frequency %u past num_freqs is %u", i, f);
        return false;
      }
      continue;
    }
    if (f < c->min_khz || f > c->max_khz || (i > 0 && f <= c->freqs_khz[i - 1])) {
      fh_error_set (err, FH_CLOSE_MALFORMED,
                    "frequency %u (%u kHz) not ascending within %u..%u kHz", i, f, c->min_khz,
                    c->max_khz);
      return false;
    }
  }
  return true;
}

bool
fh_decode_host_freq (const FhFrame *frame, uint16_t num_vcpus, FhHostFreq *out, FhError *err)
{
  const uint8_t *p = frame->payload;
  size_t want;

  if (frame->msg_type != FH_MSG_HOST_FREQ || frame->len < sizeof (struct fh_msg_host_freq)) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HOST_FREQ of %u bytes", frame->len);
    return false;
  }
  out->num_classes = fh_get_le16 (p);
  out->num_vcpus = fh_get_le16 (p + 2);
  if (fh_get_le32 (p + 4) != 0) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HOST_FREQ reserved field is non-zero");
    return false;
  }
  if (out->num_classes > VIRTIO_FREQHINT_MAX_FREQ_CLASSES || out->num_vcpus != num_vcpus) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HOST_FREQ with %u classes for %u vCPUs (HELLO: %u)",
                  out->num_classes, out->num_vcpus, num_vcpus);
    return false;
  }
  want = sizeof (struct fh_msg_host_freq) + FREQ_CLASS_SIZE * out->num_classes + out->num_vcpus;
  if (frame->len != want) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HOST_FREQ of %u bytes, want %zu", frame->len, want);
    return false;
  }
  for (unsigned i = 0; i < out->num_classes; i++) {
    const uint8_t *q = p + sizeof (struct fh_msg_host_freq) + FREQ_CLASS_SIZE * i;
    FhFreqClass *c = &out->classes[i];

    c->min_khz = fh_get_le32 (q);
    c->max_khz = fh_get_le32 (q + 4);
    c->perf_step = fh_get_le16 (q + 8);
    c->num_freqs = fh_get_le16 (q + 10);
    for (unsigned j = 0; j < VIRTIO_FREQHINT_MAX_FREQS; j++)
      c->freqs_khz[j] = fh_get_le32 (q + 12 + 4 * j);
    if (!fh_freq_class_check (c, err)) {
      char text[FH_TEXT_MAX];

      if (err) {
        g_strlcpy (text, err->text, sizeof text);
        fh_error_set (err, FH_CLOSE_MALFORMED, "HOST_FREQ class %u: %s", i, text);
      }
      return false;
    }
  }
  for (unsigned i = 0; i < out->num_vcpus; i++) {
    uint8_t k = p[sizeof (struct fh_msg_host_freq) + FREQ_CLASS_SIZE * out->num_classes + i];

    if (k >= out->num_classes && k != VIRTIO_FREQHINT_NO_FREQ_CLASS) {
      fh_error_set (err, FH_CLOSE_MALFORMED, "HOST_FREQ vCPU %u in class %u of %u", i, k,
                    out->num_classes);
      return false;
    }
    out->freq_class[i] = k;
  }
  return true;
}

bool
fh_decode_vcpus (const FhFrame *frame, uint16_t num_vcpus, FhVcpus *out, FhError *err)
{
  const uint8_t *p = frame->payload;

  if (frame->msg_type != FH_MSG_VCPUS || frame->len < sizeof (struct fh_msg_vcpus)) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "VCPUS of %u bytes", frame->len);
    return false;
  }
  out->num_vcpus = fh_get_le16 (p);
  if (fh_get_le16 (p + 2) != 0 || fh_get_le32 (p + 4) != 0) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "VCPUS reserved fields are non-zero");
    return false;
  }
  if (out->num_vcpus != num_vcpus ||
      frame->len != sizeof (struct fh_msg_vcpus) + 4 * (size_t) out->num_vcpus) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "VCPUS of %u bytes with %u vCPUs (HELLO: %u)",
                  frame->len, out->num_vcpus, num_vcpus);
    return false;
  }
  for (unsigned i = 0; i < out->num_vcpus; i++)
    out->tids[i] = fh_get_le32 (p + sizeof (struct fh_msg_vcpus) + 4 * i);
  return true;
}

bool
fh_cur_freq_ok (const FhHostFreq *hf, uint8_t k, uint32_t khz)
{
  if (khz == 0)
    return true;
  return k < hf->num_classes && khz >= hf->classes[k].min_khz && khz <= hf->classes[k].max_khz;
}

bool
fh_decode_cur_freq (const FhFrame *frame, uint16_t num_vcpus, const FhHostFreq *hf,
                    FhCurFreq *out, FhError *err)
{
  const uint8_t *p = frame->payload;

  if (!hf) {
    fh_error_set (err, FH_CLOSE_PROTOCOL, "CUR_FREQ before HOST_FREQ");
    return false;
  }
  if (frame->msg_type != FH_MSG_CUR_FREQ || frame->len < sizeof (struct fh_msg_cur_freq)) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "CUR_FREQ of %u bytes", frame->len);
    return false;
  }
  out->num_vcpus = fh_get_le16 (p);
  if (fh_get_le16 (p + 2) != 0 || fh_get_le32 (p + 4) != 0) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "CUR_FREQ reserved fields are non-zero");
    return false;
  }
  if (out->num_vcpus != num_vcpus ||
      frame->len != sizeof (struct fh_msg_cur_freq) + 4 * (size_t) out->num_vcpus) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "CUR_FREQ of %u bytes with %u vCPUs (HELLO: %u)",
                  frame->len, out->num_vcpus, num_vcpus);
    return false;
  }
  for (unsigned i = 0; i < out->num_vcpus; i++) {
    out->cur_khz[i] = fh_get_le32 (p + sizeof (struct fh_msg_cur_freq) + 4 * i);
    if (!fh_cur_freq_ok (hf, hf->freq_class[i], out->cur_khz[i])) {
      fh_error_set (err, FH_CLOSE_MALFORMED, "CUR_FREQ vCPU %u: %u kHz outside class %u", i,
                    out->cur_khz[i], hf->freq_class[i]);
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
  *cookie = fh_get_le64 (frame->payload);
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
  out->reason = fh_get_le16 (p);
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
  fh_frame_hdr_put (out, (uint32_t) len, type);
  memset (out + FH_FRAME_HDR_SIZE, 0, len);
  return out + FH_FRAME_HDR_SIZE;
}

size_t
fh_encode_raw (uint8_t *out, size_t out_size, uint32_t len, uint16_t msg_type, uint16_t reserved,
               const void *payload, size_t payload_size)
{
  if (out_size < FH_FRAME_HDR_SIZE + payload_size)
    return 0;
  fh_put_le32 (out, len);
  fh_put_le16 (out + 4, msg_type);
  fh_put_le16 (out + 6, reserved);
  if (payload_size)
    memcpy (out + FH_FRAME_HDR_SIZE, payload, payload_size);
  return FH_FRAME_HDR_SIZE + payload_size;
}

size_t
fh_encode_hello (uint8_t *out, size_t out_size, const FhHello *hello)
{
  size_t len = sizeof (struct fh_msg_hello) + 4 * (size_t) hello->num_vcpus +
               ((hello->features & FH_F_RELAY) ? sizeof (struct fh_hello_relay) : 0);
  uint8_t *p;

  if (hello->num_vcpus > FH_MAX_VCPUS)
    return 0;
  p = begin_frame (out, out_size, FH_MSG_HELLO, len);
  if (!p)
    return 0;
  fh_put_le16 (p, hello->version);
  fh_put_le16 (p + 2, hello->num_vcpus);
  fh_put_le32 (p + 4, hello->features);
  fh_put_le32 (p + 8, hello->qemu_pid);
  memcpy (p + 16, hello->uuid, 16);
  /* strnlen keeps the padding NUL-filled and the last byte NUL. */
  memcpy (p + 32, hello->name, strnlen (hello->name, FH_NAME_MAX - 1));
  for (unsigned i = 0; i < hello->num_vcpus; i++)
    fh_put_le32 (p + sizeof (struct fh_msg_hello) + 4 * i, hello->tids[i]);
  if (hello->features & FH_F_RELAY) {
    uint8_t *r = p + len - sizeof (struct fh_hello_relay);

    fh_put_le16 (r, hello->relay_transport);
    fh_put_le32 (r + 4, hello->relay_cid);
    memcpy (r + offsetof (struct fh_hello_relay, path), hello->relay_path,
            strnlen (hello->relay_path, FH_RELAY_PATH_MAX - 1));
  }
  return FH_FRAME_HDR_SIZE + len;
}

size_t
fh_encode_welcome (uint8_t *out, size_t out_size, const FhWelcome *welcome)
{
  uint8_t *p = begin_frame (out, out_size, FH_MSG_WELCOME, sizeof (struct fh_msg_welcome));

  if (!p)
    return 0;
  fh_put_le16 (p, welcome->version);
  fh_put_le32 (p + 4, welcome->features);
  fh_put_le32 (p + 8, welcome->keepalive_ms);
  return FH_FRAME_HDR_SIZE + sizeof (struct fh_msg_welcome);
}

size_t
fh_encode_hints (uint8_t *out, size_t out_size, const FhHints *hints)
{
  size_t len = sizeof (struct fh_msg_hints) +
               (size_t) hints->num_records * sizeof (struct virtio_freqhint_record);
  uint8_t *p;

  if (hints->num_records > FH_MAX_VCPUS)
    return 0;
  p = begin_frame (out, out_size, FH_MSG_HINTS, len);
  if (!p)
    return 0;
  fh_put_le64 (p, hints->timestamp_ns);
  fh_put_le16 (p + 8, hints->num_records);
  fh_put_le16 (p + 10, hints->flags);
  for (unsigned i = 0; i < hints->num_records; i++) {
    uint8_t *r = p + sizeof (struct fh_msg_hints) + i * sizeof (struct virtio_freqhint_record);
    const FhRecord *rec = &hints->records[i];

    fh_put_le16 (r, rec->vcpu);
    fh_put_le16 (r + 2, rec->flags);
    fh_put_le16 (r + 4, rec->clamp_min);
    fh_put_le16 (r + 6, rec->clamp_max);
    fh_put_le16 (r + 8, rec->perf);
    fh_put_le32 (r + 12, rec->seq);
  }
  return FH_FRAME_HDR_SIZE + len;
}

size_t
fh_encode_grants (uint8_t *out, size_t out_size, const FhGrants *grants)
{
  size_t len = sizeof (struct fh_msg_grants) + 4 * (size_t) grants->num_grants;
  uint8_t *p;

  if (grants->num_grants > FH_MAX_VCPUS)
    return 0;
  p = begin_frame (out, out_size, FH_MSG_GRANTS, len);
  if (!p)
    return 0;
  fh_put_le16 (p, grants->operator_floor);
  fh_put_le16 (p + 2, grants->operator_ceiling);
  fh_put_le16 (p + 4, grants->num_grants);
  for (unsigned i = 0; i < grants->num_grants; i++) {
    fh_put_le16 (p + 8 + 4 * i, grants->grants[i].floor);
    fh_put_le16 (p + 10 + 4 * i, grants->grants[i].ceiling);
  }
  return FH_FRAME_HDR_SIZE + len;
}

size_t
fh_encode_host_freq (uint8_t *out, size_t out_size, const FhHostFreq *hf)
{
  size_t len;
  uint8_t *p;
  FhError err;

  if (hf->num_classes > VIRTIO_FREQHINT_MAX_FREQ_CLASSES ||
      hf->num_vcpus > FH_MAX_VCPUS || hf->num_vcpus == 0)
    return 0;
  for (unsigned i = 0; i < hf->num_classes; i++)
    if (!fh_freq_class_check (&hf->classes[i], &err))
      return 0;
  for (unsigned i = 0; i < hf->num_vcpus; i++)
    if (hf->freq_class[i] >= hf->num_classes && hf->freq_class[i] != VIRTIO_FREQHINT_NO_FREQ_CLASS)
      return 0;
  len = sizeof (struct fh_msg_host_freq) + FREQ_CLASS_SIZE * hf->num_classes + hf->num_vcpus;
  p = begin_frame (out, out_size, FH_MSG_HOST_FREQ, len);
  if (!p)
    return 0;
  fh_put_le16 (p, hf->num_classes);
  fh_put_le16 (p + 2, hf->num_vcpus);
  for (unsigned i = 0; i < hf->num_classes; i++) {
    uint8_t *q = p + sizeof (struct fh_msg_host_freq) + FREQ_CLASS_SIZE * i;
    const FhFreqClass *c = &hf->classes[i];

    fh_put_le32 (q, c->min_khz);
    fh_put_le32 (q + 4, c->max_khz);
    fh_put_le16 (q + 8, c->perf_step);
    fh_put_le16 (q + 10, c->num_freqs);
    for (unsigned j = 0; j < c->num_freqs; j++)
      fh_put_le32 (q + 12 + 4 * j, c->freqs_khz[j]);
  }
  memcpy (p + sizeof (struct fh_msg_host_freq) + FREQ_CLASS_SIZE * hf->num_classes,
          hf->freq_class, hf->num_vcpus);
  return FH_FRAME_HDR_SIZE + len;
}

size_t
fh_encode_vcpus (uint8_t *out, size_t out_size, const FhVcpus *vcpus)
{
  size_t len = sizeof (struct fh_msg_vcpus) + 4 * (size_t) vcpus->num_vcpus;
  uint8_t *p;

  if (vcpus->num_vcpus > FH_MAX_VCPUS || vcpus->num_vcpus == 0)
    return 0;
  p = begin_frame (out, out_size, FH_MSG_VCPUS, len);
  if (!p)
    return 0;
  fh_put_le16 (p, vcpus->num_vcpus);
  for (unsigned i = 0; i < vcpus->num_vcpus; i++)
    fh_put_le32 (p + sizeof (struct fh_msg_vcpus) + 4 * i, vcpus->tids[i]);
  return FH_FRAME_HDR_SIZE + len;
}

size_t
fh_encode_cur_freq (uint8_t *out, size_t out_size, const FhCurFreq *cf, const FhHostFreq *hf)
{
  size_t len = sizeof (struct fh_msg_cur_freq) + 4 * (size_t) cf->num_vcpus;
  uint8_t *p;

  if (cf->num_vcpus > FH_MAX_VCPUS || cf->num_vcpus == 0 || cf->num_vcpus != hf->num_vcpus)
    return 0;
  for (unsigned i = 0; i < cf->num_vcpus; i++)
    if (!fh_cur_freq_ok (hf, hf->freq_class[i], cf->cur_khz[i]))
      return 0;
  p = begin_frame (out, out_size, FH_MSG_CUR_FREQ, len);
  if (!p)
    return 0;
  fh_put_le16 (p, cf->num_vcpus);
  for (unsigned i = 0; i < cf->num_vcpus; i++)
    fh_put_le32 (p + sizeof (struct fh_msg_cur_freq) + 4 * i, cf->cur_khz[i]);
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
  fh_put_le64 (p, cookie);
  return FH_FRAME_HDR_SIZE + sizeof (struct fh_msg_ping);
}

size_t
fh_encode_close (uint8_t *out, size_t out_size, uint16_t reason, const char *text)
{
  uint8_t *p = begin_frame (out, out_size, FH_MSG_CLOSE, sizeof (struct fh_msg_close));

  if (!p)
    return 0;
  fh_put_le16 (p, reason);
  if (text)
    memcpy (p + 8, text, strnlen (text, FH_TEXT_MAX - 1));
  return FH_FRAME_HDR_SIZE + sizeof (struct fh_msg_close);
}
