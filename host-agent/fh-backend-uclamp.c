/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uclamp backend: each vCPU thread gets its effective clamp through
 * sched_setattr(2).  The host scheduler then aggregates per run queue by
 * itself, which covers unpinned vCPUs and overcommit (MR-21).
 *
 * Flags: not SCHED_FLAG_KEEP_POLICY -- sched_setattr() turns it into
 * SETPARAM_POLICY and __sched_setscheduler() then keeps the thread's old
 * reset-on-fork and ignores SCHED_FLAG_RESET_ON_FORK.  So the thread's
 * current policy is read with sched_getattr() and passed back, with
 * KEEP_PARAMS (nice, priority, deadline parameters untouched),
 * UTIL_CLAMP_MIN|MAX (uclamp_validate() refuses min > max) and
 * RESET_ON_FORK, so helper threads a vCPU thread forks do not inherit the
 * guest-derived clamp (uclamp_fork()).  Releasing passes -1 for both
 * clamps: uclamp_reset() back to the kernel defaults (MR-22).  Kernels
 * without CONFIG_UCLAMP_TASK answer EOPNOTSUPP.
 */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-backend.h"
#include "fh-log.h"

#include "fh-parse.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* SCHED_ATTR_SIZE_VER1: the size with util_min/util_max, which this backend needs */
G_STATIC_ASSERT (sizeof (struct sched_attr) == 56);

void
fh_uclamp_fill_attr_full (struct sched_attr *attr, guint32 policy, FhClamp c, gboolean release,
                          gboolean min_default)
{
  memset (attr, 0, sizeof *attr);
  attr->size = sizeof *attr;
  attr->sched_policy = policy;
  attr->sched_flags = SCHED_FLAG_KEEP_PARAMS | SCHED_FLAG_UTIL_CLAMP_MIN |
                      SCHED_FLAG_UTIL_CLAMP_MAX | SCHED_FLAG_RESET_ON_FORK;
  /* -1: uclamp_reset(), the minimum is the kernel's default and follows its sysctl */
  attr->sched_util_min = release || min_default ? G_MAXUINT32 : c.min;
  attr->sched_util_max = release ? G_MAXUINT32 : c.max;
}

void
fh_uclamp_fill_attr (struct sched_attr *attr, guint32 policy, FhClamp c, gboolean release)
{
  fh_uclamp_fill_attr_full (attr, policy, c, release, FALSE);
}

static int
get_attr (guint tid, struct sched_attr *attr)
{
  memset (attr, 0, sizeof *attr);
  if (syscall (SYS_sched_getattr, (pid_t) tid, attr, (unsigned) sizeof *attr, 0) < 0)
    return -errno;
  return 0;
}

typedef struct {
  FhClamp applied;
  gboolean applied_min_default; /* the last call left the minimum to the kernel (MR-26) */
  gboolean applied_release; /* the last call released (-1/-1) */
  gboolean have_applied;
  gint64 retry_at_us;
  gint64 backoff_us;
  gboolean failing;
  gboolean seen; /* in the current apply round */
  pid_t owner;
  gboolean orig_known;   /* the clamps the thread had before we first set any */
  gboolean orig_restore; /* they were not the kernel's defaults: put them back */
  FhClamp orig;
  /* the latest target, for a retry that no pass asks for again */
  FhClamp want;
  gboolean want_release, want_min_default;
} TidState;

typedef struct {
  GHashTable *tids; /* tid -> TidState */
  gboolean any_failing;
} UclampPriv;

/*
 * The policy is read right before the call: a thread whose policy changed
 * since the last round keeps its new one.  (A change between the two calls
 * is lost; QEMU does not change its vCPU threads' policies.)  The first
 * read also keeps the clamps the thread had before we touched it: MR-22
 * puts non-default ones back instead of the kernel's defaults.  Defaults
 * cannot be told from explicit values for real-time threads (their default
 * minimum is sched_util_clamp_min_rt_default), so those are always reset.
 * Nor are clamps found with reset-on-fork set: that is our mark (QEMU does
 * not set it), left by a previous run of the daemon that was killed, and
 * putting those back would make a stale guest request permanent.
 */
static int
set_clamp (guint tid, TidState *st, FhClamp c, gboolean release, gboolean min_default)
{
  struct sched_attr cur, attr;
  int r = get_attr (tid, &cur);

  if (r < 0)
    return r;
  if (!st->orig_known) {
    gboolean normal = cur.sched_policy == SCHED_NORMAL || cur.sched_policy == SCHED_BATCH ||
                      cur.sched_policy == SCHED_IDLE;

    st->orig_known = TRUE;
    st->orig = (FhClamp){ cur.sched_util_min, cur.sched_util_max };
    st->orig_restore = normal && !(cur.sched_flags & SCHED_FLAG_RESET_ON_FORK) &&
                       cur.sched_util_max <= FH_SCALE && cur.sched_util_min <= cur.sched_util_max &&
                       !(cur.sched_util_min == 0 && cur.sched_util_max == FH_SCALE);
  }
  if (release && st->orig_restore)
    fh_uclamp_fill_attr (&attr, cur.sched_policy, st->orig, FALSE);
  else
    fh_uclamp_fill_attr_full (&attr, cur.sched_policy, c, release, min_default);
  if (syscall (SYS_sched_setattr, (pid_t) tid, &attr, 0) < 0)
    return -errno;
  return 0;
}

static gboolean
uclamp_start (FhBackend *self, GError **error)
{
  UclampPriv *priv = g_new0 (UclampPriv, 1);

  priv->tids = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free);
  self->priv = priv;
  return TRUE;
}

/*
 * A thread id can be reused once its thread exits: only release a clamp on
 * a thread that still belongs to the process we clamped it for.
 */
static gboolean
still_owned (FhBackend *self, guint tid, pid_t owner)
{
  g_autofree char *path = fh_path (self->paths, FH_ROOT_PROC, "%u/status", tid);
  g_autofree char *status = fh_read_small_file (path, NULL);
  g_autofree char *tgid = status ? fh_parse_status_field (status, "Tgid", NULL) : NULL;
  guint64 v;

  return tgid && g_ascii_string_to_unsigned (tgid, 10, 1, G_MAXINT32, &v, NULL) &&
         (pid_t) v == owner;
}

/* release: an inactive vCPU, back to the kernel defaults (want is ignored). */
static void
apply_one (FhBackend *self, guint tid, pid_t owner, TidState *st, FhClamp want, gboolean release,
           gboolean min_default, gint64 now_us)
{
  int r;

  if (release) {
    want = FH_CLAMP_NONE;
    min_default = FALSE;
  }
  st->want = want;
  st->want_release = release;
  st->want_min_default = min_default;
  if (st->have_applied && st->applied_release == release &&
      (release || (st->applied.min == want.min && st->applied.max == want.max &&
                   st->applied_min_default == min_default)))
    return;
  /* Threads we never clamped need no release. */
  if (!st->have_applied && !st->failing && release)
    return;
  if (st->failing && now_us < st->retry_at_us)
    return;
  /*
   * The thread was the VM's when the daemon last looked, up to a poll
   * interval ago; a thread id is reused once its thread exits.  Look
   * again right before setting, so a clamp never lands on a thread that
   * is no longer the VM's (the release path checks the same).
   */
  if (!still_owned (self, tid, owner)) {
    g_debug ("tid %u no longer belongs to process %d; not clamped", tid, (int) owner);
    return;
  }
  self->writes++;
  r = set_clamp (tid, st, want, release, min_default);
  if (r < 0) {
    self->write_failures++;
    st->backoff_us = st->failing ? MIN (st->backoff_us * 2, FH_BACKOFF_MAX_US) : FH_BACKOFF_MIN_US;
    st->retry_at_us = now_us + st->backoff_us;
    if (!st->failing || st->backoff_us == FH_BACKOFF_MAX_US)
      fh_log_tid (G_LOG_LEVEL_WARNING, tid, "sched_setattr(tid %u, util %u..%u): %s%s", tid,
                  want.min, want.max, g_strerror (-r),
                  r == -EOPNOTSUPP ? " (kernel without CONFIG_UCLAMP_TASK)" : "");
    st->failing = TRUE;
    ((UclampPriv *) self->priv)->any_failing = TRUE;
    return;
  }
  st->failing = FALSE;
  st->backoff_us = 0;
  st->applied = want;
  st->applied_min_default = min_default;
  st->applied_release = release;
  st->have_applied = TRUE;
}

/* The targets given; seen marks them for uclamp_apply()'s sweep. */
static void
apply_targets (FhBackend *self, const GArray *targets, gint64 now_us)
{
  GHashTable *tids = ((UclampPriv *) self->priv)->tids;

  for (guint i = 0; i < targets->len; i++) {
    const FhTidTarget *t = &g_array_index (targets, FhTidTarget, i);
    TidState *st = g_hash_table_lookup (tids, GUINT_TO_POINTER (t->tid));

    if (t->tid == 0)
      continue;
    if (!st) {
      st = g_new0 (TidState, 1);
      g_hash_table_insert (tids, GUINT_TO_POINTER (t->tid), st);
    }
    st->seen = TRUE;
    st->owner = t->owner;
    if (t->active)
      apply_one (self, t->tid, t->owner, st, t->eff, FALSE, t->min_default, now_us);
    else if (t->cap < FH_SCALE)
      /* MR-27: an idle or unhinted vCPU keeps its ceiling, and no floor */
      apply_one (self, t->tid, t->owner, st, (FhClamp){ 0, t->cap }, FALSE, t->min_default, now_us);
    else
      apply_one (self, t->tid, t->owner, st, t->eff, TRUE, FALSE, now_us);
  }
}

static void
uclamp_apply (FhBackend *self, const GArray *targets, gint64 now_us)
{
  UclampPriv *priv = self->priv;
  GHashTable *tids = priv->tids;
  GHashTableIter iter;
  gpointer key, value;

  g_hash_table_iter_init (&iter, tids);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    ((TidState *) value)->seen = FALSE;
  priv->any_failing = FALSE;
  apply_targets (self, targets, now_us);

  /* Threads no longer ours (VM gone, thread exited): release and forget. */
  g_hash_table_iter_init (&iter, tids);
  while (g_hash_table_iter_next (&iter, &key, &value)) {
    TidState *st = value;

    if (st->seen) {
      priv->any_failing |= st->failing;
      continue;
    }
    if (st->have_applied && !st->applied_release &&
        still_owned (self, GPOINTER_TO_UINT (key), st->owner)) {
      int r = set_clamp (GPOINTER_TO_UINT (key), st, FH_CLAMP_NONE, TRUE, FALSE);

      self->writes++;
      if (r < 0 && r != -ESRCH) {
        self->write_failures++;
        fh_log_tid (G_LOG_LEVEL_WARNING, GPOINTER_TO_UINT (key), "releasing tid %u: %s",
                    GPOINTER_TO_UINT (key), g_strerror (-r));
      }
    }
    g_hash_table_iter_remove (&iter);
  }
}

/*
 * Some threads only (a pass that decided some VMs); the others keep their
 * clamps.  Threads whose last write failed are retried once their backoff
 * has passed, with the latest target they were given.
 */
static void
uclamp_update (FhBackend *self, const GArray *targets, gint64 now_us)
{
  UclampPriv *priv = self->priv;
  GHashTableIter iter;
  gpointer key, value;
  gboolean failing = FALSE;

  apply_targets (self, targets, now_us);
  if (!priv->any_failing)
    return;
  g_hash_table_iter_init (&iter, priv->tids);
  while (g_hash_table_iter_next (&iter, &key, &value)) {
    TidState *st = value;

    if (st->failing)
      apply_one (self, GPOINTER_TO_UINT (key), st->owner, st, st->want, st->want_release,
                 st->want_min_default, now_us);
    failing |= st->failing;
  }
  priv->any_failing = failing;
}

static void
uclamp_stop (FhBackend *self)
{
  g_autoptr (GArray) none = g_array_new (FALSE, FALSE, sizeof (FhTidTarget));

  if (self->priv)
    uclamp_apply (self, none, G_MAXINT64);
}

static void
uclamp_free (FhBackend *self)
{
  UclampPriv *priv = self->priv;

  if (!priv)
    return;
  g_clear_pointer (&priv->tids, g_hash_table_unref);
  g_clear_pointer (&self->priv, g_free);
}

const FhBackendOps fh_backend_uclamp_ops = {
  .name = "uclamp",
  .start = uclamp_start,
  .apply = uclamp_apply,
  .update = uclamp_update,
  .stop = uclamp_stop,
  .free_priv = uclamp_free,
};
