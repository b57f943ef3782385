/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uclamp-check: what the kernel holds for a thread, read with
 * sched_getattr(2), for the in-guest freqhintd test.
 *
 *   uclamp-check get TID          "policy=P nice=N reset_on_fork=0|1 min=M max=X"
 *   uclamp-check batch TID NICE   make TID SCHED_BATCH with that nice value
 *                                 (freqhintd must keep both)
 *   uclamp-check fifo TID PRIO    make TID SCHED_FIFO with that priority
 *   uclamp-check fork TID         the clamps a child forked by TID would get:
 *                                 forks itself after copying TID's clamps and
 *                                 reset-on-fork, and prints the child's "get"
 *
 * Exit status 0, or 1 with a message on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/sched.h>
#include <linux/sched/types.h>


static int
get (pid_t tid, struct sched_attr *a)
{
  memset (a, 0, sizeof *a);
  if (syscall (SYS_sched_getattr, tid, a, sizeof *a, 0) < 0) {
    fprintf (stderr, "sched_getattr(%d): %s\n", (int) tid, strerror (errno));
    return -1;
  }
  return 0;
}

static int
set (pid_t tid, struct sched_attr *a)
{
  a->size = sizeof *a;
  if (syscall (SYS_sched_setattr, tid, a, 0) < 0) {
    fprintf (stderr, "sched_setattr(%d): %s\n", (int) tid, strerror (errno));
    return -1;
  }
  return 0;
}

static void
print (const struct sched_attr *a)
{
  printf ("policy=%u nice=%d reset_on_fork=%d min=%u max=%u\n", a->sched_policy, a->sched_nice,
          (a->sched_flags & SCHED_FLAG_RESET_ON_FORK) ? 1 : 0, a->sched_util_min, a->sched_util_max);
}

int
main (int argc, char **argv)
{
  struct sched_attr a;
  pid_t tid;

  if (argc < 3)
    goto usage;
  tid = (pid_t) atoi (argv[2]);
  if (strcmp (argv[1], "get") == 0 && argc == 3) {
    if (get (tid, &a) < 0)
      return 1;
    print (&a);
    return 0;
  }
  if (strcmp (argv[1], "batch") == 0 && argc == 4) {
    memset (&a, 0, sizeof a);
    a.sched_policy = SCHED_BATCH;
    a.sched_nice = atoi (argv[3]);
    return set (tid, &a) < 0;
  }
  if (strcmp (argv[1], "fifo") == 0 && argc == 4) {
    memset (&a, 0, sizeof a);
    a.sched_policy = SCHED_FIFO;
    a.sched_priority = (unsigned) atoi (argv[3]);
    return set (tid, &a) < 0;
  }
  if (strcmp (argv[1], "fork") == 0 && argc == 3) {
    struct sched_attr mine;
    pid_t child;
    int status;

    /* Take TID's policy, clamps and reset-on-fork, then fork like it would. */
    if (get (tid, &a) < 0)
      return 1;
    mine = a;
    mine.sched_flags =
        (a.sched_flags & SCHED_FLAG_RESET_ON_FORK) | SCHED_FLAG_KEEP_PARAMS | SCHED_FLAG_UTIL_CLAMP_MIN | SCHED_FLAG_UTIL_CLAMP_MAX;
    if (set (0, &mine) < 0)
      return 1;
    fflush (stdout);
    child = fork ();
    if (child < 0)
      return 1;
    if (child == 0) {
      if (get (0, &a) < 0)
        _exit (1);
      print (&a);
      fflush (stdout);
      _exit (0);
    }
    return waitpid (child, &status, 0) != child || !WIFEXITED (status) || WEXITSTATUS (status) != 0;
  }
usage:
  fprintf (stderr, "usage: uclamp-check get TID | batch TID NICE | fifo TID PRIO | fork TID\n");
  return 2;
}
