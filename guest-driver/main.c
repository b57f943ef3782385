// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: report each vCPU's scheduler clamps, governor request
 * and idleness to the host through a virtio device.
 *
 * Gathering starts at module load, whether or not the device is present,
 * so its results can be read in debugfs on any VM; the device, when it
 * binds, only adds a way out.  That is why this module has its own
 * init/exit instead of module_virtio_driver().
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>

#include "freqhint.h"

/*
 * 10 ms, the device's default: at most 100 notifications per second per VM
 * (each a vmexit of a few microseconds, well under 0.1% of a host CPU),
 * which is also the order of schedutil's own update rate and of a host
 * cpufreq transition.  The device's rate_window_ms wins when larger.
 */
unsigned int fh_rate_window_ms = 10;
module_param_named(rate_window_ms, fh_rate_window_ms, uint, 0444);
MODULE_PARM_DESC(rate_window_ms,
		 "Aggregation window and minimum time between notifications, ms (default 10)");

/* 16/1024: below one schedutil step that matters, above sampling noise. */
unsigned int fh_hysteresis = 16;
module_param_named(hysteresis, fh_hysteresis, uint, 0644);
MODULE_PARM_DESC(hysteresis,
		 "Smallest change of min/max/perf (of 1024) that is reported (default 16)");

/* A clamp value must hold 5% of a window's clamped time to count. */
unsigned int fh_min_share = 50;
module_param_named(min_share, fh_min_share, uint, 0644);
MODULE_PARM_DESC(min_share,
		 "Per mille of a window's running time a clamp value needs to count (default 50)");

/* Under 2% busy with no boosted task: housekeeping, report idle. */
unsigned int fh_idle_share = 20;
module_param_named(idle_share, fh_idle_share, uint, 0644);
MODULE_PARM_DESC(idle_share,
		 "vCPU is idle below this per mille of busy time, unless a boosted task ran (default 20)");

static int __init virtio_freqhint_init(void)
{
	const char *clamps = IS_ENABLED(CONFIG_UCLAMP_TASK) ? "reported" :
			     "not available (no CONFIG_UCLAMP_TASK)";
	int err;

	fh_rate_window_ms = clamp(fh_rate_window_ms, 1U, 1000U);
	fh_min_share = min(fh_min_share, 1000U);

	err = fh_perf_init();
	if (err)
		return err;
	err = fh_gather_init();
	if (err)
		goto err_perf;
	err = fh_transport_init();
	if (err)
		goto err_gather;
	fh_debugfs_init();
	pr_info("clamps %s, perf %s\n", clamps,
		fh_perf_active() ? "reported" : "not available");
	return 0;

err_gather:
	fh_gather_exit();
err_perf:
	fh_perf_exit();
	return err;
}

static void __exit virtio_freqhint_exit(void)
{
	fh_debugfs_exit();
	/* Stop producing first, so no kick outlives the transport. */
	fh_gather_exit();
	fh_transport_exit();
	fh_perf_exit();
}

module_init(virtio_freqhint_init);
module_exit(virtio_freqhint_exit);
MODULE_DESCRIPTION("Virtio frequency hint driver");
MODULE_LICENSE("GPL");
