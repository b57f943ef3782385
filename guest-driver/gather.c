// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: per-vCPU clamp, perf and idle values.
 *
 * The scheduler keeps its per-run-queue clamp aggregation private (struct
 * rq), so a module reconstructs it from what is public:
 *
 *  - a probe on the sched_switch tracepoint sees every task that starts
 *    running and reads its effective clamps from task_struct->uclamp[]
 *    (include/linux/sched.h; refreshed by the scheduler on enqueue, and
 *    for runnable tasks when a cgroup or system limit changes);
 *  - a per-CPU sampler (hrtimer) reads current's clamps once per window,
 *    so a lone busy task that never switches out is still seen.
 *
 * Over a window each CPU accounts running time per clamp value bucket.  At
 * the end of the window a value counts only if tasks holding it ran for at
 * least fh_min_share per mille of the clamped running time: the run
 * queue's max-of-mins and max-of-maxes, but without letting a kworker that
 * ran for 30us set the whole window's ceiling to 1024.
 *
 * Everything here that runs in scheduler context (probe) or hardirq
 * (sampler) touches only this CPU's state with IRQs off, publishes with one
 * atomic64 store and defers the rest to irq_work.  Nothing allocates, sleeps
 * or takes a lock besides what irq_work_queue() and hrtimer code take.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/hrtimer.h>
#include <linux/irq_work.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "freqhint.h"

#define FH_BUCKETS	16

enum { FH_MIN, FH_MAX, FH_NR_CLAMPS };

struct fh_vcpu {
	/* Window accounting: this CPU only, IRQs off or hardirq. */
	u64 win_start;
	u64 seg_start;
	u64 busy_ns;
	u64 ns[FH_NR_CLAMPS][FH_BUCKETS];
	u16 val[FH_NR_CLAMPS][FH_BUCKETS];
	u16 cur_val[FH_NR_CLAMPS];
	bool cur_has[FH_NR_CLAMPS];
	bool cur_idle;
	bool timer_armed;

	bool online;
	struct hrtimer timer;
	struct irq_work arm_work;

	u16 perf;		/* perf.c, FH_PERF_NONE when unknown */
	atomic64_t report;	/* last published record */

	u32 busy_permille;
	unsigned long switches;
	unsigned long windows;
	unsigned long publishes;
};

static DEFINE_PER_CPU(struct fh_vcpu, fh_vcpus);
static struct cpumask fh_dirty;
static unsigned int fh_dev_window_ms;
static struct tracepoint *fh_tp_switch;
static enum cpuhp_state fh_cpuhp_state;

static void fh_kick_fn(struct irq_work *work)
{
	fh_transport_kick();
}

/* Not IRQ_WORK_INIT_HARD: the transport queues work, which RT cannot do in hardirq. */
static struct irq_work fh_kick_work;

unsigned int fh_gather_window_ms(void)
{
	return max(READ_ONCE(fh_rate_window_ms), READ_ONCE(fh_dev_window_ms));
}

void fh_gather_set_window_ms(unsigned int ms)
{
	WRITE_ONCE(fh_dev_window_ms, ms);
}

static ktime_t fh_window(void)
{
	return ms_to_ktime(fh_gather_window_ms());
}

static void fh_reset_window(struct fh_vcpu *v, u64 now)
{
	v->win_start = now;
	v->busy_ns = 0;
	memset(v->ns, 0, sizeof(v->ns));
	memset(v->val, 0, sizeof(v->val));
}

/* Charge the time since the last event to the values that were current. */
static void fh_account(struct fh_vcpu *v, u64 now)
{
	u64 delta = now > v->seg_start ? now - v->seg_start : 0;
	int id;

	v->seg_start = now;
	if (v->cur_idle)
		return;
	v->busy_ns += delta;
	for (id = 0; id < FH_NR_CLAMPS; id++) {
		unsigned int b;

		if (!v->cur_has[id])
			continue;
		b = v->cur_val[id] * FH_BUCKETS / (VIRTIO_FREQHINT_SCALE + 1);
		v->ns[id][b] += delta;
		v->val[id][b] = max(v->val[id][b], v->cur_val[id]);
	}
}

/* Make @p the task whose values the following running time is charged to. */
static void fh_track(struct fh_vcpu *v, struct task_struct *p)
{
	v->cur_idle = is_idle_task(p);
#ifdef CONFIG_UCLAMP_TASK
	{
		/*
		 * Only entries the scheduler marked active are current: the
		 * rest were never refreshed (uclamp unused so far, or a
		 * class without clamps: deadline, stop).
		 */
		struct uclamp_se lo = READ_ONCE(p->uclamp[UCLAMP_MIN]);
		struct uclamp_se hi = READ_ONCE(p->uclamp[UCLAMP_MAX]);

		v->cur_has[FH_MIN] = lo.active;
		v->cur_val[FH_MIN] = min_t(unsigned int, lo.value,
					   VIRTIO_FREQHINT_SCALE);
		v->cur_has[FH_MAX] = hi.active;
		v->cur_val[FH_MAX] = min_t(unsigned int, hi.value,
					   VIRTIO_FREQHINT_SCALE);
	}
#endif
}

#ifdef CONFIG_UCLAMP_TASK
/*
 * The window's value for one clamp: the highest bucket whose running time
 * reached fh_min_share of all clamped time, else the bucket that ran
 * longest.  @none is what the scheduler applies when no task carried an
 * active clamp (no clamping: 0 for min, 1024 for max).
 */
static u16 fh_pick(struct fh_vcpu *v, int id, u16 none)
{
	u64 total = 0, thr, most = 0;
	int b, longest = -1;

	for (b = 0; b < FH_BUCKETS; b++)
		total += v->ns[id][b];
	if (!total)
		return none;
	thr = div_u64(total * READ_ONCE(fh_min_share), 1000);
	for (b = FH_BUCKETS - 1; b >= 0; b--) {
		if (v->ns[id][b] && v->ns[id][b] >= thr)
			return v->val[id][b];
		if (v->ns[id][b] > most) {
			most = v->ns[id][b];
			longest = b;
		}
	}
	return v->val[id][longest];
}
#endif

static bool fh_moved(unsigned int a, unsigned int b)
{
	if (a == b)
		return false;
	/* Always report reaching an end of the scale exactly. */
	if (b == 0 || b == VIRTIO_FREQHINT_SCALE)
		return true;
	return abs((int)a - (int)b) >= READ_ONCE(fh_hysteresis);
}

static void fh_publish(struct fh_vcpu *v, unsigned int cpu, u64 rep)
{
	u64 old = atomic64_read(&v->report);

	if (FIELD_GET(FH_REP_FLAGS, old) == FIELD_GET(FH_REP_FLAGS, rep) &&
	    !fh_moved(FIELD_GET(FH_REP_MIN, old), FIELD_GET(FH_REP_MIN, rep)) &&
	    !fh_moved(FIELD_GET(FH_REP_MAX, old), FIELD_GET(FH_REP_MAX, rep)) &&
	    !fh_moved(FIELD_GET(FH_REP_PERF, old), FIELD_GET(FH_REP_PERF, rep)))
		return;
	atomic64_set(&v->report, rep);
	v->publishes++;
	/* Ordered before the kick by irq_work_queue()'s atomic claim. */
	cpumask_set_cpu(cpu, &fh_dirty);
	irq_work_queue(&fh_kick_work);
}

/* Close the window ending at @now; returns whether the vCPU was idle. */
static bool fh_close_window(struct fh_vcpu *v, unsigned int cpu, u64 now)
{
	u64 span = now - v->win_start;
	u16 flags = 0, lo = 0, hi = 0, perf = READ_ONCE(v->perf);
	bool idle;

	v->windows++;
	v->busy_permille = span ? div64_u64(v->busy_ns * 1000, span) : 0;
#ifdef CONFIG_UCLAMP_TASK
	lo = fh_pick(v, FH_MIN, 0);
	hi = fh_pick(v, FH_MAX, VIRTIO_FREQHINT_SCALE);
	/* The run queue's rule: an aggregated min above the max wins. */
	if (lo > hi)
		hi = lo;
	flags |= VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID;
#endif
	/*
	 * Housekeeping (kworkers, RCU, this module's own send work) must not
	 * make a vCPU look busy; a boosted task always does.
	 */
	idle = v->busy_permille < READ_ONCE(fh_idle_share) && lo == 0;
	if (idle) {
		flags = VIRTIO_FREQHINT_R_IDLE;
		lo = 0;
		hi = 0;
		perf = 0;
	} else if (perf != FH_PERF_NONE) {
		flags |= VIRTIO_FREQHINT_R_PERF_VALID;
	} else {
		perf = 0;
	}
	fh_publish(v, cpu, fh_rep_pack(flags, lo, hi, perf));
	fh_reset_window(v, now);
	return idle;
}

static enum hrtimer_restart fh_sample(struct hrtimer *timer)
{
	struct fh_vcpu *v = container_of(timer, struct fh_vcpu, timer);
	unsigned int cpu = smp_processor_id();
	u64 now;

	if (!READ_ONCE(v->online)) {
		v->timer_armed = false;
		return HRTIMER_NORESTART;
	}
	now = local_clock();
	fh_account(v, now);
	fh_track(v, current);
	if (fh_close_window(v, cpu, now) && v->cur_idle) {
		/* Stay quiet while idle; the next switch-in re-arms. */
		v->timer_armed = false;
		return HRTIMER_NORESTART;
	}
	hrtimer_forward_now(timer, fh_window());
	return HRTIMER_RESTART;
}

static void fh_arm_fn(struct irq_work *work)
{
	struct fh_vcpu *v = container_of(work, struct fh_vcpu, arm_work);

	if (READ_ONCE(v->online) && v->timer_armed &&
	    !hrtimer_is_queued(&v->timer))
		hrtimer_start(&v->timer, fh_window(),
			      HRTIMER_MODE_REL_PINNED_HARD);
}

/*
 * Prototype of trace_sched_switch() since 5.18 (prev_state added); the
 * tracepoint core does not check it, so it must match by hand.
 */
static void fh_sched_switch(void *data, bool preempt, struct task_struct *prev,
			    struct task_struct *next, unsigned int prev_state)
{
	struct fh_vcpu *v = this_cpu_ptr(&fh_vcpus);
	u64 now;

	if (!READ_ONCE(v->online))
		return;
	now = local_clock();
	v->switches++;
	fh_account(v, now);
	fh_track(v, next);
	if (!v->cur_idle && !v->timer_armed) {
		/* hrtimer_start() under the rq lock is legal but deferred anyway. */
		v->timer_armed = true;
		fh_reset_window(v, now);
		irq_work_queue(&v->arm_work);
	}
}

static int fh_cpu_online(unsigned int cpu)
{
	struct fh_vcpu *v = per_cpu_ptr(&fh_vcpus, cpu);
	unsigned long flags;
	u64 now;

	/* AP hotplug callbacks run on @cpu itself. */
	local_irq_save(flags);
	now = local_clock();
	fh_reset_window(v, now);
	v->seg_start = now;
	fh_track(v, current);
	v->timer_armed = true;
	WRITE_ONCE(v->online, true);
	hrtimer_start(&v->timer, fh_window(), HRTIMER_MODE_REL_PINNED_HARD);
	local_irq_restore(flags);
	return 0;
}

static int fh_cpu_offline(unsigned int cpu)
{
	struct fh_vcpu *v = per_cpu_ptr(&fh_vcpus, cpu);

	WRITE_ONCE(v->online, false);
	irq_work_sync(&v->arm_work);
	hrtimer_cancel(&v->timer);
	v->timer_armed = false;
	/* Spec DRV-17: an offline vCPU has "no hint" (flags 0). */
	preempt_disable();
	fh_publish(v, cpu, fh_rep_pack(0, 0, 0, 0));
	preempt_enable();
	return 0;
}

void fh_gather_set_perf(unsigned int cpu, unsigned int perf)
{
	WRITE_ONCE(per_cpu_ptr(&fh_vcpus, cpu)->perf,
		   min_t(unsigned int, perf, FH_PERF_NONE));
}

u64 fh_gather_report(unsigned int cpu)
{
	return atomic64_read(&per_cpu_ptr(&fh_vcpus, cpu)->report);
}

bool fh_gather_test_and_clear_dirty(unsigned int cpu)
{
	return cpumask_test_and_clear_cpu(cpu, &fh_dirty);
}

void fh_gather_mark_all_dirty(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		cpumask_set_cpu(cpu, &fh_dirty);
}

void fh_gather_stats(unsigned int cpu, struct fh_vcpu_stats *st)
{
	struct fh_vcpu *v = per_cpu_ptr(&fh_vcpus, cpu);

	st->report = atomic64_read(&v->report);
	st->online = READ_ONCE(v->online);
	st->busy_permille = READ_ONCE(v->busy_permille);
	st->switches = READ_ONCE(v->switches);
	st->windows = READ_ONCE(v->windows);
	st->publishes = READ_ONCE(v->publishes);
}

static void fh_find_switch(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_switch"))
		*(struct tracepoint **)priv = tp;
}

int fh_gather_init(void)
{
	unsigned int cpu;
	int ret;

	init_irq_work(&fh_kick_work, fh_kick_fn);
	for_each_possible_cpu(cpu) {
		struct fh_vcpu *v = per_cpu_ptr(&fh_vcpus, cpu);

		v->perf = FH_PERF_NONE;
		/* Offline CPUs keep this: "no hint". */
		atomic64_set(&v->report, fh_rep_pack(0, 0, 0, 0));
		hrtimer_init(&v->timer, CLOCK_MONOTONIC,
			     HRTIMER_MODE_REL_PINNED_HARD);
		v->timer.function = fh_sample;
		v->arm_work = IRQ_WORK_INIT_HARD(fh_arm_fn);
	}

	for_each_kernel_tracepoint(fh_find_switch, &fh_tp_switch);
	if (!fh_tp_switch) {
		pr_err("sched_switch tracepoint not found\n");
		return -ENODEV;
	}
	ret = tracepoint_probe_register(fh_tp_switch, (void *)fh_sched_switch,
					NULL);
	if (ret)
		return ret;

	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "virtio/freqhint:online",
				fh_cpu_online, fh_cpu_offline);
	if (ret < 0)
		goto err_unregister_probe;
	fh_cpuhp_state = ret;
	return 0;

err_unregister_probe:
	tracepoint_probe_unregister(fh_tp_switch, (void *)fh_sched_switch, NULL);
	tracepoint_synchronize_unregister();
	return ret;
}

void fh_gather_exit(void)
{
	cpuhp_remove_state(fh_cpuhp_state);
	tracepoint_probe_unregister(fh_tp_switch, (void *)fh_sched_switch, NULL);
	tracepoint_synchronize_unregister();
	irq_work_sync(&fh_kick_work);
}
