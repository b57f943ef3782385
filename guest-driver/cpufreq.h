/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * virtio_freqhint: the interface between the virtio driver and the cpufreq
 * driver (cpufreq.c), which knows nothing of virtio.
 *
 * The virtio driver creates the cpufreq driver's state at probe, gives it
 * each CPU's host frequencies and limits, and is told each governor
 * request through ->request.  When the device negotiated something the
 * cpufreq driver needs, vfh_cpufreq_attach() adds an auxiliary device
 * (virtio_freqhint.cpufreq.0) below the virtio device, and the cpufreq
 * driver binds to it: registering with the cpufreq core is that auxiliary
 * driver's probe, leaving it is its remove, so the cpufreq half can be
 * unbound and bound again on its own (its next policies then start with
 * the host's latest frequencies).
 */
#ifndef _FREQHINT_CPUFREQ_H
#define _FREQHINT_CPUFREQ_H

#include <linux/types.h>
#include <linux/virtio_freqhint.h>

struct device;

/* Frequencies of one vCPU as its policy shows them (kHz). */
struct vfh_freq {
	u32 min_khz;
	u32 max_khz;
	u16 n;			/* 0: continuous range */
	u32 khz[VIRTIO_FREQHINT_MAX_FREQS];
};

struct vfh_cpufreq_ops {
	/*
	 * The governor's request for @cpu, 1..1024 of the policy's highest
	 * frequency (the class's max_khz), or FH_CPUFREQ_NONE when @cpu has
	 * no policy.
	 * Called from scheduler context (fast switch): no sleeping.
	 */
	void (*request)(void *data, unsigned int cpu, unsigned int perf);
	/*
	 * The run queue's clamps for @cpu as schedutil passes them on
	 * (->update_uclamp, on kernels with it: guest-driver/rfc/), when
	 * they change.  Scheduler context, @cpu's rq locked: no sleeping.
	 */
	void (*uclamp)(void *data, unsigned int cpu, unsigned long util_min,
		       unsigned long util_max);
};

#define FH_CPUFREQ_NONE		U16_MAX

struct vfh_cpufreq;

struct vfh_cpufreq *vfh_cpufreq_create(const struct vfh_cpufreq_ops *ops,
				       void *data);
int vfh_cpufreq_attach(struct vfh_cpufreq *cf, struct device *parent);
void vfh_cpufreq_detach(struct vfh_cpufreq *cf);
void vfh_cpufreq_destroy(struct vfh_cpufreq *cf);

/* The auxiliary driver, registered for the module's lifetime. */
int vfh_cpufreq_driver_register(void);
void vfh_cpufreq_driver_unregister(void);

void vfh_cpufreq_set_freq(struct vfh_cpufreq *cf, unsigned int cpu,
			  const struct vfh_freq *f);
void vfh_cpufreq_set_limits(struct vfh_cpufreq *cf, unsigned int cpu,
			    unsigned int floor, unsigned int ceiling);

/* What debugfs shows of a CPU's current frequency (cpufreq.c). */
struct vfh_cur_info {
	u32 cur_khz;		/* the host's, 0: unknown */
	unsigned long freq_scale;	/* arch_freq_scale (arm64), else 0 */
	unsigned long fie_ticks;	/* ticks that ran the invariance source */
};

void vfh_cpufreq_use_cur(struct vfh_cpufreq *cf);
void vfh_cpufreq_set_cur(struct vfh_cpufreq *cf, unsigned int cpu,
			 unsigned int khz);
void vfh_cpufreq_cur_info(struct vfh_cpufreq *cf, unsigned int cpu,
			  struct vfh_cur_info *info);

/* scale.c: pure kHz <-> capacity helpers, KUnit-tested. */
struct vfh_levels;

void vfh_freq_synthetic(struct vfh_freq *f);
unsigned int vfh_freq_top(const struct vfh_freq *f);
unsigned int vfh_cap_to_khz(const struct vfh_freq *f, unsigned int cap);
unsigned int vfh_khz_to_perf(const struct vfh_freq *f, unsigned int khz);
void vfh_freq_levels(const struct vfh_freq *f, u16 step, struct vfh_levels *l);

#endif /* _FREQHINT_CPUFREQ_H */
