/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests: the sysfs/procfs/cgroupfs value parsers, good and bad content. */
#include <glib.h>

#include "fh-parse.h"

typedef struct {
  const char *text;
  int value; /* -1: error */
} UclampCase;

static void
test_uclamp (void)
{
  /*
   * Expected values from capacity_from_percent():
   * DIV_ROUND_CLOSEST(percent_hundredths * 1024, 10000).
   */
  static const UclampCase cases[] = {
    { "max\n", 1024 },     /* cpu.uclamp.max default, and cpu.uclamp.min at 100% */
    { "max", 1024 },
    { "0.00\n", 0 },       /* cpu.uclamp.min default */
    { "100.00\n", 1024 },
    { "50.00\n", 512 },
    { "25.00\n", 256 },
    { "20.00\n", 205 },    /* 204.8 rounds up */
    { "10.00\n", 102 },    /* 102.4 rounds down */
    { "33.33\n", 341 },    /* 341.30 */
    { "0.05\n", 1 },       /* 0.512 */
    { "0.04\n", 0 },       /* 0.4096 */
    { "99.99\n", 1024 },   /* 1023.90: the kernel then prints "max" */
    { "99.95\n", 1023 },   /* 1023.49 */
    { "50", 512 },         /* as written by a user: no decimals */
    { "50.5", 517 },       /* one decimal: 50.50% -> 517.12 */
    { "12.345", 126 },     /* third decimal rounds: 12.35% -> 126.46 */
    { "12.344", 126 },     /* 12.34% -> 126.36 */
    { "100.004", 1024 },   /* rounds to 100.00 */
    { "100.005", -1 },     /* rounds to 100.01: -ERANGE */
    { "100.01", -1 },
    { "101", -1 },
    { "", -1 },
    { "\n", -1 },
    { "-1.00", -1 },
    { "+5", -1 },
    { "MAX", -1 },
    { "max2", -1 },
    { "5.", -1 },
    { ".5", -1 },
    { "5.5.5", -1 },
    { "abc", -1 },
    { "50.00 junk", -1 },
    { "99999999999999999999", -1 },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autoptr (GError) error = NULL;
    guint v = 9999;
    gboolean ok = fh_parse_uclamp (cases[i].text, &v, &error);

    g_test_message ("uclamp \"%s\"", cases[i].text);
    if (cases[i].value < 0) {
      g_assert_false (ok);
      g_assert_error (error, FH_PARSE_ERROR, error->code);
      g_assert_cmpuint (v, ==, 9999);
    } else {
      g_assert_no_error (error);
      g_assert_cmpuint (v, ==, (guint) cases[i].value);
    }
  }

  /* Round trip of every value the kernel can print. */
  for (guint pct = 0; pct <= 10000; pct++) {
    g_autofree char *s = fh_format_uclamp_percent (pct);
    guint v;

    g_assert_true (fh_parse_uclamp (s, &v, NULL));
    g_assert_cmpuint (v, ==, (pct * 1024 + 5000) / 10000);
  }
}

static void
test_integers (void)
{
  guint64 v;
  guint u;
  GError *error = NULL;

  g_assert_true (fh_parse_u64 ("3200000\n", &v, NULL));
  g_assert_cmpuint (v, ==, 3200000);
  g_assert_true (fh_parse_u64 ("18446744073709551615", &v, NULL));
  g_assert_false (fh_parse_u64 ("18446744073709551616", &v, NULL));
  g_assert_false (fh_parse_u64 ("", &v, NULL));
  g_assert_false (fh_parse_u64 ("-1", &v, NULL));
  g_assert_false (fh_parse_u64 ("12 34", &v, NULL));
  g_assert_false (fh_parse_u64 ("0x10", &v, &error));
  g_assert_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_INVALID);
  g_clear_error (&error);

  g_assert_true (fh_parse_uint_range ("1024\n", 0, 1024, &u, NULL));
  g_assert_cmpuint (u, ==, 1024);
  g_assert_false (fh_parse_uint_range ("1025\n", 0, 1024, &u, &error));
  g_assert_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_RANGE);
  g_clear_error (&error);
}

static void
test_u32_list (void)
{
  g_autoptr (GArray) a = fh_parse_u32_list ("3200000 2400000 1600000 800000 \n", NULL);
  g_autoptr (GArray) e = fh_parse_u32_list ("\n", NULL);

  g_assert_nonnull (a);
  g_assert_cmpuint (a->len, ==, 4);
  g_assert_cmpuint (g_array_index (a, guint, 3), ==, 800000);
  g_assert_nonnull (e);
  g_assert_cmpuint (e->len, ==, 0);
  g_assert_null (fh_parse_u32_list ("100 abc", NULL));
  g_assert_null (fh_parse_u32_list ("4294967296", NULL));
}

static void
test_cpu_list (void)
{
  struct {
    const char *text;
    const char *expect; /* NULL: error */
  } cases[] = {
    { "0-3\n", "0,1,2,3" },
    { "5\n", "5" },
    { "0,2-3,7", "0,2,3,7" },
    { "7,0-1,1", "0,1,7" },
    { "\n", "" },
    { "3-1", NULL },
    { "0-", NULL },
    { "-3", NULL },
    { "a", NULL },
    { "0,,1", NULL },
    { "1-64", NULL }, /* beyond max_cpus */
    { "64", NULL },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autoptr (GError) error = NULL;
    g_autoptr (GArray) cpus = fh_parse_cpu_list (cases[i].text, 64, &error);

    g_test_message ("cpu list \"%s\"", cases[i].text);
    if (!cases[i].expect) {
      g_assert_null (cpus);
      g_assert_nonnull (error);
    } else {
      g_autoptr (GString) s = g_string_new (NULL);

      g_assert_no_error (error);
      for (guint j = 0; j < cpus->len; j++)
        g_string_append_printf (s, "%s%u", j ? "," : "", g_array_index (cpus, guint, j));
      g_assert_cmpstr (s->str, ==, cases[i].expect);
    }
  }
}

static void
test_status (void)
{
  const char *status = "Name:\tqemu-system-x86\nTgid:\t4242\nPid:\t4250\n"
                       "Cpus_allowed:\tff\nCpus_allowed_list:\t2\n";
  g_autofree char *list = fh_parse_status_field (status, "Cpus_allowed_list", NULL);
  g_autofree char *tgid = fh_parse_status_field (status, "Tgid", NULL);
  GError *error = NULL;

  g_assert_cmpstr (list, ==, "2");
  g_assert_cmpstr (tgid, ==, "4242");
  /* "Cpus_allowed" must not match the longer key's line, nor the other way round */
  g_assert_null (fh_parse_status_field ("Cpus_allowed_list_x:\t1\n", "Cpus_allowed_list", &error));
  g_assert_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_MISSING);
  g_clear_error (&error);
}

static void
test_proc_cgroup (void)
{
  g_autoptr (FhCgroupPath) v2 = fh_parse_proc_cgroup ("0::/machine.slice/vm-a.scope/vcpu0\n", NULL);
  g_autoptr (FhCgroupPath) root = fh_parse_proc_cgroup ("0::/\n", NULL);
  g_autoptr (FhCgroupPath) v1 = fh_parse_proc_cgroup (
    "12:pids:/machine.slice\n4:cpu,cpuacct:/machine.slice/vm:b\n1:name=systemd:/x\n0::/x\n", NULL);
  g_autoptr (FhCgroupPath) v1cpuset = NULL;
  GError *error = NULL;

  g_assert_cmpint (v2->version, ==, 2);
  g_assert_null (v2->hierarchy);
  g_assert_cmpstr (v2->path, ==, "/machine.slice/vm-a.scope/vcpu0");
  g_assert_cmpstr (root->path, ==, "/");
  g_assert_cmpint (v1->version, ==, 1);
  g_assert_cmpstr (v1->hierarchy, ==, "cpu,cpuacct");
  g_assert_cmpstr (v1->path, ==, "/machine.slice/vm:b"); /* ':' inside the path */

  /* "cpuset" is not "cpu": falls back to the v2 line. */
  v1cpuset = fh_parse_proc_cgroup ("3:cpuset:/a\n0::/b\n", NULL);
  g_assert_cmpint (v1cpuset->version, ==, 2);
  g_assert_cmpstr (v1cpuset->path, ==, "/b");

  g_assert_null (fh_parse_proc_cgroup ("", &error));
  g_assert_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_MISSING);
  g_clear_error (&error);
  g_assert_null (fh_parse_proc_cgroup ("3:cpuset:/a\n", &error));
  g_assert_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_MISSING);
  g_clear_error (&error);
  g_assert_null (fh_parse_proc_cgroup ("garbage\n", &error));
  g_assert_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_INVALID);
  g_clear_error (&error);
  g_assert_null (fh_parse_proc_cgroup ("0::relative\n", &error));
  g_clear_error (&error);
  g_assert_null (fh_parse_proc_cgroup ("x:cpu:/a\n", &error));
  g_clear_error (&error);
}

static void
test_stat (void)
{
  /* comm with spaces and a ')' inside, as prctl(PR_SET_NAME) allows */
  const char *stat = "4250 (CPU 0/K)M) S 1 4242 4242 0 -1 4194560 100 0 0 0 500 20 0 0 20 0 "
                     "8 0 1000 1000000 500 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 "
                     "17 6 0 0 0 0 0\n";
  guint cpu = 99;
  GError *error = NULL;

  g_assert_true (fh_parse_stat_processor (stat, &cpu, NULL));
  g_assert_cmpuint (cpu, ==, 6);
  g_assert_false (fh_parse_stat_processor ("4250 (x) S 1 2 3\n", &cpu, &error));
  g_assert_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_MISSING);
  g_clear_error (&error);
  g_assert_false (fh_parse_stat_processor ("no comm here", &cpu, &error));
  g_assert_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_INVALID);
  g_clear_error (&error);
  {
    /* 36 good fields, then garbage exactly at field 39 */
    g_autoptr (GString) bad = g_string_new ("1 (a)");

    for (int i = 3; i < 39; i++)
      g_string_append (bad, " 0");
    g_string_append (bad, " x 0\n");
    g_assert_false (fh_parse_stat_processor (bad->str, &cpu, &error));
  }
  g_assert_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_INVALID);
  g_clear_error (&error);
}

/* MR-29: a thread's run time, from schedstat (ns) or stat (utime + stime, ticks). */
static void
test_run_time (void)
{
  /* schedstat: its first field, in ns; anything else there is refused */
  static const char *const refused[] = { "", "-1 0 0", "12x 0 0", "99999999999999999999999 0 0" };
  guint64 v = 0;
  g_autoptr (GString) stat = g_string_new ("42 (CPU 0/K)M) 1 2) S 1 40 40 0 -1 4194560 0 0 0 0 150 25");

  g_assert_true (fh_parse_schedstat_run_ns ("123456789 2000 17\n", &v, NULL));
  g_assert_cmpuint (v, ==, 123456789);
  for (gsize i = 0; i < G_N_ELEMENTS (refused); i++)
    g_assert_false (fh_parse_schedstat_run_ns (refused[i], &v, NULL));
  /* fields counted after the last ')': a comm with spaces and ')' shifts nothing */
  for (int i = 16; i <= 52; i++)
    g_string_append (stat, " 7");
  g_assert_true (fh_parse_stat_cputime (stat->str, &v, NULL));
  g_assert_cmpuint (v, ==, 175);
  g_assert_false (fh_parse_stat_cputime ("42 (a) S 1 40 40 0 -1 0 0 0 0 0 5", &v, NULL));
  g_assert_false (fh_parse_stat_cputime ("42 (a) S 1 40 40 0 -1 0 0 0 0 0 x 5", &v, NULL));
  g_assert_false (fh_parse_stat_cputime ("no comm", &v, NULL));
}

/* MR-28: which thread names are vCPU threads, and of which index. */
static void
test_vcpu_thread_name (void)
{
  static const struct {
    const char *comm;
    int want;
  } cases[] = {
    { "CPU 0/KVM", 0 },     { "CPU 12/KVM", 12 },    { "CPU 3/TCG", 3 },      { "CPU 1023/HVF", 1023 },
    { "vcpu0", 0 },         { "vcpu17", 17 },        { "fc_vcpu 4", 4 },      { "CPU 1024/KVM", -1 },
    { "CPU 01/KVM", -1 },   { "CPU -1/KVM", -1 },    { "CPU 1/", -1 },        { "CPU 1/KVM ", -1 },
    { "CPU 1/K1", -1 },     { "CPU 1", -1 },         { "cpu 1/KVM", -1 },     { "CPU  1/KVM", -1 },
    { "vcpu", -1 },         { "vcpu 1", -1 },        { "vcpu1a", -1 },        { "vcpu007", -1 },
    { "fc_vcpu", -1 },      { "fc_vcpu1", -1 },      { "qemu-system-x86", -1 }, { "IO mon_iothread", -1 },
    { "worker", -1 },       { "", -1 },              { "vcpu99999999999", -1 },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_test_message ("\"%s\"", cases[i].comm);
    g_assert_cmpint (fh_parse_vcpu_thread_name (cases[i].comm), ==, cases[i].want);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/parse/uclamp", test_uclamp);
  g_test_add_func ("/parse/integers", test_integers);
  g_test_add_func ("/parse/u32-list", test_u32_list);
  g_test_add_func ("/parse/cpu-list", test_cpu_list);
  g_test_add_func ("/parse/status", test_status);
  g_test_add_func ("/parse/proc-cgroup", test_proc_cgroup);
  g_test_add_func ("/parse/stat", test_stat);
  g_test_add_func ("/parse/run-time", test_run_time);
  g_test_add_func ("/parse/vcpu-thread-name", test_vcpu_thread_name);
  return g_test_run ();
}
