/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the merge engine (fh-merge.c, fh-freq.c) with the
 * invariants of spec/merge-rules.md checked on every decision.  The input
 * bytes describe one host (system defaults, one cgroup chain per vCPU,
 * cpufreq table), one VM's operator bounds, the merge mode (perf_as_floor,
 * and perf_only: the bench's virtual-cpufreq mode, MR-3) and up to 16 vCPU
 * records with their placements; values are taken modulo a little more
 * than their range so out-of-range inputs are exercised too.
 */
#include <stdint.h>
#include <string.h>

#include <glib.h>

#include <linux/virtio_freqhint.h>

#include "fh-freq.h"
#include "fh-merge.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      __builtin_trap ();                                                                           \
  } while (0)

#define N_CPUS 4
#define MAX_VCPUS 16
#define MAX_LEVELS 4

typedef struct {
  const uint8_t *p;
  size_t left;
} Reader;

static guint
take16 (Reader *r)
{
  guint v = 0;

  if (r->left >= 2) {
    v = r->p[0] | (guint) r->p[1] << 8;
    r->p += 2;
    r->left -= 2;
  }
  return v;
}

static guint
take8 (Reader *r)
{
  guint v = 0;

  if (r->left >= 1) {
    v = r->p[0];
    r->p++;
    r->left--;
  }
  return v;
}

/* Mostly in range, sometimes just beyond it (the engine must cope). */
static guint
cap (Reader *r)
{
  return take16 (r) % 1100;
}

typedef struct {
  FhGuestHint hint;
  FhClamp levels[MAX_LEVELS];
  gsize n_levels;
  guint cpu;
  FhVcpuDecision d;
} Vcpu;

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  Reader r = { data, size };
  FhClamp sys, op;
  FhMergeParams params = { 0 };
  Vcpu v[MAX_VCPUS];
  FhPlacedVcpu placed[MAX_VCPUS], only_active[MAX_VCPUS];
  FhCpuDecision cpus[N_CPUS], cpus2[N_CPUS], pol;
  gsize n, n_active = 0;
  guint mode;
  guint members[N_CPUS];
  gsize n_members = 0;

  /* sysctl_sched_uclamp_util_min <= _max is enforced by the kernel. */
  sys.max = take16 (&r) % (FH_SCALE + 1);
  sys.min = take16 (&r) % (sys.max + 1);
  /* Configuration keeps the operator floor <= ceiling. */
  op.max = take16 (&r) % (FH_SCALE + 1);
  op.min = take16 (&r) % (op.max + 1);
  mode = take8 (&r);
  params.perf_as_floor = mode & 1;
  params.perf_only = (mode >> 1) & 1; /* off is the shipped mode */
  params.perf_headroom = 0.1 + (take8 (&r) % 191) / 100.0; /* 0.1 .. 2.0 (MR-4) */
  n = 1 + take8 (&r) % MAX_VCPUS;

  for (gsize i = 0; i < n; i++) {
    FhChain chain;
    FhClamp eff_level, req2;

    v[i].hint.flags = take8 (&r) & VIRTIO_FREQHINT_R_ALL;
    v[i].hint.clamp_min = cap (&r);
    v[i].hint.clamp_max = cap (&r);
    v[i].hint.perf = cap (&r);
    v[i].n_levels = take8 (&r) % (MAX_LEVELS + 1);
    for (gsize l = 0; l < v[i].n_levels; l++) {
      v[i].levels[l].min = take16 (&r) % (FH_SCALE + 1);
      v[i].levels[l].max = take16 (&r) % (FH_SCALE + 1);
    }
    v[i].cpu = take8 (&r) % (N_CPUS + 1); /* N_CPUS: placed nowhere we know */

    chain = (FhChain){ sys, v[i].levels, v[i].n_levels };
    v[i].d = fh_merge_vcpu (&v[i].hint, &chain, op, &params);

    /* MR-6, in either mode */
    CHECK (v[i].d.active == (v[i].hint.flags != 0 && !(v[i].hint.flags & VIRTIO_FREQHINT_R_IDLE)));
    if (!params.perf_only) {
      /* MR-4: the perf floor never raises the guest's own valid ceiling. */
      if ((v[i].hint.flags & VIRTIO_FREQHINT_R_MAX_VALID) &&
          !((v[i].hint.flags & VIRTIO_FREQHINT_R_MIN_VALID) &&
            v[i].hint.clamp_min > v[i].hint.clamp_max))
        CHECK (v[i].d.req.max == MIN (v[i].hint.clamp_max, FH_SCALE));
    } else {
      /*
       * MR-3 perf_only: the guest's clamps are taken as not valid.  No
       * ceiling is asked for; the floor is MR-4's perf floor or nothing;
       * and the decision is the one for the same record without its
       * clamps, whatever values and VALID bits they carried.
       */
      FhGuestHint bare = v[i].hint;
      FhVcpuDecision d2;

      bare.flags &= ~(VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID);
      bare.clamp_min = take16 (&r);
      bare.clamp_max = take16 (&r);
      CHECK (v[i].d.req.max == FH_SCALE);
      if (!(params.perf_as_floor && (v[i].hint.flags & VIRTIO_FREQHINT_R_PERF_VALID)))
        CHECK (v[i].d.req.min == 0);
      d2 = fh_merge_vcpu (&bare, &chain, op, &params);
      CHECK (d2.req.min == v[i].d.req.min && d2.req.max == v[i].d.req.max);
      CHECK (d2.eff.min == v[i].d.eff.min && d2.eff.max == v[i].d.eff.max);
      CHECK (d2.grant.min == v[i].d.grant.min && d2.grant.max == v[i].d.grant.max);
    }
    /* MR-1, MR-5, MR-12: units; eff_min > eff_max only for the kernel's RT default (MR-26). */
    CHECK (v[i].d.req.min <= v[i].d.req.max && v[i].d.req.max <= FH_SCALE);
    CHECK ((v[i].d.min_default || v[i].d.eff.min <= v[i].d.eff.max) &&
           v[i].d.eff.max <= FH_SCALE && v[i].d.eff.min <= FH_SCALE);
    /* Never above any bound of the chain: sys max, every level's effective max. */
    CHECK (v[i].d.eff.max <= sys.max && v[i].d.eff.min <= sys.min);
    eff_level = (FhClamp){ MIN (sys.min, sys.max), sys.max };
    for (gsize l = 0; l < v[i].n_levels; l++) {
      eff_level.min = MIN (MIN (v[i].levels[l].min, eff_level.min), eff_level.max);
      eff_level.max = MIN (v[i].levels[l].max, eff_level.max);
      eff_level.min = MIN (eff_level.min, eff_level.max);
      CHECK (v[i].d.eff.max <= eff_level.max);
    }
    CHECK (v[i].d.chain.min <= v[i].d.chain.max && v[i].d.chain.max <= sys.max);
    /*
     * The operator ceiling bounds the result unless the host's own floor
     * is higher: the host keeps the last word (MR-11).  Same for the
     * floor from below.
     */
    CHECK (v[i].d.eff.max <= MAX (op.max, v[i].d.chain.min));
    CHECK (v[i].d.eff.min >= MIN (MIN (op.min, v[i].d.chain.max), sys.min));
    /* MR-13: the grant holds every result. */
    CHECK (v[i].d.grant.min <= v[i].d.grant.max);
    CHECK (v[i].d.grant.min <= v[i].d.eff.min && v[i].d.eff.max <= v[i].d.grant.max);
    /* Monotonic: a higher request never yields a lower result. */
    req2 = fh_merge_operator ((FhClamp){ FH_SCALE, FH_SCALE }, op);
    req2 = fh_merge_restrict (req2, v[i].d.chain, sys);
    CHECK (req2.min >= v[i].d.eff.min && req2.max >= v[i].d.eff.max);

    placed[i] = (FhPlacedVcpu){ v[i].d.active, v[i].d.eff, v[i].cpu };
    if (v[i].d.active)
      only_active[n_active++] = placed[i];
  }

  /* MR-15: idle and unhinted vCPUs contribute nothing. */
  fh_merge_aggregate_cpus (placed, n, cpus, N_CPUS);
  fh_merge_aggregate_cpus (only_active, n_active, cpus2, N_CPUS);
  for (guint c = 0; c < N_CPUS; c++) {
    guint floor = 0, ceiling = 0, count = 0;

    CHECK (memcmp (&cpus[c], &cpus2[c], sizeof cpus[c]) == 0);
    for (gsize i = 0; i < n; i++) {
      if (!v[i].d.active || v[i].cpu != c)
        continue;
      floor = MAX (floor, v[i].d.eff.min);
      ceiling = MAX (ceiling, v[i].d.eff.max);
      count++;
    }
    CHECK (cpus[c].active == (count > 0));
    if (cpus[c].active) {
      CHECK (cpus[c].n_active == count);
      CHECK (cpus[c].floor == floor);
      CHECK (cpus[c].ceiling == MAX (ceiling, floor));
      CHECK (cpus[c].floor <= cpus[c].ceiling);
    }
  }

  /* MR-16 over a policy made of some CPUs (and one that does not exist). */
  for (guint c = 0; c <= N_CPUS && n_members < N_CPUS; c++)
    if (take8 (&r) & 1)
      members[n_members++] = c;
  pol = fh_merge_aggregate_set (cpus, N_CPUS, members, n_members);
  if (pol.active) {
    CHECK (pol.floor <= pol.ceiling);
    for (gsize m = 0; m < n_members; m++)
      if (members[m] < N_CPUS && cpus[members[m]].active)
        CHECK (cpus[members[m]].floor <= pol.floor && cpus[members[m]].ceiling <= pol.ceiling);
  }

  /* MR-18, MR-19: frequencies stay in the policy's range, floor <= ceiling. */
  {
    guint avail[8], lo, hi;
    gsize n_avail = take8 (&r) % 9;
    FhFreqTable t;

    t.cpuinfo_min_khz = 1 + take16 (&r) * 100u;
    t.cpuinfo_max_khz = t.cpuinfo_min_khz + take16 (&r) * 100u;
    for (gsize i = 0; i < n_avail; i++)
      avail[i] = t.cpuinfo_min_khz + take16 (&r) % (t.cpuinfo_max_khz - t.cpuinfo_min_khz + 1);
    t.available_khz = n_avail ? avail : NULL;
    t.n_available = n_avail;
    fh_freq_limits (&t, pol.floor, pol.ceiling, &lo, &hi);
    CHECK (lo <= hi);
    CHECK (lo >= t.cpuinfo_min_khz && hi <= t.cpuinfo_max_khz);
  }
  return 0;
}
