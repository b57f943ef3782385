/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fh-merge.h"

#include <math.h>

#include <linux/virtio_freqhint.h>

/*
 * Guest record -> request.  A field without its VALID flag asks nothing:
 * the floor defaults to 0 and the ceiling to full scale (uclamp_none()).
 *
 * The guest governor's perf request is a utilisation the guest's schedutil
 * already multiplied by 1.25 (map_util_perf()); when the host's own
 * governor is schedutil it adds that headroom again, so the daemon passes
 * 0.8 as perf_headroom then (crosvm does the same).  The perf floor never
 * exceeds the guest's own ceiling: an explicit clamp beats a heuristic, and
 * sched_setattr() would refuse min > max (uclamp_validate()).
 */
FhClamp
fh_merge_guest_request (const FhGuestHint *hint, const FhMergeParams *params)
{
  FhClamp req = FH_CLAMP_NONE;

  if (hint->flags & VIRTIO_FREQHINT_R_MIN_VALID)
    req.min = MIN (hint->clamp_min, FH_SCALE);
  if (hint->flags & VIRTIO_FREQHINT_R_MAX_VALID)
    req.max = MIN (hint->clamp_max, FH_SCALE);
  if ((hint->flags & VIRTIO_FREQHINT_R_PERF_VALID) && params && params->perf_as_floor) {
    double scaled = (double) MIN (hint->perf, FH_SCALE) * params->perf_headroom;
    guint perf = scaled <= 0 ? 0 : scaled >= FH_SCALE ? FH_SCALE : (guint) lround (scaled);

    req.min = MAX (req.min, MIN (perf, req.max));
  }
  return req;
}

/*
 * cpu_util_update_eff(): a group's effective value is its own request
 * capped by its parent's effective value, for UCLAMP_MIN and UCLAMP_MAX
 * alike, then "eff[UCLAMP_MIN] = min(eff[UCLAMP_MIN], eff[UCLAMP_MAX])".
 * The walk starts at root_task_group, whose request uclamp_update_root_tg()
 * sets from sysctl_sched_uclamp_util_{min,max}: so the system defaults
 * bound every group, not only the final value.  Children can only tighten
 * (Documentation/scheduler/sched-util-clamp.rst 3.2 says "max" for the
 * protection; the code takes the min, and we follow the code).
 */
static FhClamp
update_eff (FhClamp parent, FhClamp own)
{
  FhClamp eff;

  eff.min = MIN (own.min, parent.min);
  eff.max = MIN (own.max, parent.max);
  eff.min = MIN (eff.min, eff.max);
  return eff;
}

FhClamp
fh_merge_chain_effective (const FhChain *chain)
{
  FhClamp root = { MIN (chain->sys.min, FH_SCALE), MIN (chain->sys.max, FH_SCALE) };
  FhClamp eff;

  /* The root has no parent to cap it; only the min<=max step applies. */
  eff.max = root.max;
  eff.min = MIN (root.min, root.max);
  for (gsize i = 0; i < chain->n_levels; i++)
    eff = update_eff (eff, chain->levels[i]);
  return update_eff (eff, chain->op);
}

/*
 * uclamp_tg_restrict(): value = clamp(request, tg_min, tg_max) -- the
 * floor is the larger of the task's and the group's, the ceiling the
 * smaller.  uclamp_eff_get(): "System default restrictions always apply",
 * a value above uclamp_default[clamp_id] is replaced by it.
 */
FhClamp
fh_merge_restrict (FhClamp req, FhClamp chain_eff, FhClamp sys)
{
  FhClamp eff;

  eff.min = CLAMP (req.min, chain_eff.min, chain_eff.max);
  eff.max = CLAMP (req.max, chain_eff.min, chain_eff.max);
  if (eff.min > sys.min)
    eff.min = sys.min;
  if (eff.max > sys.max)
    eff.max = sys.max;
  return eff;
}

FhClamp
fh_merge_grant (FhClamp chain_eff, FhClamp sys)
{
  FhClamp g = { MIN (chain_eff.min, sys.min), MIN (chain_eff.max, sys.max) };

  g.min = MIN (g.min, g.max);
  return g;
}

FhVcpuDecision
fh_merge_vcpu (const FhGuestHint *hint, const FhChain *chain, const FhMergeParams *params)
{
  FhVcpuDecision d = { 0 };

  d.chain = fh_merge_chain_effective (chain);
  /* flags == 0: "no hint", the vCPU has no influence; IDLE: no runnable task. */
  d.active = hint->flags != 0 && !(hint->flags & VIRTIO_FREQHINT_R_IDLE);
  d.req = fh_merge_guest_request (hint, params);
  d.eff = fh_merge_restrict (d.req, d.chain, chain->sys);
  return d;
}

static void
take_max (FhCpuDecision *acc, guint floor, guint ceiling, guint n)
{
  if (!acc->active) {
    acc->active = TRUE;
    acc->floor = floor;
    acc->ceiling = ceiling;
  } else {
    acc->floor = MAX (acc->floor, floor);
    acc->ceiling = MAX (acc->ceiling, ceiling);
  }
  acc->n_active += n;
}

/*
 * A run queue keeps, per clamp id, the max over its runnable tasks
 * (uclamp_rq_max_value()); uclamp_rq_util_with() then lets the min win
 * when min_util > max_util.  An idle vCPU is not runnable guest work and
 * so holds nothing up.
 */
void
fh_merge_aggregate_cpus (const FhPlacedVcpu *vcpus, gsize n_vcpus, FhCpuDecision *cpus,
                         gsize n_cpus)
{
  for (gsize c = 0; c < n_cpus; c++)
    cpus[c] = (FhCpuDecision){ 0 };
  for (gsize i = 0; i < n_vcpus; i++) {
    if (!vcpus[i].active || vcpus[i].cpu >= n_cpus)
      continue;
    take_max (&cpus[vcpus[i].cpu], vcpus[i].eff.min, vcpus[i].eff.max, 1);
  }
  for (gsize c = 0; c < n_cpus; c++)
    if (cpus[c].active && cpus[c].floor > cpus[c].ceiling)
      cpus[c].ceiling = cpus[c].floor;
}

FhCpuDecision
fh_merge_aggregate_set (const FhCpuDecision *cpus, gsize n_cpus, const guint *members,
                        gsize n_members)
{
  FhCpuDecision acc = { 0 };

  for (gsize i = 0; i < n_members; i++) {
    const FhCpuDecision *c;

    if (members[i] >= n_cpus)
      continue;
    c = &cpus[members[i]];
    if (c->active)
      take_max (&acc, c->floor, c->ceiling, c->n_active);
  }
  if (acc.active && acc.floor > acc.ceiling)
    acc.ceiling = acc.floor;
  return acc;
}
