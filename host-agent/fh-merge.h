/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The merge engine: guest requests + host limits -> per-CPU decisions.
 *
 * Pure: no I/O, no main loop, no globals.  Inputs are plain values the
 * daemon gathered; outputs are plain values the backends act on.  Units
 * are capacity, 0..1024 (SCHED_CAPACITY_SCALE).  The rules follow
 * kernel/sched/core.c; each function names the kernel function it mirrors.
 */
#pragma once

#include <glib.h>

#define FH_SCALE 1024u

/* 16 bits, as on the wire and in the kernel's uclamp_se.value (11 bits):
 * one is kept per vCPU several times over (issue 29, item 7: memory per VM). */
typedef struct {
  guint16 min; /* UCLAMP_MIN */
  guint16 max; /* UCLAMP_MAX */
} FhClamp;

#define FH_CLAMP_NONE ((FhClamp){ 0, FH_SCALE })

typedef struct {
  gboolean perf_as_floor;
  double perf_headroom; /* multiplier applied to perf before it is a floor */
  gboolean perf_only;   /* MR-3: the guest's clamps ignored, perf alone (the bench's
                         * virtual-cpufreq mode, issue 40) */
} FhMergeParams;

/* A guest record, as validated by the protocol decoder. */
typedef struct {
  guint16 flags; /* VIRTIO_FREQHINT_R_* */
  guint16 clamp_min, clamp_max, perf; /* le16 on the wire */
} FhGuestHint;

/*
 * Where a vCPU thread sits on the host: the system defaults and its cgroup
 * chain below the root (outermost first; each level's own request, i.e.
 * the values of its cpu.uclamp.min/max files).  The operator's bounds are
 * not part of it: they restrict the guest's request (MR-11).
 */
typedef struct {
  FhClamp sys; /* /proc/sys/kernel/sched_util_clamp_{min,max} */
  const FhClamp *levels;
  gsize n_levels;
  /* MR-26: the thread is SCHED_FIFO or SCHED_RR, and the kernel's default
   * minimum for such threads (sched_util_clamp_min_rt_default). */
  gboolean rt;
  guint rt_min_default;
} FhChain;

typedef struct {
  FhClamp req;   /* the guest's request (MR-3..MR-5) */
  FhClamp chain; /* L: effective range of the deepest cgroup level (MR-10) */
  FhClamp grant; /* what the vCPU is granted (MR-13) */
  FhClamp eff;   /* the request restricted by operator, L and sys (MR-11, MR-12); min > max
                    only with min_default, as the kernel holds it (MR-26) */
  guint16 cap;   /* the operator ceiling, held whatever the guest reports (MR-27) */
  guint8 active; /* has a hint, not idle: contributes to its CPU (MR-6) */
  guint8 min_default; /* eff.min is the kernel's RT default minimum, not a request (MR-26) */
} FhVcpuDecision;
/* kept per vCPU and compared with memcmp(): no padding */
G_STATIC_ASSERT (sizeof (FhVcpuDecision) == 5 * sizeof (FhClamp));

/*
 * MR-30: a fall in what the guest asks waits hold_us after the higher value
 * was last asked; a rise is at once.  Three values held apart, indexed by
 * FH_HOLD_*: activity (0/1), the floor and the ceiling.
 */
enum { FH_HOLD_ACTIVE, FH_HOLD_MIN, FH_HOLD_MAX, FH_HOLD_N };

typedef struct {
  /* when the held value lapses, in ms of the caller's clock modulo 2^32,
   * compared wrap-safely; meaningful while asked < high (24 bytes a vCPU:
   * issue 29, item 7) */
  guint32 until_ms[FH_HOLD_N];
  guint16 high[FH_HOLD_N];  /* the value in force while held */
  guint16 asked[FH_HOLD_N]; /* what the guest asks now */
} FhHold;

/* MR-6's part that the record decides: a hint, not idle. */
gboolean fh_merge_guest_active (const FhGuestHint *hint);

/* The guest now asks (active, req) at now_us: start, extend or end holds. */
void fh_merge_hold_step (FhHold *hold, gboolean active, FhClamp req, gint64 now_us,
                         gint64 hold_us);

/* What is in force at now_us: returns the activity, *req the request. */
gboolean fh_merge_hold_value (const FhHold *hold, gint64 now_us, FhClamp *req);

/* The earliest lapse after now_us of a value held at now_us, or 0: none held. */
gint64 fh_merge_hold_next (const FhHold *hold, gint64 now_us);

/*
 * MR-29: a vCPU without a guest record is active while its thread ran at
 * least FH_HOST_BUSY_PERCENT of the last window, as the host sees it.  The
 * daemon then decides it with this record: active, no value of its own, so
 * its request is (0, 1024) and the operator floor and ceiling bound it
 * (MR-11).  Not a wire flag: the decoder refuses every flag outside
 * VIRTIO_FREQHINT_R_ALL, so no guest can send it.
 */
#define FH_HINT_HOST_BUSY 0x8000u
#define FH_HOST_BUSY_PERCENT 25u

/* MR-29: did a thread that ran run_ns during a window of window_ns count as busy? */
gboolean fh_merge_host_busy (guint64 run_ns, guint64 window_ns);

/* Turn a guest record into a request (MR-3..MR-5). */
FhClamp fh_merge_guest_request (const FhGuestHint *hint, const FhMergeParams *params);

/* cpu_util_update_eff() down the chain, starting at the root task group (MR-10). */
FhClamp fh_merge_chain_effective (const FhChain *chain);

/* req' = clamp(req, operator floor, operator ceiling) per clamp id (MR-11). */
FhClamp fh_merge_operator (FhClamp req, FhClamp op);

/* uclamp_tg_restrict() then uclamp_eff_get() (MR-12). */
FhClamp fh_merge_restrict (FhClamp req, FhClamp chain_eff, FhClamp sys);

/*
 * The minimum the kernel gives a real-time thread whose request sets none
 * (MR-26): __setscheduler_uclamp() / __uclamp_update_util_min_rt_default()
 * take sched_util_clamp_min_rt_default, then uclamp_eff_get() restricts it
 * like any request.
 */
guint fh_merge_rt_default_min (const FhChain *chain, FhClamp chain_eff);

/* Everything for one vCPU; op is the VM's operator floor/ceiling. */
FhVcpuDecision fh_merge_vcpu (const FhGuestHint *hint, const FhChain *chain, FhClamp op,
                              const FhMergeParams *params);

/*
 * The same with the guest's request and activity taken from hold at now_us
 * (MR-30), which the caller stepped with this hint; hold NULL: the hint's.
 */
FhVcpuDecision fh_merge_vcpu_held (const FhGuestHint *hint, const FhHold *hold, gint64 now_us,
                                   const FhChain *chain, FhClamp op, const FhMergeParams *params);

/* Grant range sent back to the guest (MR-13). */
FhClamp fh_merge_grant (FhClamp op, FhClamp chain_eff, FhClamp sys);

/*
 * perf_headroom = auto (MR-4): 0.8 for the uclamp backend on a schedutil
 * host older than Linux 6.8, else 1.0.  kernel_release is the content of
 * /proc/sys/kernel/osrelease (NULL or unparsable: not known to be older).
 * *reason (may be NULL) gets a static explanation for logs and telemetry.
 */
double fh_merge_auto_headroom (gboolean uclamp_backend, const char *governor,
                               const char *kernel_release, const char **reason);

/* One vCPU placed on a CPU, input to aggregation. */
typedef struct {
  gboolean active;
  FhClamp eff;
  guint cpu;
} FhPlacedVcpu;

typedef struct {
  gboolean active; /* at least one active vCPU: otherwise original limits apply */
  guint floor;
  guint ceiling;
  guint n_active;
  /* MR-27: a vCPU is placed here, active or not; nothing above cap then */
  gboolean capped;
  guint cap;
} FhCpuDecision;

/*
 * Aggregate active vCPUs per CPU like a run queue aggregates runnable tasks
 * (uclamp_rq_inc_id()/uclamp_rq_max_value(): max of mins, max of maxes; in
 * uclamp_rq_util_with() the min wins an inversion).  cpus has n_cpus
 * entries; vCPUs placed on CPUs >= n_cpus are ignored.
 */
void fh_merge_aggregate_cpus (const FhPlacedVcpu *vcpus, gsize n_vcpus, FhCpuDecision *cpus,
                              gsize n_cpus);

/* One vCPU placed on a CPU, active or not, and its VM's ceiling (MR-27). */
typedef struct {
  guint cpu;
  guint cap;
} FhPlacedCap;

/*
 * MR-27, after fh_merge_aggregate_cpus(): each CPU holding a placed vCPU is
 * capped at the highest ceiling among them, idle, unhinted or active.
 */
void fh_merge_cap_cpus (const FhPlacedCap *caps, gsize n_caps, FhCpuDecision *cpus, gsize n_cpus);

/* The same over a set of CPUs (a cpufreq policy). */
FhCpuDecision fh_merge_aggregate_set (const FhCpuDecision *cpus, gsize n_cpus, const guint *members,
                                      gsize n_members);

/*
 * The aggregation of fh_merge_aggregate_cpus() for one CPU, kept up to date
 * one vCPU at a time: the max of the active floors and of the active
 * ceilings, each with how many vCPUs hold it.  Adding a contribution or
 * removing one that does not hold a maximum alone is O(1); removing the last
 * holder of a maximum loses it, and fh_merge_agg_remove() then returns FALSE:
 * the caller clears the aggregate and adds the CPU's active vCPUs again.
 * fh_merge_agg_decision() is what fh_merge_aggregate_cpus() gives that CPU.
 */
typedef struct {
  guint n_active;
  guint floor, n_floor;
  guint ceiling, n_ceiling;
  /* MR-27: the vCPUs placed here, active or not, and the max of their caps */
  guint n_capped;
  guint cap, n_cap;
} FhCpuAgg;

void fh_merge_agg_add (FhCpuAgg *agg, FhClamp eff);
gboolean fh_merge_agg_remove (FhCpuAgg *agg, FhClamp eff);
/* The same for the cap of a placed vCPU (MR-27). */
void fh_merge_agg_add_cap (FhCpuAgg *agg, guint cap);
gboolean fh_merge_agg_remove_cap (FhCpuAgg *agg, guint cap);
FhCpuDecision fh_merge_agg_decision (const FhCpuAgg *agg);
