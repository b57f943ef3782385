/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host governor model of the DVFS emulator: how a policy's frequency
 * follows the vCPU threads placed on it.  Pure (no I/O), so the unit test
 * drives it with plain numbers.
 *
 * Utilization is frequency-invariant, on SCHED_CAPACITY_SCALE (1024), as
 * the kernel's PELT signal is.  Under emulation a thread at frequency f
 * gets at most f/f_max of a host CPU (fh-emu-bandwidth.c); a thread that
 * ran r ns of host CPU time in a window of w ns kept its emulated CPU busy
 * for r * f_max/f, and scaling that busy time by f/f_max (frequency
 * invariance) leaves r: the invariant sample is r/w whatever f was.  (r
 * is the thread's demand, fh-emu-threads.h: the CPU time it would have
 * had on a host CPU of its own.)
 */
#pragma once

#include <glib.h>

#include "fh-freq.h"

/* PELT's half-life: y^32 = 1/2 with 1 ms periods (kernel/sched/pelt.c). */
#define FH_EMU_PELT_HALFLIFE_US 32000

/*
 * One window of the PELT-like average: util decays by y^(window in ms)
 * and the window's sample (ran_ns / window_ns, at most 1) fills the rest.
 * A geometric average of the same half-life as PELT, not its 1024 us
 * segments: windows here are whole milliseconds or more.
 */
double fh_emu_util_update (double util, guint64 ran_ns, guint64 window_ns);

/*
 * schedutil's performance level for one CPU (6.12's
 * sugov_effective_cpu_perf()): 1.25 x util, at most the run queue's
 * uclamp max, at least its uclamp min (the min wins an inversion), capped
 * at 1024.
 */
guint fh_emu_schedutil_perf (double util, guint uclamp_min, guint uclamp_max);

/*
 * cpufreq's resolution of a target into a policy (__resolve_freq() with
 * CPUFREQ_RELATION_L): the target is clamped into min..max, then the
 * lowest table frequency at or above it that lies within min..max; if
 * none, the highest within min..max; if no table entry lies within
 * min..max at all, the clamped target.  Without a table: the clamped
 * target.
 */
guint fh_emu_resolve_freq (const FhFreqTable *t, guint target_khz, guint min_khz, guint max_khz);

/*
 * The frequency a governor picks for a policy whose busiest CPU asks perf
 * (0..1024): "schedutil" maps perf onto cpuinfo_max (get_next_freq());
 * "performance" holds max_khz, "powersave" min_khz.  Any other governor
 * name is modelled as schedutil.  The result is resolved as above.
 */
guint fh_emu_governor_freq (const FhFreqTable *t, const char *governor, guint perf,
                            guint min_khz, guint max_khz);
