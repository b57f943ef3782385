/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Energy of an emulated policy: a published per-frequency power table,
 * applied per CPU and per cluster (= cpufreq policy).  Pure.
 *
 * The table is ARM's energy model of the Juno r0/r2 Cortex-A57 cluster
 * (two CPUs, 450..1100 MHz), as the Energy Aware Scheduling patches
 * carried it: arch/arm64/kernel/energy_model.h ("Juno (r0, r2)",
 * cap_states_core_juno_a57, cap_states_cluster_juno_a57 and their
 * idle_states, Copyright ARM Ltd. 2016, in the EAS/Android common kernels)
 * and ARM's LISA toolkit, libs/utils/platforms/juno_energy.py
 * (a57_cpu_active_states, a57_cluster_active_states, *_idle_states).
 * It was chosen because it gives busy AND idle power of one core and its
 * cluster from one measurement; the mainline Energy Model
 * (dynamic-power-coefficient in DT) has no idle power.
 *
 * Units are the model's: ARM normalised them ("there are no unit
 * requirements for the data ... one bogo-joule/watt must be the same
 * quantity for all data").  They are mW-scale but not calibrated, so
 * compare energies between runs on the same model, not with a meter.
 *
 * Points are indexed by capacity (1024 x f / f_max), which is how a
 * fixture policy's frequencies, whatever their range, are mapped onto
 * the model: a policy at f has capacity 1024 x f / cpuinfo_max_freq and
 * costs the model's power at that capacity, linearly interpolated between
 * the published points.  Below the lowest point (the fixture goes down to
 * 25 % of f_max, Juno's A57 to 41 %) the lowest segment's line is
 * extended, never below that component's idle power.
 */
#pragma once

#include <glib.h>

typedef struct {
  guint cap;   /* capacity at the operating point, 0..1024 */
  guint power; /* model units */
} FhEmuPowerPoint;

typedef struct {
  const char *name;
  const FhEmuPowerPoint *core; /* one CPU running, ascending capacity */
  gsize n_core;
  guint core_idle;             /* one CPU in WFI */
  const FhEmuPowerPoint *cluster; /* the cluster while any of its CPUs runs */
  gsize n_cluster;
  guint cluster_idle;          /* the cluster while none runs */
} FhEmuPowerModel;

extern const FhEmuPowerModel fh_emu_juno_a57;

/* The power of points at capacity cap, interpolated as described above. */
double fh_emu_power_at (const FhEmuPowerPoint *points, gsize n, guint cap, guint idle_power);

/* One busy CPU and its cluster at cap: the "P(f)" of a one-CPU policy. */
double fh_emu_busy_power (const FhEmuPowerModel *m, guint cap);
/* The same all idle. */
double fh_emu_idle_power (const FhEmuPowerModel *m, guint n_cpus);

/*
 * Energy of one policy over one window of `seconds` at capacity cap:
 * each of its n_cpus CPUs busy for the fraction busy[i] of the window
 * (core power at cap) and idle the rest (core idle power); the cluster at
 * its busy power for the fraction the busiest CPU was busy, idle power
 * the rest.  (With one vCPU per policy, as the bench places them, the
 * busiest CPU's time is exactly when the cluster had work; with more,
 * overlapping is assumed, a lower bound of the cluster's busy time.)
 */
double fh_emu_window_energy (const FhEmuPowerModel *m, guint cap, const double *busy,
                             guint n_cpus, double seconds);
