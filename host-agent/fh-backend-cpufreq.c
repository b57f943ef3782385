/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cpufreq backend: per policy, scaling_min_freq = the floor and
 * scaling_max_freq = the ceiling of the vCPUs placed on its CPUs.
 *
 * The host's own values are saved to the state directory before the first
 * write and restored on exit; if the daemon died without restoring, the
 * next start finds the file and restores from it before anything else.
 *
 * Writes are rate-limited per policy (MR-20): a change after a quiet
 * interval is written at once, later ones within min_write_interval wait
 * for its end and only the latest is written.  Governors act on the same
 * time scale, and each write costs the kernel a QoS update and a governor
 * limits callback, so following every step of a vCPU's perf walk buys
 * nothing.  A timer makes sure the last pending value (a release back to
 * the originals included) is written even if no decision follows.
 */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-backend.h"

#include <errno.h>
#include <gio/gio.h>
#include <glib/gstdio.h>

#include "fh-freq.h"
#include "fh-parse.h"

typedef struct {
  guint orig_min, orig_max;
  gint64 retry_at_us;
  gint64 backoff_us;
  gboolean failing;
  gint64 last_write_us; /* when this policy was last written; 0 never */
  gboolean pending;     /* a change waits for the interval's end */
} PolicyState;

typedef struct {
  PolicyState *st; /* one per host policy */
  gboolean saved;  /* originals are on disk */
  FhBackend *self;
  guint timer;        /* fires at timer_at_us: pending changes are due */
  gint64 timer_at_us;
} CpufreqPriv;

static void cpufreq_apply (FhBackend *self, const GArray *targets, gint64 now_us);

static char *
policy_attr (FhBackend *self, guint id, const char *attr)
{
  return fh_path (self->paths, FH_ROOT_SYSFS, "devices/system/cpu/cpufreq/policy%u/%s", id, attr);
}

static gboolean
read_khz (FhBackend *self, guint id, const char *attr, guint *khz, GError **error)
{
  g_autofree char *path = policy_attr (self, id, attr);
  g_autofree char *text = fh_read_small_file (path, error);

  if (!text)
    return FALSE;
  if (!fh_parse_uint_range (text, 0, G_MAXUINT, khz, error)) {
    g_prefix_error (error, "%s: ", path);
    return FALSE;
  }
  return TRUE;
}

static gboolean
write_khz (FhBackend *self, guint id, const char *attr, guint khz, GError **error)
{
  g_autofree char *path = policy_attr (self, id, attr);
  g_autofree char *value = g_strdup_printf ("%u\n", khz);

  self->writes++;
  return fh_write_small_file (path, value, error);
}

/*
 * Order matters for the kernel: a new minimum above the current maximum
 * (or a new maximum below the current minimum) is refused on older
 * kernels, so widen first, then narrow.
 */
static gboolean
write_limits (FhBackend *self, FhPolicy *p, guint min_khz, guint max_khz, GError **error)
{
  gboolean min_first = min_khz <= p->applied_max_khz;

  if (min_first && min_khz != p->applied_min_khz) {
    if (!write_khz (self, p->id, "scaling_min_freq", min_khz, error))
      return FALSE;
    p->applied_min_khz = min_khz;
  }
  if (max_khz != p->applied_max_khz) {
    if (!write_khz (self, p->id, "scaling_max_freq", max_khz, error))
      return FALSE;
    p->applied_max_khz = max_khz;
  }
  if (!min_first && min_khz != p->applied_min_khz) {
    if (!write_khz (self, p->id, "scaling_min_freq", min_khz, error))
      return FALSE;
    p->applied_min_khz = min_khz;
  }
  return TRUE;
}

static char *
saved_path (FhBackend *self)
{
  return g_build_filename (self->state_dir, FH_CPUFREQ_SAVED_FILE, NULL);
}

/* Restore what a previous run left behind (it crashed or was killed). */
static void
restore_saved (FhBackend *self)
{
  g_autofree char *path = saved_path (self);
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_autoptr (GError) error = NULL;
  g_auto (GStrv) groups = NULL;
  gboolean all_ok = TRUE;

  if (!g_key_file_load_from_file (kf, path, G_KEY_FILE_NONE, &error)) {
    if (!g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
      g_warning ("%s: %s; not restoring", path, error->message);
    return;
  }
  g_message ("restoring cpufreq limits saved by a previous run (%s)", path);
  groups = g_key_file_get_groups (kf, NULL);
  for (char **g = groups; *g; g++) {
    guint64 id;
    guint min, max;
    g_autoptr (GError) e = NULL;

    if (!g_str_has_prefix (*g, "policy") ||
        !g_ascii_string_to_unsigned (*g + 6, 10, 0, FH_MAX_CPUS, &id, NULL))
      continue;
    min = (guint) g_key_file_get_uint64 (kf, *g, "scaling_min_freq", NULL);
    max = (guint) g_key_file_get_uint64 (kf, *g, "scaling_max_freq", NULL);
    if (min == 0 || max == 0 || min > max) {
      g_warning ("%s: [%s] is incomplete; skipped", path, *g);
      continue;
    }
    /* Widest first so that any current pair accepts the writes. */
    if (!write_khz (self, (guint) id, "scaling_max_freq", max, &e) ||
        !write_khz (self, (guint) id, "scaling_min_freq", min, &e) ||
        !write_khz (self, (guint) id, "scaling_max_freq", max, &e)) {
      g_warning ("restoring policy%u: %s", (guint) id, e->message);
      self->write_failures++;
      all_ok = FALSE;
    }
  }
  if (all_ok)
    g_unlink (path);
}

static gboolean
save_originals (FhBackend *self, GError **error)
{
  CpufreqPriv *priv = self->priv;
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_autofree char *path = saved_path (self);
  g_autofree char *data = NULL;
  gsize len;

  for (guint i = 0; i < self->host->policies->len; i++) {
    FhPolicy *p = g_ptr_array_index (self->host->policies, i);
    g_autofree char *group = g_strdup_printf ("policy%u", p->id);

    g_key_file_set_uint64 (kf, group, "scaling_min_freq", priv->st[i].orig_min);
    g_key_file_set_uint64 (kf, group, "scaling_max_freq", priv->st[i].orig_max);
  }
  data = g_key_file_to_data (kf, &len, NULL);
  if (g_mkdir_with_parents (self->state_dir, 0700) < 0) {
    int e = errno;

    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s", self->state_dir,
                 g_strerror (e));
    return FALSE;
  }
  /* g_file_set_contents() writes a temporary file and renames it. */
  if (!g_file_set_contents (path, data, len, error))
    return FALSE;
  priv->saved = TRUE;
  return TRUE;
}

static gboolean
pending_due (gpointer data)
{
  CpufreqPriv *priv = data;

  priv->timer = 0;
  cpufreq_apply (priv->self, NULL, g_get_monotonic_time ());
  return G_SOURCE_REMOVE;
}

/* Arm the timer for the earliest pending policy, or disarm it. */
static void
schedule_pending (FhBackend *self, gint64 now_us)
{
  CpufreqPriv *priv = self->priv;
  gint64 at = G_MAXINT64;

  for (guint i = 0; i < self->host->policies->len; i++) {
    PolicyState *st = &priv->st[i];

    if (st->pending)
      at = MIN (at, st->last_write_us + self->min_write_interval_us);
  }
  if (priv->timer && priv->timer_at_us == at)
    return;
  g_clear_handle_id (&priv->timer, g_source_remove);
  if (at == G_MAXINT64)
    return;
  priv->timer_at_us = at;
  priv->timer = g_timeout_add ((guint) MAX (1, (at - now_us + 999) / G_TIME_SPAN_MILLISECOND),
                               pending_due, priv);
}

static gboolean
cpufreq_start (FhBackend *self, GError **error)
{
  CpufreqPriv *priv = g_new0 (CpufreqPriv, 1);

  self->priv = priv;
  priv->self = self;
  if (self->host->policies->len == 0) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                 "no cpufreq policies under %s/devices/system/cpu/cpufreq", self->paths->sysfs);
    return FALSE;
  }
  restore_saved (self);
  priv->st = g_new0 (PolicyState, self->host->policies->len);
  for (guint i = 0; i < self->host->policies->len; i++) {
    FhPolicy *p = g_ptr_array_index (self->host->policies, i);
    PolicyState *st = &priv->st[i];

    if (!read_khz (self, p->id, "scaling_min_freq", &st->orig_min, error) ||
        !read_khz (self, p->id, "scaling_max_freq", &st->orig_max, error))
      return FALSE;
    p->applied_min_khz = st->orig_min;
    p->applied_max_khz = st->orig_max;
    p->have_applied = TRUE;
  }
  return TRUE;
}

static void
cpufreq_apply (FhBackend *self, const GArray *targets, gint64 now_us)
{
  CpufreqPriv *priv = self->priv;

  for (guint i = 0; i < self->host->policies->len; i++) {
    FhPolicy *p = g_ptr_array_index (self->host->policies, i);
    PolicyState *st = &priv->st[i];
    g_autoptr (GError) error = NULL;
    guint min_khz, max_khz;

    if (p->decision.active) {
      FhFreqTable t = { p->cpuinfo_min_khz, p->cpuinfo_max_khz, (const guint *) p->available->data,
                        p->available->len };

      fh_freq_limits (&t, p->decision.floor, p->decision.ceiling, &min_khz, &max_khz);
      fh_freq_quantize (&t, self->quantum_khz, &min_khz, &max_khz);
    } else {
      min_khz = st->orig_min;
      max_khz = st->orig_max;
    }
    if (min_khz == p->applied_min_khz && max_khz == p->applied_max_khz) {
      st->failing = FALSE;
      st->pending = FALSE;
      continue;
    }
    if (st->failing && now_us < st->retry_at_us) {
      st->pending = FALSE; /* the poll tick retries */
      continue;
    }
    /* Inside the interval: the timer writes whatever is latest by then.
     * Half a millisecond of slack absorbs the timer's rounding. */
    if (st->last_write_us != 0 &&
        now_us - st->last_write_us < self->min_write_interval_us - 500) {
      st->pending = TRUE;
      continue;
    }
    st->pending = FALSE;
    st->last_write_us = now_us;
    /* Never change what we could not put back. */
    if (!priv->saved && !save_originals (self, &error)) {
      g_warning ("saving original cpufreq limits: %s; not writing", error->message);
      self->write_failures++;
      p->write_failures++;
      st->failing = TRUE;
      st->backoff_us = CLAMP (st->backoff_us * 2, FH_BACKOFF_MIN_US, FH_BACKOFF_MAX_US);
      st->retry_at_us = now_us + st->backoff_us;
      continue;
    }
    if (!write_limits (self, p, min_khz, max_khz, &error)) {
      self->write_failures++;
      p->write_failures++;
      st->backoff_us =
          st->failing ? MIN (st->backoff_us * 2, FH_BACKOFF_MAX_US) : FH_BACKOFF_MIN_US;
      st->retry_at_us = now_us + st->backoff_us;
      g_warning ("policy%u: %s; retrying in %" G_GINT64_FORMAT " s", p->id, error->message,
                 st->backoff_us / G_USEC_PER_SEC);
      st->failing = TRUE;
      /* What is in sysfs now is unknown after a failed write: read it back. */
      read_khz (self, p->id, "scaling_min_freq", &p->applied_min_khz, NULL);
      read_khz (self, p->id, "scaling_max_freq", &p->applied_max_khz, NULL);
      continue;
    }
    if (st->failing)
      g_message ("policy%u: writes succeed again", p->id);
    st->failing = FALSE;
    st->backoff_us = 0;
    g_debug ("policy%u: %u..%u kHz", p->id, min_khz, max_khz);
  }
  schedule_pending (self, now_us);
}

static void
cpufreq_stop (FhBackend *self)
{
  CpufreqPriv *priv = self->priv;
  gboolean all_ok = TRUE;

  if (!priv || !priv->st)
    return;
  /* On exit nothing waits: the originals go back now. */
  g_clear_handle_id (&priv->timer, g_source_remove);
  for (guint i = 0; i < self->host->policies->len; i++) {
    FhPolicy *p = g_ptr_array_index (self->host->policies, i);
    PolicyState *st = &priv->st[i];
    g_autoptr (GError) error = NULL;

    if (p->applied_min_khz == st->orig_min && p->applied_max_khz == st->orig_max)
      continue;
    if (!write_limits (self, p, st->orig_min, st->orig_max, &error)) {
      g_warning ("restoring policy%u: %s", p->id, error->message);
      self->write_failures++;
      all_ok = FALSE;
    }
  }
  if (all_ok && priv->saved) {
    g_autofree char *path = saved_path (self);

    g_unlink (path);
    priv->saved = FALSE;
  }
  g_message ("cpufreq limits restored%s", all_ok ? "" : " (with errors; saved file kept)");
}

static void
cpufreq_free (FhBackend *self)
{
  CpufreqPriv *priv = self->priv;

  if (priv) {
    g_clear_handle_id (&priv->timer, g_source_remove);
    g_free (priv->st);
  }
  g_free (priv);
}

const FhBackendOps fh_backend_cpufreq_ops = {
  .name = "cpufreq",
  .start = cpufreq_start,
  .apply = cpufreq_apply,
  .stop = cpufreq_stop,
  .free_priv = cpufreq_free,
};
