/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Emulated clock speed: each vCPU thread in a cgroup of its own whose CPU
 * bandwidth is f/f_max of one host CPU, so the thread runs at most that
 * share of every period (CFS bandwidth control).
 *
 * The group is made inside the thread's own group of the hierarchy that
 * holds the cpu controller, so limits already set above it still apply:
 *   - cgroup v1 (the cpu controller bound to a v1 hierarchy, as on these
 *     build machines): DIR/fh-dvfs-emu-PID-TID with the TID in `tasks`,
 *     cpu.cfs_period_us and cpu.cfs_quota_us.  If that hierarchy is not
 *     mounted, it is mounted privately in a temporary directory and
 *     unmounted at the end.
 *   - cgroup v2: a threaded child of the thread's domain group, the TID in
 *     its cgroup.threads, cpu.max "QUOTA PERIOD".  Not exercised on the
 *     build machines (their cgroup2 has no cpu controller).
 * The kernel refuses a quota below 1000 us, so the period must be at
 * least 1000 us / (lowest share asked).
 *
 * Everything made is undone by fh_emu_bandwidth_free(): threads moved back
 * to the group they came from, groups removed, private mounts unmounted.
 */
#pragma once

#include <glib.h>

typedef enum {
  FH_EMU_CGROUP_AUTO, /* whichever hierarchy holds the thread's cpu controller */
  FH_EMU_CGROUP_V1,
  FH_EMU_CGROUP_V2,
} FhEmuCgroupMode;

#define FH_EMU_MIN_QUOTA_US 1000

typedef struct FhEmuBandwidth FhEmuBandwidth;

FhEmuBandwidth *fh_emu_bandwidth_new (FhEmuCgroupMode mode, guint period_us);
/* Give tid its own group, unlimited for now. */
gboolean fh_emu_bandwidth_add (FhEmuBandwidth *bw, guint tid, GError **error);
/* share of one host CPU, 0 < share <= 1 (1: no limit); written only when it changed. */
gboolean fh_emu_bandwidth_set (FhEmuBandwidth *bw, guint tid, double share, GError **error);
/* Total time tid's group was throttled, ns (cpu.stat); FALSE when unreadable. */
gboolean fh_emu_bandwidth_throttled_ns (FhEmuBandwidth *bw, guint tid, guint64 *ns);
/* The group directory of tid, NULL when it has none. */
const char *fh_emu_bandwidth_group (FhEmuBandwidth *bw, guint tid);
void fh_emu_bandwidth_free (FhEmuBandwidth *bw);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FhEmuBandwidth, fh_emu_bandwidth_free)
