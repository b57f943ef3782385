/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * virtio_freqhint: the gatherer, one per device.  It keeps each vCPU's
 * window and report (per-CPU data, for the scheduler-context clamp source
 * and the window timers), publishes a packed report per vCPU, marks it
 * dirty and calls its owner's ->kick (from irq_work) so the owner can
 * send.  It never calls into the device.
 *
 * Lifetime, driven by the owner: vfh_gather_init() (allocates, probe
 * only), vfh_gather_start() (the clamp source), vfh_gather_cpu_online()/
 * offline() from the owner's CPU hotplug callbacks, vfh_gather_stop(),
 * vfh_gather_destroy().
 */
#ifndef _FREQHINT_GATHER_H
#define _FREQHINT_GATHER_H

#include <linux/cpumask.h>
#include <linux/irq_work.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/types.h>

#include "freqhint.h"

struct vfh_gather;
struct vfh_vcpu;
struct task_struct;

/*
 * A clamp source tells the gatherer, on the CPU concerned, the run queue's
 * clamp aggregate whenever it changes (vfh_gather_rq_clamp(): the kernel's
 * hook).  The gatherer tells busy from idle by the CPU's idle time over
 * each window, so nothing of the module runs on a context switch; the
 * idle-time source reports no clamps at all (kernels without uclamp).
 * start() and stop() take the gatherer, which is also the data of the
 * source's callbacks; the source keeps its own state in ->source_data.
 */
struct vfh_clamp_source {
	const char *name;
	int (*start)(struct vfh_gather *g);
	void (*stop)(struct vfh_gather *g);
};

struct vfh_gather {
	struct vfh_vcpu __percpu *vcpus;
	unsigned long *dirty;		/* bitmap [nr_cpu_ids]: to send */
	struct vfh_tuning tune;		/* read-only after init */
	struct task_struct *sender;	/* counts as idle (gather.c) */
	struct task_struct *receiver;	/* the vsock link's: so does it */
	const struct vfh_clamp_source *source;
	void *source_data;		/* the source's own */
	void (*kick)(struct vfh_gather *g);
	/* Lazy, never HARD (gather.c): no self-IPI, irq_workd on RT. */
	struct irq_work kick_work;
	bool started;
	/*
	 * nohz_full CPUs under the idle-time source: their windows are closed
	 * from a housekeeping CPU (gather.c, "remote windows"), so the module
	 * never interrupts them.
	 */
	cpumask_var_t remote_cpus;
	spinlock_t remote_lock;		/* the closer against their hotplug */
	struct timer_list remote_timer;
	/*
	 * The scheduler aggregates clamps: someone in the guest set one
	 * (sched_uclamp_used, which only the first clamp request turns on).
	 * Until then records carry no clamps.
	 */
	bool uclamp_used;
#ifdef FH_BENCH_ANCHOR
	bool every_request;		/* bench/guest: the anchor mode */
#endif
};

int vfh_gather_init(struct vfh_gather *g, const struct vfh_tuning *t,
		    void (*kick)(struct vfh_gather *g));
void vfh_gather_destroy(struct vfh_gather *g);
int vfh_gather_start(struct vfh_gather *g, const struct vfh_clamp_source *src);
void vfh_gather_stop(struct vfh_gather *g);
void vfh_gather_cpu_online(struct vfh_gather *g, unsigned int cpu);
void vfh_gather_cpu_offline(struct vfh_gather *g, unsigned int cpu);

void vfh_gather_rq_clamp(struct vfh_gather *g, u16 min, u16 max);
const char *vfh_gather_source(const struct vfh_gather *g);
void vfh_gather_set_perf(struct vfh_gather *g, unsigned int cpu,
			 unsigned int perf);
void vfh_gather_set_levels(struct vfh_gather *g, unsigned int cpu,
			   const struct vfh_levels *l);
void vfh_gather_set_sender(struct vfh_gather *g, struct task_struct *task);
void vfh_gather_set_receiver(struct vfh_gather *g, struct task_struct *task);

/*
 * One work item of the module's own threads (the sender's sends and the
 * host events and feedback it handles; the vsock link's receiving), for
 * the idle accounting.
 */
struct vfh_worker_run {
	u64 start;
	u64 runtime;
	unsigned long switches;
};

void vfh_gather_work_begin(struct vfh_gather *g, struct vfh_worker_run *run);
void vfh_gather_work_end(struct vfh_gather *g, const struct vfh_worker_run *run);
bool vfh_gather_take(struct vfh_gather *g, unsigned int cpu, u64 *rep);
void vfh_gather_mark_all_dirty(struct vfh_gather *g);
unsigned int vfh_gather_next_dirty(struct vfh_gather *g, unsigned int cpu);

struct vfh_vcpu_stats {
	u64 report;
	bool online;
	bool remote;		/* its windows close on a housekeeping CPU */
	u32 busy;		/* of the last closed window, per 1024 */
#ifdef FH_OWN_TIME
	u64 own_ns;		/* window timers and irq_works on this CPU */
#endif
	unsigned long switches;
	unsigned long windows;
	unsigned long publishes;
	unsigned long leading;
	unsigned long worker_runs;	/* own threads' work items here */
};

void vfh_gather_stats(struct vfh_gather *g, unsigned int cpu,
		      struct vfh_vcpu_stats *st);

/*
 * clamp_hook.c: the kernel's clamp hook, the cpufreq driver's
 * ->update_uclamp (guest-driver/rfc/), which main.c forwards here.
 */
extern const struct vfh_clamp_source vfh_clamp_hook;
void vfh_clamp_hook_update(struct vfh_gather *g, unsigned int cpu,
			   unsigned long util_min, unsigned long util_max);
/* gather.c: no clamps, busy and idle from idle time (no uclamp). */
extern const struct vfh_clamp_source vfh_clamp_idle;
#ifdef FH_CLAMP_SWITCH
/*
 * clamp_switch.c: a sched_switch probe reading each task's clamps, for
 * uclamp kernels without the hook.  Built out of tree only (Kbuild): it
 * attaches to an unexported tracepoint by name, so it is never part of
 * the driver in tree.
 */
extern const struct vfh_clamp_source vfh_clamp_switch;
/* gather.c: which task starts running on this CPU, for that probe. */
void vfh_gather_switch(struct vfh_gather *g, struct task_struct *next);
#endif

#endif /* _FREQHINT_GATHER_H */
