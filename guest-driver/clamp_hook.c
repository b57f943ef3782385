// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: the clamp source on kernels with the per-CPU clamp
 * hook, sched_uclamp_rq_tp (guest-driver/rfc/), and the choice of source.
 *
 * The hook reports a run queue's clamp aggregate (the values schedutil
 * applies) and whether it holds no clamped task, each time that changes:
 * on the wakeups and sleeps that move it, never on a context switch that
 * leaves it alone.  It is found by name, like sched_switch, so that the
 * module still loads on kernels without it; there it falls back to the
 * sched_switch probe (clamp_switch.c).  clamp_source= forces either.
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
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/bitfield.h>
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <uapi/linux/sched.h>
#include <uapi/linux/sched/types.h>

#include "freqhint.h"

#define FH_HOOK_TP	"sched_uclamp_rq_tp"

/* The last aggregate a CPU's rq reported. */
#define FH_AGG_MIN	GENMASK(10, 0)
#define FH_AGG_MAX	GENMASK(21, 11)
#define FH_AGG_IDLE	BIT(22)

struct fh_hook_cpu {
	atomic_t agg;
	call_single_data_t apply;
};

static DEFINE_PER_CPU(struct fh_hook_cpu, fh_hook_cpus);
static struct tracepoint *fh_tp_hook;
/* Remote applies queued and not finished: stop waits for them. */
static atomic_t fh_hook_inflight;

static char *clamp_source = "auto";
module_param(clamp_source, charp, 0444);
MODULE_PARM_DESC(clamp_source,
		 "auto (" FH_HOOK_TP " when the kernel has it), hook or sched_switch");

static void fh_hook_apply(struct fh_hook_cpu *hc)
{
	u32 agg = atomic_read(&hc->agg);

	fh_gather_rq_clamp(FIELD_GET(FH_AGG_MIN, agg),
			   FIELD_GET(FH_AGG_MAX, agg), agg & FH_AGG_IDLE);
}

static void fh_hook_apply_fn(void *info)
{
	/* Pairs with the probe's: a probe that saw this call pending. */
	smp_mb();
	fh_hook_apply(info);
	atomic_dec(&fh_hook_inflight);
}

/* Prototype of sched_uclamp_rq_tp in guest-driver/rfc/. */
static void fh_uclamp_rq(void *data, int cpu, unsigned int util_min,
			 unsigned int util_max, bool idle)
{
	struct fh_hook_cpu *hc;

	if (WARN_ON_ONCE((unsigned int)cpu >= nr_cpu_ids))
		return;
	hc = per_cpu_ptr(&fh_hook_cpus, cpu);
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
	atomic_inc(&fh_hook_inflight);
	if (smp_call_function_single_async(cpu, &hc->apply))
		atomic_dec(&fh_hook_inflight);
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

static int fh_hook_start(void)
{
	unsigned int cpu;
	int ret;

	if (!IS_ENABLED(CONFIG_UCLAMP_TASK))
		return -ENODEV;
	fh_tp_hook = NULL;
	for_each_kernel_tracepoint(fh_find_hook, &fh_tp_hook);
	if (!fh_tp_hook)
		return -ENODEV;
	for_each_possible_cpu(cpu) {
		struct fh_hook_cpu *hc = per_cpu_ptr(&fh_hook_cpus, cpu);

		atomic_set(&hc->agg, FIELD_PREP(FH_AGG_MAX, VIRTIO_FREQHINT_SCALE));
		INIT_CSD(&hc->apply, fh_hook_apply_fn, hc);
	}
	ret = tracepoint_probe_register(fh_tp_hook, (void *)fh_uclamp_rq, NULL);
	if (ret)
		return ret;
	ret = fh_uclamp_start_accounting();
	if (ret) {
		pr_err("cannot start uclamp accounting: %d\n", ret);
		tracepoint_probe_unregister(fh_tp_hook, (void *)fh_uclamp_rq, NULL);
		tracepoint_synchronize_unregister();
	}
	return ret;
}

static void fh_hook_stop(void)
{
	tracepoint_probe_unregister(fh_tp_hook, (void *)fh_uclamp_rq, NULL);
	tracepoint_synchronize_unregister();
	/*
	 * No probe runs past this; an apply it queued may.  Wait for the
	 * count, then for the IRQs-off section its last instructions run in.
	 */
	while (atomic_read(&fh_hook_inflight))
		cpu_relax();
	synchronize_rcu();
}

const struct fh_clamp_source fh_clamp_hook = {
	.name		= FH_HOOK_TP,
	.rq_aggregate	= true,
	.start		= fh_hook_start,
	.stop		= fh_hook_stop,
};

/*
 * Start the clamp source clamp_source= asks for: the hook when the kernel
 * has it, else the sched_switch probe.
 */
const struct fh_clamp_source *fh_clamp_start(void)
{
	bool any = !strcmp(clamp_source, "auto");
	int ret;

	if (any || !strcmp(clamp_source, "hook")) {
		ret = fh_clamp_hook.start();
		if (!ret)
			return &fh_clamp_hook;
		if (!any || ret != -ENODEV) {
			pr_err("clamp source %s: %d\n", FH_HOOK_TP, ret);
			return ERR_PTR(ret);
		}
	} else if (strcmp(clamp_source, "sched_switch")) {
		pr_err("clamp_source=%s: auto, hook or sched_switch\n",
		       clamp_source);
		return ERR_PTR(-EINVAL);
	}
	ret = fh_clamp_switch.start();
	return ret ? ERR_PTR(ret) : &fh_clamp_switch;
}
