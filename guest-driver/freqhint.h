/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * virtio_freqhint: the pure logic, shared by every part and by the KUnit
 * tests: the packed per-vCPU report and its publish/consume protocol, the
 * window (window.c), and the checks of the device's configuration and
 * messages (event.c).  No state, no locks, no device.
 *
 * The module's files and what each may call (no circle):
 *
 *   main.c          the virtio driver -> device.h, gather.h, cpufreq.h
 *   transport.c     hintq sender, sysfs    -> gather.h
 *   debugfs.c       debug view, statistics -> gather.h
 *   clamp_hook.c    a clamp source         -> gather.h
 *   (out of tree, a second clamp source: gather.h)
 *   gather.c        per-vCPU sampling      -> freqhint.h
 *   cpufreq.c       the cpufreq driver     -> cpufreq.h only
 *   window.c, event.c                      -> freqhint.h only
 *
 * Everything mutable hangs off the device (struct virtio_freqhint,
 * device.h), which owns its gatherer and its cpufreq driver.
 */
#ifndef _FREQHINT_H
#define _FREQHINT_H

#include <linux/bitfield.h>
#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/types.h>
#include <linux/virtio_freqhint.h>

#include "cpufreq.h"

/*
 * One vCPU's report, packed so it can be published and read with a single
 * atomic64 access: no torn records between the CPU writing it and the
 * sender reading it.  Values are 0..1024 (11 bits).
 */
#define FH_REP_MIN		GENMASK_ULL(10, 0)
#define FH_REP_MAX		GENMASK_ULL(21, 11)
#define FH_REP_PERF		GENMASK_ULL(32, 22)
#define FH_REP_FLAGS		GENMASK_ULL(36, 33)

static inline u64 vfh_rep_pack(u16 flags, u16 min, u16 max, u16 perf)
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
static inline void vfh_slot_publish(atomic64_t *rep, unsigned long *dirty,
				    unsigned int bit, u64 val)
{
	atomic64_set(rep, val);
	/* Report before bit; pairs with test_and_clear_bit() in vfh_slot_take(). */
	smp_mb__before_atomic();
	set_bit(bit, dirty);
}

static inline bool vfh_slot_take(atomic64_t *rep, unsigned long *dirty,
				 unsigned int bit, u64 *val)
{
	if (!test_and_clear_bit(bit, dirty))
		return false;
	*val = atomic64_read(rep);
	return true;
}

/* Tuning: from the device's configuration (window, idle share, step). */
struct vfh_tuning {
	unsigned int window_ms;		/* 1..1000 */
	unsigned int idle_share;	/* of 1024: busy share still idle */
	unsigned int min_share;		/* of 1024: weight a clamp needs */
	unsigned int perf_step;		/* 1..1024 without a frequency class */
};

/* window.c: one vCPU's window, pure logic (KUnit-tested). */
#define FH_BUCKETS	16
enum { FH_MIN, FH_MAX, FH_NR_CLAMPS };

struct vfh_win {
	u64 start;
	u64 seg_start;
	u64 busy_ns;
	u64 ns[FH_NR_CLAMPS][FH_BUCKETS];
	u16 val[FH_NR_CLAMPS][FH_BUCKETS];
	u16 cur_val[FH_NR_CLAMPS];
	bool cur_has[FH_NR_CLAMPS];
	bool cur_idle;
};

struct vfh_win_result {
	u16 min;
	u16 max;
	u32 busy;		/* per 1024 of the window */
	bool idle;
};

void vfh_win_reset(struct vfh_win *w, u64 now);
void vfh_win_charge(struct vfh_win *w, u64 now);
void vfh_win_track(struct vfh_win *w, bool idle, bool has_min, u16 min,
		   bool has_max, u16 max);
void vfh_win_close(const struct vfh_win *w, u64 now, const struct vfh_tuning *t,
		   struct vfh_win_result *r);
u64 vfh_win_backdate(u64 start, u64 now, u64 span);
u64 vfh_win_busy_from_idle(u64 wall_us, u64 idle_us, bool was_quiet,
			   bool is_quiet, unsigned long idle_sw,
			   unsigned long worker_runs);

/*
 * A vCPU's host levels in capacity units: thr[i] is the highest perf that
 * the host serves with its i-th table frequency; without a table, step.
 */
struct vfh_levels {
	u16 step;
	u8 n;
	u16 thr[VIRTIO_FREQHINT_MAX_FREQS];
};

/* Static unless KUnit tests them (VISIBLE_IF_KUNIT, window.c). */
#if IS_ENABLED(CONFIG_KUNIT)
unsigned int vfh_win_bucket(u16 value);
bool vfh_perf_changes_level(const struct vfh_levels *l, u16 old, u16 val);
#endif
bool vfh_rep_needs_publish(u64 old, u64 rep, const struct vfh_levels *l);

#define FH_PERF_NONE		U16_MAX	/* no request known for the vCPU */

u64 vfh_rep_from_window(const struct vfh_win_result *r, u16 valid, u16 perf);
void vfh_record_fill(struct virtio_freqhint_record *r, u64 rep, u16 vcpu,
		     u32 seq, bool has_perf);

/* event.c: the configuration and the event queue's messages, checked. */
struct vfh_config {
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

const char *vfh_config_why(const struct vfh_config *c, bool eventq);
const char *vfh_feedback_why(const void *buf, size_t len, u16 num_vcpus,
			     bool host_freq);
bool vfh_seq_newer(u32 seq, u32 last);
const char *vfh_cpu_ids_why(const void *buf, size_t len, u16 num_vcpus);
bool vfh_cpu_ids_take(u64 *ids, bool have_ids,
		      const struct virtio_freqhint_cpu_ids *m, u16 num_vcpus);
int vfh_cpu_ids_find(const u64 *ids, unsigned int n, u64 id);

struct vfh_grant {
	u16 floor;
	u16 ceiling;
};

/*
 * The host's side as the latest FEEDBACK snapshot gave it, in host order.
 * The arrays indexed by a count from the message come last, so that
 * nothing written through an index can reach the pointers.
 */
struct vfh_host {
	u32 seq;
	bool agent;
	u16 operator_floor;
	u16 operator_ceiling;
	struct vfh_grant *grants;	/* [num_vcpus] */
	u8 *freq_class;			/* [num_vcpus] */
	u16 num_freq_classes;
	u16 class_step[VIRTIO_FREQHINT_MAX_FREQ_CLASSES];
	struct vfh_freq classes[VIRTIO_FREQHINT_MAX_FREQ_CLASSES];
};

void vfh_feedback_take(struct vfh_host *h,
		       const struct virtio_freqhint_feedback *fb,
		       u16 num_vcpus);

const char *vfh_cur_freq_why(const void *buf, size_t len, u16 num_vcpus);
unsigned int vfh_cur_freq_take(u32 *khz, const struct vfh_host *h,
			       const struct virtio_freqhint_cur_freq *m,
			       u16 num_vcpus);

unsigned long vfh_send_delay(unsigned long now, unsigned long last,
			     unsigned long window);

#endif /* _FREQHINT_H */
