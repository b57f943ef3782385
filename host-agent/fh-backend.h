/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Actuation backends behind one small interface.
 *
 *   auto     (a name only) the first the host offers: cpufreq, uclamp, none
 *   none     decide and report only
 *   cpufreq  scaling_min_freq/scaling_max_freq of each policy
 *   uclamp   sched_setattr(UTIL_CLAMP_MIN|MAX) on each vCPU thread
 *
 * apply() is called after a pass that decided every vCPU, update() after a
 * pass that decided some (and on poll ticks that decided nothing), so a
 * backend retries failed writes there once its backoff has passed.  It
 * never fails: errors are logged and counted and the daemon carries on.
 */
#pragma once

#include <glib.h>
#include <linux/sched.h> /* SCHED_FLAG_*, SCHED_NORMAL... */
#include <sys/types.h>

/*
 * The kernel's uapi struct sched_attr.  Before 2.41 glibc has none, and its
 * <sched.h> (which GLib pulls in) and <linux/sched/types.h> both define
 * struct sched_param: the uapi one is renamed while it is read.
 */
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 41)
#include <sched.h>
#else
#define sched_param fh_uapi_sched_param
#include <linux/sched/types.h>
#undef sched_param
#endif

#include "fh-host.h"
#include "fh-merge.h"
#include "fh-paths.h"

typedef struct {
  guint tid;
  pid_t owner;     /* the VM's process: a released tid must still be its thread */
  gboolean active; /* idle or unhinted vCPUs are released (0..1024) */
  FhClamp eff;
  gboolean min_default; /* RT thread: leave UCLAMP_MIN to the kernel's default (MR-26) */
  guint cap;            /* an inactive vCPU keeps this maximum while its VM is known (MR-27, MR-28) */
} FhTidTarget;

typedef struct _FhBackend FhBackend;

typedef struct {
  const char *name;
  gboolean (*start) (FhBackend *self, GError **error);
  /* Policies' decisions are in host->policies; targets holds FhTidTarget. */
  void (*apply) (FhBackend *self, const GArray *targets, gint64 now_us);
  /* The same for some threads only: threads it does not name keep what
   * they have (no release).  NULL: apply() serves, it ignores targets. */
  void (*update) (FhBackend *self, const GArray *targets, gint64 now_us);
  void (*stop) (FhBackend *self);
  void (*free_priv) (FhBackend *self);
} FhBackendOps;

struct _FhBackend {
  const FhBackendOps *ops;
  FhHost *host;         /* not owned */
  const FhPaths *paths; /* not owned */
  char *state_dir;
  /* cpufreq: at most one write per policy per interval (MR-20); 0 = none */
  gint64 min_write_interval_us;
  /* cpufreq: round table-less policies' limits to this (MR-19); 0 = none */
  guint quantum_khz;
  guint64 writes;
  guint64 write_failures;
  gpointer priv;
};

FhBackend *fh_backend_new (const char *name, FhHost *host, const FhPaths *paths,
                           const char *state_dir, GError **error);
void fh_backend_free (FhBackend *self);
/* backend=auto: cpufreq, uclamp or none, whichever the host offers; *reason says why. */
const char *fh_backend_choose (const FhHost *host, const FhPaths *paths, char **reason);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FhBackend, fh_backend_free)

static inline gboolean
fh_backend_start (FhBackend *self, GError **error)
{
  return self->ops->start ? self->ops->start (self, error) : TRUE;
}

static inline void
fh_backend_apply (FhBackend *self, const GArray *targets, gint64 now_us)
{
  if (self->ops->apply)
    self->ops->apply (self, targets, now_us);
}

/* Some threads' targets changed (or none: a retry point); others stay. */
static inline void
fh_backend_update (FhBackend *self, const GArray *targets, gint64 now_us)
{
  if (self->ops->update)
    self->ops->update (self, targets, now_us);
  else if (self->ops->apply)
    self->ops->apply (self, targets, now_us);
}

static inline void
fh_backend_stop (FhBackend *self)
{
  if (self->ops->stop)
    self->ops->stop (self);
}

/* Retry schedule shared by the backends: 1 s doubling to 60 s. */
#define FH_BACKOFF_MIN_US (G_USEC_PER_SEC)
#define FH_BACKOFF_MAX_US (60 * G_USEC_PER_SEC)

extern const FhBackendOps fh_backend_none_ops;
extern const FhBackendOps fh_backend_cpufreq_ops;
extern const FhBackendOps fh_backend_uclamp_ops;

/*
 * The sched_setattr() argument of the uclamp backend (MR-21, MR-22): the
 * thread's current policy, clamps c, or -1/-1 (kernel defaults) to release.
 */
void fh_uclamp_fill_attr (struct sched_attr *attr, guint32 policy, FhClamp c, gboolean release);
/* The same, with min_default: sched_util_min = -1, the kernel's own (RT) default (MR-26). */
void fh_uclamp_fill_attr_full (struct sched_attr *attr, guint32 policy, FhClamp c, gboolean release,
                               gboolean min_default);

/* The cpufreq backend's crash-recovery file inside the state directory. */
#define FH_CPUFREQ_SAVED_FILE "cpufreq-saved.ini"
