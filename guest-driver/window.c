// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: the window logic, free of per-CPU state, timers and
 * locks so it can be unit-tested (virtio_freqhint_test.c).
 *
 * Over a window a CPU accounts running time per clamp value bucket.  At the
 * end of the window a value counts only if tasks holding it ran for at
 * least min_share of the clamped running time: the run queue's max-of-mins
 * and max-of-maxes, but without letting a kworker that ran for 30 us set
 * the whole window's ceiling to 1024.
 */
#include <linux/export.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/string.h>
#include <linux/time64.h>
#include <asm/byteorder.h>
#include <kunit/visibility.h>

#include "freqhint.h"

VISIBLE_IF_KUNIT unsigned int vfh_win_bucket(u16 value)
{
	return min_t(unsigned int, value, VIRTIO_FREQHINT_SCALE) * FH_BUCKETS /
	       (VIRTIO_FREQHINT_SCALE + 1);
}
EXPORT_SYMBOL_IF_KUNIT(vfh_win_bucket);

void vfh_win_reset(struct vfh_win *w, u64 now)
{
	w->start = now;
	w->seg_start = now;
	w->busy_ns = 0;
	memset(w->ns, 0, sizeof(w->ns));
	memset(w->val, 0, sizeof(w->val));
}
EXPORT_SYMBOL_IF_KUNIT(vfh_win_reset);

/* Charge the time since the last event to the values that were current. */
void vfh_win_charge(struct vfh_win *w, u64 now)
{
	u64 delta = now > w->seg_start ? now - w->seg_start : 0;
	int id;

	w->seg_start = now;
	if (w->cur_idle)
		return;
	w->busy_ns += delta;
	for (id = 0; id < FH_NR_CLAMPS; id++) {
		unsigned int b;

		if (!w->cur_has[id])
			continue;
		b = vfh_win_bucket(w->cur_val[id]);
		w->ns[id][b] += delta;
		w->val[id][b] = max(w->val[id][b], w->cur_val[id]);
	}
}
EXPORT_SYMBOL_IF_KUNIT(vfh_win_charge);

/* Make these values the ones the following running time is charged to. */
void vfh_win_track(struct vfh_win *w, bool idle, bool has_min, u16 min,
		   bool has_max, u16 max)
{
	w->cur_idle = idle;
	w->cur_has[FH_MIN] = has_min;
	w->cur_val[FH_MIN] = min_t(u16, min, VIRTIO_FREQHINT_SCALE);
	w->cur_has[FH_MAX] = has_max;
	w->cur_val[FH_MAX] = min_t(u16, max, VIRTIO_FREQHINT_SCALE);
}
EXPORT_SYMBOL_IF_KUNIT(vfh_win_track);

/*
 * The window's value for one clamp: the highest bucket whose running time
 * reached min_share of all clamped time, else the bucket that ran longest.
 * @none is what the scheduler applies when no task carried an active clamp
 * (no clamping: 0 for min, 1024 for max).
 */
static u16 vfh_win_pick(const struct vfh_win *w, int id, u16 none,
			unsigned int min_share)
{
	u64 total = 0, thr, most = 0;
	int b, longest = 0;

	for (b = 0; b < FH_BUCKETS; b++)
		total += w->ns[id][b];
	if (!total)
		return none;
	thr = div_u64(total * min_share, 1024);
	for (b = FH_BUCKETS - 1; b >= 0; b--) {
		if (w->ns[id][b] && w->ns[id][b] >= thr)
			return w->val[id][b];
		if (w->ns[id][b] > most) {
			most = w->ns[id][b];
			longest = b;
		}
	}
	return w->val[id][longest];
}

void vfh_win_close(const struct vfh_win *w, u64 now, const struct vfh_tuning *t,
		   struct vfh_win_result *r)
{
	u64 span = now > w->start ? now - w->start : 0;

	r->busy = span ? div64_u64(min(w->busy_ns, span) * 1024, span) : 0;
	r->min = vfh_win_pick(w, FH_MIN, 0, t->min_share);
	r->max = vfh_win_pick(w, FH_MAX, VIRTIO_FREQHINT_SCALE, t->min_share);
	/* The run queue's rule: an aggregated min above the max wins. */
	if (r->min > r->max)
		r->max = r->min;
	/*
	 * Housekeeping below idle_share does not make a vCPU busy; a
	 * counted boost always does.
	 */
	r->idle = r->busy <= t->idle_share && r->min == 0;
}
EXPORT_SYMBOL_IF_KUNIT(vfh_win_close);

/* @l may change meanwhile (gather.c): each entry is read once. */
static unsigned int vfh_level(const struct vfh_levels *l, unsigned int n,
			      u16 perf)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (perf <= READ_ONCE(l->thr[i]))
			return i;
	return n;
}

/*
 * Does a perf move from @old to @val change what the host does?
 * With a table: whether the lowest table entry at or above the request
 * changes.  Without: whether it moved by at least one step.  Reaching an
 * end of the scale is always reported.
 */
VISIBLE_IF_KUNIT bool vfh_perf_changes_level(const struct vfh_levels *l, u16 old, u16 val)
{
	unsigned int n = READ_ONCE(l->n);

	if (old == val)
		return false;
	if (val == VIRTIO_FREQHINT_SCALE || old == VIRTIO_FREQHINT_SCALE)
		return true;
	if (n && n <= VIRTIO_FREQHINT_MAX_FREQS)
		return vfh_level(l, n, old) != vfh_level(l, n, val);
	return abs((int)old - (int)val) >= max_t(int, READ_ONCE(l->step), 1);
}
EXPORT_SYMBOL_IF_KUNIT(vfh_perf_changes_level);

/*
 * Whether @rep must be published over @old: any change of the flags or a
 * clamp (clamp values are exact, not noisy), or a perf move that can
 * change the host's level.
 */
bool vfh_rep_needs_publish(u64 old, u64 rep, const struct vfh_levels *l)
{
	if (FIELD_GET(FH_REP_FLAGS, old) != FIELD_GET(FH_REP_FLAGS, rep) ||
	    FIELD_GET(FH_REP_MIN, old) != FIELD_GET(FH_REP_MIN, rep) ||
	    FIELD_GET(FH_REP_MAX, old) != FIELD_GET(FH_REP_MAX, rep))
		return true;
	return vfh_perf_changes_level(l, FIELD_GET(FH_REP_PERF, old),
				     FIELD_GET(FH_REP_PERF, rep));
}
EXPORT_SYMBOL_IF_KUNIT(vfh_rep_needs_publish);

/*
 * The start of a window woken from idle, reaching back at most @span from
 * @now: saturating, since local_clock() is below @span early after boot.
 */
u64 vfh_win_backdate(u64 start, u64 now, u64 span)
{
	return max(start, now > span ? now - span : 0);
}
EXPORT_SYMBOL_IF_KUNIT(vfh_win_backdate);

/*
 * A window's busy time from the CPU's idle time (no switch events): its
 * @wall_us less its @idle_us, in ns; none when no task but the idle task
 * and the module's own sender ran.
 *
 * Interrupt time is not idle time (tick-sched stops counting idle on
 * interrupt entry), and the interrupts that wake an idle vCPU, the
 * window's own timer first, cost far more under emulation than the idle
 * share: an idle emulated vCPU can read a quarter busy from its window
 * timer alone, so it would never look idle and that timer would never
 * become deferrable.
 * What tells a window that ran no task is the idle task itself: it or
 * one of the module's threads current at both ends (@was_quiet,
 * @is_quiet), and switched away from in between (@idle_sw times: its
 * involuntary switch count, which the scheduler raises at each switch
 * away from it) no more often than those threads started a work item
 * here (@worker_runs).  The sender is woken where a vCPU published,
 * often an idle one; the caller takes their time out, but their wake-ups
 * and switches cost as much as the timer's interrupt, and counting them
 * busy would publish again and so wake the sender again.  Softirq work
 * heavy enough to matter moves to ksoftirqd, a task, and so still counts.
 */
u64 vfh_win_busy_from_idle(u64 wall_us, u64 idle_us, bool was_quiet,
			   bool is_quiet, unsigned long idle_sw,
			   unsigned long worker_runs)
{
	if (was_quiet && is_quiet && idle_sw <= worker_runs)
		return 0;
	return wall_us > idle_us ? (wall_us - idle_us) * NSEC_PER_USEC : 0;
}
EXPORT_SYMBOL_IF_KUNIT(vfh_win_busy_from_idle);

/*
 * A closed window as a report (the flag composition): @valid holds the
 * clamp VALID flags this kernel can know (none without uclamp), @perf the
 * governor's request or FH_PERF_NONE.  An idle vCPU reports IDLE alone
 * with zero values; an active one PERF_VALID when a request is known.
 */
u64 vfh_rep_from_window(const struct vfh_win_result *r, u16 valid, u16 perf)
{
	u16 flags = valid, lo = valid ? r->min : 0, hi = valid ? r->max : 0;

	if (r->idle)
		return vfh_rep_pack(VIRTIO_FREQHINT_R_IDLE, 0, 0, 0);
	if (perf != FH_PERF_NONE)
		flags |= VIRTIO_FREQHINT_R_PERF_VALID;
	else
		perf = 0;
	return vfh_rep_pack(flags, lo, hi, perf);
}
EXPORT_SYMBOL_IF_KUNIT(vfh_rep_from_window);

/*
 * The record for a report, whatever the report holds:
 * only known flags, PERF_VALID only with @has_perf (F_PERF), a value only
 * under its VALID flag and never above 1024, clamp_max not below
 * clamp_min, reserved zero.
 */
void vfh_record_fill(struct virtio_freqhint_record *r, u64 rep, u16 vcpu,
		     u32 seq, bool has_perf)
{
	u16 flags = FIELD_GET(FH_REP_FLAGS, rep) & VIRTIO_FREQHINT_R_ALL;
	u16 lo = min_t(u16, FIELD_GET(FH_REP_MIN, rep), VIRTIO_FREQHINT_SCALE);
	u16 hi = min_t(u16, FIELD_GET(FH_REP_MAX, rep), VIRTIO_FREQHINT_SCALE);
	u16 perf = min_t(u16, FIELD_GET(FH_REP_PERF, rep),
			 VIRTIO_FREQHINT_SCALE);

	if (!has_perf)
		flags &= ~VIRTIO_FREQHINT_R_PERF_VALID;
	if (!(flags & VIRTIO_FREQHINT_R_MIN_VALID))
		lo = 0;
	if (!(flags & VIRTIO_FREQHINT_R_MAX_VALID))
		hi = 0;
	else if (flags & VIRTIO_FREQHINT_R_MIN_VALID)
		hi = max(hi, lo);
	if (!(flags & VIRTIO_FREQHINT_R_PERF_VALID))
		perf = 0;
	r->vcpu = cpu_to_le16(vcpu);
	r->flags = cpu_to_le16(flags);
	r->clamp_min = cpu_to_le16(lo);
	r->clamp_max = cpu_to_le16(hi);
	r->perf = cpu_to_le16(perf);
	r->reserved = 0;
	r->seq = cpu_to_le32(seq);
}
EXPORT_SYMBOL_IF_KUNIT(vfh_record_fill);

/*
 * Jiffies until the next buffer may go: the rest of the window that
 * started with the send at @last, 0 if that window is over.  The time
 * since @last is taken as unsigned, so a send longer ago than half the
 * jiffies range (24.8 days at HZ=1000 on 32 bits) is not in the future;
 * @last must not be later than @now.
 */
unsigned long vfh_send_delay(unsigned long now, unsigned long last,
			     unsigned long window)
{
	unsigned long since = now - last;

	return since < window ? window - since : 0;
}
EXPORT_SYMBOL_IF_KUNIT(vfh_send_delay);
