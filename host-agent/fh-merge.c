/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fh-merge.h"

#include <math.h>
#include <string.h>

#include <linux/virtio_freqhint.h>

/*
 * Guest record -> request (MR-3..MR-5).  A field without its VALID flag
 * asks nothing: the floor defaults to 0 and the ceiling to full scale
 * (uclamp_none()).
 *
 * The guest governor's perf request is a utilisation the guest's schedutil
 * already multiplied by 1.25 (map_util_perf()); the daemon chooses the
 * headroom that undoes a second multiplication on the host (MR-4,
 * fh_merge_auto_headroom()).  The perf request is schedutil's target, which
 * the guest's own ceiling already bounds (sugov_effective_cpu_perf():
 * "if (actual < max) max = actual"); a perf above that ceiling is the guest's
 * frequency table rounding up to its next step, which the host rounds again
 * on its own table, so the perf floor is capped at the guest's ceiling.  Only
 * the guest's own floor wins over its ceiling, as the run queue's min does
 * (max(min, ...)); the device refuses such records, so MR-5 is defensive.
 */
FhClamp
fh_merge_guest_request (const FhGuestHint *hint, const FhMergeParams *params)
{
  FhClamp req = FH_CLAMP_NONE;
  gboolean clamps = !(params && params->perf_only);

  if (clamps && (hint->flags & VIRTIO_FREQHINT_R_MIN_VALID))
    req.min = MIN (hint->clamp_min, FH_SCALE);
  if (clamps && (hint->flags & VIRTIO_FREQHINT_R_MAX_VALID))
    req.max = MIN (hint->clamp_max, FH_SCALE);
  if ((hint->flags & VIRTIO_FREQHINT_R_PERF_VALID) && params && params->perf_as_floor) {
    double scaled = (double) MIN (hint->perf, FH_SCALE) * params->perf_headroom;
    /* lround(): halves away from zero, i.e. up for these non-negative values */
    guint perf = !(scaled > 0) ? 0 : scaled >= FH_SCALE ? FH_SCALE : (guint) lround (scaled);

    req.min = MAX (req.min, MIN (perf, req.max));
  }
  if (req.min > req.max)
    req.max = req.min;
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

  /*
   * uclamp_tg_restrict() leaves tasks of the root group alone: only the
   * system cap of uclamp_eff_get() applies to them (MR-12), so their range
   * is (0, sys_max).
   */
  if (chain->n_levels == 0)
    return (FhClamp){ 0, root.max };
  /* The root has no parent to cap it; only the min<=max step applies. */
  eff.max = root.max;
  eff.min = MIN (root.min, root.max);
  for (gsize i = 0; i < chain->n_levels; i++)
    eff = update_eff (eff, chain->levels[i]);
  return eff;
}

/* Configuration keeps floor <= ceiling; should it not, the floor wins. */
static guint
operator_cap (FhClamp op)
{
  return MAX (MIN (op.max, FH_SCALE), MIN (op.min, FH_SCALE));
}

/*
 * The operator's floor and ceiling restrict what the guest asks for, before
 * the host chain does (MR-11).  They are not a cgroup level: under
 * cpu_util_update_eff() a floor below a parent with cpu.uclamp.min 0 (the
 * default of machine.slice and its like) would be cut to 0.  Clamping is
 * monotonic, so the host kernel restricting our result again by the
 * thread's real group (uclamp_tg_restrict()) changes nothing.
 */
FhClamp
fh_merge_operator (FhClamp req, FhClamp op)
{
  FhClamp r;
  guint lo = MIN (op.min, FH_SCALE), hi = operator_cap (op);

  r.min = CLAMP (req.min, lo, hi);
  r.max = CLAMP (req.max, lo, hi);
  return r;
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

/*
 * MR-13: every request the vCPU can make ends inside
 * [min(clamp(op floor, L), sys_min), min(clamp(op ceiling, L), sys_max)].
 */
FhClamp
fh_merge_grant (FhClamp op, FhClamp chain_eff, FhClamp sys)
{
  FhClamp o = fh_merge_operator (op, op);

  return fh_merge_restrict (o, chain_eff, sys);
}

/*
 * MR-26.  A SCHED_FIFO/SCHED_RR task whose UCLAMP_MIN request is not
 * user-defined takes sysctl_sched_uclamp_util_min_rt_default: on a policy
 * change or a reset with sched_util_min == -1 (__setscheduler_uclamp() with
 * uclamp_reset(), kernel/sched/syscalls.c since 6.10, core.c before), at
 * fork (uclamp_fork()) and whenever the sysctl changes
 * (__uclamp_update_util_min_rt_default()).  It is then an ordinary
 * request: uclamp_tg_restrict() clamps it into the task group's effective
 * range and uclamp_eff_get() caps it by sched_util_clamp_min.
 */
guint
fh_merge_rt_default_min (const FhChain *chain, FhClamp chain_eff)
{
  guint v = CLAMP (MIN (chain->rt_min_default, FH_SCALE), chain_eff.min, chain_eff.max);

  return MIN (v, chain->sys.min);
}

/* flags == 0: "no hint", the vCPU has no influence; IDLE: no runnable task. */
gboolean
fh_merge_guest_active (const FhGuestHint *hint)
{
  return hint->flags != 0 && !(hint->flags & VIRTIO_FREQHINT_R_IDLE);
}

/*
 * MR-30, one value.  A held value lapses lazily: whoever looks at or after
 * its time sees what is asked.  The hold starts when the value in force
 * stops being asked, so a value asked steadily for a second and then
 * dropped is held hold_us from the drop, not from its first record.
 */
static guint32
hold_ms (gint64 us)
{
  return (guint32) (us / G_TIME_SPAN_MILLISECOND);
}

/* ms until the held value lapses, <= 0 once it has */
static gint32
hold_left_ms (const FhHold *h, guint i, gint64 now_us)
{
  return (gint32) (h->until_ms[i] - hold_ms (now_us));
}

static gboolean
hold_in_force (const FhHold *h, guint i, gint64 now_us)
{
  return h->asked[i] < h->high[i] && hold_left_ms (h, i, now_us) > 0;
}

static void
hold_step_one (FhHold *h, guint i, guint16 asked, gint64 now_us, gint64 hold_us)
{
  if (!hold_in_force (h, i, now_us))
    h->high[i] = h->asked[i];
  if (asked >= h->high[i])
    h->high[i] = asked;
  else if (h->asked[i] == h->high[i])
    h->until_ms[i] = hold_ms (now_us) + hold_ms (hold_us);
  h->asked[i] = asked;
}

void
fh_merge_hold_step (FhHold *h, gboolean active, FhClamp req, gint64 now_us, gint64 hold_us)
{
  hold_step_one (h, FH_HOLD_ACTIVE, active ? 1 : 0, now_us, hold_us);
  hold_step_one (h, FH_HOLD_MIN, active ? req.min : 0, now_us, hold_us);
  /* an inactive vCPU asks its last ceiling: a vCPU the hold keeps active
   * never holds less than it last asked (MR-30) */
  if (active)
    hold_step_one (h, FH_HOLD_MAX, req.max, now_us, hold_us);
}

static guint16
hold_value_one (const FhHold *h, guint i, gint64 now_us)
{
  return hold_in_force (h, i, now_us) ? h->high[i] : h->asked[i];
}

gboolean
fh_merge_hold_value (const FhHold *h, gint64 now_us, FhClamp *req)
{
  req->min = hold_value_one (h, FH_HOLD_MIN, now_us);
  req->max = hold_value_one (h, FH_HOLD_MAX, now_us);
  /* MR-5: the floor wins an inversion */
  if (req->min > req->max)
    req->max = req->min;
  return hold_value_one (h, FH_HOLD_ACTIVE, now_us) != 0;
}

gint64
fh_merge_hold_next (const FhHold *h, gint64 now_us)
{
  gint32 left = 0;

  for (guint i = 0; i < FH_HOLD_N; i++)
    if (hold_in_force (h, i, now_us) && (left == 0 || hold_left_ms (h, i, now_us) < left))
      left = hold_left_ms (h, i, now_us);
  /* the lapse is at the start of the millisecond until_ms */
  return left ? (now_us / G_TIME_SPAN_MILLISECOND + left) * G_TIME_SPAN_MILLISECOND : 0;
}

FhVcpuDecision
fh_merge_vcpu (const FhGuestHint *hint, const FhChain *chain, FhClamp op,
               const FhMergeParams *params)
{
  return fh_merge_vcpu_held (hint, NULL, 0, chain, op, params);
}

FhVcpuDecision
fh_merge_vcpu_held (const FhGuestHint *hint, const FhHold *hold, gint64 now_us,
                    const FhChain *chain, FhClamp op, const FhMergeParams *params)
{
  FhVcpuDecision d = { 0 };
  gboolean guest_min = (hint->flags & VIRTIO_FREQHINT_R_MIN_VALID) &&
                       !(params && params->perf_only);

  d.chain = fh_merge_chain_effective (chain);
  d.active = fh_merge_guest_active (hint);
  d.req = fh_merge_guest_request (hint, params);
  if (hold) {
    FhClamp req;
    gboolean active = fh_merge_hold_value (hold, now_us, &req);

    d.active = active;
    if (active)
      d.req = req;
  }
  d.eff = fh_merge_restrict (fh_merge_operator (d.req, op), d.chain, chain->sys);
  d.grant = fh_merge_grant (op, d.chain, chain->sys);
  /*
   * MR-27: the ceiling also holds while the vCPU asks for nothing.  An
   * idle or unhinted vCPU leaves its thread to the host governor, which
   * follows the thread's load: a guest that reports idle, or never loads
   * the driver, would otherwise run at the host's full speed.
   */
  d.cap = operator_cap (op);
  /*
   * MR-26: a guest clamp floor (MIN_VALID) is the thread's user-defined
   * request, as sched_setattr() would make it; without one, a real-time
   * thread keeps the kernel's RT default minimum, and a perf floor can
   * only add to it.  The host's default is not the guest's request, so
   * the operator bounds do not apply to it.  It may end above the
   * ceiling: the kernel keeps both as they are (uclamp_eff_get() takes
   * each clamp id on its own, and uclamp_validate() lets a minimum of -1
   * through whatever the maximum), so eff says min > max, as the task's
   * effective clamps do.  The minimum wins only where a frequency is
   * decided (fh_merge_aggregate_cpus(), like sugov_effective_cpu_perf()).
   * perf_only takes the guest's clamps as not valid (MR-3), its floor too.
   */
  if (chain->rt && !guest_min) {
    guint rt_min = fh_merge_rt_default_min (chain, d.chain);

    if (rt_min >= d.eff.min) {
      d.eff.min = rt_min;
      d.min_default = TRUE;
    }
  }
  return d;
}

/* "6.1.0-18-amd64" -> 6, 1.  FALSE when the release does not start like that. */
static gboolean
parse_release (const char *release, guint64 *major, guint64 *minor)
{
  const char *p = release;
  char *end = NULL;

  if (!p || !g_ascii_isdigit (*p))
    return FALSE;
  *major = g_ascii_strtoull (p, &end, 10);
  if (end == p || *end != '.' || !g_ascii_isdigit (end[1]))
    return FALSE;
  p = end + 1;
  *minor = g_ascii_strtoull (p, &end, 10);
  return end != p;
}

/*
 * MR-4.  Before Linux 6.8 the host's schedutil scaled the clamped
 * utilisation, minimum clamp included, by 1.25 in get_next_freq(); since
 * 6.8 (sugov_effective_cpu_perf()) the margin applies to measured
 * utilisation only.  The cpufreq backend writes frequencies that no
 * governor scales, so it always takes 1.0.
 */
double
fh_merge_auto_headroom (gboolean uclamp_backend, const char *governor, const char *kernel_release,
                        const char **reason)
{
  const char *why;
  double h = 1.0;
  guint64 major, minor;

  if (!uclamp_backend)
    why = "not the uclamp backend: no governor headroom on this path";
  else if (!governor || strcmp (governor, "schedutil") != 0)
    why = "host governor is not schedutil";
  else if (!parse_release (kernel_release, &major, &minor))
    why = "host kernel release unknown: not known to be older than 6.8";
  else if (major > 6 || (major == 6 && minor >= 8))
    why = "schedutil host on Linux 6.8 or later: the rq minimum gets no margin";
  else {
    h = 0.8;
    why = "uclamp backend on a schedutil host older than Linux 6.8";
  }
  if (reason)
    *reason = why;
  return h;
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
 * (uclamp_rq_max_value()); where the frequency is decided the min wins
 * when it exceeds the max (uclamp_rq_util_with() before 6.7;
 * sugov_effective_cpu_perf() in kernel/sched/cpufreq_schedutil.c since:
 * "if (actual < min) return min" after capping by max).  This is the one
 * place an inverted vCPU (MR-26) is resolved.  An idle vCPU is not
 * runnable guest work and so holds nothing up.
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

/* MR-27: nothing above the highest ceiling of the vCPUs placed there. */
static void
apply_cap (FhCpuDecision *c)
{
  if (!c->capped)
    return;
  c->floor = MIN (c->floor, c->cap);
  c->ceiling = MIN (c->ceiling, c->cap);
}

void
fh_merge_cap_cpus (const FhPlacedCap *caps, gsize n_caps, FhCpuDecision *cpus, gsize n_cpus)
{
  for (gsize i = 0; i < n_caps; i++) {
    FhCpuDecision *c;

    if (caps[i].cpu >= n_cpus)
      continue;
    c = &cpus[caps[i].cpu];
    c->cap = c->capped ? MAX (c->cap, caps[i].cap) : caps[i].cap;
    c->capped = TRUE;
  }
  for (gsize i = 0; i < n_cpus; i++)
    apply_cap (&cpus[i]);
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
    if (c->capped) {
      acc.cap = acc.capped ? MAX (acc.cap, c->cap) : c->cap;
      acc.capped = TRUE;
    }
  }
  if (acc.active && acc.floor > acc.ceiling)
    acc.ceiling = acc.floor;
  apply_cap (&acc);
  return acc;
}

void
fh_merge_agg_add (FhCpuAgg *a, FhClamp eff)
{
  if (a->n_active == 0) {
    a->floor = eff.min;
    a->n_floor = 0;
    a->ceiling = eff.max;
    a->n_ceiling = 0;
  }
  a->n_active++;
  if (eff.min > a->floor) {
    a->floor = eff.min;
    a->n_floor = 0;
  }
  if (eff.min == a->floor)
    a->n_floor++;
  if (eff.max > a->ceiling) {
    a->ceiling = eff.max;
    a->n_ceiling = 0;
  }
  if (eff.max == a->ceiling)
    a->n_ceiling++;
}

gboolean
fh_merge_agg_remove (FhCpuAgg *a, FhClamp eff)
{
  g_return_val_if_fail (a->n_active > 0, FALSE);
  if (--a->n_active == 0) {
    a->floor = a->n_floor = a->ceiling = a->n_ceiling = 0;
    return TRUE;
  }
  if (eff.min == a->floor && --a->n_floor == 0)
    return FALSE;
  if (eff.max == a->ceiling && --a->n_ceiling == 0)
    return FALSE;
  return TRUE;
}

void
fh_merge_agg_add_cap (FhCpuAgg *a, guint cap)
{
  if (a->n_capped++ == 0 || cap > a->cap) {
    a->cap = cap;
    a->n_cap = 0;
  }
  if (cap == a->cap)
    a->n_cap++;
}

gboolean
fh_merge_agg_remove_cap (FhCpuAgg *a, guint cap)
{
  g_return_val_if_fail (a->n_capped > 0, FALSE);
  if (--a->n_capped == 0) {
    a->cap = a->n_cap = 0;
    return TRUE;
  }
  return !(cap == a->cap && --a->n_cap == 0);
}

FhCpuDecision
fh_merge_agg_decision (const FhCpuAgg *a)
{
  FhCpuDecision c = { 0 };

  if (a->n_active > 0) {
    c.active = TRUE;
    c.floor = a->floor;
    c.ceiling = MAX (a->ceiling, a->floor);
    c.n_active = a->n_active;
  }
  c.capped = a->n_capped > 0;
  c.cap = a->cap;
  apply_cap (&c);
  return c;
}

gboolean
fh_merge_host_busy (guint64 run_ns, guint64 window_ns)
{
  /* run / window >= percent / 100, in integers that cannot overflow for any window */
  if (window_ns == 0)
    return FALSE;
  return run_ns >=
         window_ns / 100u * FH_HOST_BUSY_PERCENT + (window_ns % 100u) * FH_HOST_BUSY_PERCENT / 100u;
}
