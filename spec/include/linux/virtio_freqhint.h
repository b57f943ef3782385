/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/*
 * Virtio frequency hint device: guest-visible interface, version 1.
 *
 * The normative text is spec/virtio-freqhint.md.  This file is written the
 * way include/uapi/linux/ takes it: no compile-time assertions (the users
 * check the layouts they rely on), flexible arrays for variable parts.
 *
 * All multi-byte fields are little-endian.
 */
#ifndef _LINUX_VIRTIO_FREQHINT_H
#define _LINUX_VIRTIO_FREQHINT_H

#include <linux/types.h>
#include <linux/virtio_ids.h>

/*
 * Experimental, pending a reservation by the virtio TC, which is asked
 * for the next free ID (spec/upstream/virtio-comment-id-request.txt); the
 * reserved value replaces this one.  The Linux patch adds it to
 * <linux/virtio_ids.h>; until then it is defined here, once.  56 is used
 * by nobody known, and 0x1040 + 56 = 0x1078 fits the modern virtio-pci
 * range (65535, the base spec's experimental range, does not).
 */
#ifndef VIRTIO_ID_FREQHINT
#define VIRTIO_ID_FREQHINT		56
#endif

/* Feature bits. */
/* Records may carry the performance level the guest desires (perf). */
#define VIRTIO_FREQHINT_F_PERF		0
/* The event queue carries FEEDBACK snapshots: host grants and bounds. */
#define VIRTIO_FREQHINT_F_FEEDBACK	1
/* FEEDBACK snapshots carry the host's frequency classes; needs F_FEEDBACK. */
#define VIRTIO_FREQHINT_F_HOST_FREQ	2
/* The event queue's first buffer is CPU_IDS: each vCPU's firmware id. */
#define VIRTIO_FREQHINT_F_CPU_ID	3
/*
 * The event queue carries CUR_FREQ messages: the frequency each vCPU's
 * physical CPU runs at; needs F_HOST_FREQ.
 */
#define VIRTIO_FREQHINT_F_CUR_FREQ	4

/*
 * Virtqueue indices.  The event queue (device -> driver) exists when
 * VIRTIO_FREQHINT_F_FEEDBACK or VIRTIO_FREQHINT_F_CPU_ID was negotiated.
 */
#define VIRTIO_FREQHINT_VQ_HINT		0
#define VIRTIO_FREQHINT_VQ_EVENT	1

/*
 * Performance levels, per vCPU: 1024 is the vCPU's highest performance
 * (the highest frequency the host may set on the physical CPUs it runs
 * on, max_khz of its class), levels are linear in frequency (as ACPI
 * CPPC's abstract scale).  Numerically equal to SCHED_CAPACITY_SCALE.
 */
#define VIRTIO_FREQHINT_SCALE		1024

/* Host frequency classes a snapshot carries, and frequencies per class. */
#define VIRTIO_FREQHINT_MAX_FREQ_CLASSES	8
#define VIRTIO_FREQHINT_MAX_FREQS	16
/*
 * Largest frequency a class may name, in kHz (100 GHz): anything above is
 * implausible, and it keeps every value clear of cpufreq's table markers
 * and of the S32 range of frequency QoS requests.
 */
#define VIRTIO_FREQHINT_MAX_KHZ		100000000
/* vcpu feedback freq_class of a vCPU whose host frequencies are unknown. */
#define VIRTIO_FREQHINT_NO_FREQ_CLASS	0xff
/* cpu_id[] entry of an index that names no possible vCPU. */
#define VIRTIO_FREQHINT_CPU_ID_NONE	0xffffffffffffffffULL

/*
 * Firmware CPU ids (CPU_IDS message), by architecture:
 *  x86:     the x2APIC ID (the APIC ID where there is no x2APIC);
 *  arm64:   MPIDR_EL1 with every bit but Aff3..Aff0 cleared
 *           (MPIDR & 0xff00ffffff);
 *  riscv:   the hart id;
 *  s390x:   the CPU address (STAP).
 * Not defined for other architectures (ppc64, LoongArch, ...): there the
 * device does not offer VIRTIO_FREQHINT_F_CPU_ID.
 */
#define VIRTIO_FREQHINT_MPIDR_AFF_MASK	0xff00ffffffULL

/* Message types: hint queue (driver -> device). */
#define VIRTIO_FREQHINT_MSG_HINTS	1
/* Message types: event queue (device -> driver). */
#define VIRTIO_FREQHINT_MSG_CPU_IDS	2
#define VIRTIO_FREQHINT_MSG_FEEDBACK	3
#define VIRTIO_FREQHINT_MSG_CUR_FREQ	4

/* virtio_freqhint_record.flags */
#define VIRTIO_FREQHINT_R_MIN_VALID	(1 << 0)	/* clamp_min carries a value */
#define VIRTIO_FREQHINT_R_MAX_VALID	(1 << 1)	/* clamp_max carries a value */
#define VIRTIO_FREQHINT_R_PERF_VALID	(1 << 2)	/* perf carries a value */
#define VIRTIO_FREQHINT_R_IDLE		(1 << 3)	/* no runnable guest task */
#define VIRTIO_FREQHINT_R_ALL		0x000f

/* virtio_freqhint_feedback.flags */
#define VIRTIO_FREQHINT_FB_ACTIVE	(1 << 0)	/* hints take effect on the host */
/* The bit's earlier name: QEMU's device sets it while its agent is connected. */
#define VIRTIO_FREQHINT_FB_AGENT	VIRTIO_FREQHINT_FB_ACTIVE
#define VIRTIO_FREQHINT_FB_ALL		0x0001

/*
 * Configuration space: read-only, fixed for the device's lifetime (a
 * driver reads it once, at probe).
 */
struct virtio_freqhint_config {
	__le16 num_vcpus;	/* possible vCPUs, >= 1 */
	__le16 max_records;	/* records per hint buffer, >= 1 */
	__le16 rate_window_ms;	/* see "Device Operation" */
	__le16 perf_step;	/* perf moves below this are noise, 1 .. SCALE */
	__le16 idle_share;	/* busy share (1/1024) that still counts as idle */
	__le16 reserved;	/* zero */
	__le32 event_buf_size;	/* bytes an event buffer needs (>= largest message) */
};

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

/* Buffer on the hint queue: a header followed by num_records records. */
struct virtio_freqhint_hints {
	__le16 msg_type;	/* VIRTIO_FREQHINT_MSG_HINTS */
	__le16 num_records;	/* 1 .. max_records */
	__u8 reserved[4];	/* must be zero */
	struct virtio_freqhint_record records[];
};

/* Event buffer: each vCPU index's firmware CPU id, sent once after DRIVER_OK. */
struct virtio_freqhint_cpu_ids {
	__le16 msg_type;	/* VIRTIO_FREQHINT_MSG_CPU_IDS */
	__le16 num_vcpus;	/* == config num_vcpus */
	__u8 reserved[4];	/* zero */
	__le64 cpu_id[];	/* by vCPU index, or VIRTIO_FREQHINT_CPU_ID_NONE */
};

/*
 * A set of physical CPUs that share one frequency range and table, as the
 * host agent sees it (one or more host cpufreq policies).  Frequencies in
 * kHz, like cpufreq's sysfs files.
 */
struct virtio_freqhint_freq_class {
	__le32 min_khz;		/* lowest frequency the host may set, 1 .. MAX_KHZ */
	__le32 max_khz;		/* highest, min_khz .. MAX_KHZ; capacity 1024 */
	__le16 perf_step;	/* capacity units between adjacent host levels, 1 .. 1024 */
	__le16 num_freqs;	/* 0 (continuous range) .. VIRTIO_FREQHINT_MAX_FREQS */
	__le32 freqs_khz[VIRTIO_FREQHINT_MAX_FREQS];	/* ascending, in [min, max]; rest zero */
};

/* What the host does with one vCPU's requests. */
struct virtio_freqhint_vcpu_feedback {
	__le16 floor;		/* granted range, 0 .. ceiling */
	__le16 ceiling;		/* 0 .. VIRTIO_FREQHINT_SCALE */
	__u8 freq_class;	/* < num_freq_classes, or VIRTIO_FREQHINT_NO_FREQ_CLASS */
	__u8 reserved[3];	/* zero */
};

/*
 * Event buffer: the whole host feedback state, written by the device as one
 * consistent snapshot.  classes[] has room for every class; entries from
 * num_freq_classes on are zero.
 */
struct virtio_freqhint_feedback {
	__le16 msg_type;	/* VIRTIO_FREQHINT_MSG_FEEDBACK */
	__le16 flags;		/* VIRTIO_FREQHINT_FB_* */
	__le32 seq;		/* increments with each snapshot, from 1 after reset */
	__le16 operator_floor;	/* VM-wide, 0 .. operator_ceiling */
	__le16 operator_ceiling;	/* VM-wide, 0 .. VIRTIO_FREQHINT_SCALE */
	__le16 num_vcpus;	/* == config num_vcpus */
	__le16 num_freq_classes;	/* 0 .. MAX_FREQ_CLASSES; 0 without F_HOST_FREQ */
	struct virtio_freqhint_freq_class classes[VIRTIO_FREQHINT_MAX_FREQ_CLASSES];
	struct virtio_freqhint_vcpu_feedback vcpus[];	/* by vCPU index */
};

/*
 * Event buffer: the frequency, in kHz, at which the physical CPU each vCPU
 * last ran on was running when the host last looked; 0 where the host does
 * not know.  A value other than 0 lies within [min_khz, max_khz] of the
 * vCPU's class in the latest FEEDBACK snapshot the device wrote.
 */
struct virtio_freqhint_cur_freq {
	__le16 msg_type;	/* VIRTIO_FREQHINT_MSG_CUR_FREQ */
	__le16 num_vcpus;	/* == config num_vcpus */
	__le32 seq;		/* increments with each message, from 1 after reset */
	__le32 cur_khz[];	/* by vCPU index */
};

#endif /* _LINUX_VIRTIO_FREQHINT_H */
