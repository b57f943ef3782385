// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: the clamp source on kernels with the per-CPU clamp
 * hook, sched_uclamp_rq_tp (guest-driver/rfc/).
 *
 * The hook reports a run queue's clamp aggregate (the values schedutil
 * applies) and whether it holds no clamped task, each time that changes:
 * on the wakeups and sleeps that move it, never on a context switch that
 * leaves it alone.  It is found by name, like sched_switch, so that the
 * module still loads on kernels without it (start() then fails with
 * -ENODEV and the driver takes clamp_switch.c; main.c, clamp_source=).
 *
 * The hook fires under the reporting rq's lock with IRQs off, but not
 * always on that rq's CPU (remote wakeups, migrations, clamp updates).
 * Gather state is touched only on its own CPU, so the event is stored in
 * the CPU's slot and a remote one is applied there by an IPI
 * (smp_call_function_single_async(), legal with IRQs off; irq_work_queue_on()
 * is not exported).  Events of one rq are serialised by its lock, which
 * also serialises the uses of its call_single_data, so the slot always
 * holds the latest aggregate and applying it twice is harmless.  A call
 * still pending (-EBUSY) reads the slot when it runs.
 *
 * The probe's data is the gatherer; the slots, allocated at start, are in
 * the gatherer's source_data.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/bitfield.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <uapi/linux/sched.h>
#include <uapi/linux/sched/types.h>

#include "gather.h"

#define FH_HOOK_TP	"sched_uclamp_rq_tp"

/* The last aggregate a CPU's rq reported. */
#define FH_AGG_MIN	GENMASK(10, 0)
#define FH_AGG_MAX	GENMASK(21, 11)
#define FH_AGG_IDLE	BIT(22)

struct fh_hook;

struct fh_hook_cpu {
	struct fh_hook *hook;
	atomic_t agg;
	call_single_data_t apply;
};

/* The source's state, one per gatherer (its source_data). */
struct fh_hook {
	struct fh_gather *g;
	struct tracepoint *tp;
	struct fh_hook_cpu __percpu *cpus;
	/* Remote applies queued and not finished: stop waits for them. */
	atomic_t inflight;
};

static void fh_hook_apply(struct fh_hook_cpu *hc)
{
	u32 agg = atomic_read(&hc->agg);

	vfh_gather_rq_clamp(hc->hook->g, FIELD_GET(FH_AGG_MIN, agg),
			    FIELD_GET(FH_AGG_MAX, agg), agg & FH_AGG_IDLE);
}

static void fh_hook_apply_fn(void *info)
{
	struct fh_hook_cpu *hc = info;

	/* Pairs with the probe's: a probe that saw this call pending. */
	smp_mb();
	fh_hook_apply(hc);
	atomic_dec(&hc->hook->inflight);
}

/* Prototype of sched_uclamp_rq_tp in guest-driver/rfc/. */
static void fh_uclamp_rq(void *data, int cpu, unsigned int util_min,
			 unsigned int util_max, bool idle)
{
	struct fh_gather *g = data;
	struct fh_hook *h = g->source_data;
	struct fh_hook_cpu *hc;

	if (WARN_ON_ONCE((unsigned int)cpu >= nr_cpu_ids))
		return;
	hc = per_cpu_ptr(h->cpus, cpu);
	atomic_set(&hc->agg,
		   FIELD_PREP(FH_AGG_MIN, min(util_min, VIRTIO_FREQHINT_SCALE)) |
		   FIELD_PREP(FH_AGG_MAX, min(util_max, VIRTIO_FREQHINT_SCALE)) |
		   (idle ? FH_AGG_IDLE : 0));
	if (cpu == smp_processor_id()) {
		fh_hook_apply(hc);
		return;
	}
	/* The slot before the pending check: see fh_hook_apply_fn(). */
	smp_mb();
	atomic_inc(&h->inflight);
	if (smp_call_function_single_async(cpu, &hc->apply))
		atomic_dec(&h->inflight);
}

static void fh_find_hook(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, FH_HOOK_TP))
		*(struct tracepoint **)priv = tp;
}

/*
 * The scheduler aggregates clamps only once something asked for one
 * (sched_uclamp_used); until then the hook is silent.  Ask for a no-op
 * clamp (min 0, the default) on a thread that never runs.  Tasks already
 * runnable are counted from their next wakeup.
 */
static int fh_never_runs(void *unused)
{
	return 0;
}

static int fh_uclamp_start_accounting(void)
{
	struct sched_attr attr = {
		.size		= sizeof(attr),
		.sched_policy	= SCHED_NORMAL,
		.sched_flags	= SCHED_FLAG_KEEP_ALL | SCHED_FLAG_UTIL_CLAMP_MIN,
		.sched_util_min	= 0,
	};
	struct task_struct *t;
	int ret;

	t = kthread_create(fh_never_runs, NULL, "freqhint-uclamp");
	if (IS_ERR(t))
		return PTR_ERR(t);
	ret = sched_setattr_nocheck(t, &attr);
	kthread_stop(t);
	return ret;
}

/* Detach the probe and wait until nothing of it runs any more. */
static void fh_hook_unregister(struct fh_gather *g, struct fh_hook *h)
{
	tracepoint_probe_unregister(h->tp, (void *)fh_uclamp_rq, g);
	tracepoint_synchronize_unregister();
	/*
	 * No probe runs past this; an apply it queued may.  Wait for the
	 * count, then for the IRQs-off section its last instructions run in.
	 * Sleeping, not spinning: the IPI may wait on a vCPU the host does
	 * not run.  The apply cannot wake a waiter itself: it runs in hardirq
	 * context, where PREEMPT_RT does not allow a wait queue's lock.
	 */
	while (atomic_read(&h->inflight))
		usleep_range(100, 200);
	synchronize_rcu();
}

static void fh_hook_free(struct fh_gather *g, struct fh_hook *h)
{
	free_percpu(h->cpus);
	kfree(h);
	g->source_data = NULL;
}

static int fh_hook_start(struct fh_gather *g)
{
	struct tracepoint *tp = NULL;
	struct fh_hook *h;
	unsigned int cpu;
	int ret;

	if (!IS_ENABLED(CONFIG_UCLAMP_TASK))
		return -ENODEV;
	for_each_kernel_tracepoint(fh_find_hook, &tp);
	if (!tp)
		return -ENODEV;
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return -ENOMEM;
	h->cpus = alloc_percpu(struct fh_hook_cpu);
	if (!h->cpus) {
		kfree(h);
		return -ENOMEM;
	}
	h->g = g;
	h->tp = tp;
	for_each_possible_cpu(cpu) {
		struct fh_hook_cpu *hc = per_cpu_ptr(h->cpus, cpu);

		hc->hook = h;
		atomic_set(&hc->agg, FIELD_PREP(FH_AGG_MAX, VIRTIO_FREQHINT_SCALE));
		INIT_CSD(&hc->apply, fh_hook_apply_fn, hc);
	}
	/* Before the probe can run: it finds its slots there. */
	g->source_data = h;
	ret = tracepoint_probe_register(tp, (void *)fh_uclamp_rq, g);
	if (ret)
		goto err_free;
	ret = fh_uclamp_start_accounting();
	if (ret) {
		pr_err("cannot start uclamp accounting: %d\n", ret);
		goto err_unregister;
	}
	return 0;

err_unregister:
	fh_hook_unregister(g, h);
err_free:
	fh_hook_free(g, h);
	return ret;
}

static void fh_hook_stop(struct fh_gather *g)
{
	struct fh_hook *h = g->source_data;

	fh_hook_unregister(g, h);
	fh_hook_free(g, h);
}

const struct fh_clamp_source vfh_clamp_hook = {
	.name		= FH_HOOK_TP,
	.rq_aggregate	= true,
	.start		= fh_hook_start,
	.stop		= fh_hook_stop,
};
