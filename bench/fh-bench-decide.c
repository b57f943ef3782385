/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fh-bench-decide: the decision pass one vCPU's hint causes, beside its
 * anchor, a full recompute, timed in one run on the same state (issue 18).
 *
 *   fh-bench-decide --sysfs-root S --proc-root P --cgroup-root C
 *                   --vms N --vcpus M [--tid-base B] [--rounds R] [--hints H]
 *
 * freqhintd's own code (libfh-agent: fh_daemon_new() and the pass of
 * daemon_update()), without sockets: N VMs of M vCPUs whose threads
 * B + i*M + j are read from the fixture tree (bench/agent.sh's or
 * bench/scale.sh's), every vCPU given a hint, one full pass.  Then R rounds
 * of: H passes after one random vCPU's new hint (the incremental path: that
 * VM's vCPUs decided again, the CPUs and policies they sit on re-aggregated)
 * and one full recompute (every vCPU of every VM decided again, every CPU
 * and policy re-aggregated: what a host-wide change costs, and what every
 * pass cost before issue 16).  Interleaved, so that both see the same
 * machine.  Backend "none": the decision, not the sysfs write (bench/agent.sh
 * times that alone).  Each pass is timed in CPU time of this thread
 * (CLOCK_THREAD_CPUTIME_ID, as freqhintd's status last_pass_us), so a loaded
 * machine does not inflate it.  A hint pass that turned into a full one, or
 * a final state that is not a full recompute's (fh_daemon_test_verify()),
 * fails the run.
 *
 * Prints one line: vcpus=... hint_passes=... hint_p50_us=... hint_p90_us=...
 * hint_max_us=... full_passes=... full_p50_us=... full_max_us=...
 * hint_vs_full=... (p50 over p50) setup_s=...
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <glib.h>

#include <linux/virtio_freqhint.h>

#include "fh-config.h"
#include "fh-daemon.h"

static double
thread_cpu_us (void)
{
  struct timespec t;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

/* q-quantile of a sorted array, nearest rank */
static double
quantile (const double *v, guint n, double q)
{
  guint k = (guint) (q * n + 0.999999);

  return v[MIN (MAX (k, 1), n) - 1];
}

static FhGuestHint
random_hint (GRand *r)
{
  FhGuestHint h = { VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID |
                        VIRTIO_FREQHINT_R_PERF_VALID,
                    0, 1024, 0 };

  h.clamp_min = (guint) g_rand_int_range (r, 0, 9) * 64;
  h.clamp_max = h.clamp_min + (guint) g_rand_int_range (r, 0, 1024 - h.clamp_min + 1);
  h.perf = (guint) g_rand_int_range (r, 0, 1025);
  if (g_rand_int_range (r, 0, 10) == 0)
    h.flags |= VIRTIO_FREQHINT_R_IDLE;
  return h;
}

/* One pass, timed. */
static double
timed_pass (FhDaemon *d, gboolean full)
{
  double t0 = thread_cpu_us ();

  fh_daemon_test_pass (d, full);
  return thread_cpu_us () - t0;
}

int
main (int argc, char **argv)
{
  g_autofree char *sysfs = NULL, *proc = NULL, *cgroup = NULL;
  gint n_vms = 1000, n_vcpus = 16, tid_base = 100000, rounds = 20, hints = 10;
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- one hint's pass against a full recompute");
  GOptionEntry entries[] = {
    { "sysfs-root", 0, 0, G_OPTION_ARG_FILENAME, &sysfs, "fixture sysfs", "DIR" },
    { "proc-root", 0, 0, G_OPTION_ARG_FILENAME, &proc, "fixture procfs", "DIR" },
    { "cgroup-root", 0, 0, G_OPTION_ARG_FILENAME, &cgroup, "fixture cgroupfs", "DIR" },
    { "vms", 0, 0, G_OPTION_ARG_INT, &n_vms, "VMs (1000)", "N" },
    { "vcpus", 0, 0, G_OPTION_ARG_INT, &n_vcpus, "vCPUs per VM (16)", "M" },
    { "tid-base", 0, 0, G_OPTION_ARG_INT, &tid_base, "thread id of VM 0's vCPU 0", "B" },
    { "rounds", 0, 0, G_OPTION_ARG_INT, &rounds, "full recomputes (20)", "R" },
    { "hints", 0, 0, G_OPTION_ARG_INT, &hints, "hint passes per full one (10)", "H" },
    { NULL },
  };
  g_autoptr (GRand) r = g_rand_new_with_seed (18);
  g_autofree double *hint_us = NULL, *full_us = NULL;
  g_autofree guint *tids = NULL;
  g_autofree FhVm **vms = NULL;
  g_autofree char *why = NULL;
  FhConfig *config;
  FhDaemon *d;
  guint n_hint = 0, n_full = 0, n_missing = 0;
  double t_setup = g_get_monotonic_time () / 1e6;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    fprintf (stderr, "fh-bench-decide: %s\n", error->message);
    return 2;
  }
  if (!sysfs || !proc || !cgroup || n_vms < 1 || n_vcpus < 1 || n_vcpus > 256 || rounds < 1 ||
      hints < 1) {
    fprintf (stderr, "fh-bench-decide: need the three roots and sane sizes\n");
    return 2;
  }
  config = fh_config_new ();
  g_free (config->sysfs_root);
  config->sysfs_root = g_strdup (sysfs);
  g_free (config->proc_root);
  config->proc_root = g_strdup (proc);
  g_free (config->cgroup_root);
  config->cgroup_root = g_strdup (cgroup);
  g_free (config->backend);
  config->backend = g_strdup ("none");
  /* The fixture's threads belong to no process of ours. */
  config->check_thread_owner = FALSE;
  g_free (config->libvirt_state_dir);
  config->libvirt_state_dir = g_strdup ("");
  d = fh_daemon_new (config, &error);
  if (!d) {
    fprintf (stderr, "fh-bench-decide: %s\n", error->message);
    return 1;
  }

  vms = g_new0 (FhVm *, n_vms);
  tids = g_new0 (guint, n_vcpus);
  for (gint i = 0; i < n_vms; i++) {
    g_autofree char *name = g_strdup_printf ("bench-%05d", i);

    for (gint j = 0; j < n_vcpus; j++)
      tids[j] = (guint) (tid_base + i * n_vcpus + j);
    vms[i] = fh_daemon_test_add_vm (d, name, tids, (guint) n_vcpus);
    for (gint j = 0; j < n_vcpus; j++) {
      FhGuestHint h = random_hint (r);

      n_missing += !vms[i]->vcpus[j].tid_ok;
      fh_daemon_test_hint (d, vms[i], (guint) j, &h);
    }
  }
  /* A fixture without the threads would time passes over nothing placed. */
  if (n_missing) {
    fprintf (stderr, "fh-bench-decide: %u of %d vCPU threads not in %s\n", n_missing,
             n_vms * n_vcpus, proc);
    fh_daemon_free (d);
    return 1;
  }
  fh_daemon_test_pass (d, TRUE);
  t_setup = g_get_monotonic_time () / 1e6 - t_setup;

  hint_us = g_new (double, (gsize) rounds * hints);
  full_us = g_new (double, rounds);
  for (gint k = 0; k < rounds; k++) {
    for (gint h = 0; h < hints; h++) {
      FhVm *vm = vms[g_rand_int_range (r, 0, n_vms)];
      FhGuestHint hint = random_hint (r);
      guint64 full = d->full_passes_total;

      fh_daemon_test_hint (d, vm, (guint) g_rand_int_range (r, 0, n_vcpus), &hint);
      hint_us[n_hint++] = timed_pass (d, FALSE);
      if (d->full_passes_total != full) {
        fprintf (stderr, "fh-bench-decide: a hint caused a full pass\n");
        return 1;
      }
    }
    full_us[n_full++] = timed_pass (d, TRUE);
  }
  if (!fh_daemon_test_verify (d, &why)) {
    fprintf (stderr, "fh-bench-decide: state is not a full recompute's: %s\n", why);
    return 1;
  }
  qsort (hint_us, n_hint, sizeof *hint_us, cmp_double);
  qsort (full_us, n_full, sizeof *full_us, cmp_double);
  printf ("vcpus=%d hint_passes=%u hint_p50_us=%.1f hint_p90_us=%.1f hint_max_us=%.1f "
          "full_passes=%u full_p50_us=%.0f full_max_us=%.0f hint_vs_full=%.5f setup_s=%.1f\n",
          n_vms * n_vcpus, n_hint, quantile (hint_us, n_hint, 0.5), quantile (hint_us, n_hint, 0.9),
          hint_us[n_hint - 1], n_full, quantile (full_us, n_full, 0.5), full_us[n_full - 1],
          quantile (hint_us, n_hint, 0.5) / quantile (full_us, n_full, 0.5), t_setup);
  fh_daemon_free (d);
  return 0;
}
