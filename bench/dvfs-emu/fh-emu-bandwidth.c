/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "fh-dvfs-emu"

#include "fh-emu-bandwidth.h"

#include "fh-parse.h"
#include "fh-paths.h"

#include <errno.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <sys/mount.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  guint tid;
  int version;
  char *dir;       /* our group */
  char *home;      /* the group it came from, to move it back */
  gint64 quota_us; /* as last written; -1 unlimited */
} Group;

typedef struct {
  char *dir;
  gboolean cpu_enabled_by_us; /* v2: "+cpu" written to its cgroup.subtree_control */
} Home;

struct FhEmuBandwidth {
  FhEmuCgroupMode mode;
  guint period_us;
  GHashTable *groups;   /* tid -> Group* */
  GHashTable *homes;    /* v2 home dir -> Home* */
  GHashTable *mounts;   /* v1 controller list -> mount dir */
  GPtrArray *private_mounts; /* dirs we mounted */
};

static void
group_free (Group *g)
{
  g_free (g->dir);
  g_free (g->home);
  g_free (g);
}

static void
home_free (Home *h)
{
  g_free (h->dir);
  g_free (h);
}

FhEmuBandwidth *
fh_emu_bandwidth_new (FhEmuCgroupMode mode, guint period_us)
{
  FhEmuBandwidth *bw = g_new0 (FhEmuBandwidth, 1);

  bw->mode = mode;
  bw->period_us = period_us;
  bw->groups = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
                                      (GDestroyNotify) group_free);
  bw->homes = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) home_free);
  bw->mounts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  bw->private_mounts = g_ptr_array_new_with_free_func (g_free);
  return bw;
}

/* Every controller of list ("cpu,cpuacct") among a mount's options. */
static gboolean
options_hold (const char *options, const char *list)
{
  g_auto (GStrv) opts = g_strsplit (options, ",", -1);
  g_auto (GStrv) want = g_strsplit (list, ",", -1);

  for (guint i = 0; want[i]; i++)
    if (!g_strv_contains ((const char *const *) opts, want[i]))
      return FALSE;
  return TRUE;
}

/*
 * Where an emulator mounts a v1 hierarchy nobody had mounted (v1_mount()).
 * Another emulator's such mount is never adopted: it goes when that one
 * exits, with the groups made through it (a bare tree's test run saw an
 * emulator lose its groups mid-run that way).
 */
#define PRIVATE_MOUNT_PREFIX "fh-dvfs-emu-cgroup-"

/* The first mount of fstype (with the controllers of list for v1) in /proc/mounts, not a private one. */
static char *
find_mount (const char *fstype, const char *list)
{
  g_autofree char *mounts = NULL;
  g_auto (GStrv) lines = NULL;

  if (!g_file_get_contents ("/proc/mounts", &mounts, NULL, NULL))
    return NULL;
  lines = g_strsplit (mounts, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    g_auto (GStrv) f = g_strsplit (lines[i], " ", -1);

    g_autofree char *dir = NULL, *base = NULL;

    if (g_strv_length (f) < 4 || strcmp (f[2], fstype) != 0)
      continue;
    if (list && !options_hold (f[3], list))
      continue;
    dir = g_strcompress (f[1]); /* /proc/mounts escapes spaces as \040 */
    base = g_path_get_basename (dir);
    if (!g_str_has_prefix (base, PRIVATE_MOUNT_PREFIX))
      return g_steal_pointer (&dir);
  }
  return NULL;
}

static const char *
v1_mount (FhEmuBandwidth *bw, const char *list, GError **error)
{
  char *dir = g_hash_table_lookup (bw->mounts, list);

  if (dir)
    return dir;
  dir = find_mount ("cgroup", list);
  if (!dir) {
    /* bound to a hierarchy nobody mounted: mount it where only we look */
    g_autoptr (GError) local = NULL;

    dir = g_dir_make_tmp (PRIVATE_MOUNT_PREFIX "XXXXXX", &local);
    if (!dir) {
      g_propagate_prefixed_error (error, g_steal_pointer (&local), "cgroup v1 (%s): ", list);
      return NULL;
    }
    if (mount ("cgroup", dir, "cgroup", MS_NOSUID | MS_NODEV | MS_NOEXEC, list) < 0) {
      int e = errno;

      g_rmdir (dir);
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e),
                   "cgroup v1 hierarchy '%s' is not mounted and mounting it on %s failed: %s", list,
                   dir, g_strerror (e));
      g_free (dir);
      return NULL;
    }
    g_ptr_array_add (bw->private_mounts, g_strdup (dir));
    g_message ("mounted the cgroup v1 '%s' hierarchy on %s", list, dir);
  }
  g_hash_table_insert (bw->mounts, g_strdup (list), dir);
  return dir;
}

static gboolean
write_value (const char *dir, const char *file, const char *value, GError **error)
{
  g_autofree char *path = g_build_filename (dir, file, NULL);

  return fh_write_small_file (path, value, error);
}

static gboolean
write_tid (const char *dir, const char *file, guint tid, GError **error)
{
  g_autofree char *v = g_strdup_printf ("%u", tid);

  return write_value (dir, file, v, error);
}

/* v2: let the threaded children of home (a threaded domain by now) use cpu. */
static gboolean
v2_prepare_home (FhEmuBandwidth *bw, const char *home, GError **error)
{
  g_autofree char *ctl_path = g_build_filename (home, "cgroup.controllers", NULL);
  g_autofree char *sub_path = g_build_filename (home, "cgroup.subtree_control", NULL);
  g_autofree char *controllers = NULL, *subtree = NULL;
  g_auto (GStrv) have = NULL, enabled = NULL;
  Home *h;

  if (g_hash_table_contains (bw->homes, home))
    return TRUE;
  controllers = fh_read_small_file (ctl_path, error);
  if (!controllers)
    return FALSE;
  have = g_strsplit_set (g_strstrip (controllers), " ", -1);
  if (!g_strv_contains ((const char *const *) have, "cpu")) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                 "cgroup v2: no cpu controller in %s (enable it in the parent's "
                 "cgroup.subtree_control)", ctl_path);
    return FALSE;
  }
  subtree = fh_read_small_file (sub_path, error);
  if (!subtree)
    return FALSE;
  enabled = g_strsplit_set (g_strstrip (subtree), " ", -1);
  h = g_new0 (Home, 1);
  h->dir = g_strdup (home);
  if (!g_strv_contains ((const char *const *) enabled, "cpu")) {
    if (!fh_write_small_file (sub_path, "+cpu", error)) {
      home_free (h);
      return FALSE;
    }
    h->cpu_enabled_by_us = TRUE;
  }
  g_hash_table_insert (bw->homes, h->dir, h);
  return TRUE;
}

gboolean
fh_emu_bandwidth_add (FhEmuBandwidth *bw, guint tid, GError **error)
{
  g_autofree char *cg_path = g_strdup_printf ("/proc/%u/cgroup", tid);
  g_autofree char *text = NULL, *period = NULL;
  g_autoptr (FhCgroupPath) cg = NULL;
  g_autofree char *mnt = NULL;
  Group *g;

  if (g_hash_table_contains (bw->groups, GUINT_TO_POINTER (tid)))
    return TRUE;
  text = fh_read_small_file (cg_path, error);
  if (!text)
    return FALSE;
  cg = fh_parse_proc_cgroup (text, error);
  if (!cg) {
    g_prefix_error (error, "%s: ", cg_path);
    return FALSE;
  }
  if (bw->mode == FH_EMU_CGROUP_V1 && cg->version != 1) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                 "cgroup v1 asked, but no v1 hierarchy holds the cpu controller (%s)", cg_path);
    return FALSE;
  }
  if (bw->mode == FH_EMU_CGROUP_V2 && cg->version != 2) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                 "cgroup v2 asked, but the cpu controller is bound to the v1 hierarchy '%s'",
                 cg->hierarchy);
    return FALSE;
  }

  g = g_new0 (Group, 1);
  g->tid = tid;
  g->version = cg->version;
  g->quota_us = -1;
  if (cg->version == 1) {
    const char *m = v1_mount (bw, cg->hierarchy, error);

    if (!m) {
      group_free (g);
      return FALSE;
    }
    g->home = g_build_filename (m, cg->path, NULL);
  } else {
    mnt = find_mount ("cgroup2", NULL);
    if (!mnt) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                   "the cpu controller is not bound to cgroup v1 and no cgroup2 is mounted");
      group_free (g);
      return FALSE;
    }
    g->home = g_build_filename (mnt, cg->path, NULL);
  }
  {
    g_autofree char *name = g_strdup_printf ("fh-dvfs-emu-%d-%u", (int) getpid (), tid);

    g->dir = g_build_filename (g->home, name, NULL);
  }
  if (g_mkdir (g->dir, 0755) < 0 && errno != EEXIST) {
    int e = errno;

    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "mkdir %s: %s", g->dir,
                 g_strerror (e));
    group_free (g);
    return FALSE;
  }
  /* from here on the group exists: freeing bw removes it */
  g_hash_table_insert (bw->groups, GUINT_TO_POINTER (tid), g);
  period = g_strdup_printf ("%u", bw->period_us);
  if (g->version == 1) {
    if (!write_value (g->dir, "cpu.cfs_quota_us", "-1", error) ||
        !write_value (g->dir, "cpu.cfs_period_us", period, error) ||
        !write_tid (g->dir, "tasks", tid, error))
      return FALSE;
  } else {
    g_autofree char *max = g_strdup_printf ("max %u", bw->period_us);

    /*
     * A threaded child first: it makes the home a threaded domain, where a
     * threaded controller (cpu) may be enabled although the home holds
     * processes (the no-internal-process rule binds domain controllers).
     */
    if (!write_value (g->dir, "cgroup.type", "threaded", error) ||
        !v2_prepare_home (bw, g->home, error) ||
        !write_value (g->dir, "cpu.max", max, error) ||
        !write_tid (g->dir, "cgroup.threads", tid, error))
      return FALSE;
  }
  g_debug ("tid %u: group %s", tid, g->dir);
  return TRUE;
}

gboolean
fh_emu_bandwidth_set (FhEmuBandwidth *bw, guint tid, double share, GError **error)
{
  Group *g = g_hash_table_lookup (bw->groups, GUINT_TO_POINTER (tid));
  gint64 quota;
  g_autofree char *v = NULL;

  g_return_val_if_fail (g != NULL, FALSE);
  quota = share >= 1.0 ? -1 : MAX ((gint64) (share * bw->period_us + 0.5), FH_EMU_MIN_QUOTA_US);
  if (quota == g->quota_us)
    return TRUE;
  if (g->version == 1) {
    v = g_strdup_printf ("%" G_GINT64_FORMAT, quota);
    if (!write_value (g->dir, "cpu.cfs_quota_us", v, error))
      return FALSE;
  } else {
    if (quota < 0)
      v = g_strdup_printf ("max %u", bw->period_us);
    else
      v = g_strdup_printf ("%" G_GINT64_FORMAT " %u", quota, bw->period_us);
    if (!write_value (g->dir, "cpu.max", v, error))
      return FALSE;
  }
  g->quota_us = quota;
  return TRUE;
}

gboolean
fh_emu_bandwidth_throttled_ns (FhEmuBandwidth *bw, guint tid, guint64 *ns)
{
  Group *g = g_hash_table_lookup (bw->groups, GUINT_TO_POINTER (tid));
  g_autofree char *path = NULL, *stat = NULL;
  /* v1 counts nanoseconds, v2 microseconds */
  const char *key = g && g->version == 1 ? "throttled_time" : "throttled_usec";
  guint64 scale = g && g->version == 1 ? 1 : 1000;
  g_auto (GStrv) lines = NULL;

  if (!g)
    return FALSE;
  path = g_build_filename (g->dir, "cpu.stat", NULL);
  stat = fh_read_small_file (path, NULL);
  if (!stat)
    return FALSE;
  lines = g_strsplit (stat, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    g_auto (GStrv) kv = g_strsplit (lines[i], " ", 2);

    if (g_strv_length (kv) == 2 && strcmp (kv[0], key) == 0 &&
        g_ascii_string_to_unsigned (kv[1], 10, 0, G_MAXUINT64 / 1000, ns, NULL)) {
      *ns *= scale;
      return TRUE;
    }
  }
  return FALSE;
}

const char *
fh_emu_bandwidth_group (FhEmuBandwidth *bw, guint tid)
{
  Group *g = g_hash_table_lookup (bw->groups, GUINT_TO_POINTER (tid));

  return g ? g->dir : NULL;
}

static void
undo_group (Group *g)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *proc = g_strdup_printf ("/proc/%u", g->tid);

  /* a thread that exited has nothing to move back */
  if (g_file_test (proc, G_FILE_TEST_EXISTS) &&
      !write_tid (g->home, g->version == 1 ? "tasks" : "cgroup.threads", g->tid, &error))
    g_warning ("moving tid %u back to %s: %s", g->tid, g->home, error->message);
  if (g_rmdir (g->dir) < 0)
    g_warning ("rmdir %s: %s", g->dir, g_strerror (errno));
}

void
fh_emu_bandwidth_free (FhEmuBandwidth *bw)
{
  GHashTableIter iter;
  gpointer value;

  if (!bw)
    return;
  g_hash_table_iter_init (&iter, bw->groups);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    undo_group (value);
  g_hash_table_iter_init (&iter, bw->homes);
  while (g_hash_table_iter_next (&iter, NULL, &value)) {
    Home *h = value;
    g_autoptr (GError) error = NULL;

    if (h->cpu_enabled_by_us && !write_value (h->dir, "cgroup.subtree_control", "-cpu", &error))
      g_warning ("%s: %s", h->dir, error->message);
  }
  for (guint i = 0; i < bw->private_mounts->len; i++) {
    const char *dir = g_ptr_array_index (bw->private_mounts, i);

    if (umount2 (dir, 0) < 0)
      g_warning ("umount %s: %s", dir, g_strerror (errno));
    else if (g_rmdir (dir) < 0)
      g_warning ("rmdir %s: %s", dir, g_strerror (errno));
  }
  g_hash_table_unref (bw->groups);
  g_hash_table_unref (bw->homes);
  g_hash_table_unref (bw->mounts);
  g_ptr_array_unref (bw->private_mounts);
  g_free (bw);
}
