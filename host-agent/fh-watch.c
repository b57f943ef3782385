/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-watch.h"

#include <errno.h>
#include <glib-unix.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

struct _FhWatch {
  const FhPaths *paths;
  int fd;
  guint source;
  GHashTable *by_rel; /* rel -> wd */
  GHashTable *by_wd;  /* wd -> rel (owned) */
  FhWatchFunc func;
  gpointer data;
  gboolean warned;
};

#define MASK                                                                                       \
  (IN_MODIFY | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_MOVED_FROM | IN_MOVED_TO)

/* The files whose change can move a decision; other cgroup files (memory.events...) are noise. */
static gboolean
relevant (const struct inotify_event *ev)
{
  static const char *const names[] = { "cpu.uclamp.min", "cpu.uclamp.max", "cgroup.threads",
                                       "cgroup.procs",   "cgroup.events",  "cgroup.type" };

  if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_ISDIR | IN_Q_OVERFLOW))
    return TRUE;
  if (ev->len == 0)
    return FALSE;
  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    if (strcmp (ev->name, names[i]) == 0)
      return TRUE;
  return FALSE;
}

static void
forget (FhWatch *w, int wd)
{
  const char *rel = g_hash_table_lookup (w->by_wd, GINT_TO_POINTER (wd));

  if (!rel)
    return;
  /* by_rel's key is by_wd's value */
  g_hash_table_remove (w->by_rel, rel);
  g_hash_table_remove (w->by_wd, GINT_TO_POINTER (wd));
}

static void watch_one (FhWatch *w, const char *rel);

static gboolean
on_events (gint fd, GIOCondition cond, gpointer data)
{
  FhWatch *w = data;
  char buf[16 * (sizeof (struct inotify_event) + NAME_MAX + 1)]
      __attribute__ ((aligned (__alignof__ (struct inotify_event))));

  for (;;) {
    ssize_t n = read (fd, buf, sizeof buf);

    if (n <= 0) {
      if (n < 0 && errno == EINTR)
        continue;
      break;
    }
    for (char *p = buf; p < buf + n;) {
      const struct inotify_event *ev = (const struct inotify_event *) p;

      p += sizeof *ev + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) {
        /* events were lost: everything below the root may have changed */
        w->func ("", w->data);
        continue;
      }
      if (relevant (ev)) {
        const char *rel = g_hash_table_lookup (w->by_wd, GINT_TO_POINTER (ev->wd));

        if (rel && (ev->mask & IN_CREATE) && (ev->mask & IN_ISDIR) && ev->len) {
          /* a new group below a watched one: threads moved into it are seen */
          g_autofree char *sub = g_strdup_printf ("%s/%s", rel, ev->name);

          watch_one (w, sub);
          rel = g_hash_table_lookup (w->by_wd, GINT_TO_POINTER (ev->wd));
        }
        if (rel)
          w->func (rel, w->data);
      }
      if (ev->mask & IN_IGNORED)
        forget (w, ev->wd);
    }
  }
  return G_SOURCE_CONTINUE;
}

FhWatch *
fh_watch_new (const FhPaths *paths, FhWatchFunc func, gpointer data, GError **error)
{
  FhWatch *w;
  int fd = inotify_init1 (IN_NONBLOCK | IN_CLOEXEC);

  if (fd < 0) {
    int e = errno;

    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "inotify_init1: %s",
                 g_strerror (e));
    return NULL;
  }
  w = g_new0 (FhWatch, 1);
  w->paths = paths;
  w->fd = fd;
  w->func = func;
  w->data = data;
  w->by_rel = g_hash_table_new (g_str_hash, g_str_equal);
  w->by_wd = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free);
  w->source = g_unix_fd_add (fd, G_IO_IN, on_events, w);
  return w;
}

void
fh_watch_free (FhWatch *w)
{
  if (!w)
    return;
  g_clear_handle_id (&w->source, g_source_remove);
  close (w->fd);
  g_hash_table_unref (w->by_rel);
  g_hash_table_unref (w->by_wd);
  g_free (w);
}

static void
watch_one (FhWatch *w, const char *rel)
{
  g_autofree char *path = NULL;
  int wd;

  if (g_hash_table_contains (w->by_rel, rel))
    return;
  path = fh_path (w->paths, FH_ROOT_CGROUP, "%s", rel);
  wd = inotify_add_watch (w->fd, path, MASK | IN_ONLYDIR);
  if (wd < 0) {
    /* ENOSPC: max_user_watches reached; the slow re-scan still sees changes */
    if (errno == ENOSPC && !w->warned) {
      g_warning ("inotify: no more watches (fs.inotify.max_user_watches); cgroup changes are "
                 "noticed by the periodic re-scan only");
      w->warned = TRUE;
    }
    return;
  }
  if (!g_hash_table_contains (w->by_wd, GINT_TO_POINTER (wd))) {
    char *key = g_strdup (rel);

    g_hash_table_insert (w->by_wd, GINT_TO_POINTER (wd), key);
    g_hash_table_insert (w->by_rel, key, GINT_TO_POINTER (wd));
  }
}

void
fh_watch_cgroup (FhWatch *w, const char *rel)
{
  g_autoptr (GString) prefix = NULL;
  g_auto (GStrv) parts = NULL;

  if (!w || !rel || g_hash_table_contains (w->by_rel, rel))
    return;
  prefix = g_string_new (NULL);
  parts = g_strsplit (rel, "/", -1);
  /* Not the root: moves into it are anyone's (every process's cgroup.procs). */
  for (char **p = parts; *p; p++) {
    if (**p == '\0')
      continue;
    g_string_append_printf (prefix, "/%s", *p);
    watch_one (w, prefix->str);
  }
}

guint
fh_watch_count (const FhWatch *w)
{
  return w ? g_hash_table_size (w->by_wd) : 0;
}
