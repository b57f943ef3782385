// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: the cpufreq driver.  It knows nothing of virtio: the
 * virtio driver creates it (cpufreq.h), feeds it each CPU's host
 * frequencies and limits, and is told each governor request.
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
 * No ->get: a vCPU's frequency cannot be read, and cpuinfo_cur_freq must
 * not exist then (Documentation/admin-guide/pm/cpufreq.rst); the core
 * keeps policy->cur, which scaling_cur_freq shows.  ->online/->offline
 * keep a policy, its table and its QoS requests across CPU hotplug.
 * dvfs_possible_from_any_cpu stays false: a request is that vCPU's own
 * report, so schedutil makes it on the vCPU itself.
 *
 * The cpufreq core has one driver per system; the driver's data
 * (cpufreq_get_driver_data()) is its struct fh_cpufreq, so no state lives
 * at file scope.
 *
 * Transition notifications: .target (the governors' slow path) brackets
 * each change with cpufreq_freq_transition_begin()/end() as the core
 * expects of a ->target driver; the fast path (.fast_switch) sends none,
 * as the core expects there.  CPUFREQ_CONST_LOOPS: the vCPU's loops per
 * jiffy do not follow these frequencies.
 *
 * If another cpufreq driver owns the system, this part stays off and
 * records carry no perf value.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpufreq.h>
#include <linux/minmax.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/pm_qos.h>
#include <linux/slab.h>
#include <linux/version.h>
#ifdef CONFIG_GENERIC_ARCH_TOPOLOGY
#include <linux/arch_topology.h>
#endif

#include "cpufreq.h"

struct fh_cpu {
	struct fh_cpufreq *cf;
	struct fh_freq want;	/* the host's latest, for the next ->init */
	struct fh_freq freq;	/* the live policy's, fixed from ->init to ->exit */
	bool live;
	struct cpufreq_frequency_table table[VIRTIO_FREQHINT_MAX_FREQS + 1];
	struct freq_qos_request min_req;
	struct freq_qos_request max_req;
	u16 floor;
	u16 ceiling;
};

struct fh_cpufreq {
	struct cpufreq_driver driver;
	const struct fh_cpufreq_ops *ops;
	void *data;
	/* Serialises frequencies and limits with adding/removing QoS requests. */
	struct mutex lock;
	struct fh_cpu __percpu *cpus;
	bool registered;
};

static void fh_request(struct cpufreq_policy *policy, unsigned int perf)
{
	struct fh_cpu *c = policy->driver_data;

	c->cf->ops->request(c->cf->data, policy->cpu, perf);
}

static void fh_set_khz(struct cpufreq_policy *policy, unsigned int khz)
{
	struct fh_cpu *c = policy->driver_data;

	fh_request(policy, vfh_khz_to_perf(&c->freq, khz));
}

/* Called from scheduler context: a store, nothing else; no notification. */
static unsigned int fh_cpufreq_fast_switch(struct cpufreq_policy *policy,
					   unsigned int target_freq)
{
	fh_set_khz(policy, target_freq);
	return target_freq;
}

#ifdef FH_HAVE_UPDATE_UCLAMP
/*
 * schedutil's clamps for @cpu (the cpufreq core's ->update_uclamp): passed
 * on as they are.  No policy is given: the driver's data is the system's
 * driver's, which is this one while the callback can run.
 */
static void fh_cpufreq_update_uclamp(unsigned int cpu, unsigned long util_min,
				     unsigned long util_max)
{
	struct fh_cpufreq *cf = cpufreq_get_driver_data();

	cf->ops->uclamp(cf->data, cpu, util_min, util_max);
}
#endif

static int fh_cpufreq_target(struct cpufreq_policy *policy,
			     unsigned int target_freq, unsigned int relation)
{
	struct cpufreq_freqs freqs;

	freqs.old = policy->cur;
	freqs.new = clamp(target_freq, policy->min, policy->max);
	freqs.flags = 0;
	cpufreq_freq_transition_begin(policy, &freqs);
	fh_set_khz(policy, freqs.new);
	cpufreq_freq_transition_end(policy, &freqs, 0);
	return 0;
}

static int fh_cpufreq_verify(struct cpufreq_policy_data *policy)
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
static void fh_init_freq(struct cpufreq_policy *policy, struct fh_cpu *c)
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

static int fh_cpufreq_init(struct cpufreq_policy *policy)
{
	struct fh_cpufreq *cf = cpufreq_get_driver_data();
	struct fh_cpu *c = per_cpu_ptr(cf->cpus, policy->cpu);
	int ret;

	mutex_lock(&cf->lock);
	policy->driver_data = c;
	fh_init_freq(policy, c);
#ifdef CONFIG_GENERIC_ARCH_TOPOLOGY
#ifndef FH_COMPAT_NO_FREQ_REF
	/*
	 * arm64, riscv: arch_topology records the frequency that frequency
	 * invariance and schedutil scale against (capacity_freq_ref) once,
	 * from each CPU's first policy.  A policy created again with the
	 * host's range must move it, or schedutil asks for at most 1.25 times
	 * the old maximum (the synthetic 1024000 kHz).
	 */
	per_cpu(capacity_freq_ref, policy->cpu) = c->freq.max_khz;
#endif
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
	fh_request(policy, VIRTIO_FREQHINT_SCALE);

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
		fh_request(policy, FH_CPUFREQ_NONE);
		return ret;
	}
	return 0;
}

/* The policy, its table and its limits stay while the CPU is offline. */
static int fh_cpufreq_online(struct cpufreq_policy *policy)
{
	return 0;
}

static int fh_cpufreq_offline(struct cpufreq_policy *policy)
{
	return 0;
}

static void fh_cpufreq_teardown(struct cpufreq_policy *policy)
{
	struct fh_cpu *c = policy->driver_data;

	mutex_lock(&c->cf->lock);
	if (freq_qos_request_active(&c->max_req))
		freq_qos_remove_request(&c->max_req);
	if (freq_qos_request_active(&c->min_req))
		freq_qos_remove_request(&c->min_req);
	c->live = false;
	mutex_unlock(&c->cf->lock);
	fh_request(policy, FH_CPUFREQ_NONE);
}

#ifndef FH_COMPAT_EXIT_INT
static void fh_cpufreq_exit(struct cpufreq_policy *policy)
{
	fh_cpufreq_teardown(policy);
}
#else
static int fh_cpufreq_exit(struct cpufreq_policy *policy)
{
	fh_cpufreq_teardown(policy);
	return 0;
}
#endif

static struct freq_attr *fh_cpufreq_attr[] = {
	&cpufreq_freq_attr_scaling_available_freqs,
	NULL
};

static void fh_update_qos(struct fh_cpu *c)
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
void vfh_cpufreq_set_freq(struct fh_cpufreq *cf, unsigned int cpu,
			  const struct fh_freq *f)
{
	struct fh_cpu *c = per_cpu_ptr(cf->cpus, cpu);

	mutex_lock(&cf->lock);
	c->want = *f;
	if (!c->live)
		c->freq = *f;
	mutex_unlock(&cf->lock);
}

/* The host's floor and ceiling for @cpu (0..1024) as the policy's limits. */
void vfh_cpufreq_set_limits(struct fh_cpufreq *cf, unsigned int cpu,
			    unsigned int floor, unsigned int ceiling)
{
	struct fh_cpu *c = per_cpu_ptr(cf->cpus, cpu);

	mutex_lock(&cf->lock);
	c->floor = min_t(unsigned int, floor, VIRTIO_FREQHINT_SCALE);
	c->ceiling = min_t(unsigned int, ceiling, VIRTIO_FREQHINT_SCALE);
	fh_update_qos(c);
	mutex_unlock(&cf->lock);
}

/*
 * Register the driver.  Frequencies and limits set before this are what
 * the policies start with.  Not being the system's cpufreq driver is not
 * an error: clamps and idle do not need the governor.
 */
void vfh_cpufreq_start(struct fh_cpufreq *cf)
{
	const char *other = cpufreq_get_current_driver();
	int ret;

	if (other) {
		pr_info("cpufreq driver %s is active: no perf requests\n",
			other);
		return;
	}
	ret = cpufreq_register_driver(&cf->driver);
	if (ret) {
		pr_info("cannot register cpufreq driver (%d): no perf requests\n",
			ret);
		return;
	}
	WRITE_ONCE(cf->registered, true);
}

void vfh_cpufreq_stop(struct fh_cpufreq *cf)
{
	if (!cf->registered)
		return;
	WRITE_ONCE(cf->registered, false);
	cpufreq_unregister_driver(&cf->driver);
}

/* Probe: every CPU starts synthetic, without limits. */
struct fh_cpufreq *vfh_cpufreq_create(const struct fh_cpufreq_ops *ops,
				      void *data)
{
	struct fh_cpufreq *cf;
	unsigned int cpu;

	cf = kzalloc(sizeof(*cf), GFP_KERNEL);
	if (!cf)
		return NULL;
	cf->cpus = alloc_percpu(struct fh_cpu);
	if (!cf->cpus) {
		kfree(cf);
		return NULL;
	}
	mutex_init(&cf->lock);
	cf->ops = ops;
	cf->data = data;
	for_each_possible_cpu(cpu) {
		struct fh_cpu *c = per_cpu_ptr(cf->cpus, cpu);

		c->cf = cf;
		vfh_freq_synthetic(&c->freq);
		c->want = c->freq;
		c->ceiling = VIRTIO_FREQHINT_SCALE;
	}
	strscpy(cf->driver.name, "virtio-freqhint", sizeof(cf->driver.name));
	cf->driver.flags = CPUFREQ_CONST_LOOPS;
	cf->driver.init = fh_cpufreq_init;
	cf->driver.exit = fh_cpufreq_exit;
	cf->driver.online = fh_cpufreq_online;
	cf->driver.offline = fh_cpufreq_offline;
	cf->driver.verify = fh_cpufreq_verify;
	cf->driver.target = fh_cpufreq_target;
	cf->driver.fast_switch = fh_cpufreq_fast_switch;
#ifdef FH_HAVE_UPDATE_UCLAMP
	cf->driver.update_uclamp = fh_cpufreq_update_uclamp;
#endif
	cf->driver.attr = fh_cpufreq_attr;
	cf->driver.driver_data = cf;
	return cf;
}

/* After vfh_cpufreq_stop(). */
void vfh_cpufreq_destroy(struct fh_cpufreq *cf)
{
	if (!cf)
		return;
	free_percpu(cf->cpus);
	mutex_destroy(&cf->lock);
	kfree(cf);
}
