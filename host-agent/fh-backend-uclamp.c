/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uclamp backend: each vCPU thread gets its effective clamp through
 * sched_setattr(2).  The host scheduler then aggregates per run queue by
 * itself, which covers unpinned vCPUs and overcommit.
 *
 * Flags: SCHED_FLAG_KEEP_ALL leaves the policy and its parameters alone
 * (__sched_setscheduler() skips them), UTIL_CLAMP_MIN|MAX set both clamps
 * (uclamp_validate() refuses min > max), RESET_ON_FORK keeps QEMU's
 * helper threads spawned from a vCPU thread from inheriting the clamp
 * (uclamp_fork()).  Kernels without CONFIG_UCLAMP_TASK answer EOPNOTSUPP.
 */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-backend.h"

#include "fh-parse.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SCHED_FLAG_RESET_ON_FORK
#define SCHED_FLAG_RESET_ON_FORK 0x01
#endif
#ifndef SCHED_FLAG_KEEP_POLICY
#define SCHED_FLAG_KEEP_POLICY 0x08
#endif
#ifndef SCHED_FLAG_KEEP_PARAMS
#define SCHED_FLAG_KEEP_PARAMS 0x10
#endif
#ifndef SCHED_FLAG_UTIL_CLAMP_MIN
#define SCHED_FLAG_UTIL_CLAMP_MIN 0x20
#endif
#ifndef SCHED_FLAG_UTIL_CLAMP_MAX
#define SCHED_FLAG_UTIL_CLAMP_MAX 0x40
#endif
#define FH_SCHED_FLAGS                                                                             \
  (SCHED_FLAG_KEEP_POLICY | SCHED_FLAG_KEEP_PARAMS | SCHED_FLAG_UTIL_CLAMP_MIN |                   \
   SCHED_FLAG_UTIL_CLAMP_MAX | SCHED_FLAG_RESET_ON_FORK)

/* include/uapi/linux/sched/types.h, SCHED_ATTR_SIZE_VER1 */
struct fh_sched_attr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;
  uint64_t sched_deadline;
  uint64_t sched_period;
  uint32_t sched_util_min;
  uint32_t sched_util_max;
};
G_STATIC_ASSERT (sizeof (struct fh_sched_attr) == 56);

typedef struct {
  FhClamp applied;
  gboolean have_applied;
  gint64 retry_at_us;
  gint64 backoff_us;
  gboolean failing;
  gboolean seen; /* in the current apply round */
  pid_t owner;
} TidState;

static int
set_clamp (guint tid, FhClamp c)
{
  struct fh_sched_attr attr;

  memset (&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.sched_flags = FH_SCHED_FLAGS;
  attr.sched_util_min = c.min;
  attr.sched_util_max = c.max;
  if (syscall (SYS_sched_setattr, (pid_t) tid, &attr, 0) < 0)
    return -errno;
  return 0;
}

static gboolean
uclamp_start (FhBackend *self, GError **error)
{
  self->priv = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free);
  return TRUE;
}

static void
apply_one (FhBackend *self, guint tid, TidState *st, FhClamp want, gint64 now_us)
{
  int r;

  if (st->have_applied && st->applied.min == want.min && st->applied.max == want.max)
    return;
  /* Threads we never clamped need no release. */
  if (!st->have_applied && !st->failing && want.min == 0 && want.max == FH_SCALE)
    return;
  if (st->failing && now_us < st->retry_at_us)
    return;
  self->writes++;
  r = set_clamp (tid, want);
  if (r < 0) {
    self->write_failures++;
    st->backoff_us = st->failing ? MIN (st->backoff_us * 2, FH_BACKOFF_MAX_US) : FH_BACKOFF_MIN_US;
    st->retry_at_us = now_us + st->backoff_us;
    if (!st->failing || st->backoff_us == FH_BACKOFF_MAX_US)
      g_warning ("sched_setattr(tid %u, util %u..%u): %s%s", tid, want.min, want.max,
                 g_strerror (-r), r == -EOPNOTSUPP ? " (kernel without CONFIG_UCLAMP_TASK)" : "");
    st->failing = TRUE;
    return;
  }
  st->failing = FALSE;
  st->backoff_us = 0;
  st->applied = want;
  st->have_applied = TRUE;
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

static void
uclamp_apply (FhBackend *self, const GArray *targets, gint64 now_us)
{
  GHashTable *tids = self->priv;
  GHashTableIter iter;
  gpointer key, value;

  g_hash_table_iter_init (&iter, tids);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    ((TidState *) value)->seen = FALSE;

  for (guint i = 0; i < targets->len; i++) {
    const FhTidTarget *t = &g_array_index (targets, FhTidTarget, i);
    TidState *st = g_hash_table_lookup (tids, GUINT_TO_POINTER (t->tid));
    FhClamp want = t->active ? t->eff : FH_CLAMP_NONE;

    if (t->tid == 0)
      continue;
    if (!st) {
      st = g_new0 (TidState, 1);
      g_hash_table_insert (tids, GUINT_TO_POINTER (t->tid), st);
    }
    st->seen = TRUE;
    st->owner = t->owner;
    apply_one (self, t->tid, st, want, now_us);
  }

  /* Threads no longer ours (VM gone, thread exited): release and forget. */
  g_hash_table_iter_init (&iter, tids);
  while (g_hash_table_iter_next (&iter, &key, &value)) {
    TidState *st = value;

    if (st->seen)
      continue;
    if (st->have_applied && (st->applied.min != 0 || st->applied.max != FH_SCALE) &&
        still_owned (self, GPOINTER_TO_UINT (key), st->owner)) {
      int r = set_clamp (GPOINTER_TO_UINT (key), FH_CLAMP_NONE);

      self->writes++;
      if (r < 0 && r != -ESRCH) {
        self->write_failures++;
        g_warning ("releasing tid %u: %s", GPOINTER_TO_UINT (key), g_strerror (-r));
      }
    }
    g_hash_table_iter_remove (&iter);
  }
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
  g_clear_pointer ((GHashTable **) &self->priv, g_hash_table_unref);
}

const FhBackendOps fh_backend_uclamp_ops = {
  .name = "uclamp",
  .start = uclamp_start,
  .apply = uclamp_apply,
  .stop = uclamp_stop,
  .free_priv = uclamp_free,
};
