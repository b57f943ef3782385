// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests of virtio_freqhint's window, bucket, hysteresis and
 * publish/consume logic (window.c, freqhint.h).  Built as
 * virtio_freqhint_test.ko when the kernel has CONFIG_KUNIT; the tests run
 * when it is loaded and report in KTAP on the console.
 */
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/sched.h>

#include "window.c"

#define US	1000ULL
#define MS	1000000ULL

static const struct fh_tuning fh_test_tune = {
	.window_ms = 10,
	.idle_share = 20,
	.min_share = 51,
	.perf_step = 16,
};

/* Run a task with clamps @min/@max for @ns on @w, starting at *@now. */
static void run(struct fh_win *w, u64 *now, u64 ns, int min, int max)
{
	fh_win_track(w, false, min >= 0, min < 0 ? 0 : min, max >= 0,
		     max < 0 ? 0 : max);
	*now += ns;
	fh_win_charge(w, *now);
}

static void idle_for(struct fh_win *w, u64 *now, u64 ns)
{
	fh_win_track(w, true, false, 0, false, 0);
	*now += ns;
	fh_win_charge(w, *now);
}

static void fh_test_bucket(struct kunit *test)
{
	unsigned int v, prev = 0;

	KUNIT_EXPECT_EQ(test, fh_win_bucket(0), 0U);
	KUNIT_EXPECT_EQ(test, fh_win_bucket(64), 0U);
	KUNIT_EXPECT_EQ(test, fh_win_bucket(65), 1U);
	KUNIT_EXPECT_EQ(test, fh_win_bucket(512), 7U);
	KUNIT_EXPECT_EQ(test, fh_win_bucket(1024), FH_BUCKETS - 1);
	/* Out-of-range values land in the last bucket, not past it. */
	KUNIT_EXPECT_EQ(test, fh_win_bucket(4000), FH_BUCKETS - 1);
	for (v = 0; v <= VIRTIO_FREQHINT_SCALE; v++) {
		KUNIT_ASSERT_GE(test, fh_win_bucket(v), prev);
		prev = fh_win_bucket(v);
	}
}

/* A lone task's clamps are reported exactly. */
static void fh_test_window_exact(struct kunit *test)
{
	struct fh_win w = {};
	struct fh_win_result r;
	u64 now = 5 * MS;

	fh_win_reset(&w, now);
	run(&w, &now, 10 * MS, 800, 900);
	fh_win_close(&w, now, &fh_test_tune, &r);
	KUNIT_EXPECT_EQ(test, r.min, 800);
	KUNIT_EXPECT_EQ(test, r.max, 900);
	KUNIT_EXPECT_FALSE(test, r.idle);
	KUNIT_EXPECT_EQ(test, r.busy, 1024U);
}

/* Max of mins, max of maxes, over tasks that each ran long enough. */
static void fh_test_window_max_rule(struct kunit *test)
{
	struct fh_win w = {};
	struct fh_win_result r;
	u64 now = 0;

	fh_win_reset(&w, now);
	run(&w, &now, 5 * MS, 600, 600);
	run(&w, &now, 5 * MS, 100, 900);
	fh_win_close(&w, now, &fh_test_tune, &r);
	KUNIT_EXPECT_EQ(test, r.min, 600);
	KUNIT_EXPECT_EQ(test, r.max, 900);
}

/* A kworker's 30 us at max 1024 does not lift a capped task's ceiling. */
static void fh_test_window_share(struct kunit *test)
{
	struct fh_win w = {};
	struct fh_win_result r;
	u64 now = 0;

	fh_win_reset(&w, now);
	run(&w, &now, 5 * MS, 0, 300);
	run(&w, &now, 30 * US, 0, 1024);
	run(&w, &now, 5 * MS, 0, 300);
	fh_win_close(&w, now, &fh_test_tune, &r);
	KUNIT_EXPECT_EQ(test, r.max, 300);

	/* Held for 10 % of the clamped time it counts. */
	fh_win_reset(&w, now);
	run(&w, &now, 9 * MS, 0, 300);
	run(&w, &now, 1 * MS, 0, 1024);
	fh_win_close(&w, now, &fh_test_tune, &r);
	KUNIT_EXPECT_EQ(test, r.max, 1024);
}

/* Inactive entries count for neither clamp; none at all: no clamping. */
static void fh_test_window_no_clamp(struct kunit *test)
{
	struct fh_win w = {};
	struct fh_win_result r;
	u64 now = 0;

	fh_win_reset(&w, now);
	run(&w, &now, 10 * MS, -1, -1);
	fh_win_close(&w, now, &fh_test_tune, &r);
	KUNIT_EXPECT_EQ(test, r.min, 0);
	KUNIT_EXPECT_EQ(test, r.max, 1024);
	KUNIT_EXPECT_FALSE(test, r.idle);
}

/* The run queue's rule: a min above the max wins. */
static void fh_test_window_inversion(struct kunit *test)
{
	struct fh_win w = {};
	struct fh_win_result r;
	u64 now = 0;

	fh_win_reset(&w, now);
	run(&w, &now, 10 * MS, 800, 300);
	fh_win_close(&w, now, &fh_test_tune, &r);
	KUNIT_EXPECT_EQ(test, r.min, 800);
	KUNIT_EXPECT_EQ(test, r.max, 800);
}

/* Idle: housekeeping under idle_share, unless a boost counted. */
static void fh_test_window_idle(struct kunit *test)
{
	struct fh_win w = {};
	struct fh_win_result r;
	u64 now = 0;

	fh_win_reset(&w, now);
	idle_for(&w, &now, 5 * MS);
	run(&w, &now, 100 * US, 0, 1024);
	idle_for(&w, &now, 5 * MS);
	fh_win_close(&w, now, &fh_test_tune, &r);
	KUNIT_EXPECT_TRUE(test, r.idle);
	KUNIT_EXPECT_LE(test, r.busy, 20U);

	fh_win_reset(&w, now);
	idle_for(&w, &now, 5 * MS);
	run(&w, &now, 100 * US, 700, 1024);
	idle_for(&w, &now, 5 * MS);
	fh_win_close(&w, now, &fh_test_tune, &r);
	KUNIT_EXPECT_FALSE(test, r.idle);
	KUNIT_EXPECT_EQ(test, r.min, 700);

	fh_win_reset(&w, now);
	idle_for(&w, &now, 8 * MS);
	run(&w, &now, 2 * MS, 0, 1024);
	fh_win_close(&w, now, &fh_test_tune, &r);
	KUNIT_EXPECT_FALSE(test, r.idle);

	/* idle_share 0: the strict rule, any busy time is busy. */
	{
		struct fh_tuning strict = fh_test_tune;

		strict.idle_share = 0;
		fh_win_reset(&w, now);
		idle_for(&w, &now, 5 * MS);
		run(&w, &now, 100 * US, 0, 1024);
		idle_for(&w, &now, 5 * MS);
		fh_win_close(&w, now, &strict, &r);
		KUNIT_EXPECT_FALSE(test, r.idle);
	}
}

/* Time before the window (a stale segment start) is not charged to it. */
static void fh_test_window_reset(struct kunit *test)
{
	struct fh_win w = {};
	struct fh_win_result r;
	u64 now = 0;

	run(&w, &now, 50 * MS, 900, 900);
	fh_win_reset(&w, now);
	idle_for(&w, &now, 10 * MS);
	fh_win_close(&w, now, &fh_test_tune, &r);
	KUNIT_EXPECT_TRUE(test, r.idle);
	KUNIT_EXPECT_EQ(test, r.busy, 0U);
}

/* DRV-27 without a table: a move under one step is not published. */
static void fh_test_perf_step(struct kunit *test)
{
	struct fh_levels l = { .step = 16 };

	KUNIT_EXPECT_FALSE(test, fh_perf_changes_level(&l, 500, 500));
	KUNIT_EXPECT_FALSE(test, fh_perf_changes_level(&l, 500, 515));
	KUNIT_EXPECT_FALSE(test, fh_perf_changes_level(&l, 500, 485));
	KUNIT_EXPECT_TRUE(test, fh_perf_changes_level(&l, 500, 516));
	KUNIT_EXPECT_TRUE(test, fh_perf_changes_level(&l, 500, 484));
	/* The top of the scale is always reached exactly. */
	KUNIT_EXPECT_TRUE(test, fh_perf_changes_level(&l, 1020, 1024));
	KUNIT_EXPECT_TRUE(test, fh_perf_changes_level(&l, 1024, 1020));
	l.step = 0;	/* treated as 1 */
	KUNIT_EXPECT_TRUE(test, fh_perf_changes_level(&l, 500, 501));
}

/* DRV-27 with a table: only a change of the serving table entry counts. */
static void fh_test_perf_table(struct kunit *test)
{
	/* 800, 1600, 2400, 3200 MHz of 3200: thresholds 256, 512, 768, 1024. */
	struct fh_levels l = { .step = 256, .n = 4,
			       .thr = { 256, 512, 768, 1024 } };

	KUNIT_EXPECT_FALSE(test, fh_perf_changes_level(&l, 300, 500));
	KUNIT_EXPECT_FALSE(test, fh_perf_changes_level(&l, 257, 512));
	KUNIT_EXPECT_TRUE(test, fh_perf_changes_level(&l, 512, 513));
	KUNIT_EXPECT_TRUE(test, fh_perf_changes_level(&l, 256, 257));
	KUNIT_EXPECT_FALSE(test, fh_perf_changes_level(&l, 1, 256));
	KUNIT_EXPECT_TRUE(test, fh_perf_changes_level(&l, 900, 1024));
}

static void fh_test_publish_rule(struct kunit *test)
{
	struct fh_levels l = { .step = 16 };
	u16 v = VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID |
		VIRTIO_FREQHINT_R_PERF_VALID;
	u64 a = fh_rep_pack(v, 300, 600, 500);

	KUNIT_EXPECT_FALSE(test, fh_rep_needs_publish(a, a, &l));
	/* Clamps are exact: any change goes out (DRV-26). */
	KUNIT_EXPECT_TRUE(test, fh_rep_needs_publish(a, fh_rep_pack(v, 301, 600, 500), &l));
	KUNIT_EXPECT_TRUE(test, fh_rep_needs_publish(a, fh_rep_pack(v, 300, 599, 500), &l));
	KUNIT_EXPECT_TRUE(test, fh_rep_needs_publish(a, fh_rep_pack(VIRTIO_FREQHINT_R_IDLE, 0, 0, 0), &l));
	/* perf jitter within a step does not. */
	KUNIT_EXPECT_FALSE(test, fh_rep_needs_publish(a, fh_rep_pack(v, 300, 600, 510), &l));
	KUNIT_EXPECT_TRUE(test, fh_rep_needs_publish(a, fh_rep_pack(v, 300, 600, 520), &l));
}

static void fh_test_rep_pack(struct kunit *test)
{
	u64 r = fh_rep_pack(0xf, 1024, 1023, 1);

	KUNIT_EXPECT_EQ(test, FIELD_GET(FH_REP_FLAGS, r), 0xfULL);
	KUNIT_EXPECT_EQ(test, FIELD_GET(FH_REP_MIN, r), 1024ULL);
	KUNIT_EXPECT_EQ(test, FIELD_GET(FH_REP_MAX, r), 1023ULL);
	KUNIT_EXPECT_EQ(test, FIELD_GET(FH_REP_PERF, r), 1ULL);
}

/* The protocol's sequential contract: latest value, taken once. */
static void fh_test_slot_sequential(struct kunit *test)
{
	atomic64_t rep = ATOMIC64_INIT(0);
	unsigned long dirty = 0;
	u64 v = 0;

	KUNIT_EXPECT_FALSE(test, fh_slot_take(&rep, &dirty, 3, &v));
	fh_slot_publish(&rep, &dirty, 3, 11);
	KUNIT_EXPECT_TRUE(test, fh_slot_take(&rep, &dirty, 3, &v));
	KUNIT_EXPECT_EQ(test, v, 11ULL);
	KUNIT_EXPECT_FALSE(test, fh_slot_take(&rep, &dirty, 3, &v));
	fh_slot_publish(&rep, &dirty, 3, 12);
	fh_slot_publish(&rep, &dirty, 3, 13);
	KUNIT_EXPECT_TRUE(test, fh_slot_take(&rep, &dirty, 3, &v));
	KUNIT_EXPECT_EQ(test, v, 13ULL);
	KUNIT_EXPECT_EQ(test, dirty, 0UL);
}

/*
 * The protocol under concurrency: a producer on one CPU publishes round
 * r's value while a consumer on another CPU keeps taking.  When the round
 * is over (handshake below), the consumer's latest value must be r: a
 * consumer that cleared the dirty bit but read the previous report would
 * hold r - 1 with no bit left to fix it (the bug of issue 13, item 1).
 */
struct fh_mp {
	atomic64_t rep;
	unsigned long dirty;
	atomic_t published;	/* producer: round done */
	atomic_t consumed;	/* consumer: round checked */
	unsigned int rounds;
	unsigned int done;
	unsigned int stale;
	unsigned long deadline;
	struct completion prod_done;
	struct completion cons_done;
};

static bool fh_mp_wait(atomic_t *a, int val, unsigned long deadline)
{
	while (atomic_read_acquire(a) < val) {
		if (time_after(jiffies, deadline))
			return false;
		cpu_relax();
	}
	return true;
}

static int fh_mp_producer(void *data)
{
	struct fh_mp *mp = data;
	unsigned int r;

	for (r = 1; r <= mp->rounds; r++) {
		if (!fh_mp_wait(&mp->consumed, r - 1, mp->deadline))
			break;
		fh_slot_publish(&mp->rep, &mp->dirty, 5, r);
		atomic_set_release(&mp->published, r);
	}
	complete(&mp->prod_done);
	return 0;
}

static int fh_mp_consumer(void *data)
{
	struct fh_mp *mp = data;
	unsigned int r;
	u64 last = 0, v;

	for (r = 1; r <= mp->rounds; r++) {
		while (atomic_read_acquire(&mp->published) < r) {
			if (fh_slot_take(&mp->rep, &mp->dirty, 5, &v))
				last = v;
			if (time_after(jiffies, mp->deadline))
				goto out;
		}
		if (fh_slot_take(&mp->rep, &mp->dirty, 5, &v))
			last = v;
		if (last != r)
			mp->stale++;
		mp->done = r;
		atomic_set_release(&mp->consumed, r);
	}
out:
	complete(&mp->cons_done);
	return 0;
}

static void fh_test_slot_concurrent(struct kunit *test)
{
	struct task_struct *prod, *cons;
	unsigned int a, b;
	struct fh_mp *mp;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two online CPUs");
	a = cpumask_first(cpu_online_mask);
	b = cpumask_next(a, cpu_online_mask);

	mp = kunit_kzalloc(test, sizeof(*mp), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, mp);
	atomic64_set(&mp->rep, 0);
	mp->rounds = 20000;
	/* Bounded in time, not rounds: a loaded host slows TCG a lot. */
	mp->deadline = jiffies + 5 * HZ;
	init_completion(&mp->prod_done);
	init_completion(&mp->cons_done);

	prod = kthread_create(fh_mp_producer, mp, "fh_mp_prod");
	KUNIT_ASSERT_FALSE(test, IS_ERR(prod));
	cons = kthread_create(fh_mp_consumer, mp, "fh_mp_cons");
	KUNIT_ASSERT_FALSE(test, IS_ERR(cons));
	kthread_bind(prod, a);
	kthread_bind(cons, b);
	wake_up_process(prod);
	wake_up_process(cons);
	wait_for_completion(&mp->prod_done);
	wait_for_completion(&mp->cons_done);

	kunit_info(test, "%u rounds, %u stale", mp->done, mp->stale);
	KUNIT_EXPECT_GE(test, mp->done, 100U);
	KUNIT_EXPECT_EQ(test, mp->stale, 0U);
}

static struct kunit_case fh_test_cases[] = {
	KUNIT_CASE(fh_test_bucket),
	KUNIT_CASE(fh_test_window_exact),
	KUNIT_CASE(fh_test_window_max_rule),
	KUNIT_CASE(fh_test_window_share),
	KUNIT_CASE(fh_test_window_no_clamp),
	KUNIT_CASE(fh_test_window_inversion),
	KUNIT_CASE(fh_test_window_idle),
	KUNIT_CASE(fh_test_window_reset),
	KUNIT_CASE(fh_test_perf_step),
	KUNIT_CASE(fh_test_perf_table),
	KUNIT_CASE(fh_test_publish_rule),
	KUNIT_CASE(fh_test_rep_pack),
	KUNIT_CASE(fh_test_slot_sequential),
	KUNIT_CASE(fh_test_slot_concurrent),
	{}
};

static struct kunit_suite fh_test_suite = {
	.name = "virtio_freqhint",
	.test_cases = fh_test_cases,
};
kunit_test_suite(fh_test_suite);

MODULE_DESCRIPTION("KUnit tests for virtio_freqhint");
MODULE_LICENSE("GPL");
