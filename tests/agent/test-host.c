/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests: host discovery and config loading on temporary trees, through
 * the same root-prefix helper the daemon uses.
 */
#include <stdlib.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "fh-backend.h"
#include "fh-config.h"
#include "fh-host.h"
#include "fh-paths.h"

/*
 * freqhintd logs structured (G_LOG_USE_STRUCTURED), which
 * g_test_expect_message() does not see: a warning must be the one
 * expect_warning() named, any other fails the test.
 */
static const char *expected_warning;
static guint expected_seen;

static void
expect_warning (const char *pattern)
{
  expected_warning = pattern;
  expected_seen = 0;
}

static void
assert_expected_warning (void)
{
  g_assert_cmpuint (expected_seen, ==, 1);
  expected_warning = NULL;
}

static GLogWriterOutput
check_logs (GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
  const char *message = "";

  for (gsize i = 0; i < n; i++)
    if (g_strcmp0 (fields[i].key, "MESSAGE") == 0)
      message = fields[i].value;
  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING)) {
    if (expected_warning && g_pattern_match_simple (expected_warning, message)) {
      expected_seen++;
      return G_LOG_WRITER_HANDLED;
    }
    g_printerr ("unexpected warning: %s\n", message);
    abort ();
  }
  return g_log_writer_standard_streams (level, fields, n, data);
}

static char *root;

static void
put (const char *rel, const char *content)
{
  g_autofree char *path = g_build_filename (root, rel, NULL);
  g_autofree char *dir = g_path_get_dirname (path);

  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  g_assert_true (g_file_set_contents (path, content, -1, NULL));
}

static void
paths_for (FhPaths *p)
{
  g_autofree char *sys = g_build_filename (root, "sys", NULL);
  g_autofree char *proc = g_build_filename (root, "proc", NULL);
  g_autofree char *cg = g_build_filename (root, "cgroup", NULL);

  fh_paths_init (p, sys, proc, cg);
}

static void
thread (guint tid, const char *allowed, guint last, const char *cgroup_text)
{
  g_autofree char *status = g_strdup_printf ("Name:\tCPU 0/KVM\nTgid:\t77\nPid:\t%u\n"
                                             "Cpus_allowed_list:\t%s\n", tid, allowed);
  g_autoptr (GString) stat = g_string_new (NULL);
  g_autofree char *sp = g_strdup_printf ("proc/%u/status", tid);
  g_autofree char *tp = g_strdup_printf ("proc/%u/stat", tid);
  g_autofree char *cp = g_strdup_printf ("proc/%u/cgroup", tid);

  g_string_printf (stat, "%u (CPU 0/KVM) S", tid);
  for (int i = 4; i < 39; i++)
    g_string_append (stat, " 0");
  g_string_append_printf (stat, " %u 0 0\n", last);
  put (sp, status);
  put (tp, stat->str);
  put (cp, cgroup_text);
}

static void
test_paths (void)
{
  FhPaths p;
  g_autofree char *a = NULL, *b = NULL;

  fh_paths_init (&p, "/fx/sys", NULL, NULL);
  a = fh_path (&p, FH_ROOT_SYSFS, "devices/system/cpu/cpufreq/policy%u/scaling_min_freq", 2);
  b = fh_path (&p, FH_ROOT_PROC, "/%u/stat", 10);
  g_assert_cmpstr (a, ==, "/fx/sys/devices/system/cpu/cpufreq/policy2/scaling_min_freq");
  g_assert_cmpstr (b, ==, "/proc/10/stat");
  fh_paths_clear (&p);
}

static void
test_host_load (void)
{
  FhPaths p;
  g_autoptr (FhHost) h = fh_host_new ();
  g_autoptr (GError) error = NULL;
  FhPolicy *pol;

  put ("sys/devices/system/cpu/online", "0-3\n");
  put ("sys/devices/system/cpu/cpufreq/policy2/affected_cpus", "2 3\n");
  put ("sys/devices/system/cpu/cpufreq/policy2/cpuinfo_min_freq", "400000\n");
  put ("sys/devices/system/cpu/cpufreq/policy2/cpuinfo_max_freq", "2000000\n");
  put ("sys/devices/system/cpu/cpufreq/policy2/scaling_governor", "schedutil\n");
  put ("sys/devices/system/cpu/cpufreq/policy0/affected_cpus", "0 1\n");
  put ("sys/devices/system/cpu/cpufreq/policy0/cpuinfo_min_freq", "400000\n");
  put ("sys/devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq", "2000000\n");
  put ("sys/devices/system/cpu/cpufreq/policy0/scaling_available_frequencies",
       "2000000 1000000 400000\n");
  put ("proc/sys/kernel/sched_util_clamp_min", "garbage\n"); /* falls back to 1024 */
  put ("proc/sys/kernel/sched_util_clamp_max", "900\n");
  put ("proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
  paths_for (&p);

  expect_warning ("*sched_util_clamp_min*");
  g_assert_true (fh_host_load (h, &p, &error));
  assert_expected_warning ();
  g_assert_no_error (error);
  g_assert_cmpuint (h->n_cpus, ==, 4);
  g_assert_cmpuint (h->policies->len, ==, 2);
  pol = g_ptr_array_index (h->policies, 0); /* sorted by id */
  g_assert_cmpuint (pol->id, ==, 0);
  g_assert_cmpuint (pol->available->len, ==, 3);
  pol = g_ptr_array_index (h->policies, 1);
  g_assert_cmpuint (pol->id, ==, 2);
  g_assert_cmpuint (pol->available->len, ==, 0);
  g_assert_cmpint (h->cpu_policy[3], ==, 1);
  g_assert_cmpint (h->cpu_policy[0], ==, 0);
  g_assert_cmpuint (h->sys.min, ==, 1024);
  g_assert_cmpuint (h->sys.max, ==, 900);
  g_assert_cmpstr (fh_host_governor (h), ==, "");
  /* MR-4 looks at the governor of the vCPU's own CPU and the kernel release */
  g_assert_cmpstr (fh_host_cpu_governor (h, 3), ==, "schedutil");
  g_assert_cmpstr (fh_host_cpu_governor (h, 0), ==, "");
  g_assert_null (fh_host_cpu_governor (h, 4));
  g_assert_null (fh_host_cpu_governor (h, -1));
  g_assert_cmpstr (h->kernel_release, ==, "6.1.0-18-amd64");

  /* a broken policy is an error, not a silent omission */
  put ("sys/devices/system/cpu/cpufreq/policy2/cpuinfo_max_freq", "100\n");
  g_assert_false (fh_host_load (h, &p, &error));
  g_assert_nonnull (error);
  fh_paths_clear (&p);
}

/*
 * PA-26: one sample per policy, and each vCPU's value from its CPU's
 * policy, clamped into its class; 0 wherever something is unknown.
 */
static void
test_cur_freq (void)
{
  FhPaths p;
  g_autoptr (FhHost) h = fh_host_new ();
  g_autoptr (GError) error = NULL;
  guint khz[2];
  char *top = root;

  /* a tree of its own: the other tests' policies have tables */
  root = g_build_filename (top, "cur-freq", NULL);
  put ("sys/devices/system/cpu/online", "0-4\n");
  put ("sys/devices/system/cpu/cpufreq/policy0/affected_cpus", "0 1\n");
  put ("sys/devices/system/cpu/cpufreq/policy0/cpuinfo_min_freq", "800000\n");
  put ("sys/devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq", "3000000\n");
  put ("sys/devices/system/cpu/cpufreq/policy0/scaling_cur_freq", "2400000\n");
  put ("sys/devices/system/cpu/cpufreq/policy2/affected_cpus", "2 3\n");
  put ("sys/devices/system/cpu/cpufreq/policy2/cpuinfo_min_freq", "400000\n");
  put ("sys/devices/system/cpu/cpufreq/policy2/cpuinfo_max_freq", "2000000\n");
  put ("sys/devices/system/cpu/cpufreq/policy2/scaling_cur_freq", "garbage\n");
  put ("proc/sys/kernel/sched_util_clamp_min", "1024\n");
  put ("proc/sys/kernel/sched_util_clamp_max", "1024\n");
  paths_for (&p);
  g_assert_true (fh_host_load (h, &p, &error));
  g_assert_no_error (error);
  fh_host_build_freq_classes (h, 100000);
  g_assert_cmpuint (h->n_freq_classes, ==, 2);
  g_assert_cmpuint (h->cpu_class[0], ==, 0);
  g_assert_cmpuint (h->cpu_class[2], ==, 1);

  fh_host_sample_cur_freq (h, &p, khz);
  g_assert_cmpuint (khz[0], ==, 2400000);
  g_assert_cmpuint (khz[1], ==, 0); /* unreadable: unknown */
  g_assert_cmpuint (fh_host_cur_khz (h, khz, 1, 0), ==, 2400000);
  g_assert_cmpuint (fh_host_cur_khz (h, khz, 3, 1), ==, 0);
  /* no class, no CPU, a CPU without a policy: unknown */
  g_assert_cmpuint (fh_host_cur_khz (h, khz, 1, VIRTIO_FREQHINT_NO_FREQ_CLASS), ==, 0);
  g_assert_cmpuint (fh_host_cur_khz (h, khz, -1, 0), ==, 0);
  g_assert_cmpuint (fh_host_cur_khz (h, khz, 4, 0), ==, 0);
  g_assert_cmpuint (fh_host_cur_khz (h, khz, 5, 0), ==, 0);
  /* a thread allowed on both classes has the wider: the sample is clamped into it */
  put ("sys/devices/system/cpu/cpufreq/policy2/scaling_cur_freq", "1800000\n");
  fh_host_sample_cur_freq (h, &p, khz);
  g_assert_cmpuint (fh_host_cur_khz (h, khz, 2, 1), ==, 1800000);
  g_assert_cmpuint (fh_host_cur_khz (h, khz, 2, 0), ==, 1800000);
  put ("sys/devices/system/cpu/cpufreq/policy2/scaling_cur_freq", "400000\n");
  fh_host_sample_cur_freq (h, &p, khz);
  g_assert_cmpuint (fh_host_cur_khz (h, khz, 2, 0), ==, 800000);
  /* a boost frequency above cpuinfo_max_freq is clamped to the class's maximum */
  put ("sys/devices/system/cpu/cpufreq/policy0/scaling_cur_freq", "3500000\n");
  fh_host_sample_cur_freq (h, &p, khz);
  g_assert_cmpuint (fh_host_cur_khz (h, khz, 0, 0), ==, 3000000);
  fh_paths_clear (&p);
  g_free (root);
  root = top;
}

static void
test_probe_v2 (void)
{
  FhPaths p;
  FhThreadInfo info = { 0 };
  FhClamp l;

  put ("cgroup/machine.slice/cpu.uclamp.min", "max\n");
  put ("cgroup/machine.slice/cpu.uclamp.max", "max\n");
  put ("cgroup/machine.slice/vm.scope/cpu.uclamp.min", "10.00\n");
  put ("cgroup/machine.slice/vm.scope/cpu.uclamp.max", "50.00\n");
  /* vcpu0 has no cpu.uclamp files: the controller stops above it */
  put ("cgroup/machine.slice/vm.scope/vcpu0/cgroup.procs", "");
  thread (501, "3", 1, "0::/machine.slice/vm.scope/vcpu0\n");
  paths_for (&p);

  fh_host_probe_thread (&p, 501, 8, &info);
  g_assert_true (info.exists);
  g_assert_cmpint (info.tgid, ==, 77);
  g_assert_true (info.pinned);
  g_assert_cmpint (info.cpu, ==, 3);
  g_assert_cmpstr (info.cgroup, ==, "/machine.slice/vm.scope/vcpu0");
  g_assert_cmpuint (info.levels->n, ==, 2);
  l = info.levels->v[1];
  g_assert_cmpuint (l.min, ==, 102);
  g_assert_cmpuint (l.max, ==, 512);

  /* unpinned: last CPU from stat */
  thread (502, "0-7", 6, "0::/machine.slice\n");
  fh_host_probe_thread (&p, 502, 8, &info);
  g_assert_false (info.pinned);
  g_assert_cmpint (info.cpu, ==, 6);
  g_assert_cmpuint (info.levels->n, ==, 1);
  /* last CPU beyond the online ones: unknown */
  fh_host_probe_thread (&p, 502, 4, &info);
  g_assert_cmpint (info.cpu, ==, -1);

  /* garbage in a level: that level and below are ignored, with a warning */
  put ("cgroup/machine.slice/vm.scope/cpu.uclamp.max", "fifty\n");
  expect_warning ("*fifty*");
  fh_host_probe_thread (&p, 501, 8, &info);
  assert_expected_warning ();
  g_assert_cmpuint (info.levels->n, ==, 1);

  /* a path that tries to climb out of the cgroup root */
  thread (503, "1", 1, "0::/machine.slice/../../../etc\n");
  fh_host_probe_thread (&p, 503, 8, &info);
  g_assert_cmpuint (info.levels->n, ==, 1);

  /* a thread that is gone, and tid 0 */
  fh_host_probe_thread (&p, 999, 8, &info);
  g_assert_false (info.exists);
  g_assert_cmpint (info.cpu, ==, -1);
  fh_host_probe_thread (&p, 0, 8, &info);
  g_assert_false (info.exists);
  fh_thread_info_clear (&info);
  fh_paths_clear (&p);
}

static void
test_probe_v1 (void)
{
  FhPaths p;
  FhThreadInfo info = { 0 };

  put ("cgroup/cpu,cpuacct/machine/cpu.uclamp.min", "20.00\n");
  put ("cgroup/cpu,cpuacct/machine/cpu.uclamp.max", "max\n");
  put ("cgroup/cpu,cpuacct/machine/vm1/cpu.uclamp.min", "max\n");
  put ("cgroup/cpu,cpuacct/machine/vm1/cpu.uclamp.max", "75.00\n");
  thread (601, "2", 2, "11:memory:/machine/vm1\n4:cpu,cpuacct:/machine/vm1\n0::/\n");
  paths_for (&p);
  fh_host_probe_thread (&p, 601, 8, &info);
  g_assert_cmpstr (info.cgroup, ==, "cpu,cpuacct:/machine/vm1");
  g_assert_cmpuint (info.levels->n, ==, 2);
  g_assert_cmpuint (info.levels->v[0].min, ==, 205);
  g_assert_cmpuint (info.levels->v[1].min, ==, 1024);
  g_assert_cmpuint (info.levels->v[1].max, ==, 768);
  fh_thread_info_clear (&info);
  fh_paths_clear (&p);
}

/*
 * Interned chains (issue 29, item 7): threads in groups with the same
 * requests share one copy, a different request gets its own, and the copy
 * goes with its last thread.
 */
static void
test_levels_interned (void)
{
  FhPaths p;
  FhThreadInfo a = { 0 }, b = { 0 }, c = { 0 };
  guint before = fh_levels_n_interned ();

  put ("cgroup/machine.slice/cpu.uclamp.min", "0.00\n");
  put ("cgroup/machine.slice/cpu.uclamp.max", "max\n");
  put ("cgroup/machine.slice/a.scope/cpu.uclamp.min", "5.00\n");
  put ("cgroup/machine.slice/a.scope/cpu.uclamp.max", "90.00\n");
  put ("cgroup/machine.slice/b.scope/cpu.uclamp.min", "5.00\n");
  put ("cgroup/machine.slice/b.scope/cpu.uclamp.max", "90.00\n");
  put ("cgroup/machine.slice/c.scope/cpu.uclamp.min", "5.00\n");
  put ("cgroup/machine.slice/c.scope/cpu.uclamp.max", "80.00\n");
  thread (701, "1", 1, "0::/machine.slice/a.scope\n");
  thread (702, "2", 2, "0::/machine.slice/b.scope\n");
  thread (703, "3", 3, "0::/machine.slice/c.scope\n");
  paths_for (&p);
  fh_host_probe_thread (&p, 701, 8, &a);
  fh_host_probe_thread (&p, 702, 8, &b);
  fh_host_probe_thread (&p, 703, 8, &c);
  g_assert_cmpuint (a.levels->n, ==, 2);
  g_assert_true (a.levels == b.levels);
  g_assert_true (a.levels != c.levels);
  g_assert_cmpuint (c.levels->v[1].max, ==, 819);
  g_assert_cmpuint (fh_levels_n_interned (), ==, before + 2);
  fh_thread_info_clear (&a);
  g_assert_cmpuint (fh_levels_n_interned (), ==, before + 2);
  fh_thread_info_clear (&b);
  fh_thread_info_clear (&c);
  g_assert_cmpuint (fh_levels_n_interned (), ==, before);
  fh_paths_clear (&p);
}

static void
test_config (void)
{
  g_autoptr (FhConfig) c = fh_config_new ();
  g_autoptr (GError) error = NULL;
  g_autofree char *path = g_build_filename (root, "good.conf", NULL);
  const FhVmConfig *vm;
  static const char *const bad[] = {
    "[daemon]\npoll_interval_ms=1\n",
    "[daemon]\nsocket_mode=999\n",
    "[daemon]\nallowed_uids=root\n",
    "[merge]\nperf_headroom=fast\n",
    "[merge]\nperf_headroom=0\n",
    "[merge]\nperf_headroom=0.09\n", /* MR-4: 0.1 <= h <= 2.0 */
    "[merge]\nperf_headroom=2.01\n",
    "[metrics]\nport=70000\n",
    "[vm a]\nfloor=101\n",
    "[vm a]\nfloor=60\nceiling=50\n",
    "[vm a]\ncpus=1,x\n",
    "[vm ]\nfloor=1\n",
    "not a key file",
  };

  g_assert_true (g_file_set_contents (path,
    "[daemon]\nbackend=cpufreq\nsocket_mode=0600\nallowed_uids=64055;1000\n"
    "[merge]\nperf_headroom=0.75\nperf_as_floor=false\nperf_only=true\n"
    "[metrics]\nenabled=false\n"
    "[vm web]\nfloor=20\nceiling=80.50\ncpus=3,4\n"
    "[vm 5b1c3a2e-0d4f-4c55-9a1e-0123456789ab]\nceiling=max\n", -1, NULL));
  g_assert_true (fh_config_load (c, path, TRUE, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (c->backend, ==, "cpufreq");
  g_assert_cmpuint (c->socket_mode, ==, 0600);
  g_assert_cmpuint (c->allowed_uids->len, ==, 2);
  g_assert_true (fh_config_uid_allowed (c, 1000, 1000));
  g_assert_true (fh_config_uid_allowed (c, 0, 0));
  g_assert_false (fh_config_uid_allowed (c, 1001, 1001));
  g_assert_cmpfloat (c->perf_headroom, ==, 0.75);
  g_assert_false (c->perf_as_floor);
  g_assert_true (c->perf_only);
  g_assert_cmpint (c->metrics_port, ==, -1);
  vm = fh_config_lookup_vm (c, "web", "00000000-0000-0000-0000-000000000000");
  g_assert_nonnull (vm);
  g_assert_cmpuint (vm->op.min, ==, 205);
  g_assert_cmpuint (vm->op.max, ==, 824); /* 80.50% -> 824.32 */
  g_assert_cmpuint (vm->cpus->len, ==, 2);
  vm = fh_config_lookup_vm (c, "other", "5b1c3a2e-0d4f-4c55-9a1e-0123456789ab");
  g_assert_nonnull (vm);
  g_assert_cmpuint (vm->op.min, ==, 0);
  g_assert_null (fh_config_lookup_vm (c, "other", "x"));

  /* a missing optional file is fine, a missing required one is not */
  g_assert_true (fh_config_load (c, "/nonexistent/freqhintd.conf", FALSE, NULL));
  g_assert_false (fh_config_load (c, "/nonexistent/freqhintd.conf", TRUE, NULL));

  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_autoptr (FhConfig) b = fh_config_new ();
    g_autoptr (GError) e = NULL;

    g_test_message ("bad config: %s", bad[i]);
    g_assert_true (g_file_set_contents (path, bad[i], -1, NULL));
    g_assert_false (fh_config_load (b, path, TRUE, &e));
    g_assert_nonnull (e);
  }
}

/*
 * Issue 15 item 5, issue 17 item 4: no value is read loosely and no key is
 * ignored; the error names file, line, key and value.
 */
/* MR-26: the policy is field 41, counted after the last ')' of comm. */
static void
test_stat_policy (void)
{
  guint policy = 99;
  g_autoptr (GString) line = g_string_new ("1234 (CPU 0/K)M) S 1 1 1 0 -1 4194560");

  for (guint f = 10; f <= 38; f++)
    g_string_append (line, " 0");
  g_string_append (line, " 5 0 1"); /* 39 processor, 40 rt_priority, 41 policy */
  for (guint f = 42; f <= 52; f++)
    g_string_append (line, " 0");
  g_string_append_c (line, '\n');
  g_assert_true (fh_stat_policy (line->str, &policy));
  g_assert_cmpuint (policy, ==, 1);
  g_assert_false (fh_stat_policy ("1 (x) S 1 2 3", &policy));
  g_assert_false (fh_stat_policy ("no parenthesis", &policy));
}

static void
test_config_strict (void)
{
  g_autofree char *path = g_build_filename (root, "strict.conf", NULL);
  static const struct {
    const char *text;
    const char *want; /* in the message, after "PATH:" */
  } cases[] = {
    { "[daemon]\ncheck_thread_owner=yes\n", "2: [daemon] check_thread_owner: \"yes\" is not a boolean" },
    { "[daemon]\n# c\n\ncheck_thread_owner = on\n", "4: [daemon] check_thread_owner: \"on\"" },
    { "[daemon]\ncheck_thread_owner=banana\n", "2: [daemon] check_thread_owner: \"banana\"" },
    { "[merge]\nperf_as_floor=False\n", "2: [merge] perf_as_floor: \"False\"" },
    { "[metrics]\nenabled=no\n", "2: [metrics] enabled: \"no\"" },
    { "[daemon]\nrequire_libvirt=yes\n", "2: [daemon] require_libvirt: \"yes\" is not a boolean" },
    { "[libvirt]\nmirror_ceiling=1x\n", "2: [libvirt] mirror_ceiling: \"1x\"" },
    { "[daemon]\nbackedn=cpufreq\n", "2: [daemon] unknown key \"backedn\"" },
    { "[daemon]\npoll_interval_ms=100\n[merge]\nperf_as_flor=true\n", "4: [merge] unknown key \"perf_as_flor\"" },
    { "[vm web]\nfloor=10\nceil=20\n", "3: [vm web] unknown key \"ceil\"" },
    { "[daemon]\n[deamon]\nbackend=none\n", "2: [deamon]: unknown section" },
    { "[daemon]\nbackend=cpufrq\n", "2: [daemon] backend: \"cpufrq\" is not a backend" },
    { "[daemon]\npoll_interval_ms=10s\n", "2: [daemon] poll_interval_ms: \"10s\" is not an integer" },
    { "[daemon]\nsocket_mode=rw\n", "2: [daemon] socket_mode: \"rw\"" },
    /* 4.4c: 0 turns sampling off; a rate faster than 10 ms is refused */
    { "[cpufreq]\ncur_freq_interval_ms=5\n",
      "2: [cpufreq] cur_freq_interval_ms: 5 is neither 0 (off) nor in 10..60000" },
    { "[cpufreq]\ncur_freq_interval_ms=60001\n",
      "2: [cpufreq] cur_freq_interval_ms: \"60001\" is not an integer in 0..60000" },
    { "[vm a]\nfloor=101\n", "2: [vm a] floor: " },
    { "[vm a]\npidfile=/run/a.pid\nunit=a.scope\n", "3: [vm a] unit: a VM's process is named by pidfile= or unit=, not both" },
    { "[vm a]\npidfile=run/a.pid\n", "2: [vm a] pidfile: \"run/a.pid\" is not an absolute path" },
    { "[vm a]\nunit=../a.scope\n", "2: [vm a] unit: \"../a.scope\" is not a systemd unit name" },
    { "[vm a]\nunit=a.slice\n", "2: [vm a] unit: \"a.slice\" is not a systemd unit name" },
    /* the vsock transport (spec/vsock-transport.md §5) */
    { "[daemon]\nrelay_user=0\n", "2: [daemon] relay_user: root: the front end" },
    { "[daemon]\nrelay_user=no-such-user-here\n", "2: [daemon] relay_user: \"no-such-user-here\" is no user" },
    { "[vm a]\npidfile=/run/a.pid\nvsock_cid=2\n", "3: [vm a] vsock_cid: \"2\" is not a guest CID" },
    { "[vm a]\npidfile=/run/a.pid\nvsock_cid=4294967295\n", "3: [vm a] vsock_cid: \"4294967295\"" },
    { "[vm a]\nvsock_cid=5\n", "2: [vm a] vsock_cid: needs pidfile= or unit=" },
    { "[vm a]\npidfile=/run/a.pid\nvsock_uds=a.sock\n", "3: [vm a] vsock_uds: \"a.sock\" is not an absolute path" },
    { "[vm a]\npidfile=/run/a.pid\nvsock_cid=5\n[vm b]\npidfile=/run/b.pid\nvsock_cid=5\n",
      "6: [vm b] vsock_cid: already [vm a]'s" },
    { "[vm a]\npidfile=/run/a.pid\nvsock_uds=/run/v\n[vm b]\npidfile=/run/b.pid\nvsock_uds=/run/v\n",
      "6: [vm b] vsock_uds: already [vm a]'s" },
  };
  static const char *const good_bools[] = { "true", "false", "1", "0" };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autoptr (FhConfig) c = fh_config_new ();
    g_autoptr (GError) e = NULL;
    g_autofree char *want = g_strdup_printf ("%s:%s", path, cases[i].want);

    g_test_message ("config: %s", cases[i].text);
    g_assert_true (g_file_set_contents (path, cases[i].text, -1, NULL));
    g_assert_false (fh_config_load (c, path, TRUE, &e));
    g_assert_nonnull (e);
    if (!g_str_has_prefix (e->message, want))
      g_error ("message \"%s\", want it to start with \"%s\"", e->message, want);
  }
  for (gsize i = 0; i < G_N_ELEMENTS (good_bools); i++) {
    g_autoptr (FhConfig) c = fh_config_new ();
    g_autoptr (GError) e = NULL;
    g_autofree char *text = g_strdup_printf ("[daemon]\ncheck_thread_owner=%s\n", good_bools[i]);

    g_assert_true (g_file_set_contents (path, text, -1, NULL));
    g_assert_true (fh_config_load (c, path, TRUE, &e));
    g_assert_no_error (e);
    g_assert_cmpint (c->check_thread_owner, ==, i % 2 == 0);
  }
  {
    g_autoptr (FhConfig) c = fh_config_new ();

    g_assert_cmpstr (c->backend, ==, "auto");
    g_assert_false (c->require_libvirt);
    g_assert_cmpstr (c->libvirt_state_dir, ==, "/run/libvirt/qemu");
  }
}

/*
 * MR-21/MR-22: the thread's own policy, KEEP_PARAMS | RESET_ON_FORK |
 * UTIL_CLAMP_MIN | UTIL_CLAMP_MAX and never KEEP_POLICY (which would make
 * the kernel ignore RESET_ON_FORK); release is -1/-1.
 */
static void
test_uclamp_attr (void)
{
  struct sched_attr a;

  fh_uclamp_fill_attr (&a, 3 /* SCHED_BATCH */, (FhClamp){ 300, 700 }, FALSE);
  g_assert_cmpuint (a.size, ==, 56);
  g_assert_cmpuint (a.sched_policy, ==, 3);
  g_assert_cmpuint (a.sched_flags, ==, 0x71);
  g_assert_cmpuint (a.sched_flags & SCHED_FLAG_KEEP_POLICY, ==, 0);
  g_assert_cmpuint (a.sched_util_min, ==, 300);
  g_assert_cmpuint (a.sched_util_max, ==, 700);
  g_assert_cmpint (a.sched_nice, ==, 0);
  g_assert_cmpuint (a.sched_priority, ==, 0);

  /* MR-26: an RT thread's minimum left to the kernel (-1), the maximum set */
  fh_uclamp_fill_attr_full (&a, 1 /* SCHED_FIFO */, (FhClamp){ 1024, 700 }, FALSE, TRUE);
  g_assert_cmpuint (a.sched_policy, ==, 1);
  g_assert_cmpuint (a.sched_flags, ==, 0x71);
  g_assert_cmpuint (a.sched_util_min, ==, 0xffffffffu);
  g_assert_cmpuint (a.sched_util_max, ==, 700);

  fh_uclamp_fill_attr (&a, 0, (FhClamp){ 300, 700 }, TRUE);
  g_assert_cmpuint (a.sched_policy, ==, 0);
  g_assert_cmpuint (a.sched_flags, ==, 0x71);
  g_assert_cmpuint (a.sched_util_min, ==, 0xffffffffu);
  g_assert_cmpuint (a.sched_util_max, ==, 0xffffffffu);
}

/* The one line of a fixture file, as freqhintd left it. */
static char *
get (const char *rel)
{
  g_autofree char *path = g_build_filename (root, rel, NULL);
  char *content = NULL;

  g_assert_true (g_file_get_contents (path, &content, NULL, NULL));
  return g_strchomp (content);
}

/*
 * MR-20 with MR-25: a ceiling that is a raise against what freqhintd last
 * wrote, but a lowering against what another writer put in the file since,
 * is a lowering: inside the write interval it waits, as any lowering does.
 */
static void
test_cpufreq_raise_after_external (void)
{
  const char *max = "sys/devices/system/cpu/cpufreq/policy0/scaling_max_freq";
  char *top = root;
  g_autoptr (FhHost) h = fh_host_new ();
  g_autoptr (FhBackend) b = NULL;
  g_autoptr (GArray) targets = g_array_new (FALSE, TRUE, sizeof (FhTidTarget));
  g_autoptr (GError) error = NULL;
  g_autofree char *state = NULL;
  g_autofree char *v = NULL;
  FhPolicy *pol;
  FhPaths p;
  gint64 t;

  root = g_build_filename (top, "raise-after-external", NULL);
  put ("sys/devices/system/cpu/online", "0\n");
  put ("sys/devices/system/cpu/cpufreq/policy0/affected_cpus", "0\n");
  put ("sys/devices/system/cpu/cpufreq/policy0/cpuinfo_min_freq", "400000\n");
  put ("sys/devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq", "2000000\n");
  put ("sys/devices/system/cpu/cpufreq/policy0/scaling_available_frequencies",
       "2000000 1800000 1400000 1000000 400000\n");
  put ("sys/devices/system/cpu/cpufreq/policy0/scaling_governor", "schedutil\n");
  put ("sys/devices/system/cpu/cpufreq/policy0/scaling_min_freq", "400000\n");
  put (max, "2000000\n");
  paths_for (&p);
  g_assert_true (fh_host_load (h, &p, &error));
  state = g_build_filename (root, "state", NULL);
  b = fh_backend_new ("cpufreq", h, &p, state, &error);
  g_assert_no_error (error);
  b->min_write_interval_us = 5 * G_TIME_SPAN_SECOND;
  g_assert_true (fh_backend_start (b, &error));
  pol = g_ptr_array_index (h->policies, 0);

  /* freqhintd caps the policy: written at once (nothing written before) */
  t = g_get_monotonic_time () + G_TIME_SPAN_SECOND;
  pol->decision = (FhCpuDecision){ .active = TRUE, .ceiling = 512, .n_active = 1 };
  fh_backend_apply (b, targets, t);
  v = get (max);
  g_assert_cmpstr (v, ==, "1000000");
  g_clear_pointer (&v, g_free);

  /* another writer lifts it to 1.8 GHz, the host's ceiling from now on */
  put (max, "1800000\n");
  /* a higher guest ceiling, 1.4 GHz: above 1.0, below 1.8, so it waits */
  pol->decision.ceiling = 800;
  expect_warning ("*scaling_max_freq changed by another writer*");
  fh_backend_apply (b, targets, t + G_TIME_SPAN_MILLISECOND);
  assert_expected_warning ();
  v = get (max);
  g_assert_cmpstr (v, ==, "1800000");
  g_clear_pointer (&v, g_free);

  /* ...until the interval is over */
  fh_backend_apply (b, targets, t + 5 * G_TIME_SPAN_SECOND + G_TIME_SPAN_MILLISECOND);
  v = get (max);
  g_assert_cmpstr (v, ==, "1400000");

  fh_backend_stop (b);
  g_clear_pointer (&b, fh_backend_free);
  fh_paths_clear (&p);
  g_free (root);
  root = top;
}

int
main (int argc, char **argv)
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  /* Messages passed on to GLib's writer go to stderr: stdout is TAP. */
  g_log_writer_default_set_use_stderr (TRUE);
  g_log_set_writer_func (check_logs, NULL, NULL);
  root = g_dir_make_tmp ("fh-test-host-XXXXXX", NULL);
  g_assert_nonnull (root);
  g_test_add_func ("/host/paths", test_paths);
  g_test_add_func ("/host/load", test_host_load);
  g_test_add_func ("/host/cur-freq", test_cur_freq);
  g_test_add_func ("/host/probe-v2", test_probe_v2);
  g_test_add_func ("/host/probe-v1", test_probe_v1);
  g_test_add_func ("/host/levels-interned", test_levels_interned);
  g_test_add_func ("/host/config", test_config);
  g_test_add_func ("/host/config-strict", test_config_strict);
  g_test_add_func ("/host/stat-policy", test_stat_policy);
  g_test_add_func ("/host/uclamp-attr", test_uclamp_attr);
  g_test_add_func ("/host/cpufreq-raise-after-external", test_cpufreq_raise_after_external);
  ret = g_test_run ();
  {
    g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", root);

    (void) !system (cmd);
  }
  g_free (root);
  return ret;
}
