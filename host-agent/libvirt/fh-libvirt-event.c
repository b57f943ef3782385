/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * virEventRegisterImpl() on GLib sources.
 *
 * A handle is a GUnixFDSource re-created whenever libvirt changes the
 * events it wants (GLib cannot change a GUnixFDSource's condition); a
 * timeout is a GTimeoutSource, re-created when its interval changes.
 * libvirt requires that a watch's free function never runs inside the
 * remove call, so removal destroys the source at once and frees later,
 * from an idle callback.  The tables are locked because libvirt may call
 * the hooks from whatever thread makes an API call.
 */
#define G_LOG_DOMAIN "freqhint-libvirt"

#include "fh-libvirt-event.h"

#include <glib-unix.h>
#include <glib.h>
#include <libvirt/libvirt.h>

typedef struct {
  int id;
  int fd;
  int events;   /* VIR_EVENT_HANDLE_*, for handles */
  int interval; /* ms, -1 disabled, for timeouts */
  gboolean is_timeout;
  gboolean removed;
  virEventHandleCallback handle_cb;
  virEventTimeoutCallback timeout_cb;
  void *opaque;
  virFreeCallback ff;
  GSource *source;
} FhEventWatch;

static GMutex lock;
static GHashTable *watches; /* id -> FhEventWatch* */
static int next_id = 1;

static GIOCondition
to_gio (int events)
{
  GIOCondition c = 0;

  if (events & VIR_EVENT_HANDLE_READABLE)
    c |= G_IO_IN;
  if (events & VIR_EVENT_HANDLE_WRITABLE)
    c |= G_IO_OUT;
  /* Errors and hang-ups are always reported, as with poll(). */
  return c ? c | G_IO_ERR | G_IO_HUP : 0;
}

static int
from_gio (GIOCondition c)
{
  int events = 0;

  if (c & G_IO_IN)
    events |= VIR_EVENT_HANDLE_READABLE;
  if (c & G_IO_OUT)
    events |= VIR_EVENT_HANDLE_WRITABLE;
  if (c & G_IO_ERR)
    events |= VIR_EVENT_HANDLE_ERROR;
  if (c & G_IO_HUP)
    events |= VIR_EVENT_HANDLE_HANGUP;
  return events;
}

static FhEventWatch *
lookup (int id, gboolean is_timeout)
{
  FhEventWatch *w = g_hash_table_lookup (watches, GINT_TO_POINTER (id));

  return w && !w->removed && w->is_timeout == is_timeout ? w : NULL;
}

static void
drop_source (FhEventWatch *w)
{
  if (w->source) {
    g_source_destroy (w->source);
    g_source_unref (w->source);
    w->source = NULL;
  }
}

static gboolean
dispatch_handle (int fd, GIOCondition cond, gpointer data)
{
  int id = GPOINTER_TO_INT (data);
  virEventHandleCallback cb;
  void *opaque;
  FhEventWatch *w;

  g_mutex_lock (&lock);
  w = lookup (id, FALSE);
  if (!w) {
    g_mutex_unlock (&lock);
    return G_SOURCE_CONTINUE; /* being removed; the source is already destroyed */
  }
  cb = w->handle_cb;
  opaque = w->opaque;
  g_mutex_unlock (&lock);
  cb (id, fd, from_gio (cond), opaque);
  return G_SOURCE_CONTINUE;
}

static gboolean
dispatch_timeout (gpointer data)
{
  int id = GPOINTER_TO_INT (data);
  virEventTimeoutCallback cb;
  void *opaque;
  FhEventWatch *w;

  g_mutex_lock (&lock);
  w = lookup (id, TRUE);
  if (!w) {
    g_mutex_unlock (&lock);
    return G_SOURCE_CONTINUE;
  }
  cb = w->timeout_cb;
  opaque = w->opaque;
  g_mutex_unlock (&lock);
  cb (id, opaque);
  return G_SOURCE_CONTINUE;
}

/* Called with the lock held. */
static void
arm_handle (FhEventWatch *w)
{
  GIOCondition cond = to_gio (w->events);

  drop_source (w);
  if (!cond)
    return;
  w->source = g_unix_fd_source_new (w->fd, cond);
  g_source_set_callback (w->source, G_SOURCE_FUNC (dispatch_handle), GINT_TO_POINTER (w->id), NULL);
  g_source_set_name (w->source, "libvirt handle");
  g_source_attach (w->source, NULL);
}

static void
arm_timeout (FhEventWatch *w)
{
  drop_source (w);
  if (w->interval < 0)
    return;
  /* 0 means "on every loop iteration": a zero-interval timeout does that. */
  w->source = g_timeout_source_new ((guint) w->interval);
  g_source_set_callback (w->source, dispatch_timeout, GINT_TO_POINTER (w->id), NULL);
  g_source_set_name (w->source, "libvirt timeout");
  g_source_attach (w->source, NULL);
}

static FhEventWatch *
new_watch (gboolean is_timeout, void *opaque, virFreeCallback ff)
{
  FhEventWatch *w = g_new0 (FhEventWatch, 1);

  w->id = next_id++;
  w->is_timeout = is_timeout;
  w->opaque = opaque;
  w->ff = ff;
  w->fd = -1;
  g_hash_table_insert (watches, GINT_TO_POINTER (w->id), w);
  return w;
}

static int
add_handle (int fd, int events, virEventHandleCallback cb, void *opaque, virFreeCallback ff)
{
  FhEventWatch *w;
  int id;

  g_mutex_lock (&lock);
  w = new_watch (FALSE, opaque, ff);
  w->fd = fd;
  w->events = events;
  w->handle_cb = cb;
  arm_handle (w);
  id = w->id;
  g_mutex_unlock (&lock);
  return id;
}

static void
update_handle (int id, int events)
{
  FhEventWatch *w;

  g_mutex_lock (&lock);
  w = lookup (id, FALSE);
  if (w && w->events != events) {
    w->events = events;
    arm_handle (w);
  }
  g_mutex_unlock (&lock);
}

static gboolean
free_removed (gpointer data)
{
  FhEventWatch *w;

  g_mutex_lock (&lock);
  w = g_hash_table_lookup (watches, data);
  g_hash_table_remove (watches, data);
  g_mutex_unlock (&lock);
  if (w) {
    if (w->ff)
      w->ff (w->opaque);
    g_free (w);
  }
  return G_SOURCE_REMOVE;
}

static int
remove_watch (int id, gboolean is_timeout)
{
  FhEventWatch *w;

  g_mutex_lock (&lock);
  w = lookup (id, is_timeout);
  if (!w) {
    g_mutex_unlock (&lock);
    return -1;
  }
  w->removed = TRUE;
  drop_source (w);
  g_idle_add (free_removed, GINT_TO_POINTER (id));
  g_mutex_unlock (&lock);
  return 0;
}

static int
remove_handle (int id)
{
  return remove_watch (id, FALSE);
}

static int
add_timeout (int interval, virEventTimeoutCallback cb, void *opaque, virFreeCallback ff)
{
  FhEventWatch *w;
  int id;

  g_mutex_lock (&lock);
  w = new_watch (TRUE, opaque, ff);
  w->interval = interval;
  w->timeout_cb = cb;
  arm_timeout (w);
  id = w->id;
  g_mutex_unlock (&lock);
  return id;
}

static void
update_timeout (int id, int interval)
{
  FhEventWatch *w;

  g_mutex_lock (&lock);
  w = lookup (id, TRUE);
  /*
   * Same interval while armed: leave it, or a timer updated on every
   * iteration (the keepalive's) would never fire.
   */
  if (w && (w->interval != interval || (!w->source && interval >= 0))) {
    w->interval = interval;
    arm_timeout (w);
  }
  g_mutex_unlock (&lock);
}

static int
remove_timeout (int id)
{
  return remove_watch (id, TRUE);
}

void
fh_libvirt_event_register (void)
{
  static gsize done;

  if (g_once_init_enter (&done)) {
    watches = g_hash_table_new (NULL, NULL);
    virEventRegisterImpl (add_handle, update_handle, remove_handle, add_timeout, update_timeout,
                          remove_timeout);
    g_once_init_leave (&done, 1);
  }
}
