/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "fh-dvfs-emu"

#include "fh-emu-clamp.h"

#include "fh-backend.h" /* struct sched_attr */

#include <gio/gio.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct {
  guint min, max;
} Clamp;

struct FhEmuClampSource {
  char *file;        /* NULL: the kernel */
  GHashTable *table; /* file: tid -> Clamp* */
};

FhEmuClampSource *
fh_emu_clamp_source_new (const char *spec, GError **error)
{
  FhEmuClampSource *src;

  /* without CONFIG_UCLAMP_TASK sched_getattr() leaves util_min/max at 0: not a clamp */
  if (g_strcmp0 (spec, "kernel") == 0 &&
      !g_file_test ("/proc/sys/kernel/sched_util_clamp_max", G_FILE_TEST_EXISTS)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                 "--uclamp-from kernel: this kernel has no uclamp "
                 "(/proc/sys/kernel/sched_util_clamp_max is absent); give a file instead");
    return NULL;
  }
  src = g_new0 (FhEmuClampSource, 1);
  if (g_strcmp0 (spec, "kernel") != 0)
    src->file = g_strdup (spec);
  src->table = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free);
  return src;
}

void
fh_emu_clamp_source_refresh (FhEmuClampSource *src)
{
  g_autofree char *text = NULL;
  g_auto (GStrv) lines = NULL;

  if (!src->file)
    return;
  g_hash_table_remove_all (src->table);
  if (!g_file_get_contents (src->file, &text, NULL, NULL))
    return;
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    guint tid, min, max;
    char extra;
    Clamp *c;

    g_strstrip (lines[i]);
    if (lines[i][0] == '\0' || lines[i][0] == '#')
      continue;
    if (sscanf (lines[i], "%u %u %u %c", &tid, &min, &max, &extra) != 3 || min > 1024 ||
        max > 1024) {
      g_warning ("%s:%u: not \"TID MIN MAX\" with clamps in 0..1024: %s", src->file, i + 1,
                 lines[i]);
      continue;
    }
    c = g_new (Clamp, 1);
    c->min = min;
    c->max = max;
    g_hash_table_replace (src->table, GUINT_TO_POINTER (tid), c);
  }
}

gboolean
fh_emu_clamp_get (FhEmuClampSource *src, guint tid, guint *min, guint *max)
{
  if (src->file) {
    Clamp *c = g_hash_table_lookup (src->table, GUINT_TO_POINTER (tid));

    if (!c)
      return FALSE;
    *min = c->min;
    *max = c->max;
    return TRUE;
  } else {
    struct sched_attr attr;

    memset (&attr, 0, sizeof attr);
    if (syscall (SYS_sched_getattr, (pid_t) tid, &attr, (unsigned) sizeof attr, 0) < 0)
      return FALSE;
    *min = MIN (attr.sched_util_min, 1024u);
    *max = MIN (attr.sched_util_max, 1024u);
    return TRUE;
  }
}

void
fh_emu_clamp_source_free (FhEmuClampSource *src)
{
  if (src) {
    g_hash_table_unref (src->table);
    g_free (src->file);
  }
  g_free (src);
}
