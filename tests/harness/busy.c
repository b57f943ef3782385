// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * busy: a guest workload for the end-to-end tests.  Spins on one CPU (or
 * sleeps, with --idle-ms) until killed or for --seconds; run it under
 * uclampset to give it clamps.
 *
 *   busy [--cpu N] [--seconds S] [--duty PCT]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(void)
{
	fprintf(stderr, "usage: busy [--cpu N] [--seconds S] [--duty PCT]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cpu", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 's' },
		{ "duty", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	double seconds = 0, end;
	int cpu = -1, duty = 100, c;

	while ((c = getopt_long(argc, argv, "c:s:d:", opts, NULL)) != -1) {
		switch (c) {
		case 'c': cpu = atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'd': duty = atoi(optarg); break;
		default: usage();
		}
	}
	if (duty < 1 || duty > 100)
		usage();
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			fprintf(stderr, "busy: cpu %d: %s\n", cpu, strerror(errno));
			return 1;
		}
	}
	end = seconds > 0 ? now() + seconds : 0;
	for (;;) {
		/* Run duty% of each 10 ms period, sleep the rest. */
		double start = now();

		while (now() - start < duty / 10000.0)
			;
		if (duty < 100) {
			struct timespec ts = { 0, (long)((100 - duty) * 100000L) };

			nanosleep(&ts, NULL);
		}
		if (end && now() >= end)
			return 0;
	}
}
