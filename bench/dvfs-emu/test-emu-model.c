/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The DVFS emulator's pure model: utilization, schedutil's rule, the
 * policy's limits and table, energy against the published power table.
 * The fixture's table (tests/agent/mkfixture.sh): 800..3200 MHz in
 * 400 MHz steps.
 */
#include <glib.h>

#include "fh-emu-energy.h"
#include "fh-emu-governor.h"

static const guint table_khz[] = { 3200000, 2800000, 2400000, 2000000, 1600000, 1200000, 800000 };
static const FhFreqTable fixture = {
  .cpuinfo_min_khz = 800000,
  .cpuinfo_max_khz = 3200000,
  .available_khz = table_khz,
  .n_available = G_N_ELEMENTS (table_khz),
};
static const FhFreqTable no_table = { .cpuinfo_min_khz = 800000, .cpuinfo_max_khz = 3200000 };

#define MS 1000000ull /* ns */

static void
test_util_pelt (void)
{
  double u = 0;

  /* always running: half-way to 1024 after one half-life, 32 ms */
  for (int i = 0; i < 32; i++)
    u = fh_emu_util_update (u, 1 * MS, 1 * MS);
  g_assert_cmpfloat_with_epsilon (u, 512, 0.5);
  /* the same in one 32 ms window: the average does not depend on the window */
  g_assert_cmpfloat_with_epsilon (fh_emu_util_update (0, 32 * MS, 32 * MS), 512, 0.5);
  /* a thread that ran a quarter of each window settles at a quarter */
  u = 0;
  for (int i = 0; i < 100; i++)
    u = fh_emu_util_update (u, 10 * MS / 4, 10 * MS);
  g_assert_cmpfloat_with_epsilon (u, 256, 1);
  /* idle: it halves every 32 ms */
  g_assert_cmpfloat_with_epsilon (fh_emu_util_update (800, 0, 32 * MS), 400, 0.5);
  /* more CPU time than the window (a clock step) is a full window, no more */
  g_assert_cmpfloat_with_epsilon (fh_emu_util_update (1024, 20 * MS, 10 * MS), 1024, 0.001);
}

static void
test_schedutil_perf (void)
{
  g_assert_cmpuint (fh_emu_schedutil_perf (400, 0, 1024), ==, 500);   /* 1.25 x util */
  g_assert_cmpuint (fh_emu_schedutil_perf (1000, 0, 1024), ==, 1024); /* capped */
  g_assert_cmpuint (fh_emu_schedutil_perf (1000, 0, 300), ==, 300);   /* uclamp max */
  g_assert_cmpuint (fh_emu_schedutil_perf (100, 800, 1024), ==, 800); /* uclamp min */
  g_assert_cmpuint (fh_emu_schedutil_perf (100, 900, 300), ==, 900);  /* min wins */
  g_assert_cmpuint (fh_emu_schedutil_perf (0, 0, 1024), ==, 0);
}

static void
test_resolve (void)
{
  /* the lowest step at or above the target */
  g_assert_cmpuint (fh_emu_resolve_freq (&fixture, 1900000, 800000, 3200000), ==, 2000000);
  g_assert_cmpuint (fh_emu_resolve_freq (&fixture, 2000000, 800000, 3200000), ==, 2000000);
  /* a max between steps: the highest step under it */
  g_assert_cmpuint (fh_emu_resolve_freq (&fixture, 3200000, 800000, 1900000), ==, 1600000);
  /* a min between steps: the lowest step above it */
  g_assert_cmpuint (fh_emu_resolve_freq (&fixture, 800000, 2100000, 3200000), ==, 2400000);
  /* min above max: max wins, as in cpufreq_set_policy() */
  g_assert_cmpuint (fh_emu_resolve_freq (&fixture, 800000, 2800000, 2000000), ==, 2000000);
  /* limits with no step between them: the clamped target */
  g_assert_cmpuint (fh_emu_resolve_freq (&fixture, 3200000, 2100000, 2300000), ==, 2300000);
  /* no table (intel_pstate-like): any kHz within the limits */
  g_assert_cmpuint (fh_emu_resolve_freq (&no_table, 1900000, 800000, 3200000), ==, 1900000);
  g_assert_cmpuint (fh_emu_resolve_freq (&no_table, 3200000, 800000, 1900000), ==, 1900000);
}

static void
test_governors (void)
{
  /* schedutil: perf x f_max, snapped up */
  g_assert_cmpuint (fh_emu_governor_freq (&fixture, "schedutil", 1024, 800000, 3200000), ==, 3200000);
  g_assert_cmpuint (fh_emu_governor_freq (&fixture, "schedutil", 0, 800000, 3200000), ==, 800000);
  g_assert_cmpuint (fh_emu_governor_freq (&fixture, "schedutil", 512, 800000, 3200000), ==, 1600000);
  g_assert_cmpuint (fh_emu_governor_freq (&fixture, "schedutil", 513, 800000, 3200000), ==, 2000000);
  /* and within the limits freqhintd writes */
  g_assert_cmpuint (fh_emu_governor_freq (&fixture, "schedutil", 1024, 800000, 2000000), ==, 2000000);
  g_assert_cmpuint (fh_emu_governor_freq (&fixture, "schedutil", 0, 2400000, 3200000), ==, 2400000);
  /* performance and powersave ignore the load */
  g_assert_cmpuint (fh_emu_governor_freq (&fixture, "performance", 0, 800000, 2800000), ==, 2800000);
  g_assert_cmpuint (fh_emu_governor_freq (&fixture, "powersave", 1024, 1200000, 3200000), ==, 1200000);
}

/*
 * The loop the emulator closes, without cgroups: a thread that always has
 * work gets f/f_max of each window and so ramps the policy to f_max; one
 * that never runs lets it fall to f_min.  Windows of 10 ms.
 */
static guint
settle (guint f, gboolean busy, guint max_khz, guint *windows)
{
  double util = busy ? 0 : 1024;

  for (*windows = 0; *windows < 200; (*windows)++) {
    guint64 ran = busy ? (guint64) (10 * MS * ((double) f / fixture.cpuinfo_max_khz)) : 0;
    guint next;

    util = fh_emu_util_update (util, ran, 10 * MS);
    next = fh_emu_governor_freq (&fixture, "schedutil", fh_emu_schedutil_perf (util, 0, 1024),
                                 800000, max_khz);
    if (next == f && ((busy && f == max_khz) || (!busy && f == 800000)))
      break;
    f = next;
  }
  return f;
}

static void
test_follows_load (void)
{
  guint n;

  g_assert_cmpuint (settle (800000, TRUE, 3200000, &n), ==, 3200000);
  g_test_message ("busy: 800 MHz -> 3.2 GHz in %u windows of 10 ms", n);
  /* PELT ramps in ~100-200 ms, schedutil's 1.25 lets it reach the top */
  g_assert_cmpuint (n, <, 40);
  g_assert_cmpuint (settle (3200000, FALSE, 3200000, &n), ==, 800000);
  g_test_message ("idle: 3.2 GHz -> 800 MHz in %u windows", n);
  /* a ceiling holds a busy thread under it */
  g_assert_cmpuint (settle (800000, TRUE, 2000000, &n), ==, 2000000);
}

static void
test_energy (void)
{
  const FhEmuPowerModel *m = &fh_emu_juno_a57;
  double busy1[] = { 1.0 }, busy2[] = { 1.0, 0.0 }, idle2[] = { 0.0, 0.0 }, half[] = { 0.5 };

  /* the published points: 1100 MHz = capacity 1024, core 616 + cluster 64 */
  g_assert_cmpfloat_with_epsilon (fh_emu_busy_power (m, 1024), 680, 1e-9);
  g_assert_cmpfloat_with_epsilon (fh_emu_busy_power (m, 744), 359 + 43, 1e-9);
  /* half-way between 417 (168 + 24) and 579 (251 + 32) */
  g_assert_cmpfloat_with_epsilon (fh_emu_busy_power (m, 498), 209.5 + 28, 1e-9);
  /* below the table: the lowest segment extended, the cluster floored at its idle power */
  g_assert_cmpfloat_with_epsilon (fh_emu_busy_power (m, 256),
                                  168 - (251.0 - 168) / (579 - 417) * (417 - 256) + 24, 1e-9);

  /* a one-CPU policy held busy at f_max for 2 s: P(f) x T */
  g_assert_cmpfloat_with_epsilon (fh_emu_window_energy (m, 1024, busy1, 1, 2.0), 680 * 2, 1e-9);
  /* in 200 windows of 10 ms: the same, within rounding */
  {
    double e = 0;

    for (int i = 0; i < 200; i++)
      e += fh_emu_window_energy (m, 1024, busy1, 1, 0.010);
    g_assert_cmpfloat_with_epsilon (e, 1360, 1e-6);
  }
  /* two CPUs, one busy: its core, the other's idle core, the busy cluster */
  g_assert_cmpfloat_with_epsilon (fh_emu_window_energy (m, 1024, busy2, 2, 1.0), 616 + 15 + 64,
                                  1e-9);
  /* all idle: idle power only, whatever the frequency */
  g_assert_cmpfloat_with_epsilon (fh_emu_window_energy (m, 1024, idle2, 2, 1.0),
                                  fh_emu_idle_power (m, 2), 1e-9);
  g_assert_cmpfloat_with_epsilon (fh_emu_idle_power (m, 2), 2 * 15 + 24, 1e-9);
  /* half busy: half of each */
  g_assert_cmpfloat_with_epsilon (fh_emu_window_energy (m, 744, half, 1, 1.0),
                                  0.5 * (359 + 43) + 0.5 * (15 + 24), 1e-9);
}

static const struct {
  const char *name;
  GTestFunc func;
} cases[] = {
  { "util-pelt", test_util_pelt },   { "schedutil-perf", test_schedutil_perf },
  { "resolve", test_resolve },       { "governors", test_governors },
  { "follows-load", test_follows_load }, { "energy", test_energy },
};

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *path = g_strconcat ("/dvfs-emu/", cases[i].name, NULL);

    g_test_add_func (path, cases[i].func);
  }
  return g_test_run ();
}
