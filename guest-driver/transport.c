// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: the virtio device.
 *
 * One driver->device queue (hintq).  The gathering side marks vCPUs dirty
 * and kicks; one delayed work builds a single buffer carrying every dirty
 * vCPU's latest record and sends it, at most once per rate window, with at
 * most one buffer in flight.  Hints are state: a vCPU that changes again
 * before the send is simply read again, nothing queues up.
 *
 * Host feedback (grants, operator floor/ceiling) arrives in the config
 * space, is shown in sysfs and the ceiling goes to the cpufreq policies.
 *
 * vCPU numbering: the record's vcpu is the Linux CPU number.  On x86 QEMU
 * guests with the default topology Linux numbers CPUs in QEMU's cpu-index
 * order; no public interface gives the mapping in general.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/jiffies.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>
#include <linux/workqueue.h>

#include "freqhint.h"

struct fh_grant {
	u16 floor;
	u16 ceiling;
};

struct virtio_freqhint {
	struct virtio_device *vdev;
	struct virtqueue *vq;
	struct work_struct config_work;

	/* Everything below is protected by fh_lock. */
	struct virtio_freqhint_hints *buf;
	bool in_flight;
	bool perf_ok;
	u16 num_vcpus;
	u16 max_records;
	u16 rate_window_ms;
	u32 *seq;

	u16 status;
	u16 operator_floor;
	u16 operator_ceiling;
	struct fh_grant *grants;

	unsigned long buffers_sent;
	unsigned long records_sent;
	unsigned long send_deferred;
	unsigned long send_errors;
	unsigned long config_changes;
	unsigned long config_invalid;
};

/* The device in use (one per VM: its records describe the VM's vCPUs). */
static DEFINE_MUTEX(fh_lock);
static struct virtio_freqhint *fh_dev;
static bool fh_link_up;
static unsigned long fh_last_send;

static void fh_send_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(fh_send_work, fh_send_fn);

static size_t fh_buf_size(unsigned int n)
{
	return sizeof(struct virtio_freqhint_hints) +
	       n * sizeof(struct virtio_freqhint_record);
}

/* Callable from any context but NMI: irq_work, vq callback, process. */
void fh_transport_kick(void)
{
	unsigned long next, delay = 0;

	if (!READ_ONCE(fh_link_up))
		return;
	next = READ_ONCE(fh_last_send) +
	       msecs_to_jiffies(fh_gather_window_ms());
	if (time_before(jiffies, next))
		delay = next - jiffies;
	queue_delayed_work(system_unbound_wq, &fh_send_work, delay);
}

static void fh_fill_record(struct virtio_freqhint *vi, unsigned int cpu,
			   struct virtio_freqhint_record *r)
{
	u64 rep = fh_gather_report(cpu);
	u16 flags = FIELD_GET(FH_REP_FLAGS, rep);
	u16 perf = FIELD_GET(FH_REP_PERF, rep);

	if (!vi->perf_ok) {
		flags &= ~VIRTIO_FREQHINT_R_PERF_VALID;
		perf = 0;
	}
	r->vcpu = cpu_to_le16(cpu);
	r->flags = cpu_to_le16(flags);
	r->clamp_min = cpu_to_le16(FIELD_GET(FH_REP_MIN, rep));
	r->clamp_max = cpu_to_le16(FIELD_GET(FH_REP_MAX, rep));
	r->perf = cpu_to_le16(perf);
	r->reserved = 0;
	r->seq = cpu_to_le32(++vi->seq[cpu]);
}

/* Fill the buffer with dirty vCPUs; returns the record count. */
static unsigned int fh_build(struct virtio_freqhint *vi, bool *more)
{
	struct virtio_freqhint_record *recs = (void *)(vi->buf + 1);
	unsigned int cpu, n = 0;

	*more = false;
	for_each_possible_cpu(cpu) {
		if (n == vi->max_records) {
			*more = true;
			break;
		}
		if (!fh_gather_test_and_clear_dirty(cpu))
			continue;
		/* CPUs the device has no slot for are dropped (logged at probe). */
		if (cpu >= vi->num_vcpus)
			continue;
		fh_fill_record(vi, cpu, &recs[n++]);
	}
	vi->buf->msg_type = cpu_to_le16(VIRTIO_FREQHINT_MSG_HINTS);
	vi->buf->num_records = cpu_to_le16(n);
	memset(vi->buf->reserved, 0, sizeof(vi->buf->reserved));
	return n;
}

static void fh_send_fn(struct work_struct *work)
{
	struct virtio_freqhint *vi;
	struct scatterlist sg;
	unsigned int n, len;
	bool more;
	int err;

	mutex_lock(&fh_lock);
	vi = fh_dev;
	if (!vi)
		goto out;
	while (virtqueue_get_buf(vi->vq, &len))
		vi->in_flight = false;
	if (vi->in_flight) {
		/* The device is inside its own rate window; its callback kicks. */
		vi->send_deferred++;
		goto out;
	}
	n = fh_build(vi, &more);
	if (!n)
		goto out;
	sg_init_one(&sg, vi->buf, fh_buf_size(n));
	err = virtqueue_add_outbuf(vi->vq, &sg, 1, vi->buf, GFP_KERNEL);
	if (err) {
		vi->send_errors++;
		fh_gather_mark_all_dirty();
		goto out;
	}
	vi->in_flight = true;
	virtqueue_kick(vi->vq);
	WRITE_ONCE(fh_last_send, jiffies);
	vi->buffers_sent++;
	vi->records_sent += n;
	if (more)
		fh_transport_kick();
out:
	mutex_unlock(&fh_lock);
}

static void fh_hintq_done(struct virtqueue *vq)
{
	/* Reclaiming the buffer lets the next one go. */
	fh_transport_kick();
}

static u32 fh_generation(struct virtio_device *vdev)
{
	return vdev->config->generation ? vdev->config->generation(vdev) : 0;
}

/*
 * Read the host's feedback as one consistent snapshot (config generation)
 * and apply it.  The host is trusted less than the guest kernel: values
 * above the scale are refused, not clamped into something the host did
 * not mean.
 */
static void fh_config_fn(struct work_struct *work)
{
	struct virtio_freqhint *vi =
		container_of(work, struct virtio_freqhint, config_work);
	struct virtio_device *vdev = vi->vdev;
	bool grants = virtio_has_feature(vdev, VIRTIO_FREQHINT_F_GRANTS);
	u16 status, op_floor, op_ceiling;
	unsigned int i, cpu;
	bool bad;
	u32 gen;

	mutex_lock(&fh_lock);
	do {
		gen = fh_generation(vdev);
		bad = false;
		virtio_cread_le(vdev, struct virtio_freqhint_config, status,
				&status);
		virtio_cread_le(vdev, struct virtio_freqhint_config,
				operator_floor, &op_floor);
		virtio_cread_le(vdev, struct virtio_freqhint_config,
				operator_ceiling, &op_ceiling);
		bad |= op_floor > VIRTIO_FREQHINT_SCALE ||
		       op_ceiling > VIRTIO_FREQHINT_SCALE;
		for (i = 0; i < vi->num_vcpus; i++) {
			struct fh_grant g = { 0, VIRTIO_FREQHINT_SCALE };

			/* Spec DRV-4: grants[] only with F_GRANTS. */
			if (grants) {
				virtio_cread_le(vdev,
						struct virtio_freqhint_config,
						grants[i].floor, &g.floor);
				virtio_cread_le(vdev,
						struct virtio_freqhint_config,
						grants[i].ceiling, &g.ceiling);
			}
			bad |= g.floor > VIRTIO_FREQHINT_SCALE ||
			       g.ceiling > VIRTIO_FREQHINT_SCALE;
			vi->grants[i] = g;
		}
	} while (gen != fh_generation(vdev));

	vi->config_changes++;
	if (bad) {
		vi->config_invalid++;
		dev_warn_ratelimited(&vdev->dev,
				     "config values out of range, ignored\n");
		for (i = 0; i < vi->num_vcpus; i++)
			vi->grants[i] = (struct fh_grant){ 0, VIRTIO_FREQHINT_SCALE };
		op_floor = 0;
		op_ceiling = VIRTIO_FREQHINT_SCALE;
	}
	vi->status = status;
	vi->operator_floor = op_floor;
	vi->operator_ceiling = op_ceiling;

	for_each_possible_cpu(cpu) {
		unsigned int ceil = op_ceiling;

		if (cpu < vi->num_vcpus)
			ceil = min_t(unsigned int, ceil, vi->grants[cpu].ceiling);
		fh_perf_set_ceiling(cpu, ceil);
	}
	mutex_unlock(&fh_lock);
}

static void fh_config_changed(struct virtio_device *vdev)
{
	struct virtio_freqhint *vi = vdev->priv;

	schedule_work(&vi->config_work);
}

static void fh_release_ceilings(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		fh_perf_set_ceiling(cpu, VIRTIO_FREQHINT_SCALE);
}

static int probe_common(struct virtio_device *vdev)
{
	struct virtio_freqhint *vi = vdev->priv;
	int err;

	vi->buf = kzalloc(fh_buf_size(vi->max_records), GFP_KERNEL);
	if (!vi->buf)
		return -ENOMEM;

	vi->vq = virtio_find_single_vq(vdev, fh_hintq_done, "hintq");
	if (IS_ERR(vi->vq)) {
		err = PTR_ERR(vi->vq);
		goto err_free_buf;
	}
	vi->in_flight = false;
	vi->perf_ok = fh_perf_active() &&
		      virtio_has_feature(vdev, VIRTIO_FREQHINT_F_PERF);

	/* Records may be sent as soon as the link is up. */
	virtio_device_ready(vdev);

	mutex_lock(&fh_lock);
	fh_dev = vi;
	fh_gather_set_window_ms(vi->rate_window_ms);
	WRITE_ONCE(fh_last_send, jiffies - msecs_to_jiffies(1000));
	WRITE_ONCE(fh_link_up, true);
	mutex_unlock(&fh_lock);

	schedule_work(&vi->config_work);
	/* A (re)started device knows nothing: send every vCPU. */
	fh_gather_mark_all_dirty();
	fh_transport_kick();
	return 0;

err_free_buf:
	kfree(vi->buf);
	vi->buf = NULL;
	return err;
}

static void remove_common(struct virtio_device *vdev)
{
	struct virtio_freqhint *vi = vdev->priv;

	mutex_lock(&fh_lock);
	WRITE_ONCE(fh_link_up, false);
	fh_dev = NULL;
	mutex_unlock(&fh_lock);

	/* Config callbacks are already off (virtio core), so nothing requeues. */
	cancel_work_sync(&vi->config_work);
	cancel_delayed_work_sync(&fh_send_work);
	virtio_reset_device(vdev);
	vdev->config->del_vqs(vdev);
	kfree(vi->buf);
	vi->buf = NULL;

	fh_gather_set_window_ms(0);
	fh_release_ceilings();
}

static int fh_read_limits(struct virtio_device *vdev,
			  struct virtio_freqhint *vi)
{
	unsigned int nr_cpus = num_possible_cpus();

	virtio_cread_le(vdev, struct virtio_freqhint_config, num_vcpus,
			&vi->num_vcpus);
	virtio_cread_le(vdev, struct virtio_freqhint_config, max_records,
			&vi->max_records);
	virtio_cread_le(vdev, struct virtio_freqhint_config, rate_window_ms,
			&vi->rate_window_ms);
	if (!vi->num_vcpus || vi->num_vcpus > VIRTIO_FREQHINT_MAX_VCPUS) {
		dev_err(&vdev->dev, "invalid num_vcpus %u\n", vi->num_vcpus);
		return -EINVAL;
	}
	/* Spec DRV-7: a device this confused is not one to talk to. */
	if (vi->max_records < VIRTIO_FREQHINT_MIN_BATCH ||
	    vi->max_records > vi->num_vcpus) {
		dev_err(&vdev->dev, "invalid max_records %u\n",
			vi->max_records);
		return -EINVAL;
	}
	if (!vi->rate_window_ms) {
		dev_err(&vdev->dev, "invalid rate_window_ms 0\n");
		return -EINVAL;
	}
	/* Bound a silly device value; the module parameter may be larger. */
	vi->rate_window_ms = min_t(u16, vi->rate_window_ms, 1000);
	if (nr_cpus > vi->num_vcpus)
		dev_warn(&vdev->dev, "device has %u vCPU slots, guest %u CPUs: CPUs %u.. not reported\n",
			 vi->num_vcpus, nr_cpus, vi->num_vcpus);
	return 0;
}

static int virtfh_probe(struct virtio_device *vdev)
{
	struct virtio_freqhint *vi;
	unsigned int i;
	int err;

	if (!vdev->config->get) {
		dev_err(&vdev->dev, "config access disabled\n");
		return -EINVAL;
	}

	mutex_lock(&fh_lock);
	err = fh_dev ? -EBUSY : 0;
	mutex_unlock(&fh_lock);
	if (err) {
		dev_err(&vdev->dev, "only one freqhint device is supported\n");
		return err;
	}

	vi = kzalloc(sizeof(*vi), GFP_KERNEL);
	if (!vi)
		return -ENOMEM;
	vi->vdev = vdev;
	INIT_WORK(&vi->config_work, fh_config_fn);
	vi->operator_ceiling = VIRTIO_FREQHINT_SCALE;

	err = fh_read_limits(vdev, vi);
	if (err)
		goto err_free_vi;

	err = -ENOMEM;
	vi->seq = kcalloc(vi->num_vcpus, sizeof(*vi->seq), GFP_KERNEL);
	if (!vi->seq)
		goto err_free_vi;
	vi->grants = kcalloc(vi->num_vcpus, sizeof(*vi->grants), GFP_KERNEL);
	if (!vi->grants)
		goto err_free_seq;
	for (i = 0; i < vi->num_vcpus; i++)
		vi->grants[i].ceiling = VIRTIO_FREQHINT_SCALE;

	vdev->priv = vi;
	err = probe_common(vdev);
	if (err)
		goto err_free_grants;
	return 0;

err_free_grants:
	kfree(vi->grants);
err_free_seq:
	kfree(vi->seq);
err_free_vi:
	kfree(vi);
	vdev->priv = NULL;
	return err;
}

static void virtfh_remove(struct virtio_device *vdev)
{
	struct virtio_freqhint *vi = vdev->priv;

	remove_common(vdev);
	kfree(vi->grants);
	kfree(vi->seq);
	kfree(vi);
	vdev->priv = NULL;
}

#ifdef CONFIG_PM_SLEEP
static int virtfh_freeze(struct virtio_device *vdev)
{
	remove_common(vdev);
	return 0;
}

static int virtfh_restore(struct virtio_device *vdev)
{
	return probe_common(vdev);
}
#endif

/* sysfs, under the virtio device: what the host granted. */

static struct virtio_freqhint *fh_from_dev(struct device *dev)
{
	return dev_to_virtio(dev)->priv;
}

#define FH_SHOW_U16(name, field)					\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	struct virtio_freqhint *vi = fh_from_dev(dev);			\
	ssize_t ret;							\
									\
	mutex_lock(&fh_lock);						\
	ret = sysfs_emit(buf, "%u\n", (unsigned int)(field));		\
	mutex_unlock(&fh_lock);						\
	return ret;							\
}									\
static DEVICE_ATTR_RO(name)

FH_SHOW_U16(operator_floor, vi->operator_floor);
FH_SHOW_U16(operator_ceiling, vi->operator_ceiling);
FH_SHOW_U16(agent_connected, !!(vi->status & VIRTIO_FREQHINT_S_AGENT));
FH_SHOW_U16(num_vcpus, vi->num_vcpus);

static ssize_t rate_window_ms_show(struct device *dev,
				   struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", fh_gather_window_ms());
}
static DEVICE_ATTR_RO(rate_window_ms);

static ssize_t fh_show_grants(struct device *dev, char *buf, bool ceiling)
{
	struct virtio_freqhint *vi = fh_from_dev(dev);
	unsigned int i;
	int len = 0;

	mutex_lock(&fh_lock);
	for (i = 0; i < vi->num_vcpus; i++)
		len += sysfs_emit_at(buf, len, "%s%u", i ? " " : "",
				     ceiling ? vi->grants[i].ceiling :
					       vi->grants[i].floor);
	len += sysfs_emit_at(buf, len, "\n");
	mutex_unlock(&fh_lock);
	return len;
}

/* One value per vCPU, space separated, in vCPU order. */
static ssize_t granted_floor_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	return fh_show_grants(dev, buf, false);
}
static DEVICE_ATTR_RO(granted_floor);

static ssize_t granted_ceiling_show(struct device *dev,
				    struct device_attribute *attr, char *buf)
{
	return fh_show_grants(dev, buf, true);
}
static DEVICE_ATTR_RO(granted_ceiling);

static struct attribute *fh_attrs[] = {
	&dev_attr_operator_floor.attr,
	&dev_attr_operator_ceiling.attr,
	&dev_attr_agent_connected.attr,
	&dev_attr_num_vcpus.attr,
	&dev_attr_rate_window_ms.attr,
	&dev_attr_granted_floor.attr,
	&dev_attr_granted_ceiling.attr,
	NULL
};

static const struct attribute_group fh_group = {
	.attrs = fh_attrs,
};

#define FH_SHOW_STAT(name)						\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	struct virtio_freqhint *vi = fh_from_dev(dev);			\
	ssize_t ret;							\
									\
	mutex_lock(&fh_lock);						\
	ret = sysfs_emit(buf, "%lu\n", vi->name);			\
	mutex_unlock(&fh_lock);						\
	return ret;							\
}									\
static DEVICE_ATTR_RO(name)

FH_SHOW_STAT(buffers_sent);
FH_SHOW_STAT(records_sent);
FH_SHOW_STAT(send_deferred);
FH_SHOW_STAT(send_errors);
FH_SHOW_STAT(config_changes);
FH_SHOW_STAT(config_invalid);

static struct attribute *fh_stat_attrs[] = {
	&dev_attr_buffers_sent.attr,
	&dev_attr_records_sent.attr,
	&dev_attr_send_deferred.attr,
	&dev_attr_send_errors.attr,
	&dev_attr_config_changes.attr,
	&dev_attr_config_invalid.attr,
	NULL
};

static const struct attribute_group fh_stat_group = {
	.name = "statistics",
	.attrs = fh_stat_attrs,
};

static const struct attribute_group *fh_groups[] = {
	&fh_group,
	&fh_stat_group,
	NULL
};

static unsigned int features[] = {
	VIRTIO_FREQHINT_F_PERF,
	VIRTIO_FREQHINT_F_GRANTS,
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
	.driver.dev_groups	= fh_groups,
	.id_table		= id_table,
	.probe			= virtfh_probe,
	.remove			= virtfh_remove,
	.config_changed		= fh_config_changed,
#ifdef CONFIG_PM_SLEEP
	.freeze			= virtfh_freeze,
	.restore		= virtfh_restore,
#endif
};

int fh_transport_init(void)
{
	return register_virtio_driver(&virtio_freqhint_driver);
}

void fh_transport_exit(void)
{
	unregister_virtio_driver(&virtio_freqhint_driver);
	/* A kick that raced with the last remove may have queued it. */
	cancel_delayed_work_sync(&fh_send_work);
}
