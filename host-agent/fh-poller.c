/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fh-poller: an epoll set as one GSource (fh-poller.h says why).
 *
 * The epoll fd is the source's only fd, added with g_source_add_unix_fd():
 * it turns readable when any watched fd is ready.  A dispatch collects at
 * most FH_POLLER_BATCH events with epoll_wait(..., 0) and calls their
 * watches.  Watches are level-triggered, so an fd with data left is
 * reported again; and the kernel puts a reported level-triggered fd back
 * at the end of its ready list, so when more fds are ready than one batch
 * takes, the next dispatch starts with the ones this one left: a flooding
 * peer waits its turn behind the others (fairness), and after each batch
 * the main loop runs its other sources (timers, the decision pass).
 */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-poller.h"

#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib-unix.h>

/* Events one dispatch takes; the rest wait for the next main-loop iteration. */
#define FH_POLLER_BATCH 64

struct _FhPollerWatch {
  FhPoller *poller;
  int fd;
  FhPollerFunc func;
  gpointer data;
  gboolean removed; /* out of the epoll set, freed when no dispatch can name it */
};

struct _FhPoller {
  GSource source;
  int epfd;
  gpointer tag;
  guint n_watches;
  /* While a dispatch runs, its collected events may name watches removed
   * by an earlier callback: those are freed when the dispatch ends. */
  gboolean dispatching;
  GPtrArray *removed;
};

static guint32
cond_to_epoll (GIOCondition cond)
{
  return (cond & G_IO_IN ? EPOLLIN : 0) | (cond & G_IO_OUT ? EPOLLOUT : 0) |
         (cond & G_IO_PRI ? EPOLLPRI : 0);
}

static GIOCondition
epoll_to_cond (guint32 events)
{
  return (events & EPOLLIN ? G_IO_IN : 0) | (events & EPOLLOUT ? G_IO_OUT : 0) |
         (events & EPOLLPRI ? G_IO_PRI : 0) | (events & EPOLLHUP ? G_IO_HUP : 0) |
         (events & EPOLLERR ? G_IO_ERR : 0);
}

static gboolean
poller_check (GSource *source)
{
  FhPoller *p = (FhPoller *) source;

  return (g_source_query_unix_fd (source, p->tag) & G_IO_IN) != 0;
}

static gboolean
poller_dispatch (GSource *source, GSourceFunc callback, gpointer user_data)
{
  FhPoller *p = (FhPoller *) source;
  struct epoll_event ev[FH_POLLER_BATCH];
  int n;

  n = epoll_wait (p->epfd, ev, G_N_ELEMENTS (ev), 0);
  if (n < 0 && errno != EINTR)
    g_warning ("epoll_wait: %s", g_strerror (errno));

  p->dispatching = TRUE;
  for (int i = 0; i < n; i++) {
    FhPollerWatch *w = ev[i].data.ptr;

    if (w->removed)
      continue;
    if (!w->func (w->fd, epoll_to_cond (ev[i].events), w->data) && !w->removed)
      fh_poller_watch_remove (w);
  }
  p->dispatching = FALSE;
  g_ptr_array_set_size (p->removed, 0);
  return G_SOURCE_CONTINUE;
}

static void
poller_finalize (GSource *source)
{
  FhPoller *p = (FhPoller *) source;

  g_ptr_array_unref (p->removed);
  if (p->epfd >= 0)
    close (p->epfd);
}

static GSourceFuncs poller_funcs = {
  .check = poller_check,
  .dispatch = poller_dispatch,
  .finalize = poller_finalize,
};

FhPoller *
fh_poller_new (GError **error)
{
  int epfd = epoll_create1 (EPOLL_CLOEXEC);
  FhPoller *p;

  if (epfd < 0) {
    int e = errno;

    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "epoll_create1: %s",
                 g_strerror (e));
    return NULL;
  }
  p = (FhPoller *) g_source_new (&poller_funcs, sizeof (FhPoller));
  p->epfd = epfd;
  p->removed = g_ptr_array_new_with_free_func (g_free);
  p->tag = g_source_add_unix_fd (&p->source, epfd, G_IO_IN);
  g_source_set_static_name (&p->source, "fh-poller");
  g_source_attach (&p->source, g_main_context_get_thread_default ());
  return p;
}

void
fh_poller_free (FhPoller *poller)
{
  if (!poller)
    return;
  /* Watches left behind belong to callers that are going too: only the
   * epoll fd and the source are ours to end. */
  g_source_destroy (&poller->source);
  g_source_unref (&poller->source);
}

FhPollerWatch *
fh_poller_add (FhPoller *poller, int fd, GIOCondition cond, FhPollerFunc func, gpointer data)
{
  FhPollerWatch *w = g_new0 (FhPollerWatch, 1);
  struct epoll_event ev = { .events = cond_to_epoll (cond), .data.ptr = w };

  if (epoll_ctl (poller->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
    int e = errno;

    g_free (w);
    errno = e;
    return NULL;
  }
  w->poller = poller;
  w->fd = fd;
  w->func = func;
  w->data = data;
  poller->n_watches++;
  return w;
}

void
fh_poller_watch_set_cond (FhPollerWatch *watch, GIOCondition cond)
{
  struct epoll_event ev = { .events = cond_to_epoll (cond), .data.ptr = watch };

  if (epoll_ctl (watch->poller->epfd, EPOLL_CTL_MOD, watch->fd, &ev) < 0)
    g_warning ("epoll_ctl(MOD, %d): %s", watch->fd, g_strerror (errno));
}

void
fh_poller_watch_remove (FhPollerWatch *watch)
{
  FhPoller *p = watch->poller;

  g_return_if_fail (!watch->removed);
  /* The fd is still open (callers remove before they close): an error
   * here would mean it was never ours. */
  (void) epoll_ctl (p->epfd, EPOLL_CTL_DEL, watch->fd, NULL);
  watch->removed = TRUE;
  p->n_watches--;
  if (p->dispatching)
    g_ptr_array_add (p->removed, watch);
  else
    g_free (watch);
}

guint
fh_poller_n_watches (FhPoller *poller)
{
  return poller->n_watches;
}
