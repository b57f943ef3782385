/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Control socket: one JSON request line in, one JSON reply out.
 *
 *   request: {"command": "status"|"vms"|"vcpus"|"cpus", "vm": "NAME-or-UUID"}
 *   reply:   {"ok": true, "result": ...} or {"ok": false, "error": "..."}
 *
 * Peers are checked with SO_PEERCRED: root, our own uid, and the uids/gids
 * the config allows.
 */
#pragma once

#include "fh-daemon.h"

typedef struct _FhControl FhControl;

FhControl *fh_control_new (FhDaemon *daemon, const char *path, GError **error);
void fh_control_free (FhControl *control);
guint fh_control_n_clients (FhControl *control);
/* Clients closed to make room at control_max_clients. */
guint64 fh_control_evicted (FhControl *control);
