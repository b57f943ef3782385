/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fh-freq.h"

guint
fh_freq_from_capacity (const FhFreqTable *t, guint cap)
{
  guint64 f = (guint64) MIN (cap, 1024u) * t->cpuinfo_max_khz / 1024;

  return (guint) CLAMP (f, (guint64) t->cpuinfo_min_khz, (guint64) t->cpuinfo_max_khz);
}

static guint
snap (const FhFreqTable *t, guint f, gboolean up)
{
  gboolean found = FALSE;
  guint best = 0, lo = G_MAXUINT, hi = 0;

  if (!t->available_khz || t->n_available == 0)
    return f;
  for (gsize i = 0; i < t->n_available; i++) {
    guint a = t->available_khz[i];

    lo = MIN (lo, a);
    hi = MAX (hi, a);
    if (up ? a >= f && (!found || a < best) : a <= f && (!found || a > best)) {
      best = a;
      found = TRUE;
    }
  }
  /* Nothing on that side: the nearest end of the table. */
  if (!found)
    best = up ? hi : lo;
  return best;
}

void
fh_freq_limits (const FhFreqTable *t, guint floor_cap, guint ceiling_cap, guint *min_khz,
                guint *max_khz)
{
  /* MR-16 has resolved a capacity inversion for the floor already */
  guint lo = snap (t, fh_freq_from_capacity (t, floor_cap), TRUE);
  guint hi = snap (t, fh_freq_from_capacity (t, MAX (ceiling_cap, floor_cap)), FALSE);

  /* MR-19: crossed only by snapping; the ceiling wins, as in cpufreq_set_policy() */
  *max_khz = hi;
  *min_khz = MIN (lo, hi);
}

void
fh_freq_quantize (const FhFreqTable *t, guint quantum_khz, guint *min_khz, guint *max_khz)
{
  guint64 lo, hi;

  if (quantum_khz == 0 || (t->available_khz && t->n_available > 0))
    return;
  lo = ((guint64) *min_khz + quantum_khz - 1) / quantum_khz * quantum_khz;
  hi = (guint64) *max_khz / quantum_khz * quantum_khz;
  lo = CLAMP (lo, (guint64) t->cpuinfo_min_khz, (guint64) t->cpuinfo_max_khz);
  hi = CLAMP (hi, (guint64) t->cpuinfo_min_khz, (guint64) t->cpuinfo_max_khz);
  *max_khz = (guint) hi;
  *min_khz = (guint) MIN (lo, hi);
}
