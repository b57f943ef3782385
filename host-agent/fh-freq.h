/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Capacity -> cpufreq limits for one policy.  Pure.
 */
#pragma once

#include <glib.h>

typedef struct {
  guint cpuinfo_min_khz;
  guint cpuinfo_max_khz;
  const guint *available_khz; /* scaling_available_frequencies, any order; may be NULL */
  gsize n_available;
} FhFreqTable;

/* schedutil's map_util_freq(): cap * max / 1024, clamped into cpuinfo_min..max. */
guint fh_freq_from_capacity (const FhFreqTable *t, guint cap);

/*
 * Limits for a floor/ceiling pair (floor <= ceiling): the floor snaps UP to
 * an available frequency (the guest asked for at least that much), the
 * ceiling DOWN (at most).  Where both fall between the same two steps they
 * cross, and the floor is lowered to the ceiling: the kernel resolves a
 * policy's min above its max the same way (cpufreq_set_policy()).
 */
void fh_freq_limits (const FhFreqTable *t, guint floor_cap, guint ceiling_cap, guint *min_khz,
                     guint *max_khz);

/*
 * Policies without scaling_available_frequencies (intel_pstate, amd-pstate)
 * take any kHz, so every small move of a vCPU's request would be a new
 * value to write.  Rounding to a quantum (100 MHz is a P-state ratio step)
 * keeps the limits where the hardware resolves them anyway: the floor
 * rounds UP (never less than asked), the ceiling DOWN (never more), both
 * stay inside cpuinfo_min..max, and a floor that ends above the ceiling is
 * lowered to it, as for a table.
 * A quantum of 0, or a policy with a table, leaves the limits unchanged.
 */
void fh_freq_quantize (const FhFreqTable *t, guint quantum_khz, guint *min_khz, guint *max_khz);
