/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit test: decisions proportional to change (issue 16 item 4).  A daemon
 * on a temporary fixture tree, VMs without connections, random sequences of
 * hints, placements, cgroup and sysctl changes, VMs coming and going; after
 * each step the incremental state must be what a full recompute from
 * scratch gives (fh_daemon_test_verify()), and a hint must not cost a full
 * pass.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>

#include "fh-config.h"
#include "fh-daemon.h"

#include <linux/virtio_freqhint.h>

static char *root;

static void
put (const char *rel, const char *content)
{
  g_autofree char *path = g_build_filename (root, rel, NULL);
  g_autofree char *dir = g_path_get_dirname (path);

  FILE *f;

  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  /* not g_file_set_contents(): its fsync makes 2500 steps take a minute */
  f = fopen (path, "w");
  g_assert_nonnull (f);
  g_assert_cmpint (fputs (content, f), >=, 0);
  g_assert_cmpint (fclose (f), ==, 0);
}

static void
put_cgroup (const char *cg, const char *min, const char *max)
{
  g_autofree char *a = g_strdup_printf ("cgroup%s/cpu.uclamp.min", cg);
  g_autofree char *b = g_strdup_printf ("cgroup%s/cpu.uclamp.max", cg);
  g_autofree char *mn = g_strdup_printf ("%s\n", min);
  g_autofree char *mx = g_strdup_printf ("%s\n", max);

  put (a, mn);
  put (b, mx);
}

static const char *const scopes[] = { "/machine.slice", "/machine.slice/a.scope",
                                      "/machine.slice/b.scope", "/machine.slice/b.scope/vcpu0" };

/* mkfixture.sh's thread: status, a 52-field stat (39: last CPU, 41: policy), cgroup */
static void
put_thread (guint tid, const char *allowed, guint last, guint policy, const char *cg)
{
  g_autofree char *status = g_strdup_printf (
      "Name:\tCPU %u/KVM\nTgid:\t1\nPid:\t%u\nCpus_allowed_list:\t%s\n", tid, tid, allowed);
  g_autoptr (GString) stat = g_string_new (NULL);
  g_autofree char *p_status = g_strdup_printf ("proc/%u/status", tid);
  g_autofree char *p_stat = g_strdup_printf ("proc/%u/stat", tid);
  g_autofree char *p_cg = g_strdup_printf ("proc/%u/cgroup", tid);
  g_autofree char *cgline = g_strdup_printf ("0::%s\n", cg);

  g_string_printf (stat, "%u (CPU 0/KVM) S 1 1 1 0 -1 4194560", tid);
  for (int i = 10; i <= 52; i++)
    g_string_append_printf (stat, " %u", i == 39 ? last : i == 41 ? policy : 0);
  g_string_append_c (stat, '\n');
  put (p_status, status);
  put (p_stat, stat->str);
  put (p_cg, cgline);
}

static void
random_thread (GRand *r, guint tid)
{
  guint cpu = g_rand_int_range (r, 0, 9); /* 8: a CPU past the host's */
  g_autofree char *pin = g_strdup_printf ("%u", cpu);

  put_thread (tid, g_rand_boolean (r) ? pin : "0-7", cpu, g_rand_int_range (r, 0, 10) == 0 ? 1 : 0,
              scopes[g_rand_int_range (r, 0, G_N_ELEMENTS (scopes))]);
}

static void
make_host (void)
{
  static const guint pols[] = { 0, 2, 4, 6 };

  put ("sys/devices/system/cpu/online", "0-7\n");
  for (guint i = 0; i < G_N_ELEMENTS (pols); i++) {
    g_autofree char *d = g_strdup_printf ("sys/devices/system/cpu/cpufreq/policy%u", pols[i]);
    g_autofree char *cpus = g_strdup_printf ("%u %u\n", pols[i], pols[i] + 1);
    g_autofree char *a = g_build_filename (d, "affected_cpus", NULL);
    g_autofree char *mn = g_build_filename (d, "cpuinfo_min_freq", NULL);
    g_autofree char *mx = g_build_filename (d, "cpuinfo_max_freq", NULL);
    g_autofree char *gov = g_build_filename (d, "scaling_governor", NULL);

    put (a, cpus);
    put (mn, "800000\n");
    put (mx, "3200000\n");
    put (gov, "schedutil\n");
  }
  put ("proc/sys/kernel/sched_util_clamp_min", "1024\n");
  put ("proc/sys/kernel/sched_util_clamp_max", "1024\n");
  put ("proc/sys/kernel/sched_util_clamp_min_rt_default", "1024\n");
  put ("proc/sys/kernel/osrelease", "6.1.0-fixture\n");
  put_cgroup ("/machine.slice", "0.00", "max");
  put_cgroup ("/machine.slice/a.scope", "10.00", "60.00");
  put_cgroup ("/machine.slice/b.scope", "0.00", "max");
  put_cgroup ("/machine.slice/b.scope/vcpu0", "max", "50.00");
}

static FhGuestHint
random_hint (GRand *r)
{
  FhGuestHint h = { 0 };
  guint kind = g_rand_int_range (r, 0, 10);

  if (kind == 0)
    return h; /* no hint */
  h.flags = g_rand_int_range (r, 0, 8) & (VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID |
                                          VIRTIO_FREQHINT_R_PERF_VALID);
  if (kind == 1)
    h.flags |= VIRTIO_FREQHINT_R_IDLE;
  if (h.flags == 0)
    h.flags = VIRTIO_FREQHINT_R_PERF_VALID;
  /* few distinct values: ties on a CPU's maximum are the interesting case */
  h.clamp_min = g_rand_int_range (r, 0, 5) * 256;
  h.clamp_max = g_rand_int_range (r, 0, 5) * 256;
  h.perf = g_rand_int_range (r, 0, 5) * 256;
  return h;
}

#define N_VMS 8
#define N_VCPUS 4

static FhVm *
add_vm (FhDaemon *d, GRand *r, guint id)
{
  guint tids[N_VCPUS];
  g_autofree char *name = g_strdup_printf ("vm%u", id);

  for (guint j = 0; j < N_VCPUS; j++) {
    tids[j] = 1000 + id * 10 + j;
    random_thread (r, tids[j]);
  }
  return fh_daemon_test_add_vm (d, name, tids, N_VCPUS);
}

static void
check (FhDaemon *d, guint step, const char *what)
{
  g_autofree char *why = NULL;

  if (!fh_daemon_test_verify (d, &why))
    g_error ("step %u (%s): incremental state is not a full recompute's: %s", step, what, why);
}

/* The daemon reads the fixture under root and writes nothing (backend none). */
static void
fixture_config (FhConfig *config)
{
  g_free (config->sysfs_root);
  config->sysfs_root = g_build_filename (root, "sys", NULL);
  g_free (config->proc_root);
  config->proc_root = g_build_filename (root, "proc", NULL);
  g_free (config->cgroup_root);
  config->cgroup_root = g_build_filename (root, "cgroup", NULL);
  g_free (config->backend);
  config->backend = g_strdup ("none");
  config->check_thread_owner = FALSE;
}

static void
test_incremental_random (void)
{
  g_autoptr (GError) error = NULL;
  FhConfig *config = fh_config_new ();
  FhDaemon *d;
  FhVm *vms[N_VMS];
  guint32 seed = g_test_rand_int ();
  g_autoptr (GRand) r = g_rand_new_with_seed (seed);
  guint incremental = 0, next_id = N_VMS;

  g_test_message ("seed %u", seed);
  root = g_dir_make_tmp ("fh-test-daemon-XXXXXX", &error);
  g_assert_no_error (error);
  make_host ();
  fixture_config (config);
  {
    /* operator bounds for one VM, per-vCPU placement for another */
    FhVmConfig *vc = g_new0 (FhVmConfig, 1);

    vc->key = g_strdup ("vm1");
    vc->op = (FhClamp){ 200, 700 };
    g_hash_table_insert (config->vms, vc->key, vc);
    vc = g_new0 (FhVmConfig, 1);
    vc->key = g_strdup ("vm2");
    vc->op = FH_CLAMP_NONE;
    vc->cpus = g_array_new (FALSE, FALSE, sizeof (guint));
    for (guint c = 3; c < 5; c++)
      g_array_append_val (vc->cpus, c);
    g_hash_table_insert (config->vms, vc->key, vc);
  }
  d = fh_daemon_new (config, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < N_VMS; i++)
    vms[i] = add_vm (d, r, i);
  fh_daemon_test_pass (d, TRUE);
  check (d, 0, "start");

  for (guint step = 1; step <= 2500; step++) {
    guint what = g_rand_int_range (r, 0, 100);
    guint i = g_rand_int_range (r, 0, N_VMS);
    guint j = g_rand_int_range (r, 0, N_VCPUS);

    if (what < 70) {
      /* hints on one or two VMs: only those are decided again */
      guint64 full = d->full_passes_total;
      FhGuestHint h = random_hint (r);

      fh_daemon_test_hint (d, vms[i], j, &h);
      if (what < 10) {
        h = random_hint (r);
        fh_daemon_test_hint (d, vms[(i + 1) % N_VMS], (j + 1) % N_VCPUS, &h);
      }
      fh_daemon_test_pass (d, FALSE);
      g_assert_cmpuint (d->full_passes_total, ==, full);
      incremental++;
      check (d, step, "hint");
    } else if (what < 82) {
      /* a thread moves, is pinned, turns real-time, changes group */
      random_thread (r, vms[i]->vcpus[j].tid);
      fh_daemon_test_probe (d, vms[i]);
      fh_daemon_test_pass (d, FALSE);
      check (d, step, "placement");
    } else if (what < 88) {
      /* a group's clamp changes: every VM is read again (an inotify event) */
      static const char *const vals[] = { "0.00", "25.00", "50.00", "75.00", "max" };

      put_cgroup (scopes[g_rand_int_range (r, 0, G_N_ELEMENTS (scopes))],
                  vals[g_rand_int_range (r, 0, 3)], vals[g_rand_int_range (r, 1, 5)]);
      for (guint k = 0; k < N_VMS; k++)
        fh_daemon_test_probe (d, vms[k]);
      fh_daemon_test_pass (d, FALSE);
      check (d, step, "cgroup");
    } else if (what < 92) {
      /* a thread exits, or another process's thread takes its id */
      g_autofree char *p = g_strdup_printf ("proc/%u/status", vms[i]->vcpus[j].tid);
      g_autofree char *path = g_build_filename (root, p, NULL);

      g_unlink (path);
      fh_daemon_test_probe (d, vms[i]);
      fh_daemon_test_pass (d, FALSE);
      check (d, step, "thread gone");
      random_thread (r, vms[i]->vcpus[j].tid);
      fh_daemon_test_probe (d, vms[i]);
      fh_daemon_test_pass (d, FALSE);
      check (d, step, "thread back");
    } else if (what < 96) {
      /* a VM leaves and another one comes */
      fh_daemon_test_remove_vm (d, vms[i]);
      fh_daemon_test_pass (d, FALSE);
      check (d, step, "VM left");
      vms[i] = add_vm (d, r, next_id++ % 100);
      fh_daemon_test_pass (d, FALSE);
      check (d, step, "VM joined");
    } else {
      /* the system defaults change: a host-wide pass */
      g_autofree char *v = g_strdup_printf ("%u\n", g_rand_int_range (r, 0, 5) * 256);

      put (g_rand_boolean (r) ? "proc/sys/kernel/sched_util_clamp_max"
                              : "proc/sys/kernel/sched_util_clamp_min_rt_default",
           v);
      fh_daemon_test_probe (d, vms[i]);
      fh_daemon_test_pass (d, FALSE);
      check (d, step, "sysctl");
    }
  }
  g_assert_cmpuint (incremental, >, 1200);
  fh_daemon_free (d);
  {
    g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", root);

    g_assert_cmpint (system (cmd), ==, 0);
  }
  g_clear_pointer (&root, g_free);
}

/* Run the main loop until v's hold, which fell at fell_us, has lapsed. */
static void
wait_hold_lapse (FhVm *vm, FhVcpu *v, gint64 fell_us)
{
  gint64 deadline = fell_us + 5 * G_USEC_PER_SEC;

  while (fh_vcpu_held (vm, v) && g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, TRUE);
  g_assert_false (fh_vcpu_held (vm, v));
}

/*
 * MR-30 with MR-17: a fall in a guest's request is held, and the daemon
 * decides the VM again when the hold lapses, with no record arriving.
 */
static void
test_hold_lapse (void)
{
  static const FhGuestHint fg = { VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID, 800,
                                  1024, 0 };
  static const FhGuestHint bg = { VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID, 0,
                                  300, 0 };
  static const FhGuestHint idle = { VIRTIO_FREQHINT_R_IDLE, 0, 0, 0 };
  g_autoptr (GError) error = NULL;
  FhConfig *config = fh_config_new ();
  const guint tids[] = { 2001, 2002 };
  FhDaemon *d;
  FhVm *vm;
  FhVcpu *v;
  gint64 fell, deadline;
  guint64 updates;

  root = g_dir_make_tmp ("fh-test-daemon-XXXXXX", &error);
  g_assert_no_error (error);
  make_host ();
  put_thread (tids[0], "2", 2, 0, "/machine.slice/b.scope");
  put_thread (tids[1], "4", 4, 0, "/machine.slice/b.scope");
  fixture_config (config);
  config->hold_ms = 40;
  d = fh_daemon_new (config, &error);
  g_assert_no_error (error);
  vm = fh_daemon_test_add_vm (d, "held", tids, G_N_ELEMENTS (tids));
  v = &vm->vcpus[0];
  fh_daemon_test_pass (d, TRUE);

  fh_daemon_test_hint (d, vm, 0, &fg);
  fh_daemon_test_pass (d, FALSE);
  g_assert_true (v->d.active);
  g_assert_false (fh_vcpu_held (vm, v));
  g_assert_null (vm->holds); /* no records while nothing is held */
  g_assert_cmpuint (d->cpus[2].floor, ==, 800);

  /* the fall: held, CPU 2 keeps the floor and the ceiling */
  fh_daemon_test_hint (d, vm, 0, &bg);
  fell = g_get_monotonic_time ();
  fh_daemon_test_pass (d, FALSE);
  g_assert_true (fh_vcpu_held (vm, v));
  g_assert_cmpuint (v->d.req.min, ==, 800);
  g_assert_cmpuint (v->d.req.max, ==, 1024);
  g_assert_cmpuint (d->cpus[2].floor, ==, 800);
  g_assert_cmpuint (d->cpus[2].ceiling, ==, 1024);
  g_assert_cmpuint (vm->hold_timer, !=, 0);
  g_assert_nonnull (vm->holds);

  /* no record: the daemon's own timer ends the hold */
  updates = d->updates_total;
  wait_hold_lapse (vm, v, fell);
  g_assert_cmpint (g_get_monotonic_time () - fell, >=, 40 * G_TIME_SPAN_MILLISECOND);
  g_assert_cmpuint (d->updates_total, >, updates);
  g_assert_cmpuint (v->d.req.min, ==, 0);
  g_assert_cmpuint (v->d.req.max, ==, 300);
  g_assert_cmpuint (d->cpus[2].floor, ==, 0);
  g_assert_cmpuint (d->cpus[2].ceiling, ==, 300);
  g_assert_cmpuint (vm->hold_timer, ==, 0);
  g_assert_null (vm->holds); /* dropped at the last lapse */

  /* vCPU 1 goes idle: held active with what it asked, then it lapses;
   * asking again later it starts afresh, a lower ceiling is no fall */
  v = &vm->vcpus[1];
  fh_daemon_test_hint (d, vm, 1, &fg);
  fh_daemon_test_pass (d, FALSE);
  fh_daemon_test_hint (d, vm, 1, &idle);
  fell = g_get_monotonic_time ();
  fh_daemon_test_pass (d, FALSE);
  g_assert_true (fh_vcpu_held (vm, v));
  g_assert_true (v->d.active);
  g_assert_cmpuint (v->d.req.min, ==, 800);
  g_assert_cmpuint (d->cpus[4].floor, ==, 800);
  wait_hold_lapse (vm, v, fell);
  g_assert_false (v->d.active);
  g_assert_null (vm->holds);
  fh_daemon_test_hint (d, vm, 1, &bg);
  fh_daemon_test_pass (d, FALSE);
  g_assert_false (fh_vcpu_held (vm, v));
  g_assert_null (vm->holds);
  g_assert_cmpuint (v->d.req.max, ==, 300);
  g_assert_cmpuint (d->cpus[4].ceiling, ==, 300);

  /* a VM that goes with a hold pending takes its timer with it */
  fh_daemon_test_hint (d, vm, 0, &fg);
  fh_daemon_test_pass (d, FALSE);
  fh_daemon_test_hint (d, vm, 0, &bg);
  fh_daemon_test_pass (d, FALSE);
  g_assert_cmpuint (vm->hold_timer, !=, 0);
  fh_daemon_test_remove_vm (d, vm);
  fh_daemon_test_pass (d, FALSE);
  updates = d->updates_total;
  deadline = g_get_monotonic_time () + 100 * G_TIME_SPAN_MILLISECOND;
  while (g_get_monotonic_time () < deadline) {
    g_main_context_iteration (NULL, FALSE);
    g_usleep (2000);
  }
  g_assert_cmpuint (d->updates_total, ==, updates);
  fh_daemon_free (d);
  {
    g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", root);

    g_assert_cmpint (system (cmd), ==, 0);
  }
  g_clear_pointer (&root, g_free);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/daemon/incremental-random", test_incremental_random);
  g_test_add_func ("/daemon/hold-lapse", test_hold_lapse);
  return g_test_run ();
}
