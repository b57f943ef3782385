// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: the clamp source on uclamp kernels without the clamp
 * hook, a probe on the sched_switch tracepoint.  Built out of tree only
 * (DKMS, Kbuild): it runs on every context switch and attaches to a
 * tracepoint that is not exported, by name, so it is no part of the driver
 * in tree.  Without uclamp there are no clamps to read, and the gatherer's
 * idle time tells busy from idle without it.
 *
 * The tracepoint's symbol is not exported, so the probe is attached by
 * name (for_each_kernel_tracepoint() + tracepoint_probe_register()), which
 * the compiler cannot check.  The static_assert below checks the probe
 * against the kernel's own trace_sched_switch() prototype instead
 * (register_trace_sched_switch() takes exactly that probe type), so a
 * prototype change breaks the build rather than the running kernel.
 *
 * The probe's data is the device's gatherer; only the tracepoint found by
 * name is kept, in the gatherer's source_data.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <trace/events/sched.h>

#include "gather.h"

static void vfh_sched_switch(void *data, bool preempt, struct task_struct *prev,
			     struct task_struct *next, unsigned int prev_state)
{
	vfh_gather_switch(data, next);
}

static_assert(__builtin_types_compatible_p(typeof(register_trace_sched_switch) *,
					   int (*)(typeof(vfh_sched_switch) *, void *)),
	      "vfh_sched_switch does not match trace_sched_switch()");

static void vfh_find_switch(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_switch"))
		*(struct tracepoint **)priv = tp;
}

static int vfh_switch_start(struct vfh_gather *g)
{
	struct tracepoint *tp = NULL;

	if (!IS_ENABLED(CONFIG_UCLAMP_TASK))
		return -ENODEV;
	for_each_kernel_tracepoint(vfh_find_switch, &tp);
	if (!tp) {
		pr_err("sched_switch tracepoint not found\n");
		return -ENODEV;
	}
	g->source_data = tp;
	return tracepoint_probe_register(tp, (void *)vfh_sched_switch, g);
}

static void vfh_switch_stop(struct vfh_gather *g)
{
	tracepoint_probe_unregister(g->source_data, (void *)vfh_sched_switch, g);
	/* No probe runs past this: gather state may go away. */
	tracepoint_synchronize_unregister();
}

const struct vfh_clamp_source vfh_clamp_switch = {
	.name		= "sched_switch",
	.start		= vfh_switch_start,
	.stop		= vfh_switch_stop,
};
