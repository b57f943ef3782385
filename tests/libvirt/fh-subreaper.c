/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fh-subreaper CMD [ARG...]
 *
 * Run CMD as a child subreaper would: daemons started below it (virtlogd,
 * libvirtd, the QEMU processes libvirtd double-forks) are re-parented here
 * instead of to PID 1, and reaped the moment they exit -- without systemd,
 * libvirtd otherwise sees its QEMU linger as a zombie.  When CMD exits,
 * whatever is still running below is sent SIGTERM, then SIGKILL after
 * 10 s, and reaped; the exit status is CMD's.  SIGINT/SIGTERM are passed
 * on to CMD.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile pid_t main_child;

static void
forward (int sig)
{
  if (main_child > 0)
    kill (main_child, sig);
}

/* Our direct children, from /proc (re-parented orphans included). */
static int
signal_children (int sig)
{
  DIR *d = opendir ("/proc");
  struct dirent *e;
  pid_t self = getpid ();
  int n = 0;

  if (!d)
    return 0;
  while ((e = readdir (d))) {
    char path[64], buf[512];
    FILE *f;
    char *rp;
    int ppid;
    pid_t pid = (pid_t) atoi (e->d_name);

    if (pid <= 0)
      continue;
    snprintf (path, sizeof path, "/proc/%d/stat", (int) pid);
    f = fopen (path, "r");
    if (!f)
      continue;
    if (!fgets (buf, sizeof buf, f)) {
      fclose (f);
      continue;
    }
    fclose (f);
    /* comm may hold spaces and parentheses: parse after the last ')'. */
    rp = strrchr (buf, ')');
    if (rp && sscanf (rp + 1, " %*c %d", &ppid) == 1 && ppid == self) {
      kill (pid, sig);
      n++;
    }
  }
  closedir (d);
  return n;
}

static void
reap_all (void)
{
  while (waitpid (-1, NULL, WNOHANG) > 0)
    ;
}

int
main (int argc, char **argv)
{
  struct sigaction sa = { .sa_handler = forward };
  int status = 0, code;
  pid_t pid;

  if (argc < 2) {
    fprintf (stderr, "usage: %s CMD [ARG...]\n", argv[0]);
    return 2;
  }
  if (prctl (PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
    perror ("prctl(PR_SET_CHILD_SUBREAPER)");
    return 1;
  }
  pid = fork ();
  if (pid < 0) {
    perror ("fork");
    return 1;
  }
  if (pid == 0) {
    execvp (argv[1], argv + 1);
    perror (argv[1]);
    _exit (127);
  }
  main_child = pid;
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGTERM, &sa, NULL);

  for (;;) {
    int st;
    pid_t p = waitpid (-1, &st, 0);

    if (p < 0) {
      if (errno == EINTR)
        continue;
      break; /* ECHILD: nothing left at all */
    }
    if (p == pid) {
      status = st;
      break;
    }
  }
  main_child = 0;
  code = WIFEXITED (status) ? WEXITSTATUS (status) : 128 + WTERMSIG (status);

  /* Leftovers (daemons the test did not stop): TERM, a grace period, KILL. */
  if (signal_children (SIGTERM) > 0) {
    for (int i = 0; i < 100; i++) {
      struct timespec ts = { 0, 100 * 1000 * 1000 };

      reap_all ();
      if (signal_children (0) == 0)
        break;
      nanosleep (&ts, NULL);
    }
    if (signal_children (SIGKILL) > 0)
      fprintf (stderr, "fh-subreaper: killed leftover processes\n");
    while (waitpid (-1, NULL, 0) > 0)
      ;
  }
  return code;
}
