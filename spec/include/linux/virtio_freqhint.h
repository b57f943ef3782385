/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/*
 * Virtio frequency hint device: guest-visible interface.
 *
 * The normative text is spec/virtio-freqhint.md; every constant, layout and
 * limit of the device is defined here and nowhere else.  The guest driver
 * includes this file as <linux/virtio_freqhint.h>, the host agent the same
 * way, and QEMU imports it into include/standard-headers/ the way
 * scripts/update-linux-headers.sh imports every virtio header.
 *
 * All multi-byte fields are little-endian.
 */
#ifndef _LINUX_VIRTIO_FREQHINT_H
#define _LINUX_VIRTIO_FREQHINT_H

#include <linux/types.h>

/*
 * Experimental: pending allocation by the virtio TC.  Modern virtio-pci
 * device IDs are 0x1040 + id and must fit 0x107f, so 63 is the last one a
 * PCI transport can carry; the spec's table is allocated up to 49.
 */
#define VIRTIO_ID_FREQHINT		63

/* Feature bits. */
/* Driver may report the governor's performance request (perf field). */
#define VIRTIO_FREQHINT_F_PERF		0
/* Device publishes per-vCPU granted values in the configuration space. */
#define VIRTIO_FREQHINT_F_GRANTS	1
/*
 * Device publishes the host's frequency classes (range, table, step) and
 * which class each vCPU currently runs on.
 */
#define VIRTIO_FREQHINT_F_HOST_FREQ	2

/* Virtqueue indices. */
#define VIRTIO_FREQHINT_VQ_HINT		0
#define VIRTIO_FREQHINT_NUM_VQS		1

/* Capacity scale: SCHED_CAPACITY_SCALE of the Linux scheduler. */
#define VIRTIO_FREQHINT_SCALE		1024

/* Largest vCPU count a device may expose (bounds the config space). */
#define VIRTIO_FREQHINT_MAX_VCPUS	256

/* Host frequency classes a device can publish, and frequencies per class. */
#define VIRTIO_FREQHINT_MAX_FREQ_CLASSES	8
#define VIRTIO_FREQHINT_MAX_FREQS	16
/* freq_class[] entry of a vCPU whose host frequencies are unknown. */
#define VIRTIO_FREQHINT_NO_FREQ_CLASS	0xff
/* cpu_id[] entry of an index that names no possible vCPU. */
#define VIRTIO_FREQHINT_CPU_ID_NONE	0xffffffffu

/* Fewest records a device may advertise in max_records. */
#define VIRTIO_FREQHINT_MIN_BATCH	1

/* Message types on the hint virtqueue. */
#define VIRTIO_FREQHINT_MSG_HINTS	1

/* virtio_freqhint_record.flags */
#define VIRTIO_FREQHINT_R_MIN_VALID	(1 << 0)	/* clamp_min carries a value */
#define VIRTIO_FREQHINT_R_MAX_VALID	(1 << 1)	/* clamp_max carries a value */
#define VIRTIO_FREQHINT_R_PERF_VALID	(1 << 2)	/* perf carries a value */
#define VIRTIO_FREQHINT_R_IDLE		(1 << 3)	/* no runnable guest task */
#define VIRTIO_FREQHINT_R_ALL		0x000f

/* virtio_freqhint_config.status */
#define VIRTIO_FREQHINT_S_AGENT		(1 << 0)	/* host agent connected */

/*
 * One vCPU's state.  Hints are state, not events: a later record for the
 * same vCPU replaces an earlier one.
 */
struct virtio_freqhint_record {
	__le16 vcpu;		/* 0 .. num_vcpus - 1 */
	__le16 flags;		/* VIRTIO_FREQHINT_R_* */
	__le16 clamp_min;	/* 0 .. VIRTIO_FREQHINT_SCALE */
	__le16 clamp_max;	/* 0 .. VIRTIO_FREQHINT_SCALE */
	__le16 perf;		/* 0 .. VIRTIO_FREQHINT_SCALE */
	__le16 reserved;	/* must be zero */
	__le32 seq;		/* per-vCPU, increments with each change */
};

/* Buffer on the hint virtqueue: a header followed by num_records records. */
struct virtio_freqhint_hints {
	__le16 msg_type;	/* VIRTIO_FREQHINT_MSG_HINTS */
	__le16 num_records;	/* 1 .. max_records */
	__u8 reserved[4];	/* must be zero */
	/* struct virtio_freqhint_record records[num_records]; */
};

/* What the host granted a vCPU: the range its requests are clamped into. */
struct virtio_freqhint_grant {
	__le16 floor;		/* 0 .. VIRTIO_FREQHINT_SCALE */
	__le16 ceiling;		/* 0 .. VIRTIO_FREQHINT_SCALE */
};

/*
 * A set of physical CPUs that share one frequency range and table, as the
 * host agent sees it (one or more host cpufreq policies).  Frequencies in
 * kHz, like cpufreq's sysfs files.
 */
struct virtio_freqhint_freq_class {
	__le32 min_khz;		/* lowest frequency the host may set, > 0 */
	__le32 max_khz;		/* highest, >= min_khz; capacity 1024 */
	__le16 perf_step;	/* capacity units between adjacent host levels, 1 .. 1024 */
	__le16 num_freqs;	/* 0 (continuous range) .. VIRTIO_FREQHINT_MAX_FREQS */
	__le32 freqs_khz[VIRTIO_FREQHINT_MAX_FREQS];	/* ascending, in [min, max]; rest zero */
};

struct virtio_freqhint_config {
	__le16 num_vcpus;	/* read-only, 1 .. VIRTIO_FREQHINT_MAX_VCPUS */
	__le16 max_records;	/* read-only, records per buffer */
	__le16 rate_window_ms;	/* read-only, see "Device Operation" */
	__le16 status;		/* VIRTIO_FREQHINT_S_* */
	__le16 operator_floor;	/* VM-wide, 0 .. VIRTIO_FREQHINT_SCALE */
	__le16 operator_ceiling;	/* VM-wide, 0 .. VIRTIO_FREQHINT_SCALE */
	__le16 perf_step;	/* read-only, perf moves below this are noise, 1 .. SCALE */
	__le16 idle_share;	/* read-only, busy share (1/1024) that still counts as idle */
	/* Only with VIRTIO_FREQHINT_F_GRANTS; num_vcpus entries are valid. */
	struct virtio_freqhint_grant grants[VIRTIO_FREQHINT_MAX_VCPUS];
	/* Firmware CPU id of each vCPU index (x86 APIC ID, arm64 MPIDR affinity). */
	__le32 cpu_id[VIRTIO_FREQHINT_MAX_VCPUS];
	/* Only with VIRTIO_FREQHINT_F_HOST_FREQ. */
	__u8 freq_class[VIRTIO_FREQHINT_MAX_VCPUS];	/* per vCPU index */
	__le16 num_freq_classes;	/* 0 .. VIRTIO_FREQHINT_MAX_FREQ_CLASSES */
	__u8 reserved2[6];
	struct virtio_freqhint_freq_class freq_classes[VIRTIO_FREQHINT_MAX_FREQ_CLASSES];
};

#define VIRTIO_FREQHINT_CONFIG_HDR_SIZE	16
#define VIRTIO_FREQHINT_CONFIG_SIZE	2936

/* Layout checks: these structures are ABI. */
_Static_assert(sizeof(struct virtio_freqhint_record) == 16,
	       "virtio_freqhint_record is 16 bytes");
_Static_assert(__builtin_offsetof(struct virtio_freqhint_record, seq) == 12,
	       "virtio_freqhint_record.seq at 12");
_Static_assert(sizeof(struct virtio_freqhint_hints) == 8,
	       "virtio_freqhint_hints header is 8 bytes");
_Static_assert(sizeof(struct virtio_freqhint_grant) == 4,
	       "virtio_freqhint_grant is 4 bytes");
_Static_assert(__builtin_offsetof(struct virtio_freqhint_config, grants) ==
	       VIRTIO_FREQHINT_CONFIG_HDR_SIZE,
	       "virtio_freqhint_config.grants at 16");
_Static_assert(sizeof(struct virtio_freqhint_freq_class) == 76,
	       "virtio_freqhint_freq_class is 76 bytes");
_Static_assert(__builtin_offsetof(struct virtio_freqhint_config, cpu_id) == 1040,
	       "virtio_freqhint_config.cpu_id at 1040");
_Static_assert(__builtin_offsetof(struct virtio_freqhint_config, freq_class) == 2064,
	       "virtio_freqhint_config.freq_class at 2064");
_Static_assert(__builtin_offsetof(struct virtio_freqhint_config,
				  num_freq_classes) == 2320,
	       "virtio_freqhint_config.num_freq_classes at 2320");
_Static_assert(__builtin_offsetof(struct virtio_freqhint_config,
				  freq_classes) == 2328,
	       "virtio_freqhint_config.freq_classes at 2328");
_Static_assert(sizeof(struct virtio_freqhint_config) ==
	       VIRTIO_FREQHINT_CONFIG_SIZE, "virtio_freqhint_config size");

#endif /* _LINUX_VIRTIO_FREQHINT_H */
