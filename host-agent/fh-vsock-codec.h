/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The guest's side of the vsock transport (spec/vsock-transport.md), as
 * the host front end reads and writes it: frames of a __le32 count and one
 * message; HELLO and HINTS in, CONFIG and FEEDBACK out.
 *
 * Pure, like fh-protocol.c: no I/O, no allocation, no globals, any input
 * accepted, so the fuzz target and unit tests feed it bytes.  The layouts
 * are <linux/freqhint_vsock.h>'s and the device's <linux/virtio_freqhint.h>;
 * the record rules are fh_record_why()'s, the device's own.
 */
#pragma once

#include <linux/freqhint_vsock.h>

#include "fh-protocol.h"

#define FH_VSOCK_FRAME_HDR ((size_t) sizeof (struct freqhint_vsock_frame))
/* The largest frame either side sends: count and message. */
#define FH_VSOCK_FRAME_MAX (FH_VSOCK_FRAME_HDR + FREQHINT_VSOCK_MAX_FRAME)
/* The features the host accepts: no CPU_ID (the host does not know the guest's firmware ids). */
#define FH_VSOCK_HOST_FEATURES                                                                    \
  ((1u << VIRTIO_FREQHINT_F_PERF) | (1u << VIRTIO_FREQHINT_F_FEEDBACK) |                         \
   (1u << VIRTIO_FREQHINT_F_HOST_FREQ) | (1u << VIRTIO_FREQHINT_F_CUR_FREQ))

typedef struct {
  uint16_t version;
  uint32_t features; /* 1 << VIRTIO_FREQHINT_F_*, as offered */
  uint16_t num_cpus;
} FhVsockHello;

/* The whole host feedback state a FEEDBACK message carries, host order. */
typedef struct {
  uint16_t flags; /* VIRTIO_FREQHINT_FB_* */
  uint32_t seq;
  uint16_t operator_floor, operator_ceiling;
  uint16_t num_vcpus;
  uint16_t num_classes; /* 0 without HOST_FREQ */
  FhFreqClass classes[VIRTIO_FREQHINT_MAX_FREQ_CLASSES];
  FhGrant grants[FH_MAX_VCPUS];
  uint8_t freq_class[FH_MAX_VCPUS];
} FhVsockFeedback;

/*
 * VS-4: one frame at the start of buf.  On FH_PARSE_FRAME, frame->payload
 * is the message (its msg_type first), frame->len its size, frame->msg_type
 * its type, and *frame_size the bytes to drop.  A count below 2 or above
 * FREQHINT_VSOCK_MAX_FRAME is an error as soon as the count is there.
 */
FhParseResult fh_vsock_frame_parse (const uint8_t *buf, size_t avail, FhFrame *frame,
                                    size_t *frame_size, FhError *err);

/* VS-6: version 1, reserved zero, 1 <= num_cpus <= max_cpus. */
bool fh_vsock_decode_hello (const FhFrame *frame, uint16_t max_cpus, FhVsockHello *out,
                            FhError *err);

/*
 * A HINTS message for num_cpus vCPUs, as the device takes a hint buffer:
 * a structural fault (length, reserved bytes, record count outside
 * 1..num_cpus) is an error; a record that breaks the record rules is
 * dropped and counted in *rejected, the others are kept in out->records.
 * perf_ok: VIRTIO_FREQHINT_F_PERF was accepted.
 */
bool fh_vsock_decode_hints (const FhFrame *frame, uint16_t num_cpus, bool perf_ok, FhHints *out,
                            unsigned *rejected, FhError *err);

/* FEEDBACK's size for num_vcpus: the event buffer a driver needs. */
size_t fh_vsock_feedback_size (uint16_t num_vcpus);

/*
 * Whole frames (count included); 0 when out_size is too small, or for
 * CONFIG when num_vcpus is outside 1..FREQHINT_VSOCK_MAX_VCPUS.
 */
size_t fh_vsock_encode_config (uint8_t *out, size_t out_size, uint32_t features,
                               uint16_t num_vcpus);
size_t fh_vsock_encode_feedback (uint8_t *out, size_t out_size, const FhVsockFeedback *fb);
/* A CUR_FREQ message (6.8a) of num_vcpus values; 0 when it does not fit. */
size_t fh_vsock_encode_cur_freq (uint8_t *out, size_t out_size, uint32_t seq, uint16_t num_vcpus,
                                 const uint32_t *cur_khz);
