// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fh-guest-outcome: the guest's workloads of issue 40's outcome benchmark
 * (bench/guest/outcome.sh on the host, outcome-guest.sh in the guest).
 * Static; clamps come from the caller (uclampset), as a guest owner sets them.
 *
 *   fh-guest-outcome now
 *       CLOCK_MONOTONIC in ns (the common epoch of fg and bg).
 *   fh-guest-outcome calibrate MS
 *       Spin work() for MS ms; prints loops_per_ms=N, the best 20 000-loop
 *       chunk's rate (the vCPU thread undisturbed on a host CPU: "f_max"),
 *       and loops_per_ms_loaded=N, the rate over the whole time (what it
 *       achieved on the host as loaded, waits for a host CPU included).
 *   fh-guest-outcome fg CPU EPOCH_NS SECONDS CYCLE_MS ON_FROM_MS ON_TO_MS
 *                       PERIOD_US LOOPS SHARED_FROM_MS SHARED_TO_MS
 *       Foreground: pinned to CPU, from EPOCH_NS for SECONDS, a request
 *       every PERIOD_US while the phase within each CYCLE_MS cycle is in
 *       [ON_FROM_MS, ON_TO_MS) (idle gaps the rest); a request is LOOPS of
 *       work(); its response time is from its release (the period's start:
 *       a late request starts late and counts its wait) to its end.
 *       Prints per request "R T_MS RESP_US SHARED" (release since EPOCH,
 *       SHARED 1 when its release falls in [SHARED_FROM_MS, SHARED_TO_MS) of
 *       the cycle, where the background runs too), then
 *       "fg requests=N late=N skipped=N fg_loops=N p50_us=N p99_us=N"
 *       (skipped: the slots already past when the process got going, left
 *       out; percentiles nearest-rank, for the demo).
 *   fh-guest-outcome bg CPU EPOCH_NS SECONDS CYCLE_MS ON_FROM_MS ON_TO_MS
 *       Background batch: pinned to CPU, spins work() while the phase is
 *       in [ON_FROM_MS, ON_TO_MS), sleeps the rest; prints "bg_loops=N".
 *   fh-guest-outcome sync N
 *       N round trips on fd 3 (the control port): writes
 *       "STEP sync g=GUEST_NS", reads "GO HOST_REALTIME_US"; prints
 *       offset_us=... rtt_us=..., the host's realtime minus the guest's
 *       CLOCK_MONOTONIC at the round trip with the least time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { .tv_sec = t / 1000000000u, .tv_nsec = t % 1000000000u };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* A fixed amount of CPU work, the unit of "work" in the figures. */
static uint64_t sink;
static void work(uint64_t loops)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < loops; i++) {
		x = x * 6364136223846793005u + 1442695040888963407u;
		__asm__ volatile("" : "+r"(x));
	}
	sink = x;
}

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s)) {
		perror("sched_setaffinity");
		exit(1);
	}
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end) {
		fprintf(stderr, "fh-guest-outcome: not a number: %s\n", s);
		exit(2);
	}
	return v;
}

/* Phase of t within the cycle starting at epoch, in ns. */
static uint64_t phase(uint64_t t, uint64_t epoch, uint64_t cycle)
{
	return (t - epoch) % cycle;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of n sorted values (0 if none). */
static uint64_t rank(const uint64_t *v, uint64_t n, unsigned int pct)
{
	uint64_t i = (n * pct + 99) / 100;

	return n ? v[(i ? i : 1) - 1] : 0;
}

static int fg(char **a)
{
	int cpu = (int)num(a[0]);
	uint64_t epoch = num(a[1]), end = epoch + num(a[2]) * 1000000000u;
	uint64_t cycle = num(a[3]) * 1000000u, on0 = num(a[4]) * 1000000u, on1 = num(a[5]) * 1000000u;
	uint64_t period = num(a[6]) * 1000u, loops = num(a[7]);
	uint64_t sh0 = num(a[8]) * 1000000u, sh1 = num(a[9]) * 1000000u;
	uint64_t n = 0, late = 0, skipped = 0, rel = epoch, t;
	uint64_t cap = (end - epoch) / period + 1, *resp = calloc(cap, sizeof(*resp));

	if (!cycle || !period || on1 > cycle || !resp)
		return 2;
	pin(cpu);
	/*
	 * Started after the epoch (exec and translation on a loaded host):
	 * begin with the first slot still ahead rather than a backlog that
	 * says nothing of the mode; the slots left out are counted.
	 */
	t = now_ns();
	if (t > epoch) {
		skipped = (t - epoch) / period + 1;
		rel = epoch + skipped * period;
	}
	while (rel < end) {
		uint64_t p = phase(rel, epoch, cycle), t0, t1;

		if (p < on0 || p >= on1) {
			/* idle gap: to the next cycle's ON_FROM, on the period grid */
			uint64_t next = rel - p + (p < on0 ? on0 : cycle + on0);

			rel = next;
			continue;
		}
		t0 = now_ns();
		if (t0 < rel)
			sleep_until(rel);
		else if (t0 - rel >= period)
			late++;
		work(loops);
		t1 = now_ns();
		printf("R %.3f %.1f %d\n", (rel - epoch) / 1e6, (t1 - rel) / 1e3, p >= sh0 && p < sh1);
		if (n < cap)
			resp[n] = t1 - rel;
		n++;
		rel += period;
	}
	n = n < cap ? n : cap;
	qsort(resp, n, sizeof(*resp), cmp_u64);
	printf("fg requests=%llu late=%llu skipped=%llu fg_loops=%llu p50_us=%llu p99_us=%llu\n",
	       (unsigned long long)n, (unsigned long long)late, (unsigned long long)skipped,
	       (unsigned long long)(n * loops), (unsigned long long)rank(resp, n, 50) / 1000,
	       (unsigned long long)rank(resp, n, 99) / 1000);
	free(resp);
	return 0;
}

static int bg(char **a)
{
	int cpu = (int)num(a[0]);
	uint64_t epoch = num(a[1]), end = epoch + num(a[2]) * 1000000000u;
	uint64_t cycle = num(a[3]) * 1000000u, on0 = num(a[4]) * 1000000u, on1 = num(a[5]) * 1000000u;
	uint64_t total = 0, t;
	const uint64_t chunk = 2000;

	if (!cycle || on1 > cycle)
		return 2;
	pin(cpu);
	sleep_until(epoch);
	while ((t = now_ns()) < end) {
		uint64_t p = phase(t, epoch, cycle);

		if (p < on0 || p >= on1) {
			sleep_until(t - p + (p < on0 ? on0 : cycle + on0));
			continue;
		}
		work(chunk);
		total += chunk;
	}
	printf("bg_loops=%llu\n", (unsigned long long)total);
	return 0;
}

static int calibrate(uint64_t ms)
{
	uint64_t start = now_ns(), end = start + ms * 1000000u, chunk = 20000, total = 0, t1 = start;
	double best = 0;

	while (t1 < end) {
		uint64_t t0 = now_ns();

		work(chunk);
		total += chunk;
		t1 = now_ns();
		if (t1 > t0 && chunk * 1e6 / (t1 - t0) > best)
			best = chunk * 1e6 / (t1 - t0);
	}
	printf("loops_per_ms=%.0f loops_per_ms_loaded=%.0f\n", best, total * 1e6 / (t1 - start));
	return 0;
}

static int sync_clock(uint64_t n)
{
	FILE *in = fdopen(dup(3), "r");
	long long best_off = 0;
	uint64_t best_rtt = UINT64_MAX;
	char line[128];

	if (!in)
		return 1;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0 = now_ns(), t1;
		unsigned long long h;

		dprintf(3, "STEP sync g=%llu\n", (unsigned long long)t0);
		if (!fgets(line, sizeof(line), in))
			return 1;
		t1 = now_ns();
		if (sscanf(line, "GO %llu", &h) != 1)
			return 1;
		if (t1 - t0 < best_rtt) {
			best_rtt = t1 - t0;
			best_off = (long long)h - (long long)((t0 + t1) / 2 / 1000);
		}
	}
	printf("offset_us=%lld rtt_us=%llu\n", best_off, (unsigned long long)(best_rtt / 1000));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	if (argc == 2 && !strcmp(argv[1], "now")) {
		printf("%llu\n", (unsigned long long)now_ns());
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "calibrate"))
		return calibrate(num(argv[2]));
	if (argc == 12 && !strcmp(argv[1], "fg"))
		return fg(argv + 2);
	if (argc == 8 && !strcmp(argv[1], "bg"))
		return bg(argv + 2);
	if (argc == 3 && !strcmp(argv[1], "sync"))
		return sync_clock(num(argv[2]));
	fprintf(stderr, "usage: fh-guest-outcome now | calibrate MS | fg CPU EPOCH_NS SECONDS CYCLE_MS "
			"ON_FROM_MS ON_TO_MS PERIOD_US LOOPS SHARED_FROM_MS SHARED_TO_MS | bg CPU EPOCH_NS "
			"SECONDS CYCLE_MS ON_FROM_MS ON_TO_MS | sync N\n");
	return 2;
}
