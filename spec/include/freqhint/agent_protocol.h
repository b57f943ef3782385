/* SPDX-License-Identifier: GPL-2.0-or-later OR BSD-3-Clause */
/*
 * freqhint device <-> agent protocol (spec/agent-protocol.md).
 *
 * A UNIX stream socket carries length-prefixed frames.  Every frame starts
 * with struct fh_frame_hdr; all integers are little-endian; no field is ever
 * implied by the host's byte order.  Guest records are forwarded in the
 * virtqueue's own layout (struct virtio_freqhint_record), so both halves of
 * the path share one definition.
 */
#ifndef FREQHINT_AGENT_PROTOCOL_H
#define FREQHINT_AGENT_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>
#include <linux/virtio_freqhint.h>

/*
 * 2: the device speaks virtio-freqhint v1 (host feedback on the event
 * queue).  A peer of another version is refused with FH_CLOSE_VERSION.
 * Raising FH_MAX_VCPUS from 256 to 1024 kept the version: no layout
 * changed, and a peer at the old limit refuses a larger VM with
 * FH_CLOSE_MALFORMED or FH_CLOSE_TOO_BIG (spec/agent-protocol.md 4.8).
 */
#define FH_PROTO_VERSION	2

/* Message types. */
enum fh_msg_type {
	FH_MSG_HELLO	= 1,	/* device -> agent, first frame */
	FH_MSG_WELCOME	= 2,	/* agent -> device, answer to HELLO */
	FH_MSG_HINTS	= 3,	/* device -> agent */
	FH_MSG_GRANTS	= 4,	/* agent -> device */
	FH_MSG_PING	= 5,	/* either direction */
	FH_MSG_PONG	= 6,	/* answer to PING */
	FH_MSG_CLOSE	= 7,	/* either direction, last frame */
	FH_MSG_HOST_FREQ = 8,	/* agent -> device, with FH_F_HOST_FREQ */
	FH_MSG_VCPUS	= 9,	/* device -> agent, with FH_F_VCPUS */
	FH_MSG_CUR_FREQ	= 10,	/* agent -> device, with FH_F_CUR_FREQ */
	FH_MSG_MAX	= FH_MSG_CUR_FREQ,
};

/* Feature bits in HELLO (offered) and WELCOME (accepted). */
#define FH_F_PERF	(1u << 0)	/* records may carry perf requests */
#define FH_F_GRANTS	(1u << 1)	/* device relays GRANTS to the guest */
#define FH_F_HOST_FREQ	(1u << 2)	/* agent sends HOST_FREQ, device relays */
#define FH_F_VCPUS	(1u << 3)	/* device sends VCPUS after vCPU hot-plug */
/*
 * agent sends CUR_FREQ, device relays; needs FH_F_HOST_FREQ (bit 4 is
 * FH_F_RELAY)
 */
#define FH_F_CUR_FREQ	(1u << 5)
#define FH_F_ALL	(FH_F_PERF | FH_F_GRANTS | FH_F_HOST_FREQ | FH_F_VCPUS | \
			 FH_F_CUR_FREQ)

/* Close reasons carried by FH_MSG_CLOSE. */
enum fh_close_reason {
	FH_CLOSE_NORMAL		= 0,	/* orderly shutdown */
	FH_CLOSE_VERSION	= 1,	/* unsupported protocol version */
	FH_CLOSE_MALFORMED	= 2,	/* bad length, reserved bits, ranges */
	FH_CLOSE_TOO_BIG	= 3,	/* frame over FH_MAX_PAYLOAD */
	FH_CLOSE_UNKNOWN_TYPE	= 4,	/* msg_type not in enum fh_msg_type */
	FH_CLOSE_PROTOCOL	= 5,	/* valid frame at the wrong time */
	FH_CLOSE_PERMISSION	= 6,	/* peer credentials refused */
	FH_CLOSE_DUPLICATE	= 7,	/* VM UUID already connected */
	FH_CLOSE_TIMEOUT	= 8,	/* handshake or keepalive timed out */
	FH_CLOSE_OVERLOAD	= 9,	/* agent at its connection limit */
	FH_CLOSE_REASON_MAX	= FH_CLOSE_OVERLOAD,
};

/* Limits. */
/*
 * vCPUs of one VM this protocol carries.  The agent keeps the VMs it
 * reaches over vsock in the same tables, so this is at least the vsock
 * transport's FREQHINT_VSOCK_MAX_VCPUS; the agent asserts it.
 */
#define FH_MAX_VCPUS		1024
#define FH_NAME_MAX		64	/* VM name bytes incl. terminating NUL */
#define FH_TEXT_MAX		128	/* CLOSE text bytes incl. terminating NUL */
#define FH_HELLO_TIMEOUT_MS	5000	/* HELLO must arrive within this */
#define FH_KEEPALIVE_MS		10000	/* default PING interval */
#define FH_KEEPALIVE_MIN_MS	100	/* range WELCOME.keepalive_ms may take */
#define FH_KEEPALIVE_MAX_MS	600000
#define FH_KEEPALIVE_MISSES	3	/* silent intervals before TIMEOUT */

struct fh_frame_hdr {
	uint32_t len;		/* payload bytes following this header */
	uint16_t msg_type;	/* enum fh_msg_type */
	uint16_t reserved;	/* must be zero */
};

struct fh_msg_hello {
	uint16_t version;	/* FH_PROTO_VERSION */
	uint16_t num_vcpus;	/* 1 .. FH_MAX_VCPUS */
	uint32_t features;	/* FH_F_* offered */
	uint32_t qemu_pid;
	uint32_t reserved;	/* must be zero */
	uint8_t uuid[16];	/* RFC 4122 byte order, as -uuid */
	char name[FH_NAME_MAX];	/* NUL-terminated, NUL-padded */
	/* uint32_t vcpu_tid[num_vcpus]: host thread id, 0 if unknown */
};

struct fh_msg_welcome {
	uint16_t version;	/* FH_PROTO_VERSION */
	uint16_t reserved;	/* must be zero */
	uint32_t features;	/* subset of those offered */
	uint32_t keepalive_ms;	/* PING interval the agent will use */
	uint32_t reserved2;	/* must be zero */
};

#define FH_HINTS_F_FULL		(1u << 0)	/* one record per vCPU: whole state */
#define FH_HINTS_F_ALL		FH_HINTS_F_FULL

struct fh_msg_hints {
	/* CLOCK_REALTIME when the device took the newest record */
	uint64_t timestamp_ns;
	uint16_t num_records;	/* 1 .. num_vcpus */
	uint16_t flags;		/* FH_HINTS_F_* */
	uint32_t reserved;	/* must be zero */
	/* struct virtio_freqhint_record records[num_records] */
};

/* What the host grants one vCPU: the range its requests are clamped into. */
struct fh_grant {
	uint16_t floor;		/* 0 .. ceiling */
	uint16_t ceiling;	/* 0 .. VIRTIO_FREQHINT_SCALE */
};

struct fh_msg_grants {
	uint16_t operator_floor;	/* 0 .. VIRTIO_FREQHINT_SCALE */
	uint16_t operator_ceiling;	/* 0 .. VIRTIO_FREQHINT_SCALE */
	uint16_t num_grants;		/* == num_vcpus of HELLO */
	uint16_t reserved;		/* must be zero */
	/* struct fh_grant grants[num_grants], by vCPU index */
};

/*
 * The host frequency classes and which one each vCPU's thread runs on; sent
 * after WELCOME and whenever a class or a vCPU's placement changes.
 */
struct fh_msg_host_freq {
	uint16_t num_classes;	/* 0 .. VIRTIO_FREQHINT_MAX_FREQ_CLASSES */
	uint16_t num_vcpus;	/* == num_vcpus of HELLO */
	uint32_t reserved;	/* must be zero */
	/* struct virtio_freqhint_freq_class classes[num_classes]; */
	/*
	 * uint8_t freq_class[num_vcpus]: < num_classes, or
	 * VIRTIO_FREQHINT_NO_FREQ_CLASS
	 */
};

/*
 * The frequency each vCPU's physical CPU runs at, as the host last sampled
 * it; sent after HOST_FREQ and when a value changed, at most once per the
 * agent's sampling interval.
 */
struct fh_msg_cur_freq {
	uint16_t num_vcpus;	/* == num_vcpus of HELLO */
	uint16_t reserved;	/* must be zero */
	uint32_t reserved2;	/* must be zero */
	/*
	 * uint32_t cur_khz[num_vcpus]: 0 (unknown), or within [min_khz,
	 * max_khz] of the vCPU's class in the latest HOST_FREQ
	 */
};

/* The vCPU thread table again, after a vCPU was hot-plugged or unplugged. */
struct fh_msg_vcpus {
	uint16_t num_vcpus;	/* == num_vcpus of HELLO */
	uint16_t reserved;	/* must be zero */
	uint32_t reserved2;	/* must be zero */
	/* uint32_t vcpu_tid[num_vcpus]: host thread id, 0 if not present */
};

struct fh_msg_ping {
	uint64_t cookie;	/* echoed in PONG */
};

struct fh_msg_close {
	uint16_t reason;	/* enum fh_close_reason */
	uint16_t reserved;	/* must be zero */
	uint32_t reserved2;	/* must be zero */
	char text[FH_TEXT_MAX];	/* NUL-terminated, for logs */
};

/*
 * Relays (spec/agent-protocol.md 4.1a, spec/vsock-transport.md §5): a
 * process that speaks for a guest it reached over virtio-vsock
 * (freqhint-vsockd) offers FH_F_RELAY in HELLO.  Its HELLO then carries no
 * identity of its own (uuid, name and every vcpu_tid zero) and struct
 * fh_hello_relay follows vcpu_tid: which CID, or which hybrid socket, the
 * guest's connection came from -- what the relay's kernel or the
 * hypervisor reported, never anything the guest sent.  qemu_pid is zero
 * for a vsock peer and, for a hybrid one, the process that connected to
 * the socket (SO_PEERCRED): the VM's hypervisor.  The agent maps
 * it to a VM itself and accepts FH_F_RELAY only from its configured relay
 * user.  Not part of FH_F_ALL: a device never offers it.
 */
#define FH_F_RELAY		(1u << 4)

enum fh_relay_transport {
	FH_RELAY_VSOCK	= 1,	/* AF_VSOCK: cid is the peer's (getpeername) */
	FH_RELAY_HYBRID	= 2,	/* a hybrid vsock UNIX socket: path */
};

#define FH_RELAY_PATH_MAX	108	/* sun_path, NUL included */

struct fh_hello_relay {
	uint16_t transport;	/* enum fh_relay_transport */
	uint16_t reserved;	/* must be zero */
	uint32_t cid;		/* FH_RELAY_VSOCK: the guest's CID; else zero */
	/*
	 * FH_RELAY_HYBRID: the listening socket's path, NUL-terminated and
	 * NUL-padded; else all zero
	 */
	char path[FH_RELAY_PATH_MAX];
};

_Static_assert(sizeof(struct fh_hello_relay) == 116,
	       "fh_hello_relay is 116 bytes");

/* The largest payload of any message: a full-state HINTS frame. */
#define FH_MAX_PAYLOAD \
	(sizeof(struct fh_msg_hints) + \
	 FH_MAX_VCPUS * sizeof(struct virtio_freqhint_record))

/*
 * The virtio layouts QEMU and the agent rely on (the uapi header holds no
 * assertions of its own).
 */
_Static_assert(sizeof(struct virtio_freqhint_config) == 16,
	       "virtio_freqhint_config is 16 bytes");
_Static_assert(sizeof(struct virtio_freqhint_record) == 16,
	       "virtio_freqhint_record is 16 bytes");
_Static_assert(offsetof(struct virtio_freqhint_record, seq) == 12,
	       "virtio_freqhint_record.seq at 12");
_Static_assert(sizeof(struct virtio_freqhint_hints) == 8,
	       "virtio_freqhint_hints header is 8 bytes");
_Static_assert(sizeof(struct virtio_freqhint_cpu_ids) == 8,
	       "virtio_freqhint_cpu_ids header is 8 bytes");
_Static_assert(sizeof(struct virtio_freqhint_freq_class) == 76,
	       "virtio_freqhint_freq_class is 76 bytes");
_Static_assert(sizeof(struct virtio_freqhint_vcpu_feedback) == 8,
	       "virtio_freqhint_vcpu_feedback is 8 bytes");
_Static_assert(offsetof(struct virtio_freqhint_feedback, classes) == 16,
	       "virtio_freqhint_feedback.classes at 16");
_Static_assert(sizeof(struct virtio_freqhint_feedback) == 624,
	       "virtio_freqhint_feedback header is 624 bytes");
_Static_assert(sizeof(struct virtio_freqhint_cur_freq) == 8,
	       "virtio_freqhint_cur_freq header is 8 bytes");
/* CUR_FREQ never outgrows the event buffer FEEDBACK sizes. */
_Static_assert(sizeof(struct virtio_freqhint_cur_freq) + 4 <=
	       sizeof(struct virtio_freqhint_feedback) +
	       sizeof(struct virtio_freqhint_vcpu_feedback),
	       "CUR_FREQ is shorter than FEEDBACK");

_Static_assert(sizeof(struct fh_frame_hdr) == 8, "fh_frame_hdr is 8 bytes");
_Static_assert(sizeof(struct fh_msg_hello) == 96, "fh_msg_hello is 96 bytes");
_Static_assert(__builtin_offsetof(struct fh_msg_hello, uuid) == 16,
	       "fh_msg_hello.uuid at 16");
_Static_assert(sizeof(struct fh_msg_welcome) == 16,
	       "fh_msg_welcome is 16 bytes");
_Static_assert(sizeof(struct fh_msg_hints) == 16, "fh_msg_hints is 16 bytes");
_Static_assert(sizeof(struct fh_msg_grants) == 8, "fh_msg_grants is 8 bytes");
_Static_assert(sizeof(struct fh_grant) == 4, "fh_grant is 4 bytes");
_Static_assert(sizeof(struct fh_msg_host_freq) == 8,
	       "fh_msg_host_freq is 8 bytes");
_Static_assert(sizeof(struct fh_msg_vcpus) == 8, "fh_msg_vcpus is 8 bytes");
_Static_assert(sizeof(struct fh_msg_cur_freq) == 8,
	       "fh_msg_cur_freq is 8 bytes");
_Static_assert(sizeof(struct fh_msg_cur_freq) + 4 * FH_MAX_VCPUS <=
	       FH_MAX_PAYLOAD, "a full CUR_FREQ fits in a frame");
_Static_assert(sizeof(struct fh_msg_ping) == 8, "fh_msg_ping is 8 bytes");
_Static_assert(sizeof(struct fh_msg_close) == 8 + FH_TEXT_MAX,
	       "fh_msg_close size");
_Static_assert(FH_MAX_PAYLOAD == 16400, "FH_MAX_PAYLOAD");
_Static_assert(sizeof(struct fh_msg_hello) +
	       4 * FH_MAX_VCPUS <= FH_MAX_PAYLOAD,
	       "a full HELLO fits in a frame");
_Static_assert(sizeof(struct fh_msg_host_freq) +
	       VIRTIO_FREQHINT_MAX_FREQ_CLASSES *
	       sizeof(struct virtio_freqhint_freq_class) +
	       FH_MAX_VCPUS <= FH_MAX_PAYLOAD,
	       "a full HOST_FREQ fits in a frame");

/*
 * The frame codec and the record rules, written once: QEMU's device, the
 * agent and the test client all use these.  Pure functions on bytes: no
 * alignment assumed, no allocation, any input accepted.
 */

static inline uint16_t fh_get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t fh_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) |
	       ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t fh_get_le64(const uint8_t *p)
{
	return (uint64_t)fh_get_le32(p) | ((uint64_t)fh_get_le32(p + 4) << 32);
}

static inline void fh_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v & 0xff);
	p[1] = (uint8_t)(v >> 8);
}

static inline void fh_put_le32(uint8_t *p, uint32_t v)
{
	fh_put_le16(p, (uint16_t)(v & 0xffff));
	fh_put_le16(p + 2, (uint16_t)(v >> 16));
}

static inline void fh_put_le64(uint8_t *p, uint64_t v)
{
	fh_put_le32(p, (uint32_t)v);
	fh_put_le32(p + 4, (uint32_t)(v >> 32));
}

/*
 * Judge the 8 header bytes at p (PB-2, PB-3): FH_CLOSE_NORMAL (0) with
 * *len and *msg_type set when they may start a frame, else the reason to
 * close with (TOO_BIG, UNKNOWN_TYPE, MALFORMED).  The payload is not
 * waited for: an oversized or unknown frame is refused at once.
 */
static inline uint16_t fh_frame_hdr_get(const uint8_t *p, uint32_t *len,
					uint16_t *msg_type)
{
	*len = fh_get_le32(p);
	*msg_type = fh_get_le16(p + 4);
	if (*len > FH_MAX_PAYLOAD) {
		return FH_CLOSE_TOO_BIG;
	}
	if (*msg_type < 1 || *msg_type > FH_MSG_MAX) {
		return FH_CLOSE_UNKNOWN_TYPE;
	}
	if (fh_get_le16(p + 6) != 0) {
		return FH_CLOSE_MALFORMED;
	}
	return FH_CLOSE_NORMAL;
}

static inline void fh_frame_hdr_put(uint8_t *p, uint32_t len,
				    uint16_t msg_type)
{
	fh_put_le32(p, len);
	fh_put_le16(p + 4, msg_type);
	fh_put_le16(p + 6, 0);
}

/*
 * One record, in host order, against the record rules (virtio-freqhint.md
 * "Device Requirements", agent-protocol.md PA-9): NULL when valid, else
 * why.  perf_ok: the PERF feature was negotiated.
 */
static inline const char *fh_record_why(uint16_t num_vcpus, uint16_t vcpu,
					uint16_t flags, uint16_t clamp_min,
					uint16_t clamp_max, uint16_t perf,
					uint16_t reserved, int perf_ok)
{
	const uint16_t scale = VIRTIO_FREQHINT_SCALE;

	if (vcpu >= num_vcpus) {
		return "vcpu out of range";
	}
	if (flags & ~VIRTIO_FREQHINT_R_ALL) {
		return "unknown flags";
	}
	if (reserved) {
		return "reserved field not zero";
	}
	if ((flags & VIRTIO_FREQHINT_R_MIN_VALID) ?
	    clamp_min > scale : clamp_min != 0) {
		return "bad clamp_min";
	}
	if ((flags & VIRTIO_FREQHINT_R_MAX_VALID) ?
	    clamp_max > scale : clamp_max != 0) {
		return "bad clamp_max";
	}
	if ((flags & VIRTIO_FREQHINT_R_PERF_VALID) ?
	    perf > scale : perf != 0) {
		return "bad perf";
	}
	if ((flags & VIRTIO_FREQHINT_R_MIN_VALID) &&
	    (flags & VIRTIO_FREQHINT_R_MAX_VALID) && clamp_min > clamp_max) {
		return "clamp_min above clamp_max";
	}
	if ((flags & VIRTIO_FREQHINT_R_PERF_VALID) && !perf_ok) {
		return "perf without the PERF feature";
	}
	return (const char *)0;
}

/* A granted or operator range: floor <= ceiling <= VIRTIO_FREQHINT_SCALE. */
static inline int fh_range_ok(uint16_t floor, uint16_t ceiling)
{
	return ceiling <= VIRTIO_FREQHINT_SCALE && floor <= ceiling;
}

_Static_assert(sizeof(struct fh_msg_hello) + 4 * FH_MAX_VCPUS +
	       sizeof(struct fh_hello_relay) <= FH_MAX_PAYLOAD,
	       "a relay's full HELLO fits in a frame");

#endif /* FREQHINT_AGENT_PROTOCOL_H */
