/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The vCPU threads the emulator slows down: which they are, how much CPU
 * time they used, and where they are placed.
 *
 * Two views of a thread, on purpose:
 *   - what it really did is read from the machine's own /proc (schedstat:
 *     nanoseconds on a CPU) -- the emulator caps real threads;
 *   - where it is placed is read through the fixture's proc root, exactly
 *     as freqhintd reads it (fh_host_probe_thread(): the one CPU of
 *     Cpus_allowed_list when pinned, else field 39 of stat, the CPU it
 *     last ran on).  The bench writes the fixture with
 *     tests/agent/mkfixture.sh, so the agent and the emulator agree on
 *     which fixture CPU, and so which cpufreq policy, a vCPU runs on,
 *     although all of them really share this machine's cores.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include "fh-paths.h"

typedef struct {
  guint tid;
  gint cpu;            /* fixture CPU it is placed on, -1 unknown */
  gboolean alive;      /* its real schedstat is readable */
  /* cumulative real figures at the end of the last window, ns */
  guint64 cputime_ns, waited_ns, throttled_ns;
  /*
   * In the last window: the CPU time it got, and what it asked for --
   * that plus the time it waited for a CPU for any other reason than its
   * emulated quota.  On a host CPU of its own (what is emulated) it would
   * have run then; on this shared machine it waited behind other work
   * (other vCPU threads, QEMU's own threads, a build).
   */
  guint64 ran_ns, demand_ns;
  /*
   * Demand counted after its window: the kernel adds a wait to run delay
   * only when the wait ends, and CPU time of a running thread at its next
   * tick, so a window can read more than its length and the next one
   * less.  The excess is carried into the next window (at most one
   * window's worth), not lost.
   */
  guint64 carry_ns;
  double util;         /* frequency-invariant PELT-like utilization, 0..1024 */
  guint uclamp_min, uclamp_max; /* its clamps; 0 and 1024 when it has none */
} FhEmuThread;

/*
 * Real CPU time of tid and its time runnable but waiting for a CPU, ns:
 * the first two fields of /proc/TID/schedstat.  The wait includes the
 * time its cgroup was throttled (its task stays queued).
 */
gboolean fh_emu_thread_schedstat (guint tid, guint64 *run_ns, guint64 *wait_ns);

/*
 * The vCPU threads of a QEMU process: its tasks whose comm reads
 * "CPU <n>/<accel>" ("CPU 0/TCG", "CPU 1/KVM": QEMU names its threads
 * with -name ...,debug-threads=on, which libvirt always passes; without
 * it, give the thread-ids of QMP query-cpus-fast to --thread), sorted by
 * tid.
 */
GArray *fh_emu_vcpu_threads (pid_t pid, GError **error);

/* The fixture CPU tid is placed on, -1 when the fixture does not say. */
gint fh_emu_thread_placement (const FhPaths *fixture, guint tid, guint n_cpus);
