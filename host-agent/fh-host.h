/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Host discovery: CPUs, cpufreq policies, system clamp defaults, and where
 * each vCPU thread sits (cgroup chain, placement).  Reads only, through
 * fh-paths; the decisions are the merge engine's.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include "fh-levels.h"
#include "fh-merge.h"
#include "fh-paths.h"
#include "fh-protocol.h"

#define FH_MAX_CPUS 4096

typedef struct {
  guint id;     /* N of policyN */
  GArray *cpus; /* guint: affected_cpus */
  guint cpuinfo_min_khz, cpuinfo_max_khz;
  GArray *available; /* guint kHz, may be empty */
  char *governor;
  /* Filled by the daemon / the cpufreq backend, read by telemetry. */
  FhCpuDecision decision;
  gboolean have_applied;
  guint applied_min_khz, applied_max_khz; /* last values known to be in sysfs */
  guint64 write_failures;
  /* cpufreq backend: the host's own limits, the bounds of every decision
   * (found at start, moved by other writers), and how often another
   * writer (tuned, power-profiles-daemon, cpupower) changed the files
   * (metric freqhint_cpufreq_external_writes_total). */
  guint host_min_khz, host_max_khz;
  guint64 external_writes;
} FhPolicy;

typedef struct {
  guint n_cpus;        /* highest online CPU + 1 */
  GPtrArray *policies; /* FhPolicy* */
  gint *cpu_policy;    /* n_cpus entries: index into policies, -1 none */
  FhClamp sys;         /* sched_util_clamp_{min,max}; 1024/1024 when absent */
  guint rt_min_default; /* sched_util_clamp_min_rt_default; 1024 when absent (MR-26) */
  gboolean have_sys;
  char *kernel_release; /* PROC/sys/kernel/osrelease, NULL when unreadable */
  /* Frequency classes for HOST_FREQ (PA-18): fh_host_build_freq_classes() */
  guint n_freq_classes;
  FhFreqClass freq_classes[VIRTIO_FREQHINT_MAX_FREQ_CLASSES];
  guint8 *cpu_class; /* n_cpus entries: class index or VIRTIO_FREQHINT_NO_FREQ_CLASS */
} FhHost;

FhHost *fh_host_new (void);
void fh_host_free (FhHost *host);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FhHost, fh_host_free)

/*
 * PA-18: group the policies into frequency classes (same cpuinfo range and
 * table; tables thinned to VIRTIO_FREQHINT_MAX_FREQS keeping both ends).
 * perf_step: the smallest table gap x 1024 / max_khz, or without a table
 * quantum_khz x 1024 / max_khz (0: 1), at least 1.  Policies past the
 * eighth distinct class get none.
 */
void fh_host_build_freq_classes (FhHost *host, guint quantum_khz);
/*
 * The class of a thread allowed on the CPUs in allowed_list (a
 * Cpus_allowed_list): its CPUs' class, or among several the widest range
 * (lowest index on a tie).  allowed_list NULL: the class of cpu.  No class:
 * VIRTIO_FREQHINT_NO_FREQ_CLASS.
 */
gint fh_cmp_uint (gconstpointer a, gconstpointer b);
guint8 fh_host_freq_class_of (const FhHost *host, const char *allowed_list, gint cpu);

/*
 * 4.4c: each policy's scaling_cur_freq into policy_khz (host->policies->len
 * entries, by index), 0 where it cannot be read.
 */
void fh_host_sample_cur_freq (const FhHost *host, const FhPaths *paths, guint *policy_khz);
/*
 * PA-26: the current frequency of a vCPU on cpu in class freq_class, from
 * policy_khz: 0 when unknown (no class, no CPU, no policy, no sample), else
 * the sample clamped into the class's range.
 */
guint32 fh_host_cur_khz (const FhHost *host, const guint *policy_khz, gint cpu, guint8 freq_class);
/* CPUs and cpufreq policies; a host without cpufreq has no policies. */
gboolean fh_host_load (FhHost *host, const FhPaths *paths, GError **error);
/* Re-read /proc/sys/kernel/sched_util_clamp_* (and _min_rt_default); TRUE when they changed. */
gboolean fh_host_refresh_sys (FhHost *host, const FhPaths *paths);
const char *fh_host_governor (const FhHost *host);
/* The governor of the policy covering cpu; NULL when no policy covers it. */
const char *fh_host_cpu_governor (const FhHost *host, gint cpu);

/* One per vCPU thread, kept for as long as its VM is connected: packed
 * (issue 29, item 7: memory per VM). */
typedef struct {
  /* interned (GRefString): a VM's vCPU threads share their scope's one copy */
  char *cgroup;   /* "v2:/path" or "v1(cpu,cpuacct):/path" for display */
  char *cgroup_dir; /* its directory relative to the cgroup root, "/" + hierarchy + path;
                     * NULL when that is cgroup (v2): fh_thread_info_cgroup_dir() */
  const FhLevels *levels; /* per cgroup level below the root (interned), NULL when unknown */
  char *allowed;  /* Cpus_allowed_list as read (interned), NULL when unknown */
  pid_t tgid;
  gint cpu;       /* placement, -1 when unknown */
  guint8 policy;  /* field 41 of PROC/<tid>/stat: SCHED_OTHER 0, FIFO 1, RR 2, ... */
  guint exists : 1; /* PROC/<tid>/status readable */
  guint pinned : 1;
  guint rt : 1;     /* SCHED_FIFO or SCHED_RR (MR-26) */
} FhThreadInfo;

void fh_thread_info_clear (FhThreadInfo *info);
/* The thread's group directory relative to the cgroup root; NULL when unknown. */
static inline const char *
fh_thread_info_cgroup_dir (const FhThreadInfo *info)
{
  return info->cgroup_dir ? info->cgroup_dir : info->cgroup;
}
/* Field 41 (policy) of a PROC/<tid>/stat line, counted after comm's last ')'. */
gboolean fh_stat_policy (const char *stat, guint *policy);
/* Never fails: what cannot be read is left unknown and logged at debug level. */
void fh_host_probe_thread (const FhPaths *paths, guint tid, guint n_cpus, FhThreadInfo *info);
/*
 * The same, reading each cgroup directory's cpu.uclamp.* at most once per
 * cache: many vCPU threads share parent groups (machine.slice, the VM's
 * scope), so one cache for a whole poll saves most cgroupfs reads.
 * fh_cgroup_cache_new() makes one; drop it after the poll.
 */
GHashTable *fh_cgroup_cache_new (void);
void fh_host_probe_thread_cached (const FhPaths *paths, GHashTable *cache, guint tid,
                                  guint n_cpus, FhThreadInfo *info);
