/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * inotify on the cgroup directories the vCPU threads sit in and their
 * ancestors (issue 16 item 3): a write to cpu.uclamp.min/max or
 * cgroup.threads/cgroup.procs (vfs_write() -> fsnotify_modify()), a change
 * of cgroup.events (kernfs_notify()), and a group created or removed are
 * reported as the relative directory where they happened, so the daemon
 * re-reads only the threads below it instead of every thread every second.
 */
#pragma once

#include <glib.h>

#include "fh-paths.h"

typedef struct _FhWatch FhWatch;

/* rel: the directory relative to the cgroup root ("/machine.slice/x.scope"). */
typedef void (*FhWatchFunc) (const char *rel, gpointer data);

FhWatch *fh_watch_new (const FhPaths *paths, FhWatchFunc func, gpointer data, GError **error);
void fh_watch_free (FhWatch *watch);
/* Watch rel and each of its ancestors (idempotent; a directory that is gone is skipped). */
void fh_watch_cgroup (FhWatch *watch, const char *rel);
/* Directories watched now (telemetry, tests). */
guint fh_watch_count (const FhWatch *watch);
