/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Optional (config): mirror the operator ceiling into the host kernel, so
 * that it holds even while freqhintd is not running.
 *
 * libvirt gives every vCPU thread its own control group (".../vcpuN" under
 * the domain's group, cgroup v1 and v2 alike).  The vCPU's ceiling is
 * written to that group's cpu.uclamp.max -- and only to a group whose name
 * says it is this vCPU's, never to a group the thread shares with others
 * (plain QEMU, or a layout we do not know), which would clamp them too.
 * The agent then reads the value back as part of the host chain (MR-10),
 * which is consistent: the chain and the operator bound agree.
 */
#pragma once

#include <glib.h>

#include "fh-paths.h"

#define FH_MIRROR_ERROR (fh_mirror_error_quark ())
GQuark fh_mirror_error_quark (void);

typedef enum {
  FH_MIRROR_ERROR_NOT_VCPU_GROUP, /* the thread's group is not libvirt's vcpuN group */
  FH_MIRROR_ERROR_FAILED,         /* reading /proc or writing the file failed */
  FH_MIRROR_ERROR_NO_FILE, /* the group has no cpu.uclamp.max (no cpu controller or uclamp) */
} FhMirrorError;

/*
 * Write ceiling_pct (hundredths of a percent, FH_PERCENT_MAX = "max") to the
 * cpu.uclamp.max of thread tid's group, which must be ".../vcpu<vcpu>".
 * Paths go through paths->proc and paths->cgroup.  Writes only on change;
 * *written (may be NULL) says whether it wrote.
 */
gboolean fh_cgroup_mirror_vcpu_ceiling (const FhPaths *paths, guint tid, guint vcpu,
                                        guint ceiling_pct, gboolean *written, GError **error);
