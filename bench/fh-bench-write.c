/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fh-bench-write: the cost of one cpufreq actuation as freqhintd's cpufreq
 * backend makes it — fh_write_small_file() (open O_TRUNC, write, close) of
 * a kHz value — timed over N writes alternating two values.
 *
 *   fh-bench-write FILE [N]
 *
 * On fixture trees FILE is a regular file; on a real host it would be
 * sysfs, where the write also runs the cpufreq core's policy update
 * (freq_qos, governor limits) — not measurable on this machine (no
 * cpufreq).  Prints: writes=N ns_per_write_median=... ns_per_write_best=...
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <glib.h>

#include "fh-paths.h"

static double
now_ns (void)
{
  struct timespec t;

  clock_gettime (CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
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
  long n = argc > 2 ? atol (argv[2]) : 20000;
  double batch[10];

  if (argc < 2 || n < 10) {
    fprintf (stderr, "usage: fh-bench-write FILE [N >= 10]\n");
    return 2;
  }
  for (int b = 0; b < 10; b++) {
    double t0 = now_ns ();

    for (long i = 0; i < n / 10; i++) {
      g_autoptr (GError) error = NULL;

      if (!fh_write_small_file (argv[1], (i & 1) ? "800000" : "2800000", &error)) {
        fprintf (stderr, "fh-bench-write: %s\n", error->message);
        return 1;
      }
    }
    batch[b] = (now_ns () - t0) / (n / 10);
  }
  qsort (batch, 10, sizeof batch[0], cmp_double);
  printf ("writes=%ld ns_per_write_median=%.0f ns_per_write_best=%.0f\n", n, batch[5], batch[0]);
  return 0;
}
