/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * virtio_freqhint: the device's state, shared by the virtio driver
 * (main.c), its sender (transport.c) and its debug view (debugfs.c).
 * Everything mutable of the driver hangs off struct virtio_freqhint.
 */
#ifndef _FREQHINT_DEVICE_H
#define _FREQHINT_DEVICE_H

#include <linux/kthread.h>
#include <linux/list.h>
#include <linux/workqueue.h>
#include <linux/mutex.h>
#include <linux/types.h>

#include "cpufreq.h"
#include "gather.h"

struct attribute_group;
struct dentry;
struct virtio_device;
struct virtqueue;

/*
 * Event buffers kept posted: two would do; with four, CPU_IDS and
 * the first FEEDBACK fit at once and one more is free while they are read.
 */
#define FH_EVENT_BUFS		4

/* What the driver counts (debugfs statistics/, under ->lock). */
struct vfh_stats {
	unsigned long buffers_sent;
	unsigned long records_sent;
	unsigned long send_deferred;
	unsigned long send_errors;
	unsigned long feedback_applied;
	unsigned long feedback_invalid;
	unsigned long feedback_stale;
	unsigned long events_invalid;
	unsigned long cpu_ids_ignored;
	unsigned long event_repost_errors;
	unsigned long unmapped_cpus;
	unsigned long cur_freq_applied;
	unsigned long cur_freq_invalid;
	unsigned long cur_freq_stale;
	unsigned long cur_freq_out_of_class;
};

struct virtio_freqhint {
	struct virtio_device *vdev;	/* NULL over vsock (vsock.c) */
	struct device *dev;		/* for messages: vdev's, or vsock.c's */
	struct virtqueue *vq;		/* hintq */
	struct virtqueue *evq;		/* eventq, NULL without one */
	struct vfh_gather gather;
	struct vfh_cpufreq *cpufreq;
	struct hlist_node cpuhp_node;	/* the CPU hotplug instance */
	struct dentry *debugfs;
	/* Gathering: from vfh_start() to vfh_stop() (probe/restore, freeze/remove). */
	bool started;

	/* The sender and the event handler share one kthread worker. */
	struct kthread_worker *worker;
	struct kthread_delayed_work send_work;
	/* The link's sender, on the worker; NULL: the hintq's (transport.c) */
	void (*send_fn)(struct virtio_freqhint *vi);
	struct kthread_work event_work;
	struct kthread_work apply_work;
	/*
	 * Registers the cpufreq driver, once, on system_freezable_wq: it
	 * never runs between cpufreq_suspend() and cpufreq_resume().
	 */
	struct delayed_work cpufreq_work;
	bool cpufreq_done;	/* the work ran (only it writes this) */

	/* Read-only after probe. */
	u16 num_vcpus;
	u16 max_records;
	bool has_perf;		/* F_PERF */
	bool has_feedback;	/* F_FEEDBACK */
	bool has_host_freq;	/* F_HOST_FREQ */
	bool has_cpu_id;	/* F_CPU_ID */
	bool has_cur_freq;	/* F_CUR_FREQ */
	u32 event_buf_size;
	void *event_buf[FH_EVENT_BUFS];	/* event_buf_size each, NULL without eventq */
	void *event_snap;	/* the message being read, copied out of its buffer */
	struct vfh_tuning tune;
	unsigned int num_bufs;	/* 1, or FH_EVERY_BUFS (bench anchor) */

	/* Everything below is protected by ->lock. */
	struct mutex lock;
	bool link_up;		/* after DRIVER_OK, until the reset */
	bool have_ids;		/* CPU_IDS arrived since DRIVER_OK */
	unsigned long last_send;	/* jiffies; also read unlocked */
	struct virtio_freqhint_hints *buf;	/* [num_bufs], max_records each */
	unsigned long free_bufs;	/* bit i: buffer i is not the device's */
	unsigned long event_unposted;	/* bit i: event_buf[i] is not on eventq */
	u32 *seq;		/* [num_vcpus] */
	u64 *cpu_ids;		/* [num_vcpus], from CPU_IDS */
	u64 *fw_id;		/* [nr_cpu_ids], read on each CPU */
	unsigned long *fw_known;	/* bitmap [nr_cpu_ids] */
	int *index;		/* [nr_cpu_ids], -1: no device index */
	/*
	 * The latest applied CUR_FREQ (0: unknown) and its seq, 0 after each
	 * reset or connection; [num_vcpus], NULL without F_CUR_FREQ.
	 */
	u32 *cur_khz;
	u32 cur_seq;

	/* The latest applied FEEDBACK snapshot (no-agent defaults before). */
	struct vfh_host host;

	struct vfh_stats stats;
	/*
	 * hintq callbacks, i.e. used-buffer interrupts that found a used
	 * buffer (debugfs statistics/); only the vq's interrupt handler
	 * writes it, one at a time.
	 */
	unsigned long hintq_callbacks;
#ifdef FH_OWN_TIME
	/*
	 * bench/guest's build: the sender's time in virtqueue_notify(), the
	 * device's exit (under TCG the device's own handling runs there,
	 * in the vCPU thread, and is charged to the sender).  ->lock.
	 */
	u64 notify_ns;
#endif
};

#ifdef FH_BENCH_ANCHOR
/* Buffers the bench anchor may have in flight (within the queue's 64). */
#define FH_EVERY_BUFS		16
extern bool vfh_notify_every_change;
/*
 * reporting_off: the module's share of the guest's cost is measured
 * against it.  The device is bound, its events taken and the cpufreq
 * driver registered (its requests only stored), but there is no clamp
 * source and no CPU is sampled, so nothing is published, nor sent after
 * the link's first buffer.
 */
extern bool vfh_bench_reporting_off;
#define vfh_reporting_off()	vfh_bench_reporting_off
#else
#define vfh_reporting_off()	false
#endif

/* transport.c: the hintq sender, and the device's sysfs attributes. */
size_t vfh_buf_size(unsigned int n);
int vfh_transport_start(struct virtio_freqhint *vi);
void vfh_transport_link(struct virtio_freqhint *vi, bool up);
void vfh_transport_stop(struct virtio_freqhint *vi);
void vfh_transport_release(struct virtio_freqhint *vi);
void vfh_transport_kick(struct virtio_freqhint *vi);
void vfh_transport_work(struct virtio_freqhint *vi,
			void (*fn)(struct virtio_freqhint *vi));
void vfh_transport_resend(struct virtio_freqhint *vi);
unsigned int vfh_transport_build(struct virtio_freqhint *vi,
				 struct virtio_freqhint_hints *buf, bool *more);
extern const struct attribute_group *vfh_groups[];

/*
 * main.c: the same driver over a link that is not the device (vsock.c):
 * the state built from the host's configuration, the link going up and
 * down, and the host's CPU_IDS and FEEDBACK messages.
 */
struct vfh_config;
struct virtio_freqhint *vfh_link_create(struct device *dev,
					const struct vfh_config *c,
					u32 features,
					void (*send)(struct virtio_freqhint *vi));
void vfh_link_destroy(struct virtio_freqhint *vi);
void vfh_link_up(struct virtio_freqhint *vi);
void vfh_link_down(struct virtio_freqhint *vi);
bool vfh_link_message(struct virtio_freqhint *vi, const void *msg,
		      unsigned int len);

/*
 * vsock.c: the vsock link, used where no device is bound (module
 * parameter transport=auto|virtio|vsock).  vfh_vsock_init() says whether
 * the virtio driver is wanted; vfh_vsock_start() starts connecting;
 * vfh_vsock_stop() (idempotent, under main.c's probe lock) ends it for
 * good, as a device's probe and the module's exit do.
 */
int vfh_vsock_init(bool *want_device);
void vfh_vsock_start(void);
void vfh_vsock_stop(void);
void vfh_vsock_exit(void);

/* debugfs.c */
void vfh_debugfs_init(struct virtio_freqhint *vi);
void vfh_debugfs_exit(struct virtio_freqhint *vi);

#endif /* _FREQHINT_DEVICE_H */
