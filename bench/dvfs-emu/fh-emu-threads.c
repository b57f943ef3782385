/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fh-emu-threads.h"

#include "fh-host.h"
#include "fh-parse.h"

#include <gio/gio.h>
#include <stdlib.h>

gboolean
fh_emu_thread_schedstat (guint tid, guint64 *run_ns, guint64 *wait_ns)
{
  g_autofree char *path = g_strdup_printf ("/proc/%u/schedstat", tid);
  g_autofree char *text = fh_read_small_file (path, NULL);
  g_auto (GStrv) fields = NULL;

  if (!text)
    return FALSE;
  fields = g_strsplit (g_strstrip (text), " ", 3);
  return g_strv_length (fields) >= 2 &&
         g_ascii_string_to_unsigned (fields[0], 10, 0, G_MAXUINT64, run_ns, NULL) &&
         g_ascii_string_to_unsigned (fields[1], 10, 0, G_MAXUINT64, wait_ns, NULL);
}

static gint
cmp_tid (gconstpointer a, gconstpointer b)
{
  guint x = *(const guint *) a, y = *(const guint *) b;

  return x < y ? -1 : x > y;
}

GArray *
fh_emu_vcpu_threads (pid_t pid, GError **error)
{
  g_autofree char *task = g_strdup_printf ("/proc/%d/task", (int) pid);
  g_autoptr (GDir) dir = g_dir_open (task, 0, error);
  g_autoptr (GArray) tids = g_array_new (FALSE, FALSE, sizeof (guint));
  const char *name;

  if (!dir)
    return NULL;
  while ((name = g_dir_read_name (dir))) {
    g_autofree char *path = g_build_filename (task, name, "comm", NULL);
    g_autofree char *comm = fh_read_small_file (path, NULL);
    guint64 tid;
    const char *slash;

    if (!comm || !g_ascii_string_to_unsigned (name, 10, 1, G_MAXINT32, &tid, NULL))
      continue;
    g_strstrip (comm);
    slash = strchr (comm, '/');
    if (g_str_has_prefix (comm, "CPU ") && slash && g_ascii_isdigit (comm[4])) {
      guint t = (guint) tid;

      g_array_append_val (tids, t);
    }
  }
  if (tids->len == 0) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                 "process %d has no thread named \"CPU n/...\" (not a QEMU with vCPUs?)", (int) pid);
    return NULL;
  }
  g_array_sort (tids, cmp_tid);
  return g_steal_pointer (&tids);
}

gint
fh_emu_thread_placement (const FhPaths *fixture, guint tid, guint n_cpus)
{
  FhThreadInfo info = { 0 };
  gint cpu;

  fh_host_probe_thread (fixture, tid, n_cpus, &info);
  cpu = info.cpu;
  fh_thread_info_clear (&info);
  return cpu;
}
