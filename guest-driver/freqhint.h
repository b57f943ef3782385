/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * virtio_freqhint: interfaces between the module's parts.
 *
 *   gather.c     per-vCPU clamp/idle values (sched_switch probe + sampler)
 *   perf.c       cpufreq driver: schedutil's request, operator ceiling
 *   transport.c  virtio device: batching, rate window, config space
 *   debugfs.c    debug view of the per-vCPU state
 *
 * The gathering side never calls into the device: it publishes a packed
 * report per vCPU, marks the vCPU dirty and kicks the transport, which
 * decides when to send.
 */
#ifndef _FREQHINT_H
#define _FREQHINT_H

#include <linux/bitfield.h>
#include <linux/types.h>
#include <linux/virtio_freqhint.h>

/*
 * One vCPU's report, packed so it can be published and read with a single
 * atomic64 access: no torn records between the CPU writing it and the
 * send work reading it.  Values are 0..1024 (11 bits).
 */
#define FH_REP_MIN		GENMASK_ULL(10, 0)
#define FH_REP_MAX		GENMASK_ULL(21, 11)
#define FH_REP_PERF		GENMASK_ULL(32, 22)
#define FH_REP_FLAGS		GENMASK_ULL(36, 33)

static inline u64 fh_rep_pack(u16 flags, u16 min, u16 max, u16 perf)
{
	return FIELD_PREP(FH_REP_MIN, min) | FIELD_PREP(FH_REP_MAX, max) |
	       FIELD_PREP(FH_REP_PERF, perf) | FIELD_PREP(FH_REP_FLAGS, flags);
}

/* Module parameters (main.c). */
extern unsigned int fh_rate_window_ms;
extern unsigned int fh_hysteresis;
extern unsigned int fh_min_share;
extern unsigned int fh_idle_share;

/* gather.c */
int fh_gather_init(void);
void fh_gather_exit(void);
void fh_gather_set_perf(unsigned int cpu, unsigned int perf);
void fh_gather_set_window_ms(unsigned int ms);
unsigned int fh_gather_window_ms(void);
u64 fh_gather_report(unsigned int cpu);
bool fh_gather_test_and_clear_dirty(unsigned int cpu);
void fh_gather_mark_all_dirty(void);

struct fh_vcpu_stats {
	u64 report;
	bool online;
	u32 busy_permille;	/* of the last closed window */
	unsigned long switches;
	unsigned long windows;
	unsigned long publishes;
};

void fh_gather_stats(unsigned int cpu, struct fh_vcpu_stats *st);

/* perf.c */
#define FH_PERF_NONE		U16_MAX	/* no request known for the vCPU */
int fh_perf_init(void);
void fh_perf_exit(void);
bool fh_perf_active(void);
void fh_perf_set_ceiling(unsigned int cpu, unsigned int cap);

/* transport.c */
int fh_transport_init(void);
void fh_transport_exit(void);
void fh_transport_kick(void);

/* debugfs.c */
void fh_debugfs_init(void);
void fh_debugfs_exit(void);

#endif /* _FREQHINT_H */
