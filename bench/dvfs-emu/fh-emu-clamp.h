/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where the emulator learns a vCPU thread's utilization clamps, which
 * bound the host governor's choice when freqhintd runs the uclamp backend.
 *
 *   "kernel"  sched_getattr(2) on the real thread: what the host kernel
 *             holds, on a host kernel with CONFIG_UCLAMP_TASK.
 *   FILE      lines "TID MIN MAX" (0..1024, '#' comments), read again
 *             every window.  For hosts whose kernel has no uclamp (these
 *             build machines): the agent's sched_setattr() fails there
 *             and nothing readable keeps what it meant to set, so the
 *             bench writes the file, e.g. from freqhintctl's vcpus table
 *             (tid, effective min/max).
 * A thread with no entry is unclamped (0..1024).
 */
#pragma once

#include <glib.h>

typedef struct FhEmuClampSource FhEmuClampSource;

/* spec: "kernel" or a file name.  "kernel" fails on a kernel without uclamp. */
FhEmuClampSource *fh_emu_clamp_source_new (const char *spec, GError **error);
/* Once per window: a file is read again (a missing file: no clamps). */
void fh_emu_clamp_source_refresh (FhEmuClampSource *src);
/* FALSE when tid has no clamps from this source. */
gboolean fh_emu_clamp_get (FhEmuClampSource *src, guint tid, guint *min, guint *max);
void fh_emu_clamp_source_free (FhEmuClampSource *src);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FhEmuClampSource, fh_emu_clamp_source_free)
