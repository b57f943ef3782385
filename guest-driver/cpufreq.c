// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: the cpufreq driver.  It knows nothing of virtio: the
 * virtio driver creates its state (cpufreq.h), feeds it each CPU's host
 * frequencies and limits, and is told each governor request.  It binds
 * to the auxiliary device "virtio_freqhint.cpufreq" that the virtio
 * driver adds only when the device negotiated a perf value or the host's
 * frequencies: registering with the cpufreq core is its probe.
 *
 * A vCPU has no frequency of its own, but schedutil only runs when some
 * cpufreq driver is registered, and then hands that driver a frequency that
 * already folds in the run queue's clamps.  So the module is that driver,
 * one policy per vCPU.  Its range is the host's: with
 * VIRTIO_FREQHINT_F_HOST_FREQ, the frequency class of the physical CPUs
 * the vCPU runs on (cpuinfo_{min,max}_freq and, where the host has one, its
 * frequency table), the way virtual-cpufreq shows its host's perf table.
 * Without a class the range is synthetic: 1000 kHz per capacity unit,
 * 1000..1024000 kHz.  perf = frequency * 1024 / cpuinfo_max_freq.
 *
 * The host's grants are the policy's limits: FREQ_QOS_MIN at the granted
 * floor, FREQ_QOS_MAX at the granted ceiling (each also bounded by the
 * operator's), so scaling_min_freq/scaling_max_freq show them and the
 * governor stays within them.
 *
 * A policy's range and frequency table are fixed for the policy's
 * lifetime, like virtual-cpufreq's: built in ->init from the frequencies
 * known then, never written while the policy exists (schedutil's fast path
 * reads them without any lock).  The driver is registered once, after the
 * host said which frequencies each vCPU has; when they change later, a
 * CPU's next policy (a hot-added CPU's, or after the driver is bound
 * again) starts with the new ones, and the live policies keep theirs:
 * re-registering the system's cpufreq driver would drop every policy's
 * governor and user limits.  Grants only move the QoS limits.  The table
 * lives in per-CPU storage allocated at probe: nothing is allocated after.
 *
 * ->get only with VIRTIO_FREQHINT_F_CUR_FREQ (vfh_cpufreq_use_cur()):
 * without it a vCPU's frequency cannot be read, and cpuinfo_cur_freq must
 * not exist then (Documentation/admin-guide/pm/cpufreq.rst); the core
 * keeps policy->cur, which scaling_cur_freq shows.  With it, ->get is the
 * frequency the host last sampled on the physical CPU the vCPU ran on,
 * as virtual-cpufreq's ->get reads its host's, and that frequency is the
 * scheduler's frequency-invariance source where the kernel takes one
 * from a driver (arm64: vfh_cpufreq_fie_tick()).  ->online/->offline
 * keep a policy, its table and its QoS requests across CPU hotplug.
 * dvfs_possible_from_any_cpu stays false: a request is that vCPU's own
 * report, so schedutil makes it on the vCPU itself.
 *
 * The cpufreq core has one driver per system; the driver's data
 * (cpufreq_get_driver_data()) is its struct vfh_cpufreq, so no state lives
 * at file scope.
 *
 * Transition notifications: .target (the governors' slow path) brackets
 * each change with cpufreq_freq_transition_begin()/end() as the core
 * expects of a ->target driver; the fast path (.fast_switch) sends none,
 * as the core expects there.  CPUFREQ_CONST_LOOPS: the vCPU's loops per
 * jiffy do not follow these frequencies.
 *
 * If another cpufreq driver owns the system, the probe declines, this
 * part stays off and records carry no perf value.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#ifndef FH_COMPAT_NO_AUXILIARY_BUS
#include <linux/auxiliary_bus.h>
#endif
#include <linux/cpufreq.h>
#include <linux/minmax.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/pm_qos.h>
#include <linux/slab.h>
#include <linux/version.h>
#include <linux/sched.h>
#ifdef CONFIG_GENERIC_ARCH_TOPOLOGY
#include <linux/arch_topology.h>
#endif

#include "cpufreq.h"

#ifdef CONFIG_GENERIC_ARCH_TOPOLOGY
#ifndef FH_COMPAT_NO_SCALE_FREQ_VIRT
#define FH_SCALE_FREQ_SOURCE	SCALE_FREQ_SOURCE_VIRT
#else
/*
 * Kernels before SCALE_FREQ_SOURCE_VIRT (6.12 and older; Kbuild detects
 * it out of tree).  The value only names the source, so that clearing it
 * removes this driver's and no other: topology_set_scale_freq_source()
 * replaces any source but SCALE_FREQ_SOURCE_ARCH (the CPU's own activity
 * counters, which rightly win over a host's sample), and
 * topology_clear_scale_freq_source() clears only the source it is given.
 * The one other SCALE_FREQ_SOURCE_CPPC user is cppc_cpufreq, which sets
 * and clears it only from its own policies' ->init and ->exit, while it
 * is the system's cpufreq driver; this driver sets it only while it is,
 * and there is one such driver at a time, so the two never meet.
 */
#define FH_SCALE_FREQ_SOURCE	SCALE_FREQ_SOURCE_CPPC
#endif
#endif

struct vfh_cpu {
	struct vfh_cpufreq *cf;
	struct vfh_freq want;	/* the host's latest, for the next ->init */
	struct vfh_freq freq;	/* the live policy's, fixed from ->init to ->exit */
	bool live;
	struct cpufreq_frequency_table table[VIRTIO_FREQHINT_MAX_FREQS + 1];
	struct freq_qos_request min_req;
	struct freq_qos_request max_req;
	u16 floor;
	u16 ceiling;
	/*
	 * Read without a lock (->get, the tick), each written with one store:
	 * the host's current frequency (0: unknown), and the frequency the
	 * governor last asked for.
	 */
	u32 cur_khz;
	u32 req_khz;
	bool fie;		/* the policy is the CPU's invariance source */
	unsigned long fie_ticks;	/* vfh_cpufreq_fie_tick() runs, on the CPU */
};

struct vfh_cpufreq {
	struct cpufreq_driver driver;
	const struct vfh_cpufreq_ops *ops;
	void *data;
	/* Serialises frequencies and limits with adding/removing QoS requests. */
	struct mutex lock;
	struct vfh_cpu __percpu *cpus;
	bool registered;
#ifndef FH_COMPAT_NO_AUXILIARY_BUS
	struct vfh_cpufreq_adev *adev;
#endif
	bool use_cur;		/* VIRTIO_FREQHINT_F_CUR_FREQ: ->get, invariance */
#ifdef CONFIG_GENERIC_ARCH_TOPOLOGY
	struct scale_freq_data sfd;
#endif
};

static void vfh_request(struct cpufreq_policy *policy, unsigned int perf)
{
	struct vfh_cpu *c = policy->driver_data;

	c->cf->ops->request(c->cf->data, policy->cpu, perf);
}

static void vfh_set_khz(struct cpufreq_policy *policy, unsigned int khz)
{
	struct vfh_cpu *c = policy->driver_data;

	WRITE_ONCE(c->req_khz, khz);
	vfh_request(policy, vfh_khz_to_perf(&c->freq, khz));
}

/*
 * ->get (with VIRTIO_FREQHINT_F_CUR_FREQ): the host's current frequency
 * for @cpu.  While the host does not know it, the frequency the governor
 * last asked for, which is policy->cur: ->get must not return 0, since
 * the core then fails the policy's creation and warns in
 * cpufreq_update_policy().
 */
static unsigned int vfh_cpufreq_get(unsigned int cpu)
{
	struct vfh_cpufreq *cf = cpufreq_get_driver_data();
	struct vfh_cpu *c = per_cpu_ptr(cf->cpus, cpu);

	return READ_ONCE(c->cur_khz) ?: READ_ONCE(c->req_khz);
}

#ifdef CONFIG_GENERIC_ARCH_TOPOLOGY
/*
 * The scheduler's tick on this CPU (hard irq), while this driver's policy
 * is the CPU's frequency-invariance source: arch_freq_scale is the host's
 * current frequency over the policy's highest (max_khz, the frequency
 * schedutil scales its requests against), at most 1024.  While the
 * host does not know it, the governor's last request over the same: what
 * cpufreq's own invariance (arch_set_freq_scale() at each frequency
 * change) wrote before the source was set, so that the source changes
 * nothing until the host says something.  Not 1024: that would switch the
 * vCPU to non-invariant accounting (utilization as raw busy time, too
 * high whenever the host runs below max_khz) until the first value, and
 * back after each reset.
 * The source is registered only while the driver is (->init to ->exit),
 * so the driver's data is this driver's.
 */
static void vfh_cpufreq_fie_tick(void)
{
	struct vfh_cpufreq *cf = cpufreq_get_driver_data();
	struct vfh_cpu *c = this_cpu_ptr(cf->cpus);
	u64 khz = READ_ONCE(c->cur_khz) ?: READ_ONCE(c->req_khz);
	u64 scale = div_u64(khz << SCHED_CAPACITY_SHIFT, c->freq.max_khz);

	this_cpu_write(arch_freq_scale, min_t(u64, scale, SCHED_CAPACITY_SCALE));
	WRITE_ONCE(c->fie_ticks, c->fie_ticks + 1);
}

/* Through the policy's lifetime (->init to ->exit), with CUR_FREQ. */
static void vfh_fie_start(struct vfh_cpufreq *cf, struct cpufreq_policy *policy,
			  struct vfh_cpu *c)
{
	if (!cf->use_cur)
		return;
	topology_set_scale_freq_source(&cf->sfd, cpumask_of(policy->cpu));
	c->fie = true;
}

static void vfh_fie_stop(struct cpufreq_policy *policy, struct vfh_cpu *c)
{
	if (!c->fie)
		return;
	/* It waits until no tick runs the callback any more. */
	topology_clear_scale_freq_source(FH_SCALE_FREQ_SOURCE,
					 cpumask_of(policy->cpu));
	c->fie = false;
}
#else
/*
 * x86 and the rest: the kernel takes no frequency-invariance source from
 * a driver (x86's is APERF/MPERF or nothing), so perf stays relative to
 * the vCPU's current frequency there.
 */
static void vfh_fie_start(struct vfh_cpufreq *cf, struct cpufreq_policy *policy,
			  struct vfh_cpu *c)
{
}

static void vfh_fie_stop(struct cpufreq_policy *policy, struct vfh_cpu *c)
{
}
#endif

/* Called from scheduler context: a store, nothing else; no notification. */
static unsigned int vfh_cpufreq_fast_switch(struct cpufreq_policy *policy,
					    unsigned int target_freq)
{
	vfh_set_khz(policy, target_freq);
	return target_freq;
}

#ifdef FH_HAVE_UPDATE_UCLAMP
/*
 * schedutil's clamps for @cpu (the cpufreq core's ->update_uclamp): passed
 * on as they are.  No policy is given: the driver's data is the system's
 * driver's, which is this one while the callback can run.
 */
static void vfh_cpufreq_update_uclamp(unsigned int cpu, unsigned long util_min,
				      unsigned long util_max)
{
	struct vfh_cpufreq *cf = cpufreq_get_driver_data();

	cf->ops->uclamp(cf->data, cpu, util_min, util_max);
}
#endif

static int vfh_cpufreq_target(struct cpufreq_policy *policy,
			      unsigned int target_freq, unsigned int relation)
{
	struct cpufreq_freqs freqs;

	freqs.old = policy->cur;
	freqs.new = clamp(target_freq, policy->min, policy->max);
	freqs.flags = 0;
	cpufreq_freq_transition_begin(policy, &freqs);
	vfh_set_khz(policy, freqs.new);
	cpufreq_freq_transition_end(policy, &freqs, 0);
	return 0;
}

static int vfh_cpufreq_verify(struct cpufreq_policy_data *policy)
{
	if (policy->freq_table)
		return cpufreq_frequency_table_verify(policy, policy->freq_table);
	cpufreq_verify_within_cpu_limits(policy);
	return 0;
}

/*
 * ->init: take the host's latest frequencies for this policy's lifetime.
 * The core validates and sorts the table after ->init returns.
 */
static void vfh_init_freq(struct cpufreq_policy *policy, struct vfh_cpu *c)
{
	unsigned int i;

	c->freq = c->want;
	memset(c->table, 0, sizeof(c->table));
	for (i = 0; i < c->freq.n; i++) {
		c->table[i].driver_data = i;
		c->table[i].frequency = c->freq.khz[i];
	}
	c->table[i].frequency = CPUFREQ_TABLE_END;
	if (c->freq.n) {
		policy->freq_table = c->table;
	} else {
		policy->freq_table = NULL;
		policy->cpuinfo.min_freq = c->freq.min_khz;
		policy->cpuinfo.max_freq = c->freq.max_khz;
	}
	c->live = true;
}

static int vfh_cpufreq_init(struct cpufreq_policy *policy)
{
	struct vfh_cpufreq *cf = cpufreq_get_driver_data();
	struct vfh_cpu *c = per_cpu_ptr(cf->cpus, policy->cpu);
	int ret;

	mutex_lock(&cf->lock);
	policy->driver_data = c;
	vfh_init_freq(policy, c);
#if defined(CONFIG_GENERIC_ARCH_TOPOLOGY) && defined(FH_COMPAT_FREQ_REF)
	/*
	 * Out of tree, for arm64 kernels whose arch_topology starts the
	 * frequency that invariance and schedutil scale against
	 * (capacity_freq_ref) at 1 and records it once, from each CPU's
	 * first policy, and only on devicetree systems.  An ACPI guest
	 * without CPPC keeps 1 kHz there, and schedutil then asks for the
	 * lowest frequency; a CPU whose first policy was synthetic (no class
	 * from the host within the wait) keeps 1024000 kHz, capping the
	 * request at 1.25 times that.  A kernel that starts it at 0 needs
	 * neither: schedutil falls back to cpuinfo.max_freq (to the current
	 * frequency where the guest is not invariant), which is the host's.
	 */
	per_cpu(capacity_freq_ref, policy->cpu) = c->freq.max_khz;
#endif
	policy->cpuinfo.transition_latency = 0;
	/* Every version's default, written down: the host rate-limits anyway. */
	policy->transition_delay_us = 1000;
	policy->fast_switch_possible = true;
	policy->dvfs_possible_from_any_cpu = false;
	/*
	 * Until the governor's first request the vCPU asks for everything
	 * (perf 1024); cur is the highest frequency the policy shows, which
	 * is below max_khz when the host's table ends there.
	 */
	policy->cur = vfh_freq_top(&c->freq);
	WRITE_ONCE(c->req_khz, policy->cur);
	vfh_request(policy, VIRTIO_FREQHINT_SCALE);

	ret = freq_qos_add_request(&policy->constraints, &c->min_req,
				   FREQ_QOS_MIN,
				   vfh_cap_to_khz(&c->freq, c->floor));
	if (ret >= 0)
		ret = freq_qos_add_request(&policy->constraints, &c->max_req,
					   FREQ_QOS_MAX,
					   vfh_cap_to_khz(&c->freq, c->ceiling));
	if (ret < 0 && freq_qos_request_active(&c->min_req))
		freq_qos_remove_request(&c->min_req);
	if (ret < 0)
		c->live = false;
	mutex_unlock(&cf->lock);
	if (ret < 0) {
		vfh_request(policy, FH_CPUFREQ_NONE);
		return ret;
	}
	vfh_fie_start(cf, policy, c);
	return 0;
}

/* The policy, its table and its limits stay while the CPU is offline. */
static int vfh_cpufreq_online(struct cpufreq_policy *policy)
{
	return 0;
}

static int vfh_cpufreq_offline(struct cpufreq_policy *policy)
{
	return 0;
}

static void vfh_cpufreq_teardown(struct cpufreq_policy *policy)
{
	struct vfh_cpu *c = policy->driver_data;

	vfh_fie_stop(policy, c);
	mutex_lock(&c->cf->lock);
	if (freq_qos_request_active(&c->max_req))
		freq_qos_remove_request(&c->max_req);
	if (freq_qos_request_active(&c->min_req))
		freq_qos_remove_request(&c->min_req);
	c->live = false;
	mutex_unlock(&c->cf->lock);
	vfh_request(policy, FH_CPUFREQ_NONE);
}

#ifndef FH_COMPAT_EXIT_INT
static void vfh_cpufreq_exit(struct cpufreq_policy *policy)
{
	vfh_cpufreq_teardown(policy);
}
#else
static int vfh_cpufreq_exit(struct cpufreq_policy *policy)
{
	vfh_cpufreq_teardown(policy);
	return 0;
}
#endif

static struct freq_attr *vfh_cpufreq_attr[] = {
	&cpufreq_freq_attr_scaling_available_freqs,
	NULL
};

static void vfh_update_qos(struct vfh_cpu *c)
{
	if (freq_qos_request_active(&c->min_req))
		freq_qos_update_request(&c->min_req,
					vfh_cap_to_khz(&c->freq, c->floor));
	if (freq_qos_request_active(&c->max_req))
		freq_qos_update_request(&c->max_req,
					vfh_cap_to_khz(&c->freq, c->ceiling));
}

/*
 * The host's frequencies for @cpu (process context): what its next policy
 * starts with.  A live policy keeps its own until it is created again.
 */
void vfh_cpufreq_set_freq(struct vfh_cpufreq *cf, unsigned int cpu,
			  const struct vfh_freq *f)
{
	struct vfh_cpu *c = per_cpu_ptr(cf->cpus, cpu);

	mutex_lock(&cf->lock);
	c->want = *f;
	if (!c->live)
		c->freq = *f;
	mutex_unlock(&cf->lock);
}

/* The host's floor and ceiling for @cpu (0..1024) as the policy's limits. */
void vfh_cpufreq_set_limits(struct vfh_cpufreq *cf, unsigned int cpu,
			    unsigned int floor, unsigned int ceiling)
{
	struct vfh_cpu *c = per_cpu_ptr(cf->cpus, cpu);

	mutex_lock(&cf->lock);
	c->floor = min_t(unsigned int, floor, VIRTIO_FREQHINT_SCALE);
	c->ceiling = min_t(unsigned int, ceiling, VIRTIO_FREQHINT_SCALE);
	vfh_update_qos(c);
	mutex_unlock(&cf->lock);
}

/*
 * VIRTIO_FREQHINT_F_CUR_FREQ was negotiated: ->get and, on arm64, the
 * invariance source.  Before vfh_cpufreq_attach().
 *
 * CPUFREQ_NEED_UPDATE_LIMITS: ->get makes the core set policy->cur to
 * the host's frequency (cpufreq_verify_current_freq() when a governor
 * starts), and a governor's request equal to policy->cur would then not
 * reach the driver, leaving the host the previous one.  The price:
 * schedutil then passes every update, not only changes, to
 * ->fast_switch (a store each; publication waits for a new level).
 */
void vfh_cpufreq_use_cur(struct vfh_cpufreq *cf)
{
	cf->use_cur = true;
	cf->driver.get = vfh_cpufreq_get;
	cf->driver.flags |= CPUFREQ_NEED_UPDATE_LIMITS;
}

/* The host's current frequency for @cpu, 0: unknown.  Any context. */
void vfh_cpufreq_set_cur(struct vfh_cpufreq *cf, unsigned int cpu,
			 unsigned int khz)
{
	WRITE_ONCE(per_cpu_ptr(cf->cpus, cpu)->cur_khz, khz);
}

/* What debugfs shows of @cpu's current frequency and invariance. */
void vfh_cpufreq_cur_info(struct vfh_cpufreq *cf, unsigned int cpu,
			  struct vfh_cur_info *info)
{
	struct vfh_cpu *c = per_cpu_ptr(cf->cpus, cpu);

	info->cur_khz = READ_ONCE(c->cur_khz);
	info->fie_ticks = READ_ONCE(c->fie_ticks);
#ifdef CONFIG_GENERIC_ARCH_TOPOLOGY
	info->freq_scale = READ_ONCE(per_cpu(arch_freq_scale, cpu));
#else
	info->freq_scale = 0;
#endif
}

/*
 * Register the driver.  Frequencies and limits set before this are what
 * the policies start with.  The core takes one cpufreq driver: if another
 * has the system, this one stays off, and records carry no perf value
 * (clamps and idle do not need the governor).
 */
static int vfh_cpufreq_start(struct vfh_cpufreq *cf)
{
	const char *other = cpufreq_get_current_driver();
	int ret;

	if (other) {
		pr_info("cpufreq driver %s is active: no perf requests\n",
			other);
		/* Not a failure of the device: the driver core's quiet code. */
		return -ENODEV;
	}
	ret = cpufreq_register_driver(&cf->driver);
	if (ret) {
		pr_info("cannot register cpufreq driver (%d): no perf requests\n",
			ret);
		return ret;
	}
	WRITE_ONCE(cf->registered, true);
	return 0;
}

static void vfh_cpufreq_stop(struct vfh_cpufreq *cf)
{
	if (!cf->registered)
		return;
	WRITE_ONCE(cf->registered, false);
	cpufreq_unregister_driver(&cf->driver);
}

#ifndef FH_COMPAT_NO_AUXILIARY_BUS
/*
 * The auxiliary device carries only the state's address: the state is
 * the virtio driver's (it is fed frequencies and limits from probe on,
 * bound or not), while the device may outlive it in a sysfs reference,
 * so it is allocated apart and freed by its release.
 */
struct vfh_cpufreq_adev {
	struct auxiliary_device adev;
	struct vfh_cpufreq *cf;
};

/* The device's name and the driver's: the bus matches KBUILD_MODNAME.name. */
#define VFH_CPUFREQ_ADEV	"cpufreq"

static struct vfh_cpufreq *vfh_adev_cf(struct auxiliary_device *adev)
{
	return container_of(adev, struct vfh_cpufreq_adev, adev)->cf;
}

static int vfh_cpufreq_probe(struct auxiliary_device *adev,
			     const struct auxiliary_device_id *id)
{
	return vfh_cpufreq_start(vfh_adev_cf(adev));
}

static void vfh_cpufreq_remove(struct auxiliary_device *adev)
{
	vfh_cpufreq_stop(vfh_adev_cf(adev));
}

static const struct auxiliary_device_id vfh_cpufreq_id_table[] = {
	{ .name = KBUILD_MODNAME "." VFH_CPUFREQ_ADEV },
	{ }
};
MODULE_DEVICE_TABLE(auxiliary, vfh_cpufreq_id_table);

static struct auxiliary_driver vfh_cpufreq_aux_driver = {
	.name = VFH_CPUFREQ_ADEV,
	.probe = vfh_cpufreq_probe,
	.remove = vfh_cpufreq_remove,
	.id_table = vfh_cpufreq_id_table,
};

static void vfh_adev_release(struct device *dev)
{
	kfree(container_of(dev, struct vfh_cpufreq_adev, adev.dev));
}

/*
 * Add the auxiliary device the cpufreq driver binds to (process context,
 * not while cpufreq is suspended).  Its id is always 0: one virtio device
 * or vsock link is bound at a time, and it detaches before the next one
 * attaches.
 */
int vfh_cpufreq_attach(struct vfh_cpufreq *cf, struct device *parent)
{
	struct vfh_cpufreq_adev *a;
	int ret;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	a->cf = cf;
	a->adev.name = VFH_CPUFREQ_ADEV;
	a->adev.id = 0;
	a->adev.dev.parent = parent;
	a->adev.dev.release = vfh_adev_release;
	ret = auxiliary_device_init(&a->adev);
	if (ret) {
		kfree(a);
		return ret;
	}
	ret = auxiliary_device_add(&a->adev);
	if (ret) {
		auxiliary_device_uninit(&a->adev);
		return ret;
	}
	cf->adev = a;
	return 0;
}

/* Unbinds the cpufreq driver, if bound: its policies exit before this returns. */
void vfh_cpufreq_detach(struct vfh_cpufreq *cf)
{
	if (!cf->adev)
		return;
	auxiliary_device_delete(&cf->adev->adev);
	auxiliary_device_uninit(&cf->adev->adev);
	cf->adev = NULL;
}

int vfh_cpufreq_driver_register(void)
{
	return auxiliary_driver_register(&vfh_cpufreq_aux_driver);
}

void vfh_cpufreq_driver_unregister(void)
{
	auxiliary_driver_unregister(&vfh_cpufreq_aux_driver);
}
#else
/*
 * Kernels without the auxiliary bus (it is select-only, and a kernel
 * whose configuration selects none of its users lacks it): the virtio
 * driver registers the cpufreq driver itself, at the same moment, and
 * it cannot be unbound apart from the device.
 */
int vfh_cpufreq_attach(struct vfh_cpufreq *cf, struct device *parent)
{
	/* As a probe's outcome, which device_add() does not return. */
	vfh_cpufreq_start(cf);
	return 0;
}

void vfh_cpufreq_detach(struct vfh_cpufreq *cf)
{
	vfh_cpufreq_stop(cf);
}

int vfh_cpufreq_driver_register(void)
{
	return 0;
}

void vfh_cpufreq_driver_unregister(void)
{
}
#endif

/* Probe: every CPU starts synthetic, without limits. */
struct vfh_cpufreq *vfh_cpufreq_create(const struct vfh_cpufreq_ops *ops,
				       void *data)
{
	struct vfh_cpufreq *cf;
	unsigned int cpu;

	cf = kzalloc(sizeof(*cf), GFP_KERNEL);
	if (!cf)
		return NULL;
	cf->cpus = alloc_percpu(struct vfh_cpu);
	if (!cf->cpus) {
		kfree(cf);
		return NULL;
	}
	mutex_init(&cf->lock);
	cf->ops = ops;
	cf->data = data;
	for_each_possible_cpu(cpu) {
		struct vfh_cpu *c = per_cpu_ptr(cf->cpus, cpu);

		c->cf = cf;
		vfh_freq_synthetic(&c->freq);
		c->want = c->freq;
		c->ceiling = VIRTIO_FREQHINT_SCALE;
	}
	strscpy(cf->driver.name, "virtio-freqhint", sizeof(cf->driver.name));
	cf->driver.flags = CPUFREQ_CONST_LOOPS;
	cf->driver.init = vfh_cpufreq_init;
	cf->driver.exit = vfh_cpufreq_exit;
	cf->driver.online = vfh_cpufreq_online;
	cf->driver.offline = vfh_cpufreq_offline;
	cf->driver.verify = vfh_cpufreq_verify;
	cf->driver.target = vfh_cpufreq_target;
	cf->driver.fast_switch = vfh_cpufreq_fast_switch;
#ifdef FH_HAVE_UPDATE_UCLAMP
	cf->driver.update_uclamp = vfh_cpufreq_update_uclamp;
#endif
	cf->driver.attr = vfh_cpufreq_attr;
	cf->driver.driver_data = cf;
#ifdef CONFIG_GENERIC_ARCH_TOPOLOGY
	cf->sfd.source = FH_SCALE_FREQ_SOURCE;
	cf->sfd.set_freq_scale = vfh_cpufreq_fie_tick;
#endif
	return cf;
}

/* After vfh_cpufreq_detach(). */
void vfh_cpufreq_destroy(struct vfh_cpufreq *cf)
{
	if (!cf)
		return;
	free_percpu(cf->cpus);
	mutex_destroy(&cf->lock);
	kfree(cf);
}
