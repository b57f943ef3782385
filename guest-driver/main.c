// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: report each vCPU's scheduler clamps, governor request
 * and idleness to the host through a virtio device, and show the host's
 * frequencies and grants in the guest's cpufreq policies.
 *
 * A per-device driver: everything (per-vCPU gathering, the clamp source,
 * the cpufreq driver, the samplers, the sender) starts at probe and stops
 * in remove; freeze/restore stop and restart the device side.  Without the
 * device the module does nothing.  The device describes the whole VM, so a
 * second one is refused.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/device.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>

#include "freqhint.h"

/*
 * A clamp value must hold 5 % (51/1024) of a window's clamped time to
 * count (GR-6): a property of the measurement, not of the host.
 */
#define FH_MIN_SHARE		51

/* A device from before cpu_id[]/perf_step/idle_share: these defaults. */
#define FH_OLD_PERF_STEP	16
#define FH_OLD_IDLE_SHARE	20

static DEFINE_MUTEX(fh_probe_lock);
static struct virtio_freqhint *fh_bound;
static struct virtio_freqhint *fh_hp_vi;
static enum cpuhp_state fh_hp_state;

/*
 * DRV-10: the device's index of @cpu is the i whose cpu_id[i] is the CPU's
 * firmware id (x86 APIC ID).  Computed at send time, so a CPU hot-added
 * later (its id known only from then on) is found too.
 */
int fh_vcpu_index(const struct virtio_freqhint *vi, unsigned int cpu)
{
	u32 id;
	int i;

	if (vi->old_layout)
		return cpu < vi->num_vcpus ? cpu : -ENOENT;
	id = cpu_physical_id(cpu);
	for (i = 0; i < vi->num_vcpus; i++)
		if (vi->cpu_id[i] != VIRTIO_FREQHINT_CPU_ID_NONE &&
		    vi->cpu_id[i] == id)
			return i;
	return -ENOENT;
}

/* debugfs.c: the index a record of @cpu would carry now, or -1. */
int fh_debug_vcpu_index(unsigned int cpu)
{
	struct virtio_freqhint *vi = READ_ONCE(fh_bound);

	return vi ? fh_vcpu_index(vi, cpu) : -1;
}

static u32 fh_generation(struct virtio_device *vdev)
{
	return vdev->config->generation ? vdev->config->generation(vdev) : 0;
}

#define FH_CREAD(vdev, field, ptr)	\
	virtio_cread_le(vdev, struct virtio_freqhint_config, field, ptr)

/* DEV-4 for one class; also derives its perf step. */
static bool fh_class_valid(const struct fh_freq *f, u16 step)
{
	unsigned int i;

	if (!f->min_khz || f->min_khz > f->max_khz || !step ||
	    step > VIRTIO_FREQHINT_SCALE || f->n > VIRTIO_FREQHINT_MAX_FREQS)
		return false;
	for (i = 0; i < f->n; i++)
		if (f->khz[i] < f->min_khz || f->khz[i] > f->max_khz ||
		    (i && f->khz[i] <= f->khz[i - 1]))
			return false;
	return true;
}

static void fh_read_class(struct virtio_device *vdev, unsigned int c,
			  struct fh_freq *f, u16 *step)
{
	unsigned int i;
	u16 n;

	memset(f, 0, sizeof(*f));
	FH_CREAD(vdev, freq_classes[c].min_khz, &f->min_khz);
	FH_CREAD(vdev, freq_classes[c].max_khz, &f->max_khz);
	FH_CREAD(vdev, freq_classes[c].perf_step, step);
	FH_CREAD(vdev, freq_classes[c].num_freqs, &n);
	f->n = n;
	for (i = 0; i < min_t(unsigned int, n, VIRTIO_FREQHINT_MAX_FREQS); i++)
		FH_CREAD(vdev, freq_classes[c].freqs_khz[i], &f->khz[i]);
}

/*
 * Read the host's feedback as one consistent snapshot (DRV-5).  The host
 * is trusted less than the guest kernel: a snapshot with a value out of
 * range is refused as a whole, not clamped into something the host did
 * not mean.  Called with fh_lock held.
 */
static bool fh_read_feedback(struct virtio_freqhint *vi)
{
	struct virtio_device *vdev = vi->vdev;
	bool grants = virtio_has_feature(vdev, VIRTIO_FREQHINT_F_GRANTS);
	bool host_freq = !vi->old_layout &&
			 virtio_has_feature(vdev, VIRTIO_FREQHINT_F_HOST_FREQ);
	unsigned int i;
	bool bad;
	u32 gen;

	do {
		gen = fh_generation(vdev);
		bad = false;
		FH_CREAD(vdev, status, &vi->status);
		FH_CREAD(vdev, operator_floor, &vi->operator_floor);
		FH_CREAD(vdev, operator_ceiling, &vi->operator_ceiling);
		bad |= vi->operator_floor > VIRTIO_FREQHINT_SCALE ||
		       vi->operator_ceiling > VIRTIO_FREQHINT_SCALE;
		for (i = 0; i < vi->num_vcpus; i++) {
			struct fh_grant g = { 0, VIRTIO_FREQHINT_SCALE };

			/* DRV-4: grants[] only with F_GRANTS. */
			if (grants) {
				FH_CREAD(vdev, grants[i].floor, &g.floor);
				FH_CREAD(vdev, grants[i].ceiling, &g.ceiling);
			}
			bad |= g.floor > VIRTIO_FREQHINT_SCALE ||
			       g.ceiling > VIRTIO_FREQHINT_SCALE;
			vi->grants[i] = g;
			vi->freq_class[i] = VIRTIO_FREQHINT_NO_FREQ_CLASS;
			if (host_freq)
				FH_CREAD(vdev, freq_class[i], &vi->freq_class[i]);
		}
		vi->num_freq_classes = 0;
		if (host_freq) {
			FH_CREAD(vdev, num_freq_classes, &vi->num_freq_classes);
			bad |= vi->num_freq_classes >
			       VIRTIO_FREQHINT_MAX_FREQ_CLASSES;
			vi->num_freq_classes = min_t(u16, vi->num_freq_classes,
						     VIRTIO_FREQHINT_MAX_FREQ_CLASSES);
			for (i = 0; i < vi->num_freq_classes; i++) {
				fh_read_class(vdev, i, &vi->classes[i],
					      &vi->class_step[i]);
				bad |= !fh_class_valid(&vi->classes[i],
						       vi->class_step[i]);
			}
			for (i = 0; i < vi->num_vcpus; i++)
				bad |= vi->freq_class[i] != VIRTIO_FREQHINT_NO_FREQ_CLASS &&
				       vi->freq_class[i] >= vi->num_freq_classes;
		}
	} while (gen != fh_generation(vdev));

	if (bad) {
		for (i = 0; i < vi->num_vcpus; i++) {
			vi->grants[i] = (struct fh_grant){ 0, VIRTIO_FREQHINT_SCALE };
			vi->freq_class[i] = VIRTIO_FREQHINT_NO_FREQ_CLASS;
		}
		vi->operator_floor = 0;
		vi->operator_ceiling = VIRTIO_FREQHINT_SCALE;
		vi->num_freq_classes = 0;
	}
	return !bad;
}

/* Capacity thresholds of a class's table (DRV-27, window.c). */
static void fh_class_levels(const struct fh_freq *f, u16 step,
			    struct fh_levels *l)
{
	unsigned int i;

	memset(l, 0, sizeof(*l));
	l->step = step;
	l->n = f->n;
	for (i = 0; i < f->n; i++)
		l->thr[i] = min_t(u64, div_u64((u64)f->khz[i] *
					       VIRTIO_FREQHINT_SCALE, f->max_khz),
				  VIRTIO_FREQHINT_SCALE);
}

/* Push the snapshot to the cpufreq policies and the gatherer. */
static void fh_apply_feedback(struct virtio_freqhint *vi)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		unsigned int floor = vi->operator_floor;
		unsigned int ceil = vi->operator_ceiling;
		struct fh_levels lv = { .step = vi->tune.perf_step };
		struct fh_freq f;
		int idx = fh_vcpu_index(vi, cpu);
		u8 c = VIRTIO_FREQHINT_NO_FREQ_CLASS;

		if (idx >= 0) {
			floor = max_t(unsigned int, floor, vi->grants[idx].floor);
			ceil = min_t(unsigned int, ceil, vi->grants[idx].ceiling);
			c = vi->freq_class[idx];
		}
		if (c < vi->num_freq_classes) {
			f = vi->classes[c];
			fh_class_levels(&f, vi->class_step[c], &lv);
		} else {
			fh_perf_synthetic(&f);
		}
		fh_perf_set_freq(cpu, &f);
		fh_perf_set_limits(cpu, min(floor, ceil), ceil);
		fh_gather_set_levels(cpu, &lv);
	}
}

static void fh_config_fn(struct work_struct *work)
{
	struct virtio_freqhint *vi =
		container_of(work, struct virtio_freqhint, config_work);

	mutex_lock(&fh_lock);
	vi->config_changes++;
	if (!fh_read_feedback(vi)) {
		vi->config_invalid++;
		dev_warn_ratelimited(&vi->vdev->dev,
				     "config values out of range, ignored\n");
	}
	mutex_unlock(&fh_lock);
	/* perf.c takes cpufreq locks: outside fh_lock, which sysfs shows take. */
	fh_apply_feedback(vi);
}

static void fh_config_changed(struct virtio_device *vdev)
{
	struct virtio_freqhint *vi = vdev->priv;

	schedule_work(&vi->config_work);
}

static void fh_hintq_done(struct virtqueue *vq)
{
	/* Reclaiming the buffer lets the next one go. */
	fh_transport_kick();
}

/*
 * A CPU came online, maybe one hot-added after probe whose firmware id (so
 * its vCPU index, class and grants) was unknown until now: apply the
 * configuration again, in process context.
 */
static int fh_feedback_online(unsigned int cpu)
{
	struct virtio_freqhint *vi = READ_ONCE(fh_hp_vi);

	if (vi)
		schedule_work(&vi->config_work);
	return 0;
}

static int fh_find_vq(struct virtio_freqhint *vi)
{
	vi->vq = virtio_find_single_vq(vi->vdev, fh_hintq_done, "hintq");
	return PTR_ERR_OR_ZERO(vi->vq);
}

/* The device side: queue up, link up, DRIVER_OK, send everything. */
static void fh_device_up(struct virtio_freqhint *vi)
{
	fh_transport_link(vi, true);
	virtio_device_ready(vi->vdev);
	fh_transport_resend();
}

/* The device side down: no send after this; the device is reset. */
static void fh_device_down(struct virtio_freqhint *vi)
{
	fh_transport_link(vi, false);
	/* No callbacks after the reset (virtio-pci synchronizes its IRQs). */
	virtio_reset_device(vi->vdev);
	cancel_work_sync(&vi->config_work);
}

static int probe_common(struct virtio_device *vdev)
{
	struct virtio_freqhint *vi = vdev->priv;
	int err;

	err = fh_find_vq(vi);
	if (err)
		return err;

	/*
	 * Order matters: per-vCPU state first, then the host's frequencies
	 * and limits, then the cpufreq driver (its policy init sets the first
	 * perf value, which nothing may reset afterwards), then gathering.
	 */
	fh_gather_init(&vi->tune);
	mutex_lock(&fh_lock);
	fh_read_feedback(vi);
	mutex_unlock(&fh_lock);
	fh_apply_feedback(vi);
	err = fh_perf_start();
	if (err)
		goto err_del_vqs;
	vi->perf_ok = fh_perf_active() &&
		      virtio_has_feature(vdev, VIRTIO_FREQHINT_F_PERF);
	err = fh_transport_start(vi);
	if (err)
		goto err_perf;
	err = fh_gather_start();
	if (err)
		goto err_transport;
	WRITE_ONCE(fh_hp_vi, vi);
	err = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN,
					"virtio/freqhint:feedback",
					fh_feedback_online, NULL);
	if (err < 0)
		goto err_gather;
	fh_hp_state = err;

	fh_device_up(vi);
	return 0;

err_gather:
	WRITE_ONCE(fh_hp_vi, NULL);
	fh_gather_stop();
err_transport:
	fh_transport_release(vi);
err_perf:
	fh_perf_stop();
err_del_vqs:
	vdev->config->del_vqs(vdev);
	return err;
}

static void remove_common(struct virtio_device *vdev)
{
	struct virtio_freqhint *vi = vdev->priv;

	cpuhp_remove_state_nocalls(fh_hp_state);
	WRITE_ONCE(fh_hp_vi, NULL);
	/* Stop producing first, so no kick outlives the sender. */
	fh_gather_stop();
	fh_device_down(vi);
	fh_transport_release(vi);
	fh_perf_stop();
	vdev->config->del_vqs(vdev);
}

static int fh_read_limits(struct virtio_device *vdev,
			  struct virtio_freqhint *vi)
{
	u16 window, step, idle;

	FH_CREAD(vdev, num_vcpus, &vi->num_vcpus);
	FH_CREAD(vdev, max_records, &vi->max_records);
	FH_CREAD(vdev, rate_window_ms, &window);
	FH_CREAD(vdev, perf_step, &step);
	FH_CREAD(vdev, idle_share, &idle);
	if (!vi->num_vcpus || vi->num_vcpus > VIRTIO_FREQHINT_MAX_VCPUS) {
		dev_err(&vdev->dev, "invalid num_vcpus %u\n", vi->num_vcpus);
		return -EINVAL;
	}
	/* DRV-7: a device this confused is not one to talk to. */
	if (vi->max_records < VIRTIO_FREQHINT_MIN_BATCH ||
	    vi->max_records > vi->num_vcpus) {
		dev_err(&vdev->dev, "invalid max_records %u\n",
			vi->max_records);
		return -EINVAL;
	}
	if (!window) {
		dev_err(&vdev->dev, "invalid rate_window_ms 0\n");
		return -EINVAL;
	}
	if (step > VIRTIO_FREQHINT_SCALE || idle > VIRTIO_FREQHINT_SCALE) {
		dev_err(&vdev->dev, "invalid perf_step %u or idle_share %u\n",
			step, idle);
		return -EINVAL;
	}
	/*
	 * perf_step 0 is not a valid value (DEV-25): the device predates
	 * cpu_id[], perf_step and idle_share (its configuration space ends
	 * after grants[]).  Talk to it with the earlier rules: Linux CPU
	 * numbers as indexes, fixed tuning (spec/guest-reporting.md).
	 */
	vi->old_layout = !step;
	if (vi->old_layout) {
		dev_warn(&vdev->dev, "device has no cpu_id[]: Linux CPU numbers used as vCPU indexes\n");
		step = FH_OLD_PERF_STEP;
		idle = FH_OLD_IDLE_SHARE;
	}
	vi->tune.window_ms = min_t(u16, window, 1000);
	vi->tune.perf_step = step;
	vi->tune.idle_share = idle;
	vi->tune.min_share = FH_MIN_SHARE;
	return 0;
}

static int fh_read_cpu_ids(struct virtio_device *vdev,
			   struct virtio_freqhint *vi)
{
	unsigned int i, cpu, unmapped = 0;

	for (i = 0; i < vi->num_vcpus; i++) {
		if (vi->old_layout)
			vi->cpu_id[i] = i;
		else
			FH_CREAD(vdev, cpu_id[i], &vi->cpu_id[i]);
	}
	for_each_present_cpu(cpu)
		if (fh_vcpu_index(vi, cpu) < 0)
			unmapped++;
	if (unmapped)
		dev_warn(&vdev->dev, "%u present CPUs have no vCPU index on the device: not reported\n",
			 unmapped);
	return 0;
}

static void fh_free(struct virtio_freqhint *vi)
{
	kfree(vi->freq_class);
	kfree(vi->grants);
	kfree(vi->seq);
	kfree(vi->cpu_id);
	kfree(vi->buf);
	kfree(vi);
}

static int virtfh_probe(struct virtio_device *vdev)
{
	struct virtio_freqhint *vi;
	int err;

	if (!vdev->config->get) {
		dev_err(&vdev->dev, "config access disabled\n");
		return -EINVAL;
	}

	mutex_lock(&fh_probe_lock);
	if (fh_bound) {
		dev_err(&vdev->dev, "a second virtio-freqhint device is not supported: %s already reports this guest's vCPUs\n",
			dev_name(&fh_bound->vdev->dev));
		err = -EBUSY;
		goto out_unlock;
	}

	err = -ENOMEM;
	vi = kzalloc(sizeof(*vi), GFP_KERNEL);
	if (!vi)
		goto out_unlock;
	vi->vdev = vdev;
	INIT_WORK(&vi->config_work, fh_config_fn);

	err = fh_read_limits(vdev, vi);
	if (err)
		goto err_free;
	err = -ENOMEM;
	vi->cpu_id = kcalloc(vi->num_vcpus, sizeof(*vi->cpu_id), GFP_KERNEL);
	vi->seq = kcalloc(vi->num_vcpus, sizeof(*vi->seq), GFP_KERNEL);
	vi->grants = kcalloc(vi->num_vcpus, sizeof(*vi->grants), GFP_KERNEL);
	vi->freq_class = kcalloc(vi->num_vcpus, sizeof(*vi->freq_class),
				 GFP_KERNEL);
	vi->num_bufs = fh_notify_every_change ? FH_EVERY_BUFS : 1;
	vi->buf = kcalloc(vi->num_bufs, fh_buf_size(vi->max_records),
			  GFP_KERNEL);
	if (!vi->cpu_id || !vi->seq || !vi->grants || !vi->freq_class ||
	    !vi->buf)
		goto err_free;
	err = fh_read_cpu_ids(vdev, vi);
	if (err)
		goto err_free;

	vdev->priv = vi;
	err = probe_common(vdev);
	if (err)
		goto err_priv;
	fh_bound = vi;
	mutex_unlock(&fh_probe_lock);
	fh_debugfs_init();
	dev_info(&vdev->dev, "clamps %s, perf %s, %s frequencies\n",
		 IS_ENABLED(CONFIG_UCLAMP_TASK) ? "reported" :
		 "not available (no CONFIG_UCLAMP_TASK)",
		 fh_perf_active() ? "reported" : "not available",
		 virtio_has_feature(vdev, VIRTIO_FREQHINT_F_HOST_FREQ) &&
		 !vi->old_layout ? "host" : "synthetic");
	return 0;

err_priv:
	vdev->priv = NULL;
err_free:
	fh_free(vi);
out_unlock:
	mutex_unlock(&fh_probe_lock);
	return err;
}

static void virtfh_remove(struct virtio_device *vdev)
{
	struct virtio_freqhint *vi = vdev->priv;

	fh_debugfs_exit();
	remove_common(vdev);
	mutex_lock(&fh_probe_lock);
	fh_bound = NULL;
	mutex_unlock(&fh_probe_lock);
	vdev->priv = NULL;
	fh_free(vi);
}

#ifdef CONFIG_PM_SLEEP
/*
 * Suspend: only the device side stops (queue, sends, the device is reset);
 * the per-vCPU state, the samplers and the cpufreq policies stay, like
 * virtio-rng's and virtio_balloon's non-device state.  Unregistering the
 * cpufreq driver and removing CPU hotplug states in the middle of
 * dpm_suspend() hung the suspend-to-idle test; they are not device state.
 */
static int virtfh_freeze(struct virtio_device *vdev)
{
	struct virtio_freqhint *vi = vdev->priv;

	fh_device_down(vi);
	vdev->config->del_vqs(vdev);
	return 0;
}

static int virtfh_restore(struct virtio_device *vdev)
{
	struct virtio_freqhint *vi = vdev->priv;
	int err;

	err = fh_find_vq(vi);
	if (err)
		return err;
	fh_device_up(vi);
	/* The host may have changed anything meanwhile. */
	schedule_work(&vi->config_work);
	return 0;
}
#endif

static unsigned int features[] = {
	VIRTIO_FREQHINT_F_PERF,
	VIRTIO_FREQHINT_F_GRANTS,
	VIRTIO_FREQHINT_F_HOST_FREQ,
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

module_virtio_driver(virtio_freqhint_driver);
MODULE_DESCRIPTION("Virtio frequency hint driver");
MODULE_LICENSE("GPL");
