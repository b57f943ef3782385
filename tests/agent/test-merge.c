/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests: the merge engine, one table row per kernel rule
 * (kernel/sched/core.c: cpu_util_update_eff, uclamp_tg_restrict,
 * uclamp_eff_get, uclamp_rq_util_with) and per agent rule of the spec.
 */
#include <glib.h>

#include <linux/virtio_freqhint.h>

#include "fh-merge.h"
#include "fh-freq.h"

#define MIN_V  VIRTIO_FREQHINT_R_MIN_VALID
#define MAX_V  VIRTIO_FREQHINT_R_MAX_VALID
#define PERF_V VIRTIO_FREQHINT_R_PERF_VALID
#define IDLE   VIRTIO_FREQHINT_R_IDLE
#define DEF    { 1024, 1024 } /* sysctl defaults: sched_util_clamp_{min,max} = 1024 */
#define OP_NONE { 0, 1024 }
#define NO_PERF FALSE, 1.0

typedef struct {
  const char *rule;
  FhClamp sys;
  gsize n_levels;
  FhClamp levels[3]; /* cgroup requests, outermost first */
  FhClamp op;        /* operator floor/ceiling (MR-11) */
  FhGuestHint hint;
  gboolean perf_as_floor;
  double headroom;
  /* expected */
  gboolean active;
  FhClamp chain; /* L */
  FhClamp eff;
  FhClamp grant;
} MergeCase;

static const MergeCase cases[] = {
  { "MR-6: no hint, flags 0 has no influence",
    DEF, 0, { }, OP_NONE, { 0, 0, 0, 0 }, NO_PERF,
    FALSE, { 0, 1024 }, { 0, 1024 }, { 0, 1024 } },
  { "MR-3: guest min/max pass through an open chain",
    DEF, 0, { }, OP_NONE, { MIN_V | MAX_V, 300, 600, 0 }, NO_PERF,
    TRUE, { 0, 1024 }, { 300, 600 }, { 0, 1024 } },
  { "MR-3: invalid fields ask nothing: floor 0, ceiling 1024",
    DEF, 0, { }, OP_NONE, { MIN_V, 300, 0, 0 }, NO_PERF,
    TRUE, { 0, 1024 }, { 300, 1024 }, { 0, 1024 } },
  { "MR-12 uclamp_tg_restrict: group floor raises the request (max of min)",
    DEF, 1, { { 205, 1024 } }, OP_NONE, { MIN_V | MAX_V, 100, 1024, 0 }, NO_PERF,
    TRUE, { 205, 1024 }, { 205, 1024 }, { 205, 1024 } },
  { "MR-12 uclamp_tg_restrict: group ceiling caps the request",
    DEF, 1, { { 0, 512 } }, OP_NONE, { MIN_V | MAX_V, 300, 800, 0 }, NO_PERF,
    TRUE, { 0, 512 }, { 300, 512 }, { 0, 512 } },
  { "MR-12 uclamp_tg_restrict: request below the range is lifted to tg_min",
    DEF, 1, { { 400, 600 } }, OP_NONE, { MIN_V | MAX_V, 100, 200, 0 }, NO_PERF,
    TRUE, { 400, 600 }, { 400, 400 }, { 400, 600 } },
  { "MR-9: cpu.uclamp.min reading \"max\" (1024) is a full floor",
    DEF, 1, { { 1024, 1024 } }, OP_NONE, { MAX_V, 0, 1024, 0 }, NO_PERF,
    TRUE, { 1024, 1024 }, { 1024, 1024 }, { 1024, 1024 } },
  { "MR-10 cpu_util_update_eff: min \"max\" capped by the level's own max",
    DEF, 1, { { 1024, 512 } }, OP_NONE, { MAX_V, 0, 1024, 0 }, NO_PERF,
    TRUE, { 512, 512 }, { 512, 512 }, { 512, 512 } },
  { "MR-10 cpu_util_update_eff: min > max in one level, min capped by max",
    DEF, 1, { { 800, 400 } }, OP_NONE, { MIN_V | MAX_V, 0, 1024, 0 }, NO_PERF,
    TRUE, { 400, 400 }, { 400, 400 }, { 400, 400 } },
  { "MR-10 nested: child floor capped by the parent's floor (code says min, doc says max)",
    DEF, 2, { { 205, 1024 }, { 512, 1024 } }, OP_NONE, { MIN_V, 0, 0, 0 }, NO_PERF,
    TRUE, { 205, 1024 }, { 205, 1024 }, { 205, 1024 } },
  { "MR-10 nested: child ceiling capped by the parent's ceiling",
    DEF, 2, { { 0, 512 }, { 0, 1024 } }, OP_NONE, { MAX_V, 0, 1024, 0 }, NO_PERF,
    TRUE, { 0, 512 }, { 0, 512 }, { 0, 512 } },
  { "MR-10 nested: child tightens the ceiling",
    DEF, 2, { { 0, 1024 }, { 0, 300 } }, OP_NONE, { MAX_V, 0, 1024, 0 }, NO_PERF,
    TRUE, { 0, 300 }, { 0, 300 }, { 0, 300 } },
  { "MR-10 nested: parent floor 0 cuts a child's floor to 0",
    DEF, 2, { { 0, 300 }, { 600, 1024 } }, OP_NONE, { MAX_V, 0, 1024, 0 }, NO_PERF,
    TRUE, { 0, 300 }, { 0, 300 }, { 0, 300 } },
  { "MR-10 nested: three levels, the tightest of each wins",
    DEF, 3, { { 800, 900 }, { 600, 1024 }, { 700, 700 } }, OP_NONE,
    { MIN_V | MAX_V, 0, 1024, 0 }, NO_PERF,
    TRUE, { 600, 700 }, { 600, 700 }, { 600, 700 } },
  { "MR-8/MR-10: system defaults are the root request: sys min caps group floors",
    { 512, 1024 }, 1, { { 1024, 1024 } }, OP_NONE, { MAX_V, 0, 1024, 0 }, NO_PERF,
    TRUE, { 512, 1024 }, { 512, 1024 }, { 512, 1024 } },
  { "MR-8/MR-10: system defaults are the root request: sys max caps group ceilings",
    { 1024, 600 }, 1, { { 0, 1024 } }, OP_NONE, { MAX_V, 0, 1024, 0 }, NO_PERF,
    TRUE, { 0, 600 }, { 0, 600 }, { 0, 600 } },
  { "MR-12 uclamp_eff_get: sys min caps the task's own floor",
    { 300, 1024 }, 0, { }, OP_NONE, { MIN_V, 800, 0, 0 }, NO_PERF,
    TRUE, { 0, 1024 }, { 300, 1024 }, { 0, 1024 } },
  { "MR-12: a root-group thread is only capped by sys (L = 0..sys_max)",
    { 1024, 400 }, 0, { }, OP_NONE, { MIN_V, 0, 0, 0 }, NO_PERF,
    TRUE, { 0, 400 }, { 0, 400 }, { 0, 400 } },
  { "MR-10: root sys min > sys max: root eff min capped by max, children follow",
    { 1024, 400 }, 1, { { 1024, 1024 } }, OP_NONE, { MIN_V, 0, 0, 0 }, NO_PERF,
    TRUE, { 400, 400 }, { 400, 400 }, { 400, 400 } },
  { "MR-11: operator floor lifts the request",
    DEF, 0, { }, { 400, 1024 }, { MAX_V, 0, 1024, 0 }, NO_PERF,
    TRUE, { 0, 1024 }, { 400, 1024 }, { 400, 1024 } },
  { "MR-11: operator ceiling caps the guest",
    DEF, 0, { }, { 0, 512 }, { MIN_V | MAX_V, 700, 1024, 0 }, NO_PERF,
    TRUE, { 0, 1024 }, { 512, 512 }, { 0, 512 } },
  { "MR-11: operator floor works under a parent with cpu.uclamp.min 0",
    DEF, 1, { { 0, 1024 } }, { 400, 1024 }, { MAX_V, 0, 1024, 0 }, NO_PERF,
    TRUE, { 0, 1024 }, { 400, 1024 }, { 400, 1024 } },
  { "MR-11: operator floor/ceiling under two default levels (machine.slice/vm.scope)",
    DEF, 2, { { 0, 1024 }, { 0, 1024 } }, { 400, 800 }, { MIN_V, 100, 0, 0 }, NO_PERF,
    TRUE, { 0, 1024 }, { 400, 800 }, { 400, 800 } },
  { "MR-11: operator floor above the guest's ceiling lifts both",
    DEF, 0, { }, { 600, 1024 }, { MAX_V, 0, 300, 0 }, NO_PERF,
    TRUE, { 0, 1024 }, { 600, 600 }, { 600, 1024 } },
  { "MR-11/MR-13: a cgroup floor above the operator ceiling wins (host has the last word)",
    DEF, 1, { { 1024, 1024 } }, { 400, 800 }, { MAX_V, 0, 1024, 0 }, NO_PERF,
    TRUE, { 1024, 1024 }, { 1024, 1024 }, { 1024, 1024 } },
  { "MR-11/MR-12: operator ceiling above the cgroup ceiling is capped by it",
    DEF, 1, { { 0, 300 } }, { 0, 800 }, { MIN_V | MAX_V, 500, 1024, 0 }, NO_PERF,
    TRUE, { 0, 300 }, { 300, 300 }, { 0, 300 } },
  { "MR-13: operator floor capped by sys min in the grant and the result",
    { 200, 1024 }, 1, { { 0, 1024 } }, { 500, 1024 }, { MAX_V, 0, 1024, 0 }, NO_PERF,
    TRUE, { 0, 1024 }, { 200, 1024 }, { 200, 1024 } },
  { "MR-6: idle vCPU: not active, holds no floor",
    DEF, 0, { }, OP_NONE, { MIN_V | MAX_V | IDLE, 900, 1024, 0 }, NO_PERF,
    FALSE, { 0, 1024 }, { 900, 1024 }, { 0, 1024 } },
  { "MR-4: perf as floor, headroom 1.0",
    DEF, 0, { }, OP_NONE, { PERF_V, 0, 0, 600 }, TRUE, 1.0,
    TRUE, { 0, 1024 }, { 600, 1024 }, { 0, 1024 } },
  { "MR-4: perf as floor, headroom 0.8 (pre-6.8 host schedutil adds 1.25 again)",
    DEF, 0, { }, OP_NONE, { PERF_V, 0, 0, 600 }, TRUE, 0.8,
    TRUE, { 0, 1024 }, { 480, 1024 }, { 0, 1024 } },
  { "MR-4: round() takes halves up (3 * 0.5 = 1.5 -> 2)",
    DEF, 0, { }, OP_NONE, { PERF_V, 0, 0, 3 }, TRUE, 0.5,
    TRUE, { 0, 1024 }, { 2, 1024 }, { 0, 1024 } },
  { "MR-4: perf ignored when perf_as_floor is off",
    DEF, 0, { }, OP_NONE, { PERF_V, 0, 0, 600 }, FALSE, 1.0,
    TRUE, { 0, 1024 }, { 0, 1024 }, { 0, 1024 } },
  { "MR-4: perf floor above the guest's own ceiling is capped at it",
    DEF, 0, { }, OP_NONE, { MAX_V | PERF_V, 0, 400, 800 }, TRUE, 1.0,
    TRUE, { 0, 1024 }, { 400, 400 }, { 0, 1024 } },
  { "MR-4: perf floor with headroom still capped at the guest's ceiling",
    DEF, 0, { }, OP_NONE, { MAX_V | PERF_V, 0, 300, 500 }, TRUE, 0.8,
    TRUE, { 0, 1024 }, { 300, 300 }, { 0, 1024 } },
  { "MR-4: perf below the explicit floor does not lower it",
    DEF, 0, { }, OP_NONE, { MIN_V | PERF_V, 700, 0, 300 }, TRUE, 1.0,
    TRUE, { 0, 1024 }, { 700, 1024 }, { 0, 1024 } },
  { "MR-4/MR-12: perf floor restricted by the cgroup ceiling",
    DEF, 1, { { 0, 512 } }, OP_NONE, { PERF_V, 0, 0, 900 }, TRUE, 1.0,
    TRUE, { 0, 512 }, { 512, 512 }, { 0, 512 } },
  { "MR-1/MR-4: perf 1024 with headroom > 1 saturates at scale",
    DEF, 0, { }, OP_NONE, { PERF_V, 0, 0, 1024 }, TRUE, 1.25,
    TRUE, { 0, 1024 }, { 1024, 1024 }, { 0, 1024 } },
};

static void
test_vcpu_table (void)
{
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
    const MergeCase *c = &cases[i];
    FhChain chain = { c->sys, c->levels, c->n_levels };
    FhMergeParams params = { c->perf_as_floor, c->headroom };
    FhVcpuDecision d = fh_merge_vcpu (&c->hint, &chain, c->op, &params);

    g_test_message ("case %zu: %s", i, c->rule);
    g_assert_cmpint (d.active, ==, c->active);
    g_assert_cmpuint (d.chain.min, ==, c->chain.min);
    g_assert_cmpuint (d.chain.max, ==, c->chain.max);
    g_assert_cmpuint (d.eff.min, ==, c->eff.min);
    g_assert_cmpuint (d.eff.max, ==, c->eff.max);
    g_assert_cmpuint (d.grant.min, ==, c->grant.min);
    g_assert_cmpuint (d.grant.max, ==, c->grant.max);
    /* Invariants of every decision (MR-12, MR-13). */
    g_assert_cmpuint (d.eff.min, <=, d.eff.max);
    g_assert_cmpuint (d.eff.max, <=, c->sys.max);
    g_assert_cmpuint (d.eff.min, <=, c->sys.min);
    g_assert_cmpuint (d.chain.min, <=, d.chain.max);
    g_assert_cmpuint (d.grant.min, <=, d.grant.max);
    g_assert_cmpuint (d.eff.min, >=, d.grant.min);
    g_assert_cmpuint (d.eff.max, <=, d.grant.max);
  }
}

/* perf_only (the bench's virtual-cpufreq mode): the clamps are dropped, perf stays. */
static void
test_perf_only (void)
{
  FhGuestHint h = { MIN_V | MAX_V | PERF_V, 800, 300, 600 };
  FhMergeParams with = { TRUE, 1.0, FALSE }, only = { TRUE, 1.0, TRUE }, neither = { FALSE, 1.0, TRUE };
  FhClamp r = fh_merge_guest_request (&h, &with);

  /* the guest's floor wins over its ceiling (MR-5) */
  g_assert_cmpuint (r.min, ==, 800);
  g_assert_cmpuint (r.max, ==, 800);
  r = fh_merge_guest_request (&h, &only);
  g_assert_cmpuint (r.min, ==, 600);
  g_assert_cmpuint (r.max, ==, 1024);
  r = fh_merge_guest_request (&h, &neither);
  g_assert_cmpuint (r.min, ==, 0);
  g_assert_cmpuint (r.max, ==, 1024);
}

static void
test_grant (void)
{
  /* MR-13: operator range clamped into L, then capped by sys. */
  FhClamp g = fh_merge_grant ((FhClamp){ 0, 1024 }, (FhClamp){ 600, 1024 }, (FhClamp){ 1024, 800 });

  g_assert_cmpuint (g.min, ==, 600);
  g_assert_cmpuint (g.max, ==, 800);
  g = fh_merge_grant ((FhClamp){ 0, 1024 }, (FhClamp){ 600, 1024 }, (FhClamp){ 300, 1024 });
  g_assert_cmpuint (g.min, ==, 300);
  g = fh_merge_grant ((FhClamp){ 400, 700 }, (FhClamp){ 0, 1024 }, (FhClamp){ 1024, 1024 });
  g_assert_cmpuint (g.min, ==, 400);
  g_assert_cmpuint (g.max, ==, 700);
  g = fh_merge_grant ((FhClamp){ 400, 700 }, (FhClamp){ 800, 900 }, (FhClamp){ 1024, 1024 });
  g_assert_cmpuint (g.min, ==, 800);
  g_assert_cmpuint (g.max, ==, 800);
}

typedef struct {
  gboolean uclamp;
  const char *governor, *release;
  double want;
} HeadroomCase;

/* MR-4: 0.8 only for uclamp on a schedutil host older than 6.8. */
static void
test_auto_headroom (void)
{
  static const HeadroomCase hc[] = {
    { TRUE, "schedutil", "6.1.0-18-amd64", 0.8 },
    { TRUE, "schedutil", "5.10.0", 0.8 },
    { TRUE, "schedutil", "6.7.12", 0.8 },
    { TRUE, "schedutil", "6.8.0", 1.0 },
    { TRUE, "schedutil", "6.12.38+deb13-amd64", 1.0 },
    { TRUE, "schedutil", "7.0", 1.0 },
    { TRUE, "schedutil", "10.1.0", 1.0 },
    { TRUE, "performance", "6.1.0", 1.0 },
    { TRUE, NULL, "6.1.0", 1.0 },
    { TRUE, "", "6.1.0", 1.0 },
    { FALSE, "schedutil", "6.1.0", 1.0 },
    { TRUE, "schedutil", NULL, 1.0 },
    { TRUE, "schedutil", "", 1.0 },
    { TRUE, "schedutil", "six.one", 1.0 },
    { TRUE, "schedutil", "6", 1.0 },
    { TRUE, "schedutil", "6.", 1.0 },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (hc); i++) {
    const char *reason = NULL;
    double h = fh_merge_auto_headroom (hc[i].uclamp, hc[i].governor, hc[i].release, &reason);

    g_test_message ("headroom case %zu: %s %s %s", i, hc[i].uclamp ? "uclamp" : "cpufreq",
                    hc[i].governor ? hc[i].governor : "(none)",
                    hc[i].release ? hc[i].release : "(none)");
    g_assert_cmpfloat (h, ==, hc[i].want);
    g_assert_nonnull (reason);
  }
}

/*
 * MR-26: real-time vCPU threads.  Expected values are what the kernel's
 * effective UCLAMP_MIN/MAX would be for a SCHED_FIFO/RR task that the
 * uclamp backend set up (sched_util_min -1 when the guest sets no floor):
 * __setscheduler_uclamp()/uclamp_reset() give it
 * sched_util_clamp_min_rt_default, uclamp_tg_restrict() clamps it into the
 * group's range, uclamp_eff_get() caps it by sched_util_clamp_min.
 */
typedef struct {
  const char *rule;
  gboolean rt;
  guint rt_default;
  FhClamp sys;
  gsize n_levels;
  FhClamp levels[2];
  FhClamp op;
  FhGuestHint hint;
  gboolean perf_as_floor;
  /* expected */
  FhClamp eff;
  gboolean min_default;
  gboolean perf_only;
} RtCase;

static const RtCase rt_cases[] = {
  { "normal thread: no RT default, floor 0",
    FALSE, 1024, DEF, 0, { }, OP_NONE, { MAX_V, 0, 600, 0 }, FALSE, { 0, 600 }, FALSE },
  { "RT thread, guest sets no floor: the RT default (1024), above the max as in the kernel",
    TRUE, 1024, DEF, 0, { }, OP_NONE, { MAX_V, 0, 600, 0 }, FALSE, { 1024, 600 }, TRUE },
  { "the oracle's row: SCHED_FIFO in a group capped at 74 %, max request 707: 758/707",
    TRUE, 1024, DEF, 1, { { 0, 758 } }, OP_NONE, { MAX_V, 0, 707, 0 }, FALSE, { 758, 707 }, TRUE },
  { "RT default lowered by the sysctl",
    TRUE, 300, DEF, 0, { }, OP_NONE, { MAX_V, 0, 600, 0 }, FALSE, { 300, 600 }, TRUE },
  { "RT default 0: like a normal thread",
    TRUE, 0, DEF, 0, { }, OP_NONE, { MAX_V, 0, 600, 0 }, FALSE, { 0, 600 }, TRUE },
  { "a guest floor is a user-defined request: it replaces the RT default",
    TRUE, 1024, DEF, 0, { }, OP_NONE, { MIN_V | MAX_V, 100, 600, 0 }, FALSE, { 100, 600 }, FALSE },
  { "uclamp_tg_restrict: the group's ceiling caps the RT default",
    TRUE, 1024, DEF, 1, { { 0, 512 } }, OP_NONE, { MAX_V, 0, 1024, 0 }, FALSE, { 512, 512 }, TRUE },
  { "uclamp_tg_restrict: the group's floor lifts a low RT default",
    TRUE, 100, DEF, 1, { { 205, 1024 } }, OP_NONE, { MAX_V, 0, 1024, 0 }, FALSE, { 205, 1024 }, TRUE },
  { "uclamp_eff_get: sched_util_clamp_min caps the RT default",
    TRUE, 1024, { 400, 1024 }, 0, { }, OP_NONE, { MAX_V, 0, 1024, 0 }, FALSE, { 400, 1024 }, TRUE },
  { "a perf floor above the RT default is the guest's (no -1)",
    TRUE, 300, DEF, 0, { }, OP_NONE, { PERF_V, 0, 0, 700 }, TRUE, { 700, 1024 }, FALSE },
  { "a perf floor below the RT default adds nothing",
    TRUE, 800, DEF, 0, { }, OP_NONE, { PERF_V, 0, 0, 700 }, TRUE, { 800, 1024 }, TRUE },
  { "the operator bounds the guest, not the host's RT default",
    TRUE, 1024, DEF, 0, { }, { 0, 512 }, { MAX_V, 0, 1024, 0 }, FALSE, { 1024, 512 }, TRUE },
  { "no hint on an RT thread: the default, inactive",
    TRUE, 600, DEF, 0, { }, OP_NONE, { 0, 0, 0, 0 }, FALSE, { 600, 1024 }, TRUE },
  { "perf_only drops the guest's floor (MR-3), so the RT default stays",
    TRUE, 1024, DEF, 0, { }, OP_NONE, { MIN_V | MAX_V, 100, 600, 0 }, FALSE, { 1024, 1024 }, TRUE, TRUE },
};

static void
test_rt (void)
{
  for (gsize i = 0; i < G_N_ELEMENTS (rt_cases); i++) {
    const RtCase *c = &rt_cases[i];
    FhChain chain = { c->sys, c->levels, c->n_levels, c->rt, c->rt_default };
    FhMergeParams params = { c->perf_as_floor, 1.0, c->perf_only };
    FhVcpuDecision d;

    g_test_message ("MR-26 case: %s", c->rule);
    d = fh_merge_vcpu (&c->hint, &chain, c->op, &params);
    g_assert_cmpuint (d.eff.min, ==, c->eff.min);
    g_assert_cmpuint (d.eff.max, ==, c->eff.max);
    g_assert_cmpint (d.min_default, ==, c->min_default);
    /* only the kernel's own RT default may exceed the maximum */
    if (!d.min_default)
      g_assert_cmpuint (d.eff.min, <=, d.eff.max);
    if (d.eff.min > d.eff.max) {
      /* the minimum wins where the frequency is decided (sugov_effective_cpu_perf()) */
      FhPlacedVcpu p = { TRUE, d.eff, 0 };
      FhCpuDecision cpu;

      fh_merge_aggregate_cpus (&p, 1, &cpu, 1);
      g_assert_cmpuint (cpu.floor, ==, d.eff.min);
      g_assert_cmpuint (cpu.ceiling, ==, d.eff.min);
    }
  }
}

typedef struct {
  const char *rule;
  gsize n;
  FhPlacedVcpu vcpus[4];
  /* CPU 0 result */
  gboolean active;
  guint floor, ceiling, n_active;
} AggCase;

static const AggCase agg_cases[] = {
  { "no vCPU: original limits", 0, { }, FALSE, 0, 0, 0 },
  { "one active vCPU", 1, { { TRUE, { 300, 600 }, 0 } }, TRUE, 300, 600, 1 },
  { "two on one CPU: max of floors, max of ceilings", 2,
    { { TRUE, { 300, 600 }, 0 }, { TRUE, { 500, 550 }, 0 } }, TRUE, 500, 600, 2 },
  { "idle vCPU does not hold the floor up", 2,
    { { FALSE, { 800, 1024 }, 0 }, { TRUE, { 100, 400 }, 0 } }, TRUE, 100, 400, 1 },
  { "only idle vCPUs: original limits", 1, { { FALSE, { 800, 1024 }, 0 } }, FALSE, 0, 0, 0 },
  { "inversion: the floor wins (uclamp_rq_util_with)", 1, { { TRUE, { 700, 500 }, 0 } },
    TRUE, 700, 700, 1 },
  { "a low ceiling does not cap another vCPU's floor", 2,
    { { TRUE, { 0, 200 }, 0 }, { TRUE, { 600, 1024 }, 0 } }, TRUE, 600, 1024, 2 },
  { "vCPUs elsewhere do not count", 3,
    { { TRUE, { 900, 1024 }, 1 }, { TRUE, { 200, 300 }, 0 }, { TRUE, { 900, 900 }, 99 } },
    TRUE, 200, 300, 1 },
};

static void
test_aggregate (void)
{
  for (gsize i = 0; i < G_N_ELEMENTS (agg_cases); i++) {
    const AggCase *c = &agg_cases[i];
    FhCpuDecision cpus[4];

    g_test_message ("aggregate case: %s", c->rule);
    fh_merge_aggregate_cpus (c->vcpus, c->n, cpus, G_N_ELEMENTS (cpus));
    g_assert_cmpint (cpus[0].active, ==, c->active);
    if (c->active) {
      g_assert_cmpuint (cpus[0].floor, ==, c->floor);
      g_assert_cmpuint (cpus[0].ceiling, ==, c->ceiling);
      g_assert_cmpuint (cpus[0].n_active, ==, c->n_active);
    }
  }
}

static void
test_aggregate_policy (void)
{
  FhPlacedVcpu v[] = {
    { TRUE, { 300, 600 }, 0 },
    { TRUE, { 500, 550 }, 1 },
    { FALSE, { 1024, 1024 }, 2 },
    { TRUE, { 100, 200 }, 3 },
  };
  FhCpuDecision cpus[4], p;
  const guint pol01[] = { 0, 1 }, pol2[] = { 2 }, pol23[] = { 2, 3 }, bad[] = { 7 };

  fh_merge_aggregate_cpus (v, G_N_ELEMENTS (v), cpus, 4);
  p = fh_merge_aggregate_set (cpus, 4, pol01, 2);
  g_assert_true (p.active);
  g_assert_cmpuint (p.floor, ==, 500);
  g_assert_cmpuint (p.ceiling, ==, 600);
  g_assert_cmpuint (p.n_active, ==, 2);
  p = fh_merge_aggregate_set (cpus, 4, pol2, 1);
  g_assert_false (p.active);
  p = fh_merge_aggregate_set (cpus, 4, pol23, 2);
  g_assert_true (p.active);
  g_assert_cmpuint (p.floor, ==, 100);
  p = fh_merge_aggregate_set (cpus, 4, bad, 1);
  g_assert_false (p.active);
}

/* MR-27: placed vCPUs cap their CPU at the highest of their ceilings, active or not. */
static void
test_cap (void)
{
  static const FhClamp op25 = { 0, 256 };
  static const FhGuestHint idle = { VIRTIO_FREQHINT_R_MAX_VALID | VIRTIO_FREQHINT_R_IDLE, 0, 1024, 0 };
  static const FhGuestHint none = { 0 };
  FhChain chain = { { 1024, 1024 }, NULL, 0, FALSE, 1024 };
  FhVcpuDecision di = fh_merge_vcpu (&idle, &chain, op25, NULL);
  FhVcpuDecision dn = fh_merge_vcpu (&none, &chain, FH_CLAMP_NONE, NULL);
  FhPlacedVcpu v[] = { { di.active, di.eff, 0 }, { TRUE, { 100, 200 }, 1 }, { dn.active, dn.eff, 2 } };
  FhPlacedCap caps[] = { { 0, di.cap }, { 1, 256 }, { 1, 512 }, { 2, dn.cap } };
  const guint pol01[] = { 0, 1 }, pol02[] = { 0, 2 }, pol3[] = { 3 };
  FhCpuDecision cpus[4], p;
  FhCpuAgg agg = { 0 };
  FhCpuDecision c;

  g_assert_false (di.active);
  g_assert_cmpuint (di.cap, ==, 256);
  g_assert_cmpuint (dn.cap, ==, FH_SCALE);
  /* a floor above the ceiling in the configuration: the floor wins (MR-11) */
  g_assert_cmpuint (fh_merge_vcpu (&none, &chain, (FhClamp){ 600, 300 }, NULL).cap, ==, 600);

  fh_merge_aggregate_cpus (v, G_N_ELEMENTS (v), cpus, 4);
  fh_merge_cap_cpus (caps, G_N_ELEMENTS (caps), cpus, 4);
  g_assert_false (cpus[0].active);
  g_assert_true (cpus[0].capped);
  g_assert_cmpuint (cpus[0].cap, ==, 256);
  g_assert_cmpuint (cpus[1].cap, ==, 512); /* the highest ceiling placed there */
  g_assert_cmpuint (cpus[1].ceiling, ==, 200);
  g_assert_false (cpus[3].capped);
  p = fh_merge_aggregate_set (cpus, 4, pol01, 2);
  g_assert_true (p.capped);
  g_assert_cmpuint (p.cap, ==, 512);
  p = fh_merge_aggregate_set (cpus, 4, pol02, 2); /* a VM without a ceiling lifts it */
  g_assert_cmpuint (p.cap, ==, FH_SCALE);
  p = fh_merge_aggregate_set (cpus, 4, pol3, 1);
  g_assert_false (p.capped);

  /* an active floor above the cap (an RT default minimum) is cut to it */
  fh_merge_agg_add (&agg, (FhClamp){ 900, 900 });
  fh_merge_agg_add_cap (&agg, 256);
  c = fh_merge_agg_decision (&agg);
  g_assert_cmpuint (c.floor, ==, 256);
  g_assert_cmpuint (c.ceiling, ==, 256);
  /* the incremental aggregate: losing the only holder of the max asks for a rebuild */
  fh_merge_agg_add_cap (&agg, 512);
  g_assert_cmpuint (fh_merge_agg_decision (&agg).cap, ==, 512);
  g_assert_false (fh_merge_agg_remove_cap (&agg, 512));
  g_assert_true (fh_merge_agg_remove_cap (&agg, 256));
  /* the active part going away keeps the cap */
  agg = (FhCpuAgg){ 0 };
  fh_merge_agg_add_cap (&agg, 256);
  fh_merge_agg_add (&agg, (FhClamp){ 0, 200 });
  g_assert_true (fh_merge_agg_remove (&agg, (FhClamp){ 0, 200 }));
  c = fh_merge_agg_decision (&agg);
  g_assert_false (c.active);
  g_assert_true (c.capped);
  g_assert_cmpuint (c.cap, ==, 256);
}

static void
test_freq (void)
{
  static const guint avail[] = { 3200000, 2800000, 2400000, 2000000, 1600000, 1200000, 800000 };
  FhFreqTable t = { 800000, 3200000, avail, G_N_ELEMENTS (avail) };
  FhFreqTable plain = { 800000, 3200000, NULL, 0 };
  guint lo, hi;

  /* map_util_freq: cap * max / 1024, clamped into cpuinfo range */
  g_assert_cmpuint (fh_freq_from_capacity (&t, 1024), ==, 3200000);
  g_assert_cmpuint (fh_freq_from_capacity (&t, 512), ==, 1600000);
  g_assert_cmpuint (fh_freq_from_capacity (&t, 0), ==, 800000);
  g_assert_cmpuint (fh_freq_from_capacity (&t, 100), ==, 800000); /* 312500 < min */
  g_assert_cmpuint (fh_freq_from_capacity (&t, 5000), ==, 3200000);

  fh_freq_limits (&t, 0, 1024, &lo, &hi);
  g_assert_cmpuint (lo, ==, 800000);
  g_assert_cmpuint (hi, ==, 3200000);
  fh_freq_limits (&t, 512, 700, &lo, &hi); /* 1600000 exact; 2187500 snaps down */
  g_assert_cmpuint (lo, ==, 1600000);
  g_assert_cmpuint (hi, ==, 2000000);
  fh_freq_limits (&t, 513, 1024, &lo, &hi); /* 1603125 snaps up */
  g_assert_cmpuint (lo, ==, 2000000);
  /*
   * 937500: floor up 1200000, ceiling down 800000.  They cross only because
   * the table has no step between them; the ceiling wins, as in
   * cpufreq_set_policy(), so a vCPU capped at 300 never runs at 384.
   */
  fh_freq_limits (&t, 300, 300, &lo, &hi);
  g_assert_cmpuint (lo, ==, 800000);
  g_assert_cmpuint (hi, ==, 800000);
  fh_freq_limits (&t, 310, 350, &lo, &hi); /* 968750 up, 1093750 down: cross */
  g_assert_cmpuint (lo, ==, 800000);
  g_assert_cmpuint (hi, ==, 800000);
  fh_freq_limits (&t, 300, 384, &lo, &hi); /* 1200000 exact: no crossing */
  g_assert_cmpuint (lo, ==, 1200000);
  g_assert_cmpuint (hi, ==, 1200000);
  fh_freq_limits (&plain, 300, 700, &lo, &hi);
  g_assert_cmpuint (lo, ==, 937500);
  g_assert_cmpuint (hi, ==, 2187500);
  {
    /* A table that does not reach cpuinfo_max: nearest end. */
    static const guint part[] = { 1000000, 2000000 };
    FhFreqTable pt = { 800000, 3200000, part, 2 };

    fh_freq_limits (&pt, 1024, 1024, &lo, &hi);
    g_assert_cmpuint (lo, ==, 2000000);
    g_assert_cmpuint (hi, ==, 2000000);
    fh_freq_limits (&pt, 0, 0, &lo, &hi);
    g_assert_cmpuint (lo, ==, 1000000);
    g_assert_cmpuint (hi, ==, 1000000);
  }
}

static void
test_freq_quantize (void)
{
  static const guint avail[] = { 3200000, 1600000, 800000 };
  FhFreqTable t = { 800000, 3200000, avail, G_N_ELEMENTS (avail) };
  FhFreqTable plain = { 800000, 3200000, NULL, 0 };
  FhFreqTable odd = { 850000, 3150000, NULL, 0 };
  guint lo, hi;

  /* 937500..2187500: floor up to 1000000, ceiling down to 2100000 */
  fh_freq_limits (&plain, 300, 700, &lo, &hi);
  fh_freq_quantize (&plain, 100000, &lo, &hi);
  g_assert_cmpuint (lo, ==, 1000000);
  g_assert_cmpuint (hi, ==, 2100000);
  /* exact multiples stay */
  lo = 1600000, hi = 2000000;
  fh_freq_quantize (&plain, 100000, &lo, &hi);
  g_assert_cmpuint (lo, ==, 1600000);
  g_assert_cmpuint (hi, ==, 2000000);
  /* inside one quantum they would cross: the floor is lowered to the ceiling */
  lo = 1450001, hi = 1450002;
  fh_freq_quantize (&plain, 100000, &lo, &hi);
  g_assert_cmpuint (lo, ==, 1400000);
  g_assert_cmpuint (hi, ==, 1400000);
  /* ends that are not multiples: stay inside cpuinfo_min..max */
  lo = 3000001, hi = 3150000;
  fh_freq_quantize (&odd, 100000, &lo, &hi);
  g_assert_cmpuint (lo, ==, 3100000);
  g_assert_cmpuint (hi, ==, 3100000);
  lo = 3100001, hi = 3150000; /* 3150000 (up, clamped) over 3100000: the ceiling wins */
  fh_freq_quantize (&odd, 100000, &lo, &hi);
  g_assert_cmpuint (lo, ==, 3100000);
  g_assert_cmpuint (hi, ==, 3100000);
  lo = 850000, hi = 850000; /* 900000 over 850000 (down 800000, clamped) */
  fh_freq_quantize (&odd, 100000, &lo, &hi);
  g_assert_cmpuint (lo, ==, 850000);
  g_assert_cmpuint (hi, ==, 850000);
  lo = 850000, hi = 899999;
  fh_freq_quantize (&odd, 1000000, &lo, &hi);
  g_assert_cmpuint (lo, ==, 850000);
  g_assert_cmpuint (hi, ==, 850000);
  /* a table, or quantum 0: unchanged */
  lo = 937500, hi = 2187500;
  fh_freq_quantize (&t, 100000, &lo, &hi);
  fh_freq_quantize (&plain, 0, &lo, &hi);
  g_assert_cmpuint (lo, ==, 937500);
  g_assert_cmpuint (hi, ==, 2187500);
}

/*
 * MR-29: a thread that ran 25 % of the window or more is busy, less is not;
 * a busy vCPU without a record gets the operator's bounds as its request.
 */
static void
test_host_busy (void)
{
  static const FhGuestHint busy = { FH_HINT_HOST_BUSY, 0, 0, 0 };
  FhChain chain = { { 1024, 1024 }, NULL, 0, FALSE, 1024 };
  FhMergeParams params = { TRUE, 1.0 };
  FhVcpuDecision d;

  g_assert_true (fh_merge_host_busy (250000000, 1000000000));
  g_assert_false (fh_merge_host_busy (249999999, 1000000000));
  g_assert_true (fh_merge_host_busy (1000000000, 1000000000));
  g_assert_true (fh_merge_host_busy (25, 100));
  g_assert_false (fh_merge_host_busy (24, 100));
  g_assert_true (fh_merge_host_busy (1, 3)); /* 0.33 >= 0.25 */
  g_assert_false (fh_merge_host_busy (0, 1000));
  g_assert_false (fh_merge_host_busy (5, 0)); /* no window: no sample */
  g_assert_true (fh_merge_host_busy (G_MAXUINT64 / 2, G_MAXUINT64 / 2));
  /* not a wire flag: outside what the decoder lets through */
  g_assert_cmpuint (FH_HINT_HOST_BUSY & VIRTIO_FREQHINT_R_ALL, ==, 0);
  d = fh_merge_vcpu (&busy, &chain, (FhClamp){ 512, 768 }, &params);
  g_assert_true (d.active);
  g_assert_cmpuint (d.eff.min, ==, 512);
  g_assert_cmpuint (d.eff.max, ==, 768);
  g_assert_cmpuint (d.cap, ==, 768);
}

/*
 * MR-30: a rise at once, a fall once the higher value has not been asked for
 * hold_us; the three values held apart; the operator's bounds never held.
 */
#define HOLD_US (50 * G_TIME_SPAN_MILLISECOND)

static void
held_at (FhHold *h, gboolean active, FhClamp req, gint64 t)
{
  fh_merge_hold_step (h, active, req, t, HOLD_US);
}

static void
assert_hold (const FhHold *h, gint64 t, gboolean active, guint min, guint max)
{
  FhClamp req;

  g_assert_cmpint (fh_merge_hold_value (h, t, &req), ==, active);
  if (active) {
    g_assert_cmpuint (req.min, ==, min);
    g_assert_cmpuint (req.max, ==, max);
  }
}

static void
test_hold (void)
{
  static const FhClamp fg = { 800, 1024 }, bg = { 0, 300 };
  static const FhGuestHint fg_hint = {
    VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID, 800, 1024, 0
  };
  static const FhGuestHint idle_hint = { VIRTIO_FREQHINT_R_IDLE, 0, 0, 0 };
  FhChain chain = { { 1024, 1024 }, NULL, 0, FALSE, 1024 };
  FhHold h = { 0 };
  FhVcpuDecision d;
  gint64 t = 1000000;

  /* nothing asked yet: inactive, nothing held */
  assert_hold (&h, t, FALSE, 0, 0);
  g_assert_cmpint (fh_merge_hold_next (&h, t), ==, 0);

  /* a rise is at once */
  held_at (&h, TRUE, bg, t);
  assert_hold (&h, t, TRUE, 0, 300);
  held_at (&h, TRUE, fg, t + 1000);
  assert_hold (&h, t + 1000, TRUE, 800, 1024);
  g_assert_cmpint (fh_merge_hold_next (&h, t + 1000), ==, 0);

  /* asked steadily, then a fall: held hold_us from the fall, not from the rise */
  t += 1000000;
  held_at (&h, TRUE, bg, t);
  assert_hold (&h, t, TRUE, 800, 1024);
  assert_hold (&h, t + HOLD_US - 1, TRUE, 800, 1024);
  g_assert_cmpint (fh_merge_hold_next (&h, t), ==, t + HOLD_US);
  /* the lapse: what is asked then */
  assert_hold (&h, t + HOLD_US, TRUE, 0, 300);
  g_assert_cmpint (fh_merge_hold_next (&h, t + HOLD_US), ==, 0);

  /* a periodic task: each wake-up within the hold keeps the higher values */
  t += 1000000;
  held_at (&h, TRUE, fg, t);
  for (gint64 k = 0; k < 10; k++) {
    held_at (&h, TRUE, bg, t + k * 20000 + 3000);
    assert_hold (&h, t + k * 20000 + 19000, TRUE, 800, 1024);
    held_at (&h, TRUE, fg, t + (k + 1) * 20000);
  }
  /* asking the lower again while held does not move the lapse */
  held_at (&h, TRUE, bg, t + 203000);
  held_at (&h, TRUE, bg, t + 240000);
  g_assert_cmpint (fh_merge_hold_next (&h, t + 240000), ==, t + 203000 + HOLD_US);
  assert_hold (&h, t + 203000 + HOLD_US, TRUE, 0, 300);

  /* going idle: active with the last request until the lapse; the
   * ceiling never falls under what was last asked */
  t += 1000000;
  held_at (&h, TRUE, fg, t);
  held_at (&h, FALSE, fg, t + 1000);
  assert_hold (&h, t + 1000, TRUE, 800, 1024);
  assert_hold (&h, t + 1000 + HOLD_US - 1, TRUE, 800, 1024);
  assert_hold (&h, t + 1000 + HOLD_US, FALSE, 0, 0);
  /* a ceiling that fell before the idle lapses first; activity holds the last one asked */
  t += 1000000;
  held_at (&h, TRUE, fg, t);
  held_at (&h, TRUE, bg, t + 1000);
  held_at (&h, FALSE, bg, t + 30000);
  assert_hold (&h, t + 1000 + HOLD_US, TRUE, 0, 300);
  assert_hold (&h, t + 30000 + HOLD_US, FALSE, 0, 0);

  /* each value on its own: the floor lapses before the ceiling that fell later */
  t += 1000000;
  h = (FhHold){ 0 };
  held_at (&h, TRUE, (FhClamp){ 900, 900 }, t);
  held_at (&h, TRUE, (FhClamp){ 0, 1024 }, t + 1000);
  held_at (&h, TRUE, (FhClamp){ 0, 200 }, t + 2000);
  assert_hold (&h, t + 2500, TRUE, 900, 1024);
  assert_hold (&h, t + 1000 + HOLD_US, TRUE, 0, 1024);
  assert_hold (&h, t + 2000 + HOLD_US, TRUE, 0, 200);

  /* hold_us 0: a fall is at once */
  h = (FhHold){ 0 };
  fh_merge_hold_step (&h, TRUE, fg, t, 0);
  fh_merge_hold_step (&h, TRUE, bg, t + 1, 0);
  assert_hold (&h, t + 1, TRUE, 0, 300);
  g_assert_cmpint (fh_merge_hold_next (&h, t + 1), ==, 0);

  /* in a decision: the held request under an operator ceiling applied
   * at once; the record's own request once it lapses */
  t += 1000000;
  h = (FhHold){ 0 };
  fh_merge_hold_step (&h, TRUE, fg, t, HOLD_US);
  fh_merge_hold_step (&h, FALSE, FH_CLAMP_NONE, t + 1000, HOLD_US);
  d = fh_merge_vcpu_held (&idle_hint, &h, t + 2000, &chain, (FhClamp){ 0, 512 }, NULL);
  g_assert_true (d.active);
  g_assert_cmpint (fh_merge_hold_next (&h, t + 2000), ==, t + 1000 + HOLD_US);
  g_assert_cmpuint (d.req.min, ==, 800);
  g_assert_cmpuint (d.eff.min, ==, 512);
  g_assert_cmpuint (d.eff.max, ==, 512);
  g_assert_cmpuint (d.cap, ==, 512);
  d = fh_merge_vcpu_held (&idle_hint, &h, t + 1000 + HOLD_US, &chain, FH_CLAMP_NONE, NULL);
  g_assert_false (d.active);
  g_assert_cmpint (fh_merge_hold_next (&h, t + 1000 + HOLD_US), ==, 0);
  /* with nothing held, the record's decision */
  fh_merge_hold_step (&h, TRUE, fg, t + 2000000, HOLD_US);
  d = fh_merge_vcpu_held (&fg_hint, &h, t + 2000000, &chain, FH_CLAMP_NONE, NULL);
  g_assert_cmpint (fh_merge_hold_next (&h, t + 2000000), ==, 0);
  g_assert_cmpuint (d.eff.min, ==, 800);
}

/*
 * MR-30 over random requests: what is in force is never below what the
 * guest asks now nor above the highest it asked within the last hold_us,
 * and an active request keeps its floor under its ceiling.
 */
typedef struct {
  gint64 t;
  guint v[FH_HOLD_N]; /* as the hold sees them: inactive asks 0, 0 and its last ceiling */
} HoldAsk;

static void
test_hold_random (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (30);
  g_autoptr (GArray) asks = g_array_new (FALSE, FALSE, sizeof (HoldAsk));
  FhHold h = { 0 };
  guint last_max = 0;
  gint64 t = 1000000;

  for (guint step = 0; step < 20000; step++) {
    gboolean active = g_rand_int_range (r, 0, 4) != 0;
    guint a = g_rand_int_range (r, 0, 1025), b = g_rand_int_range (r, 0, 1025);
    FhClamp req = { MIN (a, b), MAX (a, b) };
    HoldAsk ask = { t, { active, active ? req.min : 0, active ? req.max : last_max } };
    FhClamp now;
    gboolean in_force;

    if (active)
      last_max = req.max;
    fh_merge_hold_step (&h, active, req, t, HOLD_US);
    g_array_append_val (asks, ask);
    /* look at the step's time and at a random time before the next */
    for (guint look = 0; look < 2; look++) {
      gint64 at = t + (look ? g_rand_int_range (r, 0, 2 * HOLD_US) : 0);
      guint v[FH_HOLD_N];

      in_force = fh_merge_hold_value (&h, at, &now);
      v[FH_HOLD_ACTIVE] = in_force;
      v[FH_HOLD_MIN] = in_force ? now.min : 0;
      v[FH_HOLD_MAX] = now.max;
      if (in_force)
        g_assert_cmpuint (now.min, <=, now.max);
      for (guint i = 0; i < FH_HOLD_N; i++) {
        guint high = ask.v[i];

        /* the asks in force at some time in (at - hold_us, at] */
        for (guint k = asks->len; k-- > 0;) {
          const HoldAsk *o = &g_array_index (asks, HoldAsk, k);

          high = MAX (high, o->v[i]);
          if (o->t <= at - HOLD_US)
            break;
        }
        if (i != FH_HOLD_MAX || in_force) {
          g_assert_cmpuint (v[i], >=, ask.v[i]);
          g_assert_cmpuint (v[i], <=, high);
        }
      }
      if (look)
        t = MAX (t, at);
    }
    t += g_rand_int_range (r, 1, HOLD_US / 2);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/merge/vcpu-table", test_vcpu_table);
  g_test_add_func ("/merge/grant", test_grant);
  g_test_add_func ("/merge/perf-only", test_perf_only);
  g_test_add_func ("/merge/rt", test_rt);
  g_test_add_func ("/merge/auto-headroom", test_auto_headroom);
  g_test_add_func ("/merge/aggregate", test_aggregate);
  g_test_add_func ("/merge/aggregate-policy", test_aggregate_policy);
  g_test_add_func ("/merge/cap", test_cap);
  g_test_add_func ("/merge/host-busy", test_host_busy);
  g_test_add_func ("/merge/hold", test_hold);
  g_test_add_func ("/merge/hold-random", test_hold_random);
  g_test_add_func ("/merge/freq", test_freq);
  g_test_add_func ("/merge/freq-quantize", test_freq_quantize);
  return g_test_run ();
}
