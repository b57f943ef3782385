/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fh-vsock-codec.h"

#include <string.h>

#include <freqhint/vsock_host.h>
#include <glib.h>

_Static_assert (sizeof (struct freqhint_vsock_frame) == 4, "freqhint_vsock_frame is 4 bytes");
_Static_assert (sizeof (struct freqhint_vsock_hello) == 16, "freqhint_vsock_hello is 16 bytes");
_Static_assert (sizeof (struct freqhint_vsock_config) == 24, "freqhint_vsock_config is 24 bytes");
_Static_assert (FREQHINT_VSOCK_MAX_FRAME >= sizeof (struct virtio_freqhint_feedback) +
                                                FH_MAX_VCPUS *
                                                    sizeof (struct virtio_freqhint_vcpu_feedback),
                "a FEEDBACK for FH_MAX_VCPUS fits a frame");
_Static_assert (FREQHINT_VSOCK_MAX_FRAME >= sizeof (struct virtio_freqhint_hints) +
                                                FREQHINT_VSOCK_MAX_VCPUS *
                                                    sizeof (struct virtio_freqhint_record),
                "a HINTS of a record per vCPU fits a frame (max_records = num_vcpus)");

FhParseResult
fh_vsock_frame_parse (const uint8_t *buf, size_t avail, FhFrame *frame, size_t *frame_size,
                      FhError *err)
{
  uint32_t len;

  if (avail < FH_VSOCK_FRAME_HDR)
    return FH_PARSE_NEED_MORE;
  len = fh_get_le32 (buf);
  if (len < 2 || len > FREQHINT_VSOCK_MAX_FRAME) {
    fh_error_set (err, len < 2 ? FH_CLOSE_MALFORMED : FH_CLOSE_TOO_BIG,
                  "frame of %u bytes (2 to %zu)", len, FREQHINT_VSOCK_MAX_FRAME);
    return FH_PARSE_ERROR;
  }
  if (avail < FH_VSOCK_FRAME_HDR + len)
    return FH_PARSE_NEED_MORE;
  frame->payload = buf + FH_VSOCK_FRAME_HDR;
  frame->len = len;
  frame->msg_type = fh_get_le16 (frame->payload);
  *frame_size = FH_VSOCK_FRAME_HDR + len;
  return FH_PARSE_FRAME;
}

bool
fh_vsock_decode_hello (const FhFrame *frame, uint16_t max_cpus, FhVsockHello *out, FhError *err)
{
  const uint8_t *p = frame->payload;
  static const uint8_t zero[6];

  if (frame->msg_type != FREQHINT_VSOCK_MSG_HELLO ||
      frame->len != sizeof (struct freqhint_vsock_hello)) {
    fh_error_set (err, FH_CLOSE_PROTOCOL, "first message is type %u of %u bytes, not HELLO",
                  frame->msg_type, frame->len);
    return false;
  }
  out->version = fh_get_le16 (p + 2);
  out->features = fh_get_le32 (p + 4);
  out->num_cpus = fh_get_le16 (p + 8);
  if (out->version != FREQHINT_VSOCK_VERSION) {
    fh_error_set (err, FH_CLOSE_VERSION, "HELLO version %u", out->version);
    return false;
  }
  if (memcmp (p + 10, zero, sizeof zero) != 0) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HELLO reserved bytes set");
    return false;
  }
  if (out->num_cpus < 1 || out->num_cpus > max_cpus) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HELLO num_cpus %u (1 to %u)", out->num_cpus,
                  max_cpus);
    return false;
  }
  return true;
}

bool
fh_vsock_decode_hints (const FhFrame *frame, uint16_t num_cpus, bool perf_ok, FhHints *out,
                       unsigned *rejected, FhError *err)
{
  const size_t hdr = sizeof (struct virtio_freqhint_hints);
  const size_t rec = sizeof (struct virtio_freqhint_record);
  const uint8_t *p = frame->payload;
  uint16_t num;

  *rejected = 0;
  if (frame->msg_type != VIRTIO_FREQHINT_MSG_HINTS || frame->len < hdr + rec) {
    fh_error_set (err, FH_CLOSE_PROTOCOL, "message type %u of %u bytes, not HINTS",
                  frame->msg_type, frame->len);
    return false;
  }
  num = fh_get_le16 (p + 2);
  if (fh_get_le32 (p + 4) != 0) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HINTS reserved bytes set");
    return false;
  }
  if (num == 0 || num > num_cpus || frame->len != hdr + num * rec) {
    fh_error_set (err, FH_CLOSE_MALFORMED, "HINTS of %u records in %u bytes for %u vCPUs", num,
                  frame->len, num_cpus);
    return false;
  }
  out->timestamp_ns = 0;
  out->flags = 0;
  out->num_records = 0;
  for (unsigned i = 0; i < num; i++) {
    const uint8_t *r = p + hdr + i * rec;
    FhRecord *o = &out->records[out->num_records];
    uint16_t reserved = fh_record_get (r, o);

    if (fh_record_why (num_cpus, o->vcpu, o->flags, o->clamp_min, o->clamp_max, o->perf, reserved,
                       perf_ok)) {
      (*rejected)++;
      continue;
    }
    out->num_records++;
  }
  return true;
}

size_t
fh_vsock_feedback_size (uint16_t num_vcpus)
{
  return sizeof (struct virtio_freqhint_feedback) +
         (size_t) num_vcpus * sizeof (struct virtio_freqhint_vcpu_feedback);
}

/* The count, and a zeroed message of len bytes after it; NULL when it does not fit. */
static uint8_t *
begin (uint8_t *out, size_t out_size, size_t len)
{
  if (len > FREQHINT_VSOCK_MAX_FRAME || out_size < FH_VSOCK_FRAME_HDR + len)
    return NULL;
  fh_put_le32 (out, (uint32_t) len);
  memset (out + FH_VSOCK_FRAME_HDR, 0, len);
  return out + FH_VSOCK_FRAME_HDR;
}

size_t
fh_vsock_encode_config (uint8_t *out, size_t out_size, uint32_t features, uint16_t num_vcpus)
{
  const size_t len = sizeof (struct freqhint_vsock_config);
  uint8_t *p = begin (out, out_size, len);
  uint8_t *c = p + offsetof (struct freqhint_vsock_config, config);

  if (!p || num_vcpus < 1 || num_vcpus > FREQHINT_VSOCK_MAX_VCPUS)
    return 0;
  fh_put_le16 (p, FREQHINT_VSOCK_MSG_CONFIG);
  fh_put_le16 (p + 2, FREQHINT_VSOCK_VERSION);
  fh_put_le32 (p + 4, features);
  fh_put_le16 (c + offsetof (struct virtio_freqhint_config, num_vcpus), num_vcpus);
  /* FREQHINT_VSOCK_MAX_FRAME holds a record for every vCPU */
  fh_put_le16 (c + offsetof (struct virtio_freqhint_config, max_records), num_vcpus);
  fh_put_le16 (c + offsetof (struct virtio_freqhint_config, rate_window_ms),
               FREQHINT_VSOCK_HOST_WINDOW_MS);
  fh_put_le16 (c + offsetof (struct virtio_freqhint_config, perf_step),
               FREQHINT_VSOCK_HOST_PERF_STEP);
  fh_put_le16 (c + offsetof (struct virtio_freqhint_config, idle_share),
               FREQHINT_VSOCK_HOST_IDLE_SHARE);
  fh_put_le32 (c + offsetof (struct virtio_freqhint_config, event_buf_size),
               (uint32_t) fh_vsock_feedback_size (num_vcpus));
  return FH_VSOCK_FRAME_HDR + len;
}

size_t
fh_vsock_encode_feedback (uint8_t *out, size_t out_size, const FhVsockFeedback *fb)
{
  const size_t cls = sizeof (struct virtio_freqhint_freq_class);
  size_t len = fh_vsock_feedback_size (fb->num_vcpus);
  uint8_t *p;

  if (fb->num_vcpus > FH_MAX_VCPUS || fb->num_classes > VIRTIO_FREQHINT_MAX_FREQ_CLASSES)
    return 0;
  p = begin (out, out_size, len);
  if (!p)
    return 0;
  fh_put_le16 (p, VIRTIO_FREQHINT_MSG_FEEDBACK);
  fh_put_le16 (p + 2, fb->flags);
  fh_put_le32 (p + 4, fb->seq);
  fh_put_le16 (p + 8, fb->operator_floor);
  fh_put_le16 (p + 10, fb->operator_ceiling);
  fh_put_le16 (p + 12, fb->num_vcpus);
  fh_put_le16 (p + 14, fb->num_classes);
  for (unsigned i = 0; i < fb->num_classes; i++) {
    uint8_t *c = p + offsetof (struct virtio_freqhint_feedback, classes) + i * cls;
    const FhFreqClass *k = &fb->classes[i];

    fh_put_le32 (c, k->min_khz);
    fh_put_le32 (c + 4, k->max_khz);
    fh_put_le16 (c + 8, k->perf_step);
    fh_put_le16 (c + 10, k->num_freqs);
    for (unsigned j = 0; j < k->num_freqs && j < VIRTIO_FREQHINT_MAX_FREQS; j++)
      fh_put_le32 (c + 12 + 4 * j, k->freqs_khz[j]);
  }
  for (unsigned i = 0; i < fb->num_vcpus; i++) {
    uint8_t *v = p + sizeof (struct virtio_freqhint_feedback) +
                 i * sizeof (struct virtio_freqhint_vcpu_feedback);

    fh_put_le16 (v, fb->grants[i].floor);
    fh_put_le16 (v + 2, fb->grants[i].ceiling);
    v[4] = fb->freq_class[i];
  }
  return FH_VSOCK_FRAME_HDR + len;
}

size_t
fh_vsock_encode_cur_freq (uint8_t *out, size_t out_size, uint32_t seq, uint16_t num_vcpus,
                          const uint32_t *cur_khz)
{
  size_t len = sizeof (struct virtio_freqhint_cur_freq) + 4 * (size_t) num_vcpus;
  uint8_t *p;

  if (num_vcpus > FH_MAX_VCPUS)
    return 0;
  p = begin (out, out_size, len);
  if (!p)
    return 0;
  fh_put_le16 (p, VIRTIO_FREQHINT_MSG_CUR_FREQ);
  fh_put_le16 (p + 2, num_vcpus);
  fh_put_le32 (p + 4, seq);
  for (unsigned i = 0; i < num_vcpus; i++)
    fh_put_le32 (p + sizeof (struct virtio_freqhint_cur_freq) + 4 * i, cur_khz[i]);
  return FH_VSOCK_FRAME_HDR + len;
}
