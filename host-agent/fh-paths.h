/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one place where sysfs, procfs and cgroupfs paths are built.  Every
 * path goes through a configurable root (--sysfs-root, --proc-root,
 * --cgroup-root) so the daemon runs unchanged on fixture trees, as
 * power-profiles-daemon's ppd_utils_get_sysfs_path() and node_exporter's
 * --path.sysfs do.
 */
#pragma once

#include <glib.h>

typedef enum {
  FH_ROOT_SYSFS,
  FH_ROOT_PROC,
  FH_ROOT_CGROUP,
} FhRoot;

typedef struct {
  char *sysfs;  /* default /sys */
  char *proc;   /* default /proc */
  char *cgroup; /* default /sys/fs/cgroup */
} FhPaths;

void fh_paths_init (FhPaths *paths, const char *sysfs, const char *proc, const char *cgroup);
void fh_paths_clear (FhPaths *paths);

/* root + "/" + printf(fmt, ...).  The formatted part is relative to the root. */
char *fh_path (const FhPaths *paths, FhRoot root, const char *fmt, ...) G_GNUC_PRINTF (3, 4);

/* Small pseudo-files: read whole (bounded), or write one value. */
char *fh_read_small_file (const char *path, GError **error);
gboolean fh_write_small_file (const char *path, const char *value, GError **error);
