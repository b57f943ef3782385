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

FhMetrics *fh_metrics_new (const char *address, guint port, GError **error);
void fh_metrics_free (FhMetrics *metrics);
/* Takes ownership of text. */
void fh_metrics_publish (FhMetrics *metrics, char *text);
guint fh_metrics_port (FhMetrics *metrics);
