// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fh-pingpong: the context-switch cost a clamp source adds (issue 27, the
 * clamp source): two tasks pinned to one CPU pass a byte back and forth
 * through two pipes, so every round trip is two context switches and no
 * idle in between.  Static binary, carried into the guest by
 * bench/clamp-cost.sh.
 *
 *   fh-pingpong CPU ROUNDS
 *       Prints: rtt_ns=<mean ns per round trip>
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("sched_setaffinity");
		exit(1);
	}
}

static void xfer(int in, int out, long rounds, int first)
{
	char c = 0;

	for (long i = 0; i < rounds; i++) {
		if (first && write(out, &c, 1) != 1)
			exit(1);
		if (read(in, &c, 1) != 1)
			exit(1);
		if (!first && write(out, &c, 1) != 1)
			exit(1);
	}
}

int main(int argc, char **argv)
{
	int ab[2], ba[2], status;
	struct timespec t0, t1;
	long rounds;
	pid_t pid;
	int cpu;

	if (argc != 3) {
		fprintf(stderr, "usage: %s CPU ROUNDS\n", argv[0]);
		return 2;
	}
	cpu = atoi(argv[1]);
	rounds = atol(argv[2]);
	if (pipe(ab) || pipe(ba))
		return 1;
	pin(cpu);
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		xfer(ab[0], ba[1], rounds, 0);
		_exit(0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	xfer(ba[0], ab[1], rounds, 1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return 1;
	printf("rtt_ns=%.0f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 +
				 (t1.tv_nsec - t0.tv_nsec)) / rounds);
	return 0;
}
