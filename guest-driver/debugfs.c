// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: debugfs view of what each vCPU would report, and the
 * driver's statistics.
 *
 * virtio_freqhint/vcpus has one line per possible CPU:
 *   cpu<N> vcpu=<device index, -1: none> online=<0|1> idle=<0|1>
 *   min=<> max=<> perf=<> busy=<of 1024>
 *   switches=<> windows=<> publishes=<> leading=<> worker_runs=<>
 *   remote=<0|1>
 * min/max/perf read "-" when their VALID flag is clear; busy is the last
 * closed window's busy time in 1/1024; leading counts leading-edge
 * publications; switches counts the clamp source's events (the hook's
 * aggregate changes, none with idle time alone); worker_runs counts the
 * work items of the module's threads that ran on that CPU (the sender's
 * sends, events and feedback; the vsock link's receiving); remote says
 * its windows close on a housekeeping CPU (nohz_full).
 *
 * virtio_freqhint/clamp_source names the gatherer's clamp source.
 *
 * virtio_freqhint/granted_floor and granted_ceiling hold what the host
 * grants each device vCPU index, in capacity units, space separated in
 * index order on one line (a seq_file: up to 65535 vCPUs do not fit a
 * sysfs page).
 *
 * virtio_freqhint/cur_freq exists with VIRTIO_FREQHINT_F_CUR_FREQ, one line
 * per possible CPU:
 *   cpu<N> cur_khz=<the host's, 0: unknown> freq_scale=<> fie_ticks=<>
 * freq_scale is the kernel's arch_freq_scale for the CPU (arm64; 0
 * elsewhere), fie_ticks how many of its ticks ran the driver's
 * frequency-invariance source (arm64): not 0 means the scheduler took the
 * source.  Built in, a last line invariant=<0|1> says whether
 * topology_scale_freq_invariant() holds (not exported to modules).
 *
 * virtio_freqhint/statistics/ has one file per counter of struct vfh_stats
 * (device.h): buffers and records sent, sends deferred by the device's
 * own window, send errors, FEEDBACK snapshots applied, invalid and stale,
 * invalid events, CPU_IDS messages after the first (ignored), event
 * buffers the queue refused to take back (each offered again at the next
 * event or send), records dropped for a CPU without a device index,
 * CUR_FREQ messages applied, invalid (dropped whole) and stale, and the
 * values of applied ones taken as unknown for lying outside their class;
 * sender_ns is the sender's (the worker thread's) CPU time so far.
 *
 * It exists while a device is bound.  For tests and debugging, not ABI.
 */
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/sched.h>
#include <linux/seq_file.h>

#ifdef CONFIG_GENERIC_ARCH_TOPOLOGY
#include <linux/arch_topology.h>
#endif

#include "device.h"

static void vfh_show_value(struct seq_file *m, const char *name, u64 rep,
			   u16 flag, u64 value)
{
	if (FIELD_GET(FH_REP_FLAGS, rep) & flag)
		seq_printf(m, " %s=%llu", name, value);
	else
		seq_printf(m, " %s=-", name);
}

static int vfh_vcpus_show(struct seq_file *m, void *unused)
{
	struct virtio_freqhint *vi = m->private;
	struct vfh_vcpu_stats st;
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		vfh_gather_stats(&vi->gather, cpu, &st);
		seq_printf(m, "cpu%u vcpu=%d online=%d idle=%d", cpu,
			   READ_ONCE(vi->index[cpu]), st.online,
			   !!(FIELD_GET(FH_REP_FLAGS, st.report) &
			      VIRTIO_FREQHINT_R_IDLE));
		vfh_show_value(m, "min", st.report, VIRTIO_FREQHINT_R_MIN_VALID,
			       FIELD_GET(FH_REP_MIN, st.report));
		vfh_show_value(m, "max", st.report, VIRTIO_FREQHINT_R_MAX_VALID,
			       FIELD_GET(FH_REP_MAX, st.report));
		vfh_show_value(m, "perf", st.report,
			       VIRTIO_FREQHINT_R_PERF_VALID,
			      FIELD_GET(FH_REP_PERF, st.report));
		seq_printf(m, " busy=%u switches=%lu windows=%lu publishes=%lu leading=%lu worker_runs=%lu remote=%d",
			   st.busy, st.switches, st.windows, st.publishes,
			   st.leading, st.worker_runs, st.remote);
#ifdef FH_OWN_TIME
		/*
		 * bench/guest's build: the time spent on that CPU in the
		 * window timers and the gatherer's irq_works (gather.c).
		 */
		seq_printf(m, " sampler_ns=%llu", st.own_ns);
#endif
		seq_putc(m, '\n');
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vfh_vcpus);

static int vfh_clamp_source_show(struct seq_file *m, void *unused)
{
	struct virtio_freqhint *vi = m->private;

	seq_printf(m, "%s\n", vfh_gather_source(&vi->gather));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vfh_clamp_source);

static void vfh_show_grants(struct seq_file *m, bool ceiling)
{
	struct virtio_freqhint *vi = m->private;
	unsigned int i;

	mutex_lock(&vi->lock);
	for (i = 0; i < vi->num_vcpus; i++)
		seq_printf(m, "%s%u", i ? " " : "",
			   ceiling ? vi->host.grants[i].ceiling :
				     vi->host.grants[i].floor);
	mutex_unlock(&vi->lock);
	seq_putc(m, '\n');
}

static int vfh_granted_floor_show(struct seq_file *m, void *unused)
{
	vfh_show_grants(m, false);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vfh_granted_floor);

static int vfh_granted_ceiling_show(struct seq_file *m, void *unused)
{
	vfh_show_grants(m, true);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vfh_granted_ceiling);

static int vfh_cur_freq_show(struct seq_file *m, void *unused)
{
	struct virtio_freqhint *vi = m->private;
	struct vfh_cur_info info;
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		vfh_cpufreq_cur_info(vi->cpufreq, cpu, &info);
		seq_printf(m, "cpu%u cur_khz=%u freq_scale=%lu fie_ticks=%lu\n",
			   cpu, info.cur_khz, info.freq_scale, info.fie_ticks);
	}
#if defined(CONFIG_GENERIC_ARCH_TOPOLOGY) && !defined(MODULE)
	seq_printf(m, "invariant=%d\n", topology_scale_freq_invariant());
#endif
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vfh_cur_freq);

/* The worker outlives the debugfs files (probe and remove, main.c). */
static int vfh_sender_ns_get(void *data, u64 *val)
{
	struct virtio_freqhint *vi = data;

	*val = READ_ONCE(vi->worker->task->se.sum_exec_runtime);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(vfh_sender_ns_fops, vfh_sender_ns_get, NULL, "%llu\n");

#define FH_STAT(dir, vi, name) \
	debugfs_create_ulong(#name, 0444, dir, &(vi)->stats.name)

/* Probe, once the device works; failures are not errors (debugfs is optional). */
void vfh_debugfs_init(struct virtio_freqhint *vi)
{
	struct dentry *st;

	/* One device per guest (main.c), so one fixed name. */
	vi->debugfs = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("vcpus", 0444, vi->debugfs, vi, &vfh_vcpus_fops);
	/* The device's configuration, as the driver took it. */
	debugfs_create_u16("num_vcpus", 0444, vi->debugfs, &vi->num_vcpus);
	debugfs_create_u32("rate_window_ms", 0444, vi->debugfs,
			   &vi->tune.window_ms);
	debugfs_create_file("clamp_source", 0444, vi->debugfs, vi,
			    &vfh_clamp_source_fops);
	debugfs_create_file("granted_floor", 0444, vi->debugfs, vi,
			    &vfh_granted_floor_fops);
	debugfs_create_file("granted_ceiling", 0444, vi->debugfs, vi,
			    &vfh_granted_ceiling_fops);
	if (vi->has_cur_freq)
		debugfs_create_file("cur_freq", 0444, vi->debugfs, vi,
				    &vfh_cur_freq_fops);
	st = debugfs_create_dir("statistics", vi->debugfs);
	FH_STAT(st, vi, buffers_sent);
	FH_STAT(st, vi, records_sent);
	FH_STAT(st, vi, send_deferred);
	FH_STAT(st, vi, send_errors);
	FH_STAT(st, vi, feedback_applied);
	FH_STAT(st, vi, feedback_invalid);
	FH_STAT(st, vi, feedback_stale);
	FH_STAT(st, vi, events_invalid);
	FH_STAT(st, vi, cpu_ids_ignored);
	FH_STAT(st, vi, event_repost_errors);
	FH_STAT(st, vi, unmapped_cpus);
	FH_STAT(st, vi, cur_freq_applied);
	FH_STAT(st, vi, cur_freq_invalid);
	FH_STAT(st, vi, cur_freq_stale);
	FH_STAT(st, vi, cur_freq_out_of_class);
	debugfs_create_ulong("hintq_callbacks", 0444, st, &vi->hintq_callbacks);
	debugfs_create_file_unsafe("sender_ns", 0444, st, vi,
				   &vfh_sender_ns_fops);
#ifdef FH_OWN_TIME
	debugfs_create_u64("notify_ns", 0444, st, &vi->notify_ns);
#endif
}

void vfh_debugfs_exit(struct virtio_freqhint *vi)
{
	debugfs_remove_recursive(vi->debugfs);
	vi->debugfs = NULL;
}
