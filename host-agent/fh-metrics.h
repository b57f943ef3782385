/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Prometheus endpoint (GET /metrics) served by libmicrohttpd on its own
 * thread.  The main loop renders the text after each update; the HTTP
 * thread only copies the latest snapshot under a lock, so it never touches
 * daemon state.
 */
#pragma once

#include <glib.h>

typedef struct _FhMetrics FhMetrics;

/* At most max_connections at once, each closed timeout_ms after accept (G-13). */
FhMetrics *fh_metrics_new (const char *address, guint port, guint max_connections, guint timeout_ms,
                           GError **error);
void fh_metrics_free (FhMetrics *metrics);
/* Takes ownership of text: the page every scrape from now on is served (one
 * copy, shared by the answers in flight; each drains it as its socket does). */
void fh_metrics_publish (FhMetrics *metrics, GBytes *text);
guint fh_metrics_port (FhMetrics *metrics);
/* Connections shut down at their deadline. */
guint64 fh_metrics_expired (FhMetrics *metrics);
