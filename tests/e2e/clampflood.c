// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * clampflood: flip this task's utilization clamps as fast as it can, to show
 * that the guest driver's and the device's rate bounds hold.  Ends on
 * the clamps given last, so the final state is known.
 *
 *   clampflood SECONDS FINAL_MIN FINAL_MAX
 *
 * Prints the number of sched_setattr calls made.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/sched.h>
#include <linux/sched/types.h>

static int set_clamps(unsigned int min, unsigned int max)
{
	struct sched_attr attr = {
		.size = sizeof(attr),
		.sched_flags = SCHED_FLAG_KEEP_POLICY | SCHED_FLAG_KEEP_PARAMS |
			       SCHED_FLAG_UTIL_CLAMP_MIN | SCHED_FLAG_UTIL_CLAMP_MAX,
		.sched_util_min = min,
		.sched_util_max = max,
	};

	return syscall(SYS_sched_setattr, 0, &attr, 0);
}

int main(int argc, char **argv)
{
	struct timespec start, t;
	unsigned long calls = 0;
	double seconds;

	if (argc != 4) {
		fprintf(stderr, "usage: clampflood SECONDS FINAL_MIN FINAL_MAX\n");
		return 2;
	}
	seconds = atof(argv[1]);
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		unsigned int v = (calls * 97) % 1025;

		if (set_clamps(v, 1024)) {
			fprintf(stderr, "clampflood: sched_setattr: %s\n", strerror(errno));
			return 1;
		}
		calls++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - start.tv_sec + (t.tv_nsec - start.tv_nsec) / 1e9 < seconds);
	if (set_clamps(atoi(argv[2]), atoi(argv[3]))) {
		fprintf(stderr, "clampflood: final sched_setattr: %s\n", strerror(errno));
		return 1;
	}
	printf("clampflood: %lu calls in %.1f s\n", calls, seconds);
	fflush(stdout);
	/* Stay runnable so the final clamps remain the vCPU's aggregate. */
	for (;;)
		;
}
