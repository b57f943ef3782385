/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-listener.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib-unix.h>

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 1000
/* Connections taken per wakeup, so one listener cannot starve the loop. */
#define ACCEPT_BURST 32

struct _FhListener {
  int fd;
  char *what;
  FhListenerAccept cb;
  gpointer data;
  guint watch;
  guint retry;
  guint backoff_ms;
  gint64 last_log_us;
  guint64 suppressed;
  guint64 failures;
  guint64 accept_calls;
};

static gboolean on_ready (gint fd, GIOCondition cond, gpointer data);

static gboolean
on_retry (gpointer data)
{
  FhListener *l = data;

  l->retry = 0;
  l->watch = g_unix_fd_add (l->fd, G_IO_IN, on_ready, l);
  return G_SOURCE_REMOVE;
}

static void
pause_accepting (FhListener *l, int e)
{
  gint64 now = g_get_monotonic_time ();

  l->failures++;
  l->backoff_ms = l->backoff_ms ? MIN (l->backoff_ms * 2, BACKOFF_MAX_MS) : BACKOFF_MIN_MS;
  if (l->last_log_us == 0 || now - l->last_log_us >= FH_LISTENER_LOG_INTERVAL_S * G_USEC_PER_SEC) {
    g_warning ("accept on %s: %s; pausing new connections (retry in %u ms; %" G_GUINT64_FORMAT
               " more such failures since the last report)",
               l->what, g_strerror (e), l->backoff_ms, l->suppressed);
    l->last_log_us = now;
    l->suppressed = 0;
  } else {
    l->suppressed++;
  }
  g_clear_handle_id (&l->watch, g_source_remove);
  l->retry = g_timeout_add (l->backoff_ms, on_retry, l);
}

static gboolean
on_ready (gint fd, GIOCondition cond, gpointer data)
{
  FhListener *l = data;

  for (int i = 0; i < ACCEPT_BURST; i++) {
    int cfd;

    l->accept_calls++;
    cfd = accept4 (fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (cfd < 0) {
      int e = errno;

      if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR || e == ECONNABORTED || e == EPROTO)
        return G_SOURCE_CONTINUE;
      if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
        /* The watch is gone with pause_accepting(): tell GLib so. */
        pause_accepting (l, e);
        return G_SOURCE_REMOVE;
      }
      g_warning ("accept on %s: %s", l->what, g_strerror (e));
      return G_SOURCE_CONTINUE;
    }
    l->backoff_ms = 0;
    l->cb (cfd, l->data);
  }
  return G_SOURCE_CONTINUE;
}

FhListener *
fh_listener_new (int fd, const char *what, FhListenerAccept cb, gpointer data)
{
  FhListener *l = g_new0 (FhListener, 1);

  l->fd = fd;
  l->what = g_strdup (what);
  l->cb = cb;
  l->data = data;
  l->watch = g_unix_fd_add (fd, G_IO_IN, on_ready, l);
  return l;
}

void
fh_listener_free (FhListener *l)
{
  if (!l)
    return;
  g_clear_handle_id (&l->watch, g_source_remove);
  g_clear_handle_id (&l->retry, g_source_remove);
  close (l->fd);
  g_free (l->what);
  g_free (l);
}

guint64
fh_listener_failures (FhListener *l)
{
  return l->failures;
}

guint64
fh_listener_accept_calls (FhListener *l)
{
  return l->accept_calls;
}
