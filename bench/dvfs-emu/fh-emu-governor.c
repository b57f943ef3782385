/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fh-emu-governor.h"

#include <math.h>

double
fh_emu_util_update (double util, guint64 ran_ns, guint64 window_ns)
{
  double decay, sample;

  if (window_ns == 0)
    return util;
  decay = pow (0.5, (double) window_ns / (FH_EMU_PELT_HALFLIFE_US * 1000.0));
  sample = MIN ((double) ran_ns / (double) window_ns, 1.0) * 1024.0;
  return util * decay + sample * (1.0 - decay);
}

guint
fh_emu_schedutil_perf (double util, guint uclamp_min, guint uclamp_max)
{
  double actual = MIN (util * 1.25, 1024.0);
  guint perf = (guint) lround (actual);

  /* map_util_perf() then: if (actual < max) max = actual; return max(min, max) */
  perf = MIN (perf, uclamp_max);
  perf = MAX (perf, uclamp_min);
  return MIN (perf, 1024u);
}

guint
fh_emu_resolve_freq (const FhFreqTable *t, guint target_khz, guint min_khz, guint max_khz)
{
  gboolean above = FALSE, below = FALSE;
  guint best_above = 0, best_below = 0;

  /* cpufreq never lets min exceed max: max wins (cpufreq_set_policy()) */
  min_khz = MIN (min_khz, max_khz);
  target_khz = CLAMP (target_khz, min_khz, max_khz);
  if (!t->available_khz || t->n_available == 0)
    return target_khz;
  for (gsize i = 0; i < t->n_available; i++) {
    guint a = t->available_khz[i];

    if (a < min_khz || a > max_khz)
      continue;
    if (a >= target_khz && (!above || a < best_above)) {
      best_above = a;
      above = TRUE;
    }
    if (a <= target_khz && (!below || a > best_below)) {
      best_below = a;
      below = TRUE;
    }
  }
  if (above)
    return best_above;
  if (below)
    return best_below;
  return target_khz;
}

guint
fh_emu_governor_freq (const FhFreqTable *t, const char *governor, guint perf, guint min_khz,
                      guint max_khz)
{
  guint target;

  if (g_strcmp0 (governor, "performance") == 0)
    target = max_khz;
  else if (g_strcmp0 (governor, "powersave") == 0)
    target = min_khz;
  else
    /* get_next_freq(): the reference is cpuinfo.max_freq on an invariant CPU */
    target = (guint) ((guint64) MIN (perf, 1024u) * t->cpuinfo_max_khz / 1024);
  return fh_emu_resolve_freq (t, target, min_khz, max_khz);
}
