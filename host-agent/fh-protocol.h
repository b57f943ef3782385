/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Device <-> agent wire protocol: framing, validation, encoding.
 *
 * Pure code: no I/O, no allocation, no globals.  Both freqhintd and the test
 * client (which plays the device side) use it, and the fuzz target feeds it
 * arbitrary bytes.  The layouts come from <freqhint/agent_protocol.h>; this
 * file only turns bytes into checked host-order values and back.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include <freqhint/agent_protocol.h>
#include <linux/freqhint_vsock.h>

/* A VM of either transport lives in the same tables, sized FH_MAX_VCPUS. */
G_STATIC_ASSERT (FH_MAX_VCPUS >= FREQHINT_VSOCK_MAX_VCPUS);

#define FH_FRAME_HDR_SIZE ((size_t) sizeof (struct fh_frame_hdr))
#define FH_FRAME_MAX (FH_FRAME_HDR_SIZE + FH_MAX_PAYLOAD)

/* Why a frame was refused: the reason a CLOSE carries, and a text for logs.
 * The text may name paths (libvirt's state directory, a cgroup): room for
 * one whole, though the CLOSE frame carries only its first FH_TEXT_MAX - 1
 * bytes. */
#define FH_ERROR_TEXT_MAX (FH_TEXT_MAX + 4096)

typedef struct {
  uint16_t reason; /* enum fh_close_reason */
  char text[FH_ERROR_TEXT_MAX];
} FhError;

typedef enum {
  FH_PARSE_NEED_MORE = 0, /* not a whole frame yet */
  FH_PARSE_FRAME = 1,     /* one frame at the start of the buffer */
  FH_PARSE_ERROR = -1,    /* the stream is broken; close it */
} FhParseResult;

typedef struct {
  uint16_t msg_type;
  const uint8_t *payload;
  uint32_t len;
} FhFrame;

/* Host-order views of the messages.  Strings are NUL-terminated. */
typedef struct {
  uint16_t version;
  uint16_t num_vcpus;
  uint32_t features;
  uint32_t qemu_pid;
  uint8_t uuid[16];
  char name[FH_NAME_MAX];
  uint32_t tids[FH_MAX_VCPUS];
  /* With FH_F_RELAY in features (struct fh_hello_relay); else zero. */
  uint16_t relay_transport; /* enum fh_relay_transport */
  uint32_t relay_cid;
  char relay_path[FH_RELAY_PATH_MAX];
} FhHello;

typedef struct {
  uint16_t vcpu;
  uint16_t flags;
  uint16_t clamp_min;
  uint16_t clamp_max;
  uint16_t perf;
  uint32_t seq;
} FhRecord;

typedef struct {
  uint64_t timestamp_ns;
  uint16_t num_records;
  uint16_t flags;
  FhRecord records[FH_MAX_VCPUS];
} FhHints;

typedef struct {
  uint16_t version;
  uint32_t features;
  uint32_t keepalive_ms;
} FhWelcome;

typedef struct {
  uint16_t floor;
  uint16_t ceiling;
} FhGrant;

typedef struct {
  uint16_t operator_floor;
  uint16_t operator_ceiling;
  uint16_t num_grants;
  FhGrant grants[FH_MAX_VCPUS];
} FhGrants;

typedef struct {
  uint16_t reason;
  char text[FH_TEXT_MAX];
} FhClose;

/* struct virtio_freqhint_freq_class in host order (DEV-4 rules: fh_freq_class_check()). */
typedef struct {
  uint32_t min_khz;
  uint32_t max_khz;
  uint16_t perf_step;
  uint16_t num_freqs;
  uint32_t freqs_khz[VIRTIO_FREQHINT_MAX_FREQS];
} FhFreqClass;

/* HOST_FREQ (agent -> device, PA-18): classes, and each vCPU's class or 0xff. */
typedef struct {
  uint16_t num_classes;
  uint16_t num_vcpus;
  FhFreqClass classes[VIRTIO_FREQHINT_MAX_FREQ_CLASSES];
  uint8_t freq_class[FH_MAX_VCPUS];
} FhHostFreq;

/*
 * CUR_FREQ (agent -> device, PA-26): per vCPU the frequency of its host
 * CPU, 0 when unknown, else within its class of the latest HOST_FREQ.
 */
typedef struct {
  uint16_t num_vcpus;
  uint32_t cur_khz[FH_MAX_VCPUS];
} FhCurFreq;

/* VCPUS (device -> agent, PA-19): the vCPU thread table after hot-plug. */
typedef struct {
  uint16_t num_vcpus;
  uint32_t tids[FH_MAX_VCPUS];
} FhVcpus;

const char *fh_msg_type_name (uint16_t msg_type);
const char *fh_close_reason_name (uint16_t reason);
/* Reverse of fh_close_reason_name(); -1 when unknown. */
int fh_close_reason_from_name (const char *name);

/*
 * Look at the start of a receive buffer.  On FH_PARSE_FRAME, *frame points
 * into buf and *frame_size is how many bytes to drop afterwards.  The header
 * is judged as soon as its 8 bytes are there, so an oversized or unknown
 * frame is refused before its payload is waited for.
 */
FhParseResult fh_frame_parse (const uint8_t *buf, size_t avail, FhFrame *frame, size_t *frame_size,
                              FhError *err);

/* Payload decoders: true on success, else false with err filled in. */
bool fh_decode_hello (const FhFrame *frame, FhHello *out, FhError *err);
/*
 * num_vcpus and features are the connection's (from HELLO, features as
 * accepted in WELCOME): records are checked against them.
 */
bool fh_decode_hints (const FhFrame *frame, uint16_t num_vcpus, uint32_t features, FhHints *out,
                      FhError *err);
bool fh_decode_welcome (const FhFrame *frame, FhWelcome *out, FhError *err);
bool fh_decode_grants (const FhFrame *frame, uint16_t num_vcpus, FhGrants *out, FhError *err);
/* num_vcpus is HELLO's: HOST_FREQ and VCPUS must carry the same count. */
bool fh_decode_host_freq (const FhFrame *frame, uint16_t num_vcpus, FhHostFreq *out, FhError *err);
bool fh_decode_vcpus (const FhFrame *frame, uint16_t num_vcpus, FhVcpus *out, FhError *err);
/*
 * PD-20: hf is the latest HOST_FREQ of the connection (NULL: none yet,
 * FH_CLOSE_PROTOCOL); every value 0 or within its vCPU's class there.
 */
bool fh_decode_cur_freq (const FhFrame *frame, uint16_t num_vcpus, const FhHostFreq *hf,
                         FhCurFreq *out, FhError *err);
/* PD-20's check of one value: 0, or within the range of class k of hf. */
bool fh_cur_freq_ok (const FhHostFreq *hf, uint8_t k, uint32_t khz);
/* A class as DEV-4 wants it: 0 < min <= max, 1 <= perf_step <= 1024, table ascending in range. */
bool fh_freq_class_check (const FhFreqClass *c, FhError *err);
bool fh_decode_ping (const FhFrame *frame, uint64_t *cookie, FhError *err);
/* Any CLOSE of the right length is accepted (PB-9); see fh_text_sanitize() for its text. */
bool fh_decode_close (const FhFrame *frame, FhClose *out, FhError *err);

/*
 * Untrusted text from the peer (HELLO name, CLOSE text; PA-6, PB-10) made
 * fit for logs, JSON and metric labels: invalid UTF-8 replaced by U+FFFD,
 * a backslash doubled, control and format characters written as \xNN or
 * \u{NNNN}.  len -1: NUL-terminated.  Free with g_free().
 */
char *fh_text_sanitize (const char *text, gssize len);

/*
 * One record against the device's record rules (spec, "Device Requirements").
 * Shared by the HINTS decoder and by anything that builds records.
 */
/* A struct virtio_freqhint_record's 16 bytes at r into *rec; returns its reserved field. */
uint16_t fh_record_get (const uint8_t *r, FhRecord *rec);
bool fh_record_check (const FhRecord *rec, uint16_t num_vcpus, uint32_t features, FhError *err);

/*
 * Encoders write one whole frame (header included) into out and return its
 * size, or 0 when out_size is too small or the values are out of range.
 */
size_t fh_encode_hello (uint8_t *out, size_t out_size, const FhHello *hello);
size_t fh_encode_welcome (uint8_t *out, size_t out_size, const FhWelcome *welcome);
size_t fh_encode_hints (uint8_t *out, size_t out_size, const FhHints *hints);
size_t fh_encode_grants (uint8_t *out, size_t out_size, const FhGrants *grants);
/* 0 also when a class or a vCPU's class is invalid: the agent never sends what the device would refuse. */
size_t fh_encode_host_freq (uint8_t *out, size_t out_size, const FhHostFreq *hf);
size_t fh_encode_vcpus (uint8_t *out, size_t out_size, const FhVcpus *vcpus);
/* 0 also when a value is outside its vCPU's class in hf (the HOST_FREQ the device has). */
size_t fh_encode_cur_freq (uint8_t *out, size_t out_size, const FhCurFreq *cf,
                           const FhHostFreq *hf);
size_t fh_encode_ping (uint8_t *out, size_t out_size, uint16_t msg_type, uint64_t cookie);
size_t fh_encode_close (uint8_t *out, size_t out_size, uint16_t reason, const char *text);
/* A raw frame with any header values, for tests that must break the rules. */
size_t fh_encode_raw (uint8_t *out, size_t out_size, uint32_t len, uint16_t msg_type,
                      uint16_t reserved, const void *payload, size_t payload_size);

void fh_error_set (FhError *err, uint16_t reason, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));
