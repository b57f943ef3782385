// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: the governor's performance request.
 *
 * A vCPU has no frequency of its own, but schedutil only runs when some
 * cpufreq driver is registered, and then hands that driver a frequency that
 * already folds in the run queue's clamps.  So the module is that driver:
 * one policy per vCPU over a synthetic range where 1000 kHz is one unit of
 * capacity, i.e. cpuinfo_max_freq = 1024000 and perf = freq / 1000.  The
 * range has no table: schedutil's request reaches .fast_switch unrounded.
 *
 * No frequency ever changes, so .target sends no transition notifications
 * (they would make x86 rescale its TSC on CPUs without constant_tsc).
 *
 * The host's ceiling for a vCPU becomes a FREQ_QOS_MAX request on its
 * policy, so scaling_max_freq shows it and schedutil stays under it.
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
#include <linux/version.h>

#include "freqhint.h"

#define FH_KHZ_PER_UNIT		1000
#define FH_MAX_KHZ		(VIRTIO_FREQHINT_SCALE * FH_KHZ_PER_UNIT)

/* Serialises the ceiling values with adding/removing the QoS requests. */
static DEFINE_MUTEX(fh_perf_lock);
static DEFINE_PER_CPU(struct freq_qos_request, fh_max_req);
static DEFINE_PER_CPU(u16, fh_ceiling) = VIRTIO_FREQHINT_SCALE;
static DEFINE_PER_CPU(unsigned int, fh_cur_khz);
static bool fh_perf_registered;

static unsigned int fh_cap_to_khz(unsigned int cap)
{
	return max_t(unsigned int, cap, 1) * FH_KHZ_PER_UNIT;
}

static void fh_set_khz(struct cpufreq_policy *policy, unsigned int khz)
{
	WRITE_ONCE(*per_cpu_ptr(&fh_cur_khz, policy->cpu), khz);
	fh_gather_set_perf(policy->cpu, khz / FH_KHZ_PER_UNIT);
}

/* Called from scheduler context: a store, nothing else. */
static unsigned int fh_cpufreq_fast_switch(struct cpufreq_policy *policy,
					   unsigned int target_freq)
{
	fh_set_khz(policy, target_freq);
	return target_freq;
}

static int fh_cpufreq_target(struct cpufreq_policy *policy,
			     unsigned int target_freq, unsigned int relation)
{
	target_freq = clamp(target_freq, policy->min, policy->max);
	fh_set_khz(policy, target_freq);
	/* Nothing changed in hardware, so no transition is notified. */
	policy->cur = target_freq;
	return 0;
}

static unsigned int fh_cpufreq_get(unsigned int cpu)
{
	return READ_ONCE(*per_cpu_ptr(&fh_cur_khz, cpu));
}

static int fh_cpufreq_verify(struct cpufreq_policy_data *policy)
{
	cpufreq_verify_within_cpu_limits(policy);
	return 0;
}

static int fh_cpufreq_init(struct cpufreq_policy *policy)
{
	unsigned int cpu = policy->cpu;
	int ret;

	policy->cpuinfo.min_freq = FH_KHZ_PER_UNIT;
	policy->cpuinfo.max_freq = FH_MAX_KHZ;
	policy->min = policy->cpuinfo.min_freq;
	policy->max = policy->cpuinfo.max_freq;
	policy->cpuinfo.transition_latency = 0;
	/* Every version's default, written down: the host rate-limits anyway. */
	policy->transition_delay_us = 1000;
	policy->fast_switch_possible = true;
	policy->cur = FH_MAX_KHZ;
	fh_set_khz(policy, FH_MAX_KHZ);

	mutex_lock(&fh_perf_lock);
	ret = freq_qos_add_request(&policy->constraints,
				   per_cpu_ptr(&fh_max_req, cpu), FREQ_QOS_MAX,
				   fh_cap_to_khz(per_cpu(fh_ceiling, cpu)));
	mutex_unlock(&fh_perf_lock);
	if (ret < 0) {
		fh_gather_set_perf(cpu, FH_PERF_NONE);
		return ret;
	}
	return 0;
}

static void fh_cpufreq_teardown(struct cpufreq_policy *policy)
{
	struct freq_qos_request *req = per_cpu_ptr(&fh_max_req, policy->cpu);

	mutex_lock(&fh_perf_lock);
	if (freq_qos_request_active(req))
		freq_qos_remove_request(req);
	mutex_unlock(&fh_perf_lock);
	fh_gather_set_perf(policy->cpu, FH_PERF_NONE);
}

/* ->exit() returns void since 6.11. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
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

static struct cpufreq_driver fh_cpufreq_driver = {
	.name		= "virtio-freqhint",
	.flags		= CPUFREQ_CONST_LOOPS,
	.init		= fh_cpufreq_init,
	.exit		= fh_cpufreq_exit,
	.verify		= fh_cpufreq_verify,
	.target		= fh_cpufreq_target,
	.fast_switch	= fh_cpufreq_fast_switch,
	.get		= fh_cpufreq_get,
};

/* Reflect the host's ceiling for @cpu (0..1024) into its policy. */
void fh_perf_set_ceiling(unsigned int cpu, unsigned int cap)
{
	struct freq_qos_request *req = per_cpu_ptr(&fh_max_req, cpu);

	cap = min_t(unsigned int, cap, VIRTIO_FREQHINT_SCALE);
	mutex_lock(&fh_perf_lock);
	if (per_cpu(fh_ceiling, cpu) != cap) {
		per_cpu(fh_ceiling, cpu) = cap;
		if (freq_qos_request_active(req))
			freq_qos_update_request(req, fh_cap_to_khz(cap));
	}
	mutex_unlock(&fh_perf_lock);
}

bool fh_perf_active(void)
{
	return fh_perf_registered;
}

int fh_perf_init(void)
{
	const char *other = cpufreq_get_current_driver();
	int ret;

	if (other) {
		pr_info("cpufreq driver %s is active: no perf requests\n",
			other);
		return 0;
	}
	ret = cpufreq_register_driver(&fh_cpufreq_driver);
	if (ret) {
		/* Not fatal: clamps and idle do not need the governor. */
		pr_info("cannot register cpufreq driver (%d): no perf requests\n",
			ret);
		return 0;
	}
	fh_perf_registered = true;
	return 0;
}

void fh_perf_exit(void)
{
	if (fh_perf_registered)
		cpufreq_unregister_driver(&fh_cpufreq_driver);
	fh_perf_registered = false;
}
