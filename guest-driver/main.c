// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: report each vCPU's scheduler clamps, governor request
 * and idleness to the host through a virtio device, and show the host's
 * frequencies and grants in the guest's cpufreq policies.
 *
 * A per-device driver: everything (per-vCPU gathering, the clamp source,
 * the cpufreq driver, the samplers, the sender) hangs off the device,
 * starts at probe and stops in remove.  Freeze and restore are remove and
 * probe without the allocations and without the cpufreq driver (which the
 * cpufreq core suspends itself), like virtio-rng's remove_common/
 * probe_common: the same vfh_stop()/vfh_start() and device detach/attach.
 * Without the device the module reports over vsock (vsock.c), the same
 * state built from the host's CONFIG (vfh_link_*()).  The device
 * describes the whole VM, so a second one is refused.
 *
 * Device side (virtio-freqhint v1): a 16-byte configuration read once at
 * probe; hintq (driver -> device) carries the records; eventq (device ->
 * driver, with F_FEEDBACK or F_CPU_ID) carries CPU_IDS, each vCPU index's
 * firmware id, once after DRIVER_OK, FEEDBACK snapshots of the host's
 * grants, operator bounds and frequency classes, and (F_CUR_FREQ) CUR_FREQ,
 * the frequency each vCPU's physical CPU runs at.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/device.h>
#include <linux/kthread.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/string.h>
#include <linux/version.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>
#include <linux/workqueue.h>
#ifdef CONFIG_ARM64
#include <asm/cputype.h>
#endif

#include "device.h"

/*
 * A clamp value must hold 5 % (51/1024) of a window's clamped time to
 * count: a property of the measurement, not of the host.
 */
#define FH_MIN_SHARE		51

/*
 * With F_HOST_FREQ the cpufreq driver waits for the device's first
 * snapshot (the device sends it after DRIVER_OK), at most this long.
 */
#define FH_HOST_FREQ_WAIT	(2 * HZ)

/* Both name "no request"; the cpufreq driver does not know the gatherer. */
static_assert(FH_CPUFREQ_NONE == FH_PERF_NONE);

/*
 * Module-wide, not device state: the one device bound (to refuse a
 * second, by name; also what keeps the vsock link from starting) and the
 * multi-instance CPU hotplug state each device (or the vsock link's
 * state) adds itself to.
 */
static DEFINE_MUTEX(vfh_probe_lock);
static struct virtio_freqhint *vfh_bound;
static enum cpuhp_state vfh_cpuhp_state;
#ifdef FH_CLAMP_SWITCH

/*
 * Out of tree, where a second clamp source exists, the choice among them
 * is a parameter (tests and DKMS users on uclamp kernels without the
 * hook); in tree the kernel decides: the hook with uclamp, else idle time.
 */
static char *clamp_source = "auto";
module_param(clamp_source, charp, 0444);
MODULE_PARM_DESC(clamp_source,
		 "auto (the clamp hook when the kernel has it), hook, sched_switch (uclamp kernels without the hook) or idle_time (no clamps)");
#endif

/*
 * @cpu's firmware id as the device's CPU_IDS names it: the x86 APIC ID,
 * the arm64 MPIDR affinity fields (read on @cpu itself, where this runs:
 * cpu_logical_map() is not exported).
 */
static bool vfh_read_fw_id(unsigned int cpu, u64 *id)
{
#if defined(CONFIG_X86)
	*id = cpu_physical_id(cpu);
	return true;
#elif defined(CONFIG_ARM64)
	*id = read_cpuid_mpidr() & VIRTIO_FREQHINT_MPIDR_AFF_MASK;
	return true;
#else
	return false;
#endif
}

/*
 * The device's index of @cpu.  With F_CPU_ID, the i whose
 * cpu_id[i] is the CPU's firmware id; else the Linux CPU number.  Called
 * with ->lock held, when the CPU comes online and when CPU_IDS arrives;
 * the result is kept past the CPU's unplug, for its "no hint" record.
 */
static void vfh_map_cpu(struct virtio_freqhint *vi, unsigned int cpu)
{
	if (!vi->has_cpu_id)
		vi->index[cpu] = cpu < vi->num_vcpus ? cpu : -1;
	else if (vi->have_ids && test_bit(cpu, vi->fw_known))
		vi->index[cpu] = vfh_cpu_ids_find(vi->cpu_ids, vi->num_vcpus,
						  vi->fw_id[cpu]);
}

/*
 * @cpu's current frequency from the latest CUR_FREQ to the cpufreq driver
 * (->lock held): when CUR_FREQ or CPU_IDS arrives, when the CPU comes
 * online (its index may be new) and when the values are forgotten.
 */
static void vfh_push_cur_cpu(struct virtio_freqhint *vi, unsigned int cpu)
{
	int idx = vi->index[cpu];

	if (!vi->has_cur_freq)
		return;
	vfh_cpufreq_set_cur(vi->cpufreq, cpu, idx < 0 ? 0 : vi->cur_khz[idx]);
}

static void vfh_push_cur(struct virtio_freqhint *vi)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		vfh_push_cur_cpu(vi, cpu);
}

/*
 * A reset or a connection (->lock held): the host's sequence restarts and
 * what it said before is no longer known.
 */
static void vfh_cur_forget(struct virtio_freqhint *vi)
{
	vi->cur_seq = 0;
	if (!vi->has_cur_freq)
		return;
	memset(vi->cur_khz, 0, vi->num_vcpus * sizeof(*vi->cur_khz));
	vfh_push_cur(vi);
}

/*
 * A checked CUR_FREQ (->lock held), if newer than the last one applied:
 * each value against the classes of the latest applied snapshot, those
 * out of class unknown.  It describes, never bounds: nothing but the
 * current frequency the cpufreq driver reports follows from it.
 */
static void vfh_cur_freq(struct virtio_freqhint *vi,
			 const struct virtio_freqhint_cur_freq *m)
{
	if (!vfh_seq_newer(le32_to_cpu(m->seq), vi->cur_seq)) {
		vi->stats.cur_freq_stale++;
		return;
	}
	vi->cur_seq = le32_to_cpu(m->seq);
	vi->stats.cur_freq_out_of_class +=
		vfh_cur_freq_take(vi->cur_khz, &vi->host, m, vi->num_vcpus);
	vi->stats.cur_freq_applied++;
	vfh_push_cur(vi);
}

/* No agent, no snapshot yet: the host's defaults. */
static void vfh_feedback_defaults(struct virtio_freqhint *vi)
{
	unsigned int i;

	vi->host.agent = false;
	vi->host.operator_floor = 0;
	vi->host.operator_ceiling = VIRTIO_FREQHINT_SCALE;
	vi->host.num_freq_classes = 0;
	for (i = 0; i < vi->num_vcpus; i++) {
		vi->host.grants[i] = (struct vfh_grant){ 0, VIRTIO_FREQHINT_SCALE };
		vi->host.freq_class[i] = VIRTIO_FREQHINT_NO_FREQ_CLASS;
	}
}

/*
 * Push the feedback state to the cpufreq policies and the gatherer.  A
 * policy's range and table are fixed for its lifetime: the host's
 * frequencies for a CPU are what its next policy starts with.
 */
/* @cpu's frequencies, levels and limits from the host's state (->lock held). */
static void vfh_host_cpu(struct virtio_freqhint *vi, unsigned int cpu,
			 struct vfh_freq *f, struct vfh_levels *lv,
			unsigned int *floor, unsigned int *ceil)
{
	int idx = vi->index[cpu];
	u8 c;

	*lv = (struct vfh_levels){ .step = vi->tune.perf_step };
	*floor = vi->host.operator_floor;
	*ceil = vi->host.operator_ceiling;
	vfh_freq_synthetic(f);
	if (idx < 0)
		return;
	*floor = max_t(unsigned int, *floor, vi->host.grants[idx].floor);
	*ceil = min_t(unsigned int, *ceil, vi->host.grants[idx].ceiling);
	c = vi->host.freq_class[idx];
	if (c < vi->host.num_freq_classes) {
		*f = vi->host.classes[c];
		vfh_freq_levels(f, vi->host.class_step[c], lv);
	}
}

static void vfh_apply_feedback(struct virtio_freqhint *vi)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		unsigned int floor, ceil;
		struct vfh_levels lv;
		struct vfh_freq f;

		mutex_lock(&vi->lock);
		vfh_host_cpu(vi, cpu, &f, &lv, &floor, &ceil);
		mutex_unlock(&vi->lock);
		/* cpufreq.c takes cpufreq locks: outside ->lock, which sysfs takes. */
		vfh_cpufreq_set_freq(vi->cpufreq, cpu, &f);
		vfh_cpufreq_set_limits(vi->cpufreq, cpu, min(floor, ceil), ceil);
		vfh_gather_set_levels(&vi->gather, cpu, &lv);
	}
}

static void vfh_apply_fn(struct kthread_work *work)
{
	vfh_transport_work(container_of(work, struct virtio_freqhint,
					apply_work), vfh_apply_feedback);
}

/*
 * One message from the host (->lock held).  Sets *@ids when CPU_IDS
 * arrived and *@fb when a snapshot was taken.  Returns false if the
 * message was dropped as invalid (a stale or repeated one is not).
 */
static bool vfh_event(struct virtio_freqhint *vi, const void *buf,
		      unsigned int len, bool *ids, bool *fb)
{
	struct device *dev = vi->dev;
	const struct virtio_freqhint_cpu_ids *m = buf;
	const char *why = "unknown message type";
	unsigned int cpu;

	if (len < sizeof(__le16)) {
		why = "short message";
	} else if (le16_to_cpu(m->msg_type) == VIRTIO_FREQHINT_MSG_CPU_IDS) {
		why = vi->has_cpu_id ? vfh_cpu_ids_why(buf, len, vi->num_vcpus) :
				       "CPU_IDS without F_CPU_ID";
		if (!why) {
			if (!vfh_cpu_ids_take(vi->cpu_ids, vi->have_ids, m,
					      vi->num_vcpus)) {
				vi->stats.cpu_ids_ignored++;
				return true;
			}
			vi->have_ids = true;
			for_each_possible_cpu(cpu)
				vfh_map_cpu(vi, cpu);
			vfh_push_cur(vi);
			*ids = true;
			return true;
		}
	} else if (le16_to_cpu(m->msg_type) == VIRTIO_FREQHINT_MSG_FEEDBACK) {
		const struct virtio_freqhint_feedback *s = buf;

		why = vi->has_feedback ?
		      vfh_feedback_why(buf, len, vi->num_vcpus,
				       vi->has_host_freq) :
		      "FEEDBACK without F_FEEDBACK";
		if (!why) {
			if (!vfh_seq_newer(le32_to_cpu(s->seq), vi->host.seq)) {
				vi->stats.feedback_stale++;
				return true;
			}
			vfh_feedback_take(&vi->host, s, vi->num_vcpus);
			vi->stats.feedback_applied++;
			*fb = true;
			return true;
		}
		/* The previous state stays. */
		vi->stats.feedback_invalid++;
		dev_warn_ratelimited(dev, "FEEDBACK dropped: %s\n", why);
		return false;
	} else if (le16_to_cpu(m->msg_type) == VIRTIO_FREQHINT_MSG_CUR_FREQ) {
		why = vi->has_cur_freq ?
		      vfh_cur_freq_why(buf, len, vi->num_vcpus) :
		      "CUR_FREQ without F_CUR_FREQ";
		if (!why) {
			vfh_cur_freq(vi, buf);
			return true;
		}
		/* The previous values stay. */
		vi->stats.cur_freq_invalid++;
		dev_warn_ratelimited(dev, "CUR_FREQ dropped: %s\n", why);
		return false;
	}
	vi->stats.events_invalid++;
	dev_warn_ratelimited(dev, "event dropped: %s\n", why);
	return false;
}

/*
 * After the host's messages were taken (called with ->lock held, returns
 * with it released): new indexes send every vCPU again; the cpufreq
 * driver waits for the indexes and, with F_HOST_FREQ, for a snapshot
 * that carries the host's classes (a host may send its defaults first:
 * the vsock front end does, before its agent's state; FH_HOST_FREQ_WAIT
 * bounds the wait), and registers only once they are the CPUs'
 * (vfh_apply_feedback()): a policy created before keeps the synthetic
 * range for its lifetime.
 */
static void vfh_events_taken(struct virtio_freqhint *vi, bool ids, bool fb)
	__releases(&vi->lock)
{
	bool plan = (fb || ids) && !READ_ONCE(vi->cpufreq_done) &&
		    vi->host.seq && (!vi->has_cpu_id || vi->have_ids) &&
		    (!vi->has_host_freq || vi->host.num_freq_classes);

	mutex_unlock(&vi->lock);
	if (ids)
		vfh_transport_resend(vi);
	if (ids || fb)
		vfh_apply_feedback(vi);
	if (plan)
		mod_delayed_work(system_freezable_wq, &vi->cpufreq_work, 0);
}

static int vfh_event_buf_index(struct virtio_freqhint *vi, void *buf)
{
	unsigned int i;

	for (i = 0; i < FH_EVENT_BUFS; i++)
		if (vi->event_buf[i] == buf)
			return i;
	return -1;
}

/*
 * Make every event buffer the device does not hold available (->lock
 * held); returns whether one was.  One that cannot be added stays marked
 * and is tried again by the next event handler run or send, so a failure
 * costs a buffer only until then.
 */
static bool vfh_post_event_bufs(struct virtio_freqhint *vi)
{
	bool posted = false;
	struct scatterlist sg;
	unsigned int i;
	int err;

	for_each_set_bit(i, &vi->event_unposted, FH_EVENT_BUFS) {
		sg_init_one(&sg, vi->event_buf[i], vi->event_buf_size);
		err = virtqueue_add_inbuf(vi->evq, &sg, 1, vi->event_buf[i],
					  GFP_KERNEL);
		if (err) {
			vi->stats.event_repost_errors++;
			dev_warn_once(vi->dev,
				      "eventq buffer not made available (%d), retried later\n",
				      err);
			break;
		}
		clear_bit(i, &vi->event_unposted);
		posted = true;
	}
	return posted;
}

static void vfh_read_events(struct virtio_freqhint *vi)
{
	bool ids = false, fb = false;
	unsigned int len;
	void *buf;

	mutex_lock(&vi->lock);
	if (!vi->link_up) {
		mutex_unlock(&vi->lock);
		return;
	}
	while ((buf = virtqueue_get_buf(vi->evq, &len))) {
		int i = vfh_event_buf_index(vi, buf);

		if (WARN_ON_ONCE(i < 0))
			continue;
		if (len > vi->event_buf_size) {
			vi->stats.events_invalid++;
			dev_warn_ratelimited(vi->dev,
					     "event longer than its buffer\n");
		} else {
			/*
			 * The buffer is the device's memory: check and use a
			 * copy, so that what was checked is what is used.
			 */
			memcpy(vi->event_snap, buf, len);
			vfh_event(vi, vi->event_snap, len, &ids, &fb);
		}
		set_bit(i, &vi->event_unposted);
	}
	if (vfh_post_event_bufs(vi))
		virtqueue_kick(vi->evq);
	vfh_events_taken(vi, ids, fb);
}

static void vfh_event_fn(struct kthread_work *work)
{
	vfh_transport_work(container_of(work, struct virtio_freqhint,
					event_work), vfh_read_events);
}

/*
 * The cpufreq driver registers once, with what the host said by then:
 * its policies' ranges and tables are fixed for their lifetime, and a
 * driver registered again drops the user's governors and limits.  On
 * system_freezable_wq, so never while cpufreq is suspended (a policy
 * created then gets a governor the core did not initialise).
 */
static void vfh_cpufreq_fn(struct work_struct *work)
{
	struct virtio_freqhint *vi = container_of(to_delayed_work(work),
						  struct virtio_freqhint,
						  cpufreq_work);
	int err;

	if (vi->cpufreq_done || (!vi->has_perf && !vi->has_host_freq))
		return;
	WRITE_ONCE(vi->cpufreq_done, true);
	err = vfh_cpufreq_attach(vi->cpufreq, vi->dev);
	if (err)
		dev_warn(vi->dev, "cannot add the cpufreq device (%d): no perf requests\n",
			 err);
}

/*
 * The hintq interrupts only when the sender found no free buffer and asked
 * for one (transport.c): the buffer it returns lets the next one go.
 */
static void vfh_hintq_done(struct virtqueue *vq)
{
	struct virtio_freqhint *vi = vq->vdev->priv;

	WRITE_ONCE(vi->hintq_callbacks, vi->hintq_callbacks + 1);
	vfh_transport_kick(vi);
}

static void vfh_eventq_done(struct virtqueue *vq)
{
	struct virtio_freqhint *vi = vq->vdev->priv;

	/* Until the link is up, vfh_device_up() runs the handler itself. */
	if (READ_ONCE(vi->link_up))
		kthread_queue_work(vi->worker, &vi->event_work);
}

/*
 * A CPU comes online (on that CPU): read its firmware id and map it, then
 * start gathering there (a CPU is mapped before it publishes).  No device
 * access.  Registered from vfh_start() to vfh_stop(): not while suspended.
 */
static int vfh_cpu_online(unsigned int cpu, struct hlist_node *node)
{
	struct virtio_freqhint *vi = hlist_entry(node, struct virtio_freqhint,
						 cpuhp_node);
	unsigned int floor, ceil;
	struct vfh_levels lv;
	struct vfh_freq f;
	bool known;
	u64 id;

	known = vfh_read_fw_id(cpu, &id);
	mutex_lock(&vi->lock);
	if (known) {
		vi->fw_id[cpu] = id;
		set_bit(cpu, vi->fw_known);
	}
	vfh_map_cpu(vi, cpu);
	vfh_push_cur_cpu(vi, cpu);
	vfh_host_cpu(vi, cpu, &f, &lv, &floor, &ceil);
	/*
	 * Its grants and class: the policy may be new (hot-added CPU).
	 * Queued under ->lock, only while the link is up: vfh_device_down()
	 * cancels it after the link went down.
	 */
	if (vi->link_up)
		kthread_queue_work(vi->worker, &vi->apply_work);
	mutex_unlock(&vi->lock);
	/*
	 * A hot-added CPU's first policy is created by the cpufreq core's own
	 * hotplug callback, which it adds when the driver registers, so
	 * normally after this one: the policy must find the CPU's
	 * frequencies now, since a live policy keeps its own.  (A policy
	 * created before this ran starts synthetic and stays so.)
	 */
	vfh_cpufreq_set_freq(vi->cpufreq, cpu, &f);
	if (!vfh_reporting_off())
		vfh_gather_cpu_online(&vi->gather, cpu);
	return 0;
}

/* The CPU's "no hint" goes out under the index mapped while it was up. */
static int vfh_cpu_offline(unsigned int cpu, struct hlist_node *node)
{
	struct virtio_freqhint *vi = hlist_entry(node, struct virtio_freqhint,
						 cpuhp_node);

	if (!vfh_reporting_off())
		vfh_gather_cpu_offline(&vi->gather, cpu);
	return 0;
}

static int vfh_find_vqs(struct virtio_freqhint *vi)
{
	struct virtqueue *vqs[2];
	unsigned int nvqs = vi->event_buf[0] ? 2 : 1;
	int err;
#ifndef FH_COMPAT_FIND_VQS_NAMES
	struct virtqueue_info info[] = {
		{ "hintq", vfh_hintq_done },
		{ "eventq", vfh_eventq_done },
	};

	err = virtio_find_vqs(vi->vdev, nvqs, vqs, info, NULL);
#else
	vq_callback_t *cbs[] = { vfh_hintq_done, vfh_eventq_done };
	static const char * const names[] = { "hintq", "eventq" };

	err = virtio_find_vqs(vi->vdev, nvqs, vqs, cbs, names, NULL);
#endif
	if (err)
		return err;
	vi->vq = vqs[VIRTIO_FREQHINT_VQ_HINT];
	vi->evq = nvqs > 1 ? vqs[VIRTIO_FREQHINT_VQ_EVENT] : NULL;
	return 0;
}

/*
 * The device side up: DRIVER_OK first, then the link, then the
 * event buffers, then every vCPU's state.  The event buffers are made
 * available after DRIVER_OK (a queue may refuse buffers before it).
 */
static void vfh_device_up(struct virtio_freqhint *vi)
{
	mutex_lock(&vi->lock);
	/* The device's snapshot numbers restart at 1 after a reset. */
	vi->host.seq = 0;
	vfh_cur_forget(vi);
	vi->have_ids = false;
	vi->event_unposted = vi->evq ? GENMASK(FH_EVENT_BUFS - 1, 0) : 0;
	mutex_unlock(&vi->lock);
	virtio_device_ready(vi->vdev);
	vfh_transport_link(vi, true);
	/* It posts the buffers and kicks eventq (the queue is ->lock's). */
	if (vi->evq)
		kthread_queue_work(vi->worker, &vi->event_work);
	vfh_transport_resend(vi);
}

/*
 * The device side down: the device is reset first, so it uses no buffer
 * any more; then no callback runs (virtio-mmio's reset does not
 * synchronize its interrupt) and no work is left, so nothing touches a
 * queue when the caller deletes them.
 */
static void vfh_device_down(struct virtio_freqhint *vi)
{
	vfh_transport_link(vi, false);
	virtio_reset_device(vi->vdev);
	virtio_synchronize_cbs(vi->vdev);
	vfh_transport_stop(vi);
	kthread_cancel_work_sync(&vi->event_work);
	kthread_cancel_work_sync(&vi->apply_work);
}

/* The device side, as probe and restore attach it. */
static int vfh_device_attach(struct virtio_freqhint *vi)
{
	int err;

	err = vfh_find_vqs(vi);
	if (err)
		return err;
	vfh_device_up(vi);
	return 0;
}

/*
 * The device side, as remove and freeze detach it; remove after a failed
 * restore finds it detached already.
 */
static void vfh_device_detach(struct virtio_freqhint *vi)
{
	if (!vi->vq)
		return;
	vfh_device_down(vi);
	vi->vdev->config->del_vqs(vi->vdev);
	vi->vq = NULL;
	vi->evq = NULL;
}

static void vfh_gather_kick(struct vfh_gather *g)
{
	vfh_transport_kick(container_of(g, struct virtio_freqhint, gather));
}

static void vfh_cpufreq_request(void *data, unsigned int cpu,
				unsigned int perf)
{
	struct virtio_freqhint *vi = data;

	vfh_gather_set_perf(&vi->gather, cpu, perf);
}

/* schedutil's clamps for @cpu, to the clamp hook (scheduler context). */
static void vfh_cpufreq_uclamp(void *data, unsigned int cpu,
			       unsigned long util_min, unsigned long util_max)
{
	struct virtio_freqhint *vi = data;

	vfh_clamp_hook_update(&vi->gather, cpu, util_min, util_max);
}

static const struct vfh_cpufreq_ops vfh_cpufreq_ops = {
	.request	= vfh_cpufreq_request,
	.uclamp		= vfh_cpufreq_uclamp,
};

/* Start @src; -ENODEV (the kernel lacks it) is for auto to pass over. */
static int vfh_clamps_try(struct virtio_freqhint *vi,
			  const struct vfh_clamp_source *src, bool quiet)
{
	int err = vfh_gather_start(&vi->gather, src);

	if (err && !(quiet && err == -ENODEV))
		dev_err(vi->dev, "clamp source %s: %d\n", src->name, err);
	return err;
}

#ifdef FH_CLAMP_SWITCH
/*
 * Out of tree: the source clamp_source= asks for; auto is the kernel's
 * hook where it has one, on a uclamp kernel without it the sched_switch
 * probe, else idle time alone, with no probe at all (kernels without
 * uclamp).  1: auto, decided by the caller.
 */
static int vfh_clamps_chosen(struct virtio_freqhint *vi)
{
	int err;

	if (!strcmp(clamp_source, "hook"))
		return vfh_clamps_try(vi, &vfh_clamp_hook, false);
	if (!strcmp(clamp_source, "sched_switch"))
		return vfh_clamps_try(vi, &vfh_clamp_switch, false);
	if (!strcmp(clamp_source, "idle_time"))
		return vfh_clamps_try(vi, &vfh_clamp_idle, false);
	if (strcmp(clamp_source, "auto")) {
		dev_err(vi->dev,
			"clamp_source=%s: auto, hook, sched_switch or idle_time\n",
			clamp_source);
		return -EINVAL;
	}
	err = vfh_clamps_try(vi, &vfh_clamp_hook, true);
	if (err != -ENODEV || !IS_ENABLED(CONFIG_UCLAMP_TASK))
		return err == -ENODEV ? 1 : err;
	err = vfh_clamps_try(vi, &vfh_clamp_switch, true);
	return err == -ENODEV ? 1 : err;
}

#endif
/*
 * The kernel's clamp hook where it has uclamp, else the CPUs' idle time
 * alone: clamps cannot be set in such a guest, so nothing runs on a
 * context switch.
 */
static int vfh_clamps_start(struct virtio_freqhint *vi)
{
	int err;

#ifdef FH_CLAMP_SWITCH
	err = vfh_clamps_chosen(vi);
	if (err <= 0)
		return err;
#else
	err = vfh_clamps_try(vi, &vfh_clamp_hook, true);
	if (err != -ENODEV)
		return err;
#endif
	return vfh_clamps_try(vi, &vfh_clamp_idle, false);
}

/*
 * Probe only: what vfh_start() needs, allocated once (the gatherer's
 * per-CPU data, the cpufreq driver, the sender's worker), with the host's
 * defaults.  The cpufreq driver registers later (vfh_cpufreq_plan()) and
 * stays registered across suspend: the cpufreq core stops the governors
 * before the first device freezes (cpufreq_suspend() at the start of
 * dpm_suspend()) and starts them after the last restore, and it does not
 * support a driver registered in between (it neither initialises nor
 * exits a governor while suspended).
 */
static int vfh_setup(struct virtio_freqhint *vi)
{
	int err;

	err = vfh_gather_init(&vi->gather, &vi->tune, vfh_gather_kick);
	if (err)
		return err;
	err = -ENOMEM;
	vi->cpufreq = vfh_cpufreq_create(&vfh_cpufreq_ops, vi);
	if (!vi->cpufreq)
		goto err_gather;
	if (vi->has_cur_freq)
		vfh_cpufreq_use_cur(vi->cpufreq);
	err = vfh_transport_start(vi);
	if (err)
		goto err_cpufreq;
	vfh_apply_feedback(vi);
	return 0;

err_cpufreq:
	vfh_cpufreq_destroy(vi->cpufreq);
err_gather:
	vfh_gather_destroy(&vi->gather);
	return err;
}

/*
 * After the device is attached: the cpufreq driver only if something
 * needs it (a perf value to send, or the host's frequencies to show), at
 * once without the host's frequencies, else after the first snapshot.
 */
static void vfh_cpufreq_plan(struct virtio_freqhint *vi)
{
	if (!vi->has_perf && !vi->has_host_freq)
		return;
	queue_delayed_work(system_freezable_wq, &vi->cpufreq_work,
			   vi->has_host_freq ? FH_HOST_FREQ_WAIT : 0);
}

/* Remove only, after vfh_stop(): nothing sends or kicks any more. */
static void vfh_teardown(struct virtio_freqhint *vi)
{
	cancel_delayed_work_sync(&vi->cpufreq_work);
	/* The policies' exit reports "no request" to the stopped gatherer. */
	vfh_cpufreq_detach(vi->cpufreq);
	vfh_transport_release(vi);
	vfh_cpufreq_destroy(vi->cpufreq);
	vfh_gather_destroy(&vi->gather);
}

/*
 * Gathering, at probe and restore: the clamp source, then the CPUs (each
 * mapped, then sampled).
 */
static int vfh_start(struct virtio_freqhint *vi)
{
	int err;

	err = vfh_reporting_off() ? 0 : vfh_clamps_start(vi);
	if (err)
		return err;
	err = cpuhp_state_add_instance(vfh_cpuhp_state, &vi->cpuhp_node);
	if (err) {
		vfh_gather_stop(&vi->gather);
		return err;
	}
	vi->started = true;
	return 0;
}

/*
 * At remove and freeze, after the device side is detached: no CPU
 * callback, no clamp source and no sampler is left, and no kick is
 * pending.  Each CPU's offline callback publishes "no hint"; the link is
 * down, so none is sent.
 */
static void vfh_stop(struct virtio_freqhint *vi)
{
	if (!vi->started)
		return;
	vi->started = false;
	cpuhp_state_remove_instance(vfh_cpuhp_state, &vi->cpuhp_node);
	vfh_gather_stop(&vi->gather);
}

#define FH_CREAD(vdev, field, ptr)	\
	virtio_cread_le(vdev, struct virtio_freqhint_config, field, ptr)

/*
 * The host's configuration (the device's configuration space, or vsock's
 * CONFIG message), fixed for the state's lifetime.  @eventq: messages
 * arrive in buffers of c->event_buf_size, which must hold them.
 */
static int vfh_take_config(struct virtio_freqhint *vi,
			   const struct vfh_config *c, bool eventq)
{
	const char *why;

	/* A device this confused is not one to talk to. */
	why = vfh_config_why(c, eventq);
	if (why) {
		dev_err(vi->dev, "invalid configuration: %s\n", why);
		return -EINVAL;
	}
	vi->num_vcpus = c->num_vcpus;
	vi->max_records = c->max_records;
	vi->event_buf_size = eventq ? c->event_buf_size : 0;
	vi->tune.window_ms = min_t(u16, c->rate_window_ms, 1000);
	vi->tune.perf_step = c->perf_step;
	vi->tune.idle_share = c->idle_share;
	vi->tune.min_share = FH_MIN_SHARE;
	return 0;
}

/* The configuration, fixed for the device's lifetime: read once. */
static int vfh_read_config(struct virtio_device *vdev,
			   struct virtio_freqhint *vi)
{
	struct vfh_config c;

	FH_CREAD(vdev, num_vcpus, &c.num_vcpus);
	FH_CREAD(vdev, max_records, &c.max_records);
	FH_CREAD(vdev, rate_window_ms, &c.rate_window_ms);
	FH_CREAD(vdev, perf_step, &c.perf_step);
	FH_CREAD(vdev, idle_share, &c.idle_share);
	FH_CREAD(vdev, reserved, &c.reserved);
	FH_CREAD(vdev, event_buf_size, &c.event_buf_size);
	return vfh_take_config(vi, &c, vi->has_feedback || vi->has_cpu_id);
}

static void vfh_free(struct virtio_freqhint *vi)
{
	unsigned int i;

	kfree(vi->index);
	bitmap_free(vi->fw_known);
	kfree(vi->fw_id);
	kfree(vi->cpu_ids);
	kfree(vi->cur_khz);
	for (i = 0; i < FH_EVENT_BUFS; i++)
		kfree(vi->event_buf[i]);
	kfree(vi->event_snap);
	kfree(vi->host.freq_class);
	kfree(vi->host.grants);
	kfree(vi->seq);
	kfree(vi->buf);
	kfree(vi);
}

static int vfh_alloc(struct virtio_freqhint *vi)
{
	unsigned int cpu, i;

	vi->seq = kcalloc(vi->num_vcpus, sizeof(*vi->seq), GFP_KERNEL);
	vi->host.grants = kcalloc(vi->num_vcpus, sizeof(*vi->host.grants),
				  GFP_KERNEL);
	vi->host.freq_class = kcalloc(vi->num_vcpus,
				      sizeof(*vi->host.freq_class), GFP_KERNEL);
	vi->cpu_ids = kcalloc(vi->num_vcpus, sizeof(*vi->cpu_ids), GFP_KERNEL);
	vi->fw_id = kcalloc(nr_cpu_ids, sizeof(*vi->fw_id), GFP_KERNEL);
	vi->fw_known = bitmap_zalloc(nr_cpu_ids, GFP_KERNEL);
	vi->index = kcalloc(nr_cpu_ids, sizeof(*vi->index), GFP_KERNEL);
	if (vi->has_cur_freq) {
		vi->cur_khz = kcalloc(vi->num_vcpus, sizeof(*vi->cur_khz),
				      GFP_KERNEL);
		if (!vi->cur_khz)
			return -ENOMEM;
	}
#ifdef FH_BENCH_ANCHOR
	vi->num_bufs = vfh_notify_every_change ? FH_EVERY_BUFS : 1;
	vi->gather.every_request = vfh_notify_every_change;
#else
	vi->num_bufs = 1;
#endif
	vi->buf = kcalloc(vi->num_bufs, vfh_buf_size(vi->max_records),
			  GFP_KERNEL);
	if (!vi->seq || !vi->host.grants || !vi->host.freq_class ||
	    !vi->cpu_ids ||
	    !vi->fw_id || !vi->fw_known || !vi->index || !vi->buf)
		return -ENOMEM;
	/*
	 * Each its own allocation: device-writable, they share no cache line.
	 * Only the device has them (event_buf_size 0 otherwise).
	 */
	if (vi->event_buf_size) {
		vi->event_snap = kmalloc(vi->event_buf_size, GFP_KERNEL);
		if (!vi->event_snap)
			return -ENOMEM;
		for (i = 0; i < FH_EVENT_BUFS; i++) {
			vi->event_buf[i] = kzalloc(vi->event_buf_size,
						   GFP_KERNEL);
			if (!vi->event_buf[i])
				return -ENOMEM;
		}
	}
	for (cpu = 0; cpu < nr_cpu_ids; cpu++)
		vi->index[cpu] = -1;
	vfh_feedback_defaults(vi);
	return 0;
}

static int vfh_validate(struct virtio_device *vdev)
{
	/* The v1 layout (little-endian, modern) only. */
	if (!virtio_has_feature(vdev, VIRTIO_F_VERSION_1)) {
		dev_err(&vdev->dev, "device without VIRTIO_F_VERSION_1 refused\n");
		return -ENODEV;
	}
	if (!vdev->config->get) {
		dev_err(&vdev->dev, "config access disabled\n");
		return -EINVAL;
	}
	/* Frequency classes travel in FEEDBACK snapshots only. */
	if (!virtio_has_feature(vdev, VIRTIO_FREQHINT_F_FEEDBACK))
		__virtio_clear_bit(vdev, VIRTIO_FREQHINT_F_HOST_FREQ);
	/* Current frequencies are checked against those classes. */
	if (!virtio_has_feature(vdev, VIRTIO_FREQHINT_F_HOST_FREQ))
		__virtio_clear_bit(vdev, VIRTIO_FREQHINT_F_CUR_FREQ);
	return 0;
}

/* The driver's state before the host's configuration is taken. */
static struct virtio_freqhint *vfh_new(struct device *dev, u32 features)
{
	struct virtio_freqhint *vi;

	vi = kzalloc(sizeof(*vi), GFP_KERNEL);
	if (!vi)
		return NULL;
	vi->dev = dev;
	mutex_init(&vi->lock);
	vi->has_perf = features & BIT(VIRTIO_FREQHINT_F_PERF);
	vi->has_feedback = features & BIT(VIRTIO_FREQHINT_F_FEEDBACK);
	/* Frequency classes travel in FEEDBACK snapshots only. */
	vi->has_host_freq = vi->has_feedback &&
			    (features & BIT(VIRTIO_FREQHINT_F_HOST_FREQ));
	vi->has_cpu_id = features & BIT(VIRTIO_FREQHINT_F_CPU_ID);
	/* ... and current frequencies are checked against them. */
	vi->has_cur_freq = vi->has_host_freq &&
			   (features & BIT(VIRTIO_FREQHINT_F_CUR_FREQ));
	kthread_init_work(&vi->event_work, vfh_event_fn);
	kthread_init_work(&vi->apply_work, vfh_apply_fn);
	INIT_DELAYED_WORK(&vi->cpufreq_work, vfh_cpufreq_fn);
	return vi;
}

/*
 * Everything but the link, once the configuration is taken: the
 * allocations, the gatherer, the cpufreq driver (registered later, see
 * vfh_cpufreq_plan()), the sender, the clamp source and the CPU callbacks.
 * On failure the caller frees @vi (vfh_free()).
 */
static int vfh_state_init(struct virtio_freqhint *vi)
{
	int err;

	err = vfh_alloc(vi);
	if (err)
		return err;
	err = vfh_setup(vi);
	if (err)
		return err;
	err = vfh_start(vi);
	if (err)
		vfh_teardown(vi);
	return err;
}

/* Undoes vfh_state_init(), once the link is down. */
static void vfh_state_exit(struct virtio_freqhint *vi)
{
	vfh_stop(vi);
	vfh_teardown(vi);
}

static u32 vfh_negotiated(struct virtio_device *vdev)
{
	unsigned int bit;
	u32 f = 0;

	for (bit = VIRTIO_FREQHINT_F_PERF; bit <= VIRTIO_FREQHINT_F_CUR_FREQ; bit++)
		if (virtio_has_feature(vdev, bit))
			f |= BIT(bit);
	return f;
}

static int vfh_probe(struct virtio_device *vdev)
{
	struct virtio_freqhint *vi;
	int err;

	mutex_lock(&vfh_probe_lock);
	if (vfh_bound) {
		dev_err(&vdev->dev, "a second virtio-freqhint device is not supported: %s already reports this guest's vCPUs\n",
			dev_name(&vfh_bound->vdev->dev));
		err = -EBUSY;
		goto out_unlock;
	}
	/* The device is the standard path: it takes over from vsock. */
	vfh_vsock_stop();

	err = -ENOMEM;
	vi = vfh_new(&vdev->dev, vfh_negotiated(vdev));
	if (!vi)
		goto out_unlock;
	vi->vdev = vdev;
	err = vfh_read_config(vdev, vi);
	if (err)
		goto err_free;

	vdev->priv = vi;
	err = vfh_state_init(vi);
	if (err)
		goto err_priv;
	err = vfh_device_attach(vi);
	if (err)
		goto err_state;
	vfh_cpufreq_plan(vi);
	vfh_bound = vi;
	mutex_unlock(&vfh_probe_lock);
	vfh_debugfs_init(vi);
	dev_info(&vdev->dev, "clamps %s, perf %s, %s frequencies%s, vCPU indexes by %s\n",
		 !IS_ENABLED(CONFIG_UCLAMP_TASK) ?
		 "not available (no CONFIG_UCLAMP_TASK)" :
		 READ_ONCE(vi->gather.uclamp_used) ? "reported" :
		 "reported once one is set",
		 vi->has_perf ? "reported" : "not available",
		 vi->has_host_freq ? "host" : "synthetic",
		 vi->has_cur_freq ? " and current frequency" : "",
		 vi->has_cpu_id ? "firmware id" : "Linux CPU number");
	return 0;

err_state:
	vfh_state_exit(vi);
err_priv:
	vdev->priv = NULL;
err_free:
	vfh_free(vi);
out_unlock:
	mutex_unlock(&vfh_probe_lock);
	return err;
}

static void vfh_remove(struct virtio_device *vdev)
{
	struct virtio_freqhint *vi = vdev->priv;

	vfh_debugfs_exit(vi);
	mutex_lock(&vfh_probe_lock);
	vfh_bound = NULL;
	mutex_unlock(&vfh_probe_lock);
	vfh_device_detach(vi);
	vfh_state_exit(vi);
	vdev->priv = NULL;
	vfh_free(vi);
}

/*
 * The same driver over another link (vsock.c): the state is built from
 * the host's CONFIG and lives across reconnections with the same one;
 * the link's own sender (@send, on the state's worker) builds its
 * messages with vfh_transport_build().
 */
struct virtio_freqhint *vfh_link_create(struct device *dev,
					const struct vfh_config *c,
					u32 features,
					void (*send)(struct virtio_freqhint *vi))
{
	struct virtio_freqhint *vi;
	int err;

	vi = vfh_new(dev, features);
	if (!vi)
		return ERR_PTR(-ENOMEM);
	vi->send_fn = send;
	err = vfh_take_config(vi, c, false);
	if (err)
		goto err_free;
	err = vfh_state_init(vi);
	if (err)
		goto err_free;
	vfh_cpufreq_plan(vi);
	vfh_debugfs_init(vi);
	return vi;

err_free:
	vfh_free(vi);
	return ERR_PTR(err);
}

/*
 * A new connection: as after the device's reset, the host's snapshot
 * numbers restart, the first CPU_IDS is awaited again and every vCPU is
 * sent.
 */
void vfh_link_up(struct virtio_freqhint *vi)
{
	mutex_lock(&vi->lock);
	vi->host.seq = 0;
	vfh_cur_forget(vi);
	vi->have_ids = false;
	mutex_unlock(&vi->lock);
	vfh_transport_link(vi, true);
	vfh_transport_resend(vi);
}

/* The connection is gone: nothing sends or applies until the next one. */
void vfh_link_down(struct virtio_freqhint *vi)
{
	vfh_transport_link(vi, false);
	vfh_transport_stop(vi);
	kthread_cancel_work_sync(&vi->apply_work);
	/* No host says what its CPUs run at until the next connection. */
	mutex_lock(&vi->lock);
	vfh_cur_forget(vi);
	mutex_unlock(&vi->lock);
}

/* One CPU_IDS, FEEDBACK or CUR_FREQ message; false if it was invalid. */
bool vfh_link_message(struct virtio_freqhint *vi, const void *msg,
		      unsigned int len)
{
	bool ids = false, fb = false, ok;

	mutex_lock(&vi->lock);
	if (!vi->link_up) {
		mutex_unlock(&vi->lock);
		return true;
	}
	ok = vfh_event(vi, msg, len, &ids, &fb);
	vfh_events_taken(vi, ids, fb);
	return ok;
}

void vfh_link_destroy(struct virtio_freqhint *vi)
{
	vfh_debugfs_exit(vi);
	vfh_link_down(vi);
	vfh_state_exit(vi);
	vfh_free(vi);
}

#ifdef CONFIG_PM_SLEEP
/*
 * Suspend is remove without the frees, resume probe without the
 * allocations (virtio-rng's remove_common/probe_common): the device side
 * detached, the CPU callbacks, the clamp source and the samplers stopped,
 * so nothing of the module runs while the device is reset and the CPUs go
 * down and come back.  The cpufreq policies stay, their governors stopped
 * by the cpufreq core (see vfh_setup()); the host's last limits and
 * frequencies stay too, until the device's next FEEDBACK.  A failed
 * restore leaves the device detached and stopped; remove copes.
 */
static int vfh_freeze(struct virtio_device *vdev)
{
	struct virtio_freqhint *vi = vdev->priv;

	vfh_device_detach(vi);
	vfh_stop(vi);
	return 0;
}

/* CPU_IDS and a FEEDBACK snapshot follow DRIVER_OK again. */
static int vfh_restore(struct virtio_device *vdev)
{
	struct virtio_freqhint *vi = vdev->priv;
	int err;

	err = vfh_start(vi);
	if (err)
		return err;
	err = vfh_device_attach(vi);
	if (err)
		vfh_stop(vi);
	return err;
}
#endif

static unsigned int features[] = {
	VIRTIO_FREQHINT_F_PERF,
	VIRTIO_FREQHINT_F_FEEDBACK,
	VIRTIO_FREQHINT_F_HOST_FREQ,
	VIRTIO_FREQHINT_F_CPU_ID,
	VIRTIO_FREQHINT_F_CUR_FREQ,
};

static const struct virtio_device_id id_table[] = {
	{ VIRTIO_ID_FREQHINT, VIRTIO_DEV_ANY_ID },
	{ 0 },
};
MODULE_DEVICE_TABLE(virtio, id_table);

static struct virtio_driver virtio_freqhint_driver = {
	.feature_table		= features,
	.feature_table_size	= ARRAY_SIZE(features),
	.driver.name		= KBUILD_MODNAME,
	.driver.dev_groups	= vfh_groups,
	.id_table		= id_table,
	.validate		= vfh_validate,
	.probe			= vfh_probe,
	.remove			= vfh_remove,
#ifdef CONFIG_PM_SLEEP
	.freeze			= vfh_freeze,
	.restore		= vfh_restore,
#endif
};

static bool vfh_virtio_registered;

/*
 * A device present at load binds while the driver registers; only where
 * none did does the vsock link start (transport=auto).  A device that
 * appears later takes over from it (vfh_probe()).
 */
static int __init virtio_freqhint_init(void)
{
	bool want_device;
	int ret;

	ret = vfh_cpufreq_driver_register();
	if (ret)
		return ret;
	ret = vfh_vsock_init(&want_device);
	if (ret)
		goto err_cpufreq;
	ret = cpuhp_setup_state_multi(CPUHP_AP_ONLINE_DYN, "virtio/freqhint:online",
				      vfh_cpu_online, vfh_cpu_offline);
	if (ret < 0)
		goto err_vsock;
	vfh_cpuhp_state = ret;
	if (want_device) {
		ret = register_virtio_driver(&virtio_freqhint_driver);
		if (ret)
			goto err_cpuhp;
		vfh_virtio_registered = true;
	}
	mutex_lock(&vfh_probe_lock);
	if (!vfh_bound)
		vfh_vsock_start();
	mutex_unlock(&vfh_probe_lock);
	return 0;

err_cpuhp:
	cpuhp_remove_multi_state(vfh_cpuhp_state);
err_vsock:
	vfh_vsock_exit();
err_cpufreq:
	vfh_cpufreq_driver_unregister();
	return ret;
}

static void __exit virtio_freqhint_exit(void)
{
	if (vfh_virtio_registered)
		unregister_virtio_driver(&virtio_freqhint_driver);
	/* The link's CPU callbacks are instances of the multi state. */
	vfh_vsock_exit();
	cpuhp_remove_multi_state(vfh_cpuhp_state);
	vfh_cpufreq_driver_unregister();
}

module_init(virtio_freqhint_init);
module_exit(virtio_freqhint_exit);
MODULE_DESCRIPTION("Virtio frequency hint driver");
MODULE_LICENSE("GPL");
