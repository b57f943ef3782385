// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: sending.
 *
 * One driver->device queue (hintq).  The gathering side marks vCPUs dirty
 * and kicks; the sender, a kthread worker of its own (so gather.c can tell
 * its work from the guest's), builds a single buffer carrying every dirty
 * vCPU's latest record and sends it.  Leading edge: a kick when nothing
 * was sent within the last rate window sends at once; kicks within the
 * window are coalesced into one buffer at its end.  At most one buffer is
 * in flight, and it is taken back at the next send, without its
 * used-buffer interrupt (vfh_reclaim()).  Hints are state: a vCPU that
 * changes again before the send is simply read again, nothing queues up.
 *
 * Records carry the device's vCPU index (main.c), resolved when
 * the CPU came online and kept, so the "no hint" record of a CPU that was
 * just unplugged still finds its index.  With VIRTIO_FREQHINT_F_CPU_ID
 * nothing is sent before the device's CPU_IDS message arrived.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#ifdef FH_OWN_TIME
#include <linux/sched/clock.h>
#endif
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>

#include "device.h"

#ifdef FH_BENCH_ANCHOR
/*
 * notify_every_change (bench/guest only; built with FH_BENCH_ANCHOR,
 * never in the product driver): the anchor the coalescing is judged
 * against.  Linux's virtual-cpufreq driver
 * (drivers/cpufreq/virtual-cpufreq.c) writes every frequency schedutil
 * picks (.fast_switch, and .target) to a per-vCPU set_perf MMIO register,
 * from the vCPU itself (dvfs_possible_from_any_cpu is false): one trap per
 * request, which crosvm's device turns into a sched_setattr() of that
 * vCPU thread.  In this mode every publication of a vCPU's report (gather.c
 * also publishes each change of the governor's request at once) is sent
 * at once, without the rate window, and notifies the device even while it
 * asked for no notifications; FH_EVERY_BUFS buffers may be in flight so
 * that the device's own window does not merge sends.  Publications that
 * arrive while the sender runs still share its buffer.
 */
bool vfh_notify_every_change;
module_param_named(notify_every_change, vfh_notify_every_change, bool, 0444);
MODULE_PARM_DESC(notify_every_change,
		 "Benchmark anchor: notify the device on every change of a vCPU's report, no rate window (default: off, coalesce)");
#define vfh_every()	vfh_notify_every_change

/* bench/guest's guest-cost anchor: see vfh_reporting_off() (device.h). */
bool vfh_bench_reporting_off;
module_param_named(reporting_off, vfh_bench_reporting_off, bool, 0444);
MODULE_PARM_DESC(reporting_off,
		 "Benchmark anchor: bound and the cpufreq driver registered, but nothing gathered or sent (default: off)");
#else
#define vfh_every()	false
#endif

size_t vfh_buf_size(unsigned int n)
{
	return sizeof(struct virtio_freqhint_hints) +
	       n * sizeof(struct virtio_freqhint_record);
}

/*
 * Callable from any context but NMI: irq_work, vq callback, process.  The
 * worker lives from vfh_transport_start() to vfh_transport_release();
 * callers are stopped before the latter (gather's irq_work synced, the
 * device reset and its callbacks synchronized), and it is set before any
 * caller runs (probe order).
 */
void vfh_transport_kick(struct virtio_freqhint *vi)
{
	unsigned long last, delay = 0;

	if (!READ_ONCE(vi->link_up))
		return;
	last = READ_ONCE(vi->last_send);
	/* Read the clock after the send's time: that is never later. */
	smp_rmb();
	if (!vfh_every())
		delay = vfh_send_delay(jiffies, last,
				       msecs_to_jiffies(vi->tune.window_ms));
	/* Already queued: its (earlier or equal) time stands. */
	kthread_queue_delayed_work(vi->worker, &vi->send_work, delay);
}

static struct virtio_freqhint_hints *
vfh_buf(struct virtio_freqhint *vi, unsigned int i)
{
	return (void *)vi->buf + i * vfh_buf_size(vi->max_records);
}

/*
 * Fill @buf (room for max_records) with dirty vCPUs; returns the record
 * count, *more when dirty ones are left.  Only the set bits are walked: a
 * guest of many vCPUs with one that changed costs one record, not a pass
 * over every possible CPU.  ->lock held.  Also the vsock link's (vsock.c).
 */
unsigned int vfh_transport_build(struct virtio_freqhint *vi,
				 struct virtio_freqhint_hints *buf, bool *more)
{
	struct virtio_freqhint_record *recs = (void *)(buf + 1);
	unsigned int cpu, n = 0;
	u64 rep;
	int idx;

	*more = false;
	for (cpu = vfh_gather_next_dirty(&vi->gather, 0); cpu < nr_cpu_ids;
	     cpu = vfh_gather_next_dirty(&vi->gather, cpu + 1)) {
		if (n == vi->max_records) {
			*more = true;
			break;
		}
		if (!vfh_gather_take(&vi->gather, cpu, &rep))
			continue;
		/*
		 * A CPU the device has no index for is not reported,
		 * but counted.  A possible CPU that never came online and has
		 * no hint is not missing anything: the device holds "no hint"
		 * for every index since its reset.
		 */
		idx = vi->index[cpu];
		if (idx < 0) {
			if (cpu_online(cpu) || FIELD_GET(FH_REP_FLAGS, rep)) {
				vi->stats.unmapped_cpus++;
				dev_warn_once(vi->dev,
					      "cpu%u has no vCPU index: not reported\n",
					      cpu);
			}
			continue;
		}
		vfh_record_fill(&recs[n++], rep, idx, ++vi->seq[idx],
				vi->has_perf);
	}
	buf->msg_type = cpu_to_le16(VIRTIO_FREQHINT_MSG_HINTS);
	buf->num_records = cpu_to_le16(n);
	memset(buf->reserved, 0, sizeof(buf->reserved));
	return n;
}

/*
 * Take back the buffers the device used.  Their interrupts are off: a
 * busy guest sends once a window, and the buffer it sent last
 * is normally back by then, so the interrupt would only wake the sender to
 * find it.  Only when none is free is the device asked to interrupt once
 * on its next used buffer (the callback kicks the sender); when it already
 * used one meanwhile (false return), that one is taken at once.  ->lock
 * held.
 */
static void vfh_reclaim(struct virtio_freqhint *vi)
{
	struct virtio_freqhint_hints *buf;
	unsigned int len;

	do {
		virtqueue_disable_cb(vi->vq);
		while ((buf = virtqueue_get_buf(vi->vq, &len)))
			vi->free_bufs |= BIT(((void *)buf - (void *)vi->buf) /
					     vfh_buf_size(vi->max_records));
	} while (!vi->free_bufs && !virtqueue_enable_cb_delayed(vi->vq));
}

#ifdef FH_OWN_TIME
/*
 * bench/guest's build: the device's notification, timed (under TCG the
 * device's handling runs inside it).
 */
static void vfh_timed_notify(struct virtio_freqhint *vi)
{
	u64 t0 = local_clock();

	virtqueue_notify(vi->vq);
	vi->notify_ns += local_clock() - t0;
}

#endif
static void vfh_send(struct virtio_freqhint *vi)
{
	struct virtio_freqhint_hints *buf;
	struct scatterlist sg;
	unsigned int i, n;
	bool more;
	int err;

	mutex_lock(&vi->lock);
	/* An event buffer the queue refused is offered again from there. */
	if (vi->event_unposted && vi->link_up)
		kthread_queue_work(vi->worker, &vi->event_work);
	/* Indexes are known once CPU_IDS arrived, which kicks again. */
	if (!vi->link_up || (vi->has_cpu_id && !vi->have_ids))
		goto out;
	vfh_reclaim(vi);
	if (!vi->free_bufs) {
		/* The device is inside its own rate window; its callback kicks. */
		vi->stats.send_deferred++;
		goto out;
	}
	i = __ffs(vi->free_bufs);
	buf = vfh_buf(vi, i);
	n = vfh_transport_build(vi, buf, &more);
	if (!n)
		goto out;
	sg_init_one(&sg, buf, vfh_buf_size(n));
	err = virtqueue_add_outbuf(vi->vq, &sg, 1, buf, GFP_KERNEL);
	if (err) {
		vi->stats.send_errors++;
		vfh_gather_mark_all_dirty(&vi->gather);
		goto out;
	}
	vi->free_bufs &= ~BIT(i);
	if (virtqueue_kick_prepare(vi->vq) || vfh_every())
#ifdef FH_OWN_TIME
		vfh_timed_notify(vi);
#else
		virtqueue_notify(vi->vq);
#endif
	WRITE_ONCE(vi->last_send, jiffies);
	vi->stats.buffers_sent++;
	vi->stats.records_sent += n;
	if (more)
		vfh_transport_kick(vi);
out:
	mutex_unlock(&vi->lock);
}

/*
 * One work item of the worker (a send, the hintq's or a link's; the
 * device's events; feedback applied): its run is charged to the CPU it
 * ran on, where it counts as idle (gather.c).
 */
void vfh_transport_work(struct virtio_freqhint *vi,
			void (*fn)(struct virtio_freqhint *vi))
{
	struct vfh_worker_run run;

	vfh_gather_work_begin(&vi->gather, &run);
	fn(vi);
	vfh_gather_work_end(&vi->gather, &run);
}

static void vfh_send_work(struct kthread_work *work)
{
	struct virtio_freqhint *vi = container_of(work, struct virtio_freqhint,
						  send_work.work);

	vfh_transport_work(vi, vi->send_fn ?: vfh_send);
}

/*
 * Probe: the worker (sender and event handler); the link stays down until
 * vfh_transport_link().  The sender is the hintq's, or the link's own
 * (->send_fn, vsock.c).
 */
int vfh_transport_start(struct virtio_freqhint *vi)
{
	struct kthread_worker *w;

	w = kthread_create_worker(0, "virtio_freqhint");
	if (IS_ERR(w))
		return PTR_ERR(w);
	vi->worker = w;
	kthread_init_delayed_work(&vi->send_work, vfh_send_work);
	vfh_gather_set_sender(&vi->gather, w->task);
	return 0;
}

/*
 * Up after DRIVER_OK; down before the device is reset: once the
 * link is down no send or event handler touches a queue.
 */
void vfh_transport_link(struct virtio_freqhint *vi, bool up)
{
	mutex_lock(&vi->lock);
	if (up) {
		vi->free_bufs = GENMASK(vi->num_bufs - 1, 0);
		WRITE_ONCE(vi->last_send, jiffies - msecs_to_jiffies(1000));
	}
	WRITE_ONCE(vi->link_up, up);
	mutex_unlock(&vi->lock);
}

/* After the reset and its callbacks: no send is pending or running. */
void vfh_transport_stop(struct virtio_freqhint *vi)
{
	kthread_cancel_delayed_work_sync(&vi->send_work);
}

/* Remove, once nothing kicks any more. */
void vfh_transport_release(struct virtio_freqhint *vi)
{
	vfh_gather_set_sender(&vi->gather, NULL);
	kthread_cancel_delayed_work_sync(&vi->send_work);
	kthread_destroy_worker(vi->worker);
	vi->worker = NULL;
}

/* A (re)started device knows nothing: send every vCPU. */
void vfh_transport_resend(struct virtio_freqhint *vi)
{
	vfh_gather_mark_all_dirty(&vi->gather);
	vfh_transport_kick(vi);
}

/* sysfs, under the virtio device: what the host granted. */

static struct virtio_freqhint *vfh_from_dev(struct device *dev)
{
	return dev_to_virtio(dev)->priv;
}

#define FH_SHOW_U16(name, field)					\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	struct virtio_freqhint *vi = vfh_from_dev(dev);			\
	ssize_t ret;							\
									\
	mutex_lock(&vi->lock);						\
	ret = sysfs_emit(buf, "%u\n", (unsigned int)(field));		\
	mutex_unlock(&vi->lock);					\
	return ret;							\
}									\
static DEVICE_ATTR_RO(name)

FH_SHOW_U16(operator_floor, vi->host.operator_floor);
FH_SHOW_U16(operator_ceiling, vi->host.operator_ceiling);
FH_SHOW_U16(agent_connected, vi->host.agent);

static struct attribute *vfh_attrs[] = {
	&dev_attr_operator_floor.attr,
	&dev_attr_operator_ceiling.attr,
	&dev_attr_agent_connected.attr,
	NULL
};

static const struct attribute_group vfh_group = {
	.attrs = vfh_attrs,
};

const struct attribute_group *vfh_groups[] = {
	&vfh_group,
	NULL
};
