// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: per-vCPU clamp, perf and idle values.
 *
 * With the kernel's clamp hook (clamp_hook.c), or with no clamps at all on
 * kernels without uclamp, a deferrable per-CPU timer closes each window,
 * and busy time is the window's wall time less the CPU's idle time
 * (get_cpu_idle_time()), or none when only the idle task ran (interrupts
 * alone are no task's work).  The hook tells the run queue's clamp
 * aggregate when it changes.  Nothing runs on a context switch, and an
 * idle vCPU takes no timer interrupt from the module: the timer waits for
 * the CPU's next wakeup.
 *
 * On nohz_full CPUs the idle-time source takes no timer of the module's:
 * it closes their windows from a housekeeping CPU ("remote windows",
 * below), which it can because it needs nothing of the CPU but its idle
 * time.  The hook source keeps its per-CPU timer there: its clamp weights
 * are charged on the CPU itself.
 *
 * Clamps are reported only once the scheduler aggregates them, which it
 * does from the first clamp anyone sets (sched_uclamp_used, not exported):
 * the module never sets one itself, and tells that uclamp is in use from
 * what the scheduler shows, a hook event or a task's clamp entry marked
 * active (only enqueue accounting, under that key, sets it).
 *
 * Window logic is in window.c.  Publication is on the window's end, except
 * on the leading edge: a raised minimum clamp on a vCPU that published
 * nothing within the last window is published at once.
 *
 * The module's own threads, the sender and the vsock link's receiver, are
 * accounted like the idle task: their work must not make an empty vCPU
 * look busy (which would be sent, which would run the sender again).
 *
 * Everything here that runs in scheduler context (the hook) or from a
 * window's timer touches only this CPU's state with IRQs off (the remote
 * windows: theirs, under remote_lock), publishes with vfh_slot_publish()
 * and defers the rest to irq_work.  Nothing allocates, sleeps or takes a
 * lock besides that one and what irq_work_queue() and timer code take.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/cpufreq.h>
#include <linux/cpumask.h>
#include <linux/jiffies.h>
#include <linux/irq_work.h>
#include <linux/minmax.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/isolation.h>
#include <linux/sched/signal.h>
#include <linux/timer.h>
#ifdef FH_CLAMP_SWITCH
#include <linux/hrtimer.h>
#include <linux/sched/prio.h>
#endif

#include "gather.h"

struct vfh_vcpu {
	struct vfh_gather *g;

	/* Window accounting: this CPU only, IRQs off or hardirq. */
	struct vfh_win win;
	u64 last_pub;
#ifdef FH_CLAMP_SWITCH
	/* The sched_switch source's sampler (below), armed or not. */
	struct hrtimer timer;
	bool timer_armed;
	/*
	 * nohz_full (no housekeeping tick): no sampler, windows close at
	 * context switches.
	 */
	bool tickless;
#endif

	bool online;
	/*
	 * Its windows close on a housekeeping CPU (remote windows), under
	 * the gatherer's remote_lock; set and cleared by its hotplug.
	 */
	bool remote;
	/* The next window's end, busy or idle (deferrable). */
	struct timer_list wtimer;
	struct timer_list wtimer_idle;
	u64 idle_us;			/* get_cpu_idle_time() at the last close */
	u64 wall_us;
	/*
	 * This CPU's idle task, once seen; at the last close, whether it or
	 * one of the module's threads was current, and the idle task's
	 * nivcsw.
	 */
	struct task_struct *idle;
	bool quiet_at_close;
	unsigned long idle_switches;

	/*
	 * The module's threads' work items on this CPU and their time
	 * (counted where one begins and charged where it ends:
	 * vfh_gather_work_begin() and vfh_gather_work_end(), IRQs off on
	 * this CPU), and both at the last close.
	 */
	unsigned long worker_runs;
	u64 worker_ns;
	unsigned long worker_runs_close;
	u64 worker_ns_close;
	u16 perf;		/* the cpufreq driver's, FH_PERF_NONE when unknown */
	struct vfh_levels levels;
	atomic64_t report;	/* last published record */

	u32 busy;
#ifdef FH_OWN_TIME
	u64 own_ns;		/* in this CPU's window timers and irq_works */
#endif
	unsigned long switches;
	unsigned long windows;
	unsigned long publishes;
	unsigned long leading;
};

#ifdef FH_OWN_TIME
/*
 * bench/guest's build only (FREQHINT_OWN_TIME=y, Kbuild: FH_OWN_TIME): the
 * module's own CPU time outside the scheduler's hot path (the window
 * timers and the irq_works; the sender is a task of its own) is charged to
 * the CPU it ran on, IRQs off, so nothing else on this CPU adds meanwhile:
 * on PREEMPT_RT the irq_work runs in irq_workd, preemptible, and a timer
 * on that CPU may charge its own time in between.  The benchmark reads it
 * (debugfs sampler_ns).  Measurement, not the driver's work: never in the
 * product.
 */
static void vfh_charge_own(struct vfh_vcpu *v, u64 t0)
{
	unsigned long flags;

	local_irq_save(flags);
	v->own_ns += local_clock() - t0;
	local_irq_restore(flags);
}

#endif
static void vfh_kick_fn(struct irq_work *work)
{
	struct vfh_gather *g = container_of(work, struct vfh_gather, kick_work);
#ifdef FH_OWN_TIME
	u64 t0 = local_clock();
#endif

	g->kick(g);
#ifdef FH_OWN_TIME
	vfh_charge_own(this_cpu_ptr(g->vcpus), t0);
#endif
}

static u64 vfh_window_ns(const struct vfh_gather *g)
{
	return (u64)g->tune.window_ms * NSEC_PER_MSEC;
}

/* The module's own threads count as idle time (see above). */
static bool vfh_quiet_task(const struct vfh_gather *g, struct task_struct *p)
{
	return is_idle_task(p) || p == READ_ONCE(g->sender) ||
	       p == READ_ONCE(g->receiver);
}

static void vfh_saw_uclamp(struct vfh_gather *g)
{
	if (!READ_ONCE(g->uclamp_used))
		WRITE_ONCE(g->uclamp_used, true);
}

static void vfh_publish(struct vfh_vcpu *v, unsigned int cpu, u64 rep, u64 now)
{
	u64 old = atomic64_read(&v->report);

	if (!vfh_rep_needs_publish(old, rep, &v->levels))
		return;
	v->publishes++;
	v->last_pub = now;
	vfh_slot_publish(&v->report, v->g->dirty, cpu, rep);
	irq_work_queue(&v->g->kick_work);
}

/* Clamps are valid once the scheduler aggregates them (see above). */
static u16 vfh_valid_flags(const struct vfh_gather *g)
{
	return IS_ENABLED(CONFIG_UCLAMP_TASK) && READ_ONCE(g->uclamp_used) ?
	       VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID : 0;
}

/*
 * Busy time from idle time (the hook and the idle-time source): the CPU's
 * wall time since the last close less its idle time, iowait counted idle
 * as the scheduler does, and none if only the idle task and the module's
 * threads ran meanwhile (vfh_win_busy_from_idle(): the interrupts that
 * wake an idle vCPU, this window's timer first, are not a task's work).
 * Replaces what vfh_win_charge() added, which for these sources is all
 * the window's time (it only weighs the clamps).  On @cpu itself, IRQs
 * off: current is what the window's timer (softirq) or the hook
 * interrupted, and the idle task's switch count changes only in this
 * CPU's scheduler.
 *
 * No task is named here, so the module's threads' running time is in
 * the busy time; what they ran here since the last close
 * (vfh_gather_work_end()) is taken out: our own work must not make a
 * vCPU busy, which would send again.
 */
static void vfh_busy_from_idle(struct vfh_vcpu *v, unsigned int cpu)
{
	u64 wall, idle = get_cpu_idle_time(cpu, &wall, 0);
	bool quiet = vfh_quiet_task(v->g, current);
	unsigned long sw;
	u64 busy;

	if (is_idle_task(current))
		v->idle = current;
	/* The idle task is never freed; unseen yet, nothing is certain. */
	quiet = quiet && v->idle;
	sw = quiet ? READ_ONCE(v->idle->nivcsw) : 0;
	busy = vfh_win_busy_from_idle(wall - v->wall_us, idle - v->idle_us,
				      v->quiet_at_close, quiet,
				      sw - v->idle_switches,
				      v->worker_runs - v->worker_runs_close);
	v->win.busy_ns = busy - min(busy, v->worker_ns - v->worker_ns_close);
	v->wall_us = wall;
	v->idle_us = idle;
	v->quiet_at_close = quiet;
	v->idle_switches = sw;
	v->worker_runs_close = v->worker_runs;
	v->worker_ns_close = v->worker_ns;
}

/* Close the window ending at @now; returns whether the vCPU was idle. */
static bool vfh_close_window(struct vfh_vcpu *v, unsigned int cpu, u64 now)
{
	struct vfh_win_result r;

	v->windows++;
	vfh_win_close(&v->win, now, &v->g->tune, &r);
	v->busy = r.busy;
	vfh_publish(v, cpu, vfh_rep_from_window(&r, vfh_valid_flags(v->g),
						READ_ONCE(v->perf)), now);
	vfh_win_reset(&v->win, now);
	return r.idle;
}

/*
 * Leading edge: the caller saw a user task on the vCPU (the hook: a raised
 * minimum clamp), whose clamps are the ones just tracked.  If the vCPU
 * published nothing within the last window and that ends an idle report
 * or raises the published minimum, publish it now and start a new window;
 * returns whether it did.  Only what is proven is published: the run
 * queue's max-of-mins is at least the minimum tracked.  Decreases wait for
 * the window's end.
 */
static bool vfh_leading_edge(struct vfh_vcpu *v, unsigned int cpu, u64 now)
{
	u64 old = atomic64_read(&v->report);
	u16 oflags = FIELD_GET(FH_REP_FLAGS, old);
	u16 flags = vfh_valid_flags(v->g), perf = READ_ONCE(v->perf);
	u16 lo = v->win.cur_has[FH_MIN] ? v->win.cur_val[FH_MIN] : 0;
	u16 hi = v->win.cur_has[FH_MAX] ? v->win.cur_val[FH_MAX] :
					  VIRTIO_FREQHINT_SCALE;

	if (now - v->last_pub < vfh_window_ns(v->g))
		return false;
	if (oflags & (VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_PERF_VALID)) {
		/* Active: only a raised minimum is certain. */
		if (!flags || lo <= FIELD_GET(FH_REP_MIN, old))
			return false;
		hi = max_t(u16, FIELD_GET(FH_REP_MAX, old), lo);
		perf = FIELD_GET(FH_REP_PERF, old);
		flags |= oflags & VIRTIO_FREQHINT_R_PERF_VALID;
	} else {
		/* Idle or no hint so far: what the caller saw ends it. */
		hi = max(hi, lo);
		if (perf != FH_PERF_NONE)
			flags |= VIRTIO_FREQHINT_R_PERF_VALID;
		else
			perf = 0;
		if (!flags)
			return false;
		if (!vfh_valid_flags(v->g)) {
			lo = 0;
			hi = 0;
		}
	}
	v->leading++;
	vfh_publish(v, cpu, vfh_rep_pack(flags, lo, hi, perf), now);
	vfh_win_reset(&v->win, now);
	return true;
}

/*
 * The window of the hook and the idle-time source, a timer pinned to its
 * CPU.  After a busy window it fires, so that the vCPU going idle is
 * reported; after an idle window it is deferrable, so it never wakes an
 * idle vCPU, and the first window after the idle stretch spans it and
 * reads idle.  Softirq on this CPU: IRQs off against the hook.
 */
static void vfh_arm_window(struct vfh_vcpu *v, bool idle)
{
	mod_timer(idle ? &v->wtimer_idle : &v->wtimer,
		  jiffies + msecs_to_jiffies(v->g->tune.window_ms));
}

static void vfh_window_end(struct vfh_vcpu *v)
{
	unsigned int cpu = smp_processor_id();
	unsigned long flags;
	u64 now;

	local_irq_save(flags);
	now = local_clock();
	if (READ_ONCE(v->online)) {
		vfh_win_charge(&v->win, now);
		vfh_busy_from_idle(v, cpu);
		vfh_arm_window(v, vfh_close_window(v, cpu, now));
	}
#ifdef FH_OWN_TIME
	vfh_charge_own(v, now);
#endif
	local_irq_restore(flags);
}

static void vfh_window_timer(struct timer_list *t)
{
	struct vfh_vcpu *v = from_timer(v, t, wtimer);

	vfh_window_end(v);
}

static void vfh_window_timer_idle(struct timer_list *t)
{
	struct vfh_vcpu *v = from_timer(v, t, wtimer_idle);

	vfh_window_end(v);
}

/*
 * Remote windows: nohz_full CPUs under the idle-time source.  Such a CPU
 * runs its one task without a tick, and a window timer of its own would
 * interrupt it every window, which is what nohz_full is there to avoid.
 * The idle-time source needs nothing of the CPU itself: its idle time can
 * be read from any CPU (get_cpu_idle_time()), there are no clamps, and the
 * cpufreq driver stores its perf value with WRITE_ONCE().  So one timer on
 * a housekeeping CPU closes the windows of all of them.
 *
 * Their windows run on the idle time's own clock (ktime, in us), the same
 * on every CPU, not on local_clock(), which is per CPU.  Nothing needs the
 * idle task's switch count here (vfh_win_busy_from_idle()): the interrupts
 * that make an emulated idle vCPU look busy are first of all its window
 * timer's, which these CPUs do not take, and the module's threads,
 * unbound kthreads, are kept on housekeeping CPUs by nohz_full.
 *
 * The timer is not deferrable: a busy nohz_full CPU beside idle
 * housekeeping CPUs is the case that matters, and a deferrable timer
 * would wait for a housekeeping CPU to wake.  It costs one timer a window
 * on one housekeeping CPU while any nohz_full CPU is online.
 */
static bool vfh_remote_cpu(const struct vfh_gather *g, unsigned int cpu)
{
	return g->source == &vfh_clamp_idle &&
	       !housekeeping_cpu(cpu, HK_TYPE_TICK);
}

/* Under remote_lock; from @cpu's hotplug or from the timer itself. */
static void vfh_remote_arm(struct vfh_gather *g)
{
	if (timer_pending(&g->remote_timer))
		return;
	g->remote_timer.expires = jiffies + msecs_to_jiffies(g->tune.window_ms);
	add_timer_on(&g->remote_timer, housekeeping_any_cpu(HK_TYPE_TIMER));
}

/* Sample @cpu's idle time; returns the sample's time in ns. */
static u64 vfh_remote_sample(struct vfh_vcpu *v, unsigned int cpu)
{
	u64 wall, idle = get_cpu_idle_time(cpu, &wall, 0);

	v->win.busy_ns = vfh_win_busy_from_idle(wall - v->wall_us,
						idle - v->idle_us,
						false, false, 0, 0);
	v->wall_us = wall;
	v->idle_us = idle;
	return wall * NSEC_PER_USEC;
}

static void vfh_remote_windows(struct timer_list *t)
{
	struct vfh_gather *g = from_timer(g, t, remote_timer);
	unsigned long flags;
	unsigned int cpu;
#ifdef FH_OWN_TIME
	u64 t0 = local_clock();
#endif

	spin_lock_irqsave(&g->remote_lock, flags);
	for_each_cpu(cpu, g->remote_cpus) {
		struct vfh_vcpu *v = per_cpu_ptr(g->vcpus, cpu);

		vfh_close_window(v, cpu, vfh_remote_sample(v, cpu));
	}
	if (!cpumask_empty(g->remote_cpus))
		vfh_remote_arm(g);
#ifdef FH_OWN_TIME
	vfh_charge_own(this_cpu_ptr(g->vcpus), t0);
#endif
	spin_unlock_irqrestore(&g->remote_lock, flags);
}

/*
 * A clamp source's event on this CPU (IRQs off): counted, and the window
 * charged up to *@now.  NULL while the CPU is offline: nothing to do.
 */
static struct vfh_vcpu *vfh_event(struct vfh_gather *g, u64 *now)
{
	struct vfh_vcpu *v = this_cpu_ptr(g->vcpus);

	if (!READ_ONCE(v->online))
		return NULL;
	*now = local_clock();
	v->switches++;
	vfh_win_charge(&v->win, *now);
	return v;
}

/*
 * The clamp hook: this CPU's run queue's new aggregate (IRQs off).  Busy
 * and idle come from idle time, so the time is charged whole.
 */
void vfh_gather_rq_clamp(struct vfh_gather *g, u16 min, u16 max)
{
	struct vfh_vcpu *v;
	u64 now;

	v = vfh_event(g, &now);
	if (!v)
		return;
	/* Not clamped is what the rq holds before uclamp is used. */
	if (min || max < VIRTIO_FREQHINT_SCALE)
		vfh_saw_uclamp(g);
	vfh_win_track(&v->win, false, true, min, true, max);
	/*
	 * No task is named: only a raised minimum proves a user task.  The
	 * window restarts here; its deferrable timer is not moved.
	 */
	if (min && vfh_leading_edge(v, smp_processor_id(), now))
		vfh_busy_from_idle(v, smp_processor_id());
}

#ifdef FH_CLAMP_SWITCH
/*
 * The sched_switch source (clamp_switch.c; out of tree only, Kbuild: DKMS
 * builds on uclamp kernels without the hook) reports every task that
 * starts running; its effective clamps are read from task_struct->uclamp[]
 * (include/linux/sched.h; refreshed by the scheduler on enqueue, and for
 * runnable tasks when a cgroup or system limit changes).  A per-CPU hrtimer
 * (the sampler) reads current's clamps once per window, so a lone busy task
 * that never switches out is still seen, and stops while the CPU idles; the
 * next switch-in re-arms it.  On nohz_full CPUs it takes no sampler: their
 * windows close at context switches.  Busy time is what vfh_win_charge()
 * counts, the time tasks other than the idle task and the module's
 * threads ran, not the CPU's idle time.
 *
 * All of it is kept here rather than in a file of its own: it is the
 * gatherer's per-CPU window, which the other sources share, seen from a
 * different event.
 */

/* Idle windows a window woken from idle may reach back over. */
#define FH_IDLE_BACKDATE	4

static bool vfh_switch_source(const struct vfh_gather *g)
{
	return g->source == &vfh_clamp_switch;
}

static ktime_t vfh_window(const struct vfh_gather *g)
{
	return ms_to_ktime(g->tune.window_ms);
}

/*
 * The window timer's slack: it may fire up to a tick late, so that it
 * expires with the tick (a tick period always holds a tick while the tick
 * runs) instead of taking an interrupt of its own; never more than a
 * quarter of the window.  The window's busy share and clamp weights are
 * taken over the time it actually spanned, and the timer is forwarded from
 * its soft expiry, so windows still average window_ms: a window only ends
 * up to the slack late.
 */
static u64 vfh_window_slack(const struct vfh_gather *g)
{
	return min_t(u64, TICK_NSEC, vfh_window_ns(g) / 4);
}

/* Start (or restart) this CPU's sampler: on the CPU, IRQs off. */
static void vfh_start_timer(struct vfh_vcpu *v)
{
	hrtimer_start_range_ns(&v->timer, vfh_window(v->g),
			       vfh_window_slack(v->g),
			       HRTIMER_MODE_REL_PINNED_HARD);
}

/* Track @p's clamps; returns false if @p counts as idle. */
static bool vfh_track(struct vfh_vcpu *v, struct task_struct *p)
{
	bool idle = vfh_quiet_task(v->g, p);
	bool has_min = false, has_max = false;
	u16 lo = 0, hi = VIRTIO_FREQHINT_SCALE;

#ifdef CONFIG_UCLAMP_TASK
	{
		/*
		 * Only entries the scheduler marked active are current: the
		 * rest were never refreshed (uclamp unused so far, or a
		 * class without clamps: deadline, stop).
		 */
		struct uclamp_se cmin = READ_ONCE(p->uclamp[UCLAMP_MIN]);
		struct uclamp_se cmax = READ_ONCE(p->uclamp[UCLAMP_MAX]);

		has_min = cmin.active;
		lo = cmin.value;
		has_max = cmax.active;
		hi = cmax.value;
		if (has_min || has_max)
			vfh_saw_uclamp(v->g);
	}
#endif
	vfh_win_track(&v->win, idle, has_min, lo, has_max, hi);
	return !idle;
}

static enum hrtimer_restart vfh_sample_window(struct vfh_vcpu *v, u64 now)
{
	unsigned int cpu = smp_processor_id();
	bool busy_now;

	if (!READ_ONCE(v->online)) {
		v->timer_armed = false;
		return HRTIMER_NORESTART;
	}
	vfh_win_charge(&v->win, now);
	busy_now = vfh_track(v, current);
	if (vfh_close_window(v, cpu, now) && !busy_now) {
		/* Stay quiet while idle; the next switch-in re-arms. */
		v->timer_armed = false;
		return HRTIMER_NORESTART;
	}
	hrtimer_forward_now(&v->timer, vfh_window(v->g));
	return HRTIMER_RESTART;
}

static enum hrtimer_restart vfh_sample(struct hrtimer *timer)
{
	struct vfh_vcpu *v = container_of(timer, struct vfh_vcpu, timer);
	u64 now = local_clock();
	enum hrtimer_restart ret = vfh_sample_window(v, now);

#ifdef FH_OWN_TIME
	vfh_charge_own(v, now);
#endif
	return ret;
}

/* The sched_switch source: @next starts running on this CPU. */
void vfh_gather_switch(struct vfh_gather *g, struct task_struct *next)
{
	unsigned int cpu = smp_processor_id();
	u64 now;
	struct vfh_vcpu *v = vfh_event(g, &now);

	if (!v)
		return;
	if (!vfh_track(v, next)) {
		/*
		 * nohz_full: the switch to idle (or to our thread) closes an
		 * elapsed window, as the sampler would have; it reads idle
		 * only if the vCPU mostly idled in it.  Switches in never
		 * close one: the leading edge covers them, and a lone task
		 * that then runs without a switch keeps what was published.
		 */
		if (v->tickless && now - v->win.start >= vfh_window_ns(g))
			vfh_close_window(v, cpu, now);
		return;
	}
	if (!v->timer_armed && !v->tickless) {
		/*
		 * Woken from idle: the window keeps the idle stretch since the
		 * last close (up to FH_IDLE_BACKDATE windows), so a kernel
		 * thread's blip after a long idle (RCU's grace-period thread,
		 * say) is weighed against that stretch.  User tasks start a
		 * fresh window on the leading edge.
		 *
		 * The timer is started here, under the run queue's lock with
		 * IRQs off, as the scheduler's own hrtick (hrtick_start() from
		 * pick_next_task_fair()) and deadline timers (start_dl_timer())
		 * are: the lock order rq->lock -> hrtimer base lock is the
		 * scheduler's, the timer is pinned to this CPU, so there is no
		 * base to switch, and its callback takes no run queue's lock.
		 * No irq_work, so no self-IPI.
		 */
		v->timer_armed = true;
		v->win.start = vfh_win_backdate(v->win.start, now,
						FH_IDLE_BACKDATE * vfh_window_ns(g));
		vfh_start_timer(v);
	}
	/*
	 * A user task ends an idle report (the run queue's max-of-mins is at
	 * least its minimum); kernel threads (housekeeping) and real-time
	 * tasks wait for the window's end.
	 */
	if ((next->flags & PF_KTHREAD) || next->prio < MAX_RT_PRIO)
		return;
	/* The window restarts with @next; the sampler is restarted to match. */
	if (vfh_leading_edge(v, cpu, now) && !v->tickless) {
		v->timer_armed = true;
		vfh_start_timer(v);
	}
}

/* The sampler starts at the CPU's online, with its current task. */
static void vfh_switch_online(struct vfh_vcpu *v, unsigned int cpu)
{
	vfh_track(v, current);
	v->tickless = !housekeeping_cpu(cpu, HK_TYPE_TICK);
	v->timer_armed = !v->tickless;
	WRITE_ONCE(v->online, true);
	if (v->timer_armed)
		vfh_start_timer(v);
}

/* After the CPU is marked offline: the sampler re-arms only while online. */
static void vfh_switch_offline(struct vfh_vcpu *v)
{
	hrtimer_cancel(&v->timer);
	v->timer_armed = false;
}

static void vfh_switch_init(struct vfh_vcpu *v)
{
	hrtimer_init(&v->timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
	v->timer.function = vfh_sample;
}

#endif /* FH_CLAMP_SWITCH */
/* The clamp source in use, "none" before the start or after the stop. */
const char *vfh_gather_source(const struct vfh_gather *g)
{
	return READ_ONCE(g->started) ? g->source->name : "none";
}

/* From the owner's CPU hotplug callback (AP state: it runs on @cpu). */
void vfh_gather_cpu_online(struct vfh_gather *g, unsigned int cpu)
{
	struct vfh_vcpu *v = per_cpu_ptr(g->vcpus, cpu);
	unsigned long flags;
	u64 now;

	local_irq_save(flags);
	now = local_clock();
	vfh_win_reset(&v->win, now);
	v->last_pub = now - vfh_window_ns(g);
#ifdef FH_CLAMP_SWITCH
	if (vfh_switch_source(g)) {
		vfh_switch_online(v, cpu);
		local_irq_restore(flags);
		return;
	}
#endif
	/* No clamp until the hook says otherwise. */
	vfh_win_track(&v->win, false, false, 0, false, 0);
	if (vfh_remote_cpu(g, cpu)) {
		/* Idle time from now, on the idle time's clock. */
		spin_lock(&g->remote_lock);
		vfh_win_reset(&v->win, vfh_remote_sample(v, cpu));
		v->remote = true;
		WRITE_ONCE(v->online, true);
		cpumask_set_cpu(cpu, g->remote_cpus);
		vfh_remote_arm(g);
		spin_unlock(&g->remote_lock);
	} else {
		/* Idle time from now. */
		vfh_busy_from_idle(v, cpu);
		WRITE_ONCE(v->online, true);
		/* Pinned: queued on this CPU, where this runs. */
		vfh_arm_window(v, false);
	}
	local_irq_restore(flags);
}

void vfh_gather_cpu_offline(struct vfh_gather *g, unsigned int cpu)
{
	struct vfh_vcpu *v = per_cpu_ptr(g->vcpus, cpu);
	unsigned long flags;

	if (v->remote) {
		/* Out of the remote windows: the closer no longer touches @v. */
		spin_lock_irqsave(&g->remote_lock, flags);
		cpumask_clear_cpu(cpu, g->remote_cpus);
		WRITE_ONCE(v->online, false);
		WRITE_ONCE(v->remote, false);
		spin_unlock_irqrestore(&g->remote_lock, flags);
	} else {
		/* The window's timers re-arm only while online. */
		WRITE_ONCE(v->online, false);
	}
#ifdef FH_CLAMP_SWITCH
	if (vfh_switch_source(g))
		vfh_switch_offline(v);
#endif
	/*
	 * Each waits for a running callback, which re-armed one of them only
	 * if online: the first that could have been re-armed is deleted last.
	 */
	timer_delete_sync(&v->wtimer);
	timer_delete_sync(&v->wtimer_idle);
	timer_delete_sync(&v->wtimer);
	/* An offline vCPU has "no hint" (flags 0). */
	preempt_disable();
	vfh_publish(v, cpu, vfh_rep_pack(0, 0, 0, 0), local_clock());
	preempt_enable();
}

#ifdef FH_BENCH_ANCHOR
/*
 * bench/guest's anchor (built only with FH_BENCH_ANCHOR): an active
 * vCPU's report takes each new request at once, as virtual-cpufreq's
 * register write does.  Only on the vCPU itself (schedutil's fast switch,
 * IRQs off): state here is this CPU's.  Requests from elsewhere and vCPUs
 * reported idle wait for the window's end as usual.
 */
static void vfh_publish_request(struct vfh_vcpu *v, unsigned int cpu, u16 perf)
{
	u64 old = atomic64_read(&v->report);
	u16 flags = FIELD_GET(FH_REP_FLAGS, old);
	u64 rep;

	if (!(flags & VIRTIO_FREQHINT_R_PERF_VALID) || perf == FH_PERF_NONE)
		return;
	rep = vfh_rep_pack(flags, FIELD_GET(FH_REP_MIN, old),
			   FIELD_GET(FH_REP_MAX, old), perf);
	if (rep == old)
		return;
	v->publishes++;
	v->last_pub = local_clock();
	vfh_slot_publish(&v->report, v->g->dirty, cpu, rep);
	irq_work_queue(&v->g->kick_work);
}

static void vfh_anchor_request(struct vfh_gather *g, struct vfh_vcpu *v,
			       unsigned int cpu, u16 perf)
{
	unsigned long flags;

	if (!g->every_request)
		return;
	local_irq_save(flags);
	if (cpu == smp_processor_id() && READ_ONCE(v->online))
		vfh_publish_request(v, cpu, perf);
	local_irq_restore(flags);
}
#else
static void vfh_anchor_request(struct vfh_gather *g, struct vfh_vcpu *v,
			       unsigned int cpu, u16 perf)
{
}
#endif

/* The governor's request for @cpu, from the cpufreq driver (any context). */
void vfh_gather_set_perf(struct vfh_gather *g, unsigned int cpu,
			 unsigned int perf)
{
	struct vfh_vcpu *v = per_cpu_ptr(g->vcpus, cpu);

	perf = min_t(unsigned int, perf, FH_PERF_NONE);
	WRITE_ONCE(v->perf, perf);
	vfh_anchor_request(g, v, cpu, perf);
}

/*
 * Process context; a window closed meanwhile on a half-updated table only
 * publishes or skips one record.
 */
void vfh_gather_set_levels(struct vfh_gather *g, unsigned int cpu,
			   const struct vfh_levels *l)
{
	struct vfh_levels *d = &per_cpu_ptr(g->vcpus, cpu)->levels;
	unsigned int i;

	WRITE_ONCE(d->n, 0);
	WRITE_ONCE(d->step, l->step);
	for (i = 0; i < VIRTIO_FREQHINT_MAX_FREQS; i++)
		WRITE_ONCE(d->thr[i], l->thr[i]);
	WRITE_ONCE(d->n, l->n);
}

void vfh_gather_set_sender(struct vfh_gather *g, struct task_struct *task)
{
	WRITE_ONCE(g->sender, task);
}

/* The vsock link's thread, which outlives the state (vsock.c). */
void vfh_gather_set_receiver(struct vfh_gather *g, struct task_struct *task)
{
	WRITE_ONCE(g->receiver, task);
}

/*
 * One of the module's threads starts a work item (a send, or a host
 * message it handles: all of their work counts alike, or a host that
 * changes its frequency every window would make the idle vCPU the
 * message lands on read busy): counted on this CPU, where it was woken
 * (or moved to since), whose window then counts its run as idle time
 * (vfh_busy_from_idle()), the run in progress too.  From that thread.
 */
void vfh_gather_work_begin(struct vfh_gather *g, struct vfh_worker_run *run)
{
	unsigned long flags;

	local_irq_save(flags);
	this_cpu_ptr(g->vcpus)->worker_runs++;
	run->switches = current->nvcsw + current->nivcsw;
	run->start = local_clock();
	run->runtime = current->se.sum_exec_runtime;
	local_irq_restore(flags);
}

/*
 * ...and ends it: its time is charged to the CPU where it ends.  An item
 * that ran through took the clock's time since its start; one that slept
 * or was preempted spans other tasks' time, so it takes its own runtime
 * as the scheduler last accounted it, at its last switch away (what it
 * ran since is left busy).
 */
void vfh_gather_work_end(struct vfh_gather *g, const struct vfh_worker_run *run)
{
	struct vfh_vcpu *v;
	unsigned long flags;

	local_irq_save(flags);
	v = this_cpu_ptr(g->vcpus);
	if (current->nvcsw + current->nivcsw == run->switches)
		v->worker_ns += local_clock() - run->start;
	else
		v->worker_ns += current->se.sum_exec_runtime - run->runtime;
	local_irq_restore(flags);
}

bool vfh_gather_take(struct vfh_gather *g, unsigned int cpu, u64 *rep)
{
	return vfh_slot_take(&per_cpu_ptr(g->vcpus, cpu)->report, g->dirty,
			    cpu, rep);
}

/* The first CPU from @cpu on with a report to send, nr_cpu_ids if none. */
unsigned int vfh_gather_next_dirty(struct vfh_gather *g, unsigned int cpu)
{
	return find_next_bit(g->dirty, nr_cpu_ids, cpu);
}

void vfh_gather_mark_all_dirty(struct vfh_gather *g)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		set_bit(cpu, g->dirty);
}

void vfh_gather_stats(struct vfh_gather *g, unsigned int cpu,
		      struct vfh_vcpu_stats *st)
{
	struct vfh_vcpu *v = per_cpu_ptr(g->vcpus, cpu);

	st->report = atomic64_read(&v->report);
	st->online = READ_ONCE(v->online);
	st->remote = READ_ONCE(v->remote);
	st->busy = READ_ONCE(v->busy);
#ifdef FH_OWN_TIME
	st->own_ns = READ_ONCE(v->own_ns);
#endif
	st->switches = READ_ONCE(v->switches);
	st->windows = READ_ONCE(v->windows);
	st->publishes = READ_ONCE(v->publishes);
	st->leading = READ_ONCE(v->leading);
	st->worker_runs = READ_ONCE(v->worker_runs);
}

/*
 * Probe: the per-CPU state, all offline ("no hint"); before the cpufreq
 * driver registers, whose policy init sets the first perf value.
 */
int vfh_gather_init(struct vfh_gather *g, const struct vfh_tuning *t,
		    void (*kick)(struct vfh_gather *g))
{
	unsigned int cpu;

	g->vcpus = alloc_percpu(struct vfh_vcpu);
	g->dirty = bitmap_zalloc(nr_cpu_ids, GFP_KERNEL);
	if (!g->vcpus || !g->dirty ||
	    !zalloc_cpumask_var(&g->remote_cpus, GFP_KERNEL)) {
		vfh_gather_destroy(g);
		return -ENOMEM;
	}
	g->tune = *t;
	g->kick = kick;
	/*
	 * Lazy: a publication's send waits for the rate window anyway
	 * (transport.c), so the kick waits for this CPU's next tick instead
	 * of raising a self-IPI.  The tick is not stopped while it is pending
	 * (irq_work_needs_cpu()), and where it already is (nohz_full, or
	 * nohz idle) irq_work_queue() raises the IPI after all.  On
	 * PREEMPT_RT, as before, it runs in irq_workd, now woken from the
	 * tick.  The same on 6.1.
	 */
	g->kick_work = IRQ_WORK_INIT_LAZY(vfh_kick_fn);
	spin_lock_init(&g->remote_lock);
	timer_setup(&g->remote_timer, vfh_remote_windows, TIMER_PINNED);
	for_each_possible_cpu(cpu) {
		struct vfh_vcpu *v = per_cpu_ptr(g->vcpus, cpu);

		v->g = g;
		v->perf = FH_PERF_NONE;
		v->levels.step = t->perf_step;
		atomic64_set(&v->report, vfh_rep_pack(0, 0, 0, 0));
#ifdef FH_CLAMP_SWITCH
		vfh_switch_init(v);
#endif
		timer_setup(&v->wtimer, vfh_window_timer, TIMER_PINNED);
		timer_setup(&v->wtimer_idle, vfh_window_timer_idle,
			    TIMER_DEFERRABLE | TIMER_PINNED);
	}
	return 0;
}

void vfh_gather_destroy(struct vfh_gather *g)
{
	free_cpumask_var(g->remote_cpus);
	bitmap_free(g->dirty);
	g->dirty = NULL;
	free_percpu(g->vcpus);
	g->vcpus = NULL;
}

/*
 * Whether uclamp is already in use (a clamp set before the module came):
 * a task the scheduler counted at its last enqueue has its entries marked
 * active, which only happens under sched_uclamp_used.
 */
static bool vfh_uclamp_in_use(void)
{
	bool used = false;
#ifdef CONFIG_UCLAMP_TASK
	struct task_struct *p, *t;

	rcu_read_lock();
	for_each_process_thread(p, t) {
		if (READ_ONCE(t->uclamp[UCLAMP_MIN]).active) {
			used = true;
			goto out;
		}
	}
out:
	rcu_read_unlock();
#endif
	return used;
}

/*
 * The clamp source; the owner brings the CPUs online after this.  It is
 * named once, at the probe's start: a restore starts the same source.
 */
int vfh_gather_start(struct vfh_gather *g, const struct vfh_clamp_source *src)
{
	bool named = g->source == src;
	int ret;

	if (!READ_ONCE(g->uclamp_used) && vfh_uclamp_in_use())
		WRITE_ONCE(g->uclamp_used, true);
#ifdef FH_BENCH_ANCHOR
	/* The anchor sends each request at once: no tick's wait. */
	if (g->every_request)
		init_irq_work(&g->kick_work, vfh_kick_fn);
#endif
	g->source = src;
	ret = src->start(g);
	if (ret) {
		g->source = NULL;
		return ret;
	}
	WRITE_ONCE(g->started, true);
	if (!named)
		pr_info("clamp source %s\n", src->name);
	return 0;
}

/* After the owner took every CPU offline (each published "no hint"). */
void vfh_gather_stop(struct vfh_gather *g)
{
	if (!g->started)
		return;
	WRITE_ONCE(g->started, false);
	g->source->stop(g);
	/* No CPU is left in the remote windows: it does not re-arm. */
	timer_delete_sync(&g->remote_timer);
	irq_work_sync(&g->kick_work);
}

static int vfh_idle_start(struct vfh_gather *g)
{
	return 0;
}

static void vfh_idle_stop(struct vfh_gather *g)
{
}

/* No clamps (no uclamp in the kernel): idle time only, no probe at all. */
const struct vfh_clamp_source vfh_clamp_idle = {
	.name	= "idle_time",
	.start	= vfh_idle_start,
	.stop	= vfh_idle_stop,
};
