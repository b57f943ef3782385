/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Prometheus endpoint (GET /metrics) served by libmicrohttpd on its own
 * thread.  The page is rendered when it is scraped, piece by piece, by the
 * main loop (the renderer's open and next run there, as idle sources on the
 * context that was the thread's default at fh_metrics_new()); the HTTP
 * thread only copies the pieces to the socket, so it never touches daemon
 * state.
 */
#pragma once

#include <glib.h>

typedef struct _FhMetrics FhMetrics;

typedef struct {
  /* A cursor at the page's start (main loop). */
  gpointer (*open) (gpointer data);
  /* Appends at least want bytes to out unless the page ends; FALSE at its end (main loop). */
  gboolean (*next) (gpointer page, GString *out, gsize want);
  /* Frees a cursor; only frees memory (any thread). */
  void (*free) (gpointer page);
} FhMetricsRenderer;

/* Displaced connections not yet closed by libmicrohttpd's thread, on top of max_connections. */
#define FH_METRICS_SPARE 8

/*
 * At most max_connections at once, each closed timeout_ms after accept; one
 * more displaces the oldest that has not sent a whole request (G-13).
 */
FhMetrics *fh_metrics_new (const char *address, guint port, guint max_connections, guint timeout_ms,
                           const FhMetricsRenderer *renderer, gpointer renderer_data,
                           GError **error);
void fh_metrics_free (FhMetrics *metrics);
guint fh_metrics_port (FhMetrics *metrics);
/* Connections shut down at their deadline. */
guint64 fh_metrics_expired (FhMetrics *metrics);
