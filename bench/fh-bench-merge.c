/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fh-bench-merge: the agent's own work per hint update, without sockets,
 * main loop or actuation — decode + merge + decide, as freqhintd does it.
 *
 *   fh-bench-merge [--vms 1000] [--vcpus 16] [--cpus 64] [--seconds 2]
 *                  [--rounds N] [--records-per-frame 16]
 *
 * Synthetic host: --cpus CPUs in cpufreq policies of 8 CPUs with a
 * 7-step frequency table; every vCPU thread sits two cgroup levels deep
 * (machine.slice, the VM's scope), every tenth VM has operator bounds.
 * Hints are encoded once up front (8 variants per VM, so values change
 * from round to round) and replayed.
 *
 * One round = what freqhintd does when every VM's device forwarded one
 * HINTS frame within one coalescing window (fh-daemon.c):
 *   decode    fh_frame_parse() + fh_decode_hints() per frame (on_hints()
 *             bookkeeping: latest record per vCPU wins)
 *   merge     fh_merge_vcpu() per vCPU (guest request, operator, cgroup
 *             chain, system defaults, grant)
 *   decide    fh_merge_aggregate_cpus(), then per policy
 *             fh_merge_aggregate_set() + fh_freq_limits() (the kHz the
 *             cpufreq backend would write; the none backend stops here)
 * An update is one decoded record.  With --records-per-frame smaller than
 * --vcpus each frame carries that many records (the other vCPUs keep their
 * state, as with a partial HINTS frame) and the decision pass still covers
 * every vCPU — the daemon recomputes everything on each pass.
 *
 * Prints one line of key=value pairs.  Timing: CLOCK_MONOTONIC around
 * whole rounds on one core (the process pins itself to the CPU it starts
 * on); the best and the median of 5 batches are printed.  With --rounds
 * the program runs exactly that many rounds and prints no timing — for
 * instruction counts under valgrind --tool=callgrind (run it twice with
 * different --rounds and divide the difference, so set-up cancels out).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <glib.h>

#include <linux/virtio_freqhint.h>

#include "fh-freq.h"
#include "fh-merge.h"
#include "fh-protocol.h"

#define VARIANTS 8
#define POLICY_CPUS 8

typedef struct {
  FhGuestHint hint[FH_MAX_VCPUS];
  FhVcpuDecision d[FH_MAX_VCPUS];
  FhClamp op;
} Vm;

typedef struct {
  guint vms, vcpus, cpus, rpf;
  Vm *vm;
  uint8_t *frames; /* [VARIANTS][vms] encoded frames, stride frame_stride */
  size_t frame_stride;
  size_t *frame_len;
  FhPlacedVcpu *placed;
  FhCpuDecision *cpu;
  guint n_policies;
  guint *policy_cpus;    /* [n_policies][POLICY_CPUS] */
  guint *policy_khz;     /* [n_policies][2], so the work cannot be optimised away */
  FhClamp levels[2];
  FhClamp sys;
  FhMergeParams params;
  FhFreqTable table;
  guint64 checksum;
} Bench;

static const guint freq_table[] = { 3200000, 2800000, 2400000, 2000000,
                                    1600000, 1200000, 800000 };

/* A small deterministic generator: the same hints on every run. */
static guint32
next_rand (guint32 *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

static void
make_record (FhRecord *r, guint vcpu, guint32 *rng)
{
  guint32 x = next_rand (rng);
  guint a = x % 1025, b = (x >> 11) % 1025;

  memset (r, 0, sizeof *r);
  r->vcpu = (uint16_t) vcpu;
  r->seq = x;
  switch ((x >> 22) % 8) {
    case 0: /* idle vCPU */
      r->flags = VIRTIO_FREQHINT_R_IDLE;
      break;
    case 1: /* a kernel without uclamp: perf only */
      r->flags = VIRTIO_FREQHINT_R_PERF_VALID;
      r->perf = (uint16_t) a;
      break;
    default: /* clamps and perf */
      r->flags = VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID |
                 VIRTIO_FREQHINT_R_PERF_VALID;
      r->clamp_min = (uint16_t) MIN (a, b);
      r->clamp_max = (uint16_t) MAX (a, b);
      r->perf = (uint16_t) ((a + b) / 2);
      break;
  }
}

static void
bench_init (Bench *b)
{
  static FhHints h;
  guint32 rng = 0x9e3779b9u;

  b->frame_stride = FH_FRAME_HDR_SIZE + 16 + 16 * (size_t) b->rpf;
  b->frames = g_malloc0 (VARIANTS * (size_t) b->vms * b->frame_stride);
  b->frame_len = g_new0 (size_t, VARIANTS * (size_t) b->vms);
  b->vm = g_new0 (Vm, b->vms);
  b->placed = g_new0 (FhPlacedVcpu, (size_t) b->vms * b->vcpus);
  b->cpu = g_new0 (FhCpuDecision, b->cpus);
  b->n_policies = (b->cpus + POLICY_CPUS - 1) / POLICY_CPUS;
  b->policy_cpus = g_new0 (guint, (size_t) b->n_policies * POLICY_CPUS);
  b->policy_khz = g_new0 (guint, (size_t) b->n_policies * 2);
  for (guint i = 0; i < b->n_policies * POLICY_CPUS; i++)
    b->policy_cpus[i] = MIN (i, b->cpus - 1);
  b->sys = (FhClamp){ 1024, 1024 };
  b->levels[0] = (FhClamp){ 0, 1024 };  /* machine.slice: kernel defaults */
  b->levels[1] = (FhClamp){ 51, 922 };  /* the VM's scope: 5% .. 90% */
  b->params = (FhMergeParams){ TRUE, 1.0 };
  b->table = (FhFreqTable){ 800000, 3200000, freq_table, G_N_ELEMENTS (freq_table) };

  for (guint v = 0; v < b->vms; v++) {
    b->vm[v].op = (v % 10 == 0) ? (FhClamp){ 102, 768 } : FH_CLAMP_NONE;
    for (guint j = 0; j < b->vcpus; j++) {
      FhPlacedVcpu *p = &b->placed[(size_t) v * b->vcpus + j];

      p->cpu = (v * b->vcpus + j) % b->cpus;
    }
    for (guint k = 0; k < VARIANTS; k++) {
      size_t idx = (size_t) k * b->vms + v;

      memset (&h, 0, sizeof h);
      h.timestamp_ns = 1000000ull * k;
      h.num_records = (uint16_t) b->rpf;
      /* A partial frame covers a rotating subset of the vCPUs. */
      for (guint r = 0; r < b->rpf; r++)
        make_record (&h.records[r], (k * b->rpf + r) % b->vcpus, &rng);
      b->frame_len[idx] = fh_encode_hints (b->frames + idx * b->frame_stride, b->frame_stride, &h);
      if (!b->frame_len[idx]) {
        fprintf (stderr, "fh-bench-merge: cannot encode a frame\n");
        exit (1);
      }
    }
  }
}

/* One round; returns the number of records decoded. */
static guint
bench_round (Bench *b, guint k)
{
  static FhHints h;
  guint records = 0;
  FhChain chain = { b->sys, b->levels, G_N_ELEMENTS (b->levels) };

  /* decode: what fh-device.c and on_hints() do per frame */
  for (guint v = 0; v < b->vms; v++) {
    size_t idx = (size_t) (k % VARIANTS) * b->vms + v;
    const uint8_t *buf = b->frames + idx * b->frame_stride;
    FhFrame f;
    FhError err;
    size_t size;

    if (fh_frame_parse (buf, b->frame_len[idx], &f, &size, &err) != FH_PARSE_FRAME ||
        !fh_decode_hints (&f, (uint16_t) b->vcpus, FH_F_PERF, &h, &err)) {
      fprintf (stderr, "fh-bench-merge: decode failed: %s\n", err.text);
      exit (1);
    }
    for (guint r = 0; r < h.num_records; r++) {
      const FhRecord *rec = &h.records[r];

      b->vm[v].hint[rec->vcpu] =
          (FhGuestHint){ rec->flags, rec->clamp_min, rec->clamp_max, rec->perf };
    }
    records += h.num_records;
  }

  /* merge: every vCPU, as daemon_update() */
  for (guint v = 0; v < b->vms; v++) {
    Vm *vm = &b->vm[v];

    for (guint j = 0; j < b->vcpus; j++) {
      FhPlacedVcpu *p = &b->placed[(size_t) v * b->vcpus + j];

      vm->d[j] = fh_merge_vcpu (&vm->hint[j], &chain, vm->op, &b->params);
      p->active = vm->d[j].active;
      p->eff = vm->d[j].eff;
    }
  }

  /* decide: per CPU, per policy, and the limits in kHz */
  fh_merge_aggregate_cpus (b->placed, (gsize) b->vms * b->vcpus, b->cpu, b->cpus);
  for (guint i = 0; i < b->n_policies; i++) {
    FhCpuDecision pd = fh_merge_aggregate_set (b->cpu, b->cpus, b->policy_cpus + i * POLICY_CPUS,
                                               POLICY_CPUS);

    if (pd.active)
      fh_freq_limits (&b->table, pd.floor, pd.ceiling, &b->policy_khz[2 * i],
                      &b->policy_khz[2 * i + 1]);
    b->checksum += b->policy_khz[2 * i] + b->policy_khz[2 * i + 1];
  }
  return records;
}

static double
now_s (void)
{
  struct timespec t;

  clock_gettime (CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

int
main (int argc, char **argv)
{
  Bench b = { 0 };
  gint vms = 1000, vcpus = 16, cpus = 64, rpf = 0, rounds = 0;
  gdouble seconds = 2.0;
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- decode+merge+decide throughput");
  const GOptionEntry entries[] = {
    { "vms", 0, 0, G_OPTION_ARG_INT, &vms, "VMs (default 1000)", "N" },
    { "vcpus", 0, 0, G_OPTION_ARG_INT, &vcpus, "vCPUs per VM (default 16)", "N" },
    { "cpus", 0, 0, G_OPTION_ARG_INT, &cpus, "host CPUs (default 64)", "N" },
    { "records-per-frame", 0, 0, G_OPTION_ARG_INT, &rpf, "records per HINTS frame (default: vcpus)",
      "N" },
    { "seconds", 0, 0, G_OPTION_ARG_DOUBLE, &seconds, "timed run length (default 2)", "S" },
    { "rounds", 0, 0, G_OPTION_ARG_INT, &rounds, "run exactly N rounds, no timing (callgrind)",
      "N" },
    { NULL },
  };

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    fprintf (stderr, "fh-bench-merge: %s\n", error->message);
    return 2;
  }
  if (rpf == 0)
    rpf = vcpus;
  if (vms < 1 || vcpus < 1 || vcpus > FH_MAX_VCPUS || cpus < 1 || rpf < 1 ||
      rpf > vcpus) {
    fprintf (stderr, "fh-bench-merge: bad sizes\n");
    return 2;
  }
  b.vms = (guint) vms;
  b.vcpus = (guint) vcpus;
  b.cpus = (guint) cpus;
  b.rpf = (guint) rpf;
  bench_init (&b);

  if (rounds > 0) {
    guint64 records = 0;

    for (gint k = 0; k < rounds; k++)
      records += bench_round (&b, (guint) k);
    printf ("rounds=%d records=%" G_GUINT64_FORMAT " checksum=%" G_GUINT64_FORMAT "\n", rounds,
            records, b.checksum);
    return 0;
  }

  {
    cpu_set_t set;
    int cpu = sched_getcpu ();
    double rates[5], per_round = 0;
    guint k = 0;

    CPU_ZERO (&set);
    if (cpu >= 0) {
      CPU_SET (cpu, &set);
      sched_setaffinity (0, sizeof set, &set);
    }
    /* warm-up: caches, page faults */
    for (int i = 0; i < 3; i++)
      bench_round (&b, k++);
    for (int batch = 0; batch < 5; batch++) {
      double t0 = now_s (), t;
      guint64 records = 0;
      guint n = 0;

      do {
        records += bench_round (&b, k++);
        n++;
        t = now_s ();
      } while (t - t0 < seconds / 5);
      rates[batch] = records / (t - t0);
      per_round = (t - t0) / n;
    }
    qsort (rates, 5, sizeof rates[0], cmp_double);
    printf ("vms=%u vcpus=%u cpus=%u records_per_frame=%u updates_per_round=%u "
            "best_updates_per_s=%.0f median_updates_per_s=%.0f last_round_ms=%.3f checksum=%" G_GUINT64_FORMAT "\n",
            b.vms, b.vcpus, b.cpus, b.rpf, b.vms * b.rpf, rates[4], rates[2], per_round * 1e3,
            b.checksum);
  }
  return 0;
}
