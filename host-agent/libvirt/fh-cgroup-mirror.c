/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhint-libvirt"

#include "fh-cgroup-mirror.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "fh-metadata.h"
#include "fh-parse.h"

G_DEFINE_QUARK (fh - mirror - error - quark, fh_mirror_error)

/*
 * cgroupfs files cannot be replaced by rename, so write in place; O_TRUNC
 * is harmless there and keeps fixture files (regular files) exact.  No
 * O_CREAT: a missing file means the cpu controller is off for the group.
 */
static gboolean
write_in_place (const char *path, const char *value, GError **error)
{
  int fd = open (path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
  gsize len = strlen (value);
  ssize_t n;

  if (fd < 0) {
    int e = errno;
    g_set_error (error, FH_MIRROR_ERROR,
                 e == ENOENT ? FH_MIRROR_ERROR_NO_FILE : FH_MIRROR_ERROR_FAILED,
                 "cannot open %s: %s", path, g_strerror (e));
    return FALSE;
  }
  n = write (fd, value, len);
  if (n != (ssize_t) len) {
    int e = n < 0 ? errno : EIO;
    close (fd);
    g_set_error (error, FH_MIRROR_ERROR, FH_MIRROR_ERROR_FAILED, "cannot write \"%s\" to %s: %s",
                 value, path, g_strerror (e));
    return FALSE;
  }
  if (close (fd) < 0) {
    int e = errno;
    g_set_error (error, FH_MIRROR_ERROR, FH_MIRROR_ERROR_FAILED, "cannot write %s: %s", path,
                 g_strerror (e));
    return FALSE;
  }
  return TRUE;
}

gboolean
fh_cgroup_mirror_vcpu_ceiling (const FhPaths *paths, guint tid, guint vcpu, guint ceiling_pct,
                               gboolean *written, GError **error)
{
  g_autofree char *cg_file = g_strdup_printf ("%s/%u/cgroup", paths->proc, tid);
  g_autofree char *text = NULL;
  g_autofree char *base = NULL;
  g_autofree char *want_base = g_strdup_printf ("vcpu%u", vcpu);
  g_autofree char *file = NULL;
  g_autofree char *value = fh_percent_format (MIN (ceiling_pct, FH_PERCENT_MAX));
  g_autofree char *current = NULL;
  g_autoptr (FhCgroupPath) cg = NULL;
  GError *local = NULL;
  guint cur_cap;

  if (written)
    *written = FALSE;
  if (!g_file_get_contents (cg_file, &text, NULL, &local)) {
    g_set_error (error, FH_MIRROR_ERROR, FH_MIRROR_ERROR_FAILED, "vCPU %u thread %u: %s", vcpu, tid,
                 local->message);
    g_error_free (local);
    return FALSE;
  }
  cg = fh_parse_proc_cgroup (text, &local);
  if (!cg) {
    g_set_error (error, FH_MIRROR_ERROR, FH_MIRROR_ERROR_FAILED, "%s: %s", cg_file, local->message);
    g_error_free (local);
    return FALSE;
  }
  base = g_path_get_basename (cg->path);
  if (strcmp (base, want_base) != 0) {
    g_set_error (error, FH_MIRROR_ERROR, FH_MIRROR_ERROR_NOT_VCPU_GROUP,
                 "vCPU %u thread %u is in %s, not in a group of its own (%s); not mirroring", vcpu,
                 tid, cg->path, want_base);
    return FALSE;
  }
  if (cg->hierarchy)
    file = g_strdup_printf ("%s/%s%s/cpu.uclamp.max", paths->cgroup, cg->hierarchy, cg->path);
  else
    file = g_strdup_printf ("%s%s/cpu.uclamp.max", paths->cgroup, cg->path);

  /* Compare in capacity: the kernel prints "max" for 100 and rounds. */
  if (g_file_get_contents (file, &current, NULL, NULL) &&
      fh_parse_uclamp (current, &cur_cap, NULL) &&
      cur_cap == fh_percent_to_capacity (MIN (ceiling_pct, FH_PERCENT_MAX)))
    return TRUE;
  if (!write_in_place (file, value, error))
    return FALSE;
  if (written)
    *written = TRUE;
  g_debug ("vCPU %u thread %u: %s <- %s", vcpu, tid, file, value);
  return TRUE;
}
