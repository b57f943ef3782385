// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: the clamp source on kernels that give cpufreq drivers
 * the run queue's utilization clamps (->update_uclamp, guest-driver/rfc/).
 *
 * schedutil calls the module's cpufreq driver with a CPU's clamp aggregate
 * (the values it folds into its own request) each time that changed since
 * its last call, on the CPU's utilization updates: never on a context
 * switch that leaves the aggregate alone.  It calls on the CPU itself,
 * with its run queue locked and interrupts off: the driver's policies have
 * one CPU each and are not updated from other CPUs
 * (dvfs_possible_from_any_cpu is false), so the gatherer's per-CPU state
 * is touched where it lives and no IPI is needed.  Busy and idle come from
 * the CPU's idle time (gather.c).
 *
 * The clamps reach the module only while its cpufreq driver is the
 * system's and a policy runs schedutil, the one governor that applies
 * clamps; under another governor the last aggregate passed stays (the
 * RFC asks whether schedutil should pass the defaults when it stops).
 *
 * The scheduler aggregates clamps only once someone set one
 * (sched_uclamp_used); until then every aggregate is the default, which
 * the gatherer reports as no clamps.  The module never sets a clamp
 * itself: that would turn on the scheduler's clamp bookkeeping for every
 * task for the rest of the boot.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/minmax.h>
#include <linux/rcupdate.h>
#include <linux/smp.h>

#include "gather.h"

/* From the cpufreq driver's ->update_uclamp (main.c): on @cpu, IRQs off. */
void vfh_clamp_hook_update(struct vfh_gather *g, unsigned int cpu,
			   unsigned long util_min, unsigned long util_max)
{
	if (!READ_ONCE(g->source_data) || cpu != smp_processor_id())
		return;
	vfh_gather_rq_clamp(g, min_t(unsigned long, util_min, VIRTIO_FREQHINT_SCALE),
			    min_t(unsigned long, util_max, VIRTIO_FREQHINT_SCALE));
}

static int vfh_hook_start(struct vfh_gather *g)
{
	if (!IS_ENABLED(CONFIG_UCLAMP_TASK))
		return -ENODEV;
#ifndef FH_HAVE_UPDATE_UCLAMP
	/* Out of tree, built against a kernel without the hook (Kbuild). */
	return -ENODEV;
#endif
	/* Marks the source live for vfh_clamp_hook_update(). */
	WRITE_ONCE(g->source_data, g);
	return 0;
}

static void vfh_hook_stop(struct vfh_gather *g)
{
	WRITE_ONCE(g->source_data, NULL);
	/*
	 * schedutil calls the driver from its update hook, an RCU-sched
	 * read-side section: after a grace period no call is left that saw
	 * the source live.
	 */
	synchronize_rcu();
}

const struct vfh_clamp_source vfh_clamp_hook = {
	.name	= "cpufreq_uclamp",
	.start	= vfh_hook_start,
	.stop	= vfh_hook_stop,
};
