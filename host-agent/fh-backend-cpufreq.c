/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cpufreq backend: per policy, scaling_min_freq = the floor and
 * scaling_max_freq = the ceiling of the vCPUs placed on its CPUs.
 *
 * The host's own limits are policy (MR-25): the values found at start, and
 * any value another writer (tuned, power-profiles-daemon, cpupower, an
 * admin) puts into the files later, bound every decision and are what a
 * released policy returns to.  Another writer is noticed when a file no
 * longer holds what we last saw there; it is logged, counted, and never
 * written over with an older value.
 *
 * The host's limits are saved to the state directory before the first
 * write and restored on exit; if the daemon died without restoring, the
 * next start finds the file and restores from it before anything else.
 * The file is written to a new file, synced and renamed over the old one,
 * and carries a version and a checksum; a file that fails any check, or
 * that is not ours, is not trusted: every policy then goes back to its
 * cpuinfo range, loudly (MR-20).
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
#include "fh-log.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fh-freq.h"
#include "fh-parse.h"

#define STATE_VERSION 2
#define STATE_GROUP "freqhintd"
#define STATE_MAX_BYTES (256 * 1024)
/* How often the files are compared with what we last saw there. */
#define EXTERNAL_CHECK_US (250 * G_TIME_SPAN_MILLISECOND)

typedef struct {
  guint seen_min, seen_max; /* what the files held after our last write or check */
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
  gint64 checked_us; /* last look for other writers */
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

/* Every value written is inside the policy's cpuinfo range, whatever asked for it. */
static gboolean
write_khz (FhBackend *self, const FhPolicy *p, const char *attr, guint khz, GError **error)
{
  g_autofree char *path = policy_attr (self, p->id, attr);
  g_autofree char *value =
      g_strdup_printf ("%u\n", CLAMP (khz, p->cpuinfo_min_khz, p->cpuinfo_max_khz));

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
  gboolean min_first;

  min_khz = CLAMP (min_khz, p->cpuinfo_min_khz, p->cpuinfo_max_khz);
  max_khz = CLAMP (max_khz, p->cpuinfo_min_khz, p->cpuinfo_max_khz);
  min_first = min_khz <= p->applied_max_khz;
  if (min_first && min_khz != p->applied_min_khz) {
    if (!write_khz (self, p, "scaling_min_freq", min_khz, error))
      return FALSE;
    p->applied_min_khz = min_khz;
  }
  if (max_khz != p->applied_max_khz) {
    if (!write_khz (self, p, "scaling_max_freq", max_khz, error))
      return FALSE;
    p->applied_max_khz = max_khz;
  }
  if (!min_first && min_khz != p->applied_min_khz) {
    if (!write_khz (self, p, "scaling_min_freq", min_khz, error))
      return FALSE;
    p->applied_min_khz = min_khz;
  }
  return TRUE;
}

/* What the kernel shows now (it may resolve a written value): the reference for MR-25. */
static void
note_seen (FhBackend *self, FhPolicy *p, PolicyState *st)
{
  if (!read_khz (self, p->id, "scaling_min_freq", &st->seen_min, NULL))
    st->seen_min = p->applied_min_khz;
  if (!read_khz (self, p->id, "scaling_max_freq", &st->seen_max, NULL))
    st->seen_max = p->applied_max_khz;
}

static char *
saved_path (FhBackend *self)
{
  return g_build_filename (self->state_dir, FH_CPUFREQ_SAVED_FILE, NULL);
}

/*
 * The state directory must be ours and closed to others: whoever can write
 * there can replace the file that tells us what the host's limits are.
 */
static gboolean
check_owner_mode (const struct stat *st, const char *path, gboolean dir, GError **error)
{
  if ((dir && !S_ISDIR (st->st_mode)) || (!dir && !S_ISREG (st->st_mode))) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: not a %s", path,
                 dir ? "directory" : "regular file");
    return FALSE;
  }
  if (st->st_uid != geteuid ()) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_PERM, "%s: owned by uid %u, not by freqhintd (uid %u)",
                 path, (guint) st->st_uid, (guint) geteuid ());
    return FALSE;
  }
  if (st->st_mode & (S_IWGRP | S_IWOTH)) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_PERM, "%s: writable by group or others (mode %04o)",
                 path, (guint) (st->st_mode & 07777));
    return FALSE;
  }
  return TRUE;
}

static gboolean
check_state_dir (FhBackend *self, GError **error)
{
  struct stat st;

  if (lstat (self->state_dir, &st) < 0) {
    int e = errno;

    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s", self->state_dir,
                 g_strerror (e));
    return FALSE;
  }
  return check_owner_mode (&st, self->state_dir, TRUE, error);
}

/* Covers the version and every value, so a torn or edited file does not pass. */
static char *
state_checksum (GKeyFile *kf, char **policies)
{
  g_autoptr (GString) canon = g_string_new (NULL);

  g_string_append_printf (canon, "freqhintd-cpufreq-state %d\n", STATE_VERSION);
  for (char **g = policies; *g; g++)
    g_string_append_printf (canon, "%s %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT "\n", *g,
                            g_key_file_get_uint64 (kf, *g, "scaling_min_freq", NULL),
                            g_key_file_get_uint64 (kf, *g, "scaling_max_freq", NULL));
  return g_compute_checksum_for_string (G_CHECKSUM_SHA256, canon->str, canon->len);
}

typedef struct {
  guint id, min, max;
} SavedPolicy;

/*
 * Read and check the file a previous run left.  FALSE with *error unset:
 * there is none.  FALSE with *error set: there is one and it is not to be
 * trusted.
 */
static gboolean
load_saved (FhBackend *self, GArray *out, GError **error)
{
  g_autofree char *path = saved_path (self);
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_autofree char *data = NULL, *sum = NULL, *want = NULL;
  g_auto (GStrv) policies = NULL;
  struct stat st;
  gsize n_policies = 0;
  gint64 version;
  ssize_t n;
  int fd;

  fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0 && errno == ENOENT)
    return FALSE;
  if (fd < 0) {
    int e = errno;

    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s", path, g_strerror (e));
    return FALSE;
  }
  if (fstat (fd, &st) < 0 || !check_owner_mode (&st, path, FALSE, error) ||
      !check_state_dir (self, error)) {
    if (error && !*error)
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s: %s", path, g_strerror (errno));
    close (fd);
    return FALSE;
  }
  data = g_malloc (STATE_MAX_BYTES + 1);
  n = read (fd, data, STATE_MAX_BYTES + 1);
  close (fd);
  if (n < 0 || n > STATE_MAX_BYTES) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s: %s", path,
                 n < 0 ? g_strerror (errno) : "too large");
    return FALSE;
  }
  data[n] = '\0';
  if (!g_key_file_load_from_data (kf, data, (gsize) n, G_KEY_FILE_NONE, error)) {
    g_prefix_error (error, "%s: ", path);
    return FALSE;
  }
  version = g_key_file_get_int64 (kf, STATE_GROUP, "version", NULL);
  if (version != STATE_VERSION) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s: version %" G_GINT64_FORMAT ", want %d",
                 path, version, STATE_VERSION);
    return FALSE;
  }
  policies = g_key_file_get_string_list (kf, STATE_GROUP, "policies", &n_policies, NULL);
  sum = g_key_file_get_string (kf, STATE_GROUP, "checksum", NULL);
  if (!policies || !sum) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s: no policy list or checksum", path);
    return FALSE;
  }
  want = state_checksum (kf, policies);
  if (strcmp (sum, want) != 0) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s: checksum mismatch", path);
    return FALSE;
  }
  for (char **g = policies; *g; g++) {
    SavedPolicy sp;
    guint64 id;

    if (!g_str_has_prefix (*g, "policy") ||
        !g_ascii_string_to_unsigned (*g + 6, 10, 0, FH_MAX_CPUS - 1, &id, NULL)) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s: bad policy name", path);
      return FALSE;
    }
    sp.id = (guint) id;
    sp.min = (guint) g_key_file_get_uint64 (kf, *g, "scaling_min_freq", NULL);
    sp.max = (guint) g_key_file_get_uint64 (kf, *g, "scaling_max_freq", NULL);
    if (sp.min == 0 || sp.max == 0 || sp.min > sp.max) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s: [%s] is incomplete", path, *g);
      return FALSE;
    }
    g_array_append_val (out, sp);
  }
  return TRUE;
}

static FhPolicy *
find_policy (FhBackend *self, guint id)
{
  for (guint i = 0; i < self->host->policies->len; i++) {
    FhPolicy *p = g_ptr_array_index (self->host->policies, i);

    if (p->id == id)
      return p;
  }
  return NULL;
}

/* Widest first so that any current pair accepts the writes. */
static gboolean
restore_pair (FhBackend *self, FhPolicy *p, guint min, guint max, GError **error)
{
  return write_khz (self, p, "scaling_max_freq", max, error) &&
         write_khz (self, p, "scaling_min_freq", min, error) &&
         write_khz (self, p, "scaling_max_freq", max, error);
}

/*
 * Restore what a previous run left behind (it crashed or was killed).  If
 * its file cannot be trusted, what the policies hold now may be that run's
 * floors and caps: the one known-safe state is each policy's full cpuinfo
 * range.
 */
static void
restore_saved (FhBackend *self)
{
  g_autofree char *path = saved_path (self);
  g_autoptr (GArray) saved = g_array_new (FALSE, FALSE, sizeof (SavedPolicy));
  g_autoptr (GError) error = NULL;
  gboolean all_ok = TRUE;

  if (!load_saved (self, saved, &error)) {
    g_autofree char *aside = NULL;

    if (!error)
      return;
    g_warning ("STATE FILE UNUSABLE: %s.  The cpufreq limits a previous run left cannot be "
               "told from the host's: resetting every policy to its cpuinfo range",
               error->message);
    for (guint i = 0; i < self->host->policies->len; i++) {
      FhPolicy *p = g_ptr_array_index (self->host->policies, i);
      g_autoptr (GError) e = NULL;

      if (!restore_pair (self, p, p->cpuinfo_min_khz, p->cpuinfo_max_khz, &e)) {
        fh_log_policy (G_LOG_LEVEL_WARNING, p->id, "resetting policy%u: %s", p->id, e->message);
        self->write_failures++;
      } else {
        fh_log_policy (G_LOG_LEVEL_WARNING, p->id, "policy%u reset to %u..%u kHz", p->id,
                       p->cpuinfo_min_khz, p->cpuinfo_max_khz);
      }
    }
    /* Kept for inspection, out of the way of the next save. */
    aside = g_strconcat (path, ".rejected", NULL);
    if (g_file_test (path, G_FILE_TEST_EXISTS) && g_rename (path, aside) < 0)
      g_warning ("%s: cannot move aside: %s", path, g_strerror (errno));
    return;
  }
  g_message ("restoring cpufreq limits saved by a previous run (%s)", path);
  for (guint i = 0; i < saved->len; i++) {
    const SavedPolicy *sp = &g_array_index (saved, SavedPolicy, i);
    FhPolicy *p = find_policy (self, sp->id);
    g_autoptr (GError) e = NULL;

    if (!p) {
      g_warning ("%s: policy%u is not on this host any more; skipped", path, sp->id);
      continue;
    }
    if (!restore_pair (self, p, sp->min, sp->max, &e)) {
      fh_log_policy (G_LOG_LEVEL_WARNING, p->id, "restoring policy%u: %s", p->id, e->message);
      self->write_failures++;
      all_ok = FALSE;
    }
  }
  if (all_ok)
    g_unlink (path);
}

/* Write-new-then-rename, each step synced, so a crash leaves the old file or the new one. */
static gboolean
write_durably (const char *dir, const char *path, const char *data, gsize len, GError **error)
{
  g_autofree char *tmp = g_strconcat (path, ".XXXXXX", NULL);
  gsize done = 0;
  int fd, dfd, e;

  fd = g_mkstemp_full (tmp, O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0)
    goto fail;
  while (done < len) {
    ssize_t n = write (fd, data + done, len - done);

    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = EIO;
      goto fail_fd;
    }
    done += (gsize) n;
  }
  if (fsync (fd) < 0)
    goto fail_fd;
  if (close (fd) < 0) {
    fd = -1;
    goto fail_tmp;
  }
  fd = -1;
  if (rename (tmp, path) < 0)
    goto fail_tmp;
  dfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync (dfd);
    close (dfd);
  }
  return TRUE;
fail_fd:
  e = errno;
  close (fd);
  errno = e;
fail_tmp:
  e = errno;
  g_unlink (tmp);
  errno = e;
fail:
  e = errno;
  g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s", path, g_strerror (e));
  return FALSE;
}

static gboolean
save_originals (FhBackend *self, GError **error)
{
  CpufreqPriv *priv = self->priv;
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *path = saved_path (self);
  g_autofree char *data = NULL, *sum = NULL;
  gsize len;

  for (guint i = 0; i < self->host->policies->len; i++) {
    FhPolicy *p = g_ptr_array_index (self->host->policies, i);
    char *group = g_strdup_printf ("policy%u", p->id);

    g_key_file_set_uint64 (kf, group, "scaling_min_freq", p->host_min_khz);
    g_key_file_set_uint64 (kf, group, "scaling_max_freq", p->host_max_khz);
    g_ptr_array_add (names, group);
  }
  g_ptr_array_add (names, NULL);
  sum = state_checksum (kf, (char **) names->pdata);
  g_key_file_set_integer (kf, STATE_GROUP, "version", STATE_VERSION);
  g_key_file_set_string_list (kf, STATE_GROUP, "policies", (const char *const *) names->pdata,
                              names->len - 1);
  g_key_file_set_string (kf, STATE_GROUP, "checksum", sum);
  g_key_file_set_comment (kf, NULL, NULL,
                          " freqhintd: the host's cpufreq limits, put back after a crash.\n"
                          " Written by freqhintd; a file that fails its checksum is not used.",
                          NULL);
  data = g_key_file_to_data (kf, &len, NULL);
  if (g_mkdir_with_parents (self->state_dir, 0700) < 0) {
    int e = errno;

    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s", self->state_dir,
                 g_strerror (e));
    return FALSE;
  }
  if (!check_state_dir (self, error) || !write_durably (self->state_dir, path, data, len, error))
    return FALSE;
  priv->saved = TRUE;
  return TRUE;
}

/*
 * MR-25: a file that no longer holds what we last saw there was written by
 * someone else.  Its value becomes the host's limit: decisions stay within
 * it and a release returns to it.  Logged once per write, counted.
 */
static void
check_external (FhBackend *self, FhPolicy *p, PolicyState *st)
{
  CpufreqPriv *priv = self->priv;
  guint cur_min, cur_max;
  gboolean changed = FALSE;

  if (!read_khz (self, p->id, "scaling_min_freq", &cur_min, NULL) ||
      !read_khz (self, p->id, "scaling_max_freq", &cur_max, NULL))
    return;
  if (cur_max != st->seen_max) {
    g_warning ("policy%u: scaling_max_freq changed by another writer: %u kHz (freqhintd had "
               "%u); it is the host's ceiling now",
               p->id, cur_max, st->seen_max);
    p->host_max_khz = cur_max;
    p->applied_max_khz = cur_max;
    p->external_writes++;
    changed = TRUE;
  }
  if (cur_min != st->seen_min) {
    /* The kernel pulls the shown minimum down to a lowered maximum: that is no write. */
    if (!(cur_max != st->seen_max && cur_min == cur_max)) {
      g_warning ("policy%u: scaling_min_freq changed by another writer: %u kHz (freqhintd had "
                 "%u); it is the host's floor now",
                 p->id, cur_min, st->seen_min);
      p->host_min_khz = cur_min;
      p->external_writes++;
      changed = TRUE;
    }
    p->applied_min_khz = cur_min;
  }
  st->seen_min = cur_min;
  st->seen_max = cur_max;
  if (p->host_min_khz > p->host_max_khz)
    p->host_min_khz = p->host_max_khz;
  if (changed && priv->saved) {
    g_autoptr (GError) error = NULL;

    if (!save_originals (self, &error))
      g_warning ("saving the host's new cpufreq limits: %s", error->message);
  }
}

static void
check_all_external (FhBackend *self, gint64 now_us)
{
  CpufreqPriv *priv = self->priv;

  priv->checked_us = now_us;
  for (guint i = 0; i < self->host->policies->len; i++)
    check_external (self, g_ptr_array_index (self->host->policies, i), &priv->st[i]);
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
  priv->st = g_new0 (PolicyState, self->host->policies->len);
  restore_saved (self);
  /* A state directory someone else can write to is not used at all. */
  if (g_file_test (self->state_dir, G_FILE_TEST_EXISTS) && !check_state_dir (self, error)) {
    g_prefix_error (error, "state directory: ");
    return FALSE;
  }
  for (guint i = 0; i < self->host->policies->len; i++) {
    FhPolicy *p = g_ptr_array_index (self->host->policies, i);
    PolicyState *st = &priv->st[i];

    if (!read_khz (self, p->id, "scaling_min_freq", &st->seen_min, error) ||
        !read_khz (self, p->id, "scaling_max_freq", &st->seen_max, error))
      return FALSE;
    /* MR-25: the host's own limits, as found, bound every decision. */
    p->host_max_khz = CLAMP (st->seen_max, p->cpuinfo_min_khz, p->cpuinfo_max_khz);
    p->host_min_khz = CLAMP (st->seen_min, p->cpuinfo_min_khz, p->host_max_khz);
    p->applied_min_khz = st->seen_min;
    p->applied_max_khz = st->seen_max;
    p->have_applied = TRUE;
    if (p->host_min_khz != p->cpuinfo_min_khz || p->host_max_khz != p->cpuinfo_max_khz)
      fh_log_policy (G_LOG_LEVEL_MESSAGE, p->id,
                     "policy%u: host limits %u..%u kHz (cpuinfo %u..%u) bound every decision",
                     p->id, p->host_min_khz, p->host_max_khz, p->cpuinfo_min_khz,
                     p->cpuinfo_max_khz);
  }
  priv->checked_us = g_get_monotonic_time ();
  return TRUE;
}

/* What the policy should hold now: the decision inside the host's limits (MR-18, MR-19, MR-25). */
static void
policy_target (FhBackend *self, const FhPolicy *p, guint *min_khz, guint *max_khz)
{
  if (p->decision.active || p->decision.capped) {
    FhFreqTable t = { p->cpuinfo_min_khz, p->cpuinfo_max_khz, (const guint *) p->available->data,
                      p->available->len };
    /* MR-27: no active vCPU, only the ceilings of those placed there */
    guint floor = p->decision.active ? p->decision.floor : 0;
    guint ceiling = p->decision.active ? p->decision.ceiling : p->decision.cap;

    fh_freq_limits (&t, floor, ceiling, min_khz, max_khz);
    fh_freq_quantize (&t, self->quantum_khz, min_khz, max_khz);
    *min_khz = CLAMP (*min_khz, p->host_min_khz, p->host_max_khz);
    *max_khz = CLAMP (*max_khz, p->host_min_khz, p->host_max_khz);
  } else {
    *min_khz = p->host_min_khz;
    *max_khz = p->host_max_khz;
  }
}

/*
 * Inside the interval a lowering waits: the timer writes whatever is
 * latest by then.  A raise of the floor or the ceiling is written at once
 * (MR-20): it is what a task that just woke is waiting for, and a guest
 * whose run queue swings between a capped and an uncapped task would
 * otherwise run each wake-up under the old cap for up to an interval.
 * Raises stay bounded: each one follows a lowering, which waits, or climbs
 * a finite table.  Half a millisecond of slack absorbs the timer's
 * rounding.
 */
static gboolean
must_wait (FhBackend *self, const FhPolicy *p, const PolicyState *st, guint min_khz,
           guint max_khz, gint64 now_us)
{
  gboolean raises = min_khz > p->applied_min_khz || max_khz > p->applied_max_khz;

  return !raises && st->last_write_us != 0 &&
         now_us - st->last_write_us < self->min_write_interval_us - 500;
}

static void
cpufreq_apply (FhBackend *self, const GArray *targets, gint64 now_us)
{
  CpufreqPriv *priv = self->priv;

  if (now_us - priv->checked_us >= EXTERNAL_CHECK_US)
    check_all_external (self, now_us);
  for (guint i = 0; i < self->host->policies->len; i++) {
    FhPolicy *p = g_ptr_array_index (self->host->policies, i);
    PolicyState *st = &priv->st[i];
    g_autoptr (GError) error = NULL;
    guint min_khz, max_khz;

    policy_target (self, p, &min_khz, &max_khz);
    if (min_khz == p->applied_min_khz && max_khz == p->applied_max_khz) {
      st->failing = FALSE;
      st->pending = FALSE;
      continue;
    }
    if (st->failing && now_us < st->retry_at_us) {
      st->pending = FALSE; /* the poll tick retries */
      continue;
    }
    if (must_wait (self, p, st, min_khz, max_khz, now_us)) {
      st->pending = TRUE;
      continue;
    }
    st->pending = FALSE;
    /*
     * Never write over a value someone else put there since we looked;
     * what they wrote can also turn a raise into a lowering, which waits.
     */
    check_external (self, p, st);
    policy_target (self, p, &min_khz, &max_khz);
    if (min_khz == p->applied_min_khz && max_khz == p->applied_max_khz)
      continue;
    if (must_wait (self, p, st, min_khz, max_khz, now_us)) {
      st->pending = TRUE;
      continue;
    }
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
      fh_log_policy (G_LOG_LEVEL_WARNING, p->id, "policy%u: %s; retrying in %" G_GINT64_FORMAT " s",
                     p->id, error->message, st->backoff_us / G_USEC_PER_SEC);
      st->failing = TRUE;
      /* What is in sysfs now is unknown after a failed write: read it back. */
      read_khz (self, p->id, "scaling_min_freq", &p->applied_min_khz, NULL);
      read_khz (self, p->id, "scaling_max_freq", &p->applied_max_khz, NULL);
      note_seen (self, p, st);
      continue;
    }
    note_seen (self, p, st);
    if (st->failing)
      fh_log_policy (G_LOG_LEVEL_MESSAGE, p->id, "policy%u: writes succeed again", p->id);
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
  /* On exit nothing waits: the host's limits go back now. */
  g_clear_handle_id (&priv->timer, g_source_remove);
  for (guint i = 0; i < self->host->policies->len; i++) {
    FhPolicy *p = g_ptr_array_index (self->host->policies, i);
    PolicyState *st = &priv->st[i];
    g_autoptr (GError) error = NULL;

    /* A value another writer set since the last look is the host's now (MR-25). */
    check_external (self, p, st);
    if (p->applied_min_khz == p->host_min_khz && p->applied_max_khz == p->host_max_khz)
      continue;
    if (!write_limits (self, p, p->host_min_khz, p->host_max_khz, &error)) {
      fh_log_policy (G_LOG_LEVEL_WARNING, p->id, "restoring policy%u: %s", p->id, error->message);
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
