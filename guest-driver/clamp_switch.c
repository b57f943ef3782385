// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: the clamp source on kernels without a clamp hook, a
 * probe on the sched_switch tracepoint.
 *
 * The tracepoint's symbol is not exported, so the probe is attached by
 * name (for_each_kernel_tracepoint() + tracepoint_probe_register()), which
 * the compiler cannot check.  The static_assert below checks the probe
 * against the kernel's own trace_sched_switch() prototype instead
 * (register_trace_sched_switch() takes exactly that probe type), so a
 * prototype change breaks the build rather than the running kernel.
 *
 * Other sources (an upstream per-CPU clamp hook, say) only have to call
 * fh_gather_switch() on the CPU whose current task changed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <trace/events/sched.h>

#include "freqhint.h"

static void fh_sched_switch(void *data, bool preempt, struct task_struct *prev,
			    struct task_struct *next, unsigned int prev_state)
{
	fh_gather_switch(next);
}

static_assert(__builtin_types_compatible_p(typeof(register_trace_sched_switch) *,
					   int (*)(typeof(fh_sched_switch) *, void *)),
	      "fh_sched_switch does not match trace_sched_switch()");

static struct tracepoint *fh_tp_switch;

static void fh_find_switch(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_switch"))
		*(struct tracepoint **)priv = tp;
}

static int fh_switch_start(void)
{
	fh_tp_switch = NULL;
	for_each_kernel_tracepoint(fh_find_switch, &fh_tp_switch);
	if (!fh_tp_switch) {
		pr_err("sched_switch tracepoint not found\n");
		return -ENODEV;
	}
	return tracepoint_probe_register(fh_tp_switch, (void *)fh_sched_switch,
					 NULL);
}

static void fh_switch_stop(void)
{
	tracepoint_probe_unregister(fh_tp_switch, (void *)fh_sched_switch, NULL);
	/* No probe runs past this: gather state may go away. */
	tracepoint_synchronize_unregister();
}

const struct fh_clamp_source fh_clamp_switch = {
	.name	= "sched_switch",
	.start	= fh_switch_start,
	.stop	= fh_switch_stop,
};
