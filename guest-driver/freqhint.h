/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * virtio_freqhint: interfaces between the module's parts.
 *
 *   main.c          the virtio driver: probe/remove/freeze/restore, one
 *                   device, the event queue, vCPU index mapping
 *   event.c         pure checks of the configuration and of the event
 *                   queue's messages (CPU_IDS, FEEDBACK)
 *   window.c        pure logic: window accounting, bucket pick, idle rule,
 *                   publish decisions, the publish/consume protocol
 *   clamp_switch.c  the clamp source: a sched_switch tracepoint probe
 *   gather.c        per-vCPU state: sampler, hotplug, leading edge
 *   perf.c          cpufreq driver: the governor's request, the host's
 *                   frequencies and grants as the policy's limits
 *   transport.c     sending: batching, rate window, sysfs
 *   debugfs.c       debug view of the per-vCPU state
 *
 * The gathering side never calls into the device: it publishes a packed
 * report per vCPU, marks it dirty and kicks the transport, which decides
 * when to send.  Everything runs between probe and remove of the one
 * device; without a device the module does nothing.
 */
#ifndef _FREQHINT_H
#define _FREQHINT_H

#include <linux/bitfield.h>
#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/kthread.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/virtio_freqhint.h>

struct attribute_group;
struct task_struct;
struct virtio_device;
struct virtqueue;

/*
 * One vCPU's report, packed so it can be published and read with a single
 * atomic64 access: no torn records between the CPU writing it and the
 * sender reading it.  Values are 0..1024 (11 bits).
 */
#define FH_REP_MIN		GENMASK_ULL(10, 0)
#define FH_REP_MAX		GENMASK_ULL(21, 11)
#define FH_REP_PERF		GENMASK_ULL(32, 22)
#define FH_REP_FLAGS		GENMASK_ULL(36, 33)

static inline u64 fh_rep_pack(u16 flags, u16 min, u16 max, u16 perf)
{
	return FIELD_PREP(FH_REP_MIN, min) | FIELD_PREP(FH_REP_MAX, max) |
	       FIELD_PREP(FH_REP_PERF, perf) | FIELD_PREP(FH_REP_FLAGS, flags);
}

/*
 * Publish/consume protocol of one vCPU's report (message passing):
 *
 *   producer (the vCPU)             consumer (the sender)
 *   store report                    test_and_clear dirty bit
 *   [barrier]                       (value-returning RMW: fully ordered)
 *   set dirty bit                   load report
 *
 * set_bit() is an unordered RMW (Documentation/atomic_bitops.txt), so
 * without the barrier a weakly ordered CPU may make the dirty bit visible
 * before the report: the sender then clears the bit, reads the previous
 * report and nothing marks the vCPU dirty again, so the stale value stays
 * on the host.  smp_mb__before_atomic() orders the report store before the
 * bit; it pairs with the full ordering of test_and_clear_bit(), which
 * orders the bit's clearing before the report load.  If the sender sees
 * the bit, it sees at least the report stored before it.  If it misses a
 * bit set concurrently, that bit stays set and the next pass sends the
 * report.  See tests/fh-publish.litmus.
 */
static inline void fh_slot_publish(atomic64_t *rep, unsigned long *dirty,
				   unsigned int bit, u64 val)
{
	atomic64_set(rep, val);
	/* Report before bit; pairs with test_and_clear_bit() in fh_slot_take(). */
	smp_mb__before_atomic();
	set_bit(bit, dirty);
}

static inline bool fh_slot_take(atomic64_t *rep, unsigned long *dirty,
				unsigned int bit, u64 *val)
{
	if (!test_and_clear_bit(bit, dirty))
		return false;
	*val = atomic64_read(rep);
	return true;
}

/* Tuning: from the device's configuration (window, idle share, step). */
struct fh_tuning {
	unsigned int window_ms;		/* 1..1000 */
	unsigned int idle_share;	/* of 1024: busy share still idle */
	unsigned int min_share;		/* of 1024: weight a clamp needs */
	unsigned int perf_step;		/* 1..1024 without a frequency class */
};

/* window.c: one vCPU's window, pure logic (KUnit-tested). */
#define FH_BUCKETS	16
enum { FH_MIN, FH_MAX, FH_NR_CLAMPS };

struct fh_win {
	u64 start;
	u64 seg_start;
	u64 busy_ns;
	u64 ns[FH_NR_CLAMPS][FH_BUCKETS];
	u16 val[FH_NR_CLAMPS][FH_BUCKETS];
	u16 cur_val[FH_NR_CLAMPS];
	bool cur_has[FH_NR_CLAMPS];
	bool cur_idle;
};

struct fh_win_result {
	u16 min;
	u16 max;
	u32 busy;		/* per 1024 of the window */
	bool idle;
};

void fh_win_reset(struct fh_win *w, u64 now);
void fh_win_charge(struct fh_win *w, u64 now);
void fh_win_track(struct fh_win *w, bool idle, bool has_min, u16 min,
		  bool has_max, u16 max);
unsigned int fh_win_bucket(u16 value);
void fh_win_close(const struct fh_win *w, u64 now, const struct fh_tuning *t,
		  struct fh_win_result *r);
u64 fh_win_backdate(u64 start, u64 now, u64 span);

/*
 * A vCPU's host levels in capacity units: thr[i] is the highest perf that
 * the host serves with its i-th table frequency; without a table, step.
 */
struct fh_levels {
	u16 step;
	u8 n;
	u16 thr[VIRTIO_FREQHINT_MAX_FREQS];
};

bool fh_perf_changes_level(const struct fh_levels *l, u16 old, u16 val);
bool fh_rep_needs_publish(u64 old, u64 rep, const struct fh_levels *l);

/*
 * The clamp source.  clamp_switch.c reports each task that starts running
 * (fh_gather_switch()); clamp_hook.c, with rq_aggregate set, the run
 * queue's aggregate whenever it changes (fh_gather_rq_clamp()).
 */
struct fh_clamp_source {
	const char *name;
	bool rq_aggregate;
	int (*start)(void);
	void (*stop)(void);
};

extern const struct fh_clamp_source fh_clamp_switch;
extern const struct fh_clamp_source fh_clamp_hook;
const struct fh_clamp_source *fh_clamp_start(void);

/* gather.c */
#define FH_PERF_NONE		U16_MAX	/* no request known for the vCPU */
int fh_gather_init(const struct fh_tuning *t);
int fh_gather_start(void);
void fh_gather_stop(void);
void fh_gather_switch(struct task_struct *next);
void fh_gather_rq_clamp(u16 min, u16 max, bool idle);
const char *fh_gather_source(void);
void fh_gather_set_perf(unsigned int cpu, unsigned int perf);
void fh_gather_set_levels(unsigned int cpu, const struct fh_levels *l);
void fh_gather_set_sender(struct task_struct *task);
bool fh_gather_take(unsigned int cpu, u64 *rep);
void fh_gather_mark_all_dirty(void);
unsigned int fh_gather_window_ms(void);

struct fh_vcpu_stats {
	u64 report;
	bool online;
	u32 busy;		/* of the last closed window, per 1024 */
	unsigned long switches;
	unsigned long windows;
	unsigned long publishes;
	unsigned long leading;
};

void fh_gather_stats(unsigned int cpu, struct fh_vcpu_stats *st);

/* perf.c: frequencies of one vCPU as the policy shows them. */
struct fh_freq {
	u32 min_khz;
	u32 max_khz;
	u16 n;			/* 0: continuous range */
	u32 khz[VIRTIO_FREQHINT_MAX_FREQS];
};

int fh_perf_start(void);
void fh_perf_stop(void);
bool fh_perf_active(void);
void fh_perf_synthetic(struct fh_freq *f);
bool fh_perf_set_freq(unsigned int cpu, const struct fh_freq *f);
void fh_perf_recreate(void);
void fh_perf_set_limits(unsigned int cpu, unsigned int floor,
			unsigned int ceiling);

/* event.c: the configuration and the event queue's messages, checked. */
struct fh_config {
	u16 num_vcpus;
	u16 max_records;
	u16 rate_window_ms;
	u16 perf_step;
	u16 idle_share;
	u16 reserved;
	u32 event_buf_size;
};

/* Largest event buffer the driver allocates (num_vcpus 65535 fits). */
#define FH_EVENT_BUF_MAX	(1024 * 1024)

size_t fh_cpu_ids_size(unsigned int num_vcpus);
size_t fh_feedback_size(unsigned int num_vcpus);
const char *fh_config_why(const struct fh_config *c, bool eventq);
bool fh_class_valid(const struct virtio_freqhint_freq_class *fc);
const char *fh_feedback_why(const void *buf, size_t len, u16 num_vcpus,
			    bool host_freq);
bool fh_seq_newer(u32 seq, u32 last);
const char *fh_cpu_ids_why(const void *buf, size_t len, u16 num_vcpus);
int fh_cpu_ids_find(const u64 *ids, unsigned int n, u64 id);

/* main.c / transport.c: the device. */
struct fh_grant {
	u16 floor;
	u16 ceiling;
};

/* Event buffers kept posted: CPU_IDS and the first FEEDBACK fit at once. */
#define FH_EVENT_BUFS		4

struct virtio_freqhint {
	struct virtio_device *vdev;
	struct virtqueue *vq;		/* hintq */
	struct virtqueue *evq;		/* eventq, NULL without one */

	/* The sender and the event handler share one kthread worker. */
	struct kthread_worker *worker;
	struct kthread_delayed_work send_work;
	struct kthread_work event_work;
	struct kthread_work apply_work;

	/* Read-only after probe. */
	u16 num_vcpus;
	u16 max_records;
	bool has_feedback;	/* F_FEEDBACK */
	bool has_host_freq;	/* F_HOST_FREQ */
	bool has_cpu_id;	/* F_CPU_ID */
	u32 event_buf_size;
	void *event_bufs;	/* FH_EVENT_BUFS of event_buf_size */
	struct fh_tuning tune;
	unsigned int num_bufs;	/* 1, or FH_EVERY_BUFS (notify_every_change) */

	/* Everything below is protected by fh_lock (transport.c). */
	bool link_up;		/* after DRIVER_OK, until the reset */
	bool have_ids;		/* CPU_IDS arrived since DRIVER_OK */
	struct virtio_freqhint_hints *buf;	/* [num_bufs], max_records each */
	unsigned long free_bufs;	/* bit i: buffer i is not the device's */
	bool perf_ok;
	u32 *seq;		/* [num_vcpus] */
	u64 *cpu_ids;		/* [num_vcpus], from CPU_IDS */
	u64 *fw_id;		/* [nr_cpu_ids], read on each CPU */
	unsigned long *fw_known;	/* bitmap [nr_cpu_ids] */
	int *index;		/* [nr_cpu_ids], -1: no device index */

	/* The latest applied FEEDBACK snapshot (no-agent defaults before). */
	u32 fb_seq;
	bool agent;
	u16 operator_floor;
	u16 operator_ceiling;
	struct fh_grant *grants;	/* [num_vcpus] */
	u8 *freq_class;			/* [num_vcpus] */
	u16 num_freq_classes;
	struct fh_freq classes[VIRTIO_FREQHINT_MAX_FREQ_CLASSES];
	u16 class_step[VIRTIO_FREQHINT_MAX_FREQ_CLASSES];

	unsigned long buffers_sent;
	unsigned long records_sent;
	unsigned long send_deferred;
	unsigned long send_errors;
	unsigned long feedback_applied;
	unsigned long feedback_invalid;
	unsigned long feedback_stale;
	unsigned long events_invalid;
	unsigned long unmapped_cpus;
};

/* Buffers notify_every_change may have in flight (within the queue's 64). */
#define FH_EVERY_BUFS		16
extern bool fh_notify_every_change;

size_t fh_buf_size(unsigned int n);
int fh_vcpu_index(const struct virtio_freqhint *vi, unsigned int cpu);
int fh_debug_vcpu_index(unsigned int cpu);
int fh_transport_start(struct virtio_freqhint *vi);
void fh_transport_link(struct virtio_freqhint *vi, bool up);
void fh_transport_stop(struct virtio_freqhint *vi);
void fh_transport_release(struct virtio_freqhint *vi);
void fh_transport_kick(void);
void fh_transport_resend(void);
extern const struct attribute_group *fh_groups[];
extern struct mutex fh_lock;

/* debugfs.c */
void fh_debugfs_init(void);
void fh_debugfs_exit(void);

#endif /* _FREQHINT_H */
