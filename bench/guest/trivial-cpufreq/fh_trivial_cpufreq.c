// SPDX-License-Identifier: GPL-2.0-only
/*
 * A cpufreq driver that drives nothing, for bench/guest's guest-cost
 * figure only: the cost of having a cpufreq driver under schedutil at all
 * (the governor's update hooks on every utilisation change), apart from
 * what virtio_freqhint adds to it.  Every CPU has its own policy with a
 * fixed table; a frequency request is only recorded.  The policy set-up
 * follows virtio_freqhint's (fast switch from the CPU itself, 1 ms between
 * requests), so that the two drivers cost schedutil the same.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpufreq.h>
#include <linux/module.h>
#include <linux/percpu.h>

static struct cpufreq_frequency_table fh_trivial_table[] = {
	{ .frequency = 800000 },
	{ .frequency = 1600000 },
	{ .frequency = 2400000 },
	{ .frequency = 3200000 },
	{ .frequency = CPUFREQ_TABLE_END },
};

/* The last frequency asked for, per CPU (kHz). */
static DEFINE_PER_CPU(unsigned int, fh_trivial_cur);

static int fh_trivial_init(struct cpufreq_policy *policy)
{
	policy->freq_table = fh_trivial_table;
	policy->cpuinfo.transition_latency = 0;
	policy->transition_delay_us = 1000;
	policy->fast_switch_possible = true;
	policy->dvfs_possible_from_any_cpu = false;
	policy->cur = fh_trivial_table[ARRAY_SIZE(fh_trivial_table) - 2].frequency;
	per_cpu(fh_trivial_cur, policy->cpu) = policy->cur;
	return 0;
}

static unsigned int fh_trivial_get(unsigned int cpu)
{
	return per_cpu(fh_trivial_cur, cpu);
}

static int fh_trivial_target_index(struct cpufreq_policy *policy,
				   unsigned int index)
{
	WRITE_ONCE(per_cpu(fh_trivial_cur, policy->cpu),
		   policy->freq_table[index].frequency);
	return 0;
}

static unsigned int fh_trivial_fast_switch(struct cpufreq_policy *policy,
					   unsigned int target_freq)
{
	WRITE_ONCE(per_cpu(fh_trivial_cur, policy->cpu), target_freq);
	return target_freq;
}

static struct cpufreq_driver fh_trivial_driver = {
	.name		= "fh-trivial",
	.flags		= CPUFREQ_CONST_LOOPS,
	.init		= fh_trivial_init,
	.verify		= cpufreq_generic_frequency_table_verify,
	.target_index	= fh_trivial_target_index,
	.fast_switch	= fh_trivial_fast_switch,
	.get		= fh_trivial_get,
	.attr		= cpufreq_generic_attr,
};

static int __init fh_trivial_mod_init(void)
{
	return cpufreq_register_driver(&fh_trivial_driver);
}
module_init(fh_trivial_mod_init);

static void __exit fh_trivial_mod_exit(void)
{
	cpufreq_unregister_driver(&fh_trivial_driver);
}
module_exit(fh_trivial_mod_exit);

MODULE_DESCRIPTION("cpufreq driver that only records requests (benchmark anchor)");
MODULE_LICENSE("GPL");
