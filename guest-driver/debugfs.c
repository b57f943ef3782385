// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: debugfs view of what each vCPU would report.
 *
 * virtio_freqhint/vcpus has one line per possible CPU:
 *   cpu<N> vcpu=<device index, -1: none> online=<0|1> idle=<0|1>
 *   min=<> max=<> perf=<> busy=<of 1024>
 *   switches=<> windows=<> publishes=<> leading=<>
 * min/max/perf read "-" when their VALID flag is clear; busy is the last
 * closed window's busy time in 1/1024; leading counts leading-edge
 * publications; with the clamp hook, switches counts its events.
 * virtio_freqhint/clamp_source names the clamp source in use.  Both exist
 * while a device is bound.  For tests, not ABI.
 */
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "freqhint.h"

static struct dentry *fh_debugfs_dir;

static void fh_show_value(struct seq_file *m, const char *name, u64 rep,
			  u16 flag, u64 value)
{
	if (FIELD_GET(FH_REP_FLAGS, rep) & flag)
		seq_printf(m, " %s=%llu", name, value);
	else
		seq_printf(m, " %s=-", name);
}

static int fh_vcpus_show(struct seq_file *m, void *unused)
{
	struct fh_vcpu_stats st;
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		fh_gather_stats(cpu, &st);
		seq_printf(m, "cpu%u vcpu=%d online=%d idle=%d", cpu,
			   fh_debug_vcpu_index(cpu), st.online,
			   !!(FIELD_GET(FH_REP_FLAGS, st.report) &
			      VIRTIO_FREQHINT_R_IDLE));
		fh_show_value(m, "min", st.report, VIRTIO_FREQHINT_R_MIN_VALID,
			      FIELD_GET(FH_REP_MIN, st.report));
		fh_show_value(m, "max", st.report, VIRTIO_FREQHINT_R_MAX_VALID,
			      FIELD_GET(FH_REP_MAX, st.report));
		fh_show_value(m, "perf", st.report,
			      VIRTIO_FREQHINT_R_PERF_VALID,
			      FIELD_GET(FH_REP_PERF, st.report));
		seq_printf(m, " busy=%u switches=%lu windows=%lu publishes=%lu leading=%lu\n",
			   st.busy, st.switches, st.windows, st.publishes,
			   st.leading);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(fh_vcpus);

static int fh_clamp_source_show(struct seq_file *m, void *unused)
{
	seq_printf(m, "%s\n", fh_gather_source());
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(fh_clamp_source);

void fh_debugfs_init(void)
{
	/* debugfs failures are not errors: the module works without it. */
	fh_debugfs_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("vcpus", 0444, fh_debugfs_dir, NULL,
			    &fh_vcpus_fops);
	debugfs_create_file("clamp_source", 0444, fh_debugfs_dir, NULL,
			    &fh_clamp_source_fops);
}

void fh_debugfs_exit(void)
{
	debugfs_remove_recursive(fh_debugfs_dir);
}
