/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A listening socket on the main loop that survives running out of
 * descriptors: when accept() fails for lack of a resource (EMFILE, ENFILE,
 * ENOBUFS, ENOMEM) the listener stops watching the socket and tries again
 * after a backoff (50 ms doubling to 1 s), and logs at most one line per
 * FH_LISTENER_LOG_INTERVAL_S for it — never a busy loop, never a log flood.
 * Pending connections wait in the kernel's backlog meanwhile.
 */
#pragma once

#include <glib.h>

#define FH_LISTENER_LOG_INTERVAL_S 10

typedef struct _FhListener FhListener;

/* A new connection (non-blocking, close-on-exec); the callback owns fd. */
typedef void (*FhListenerAccept) (int fd, gpointer data);

/* Takes ownership of the listening socket fd.  what names it in the log. */
FhListener *fh_listener_new (int fd, const char *what, FhListenerAccept cb, gpointer data);
void fh_listener_free (FhListener *l);
/* accept() calls that failed for lack of a resource, and pauses taken. */
guint64 fh_listener_failures (FhListener *l);
guint64 fh_listener_accept_calls (FhListener *l);
