/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-log.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static gboolean log_verbose;
static gboolean log_to_journal;

static const char *
field_value (const GLogField *fields, gsize n_fields, const char *key, gssize *length)
{
  for (gsize i = 0; i < n_fields; i++)
    if (strcmp (fields[i].key, key) == 0) {
      *length = fields[i].length;
      return fields[i].value;
    }
  return NULL;
}

char *
fh_log_format_line (const GLogField *fields, gsize n_fields)
{
  gssize dlen = -1, mlen = -1;
  const char *domain = field_value (fields, n_fields, "GLIB_DOMAIN", &dlen);
  const char *message = field_value (fields, n_fields, "MESSAGE", &mlen);
  GString *s = g_string_new (NULL);

  if (domain)
    g_string_append_len (s, domain, dlen);
  else
    g_string_append (s, "freqhintd");
  g_string_append (s, ": ");
  if (message)
    g_string_append_len (s, message, mlen);
  return g_string_free (s, FALSE);
}

GLogWriterOutput
fh_log_writer (GLogLevelFlags level, const GLogField *fields, gsize n_fields, gpointer data)
{
  g_autofree char *line = NULL;

  if ((level & G_LOG_LEVEL_DEBUG) && !log_verbose)
    return G_LOG_WRITER_HANDLED;
  /* The journal keeps PRIORITY and every field; stderr gets the text. */
  if (log_to_journal &&
      g_log_writer_journald (level, fields, n_fields, data) == G_LOG_WRITER_HANDLED)
    return G_LOG_WRITER_HANDLED;
  line = fh_log_format_line (fields, n_fields);
  fprintf (stderr, "%s\n", line);
  fflush (stderr);
  return G_LOG_WRITER_HANDLED;
}

void
fh_log_init (gboolean verbose)
{
  log_verbose = verbose;
  /* stderr is a socket of the journal's when systemd connected it there (StandardError=journal). */
  log_to_journal = g_log_writer_is_journald (fileno (stderr));
  g_log_set_writer_func (fh_log_writer, NULL, NULL);
}

gboolean
fh_log_limit_allow (FhLogLimit *l)
{
  gint64 now = g_get_monotonic_time ();
  guint64 left_out = 0;
  gboolean allow;

  g_mutex_lock (&l->lock);
  if (l->window_start == 0 || now - l->window_start >= (gint64) l->interval_s * G_USEC_PER_SEC) {
    left_out = l->suppressed;
    l->window_start = now;
    l->in_window = 0;
    l->suppressed = 0;
  }
  allow = l->in_window < l->burst;
  if (allow)
    l->in_window++;
  else
    l->suppressed++;
  g_mutex_unlock (&l->lock);
  if (left_out)
    g_warning ("%" G_GUINT64_FORMAT " more %s were not logged in the last %u s", left_out, l->what,
               l->interval_s);
  return allow;
}
