/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Parsers for the text the kernel puts in sysfs, procfs and cgroupfs.
 *
 * Pure: each takes the file's contents (already read by the caller) and
 * returns values or a GError in FH_PARSE_ERROR.  Strict on purpose: content
 * the kernel would never print is an error, not a guess.
 */
#pragma once

#include <glib.h>

#define FH_PARSE_ERROR (fh_parse_error_quark ())
GQuark fh_parse_error_quark (void);

typedef enum {
  FH_PARSE_ERROR_INVALID, /* not the kernel's format */
  FH_PARSE_ERROR_RANGE,   /* well-formed but out of range */
  FH_PARSE_ERROR_MISSING, /* the line or field is absent */
} FhParseError;

/* cpu.uclamp.min / cpu.uclamp.max: "max" or a percentage -> 0..1024. */
gboolean fh_parse_uclamp (const char *text, guint *value, GError **error);
/* The kernel's own formatting of a stored percent (hundredths), for tests and tools. */
char *fh_format_uclamp_percent (guint hundredths);

/* A sysfs/procfs file holding one unsigned decimal integer. */
gboolean fh_parse_u64 (const char *text, guint64 *value, GError **error);
/* Same, bounded to [min, max]. */
gboolean fh_parse_uint_range (const char *text, guint min, guint max, guint *value, GError **error);

/* Whitespace-separated unsigned integers (scaling_available_frequencies, affected_cpus). */
GArray *fh_parse_u32_list (const char *text, GError **error);

/*
 * A CPU list as in Cpus_allowed_list and devices/system/cpu/online:
 * "0-3,8,10-11".  Returns a sorted GArray of guint without duplicates.
 * CPUs at or above max_cpus are an error (bounds what an input can cost).
 */
GArray *fh_parse_cpu_list (const char *text, guint max_cpus, GError **error);

/* The value of "Key:\t..." in /proc/<tid>/status, without the key. */
char *fh_parse_status_field (const char *status, const char *key, GError **error);

/* Which cgroup holds the cpu controller for a thread, from /proc/<tid>/cgroup. */
typedef struct {
  int version;     /* 1 or 2 */
  char *hierarchy; /* v1: the controller list ("cpu,cpuacct"), i.e. the mount's dir; v2: NULL */
  char *path;      /* absolute path inside the hierarchy, "/" for the root */
} FhCgroupPath;

void fh_cgroup_path_free (FhCgroupPath *cg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FhCgroupPath, fh_cgroup_path_free)
/*
 * A v1 line whose controller list names "cpu" wins (the cpu controller is
 * bound to v1 then); otherwise the v2 "0::" line.
 */
FhCgroupPath *fh_parse_proc_cgroup (const char *text, GError **error);

/* Field 39 (processor: CPU last run on) of /proc/<tid>/stat. */
gboolean fh_parse_stat_processor (const char *text, guint *cpu, GError **error);

/*
 * The time a thread has run, in ns (MR-29): field 1 of /proc/<tid>/schedstat
 * (the scheduler's sum_exec_runtime; CONFIG_SCHED_INFO), or fields 14 and 15
 * (utime, stime) of /proc/<tid>/stat in clock ticks.
 */
gboolean fh_parse_schedstat_run_ns (const char *text, guint64 *ns, GError **error);
gboolean fh_parse_stat_cputime (const char *text, guint64 *ticks, GError **error);

/*
 * MR-28: the vCPU index a hypervisor's thread name (/proc/<tid>/comm, at
 * most 15 bytes) says, or -1.  Exactly these forms, N a decimal number
 * below FH_MAX_VCPUS without leading zeros:
 *   "CPU N/ACCEL"  QEMU with -name ...,debug-threads=on (ACCEL: KVM, TCG, HVF, ...: letters)
 *   "vcpuN"        Cloud Hypervisor
 *   "fc_vcpu N"    Firecracker
 */
int fh_parse_vcpu_thread_name (const char *comm);
