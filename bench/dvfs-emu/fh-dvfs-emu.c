/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fh-dvfs-emu: an emulated DVFS host for bench/ and the demo (issue 40),
 * not part of the product.  These build machines have no cpufreq, so the
 * frequencies freqhintd writes into a fixture tree change nothing a guest
 * can feel; this program closes the loop:
 *
 *   every window (--window-ms), per cpufreq policy of the fixture tree:
 *   1. each vCPU thread's demand in the window -- its real CPU time plus
 *      the time it waited for a real CPU for other reasons than its
 *      emulated quota (fh-emu-threads.h) -- gives its frequency-invariant
 *      utilization, a PELT-like average (fh-emu-governor.h says why the
 *      sample needs no f/f_max factor);
 *   2. the policy's governor (its fixture scaling_governor: schedutil,
 *      performance, powersave) picks a frequency: schedutil's
 *      max(uclamp_min, min(1.25 x util, uclamp_max)) x f_max on the
 *      busiest CPU of the policy (the vCPU threads placed on one CPU add
 *      up, as in a run queue), clamped into the scaling_min/max_freq that
 *      freqhintd writes and snapped to scaling_available_frequencies; it
 *      is written to scaling_cur_freq.  A write to the limits or the
 *      governor takes effect when it is made, as cpufreq applies new
 *      limits at once: the governor's last request is resolved again
 *      within them (a file monitor on the policy's directory);
 *   3. every vCPU thread placed on the policy then gets f/f_max of one host
 *      CPU, through a CPU-bandwidth cgroup of its own (fh-emu-bandwidth.h);
 *   4. the policy's energy grows by the window's power from a published
 *      energy model (fh-emu-energy.h), busy and idle.
 *
 * Placement (which policy a thread runs on) is the fixture's, read as
 * freqhintd reads it (fh-emu-threads.h), every --placement-ms.
 *
 * Limits of the emulation (bench/README.md says more): guests run under
 * TCG, so a vCPU thread's CPU time is the emulator's, not the guest's
 * instructions; a lower frequency is a smaller share of each bandwidth
 * period, not a slower clock -- within one period a thread runs at full
 * speed until its quota is spent, then waits; nothing of memory, caches or
 * voltage transitions is modelled; the governor asks once per window, a
 * limit applies when it is written, and a change takes effect at once.
 *
 *   fh-dvfs-emu --sysfs-root DIR --proc-root DIR (--thread TID | --vcpus-of PID)...
 *               [--window-ms 10] [--period-us auto] [--duration S]
 *               [--trace FILE] [--uclamp-from kernel|FILE] [--cgroup auto|v1|v2]
 *
 * Runs until SIGINT/SIGTERM or --duration, then puts every thread back in
 * its own cgroup, removes what it made and prints a summary (key=value
 * lines) on stdout.  Exit status: 0 done, 1 a failure while running (the
 * cleanup still happens), 2 bad usage or setup.
 */
#define G_LOG_DOMAIN "fh-dvfs-emu"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib-unix.h>
#include <gio/gio.h>

#include "fh-emu-bandwidth.h"
#include "fh-emu-clamp.h"
#include "fh-emu-energy.h"
#include "fh-emu-governor.h"
#include "fh-emu-threads.h"
#include "fh-host.h"
#include "fh-parse.h"
#include "fh-paths.h"

#define TRACE_VERSION 1

typedef struct _Emu Emu;

/* A stretch of a window at one frequency: a limit written mid-window starts a new one. */
typedef struct {
  guint khz;
  guint64 ns;
} EmuPiece;

typedef struct {
  Emu *emu;
  const FhPolicy *p; /* the fixture's, from fh_host_load() */
  FhFreqTable table;
  guint cur_khz, min_khz, max_khz;
  guint last_perf;   /* the governor's request of the last window, resolved again on a limit */
  char *governor;
  GFileMonitor *monitor; /* its directory: the limits as they are written */
  GArray *pieces;        /* EmuPiece: this window's, before the current one */
  gint64 piece_us;       /* when the current piece began */
  double energy;       /* model units x s, since the start */
  double khz_seconds;  /* for the time-weighted mean frequency */
  double busy_seconds; /* emulated busy time of its busiest CPU, summed */
  guint64 windows;
} EmuPolicy;

struct _Emu {
  FhPaths fixture;
  FhHost *host;
  GArray *policies; /* EmuPolicy */
  GArray *threads;  /* FhEmuThread */
  FhEmuBandwidth *bw;
  FhEmuClampSource *clamps;
  const FhEmuPowerModel *model;
  FILE *trace;
  guint window_ms, placement_ms, period_us;
  double duration_s;
  gint64 start_us, last_us, placed_us;
  GMainLoop *loop;
  int status;
};

static guint
cap_of (const EmuPolicy *ep, guint khz)
{
  return (guint) MIN ((guint64) khz * 1024 / MAX (ep->table.cpuinfo_max_khz, 1u), 1024);
}

static gboolean
read_khz (const FhPaths *fx, guint id, const char *file, guint *khz)
{
  g_autofree char *path = fh_path (fx, FH_ROOT_SYSFS, "devices/system/cpu/cpufreq/policy%u/%s",
                                   id, file);
  g_autofree char *text = fh_read_small_file (path, NULL);

  return text && fh_parse_uint_range (text, 1, G_MAXUINT, khz, NULL);
}

/* The limits freqhintd (or a test) wrote; what cannot be read keeps its last value. */
static void
read_limits (Emu *emu, EmuPolicy *ep)
{
  g_autofree char *gov_path = fh_path (&emu->fixture, FH_ROOT_SYSFS,
                                       "devices/system/cpu/cpufreq/policy%u/scaling_governor",
                                       ep->p->id);
  char *gov = fh_read_small_file (gov_path, NULL);

  read_khz (&emu->fixture, ep->p->id, "scaling_min_freq", &ep->min_khz);
  read_khz (&emu->fixture, ep->p->id, "scaling_max_freq", &ep->max_khz);
  if (gov) {
    g_free (ep->governor);
    ep->governor = g_strstrip (gov);
  }
}

static void
write_cur (Emu *emu, EmuPolicy *ep)
{
  g_autofree char *path = fh_path (&emu->fixture, FH_ROOT_SYSFS,
                                   "devices/system/cpu/cpufreq/policy%u/scaling_cur_freq",
                                   ep->p->id);
  g_autofree char *v = g_strdup_printf ("%u\n", ep->cur_khz);
  g_autoptr (GError) error = NULL;

  if (!fh_write_small_file (path, v, &error))
    g_warning ("%s", error->message);
}

/* A new frequency from now on: the stretch at the old one is kept for the window's energy. */
static void
policy_set_cur (Emu *emu, EmuPolicy *ep, guint khz, gint64 now_us)
{
  if (khz == ep->cur_khz)
    return;
  if (now_us > ep->piece_us) {
    EmuPiece piece = { ep->cur_khz, (guint64) (now_us - ep->piece_us) * 1000 };

    g_array_append_val (ep->pieces, piece);
  }
  ep->piece_us = now_us;
  ep->cur_khz = khz;
  write_cur (emu, ep);
}

static EmuPolicy *
policy_of_cpu (Emu *emu, gint cpu)
{
  if (cpu < 0 || (guint) cpu >= emu->host->n_cpus || emu->host->cpu_policy[cpu] < 0)
    return NULL;
  return &g_array_index (emu->policies, EmuPolicy, emu->host->cpu_policy[cpu]);
}

static gint
cpu_index (const EmuPolicy *ep, gint cpu)
{
  for (guint i = 0; i < ep->p->cpus->len; i++)
    if ((gint) g_array_index (ep->p->cpus, guint, i) == cpu)
      return (gint) i;
  return -1;
}

/* Real CPU time and utilization of every thread over the window just ended. */
static void
sample_threads (Emu *emu, guint64 window_ns)
{
  if (emu->clamps)
    fh_emu_clamp_source_refresh (emu->clamps);
  for (guint i = 0; i < emu->threads->len; i++) {
    FhEmuThread *t = &g_array_index (emu->threads, FhEmuThread, i);
    guint64 run, wait, throttled = t->throttled_ns;

    t->ran_ns = t->demand_ns = 0;
    if (t->alive && fh_emu_thread_schedstat (t->tid, &run, &wait)) {
      guint64 waited = wait >= t->waited_ns ? wait - t->waited_ns : 0;

      fh_emu_bandwidth_throttled_ns (emu->bw, t->tid, &throttled);
      t->ran_ns = run >= t->cputime_ns ? run - t->cputime_ns : 0;
      /* the wait its own quota caused is the emulated slowness, not demand */
      waited -= MIN (waited, throttled >= t->throttled_ns ? throttled - t->throttled_ns : 0);
      t->demand_ns = t->ran_ns + waited + t->carry_ns;
      t->carry_ns = MIN (t->demand_ns - MIN (t->demand_ns, window_ns), window_ns);
      t->demand_ns = MIN (t->demand_ns, window_ns);
      t->cputime_ns = run;
      t->waited_ns = wait;
      t->throttled_ns = throttled;
    } else if (t->alive) {
      g_message ("tid %u exited", t->tid);
      t->alive = FALSE;
    }
    t->util = fh_emu_util_update (t->util, t->demand_ns, window_ns);
    t->uclamp_min = 0;
    t->uclamp_max = 1024;
    if (emu->clamps && !fh_emu_clamp_get (emu->clamps, t->tid, &t->uclamp_min, &t->uclamp_max)) {
      t->uclamp_min = 0;
      t->uclamp_max = 1024;
    }
  }
}

typedef struct {
  guint perf;        /* the governor's request, before the policy's limits */
  double util;       /* utilization of the busiest CPU */
  guint tid;         /* the busiest thread, 0 none */
  guint umin, umax;  /* the clamps of the busiest CPU's run queue */
  double busy;       /* emulated busy fraction of the busiest CPU */
} PolicyWindow;

/*
 * One policy over the window just ended: its energy at the frequency it
 * had, then schedutil's request for the next one.  A CPU's run queue
 * aggregates the clamps of the threads that ran in the window (max of
 * mins, max of maxes): an idle vCPU does not hold a floor up.
 */
static PolicyWindow
account_policy (Emu *emu, EmuPolicy *ep, guint64 window_ns, gint64 now_us)
{
  guint n = ep->p->cpus->len;
  g_autofree double *busy = g_new0 (double, MAX (n, 1));
  g_autofree double *util = g_new0 (double, MAX (n, 1));
  g_autofree guint *umin = g_new0 (guint, MAX (n, 1));
  g_autofree guint *umax = g_new0 (guint, MAX (n, 1));
  g_autofree gboolean *active = g_new0 (gboolean, MAX (n, 1));
  EmuPiece last = { ep->cur_khz, (guint64) MAX (now_us - ep->piece_us, 0) * 1000 };
  double khz_ns = 0, pieces_ns = 0, share, best_util = -1;
  PolicyWindow w = { 0 };

  /* the window's frequencies, each for as long as it held: their mean is the thread's share */
  g_array_append_val (ep->pieces, last);
  for (guint i = 0; i < ep->pieces->len; i++) {
    const EmuPiece *pc = &g_array_index (ep->pieces, EmuPiece, i);

    khz_ns += (double) pc->khz * pc->ns;
    pieces_ns += pc->ns;
  }
  share = pieces_ns > 0 ? khz_ns / pieces_ns / MAX (ep->table.cpuinfo_max_khz, 1u)
                        : (double) ep->cur_khz / MAX (ep->table.cpuinfo_max_khz, 1u);

  for (guint i = 0; i < emu->threads->len; i++) {
    const FhEmuThread *t = &g_array_index (emu->threads, FhEmuThread, i);
    gint c = cpu_index (ep, t->cpu);

    if (c < 0)
      continue;
    /* at f the thread's work kept its emulated CPU busy f_max/f times longer */
    busy[c] += (double) t->demand_ns / (window_ns * share);
    util[c] += t->util;
    if (t->demand_ns > 0) {
      umin[c] = active[c] ? MAX (umin[c], t->uclamp_min) : t->uclamp_min;
      umax[c] = active[c] ? MAX (umax[c], t->uclamp_max) : t->uclamp_max;
      active[c] = TRUE;
    }
    if (t->util > best_util) {
      best_util = t->util;
      w.tid = t->tid;
    }
  }
  w.perf = 0;
  w.umin = 0;
  w.umax = 1024;
  for (guint c = 0; c < n; c++) {
    guint lo = active[c] ? umin[c] : 0, hi = active[c] ? umax[c] : 1024;
    guint perf = fh_emu_schedutil_perf (MIN (util[c], 1024.0), lo, hi);

    busy[c] = MIN (busy[c], 1.0);
    if (c == 0 || perf > w.perf) {
      w.perf = perf;
      w.util = MIN (util[c], 1024.0);
      w.umin = lo;
      w.umax = hi;
      w.busy = busy[c];
    }
  }
  /* each stretch at its own power; busy spread evenly over the window */
  for (guint i = 0; i < ep->pieces->len; i++) {
    const EmuPiece *pc = &g_array_index (ep->pieces, EmuPiece, i);

    ep->energy += fh_emu_window_energy (emu->model, cap_of (ep, pc->khz), busy, n, pc->ns / 1e9);
  }
  ep->khz_seconds += khz_ns / 1e9;
  ep->busy_seconds += w.busy * window_ns / 1e9;
  ep->windows++;
  g_array_set_size (ep->pieces, 0);
  ep->piece_us = now_us;
  return w;
}

static gboolean
apply_bandwidth (Emu *emu)
{
  gboolean ok = TRUE;

  for (guint i = 0; i < emu->threads->len; i++) {
    const FhEmuThread *t = &g_array_index (emu->threads, FhEmuThread, i);
    const EmuPolicy *ep = policy_of_cpu (emu, t->cpu);
    double share = ep ? (double) ep->cur_khz / MAX (ep->table.cpuinfo_max_khz, 1u) : 1.0;
    g_autoptr (GError) error = NULL;

    if (!t->alive)
      continue;
    if (!fh_emu_bandwidth_set (emu->bw, t->tid, share, &error)) {
      g_warning ("tid %u: %s", t->tid, error->message);
      ok = FALSE;
    }
  }
  return ok;
}

static gboolean
on_window (gpointer data)
{
  Emu *emu = data;
  gint64 now = g_get_monotonic_time ();
  guint64 window_ns = (guint64) MAX (now - emu->last_us, 1) * 1000;
  gboolean place = now - emu->placed_us >= (gint64) emu->placement_ms * 1000;

  emu->last_us = now;
  sample_threads (emu, window_ns);
  for (guint i = 0; i < emu->policies->len; i++) {
    EmuPolicy *ep = &g_array_index (emu->policies, EmuPolicy, i);
    PolicyWindow w = account_policy (emu, ep, window_ns, now);

    read_limits (emu, ep);
    ep->last_perf = w.perf;
    policy_set_cur (emu, ep,
                    fh_emu_governor_freq (&ep->table, ep->governor, w.perf, ep->min_khz,
                                          ep->max_khz),
                    now);
    if (emu->trace)
      fprintf (emu->trace, "%.3f\t%u\t%u\t%u\t%u\t%s\t%u\t%.0f\t%u\t%u\t%u\t%.3f\t%.3f\n",
               (now - emu->start_us) / 1e6, ep->p->id, ep->cur_khz, ep->min_khz, ep->max_khz,
               ep->governor ? ep->governor : "-", w.perf, w.util, w.tid, w.umin, w.umax, w.busy,
               ep->energy);
  }
  /*
   * Placement is re-read after the window was accounted where the thread
   * ran; a moved thread's new policy counts it from the next window.
   */
  if (place) {
    emu->placed_us = now;
    for (guint i = 0; i < emu->threads->len; i++) {
      FhEmuThread *t = &g_array_index (emu->threads, FhEmuThread, i);

      t->cpu = fh_emu_thread_placement (&emu->fixture, t->tid, emu->host->n_cpus);
    }
  }
  if (!apply_bandwidth (emu))
    emu->status = 1;
  if (emu->duration_s > 0 && now - emu->start_us >= emu->duration_s * 1e6) {
    g_main_loop_quit (emu->loop);
    return G_SOURCE_REMOVE;
  }
  return G_SOURCE_CONTINUE;
}

static gboolean
on_signal (gpointer data)
{
  g_main_loop_quit (((Emu *) data)->loop);
  return G_SOURCE_CONTINUE;
}

/*
 * A policy's limits or governor written: cpufreq applies new limits at once
 * (cpufreq_set_policy(), then the governor's ->limits()); here the last
 * window's request is resolved again within them.
 */
static void
on_policy_file (GFileMonitor *monitor, GFile *file, GFile *other, GFileMonitorEvent event,
                gpointer data)
{
  EmuPolicy *ep = data;
  Emu *emu = ep->emu;
  g_autofree char *name = g_file_get_basename (file);
  guint before = ep->cur_khz;

  if (event != G_FILE_MONITOR_EVENT_CHANGES_DONE_HINT && event != G_FILE_MONITOR_EVENT_CHANGED &&
      event != G_FILE_MONITOR_EVENT_CREATED)
    return;
  if (g_strcmp0 (name, "scaling_min_freq") != 0 && g_strcmp0 (name, "scaling_max_freq") != 0 &&
      g_strcmp0 (name, "scaling_governor") != 0)
    return;
  read_limits (emu, ep);
  policy_set_cur (emu, ep,
                  fh_emu_governor_freq (&ep->table, ep->governor, ep->last_perf, ep->min_khz,
                                        ep->max_khz),
                  g_get_monotonic_time ());
  if (ep->cur_khz != before && !apply_bandwidth (emu))
    emu->status = 1;
}

/* Watch every policy's directory; from here on the policies' array does not move. */
static gboolean
watch_policies (Emu *emu, GError **error)
{
  for (guint i = 0; i < emu->policies->len; i++) {
    EmuPolicy *ep = &g_array_index (emu->policies, EmuPolicy, i);
    g_autofree char *path = fh_path (&emu->fixture, FH_ROOT_SYSFS,
                                     "devices/system/cpu/cpufreq/policy%u", ep->p->id);
    g_autoptr (GFile) dir = g_file_new_for_path (path);

    ep->emu = emu;
    ep->monitor = g_file_monitor_directory (dir, G_FILE_MONITOR_NONE, NULL, error);
    if (!ep->monitor)
      return FALSE;
    /* a limit must not wait out GLib's default 800 ms between CHANGED events */
    g_file_monitor_set_rate_limit (ep->monitor, 0);
    g_signal_connect (ep->monitor, "changed", G_CALLBACK (on_policy_file), ep);
  }
  return TRUE;
}

/*
 * The fixture's policies, their frequencies brought within their limits;
 * *lowest: the lowest share of f_max any of them can ask for (the period
 * must keep its quota >= 1 ms).
 */
static gboolean
load_policies (Emu *emu, double *lowest, GError **error)
{
  if (!fh_host_load (emu->host, &emu->fixture, error))
    return FALSE;
  if (emu->host->policies->len == 0) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                 "%s: no cpufreq policies under devices/system/cpu/cpufreq", emu->fixture.sysfs);
    return FALSE;
  }
  for (guint i = 0; i < emu->host->policies->len; i++) {
    const FhPolicy *p = g_ptr_array_index (emu->host->policies, i);
    EmuPolicy ep = { .p = p };
    guint lo = p->cpuinfo_min_khz;

    ep.table.cpuinfo_min_khz = p->cpuinfo_min_khz;
    ep.table.cpuinfo_max_khz = p->cpuinfo_max_khz;
    ep.table.available_khz = p->available ? (const guint *) p->available->data : NULL;
    ep.table.n_available = p->available ? p->available->len : 0;
    ep.min_khz = p->cpuinfo_min_khz;
    ep.max_khz = p->cpuinfo_max_khz;
    ep.pieces = g_array_new (FALSE, FALSE, sizeof (EmuPiece));
    if (!read_khz (&emu->fixture, p->id, "scaling_cur_freq", &ep.cur_khz))
      ep.cur_khz = p->cpuinfo_max_khz;
    for (gsize j = 0; j < ep.table.n_available; j++)
      lo = MIN (lo, ep.table.available_khz[j]);
    *lowest = MIN (*lowest, (double) MAX (lo, 1u) / MAX (p->cpuinfo_max_khz, 1u));
    g_array_append_val (emu->policies, ep);
  }
  for (guint i = 0; i < emu->policies->len; i++) {
    EmuPolicy *ep = &g_array_index (emu->policies, EmuPolicy, i);

    read_limits (emu, ep);
    ep->cur_khz = fh_emu_resolve_freq (&ep->table, ep->cur_khz, ep->min_khz, ep->max_khz);
    ep->last_perf = cap_of (ep, ep->cur_khz);
    write_cur (emu, ep);
  }
  return TRUE;
}

static gboolean
add_thread (Emu *emu, guint tid, GError **error)
{
  FhEmuThread t = { .tid = tid, .alive = TRUE, .uclamp_max = 1024 };

  for (guint i = 0; i < emu->threads->len; i++)
    if (g_array_index (emu->threads, FhEmuThread, i).tid == tid)
      return TRUE;
  if (!fh_emu_thread_schedstat (tid, &t.cputime_ns, &t.waited_ns)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "tid %u: no /proc/%u/schedstat", tid,
                 tid);
    return FALSE;
  }
  t.cpu = fh_emu_thread_placement (&emu->fixture, tid, emu->host->n_cpus);
  if (!policy_of_cpu (emu, t.cpu))
    g_warning ("tid %u: the fixture places it on no cpufreq policy (%s/%u/status, stat); "
               "it runs unlimited until it is placed", tid, emu->fixture.proc, tid);
  if (!fh_emu_bandwidth_add (emu->bw, tid, error))
    return FALSE;
  g_array_append_val (emu->threads, t);
  return TRUE;
}

static void
print_summary (Emu *emu)
{
  double total = 0;

  for (guint i = 0; i < emu->policies->len; i++) {
    const EmuPolicy *ep = &g_array_index (emu->policies, EmuPolicy, i);
    double seconds = (emu->last_us - emu->start_us) / 1e6;

    total += ep->energy;
    printf ("policy=%u energy=%.3f busy_s=%.3f mean_freq_khz=%.0f windows=%" G_GUINT64_FORMAT "\n",
            ep->p->id, ep->energy, ep->busy_seconds,
            seconds > 0 ? ep->khz_seconds / seconds : (double) ep->cur_khz, ep->windows);
  }
  printf ("total_energy=%.3f seconds=%.3f model=\"%s\"\n", total,
          (emu->last_us - emu->start_us) / 1e6, emu->model->name);
}

static gboolean
parse_cgroup_mode (const char *s, FhEmuCgroupMode *mode)
{
  if (g_strcmp0 (s, "auto") == 0)
    *mode = FH_EMU_CGROUP_AUTO;
  else if (g_strcmp0 (s, "v1") == 0)
    *mode = FH_EMU_CGROUP_V1;
  else if (g_strcmp0 (s, "v2") == 0)
    *mode = FH_EMU_CGROUP_V2;
  else
    return FALSE;
  return TRUE;
}

static void
emu_clear (Emu *emu)
{
  /* threads back home first: nothing may stay capped after we are gone */
  g_clear_pointer (&emu->bw, fh_emu_bandwidth_free);
  g_clear_pointer (&emu->clamps, fh_emu_clamp_source_free);
  for (guint i = 0; emu->policies && i < emu->policies->len; i++) {
    EmuPolicy *ep = &g_array_index (emu->policies, EmuPolicy, i);

    if (ep->monitor)
      g_file_monitor_cancel (ep->monitor);
    g_clear_object (&ep->monitor);
    g_clear_pointer (&ep->pieces, g_array_unref);
    g_free (ep->governor);
  }
  g_clear_pointer (&emu->policies, g_array_unref);
  g_clear_pointer (&emu->threads, g_array_unref);
  g_clear_pointer (&emu->host, fh_host_free);
  g_clear_pointer (&emu->loop, g_main_loop_unref);
  if (emu->trace && emu->trace != stdout)
    fclose (emu->trace);
  emu->trace = NULL;
  fh_paths_clear (&emu->fixture);
}

static int
run (int argc, char **argv)
{
  g_autofree char *sysfs = NULL, *proc = NULL, *trace = NULL, *uclamp = NULL;
  g_autofree char *cgroup = NULL, *period = NULL;
  g_auto (GStrv) tids = NULL, vcpus_of = NULL;
  int window_ms = 10, placement_ms = 100;
  double duration = 0;
  GOptionEntry entries[] = {
    { "sysfs-root", 0, 0, G_OPTION_ARG_FILENAME, &sysfs,
      "Fixture sysfs root holding devices/system/cpu/cpufreq (required)", "DIR" },
    { "proc-root", 0, 0, G_OPTION_ARG_FILENAME, &proc,
      "Fixture proc root: where each thread is placed (default /proc)", "DIR" },
    { "thread", 0, 0, G_OPTION_ARG_STRING_ARRAY, &tids, "A vCPU thread to emulate", "TID" },
    { "vcpus-of", 0, 0, G_OPTION_ARG_STRING_ARRAY, &vcpus_of,
      "Every vCPU thread (\"CPU n/...\") of this QEMU process", "PID" },
    { "window-ms", 0, 0, G_OPTION_ARG_INT, &window_ms, "Governor window (default 10)", "MS" },
    { "placement-ms", 0, 0, G_OPTION_ARG_INT, &placement_ms,
      "How often placement is re-read (default 100)", "MS" },
    { "period-us", 0, 0, G_OPTION_ARG_STRING, &period,
      "CFS bandwidth period; default auto: the shortest that keeps every quota >= 1000 us",
      "US" },
    { "duration", 0, 0, G_OPTION_ARG_DOUBLE, &duration, "Stop after S seconds (default: a signal)",
      "S" },
    { "trace", 0, 0, G_OPTION_ARG_FILENAME, &trace,
      "Per policy per window, tab-separated (bench/README.md); - for stdout", "FILE" },
    { "uclamp-from", 0, 0, G_OPTION_ARG_FILENAME, &uclamp,
      "Threads' clamps: kernel (sched_getattr) or a file of \"TID MIN MAX\" lines", "SRC" },
    { "cgroup", 0, 0, G_OPTION_ARG_STRING, &cgroup, "auto (default), v1 or v2", "VER" },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- emulated DVFS host for freqhint's bench");
  g_autoptr (GError) error = NULL;
  FhEmuCgroupMode mode = FH_EMU_CGROUP_AUTO;
  Emu emu = { .model = &fh_emu_juno_a57, .status = 0 };
  double lowest = 1.0;
  int status;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    g_printerr ("fh-dvfs-emu: %s\n", error->message);
    return 2;
  }
  if (!sysfs || (!tids && !vcpus_of) || window_ms < 1 || placement_ms < 1 || duration < 0 ||
      argc > 1 || (cgroup && !parse_cgroup_mode (cgroup, &mode))) {
    g_printerr ("fh-dvfs-emu: usage: --sysfs-root DIR [--proc-root DIR] "
                "(--thread TID | --vcpus-of PID)... [options]; see --help\n");
    return 2;
  }
  /* from here on a signal ends the main loop, or it is never entered: cleanup is done either way */
  emu.loop = g_main_loop_new (NULL, FALSE);
  g_unix_signal_add (SIGINT, on_signal, &emu);
  g_unix_signal_add (SIGTERM, on_signal, &emu);
  fh_paths_init (&emu.fixture, sysfs, proc ? proc : "/proc", NULL);
  emu.host = fh_host_new ();
  emu.policies = g_array_new (FALSE, TRUE, sizeof (EmuPolicy));
  emu.threads = g_array_new (FALSE, TRUE, sizeof (FhEmuThread));
  emu.window_ms = (guint) window_ms;
  emu.placement_ms = (guint) placement_ms;
  emu.duration_s = duration;
  if (!load_policies (&emu, &lowest, &error))
    goto setup_failed;
  if (!period || g_strcmp0 (period, "auto") == 0) {
    /* the finest period the kernel allows: closest to a clock that is just slower */
    emu.period_us = (guint) ceil (FH_EMU_MIN_QUOTA_US / lowest / 100.0) * 100;
  } else {
    guint64 v;

    if (!g_ascii_string_to_unsigned (period, 10, 1000, 1000000, &v, &error))
      goto setup_failed;
    emu.period_us = (guint) v;
  }
  if (emu.period_us * lowest < FH_EMU_MIN_QUOTA_US - 0.5) {
    g_set_error (&error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                 "--period-us %u: the lowest frequency is %.1f %% of f_max and the kernel's "
                 "smallest quota is %d us, so the period must be >= %.0f us",
                 emu.period_us, lowest * 100, FH_EMU_MIN_QUOTA_US,
                 ceil (FH_EMU_MIN_QUOTA_US / lowest));
    goto setup_failed;
  }
  if (uclamp && !(emu.clamps = fh_emu_clamp_source_new (uclamp, &error)))
    goto setup_failed;

  emu.bw = fh_emu_bandwidth_new (mode, emu.period_us);
  for (guint i = 0; tids && tids[i]; i++) {
    guint64 v;

    if (!g_ascii_string_to_unsigned (tids[i], 10, 1, G_MAXINT32, &v, &error) ||
        !add_thread (&emu, (guint) v, &error))
      goto setup_failed;
  }
  for (guint i = 0; vcpus_of && vcpus_of[i]; i++) {
    g_autoptr (GArray) found = NULL;
    guint64 pid;

    if (!g_ascii_string_to_unsigned (vcpus_of[i], 10, 1, G_MAXINT32, &pid, &error) ||
        !(found = fh_emu_vcpu_threads ((pid_t) pid, &error)))
      goto setup_failed;
    for (guint j = 0; j < found->len; j++)
      if (!add_thread (&emu, g_array_index (found, guint, j), &error))
        goto setup_failed;
  }

  if (trace) {
    emu.trace = strcmp (trace, "-") == 0 ? stdout : fopen (trace, "we");
    if (!emu.trace) {
      g_set_error (&error, G_IO_ERROR, g_io_error_from_errno (errno), "%s: %s", trace,
                   g_strerror (errno));
      goto setup_failed;
    }
    /* line by line: a bench can follow it live, and a kill loses at most a line */
    setvbuf (emu.trace, NULL, _IOLBF, 0);
  }
  emu.start_us = emu.last_us = emu.placed_us = g_get_monotonic_time ();
  for (guint i = 0; i < emu.policies->len; i++)
    g_array_index (emu.policies, EmuPolicy, i).piece_us = emu.start_us;
  if (!watch_policies (&emu, &error))
    goto setup_failed;
  if (emu.trace) {
    fprintf (emu.trace,
             "# fh-dvfs-emu trace v%d start_monotonic_us=%" G_GINT64_FORMAT
             " start_realtime_us=%" G_GINT64_FORMAT " window_ms=%u period_us=%u model=\"%s\"\n",
             TRACE_VERSION, emu.start_us, g_get_real_time (), emu.window_ms, emu.period_us, emu.model->name);
    fprintf (emu.trace, "# time_s\tpolicy\tfreq_khz\tmin_khz\tmax_khz\tgovernor\tperf\tutil\t"
                        "tid\tuclamp_min\tuclamp_max\tbusy\tenergy\n");
  }
  if (!apply_bandwidth (&emu)) {
    g_set_error (&error, G_IO_ERROR, G_IO_ERROR_FAILED, "could not set the first quotas");
    goto setup_failed;
  }
  g_message ("%u thread(s), %u policies, window %u ms, period %u us, energy model: %s",
             emu.threads->len, emu.policies->len, emu.window_ms, emu.period_us, emu.model->name);

  g_timeout_add (emu.window_ms, on_window, &emu);
  g_main_loop_run (emu.loop);

  print_summary (&emu);
  status = emu.status;
  emu_clear (&emu);
  return status;

setup_failed:
  g_printerr ("fh-dvfs-emu: %s\n", error->message);
  emu_clear (&emu);
  return 2;
}

int
main (int argc, char **argv)
{
  setlocale (LC_ALL, "");
  /* the trace and the summary are read by scripts: '.' decimals whatever the locale */
  setlocale (LC_NUMERIC, "C");
  return run (argc, argv);
}
