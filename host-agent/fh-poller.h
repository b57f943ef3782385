/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One GSource for many file descriptors, through an epoll set of its own.
 *
 * GLib's main loop hands every watched fd to poll() on each iteration and
 * then asks every source whether it fired.  With a socket and a pidfd per
 * VM, 1000 VMs made each wake-up walk ~2000 fds however few were ready
 * (issue 29, item 8).  Here GLib polls one fd, the epoll set; the kernel
 * keeps the ready list, and a wake-up costs what its ready fds cost.
 */
#pragma once

#include <glib.h>

typedef struct _FhPoller FhPoller;
typedef struct _FhPollerWatch FhPollerWatch;

/* As a GUnixFDSourceFunc: return G_SOURCE_REMOVE to end the watch. */
typedef gboolean (*FhPollerFunc) (int fd, GIOCondition cond, gpointer data);

/* Attached to the thread-default main context; NULL with error set when
 * the kernel gives no epoll fd. */
FhPoller *fh_poller_new (GError **error);
/* Detaches the source and closes the epoll fd; end every watch first (their
 * owners hold them). */
void fh_poller_free (FhPoller *poller);

/*
 * Watch fd (level-triggered, like g_unix_fd_add) for cond, a mask of
 * G_IO_IN, G_IO_OUT, G_IO_PRI; G_IO_HUP and G_IO_ERR are always reported.
 * NULL (errno set) when epoll refuses the fd.  An fd is watched at most
 * once per poller.
 */
FhPollerWatch *fh_poller_add (FhPoller *poller, int fd, GIOCondition cond, FhPollerFunc func,
                              gpointer data);
/* Change what the watch waits for. */
void fh_poller_watch_set_cond (FhPollerWatch *watch, GIOCondition cond);
/*
 * End the watch: its callback is not called again, even for an event the
 * same wake-up already collected.  Safe from inside any callback of the
 * poller, its own included.  Call it before closing the fd.
 */
void fh_poller_watch_remove (FhPollerWatch *watch);

guint fh_poller_n_watches (FhPoller *poller);
