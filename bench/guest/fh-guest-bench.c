// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fh-guest-bench: the guest's half of freqhint's benchmarks (static binary,
 * carried into the test initramfs by bench/run.sh).
 *
 *   fh-guest-bench cost N
 *       Time N sched_setattr() calls that change this task's utilization
 *       clamps (alternating floor 0 / 512): the guest-side cost of one
 *       actuation in a trap-per-change design (crosvm's virtcpufreq does
 *       one sched_setattr per change, on the host) and of a guest clamp
 *       change.  Also N getppid() calls: the bare syscall floor here.
 *       Prints: setattr_ns=... getppid_ns=...
 *   fh-guest-bench sysfs FILE N VALUE_A VALUE_B
 *       Time N writes (open, write, close, like freqhintd's cpufreq backend)
 *       alternating VALUE_A and VALUE_B into FILE, e.g. a cpufreq policy's
 *       scaling_max_freq: the cpufreq core's cost of one limit change.
 *       Leaves VALUE_A in FILE.  Prints: sysfs_write_ns=...
 *   fh-guest-bench wake PERIOD_US BUSY_US SECONDS
 *       Wake every PERIOD_US, spin BUSY_US, sleep: one task of a bursty
 *       load (clamps come from the caller, e.g. uclampset).
 *   fh-guest-bench pingpong CPU N
 *       Two processes pinned to CPU pass one byte back and forth through
 *       a pair of pipes N times: every round trip is two wake-ups and two
 *       context switches on that vCPU, the path a clamp source hooked into
 *       the scheduler adds to.  Prints: pingpong_ns=... (per round trip)
 *   fh-guest-bench hackbench GROUPS LOOPS
 *       A hackbench-like load on every vCPU: GROUPS groups of 10 sender
 *       and 10 receiver processes; each sender writes LOOPS 100-byte
 *       messages to each receiver of its group over its own pipe.
 *       Prints: hackbench_ms=... (wall time of the whole load)
 *   fh-guest-bench step TTY CPU
 *       Latency responder for bench/fh-bench-latency.c: pinned to CPU,
 *       never sleeping (an idle run queue drops its clamp floor:
 *       uclamp_idle_value() keeps only the max; with the driver's windows
 *       off the host would see the floor come and go), reads lines
 *       from TTY: "S <min>" sets this task's clamp floor to <min> (max
 *       1024) and answers "A <min> <ns>", <ns> the guest's
 *       CLOCK_MONOTONIC_RAW just before the change; "T <k>" answers
 *       "T <k> <ns>", the clock when the line was read (the host's
 *       round-trip offset estimate); "P" answers "A P"; "Q" exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The uapi struct sched_attr of linux/sched/types.h, not in glibc 2.36. */
struct sched_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
	uint32_t sched_util_min;
	uint32_t sched_util_max;
};

#define SCHED_FLAG_KEEP_POLICY		0x08
#define SCHED_FLAG_KEEP_PARAMS		0x10
#define SCHED_FLAG_UTIL_CLAMP_MIN	0x20
#define SCHED_FLAG_UTIL_CLAMP_MAX	0x40

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

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

/* Not slewed by NTP: the clock the host relates to its own. */
static long long raw_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void spin_until(double t_ns)
{
	while (now_ns() < t_ns)
		;
}

static int cost(long n)
{
	double t0, t1, t2;

	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		if (set_clamps((i & 1) ? 512 : 0, 1024)) {
			fprintf(stderr, "sched_setattr: %s\n", strerror(errno));
			return 1;
		}
	}
	t1 = now_ns();
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	t2 = now_ns();
	set_clamps(0, 1024);
	printf("setattr_ns=%.0f getppid_ns=%.0f calls=%ld\n",
	       (t1 - t0) / n, (t2 - t1) / n, n);
	return 0;
}

static int write_value(const char *file, const char *value)
{
	int fd = open(file, O_WRONLY | O_TRUNC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, value, strlen(value));
	if (close(fd) || n != (ssize_t)strlen(value))
		return -1;
	return 0;
}

static int sysfs(const char *file, long n, const char *a, const char *b)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		if (write_value(file, (i & 1) ? a : b)) {
			fprintf(stderr, "%s: %s\n", file, strerror(errno));
			return 1;
		}
	}
	printf("sysfs_write_ns=%.0f sysfs_writes=%ld\n", (now_ns() - t0) / n, n);
	return write_value(file, a) ? 1 : 0;
}

static int wake(long period_us, long busy_us, double seconds)
{
	double start = now_ns(), next = start;
	struct timespec ts;

	while (now_ns() - start < seconds * 1e9) {
		spin_until(now_ns() + busy_us * 1e3);
		next += period_us * 1e3;
		if (next > now_ns()) {
			ts.tv_sec = (time_t)(next / 1e9);
			ts.tv_nsec = (long)(next - ts.tv_sec * 1e9);
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		} else {
			next = now_ns();
		}
	}
	return 0;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "sched_setaffinity %d: %s\n", cpu, strerror(errno));
		return -1;
	}
	return 0;
}

/* Wait for every child; non-zero if one of them failed. */
static int reap(void)
{
	int status, bad = 0;

	while (wait(&status) > 0)
		bad |= !WIFEXITED(status) || WEXITSTATUS(status);
	return bad;
}

/* One byte from @rfd to @wfd, @n times (the child's half of a ping-pong). */
static int bounce(int rfd, int wfd, long n)
{
	char c;

	for (long i = 0; i < n; i++)
		if (read(rfd, &c, 1) != 1 || write(wfd, &c, 1) != 1)
			return 1;
	return 0;
}

static int pingpong(int cpu, long n)
{
	int ab[2], ba[2];
	double t0, t1;
	char c = 'x';
	pid_t pid;

	if (pin(cpu) || pipe(ab) || pipe(ba))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		_exit(bounce(ab[0], ba[1], n));
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			return 1;
	t1 = now_ns();
	if (reap())
		return 1;
	printf("pingpong_ns=%.0f round_trips=%ld\n", (t1 - t0) / n, n);
	return 0;
}

#define HB_PAIRS	10
#define HB_MSG		100

static int hb_sender(int fds[HB_PAIRS], long loops)
{
	char msg[HB_MSG] = { 0 };

	for (long i = 0; i < loops; i++)
		for (int r = 0; r < HB_PAIRS; r++)
			if (write(fds[r], msg, sizeof(msg)) != sizeof(msg))
				return 1;
	return 0;
}

static int hb_receiver(int fd, long msgs)
{
	char msg[HB_MSG];
	long got = 0;

	while (got < msgs * HB_MSG) {
		ssize_t n = read(fd, msg, sizeof(msg));

		if (n <= 0)
			return 1;
		got += n;
	}
	return 0;
}

/*
 * Receiver r of a group reads one pipe that all HB_PAIRS senders of the
 * group write to: HB_PAIRS * loops messages.
 */
static int hackbench(int groups, long loops)
{
	double t0 = now_ns();

	for (int g = 0; g < groups; g++) {
		int fds[HB_PAIRS], p[2];

		for (int r = 0; r < HB_PAIRS; r++) {
			if (pipe(p))
				return 1;
			switch (fork()) {
			case -1:
				return 1;
			case 0:
				close(p[1]);
				_exit(hb_receiver(p[0], HB_PAIRS * loops));
			}
			close(p[0]);
			fds[r] = p[1];
		}
		for (int s = 0; s < HB_PAIRS; s++) {
			switch (fork()) {
			case -1:
				return 1;
			case 0:
				_exit(hb_sender(fds, loops));
			}
		}
		for (int r = 0; r < HB_PAIRS; r++)
			close(fds[r]);
	}
	if (reap())
		return 1;
	printf("hackbench_ms=%.1f groups=%d loops=%ld\n", (now_ns() - t0) / 1e6,
	       groups, loops);
	return 0;
}

static int step(const char *tty, int cpu)
{
	char buf[256];
	size_t len = 0;
	cpu_set_t set;
	int fd = open(tty, O_RDWR | O_NOCTTY);

	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", tty, strerror(errno));
		return 1;
	}
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fprintf(stderr, "sched_setaffinity: %s\n", strerror(errno));
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		long long t_read;
		char *nl;
		ssize_t n;

		spin_until(now_ns() + 2e6);
		if (poll(&p, 1, 0) <= 0)
			continue;
		n = read(fd, buf + len, sizeof(buf) - len - 1);
		if (n <= 0)
			return 1;
		t_read = raw_ns();
		len += n;
		while ((nl = memchr(buf, '\n', len))) {
			char out[64];
			long long t;
			int v, o = 0;

			*nl = '\0';
			if (buf[0] == 'Q')
				return 0;
			if (buf[0] == 'P') {
				o = snprintf(out, sizeof(out), "A P\n");
			} else if (sscanf(buf, "T %d", &v) == 1) {
				o = snprintf(out, sizeof(out), "T %d %lld\n", v, t_read);
			} else if (sscanf(buf, "S %d", &v) == 1) {
				t = raw_ns();
				if (set_clamps(v, 1024))
					o = snprintf(out, sizeof(out), "E %d\n", errno);
				else
					o = snprintf(out, sizeof(out), "A %d %lld\n", v, t);
			}
			if (o > 0 && write(fd, out, o) != o)
				return 1;
			len -= nl + 1 - buf;
			memmove(buf, nl + 1, len);
		}
		if (len == sizeof(buf) - 1)
			len = 0;
	}
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "cost"))
		return cost(atol(argv[2]));
	if (argc == 6 && !strcmp(argv[1], "sysfs"))
		return sysfs(argv[2], atol(argv[3]), argv[4], argv[5]);
	if (argc == 5 && !strcmp(argv[1], "wake"))
		return wake(atol(argv[2]), atol(argv[3]), atof(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "pingpong"))
		return pingpong(atoi(argv[2]), atol(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "hackbench"))
		return hackbench(atoi(argv[2]), atol(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "step"))
		return step(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: fh-guest-bench cost N | sysfs FILE N A B | wake PERIOD_US BUSY_US SECONDS |\n\t\tpingpong CPU N | hackbench GROUPS LOOPS | step TTY CPU\n");
	return 2;
}
