/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the parsers for sysfs, procfs and cgroupfs text
 * (fh-parse.c).  A file on a fixture tree, or a cgroup an unprivileged
 * delegate owns, can hold anything; every parser must either return a
 * value inside its documented range or an error, and never crash.
 *
 * The input is the file's content; every parser sees all of it.
 */
#include <stdint.h>
#include <string.h>

#include <glib.h>

#include <freqhint/agent_protocol.h>

#include "fh-parse.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      __builtin_trap ();                                                                           \
  } while (0)

static void
check_error (gboolean ok, GError **error)
{
  /* Exactly one of: a value, or an error in FH_PARSE_ERROR. */
  CHECK (ok == (*error == NULL));
  if (*error)
    CHECK ((*error)->domain == FH_PARSE_ERROR);
  g_clear_error (error);
}

static void
check_cpu_list (GArray *cpus, guint max_cpus)
{
  for (guint i = 0; i < cpus->len; i++) {
    guint c = g_array_index (cpus, guint, i);

    CHECK (c < max_cpus);
    if (i > 0)
      CHECK (g_array_index (cpus, guint, i - 1) < c); /* sorted, no duplicates */
  }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  /* The daemon reads files whole and bounded (fh_read_small_file()). */
  g_autofree char *text = g_strndup ((const char *) data, MIN (size, 65536));
  g_autoptr (GError) error = NULL;
  guint v = 0;
  guint64 v64 = 0;

  {
    gboolean ok = fh_parse_uclamp (text, &v, &error);

    check_error (ok, &error);
    if (ok) {
      /* MR-9: always capacity units. */
      CHECK (v <= 1024);
    }
  }
  check_error (fh_parse_u64 (text, &v64, &error), &error);
  {
    gboolean ok = fh_parse_uint_range (text, 100, 2000, &v, &error);

    check_error (ok, &error);
    if (ok)
      CHECK (v >= 100 && v <= 2000);
  }
  {
    g_autoptr (GArray) list = fh_parse_u32_list (text, &error);

    check_error (list != NULL, &error);
  }
  {
    static const guint limits[] = { 1, 8, 4096 };

    for (gsize i = 0; i < G_N_ELEMENTS (limits); i++) {
      g_autoptr (GArray) cpus = fh_parse_cpu_list (text, limits[i], &error);

      check_error (cpus != NULL, &error);
      if (cpus)
        check_cpu_list (cpus, limits[i]);
    }
  }
  {
    g_autofree char *field = fh_parse_status_field (text, "Cpus_allowed_list", &error);

    check_error (field != NULL, &error);
    if (field)
      CHECK (strchr (field, '\n') == NULL);
  }
  {
    g_autoptr (FhCgroupPath) cg = fh_parse_proc_cgroup (text, &error);

    check_error (cg != NULL, &error);
    if (cg) {
      CHECK (cg->version == 1 || cg->version == 2);
      CHECK (cg->path && cg->path[0] == '/');
      CHECK ((cg->version == 1) == (cg->hierarchy != NULL));
    }
  }
  check_error (fh_parse_stat_processor (text, &v, &error), &error);
  /* MR-29: the run time, from either file */
  check_error (fh_parse_schedstat_run_ns (text, &v64, &error), &error);
  {
    gboolean ok = fh_parse_stat_cputime (text, &v64, &error);

    check_error (ok, &error);
    if (ok)
      CHECK (v64 <= 2 * (guint64) G_MAXUINT32);
  }
  /* MR-28: a vCPU index below FH_MAX_VCPUS, or none */
  {
    int index = fh_parse_vcpu_thread_name (text);

    CHECK (index >= -1 && index < FH_MAX_VCPUS);
  }
  return 0;
}
