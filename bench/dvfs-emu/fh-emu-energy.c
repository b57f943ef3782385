/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fh-emu-energy.h"

/* Juno r0/r2 Cortex-A57 (see the header for the sources): MHz in comments. */
static const FhEmuPowerPoint juno_a57_core[] = {
  { 417, 168 },  /*  450 MHz */
  { 579, 251 },  /*  625 MHz */
  { 744, 359 },  /*  800 MHz */
  { 883, 479 },  /*  950 MHz */
  { 1024, 616 }, /* 1100 MHz */
};

static const FhEmuPowerPoint juno_a57_cluster[] = {
  { 417, 24 },
  { 579, 32 },
  { 744, 43 },
  { 883, 49 },
  { 1024, 64 },
};

/*
 * Idle: a core in WFI (15; cpu-sleep-0 is 0, but which idle state a
 * guest's gaps would reach is not modelled, so the shallow one is
 * charged).  The cluster with no CPU running: cluster-sleep-0 (24), the
 * state it reaches when all its CPUs sleep; its WFI figure (65) is above
 * its lowest busy point and only meaningful in EAS's own accounting.
 */
const FhEmuPowerModel fh_emu_juno_a57 = {
  .name = "Juno r0/r2 Cortex-A57 (ARM EAS energy model)",
  .core = juno_a57_core,
  .n_core = G_N_ELEMENTS (juno_a57_core),
  .core_idle = 15,
  .cluster = juno_a57_cluster,
  .n_cluster = G_N_ELEMENTS (juno_a57_cluster),
  .cluster_idle = 24,
};

double
fh_emu_power_at (const FhEmuPowerPoint *points, gsize n, guint cap, guint idle_power)
{
  gsize i = 1;
  double slope, p;

  g_return_val_if_fail (n >= 2, 0);
  if (cap >= points[n - 1].cap)
    return points[n - 1].power;
  /* the segment holding cap, or the lowest one extended below the table */
  while (i < n - 1 && points[i].cap < cap)
    i++;
  slope = ((double) points[i].power - points[i - 1].power) /
          ((double) points[i].cap - points[i - 1].cap);
  p = points[i - 1].power + slope * ((double) cap - points[i - 1].cap);
  return MAX (p, (double) idle_power);
}

double
fh_emu_busy_power (const FhEmuPowerModel *m, guint cap)
{
  return fh_emu_power_at (m->core, m->n_core, cap, m->core_idle) +
         fh_emu_power_at (m->cluster, m->n_cluster, cap, m->cluster_idle);
}

double
fh_emu_idle_power (const FhEmuPowerModel *m, guint n_cpus)
{
  return (double) m->core_idle * n_cpus + m->cluster_idle;
}

double
fh_emu_window_energy (const FhEmuPowerModel *m, guint cap, const double *busy, guint n_cpus,
                      double seconds)
{
  double core = fh_emu_power_at (m->core, m->n_core, cap, m->core_idle);
  double cluster = fh_emu_power_at (m->cluster, m->n_cluster, cap, m->cluster_idle);
  double e = 0, busiest = 0;

  for (guint i = 0; i < n_cpus; i++) {
    double b = CLAMP (busy[i], 0.0, 1.0);

    e += (b * core + (1 - b) * m->core_idle) * seconds;
    busiest = MAX (busiest, b);
  }
  e += (busiest * cluster + (1 - busiest) * m->cluster_idle) * seconds;
  return e;
}
