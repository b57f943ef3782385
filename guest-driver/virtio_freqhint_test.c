// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests of virtio_freqhint's pure logic: the window, bucket,
 * hysteresis and publish/consume logic, the flag composition and the
 * record invariants (window.c, freqhint.h), the checks of
 * the device's configuration and event messages against hostile values
 * (event.c), and kHz <-> capacity (scale.c).  CONFIG_VIRTIO_FREQHINT_KUNIT_TEST
 * (Kconfig; out of tree, Kbuild builds it where the kernel has KUnit); the
 * tests run when virtio_freqhint_test.ko is loaded and report in KTAP.
 */
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/sched.h>

#include "cpufreq.h"
#include "freqhint.h"
#include "vsock.h"

/* The functions under test, exported by virtio_freqhint for KUnit only. */
MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);

#define US	1000ULL
#define MS	1000000ULL

static const struct vfh_tuning vfh_test_tune = {
	.window_ms = 10,
	.idle_share = 20,
	.min_share = 51,
	.perf_step = 16,
};

/* Run a task with clamps @min/@max for @ns on @w, starting at *@now. */
static void run(struct vfh_win *w, u64 *now, u64 ns, int min, int max)
{
	vfh_win_track(w, false, min >= 0, min < 0 ? 0 : min, max >= 0,
		      max < 0 ? 0 : max);
	*now += ns;
	vfh_win_charge(w, *now);
}

static void idle_for(struct vfh_win *w, u64 *now, u64 ns)
{
	vfh_win_track(w, true, false, 0, false, 0);
	*now += ns;
	vfh_win_charge(w, *now);
}

static void vfh_test_bucket(struct kunit *test)
{
	unsigned int v, prev = 0;

	KUNIT_EXPECT_EQ(test, vfh_win_bucket(0), 0U);
	KUNIT_EXPECT_EQ(test, vfh_win_bucket(64), 0U);
	KUNIT_EXPECT_EQ(test, vfh_win_bucket(65), 1U);
	KUNIT_EXPECT_EQ(test, vfh_win_bucket(512), 7U);
	KUNIT_EXPECT_EQ(test, vfh_win_bucket(1024), FH_BUCKETS - 1);
	/* Out-of-range values land in the last bucket, not past it. */
	KUNIT_EXPECT_EQ(test, vfh_win_bucket(4000), FH_BUCKETS - 1);
	for (v = 0; v <= VIRTIO_FREQHINT_SCALE; v++) {
		KUNIT_ASSERT_GE(test, vfh_win_bucket(v), prev);
		prev = vfh_win_bucket(v);
	}
}

/* A lone task's clamps are reported exactly. */
static void vfh_test_window_exact(struct kunit *test)
{
	struct vfh_win w = {};
	struct vfh_win_result r;
	u64 now = 5 * MS;

	vfh_win_reset(&w, now);
	run(&w, &now, 10 * MS, 800, 900);
	vfh_win_close(&w, now, &vfh_test_tune, &r);
	KUNIT_EXPECT_EQ(test, r.min, 800);
	KUNIT_EXPECT_EQ(test, r.max, 900);
	KUNIT_EXPECT_FALSE(test, r.idle);
	KUNIT_EXPECT_EQ(test, r.busy, 1024U);
}

/* Max of mins, max of maxes, over tasks that each ran long enough. */
static void vfh_test_window_max_rule(struct kunit *test)
{
	struct vfh_win w = {};
	struct vfh_win_result r;
	u64 now = 0;

	vfh_win_reset(&w, now);
	run(&w, &now, 5 * MS, 600, 600);
	run(&w, &now, 5 * MS, 100, 900);
	vfh_win_close(&w, now, &vfh_test_tune, &r);
	KUNIT_EXPECT_EQ(test, r.min, 600);
	KUNIT_EXPECT_EQ(test, r.max, 900);
}

/* A kworker's blip at max 1024 does not lift a capped task's ceiling. */
static void vfh_test_window_share(struct kunit *test)
{
	struct vfh_win w = {};
	struct vfh_win_result r;
	u64 now = 0;

	vfh_win_reset(&w, now);
	run(&w, &now, 5 * MS, 0, 300);
	run(&w, &now, 30 * US, 0, 1024);
	run(&w, &now, 5 * MS, 0, 300);
	vfh_win_close(&w, now, &vfh_test_tune, &r);
	KUNIT_EXPECT_EQ(test, r.max, 300);

	/* Held for 10 % of the clamped time it counts. */
	vfh_win_reset(&w, now);
	run(&w, &now, 9 * MS, 0, 300);
	run(&w, &now, 1 * MS, 0, 1024);
	vfh_win_close(&w, now, &vfh_test_tune, &r);
	KUNIT_EXPECT_EQ(test, r.max, 1024);
}

/* Inactive entries count for neither clamp; none at all: no clamping. */
static void vfh_test_window_no_clamp(struct kunit *test)
{
	struct vfh_win w = {};
	struct vfh_win_result r;
	u64 now = 0;

	vfh_win_reset(&w, now);
	run(&w, &now, 10 * MS, -1, -1);
	vfh_win_close(&w, now, &vfh_test_tune, &r);
	KUNIT_EXPECT_EQ(test, r.min, 0);
	KUNIT_EXPECT_EQ(test, r.max, 1024);
	KUNIT_EXPECT_FALSE(test, r.idle);
}

/* The run queue's rule: a min above the max wins. */
static void vfh_test_window_inversion(struct kunit *test)
{
	struct vfh_win w = {};
	struct vfh_win_result r;
	u64 now = 0;

	vfh_win_reset(&w, now);
	run(&w, &now, 10 * MS, 800, 300);
	vfh_win_close(&w, now, &vfh_test_tune, &r);
	KUNIT_EXPECT_EQ(test, r.min, 800);
	KUNIT_EXPECT_EQ(test, r.max, 800);
}

/* Idle: housekeeping under idle_share, unless a boost counted. */
static void vfh_test_window_idle(struct kunit *test)
{
	struct vfh_win w = {};
	struct vfh_win_result r;
	u64 now = 0;

	vfh_win_reset(&w, now);
	idle_for(&w, &now, 5 * MS);
	run(&w, &now, 100 * US, 0, 1024);
	idle_for(&w, &now, 5 * MS);
	vfh_win_close(&w, now, &vfh_test_tune, &r);
	KUNIT_EXPECT_TRUE(test, r.idle);
	KUNIT_EXPECT_LE(test, r.busy, 20U);

	vfh_win_reset(&w, now);
	idle_for(&w, &now, 5 * MS);
	run(&w, &now, 100 * US, 700, 1024);
	idle_for(&w, &now, 5 * MS);
	vfh_win_close(&w, now, &vfh_test_tune, &r);
	KUNIT_EXPECT_FALSE(test, r.idle);
	KUNIT_EXPECT_EQ(test, r.min, 700);

	vfh_win_reset(&w, now);
	idle_for(&w, &now, 8 * MS);
	run(&w, &now, 2 * MS, 0, 1024);
	vfh_win_close(&w, now, &vfh_test_tune, &r);
	KUNIT_EXPECT_FALSE(test, r.idle);

	/* idle_share 0: the strict rule, any busy time is busy. */
	{
		struct vfh_tuning strict = vfh_test_tune;

		strict.idle_share = 0;
		vfh_win_reset(&w, now);
		idle_for(&w, &now, 5 * MS);
		run(&w, &now, 100 * US, 0, 1024);
		idle_for(&w, &now, 5 * MS);
		vfh_win_close(&w, now, &strict, &r);
		KUNIT_EXPECT_FALSE(test, r.idle);
	}
}

/* Time before the window (a stale segment start) is not charged to it. */
static void vfh_test_window_reset(struct kunit *test)
{
	struct vfh_win w = {};
	struct vfh_win_result r;
	u64 now = 0;

	run(&w, &now, 50 * MS, 900, 900);
	vfh_win_reset(&w, now);
	idle_for(&w, &now, 10 * MS);
	vfh_win_close(&w, now, &vfh_test_tune, &r);
	KUNIT_EXPECT_TRUE(test, r.idle);
	KUNIT_EXPECT_EQ(test, r.busy, 0U);
}

/* Without a table: a perf move under one step is not published. */
static void vfh_test_perf_step(struct kunit *test)
{
	struct vfh_levels l = { .step = 16 };

	KUNIT_EXPECT_FALSE(test, vfh_perf_changes_level(&l, 500, 500));
	KUNIT_EXPECT_FALSE(test, vfh_perf_changes_level(&l, 500, 515));
	KUNIT_EXPECT_FALSE(test, vfh_perf_changes_level(&l, 500, 485));
	KUNIT_EXPECT_TRUE(test, vfh_perf_changes_level(&l, 500, 516));
	KUNIT_EXPECT_TRUE(test, vfh_perf_changes_level(&l, 500, 484));
	/* The top of the scale is always reached exactly. */
	KUNIT_EXPECT_TRUE(test, vfh_perf_changes_level(&l, 1020, 1024));
	KUNIT_EXPECT_TRUE(test, vfh_perf_changes_level(&l, 1024, 1020));
	l.step = 0;	/* treated as 1 */
	KUNIT_EXPECT_TRUE(test, vfh_perf_changes_level(&l, 500, 501));
}

/* With a table: only a change of the serving table entry counts. */
static void vfh_test_perf_table(struct kunit *test)
{
	/* 800, 1600, 2400, 3200 MHz of 3200: thresholds 256, 512, 768, 1024. */
	struct vfh_levels l = { .step = 256, .n = 4,
			       .thr = { 256, 512, 768, 1024 } };

	KUNIT_EXPECT_FALSE(test, vfh_perf_changes_level(&l, 300, 500));
	KUNIT_EXPECT_FALSE(test, vfh_perf_changes_level(&l, 257, 512));
	KUNIT_EXPECT_TRUE(test, vfh_perf_changes_level(&l, 512, 513));
	KUNIT_EXPECT_TRUE(test, vfh_perf_changes_level(&l, 256, 257));
	KUNIT_EXPECT_FALSE(test, vfh_perf_changes_level(&l, 1, 256));
	KUNIT_EXPECT_TRUE(test, vfh_perf_changes_level(&l, 900, 1024));
}

static void vfh_test_publish_rule(struct kunit *test)
{
	struct vfh_levels l = { .step = 16 };
	u16 v = VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID |
		VIRTIO_FREQHINT_R_PERF_VALID;
	u64 a = vfh_rep_pack(v, 300, 600, 500);

	KUNIT_EXPECT_FALSE(test, vfh_rep_needs_publish(a, a, &l));
	/* Clamps are exact: any change goes out. */
	KUNIT_EXPECT_TRUE(test, vfh_rep_needs_publish(a, vfh_rep_pack(v, 301, 600, 500), &l));
	KUNIT_EXPECT_TRUE(test, vfh_rep_needs_publish(a, vfh_rep_pack(v, 300, 599, 500), &l));
	KUNIT_EXPECT_TRUE(test,
			  vfh_rep_needs_publish(a, vfh_rep_pack(VIRTIO_FREQHINT_R_IDLE,
								0, 0, 0), &l));
	/* perf jitter within a step does not. */
	KUNIT_EXPECT_FALSE(test, vfh_rep_needs_publish(a, vfh_rep_pack(v, 300, 600, 510), &l));
	KUNIT_EXPECT_TRUE(test, vfh_rep_needs_publish(a, vfh_rep_pack(v, 300, 600, 520), &l));
}

static void vfh_test_rep_pack(struct kunit *test)
{
	u64 r = vfh_rep_pack(0xf, 1024, 1023, 1);

	KUNIT_EXPECT_EQ(test, FIELD_GET(FH_REP_FLAGS, r), 0xfULL);
	KUNIT_EXPECT_EQ(test, FIELD_GET(FH_REP_MIN, r), 1024ULL);
	KUNIT_EXPECT_EQ(test, FIELD_GET(FH_REP_MAX, r), 1023ULL);
	KUNIT_EXPECT_EQ(test, FIELD_GET(FH_REP_PERF, r), 1ULL);
}

/* The protocol's sequential contract: latest value, taken once. */
static void vfh_test_slot_sequential(struct kunit *test)
{
	atomic64_t rep = ATOMIC64_INIT(0);
	unsigned long dirty = 0;
	u64 v = 0;

	KUNIT_EXPECT_FALSE(test, vfh_slot_take(&rep, &dirty, 3, &v));
	vfh_slot_publish(&rep, &dirty, 3, 11);
	KUNIT_EXPECT_TRUE(test, vfh_slot_take(&rep, &dirty, 3, &v));
	KUNIT_EXPECT_EQ(test, v, 11ULL);
	KUNIT_EXPECT_FALSE(test, vfh_slot_take(&rep, &dirty, 3, &v));
	vfh_slot_publish(&rep, &dirty, 3, 12);
	vfh_slot_publish(&rep, &dirty, 3, 13);
	KUNIT_EXPECT_TRUE(test, vfh_slot_take(&rep, &dirty, 3, &v));
	KUNIT_EXPECT_EQ(test, v, 13ULL);
	KUNIT_EXPECT_EQ(test, dirty, 0UL);
}

/*
 * The protocol under concurrency: a producer on one CPU publishes round
 * r's value while a consumer on another CPU keeps taking.  When the round
 * is over (handshake below), the consumer's latest value must be r: a
 * consumer that cleared the dirty bit but read the previous report would
 * hold r - 1 with no bit left to fix it.
 *
 * What it proves, and what not: on x86 (TSO) stores are not reordered
 * with stores nor loads with loads, so this cannot fail there even
 * without smp_mb__before_atomic(); it runs the protocol on real CPUs and
 * checks the handshake and the accounting.  The ordering argument itself
 * is tests/fh-publish.litmus (LKMM); on a weakly ordered CPU (arm64) this
 * test can catch a missing barrier.  Slow: it spins for up to 5 s.
 */
struct vfh_mp {
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

static bool vfh_mp_wait(atomic_t *a, int val, unsigned long deadline)
{
	while (atomic_read_acquire(a) < val) {
		if (time_after(jiffies, deadline))
			return false;
		cpu_relax();
	}
	return true;
}

static int vfh_mp_producer(void *data)
{
	struct vfh_mp *mp = data;
	unsigned int r;

	for (r = 1; r <= mp->rounds; r++) {
		if (!vfh_mp_wait(&mp->consumed, r - 1, mp->deadline))
			break;
		vfh_slot_publish(&mp->rep, &mp->dirty, 5, r);
		atomic_set_release(&mp->published, r);
	}
	complete(&mp->prod_done);
	return 0;
}

static int vfh_mp_consumer(void *data)
{
	struct vfh_mp *mp = data;
	unsigned int r;
	u64 last = 0, v;

	for (r = 1; r <= mp->rounds; r++) {
		while (atomic_read_acquire(&mp->published) < r) {
			if (vfh_slot_take(&mp->rep, &mp->dirty, 5, &v))
				last = v;
			if (time_after(jiffies, mp->deadline))
				goto out;
		}
		if (vfh_slot_take(&mp->rep, &mp->dirty, 5, &v))
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

static void vfh_test_slot_concurrent(struct kunit *test)
{
	struct task_struct *prod, *cons;
	unsigned int a, b;
	struct vfh_mp *mp;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two online CPUs");
	a = cpumask_first(cpu_online_mask);
	b = cpumask_next(a, cpu_online_mask);

	mp = kunit_kzalloc(test, sizeof(*mp), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, mp);
	atomic64_set(&mp->rep, 0);
	mp->rounds = 20000;
	/* Bounded in time, not rounds: an emulated guest can be slow. */
	mp->deadline = jiffies + 5 * HZ;
	init_completion(&mp->prod_done);
	init_completion(&mp->cons_done);

	prod = kthread_create(vfh_mp_producer, mp, "vfh_mp_prod");
	KUNIT_ASSERT_FALSE(test, IS_ERR(prod));
	cons = kthread_create(vfh_mp_consumer, mp, "vfh_mp_cons");
	if (IS_ERR(cons))
		kthread_stop(prod);	/* never woken: its function does not run */
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

/* Early after boot the backdated start must not wrap. */
static void vfh_test_backdate_early(struct kunit *test)
{
	u64 span = 4 * 1000 * MS;

	/* local_clock() at 1 ms, four 1 s windows back: 0, not ~2^64. */
	KUNIT_EXPECT_EQ(test, vfh_win_backdate(0, 1 * MS, span), 0ULL);
	KUNIT_EXPECT_EQ(test, vfh_win_backdate(500 * US, 1 * MS, span),
			500 * US);
	/* Later on: the span limits how far back the window reaches. */
	KUNIT_EXPECT_EQ(test, vfh_win_backdate(0, 10 * span, span), 9 * span);
	KUNIT_EXPECT_EQ(test, vfh_win_backdate(10 * span - 1, 10 * span, span),
			10 * span - 1);
}

/* A busy vCPU woken early after boot is busy, not idle. */
static void vfh_test_backdate_busy(struct kunit *test)
{
	struct vfh_win w = {};
	struct vfh_win_result r;
	u64 now = 2 * MS;

	vfh_win_reset(&w, 0);
	idle_for(&w, &now, 0);
	w.start = vfh_win_backdate(w.start, now, 4 * 10 * MS);
	run(&w, &now, 10 * MS, 300, 600);
	vfh_win_close(&w, now, &vfh_test_tune, &r);
	KUNIT_EXPECT_FALSE(test, r.idle);
	KUNIT_EXPECT_GT(test, r.busy, 512U);
}

/*
 * Busy time from idle time: an idle vCPU whose window saw only interrupts
 * (the window timer's own wake-up first), or only the module's sender
 * besides, is idle.
 */
static void vfh_test_busy_from_idle(struct kunit *test)
{
	struct vfh_win_result r;
	struct vfh_win w = {};

	/* 10 ms of wall time, 7.44 ms of it idle: 2.56 ms in interrupts. */
	KUNIT_EXPECT_EQ(test, vfh_win_busy_from_idle(10000, 7440, true, true,
						     0, 0), 0ULL);
	/* The idle task was switched away from: a task ran. */
	KUNIT_EXPECT_EQ(test, vfh_win_busy_from_idle(10000, 7440, true, true,
						     1, 0), 2560 * US);
	/* ... the sender, which slept here as often: still no task's work. */
	KUNIT_EXPECT_EQ(test, vfh_win_busy_from_idle(10000, 7440, true, true,
						     2, 2), 0ULL);
	/* ... and one more switch than the sender's: another task ran. */
	KUNIT_EXPECT_EQ(test, vfh_win_busy_from_idle(10000, 7440, true, true,
						     3, 2), 2560 * US);
	/* A task other than the sender was current at either end. */
	KUNIT_EXPECT_EQ(test, vfh_win_busy_from_idle(10000, 7440, false, true,
						     0, 0), 2560 * US);
	KUNIT_EXPECT_EQ(test, vfh_win_busy_from_idle(10000, 7440, true, false,
						     0, 0), 2560 * US);
	/* Idle time read past the wall time: not negative. */
	KUNIT_EXPECT_EQ(test, vfh_win_busy_from_idle(10000, 10001, false, false,
						     0, 0), 0ULL);

	/* As the window closes it: idle, where the raw share was not. */
	vfh_win_reset(&w, 0);
	w.busy_ns = vfh_win_busy_from_idle(10000, 7440, false, true, 0, 0);
	vfh_win_close(&w, 10 * MS, &vfh_test_tune, &r);
	KUNIT_EXPECT_FALSE(test, r.idle);
	w.busy_ns = vfh_win_busy_from_idle(10000, 7440, true, true, 1, 1);
	vfh_win_close(&w, 10 * MS, &vfh_test_tune, &r);
	KUNIT_EXPECT_TRUE(test, r.idle);
	KUNIT_EXPECT_EQ(test, r.busy, 0U);
}

static const struct vfh_config vfh_test_config = {
	.num_vcpus = 4, .max_records = 4, .rate_window_ms = 10,
	.perf_step = 16, .idle_share = 20, .event_buf_size = 624 + 8 * 4,
};

/* The 16-byte configuration: no value is a layout marker. */
static void vfh_test_config_check(struct kunit *test)
{
	struct vfh_config c = vfh_test_config;

	KUNIT_EXPECT_NULL(test, vfh_config_why(&c, true));
	c.perf_step = 0;	/* was "old layout": now simply invalid */
	KUNIT_EXPECT_NOT_NULL(test, vfh_config_why(&c, false));
	c = vfh_test_config;
	c.perf_step = 1025;
	KUNIT_EXPECT_NOT_NULL(test, vfh_config_why(&c, false));
	c = vfh_test_config;
	c.num_vcpus = 0;
	KUNIT_EXPECT_NOT_NULL(test, vfh_config_why(&c, false));
	c = vfh_test_config;
	c.max_records = 5;
	KUNIT_EXPECT_NOT_NULL(test, vfh_config_why(&c, false));
	c = vfh_test_config;
	c.rate_window_ms = 0;
	KUNIT_EXPECT_NOT_NULL(test, vfh_config_why(&c, false));
	c = vfh_test_config;
	c.idle_share = 1025;
	KUNIT_EXPECT_NOT_NULL(test, vfh_config_why(&c, false));
	/* reserved is ignored, whatever it holds. */
	c = vfh_test_config;
	c.reserved = 1;
	KUNIT_EXPECT_NULL(test, vfh_config_why(&c, false));
	c.reserved = 0xffff;
	KUNIT_EXPECT_NULL(test, vfh_config_why(&c, true));
	/* event_buf_size counts only with an event queue. */
	c = vfh_test_config;
	c.event_buf_size = 624 + 8 * 3;
	KUNIT_EXPECT_NOT_NULL(test, vfh_config_why(&c, true));
	KUNIT_EXPECT_NULL(test, vfh_config_why(&c, false));
	c.event_buf_size = FH_EVENT_BUF_MAX + 1;
	KUNIT_EXPECT_NOT_NULL(test, vfh_config_why(&c, true));
}

#define FH_TEST_VCPUS	4

struct vfh_test_fb {
	struct virtio_freqhint_feedback fb;
	struct virtio_freqhint_vcpu_feedback v[FH_TEST_VCPUS];
};

/* A valid snapshot: one class 800 MHz..3.2 GHz with a 7-entry table. */
static void vfh_test_fb_init(struct vfh_test_fb *t)
{
	struct virtio_freqhint_freq_class *c = &t->fb.classes[0];
	unsigned int i;

	memset(t, 0, sizeof(*t));
	t->fb.msg_type = cpu_to_le16(VIRTIO_FREQHINT_MSG_FEEDBACK);
	t->fb.flags = cpu_to_le16(VIRTIO_FREQHINT_FB_AGENT);
	t->fb.seq = cpu_to_le32(1);
	t->fb.operator_floor = cpu_to_le16(0);
	t->fb.operator_ceiling = cpu_to_le16(768);
	t->fb.num_vcpus = cpu_to_le16(FH_TEST_VCPUS);
	t->fb.num_freq_classes = cpu_to_le16(1);
	c->min_khz = cpu_to_le32(800000);
	c->max_khz = cpu_to_le32(3200000);
	c->perf_step = cpu_to_le16(128);
	c->num_freqs = cpu_to_le16(7);
	for (i = 0; i < 7; i++)
		c->freqs_khz[i] = cpu_to_le32(800000 + i * 400000);
	for (i = 0; i < FH_TEST_VCPUS; i++) {
		t->v[i].floor = cpu_to_le16(0);
		t->v[i].ceiling = cpu_to_le16(1024);
		t->v[i].freq_class = i == 3 ? VIRTIO_FREQHINT_NO_FREQ_CLASS : 0;
	}
}

static const char *vfh_test_fb_why(struct vfh_test_fb *t)
{
	return vfh_feedback_why(t, sizeof(*t), FH_TEST_VCPUS, true);
}

/*
 * Frequencies that collide with cpufreq's table markers
 * or leave freq QoS's S32 range are refused with the whole snapshot.
 */
static void vfh_test_feedback_khz_bound(struct kunit *test)
{
	struct virtio_freqhint_freq_class *c;
	struct vfh_test_fb t;

	vfh_test_fb_init(&t);
	KUNIT_EXPECT_NULL(test, vfh_test_fb_why(&t));
	c = &t.fb.classes[0];
	c->max_khz = cpu_to_le32(0xffffffff);	/* CPUFREQ_TABLE_END */
	KUNIT_EXPECT_NOT_NULL(test, vfh_test_fb_why(&t));
	c->max_khz = cpu_to_le32(VIRTIO_FREQHINT_MAX_KHZ + 1);
	KUNIT_EXPECT_NOT_NULL(test, vfh_test_fb_why(&t));
	c->max_khz = cpu_to_le32((u32)S32_MAX + 1);
	KUNIT_EXPECT_NOT_NULL(test, vfh_test_fb_why(&t));
	c->max_khz = cpu_to_le32(VIRTIO_FREQHINT_MAX_KHZ);
	KUNIT_EXPECT_NULL(test, vfh_test_fb_why(&t));
	/* A one-entry table at CPUFREQ_TABLE_END. */
	vfh_test_fb_init(&t);
	c->max_khz = cpu_to_le32(0xffffffff);
	c->num_freqs = cpu_to_le16(1);
	memset(c->freqs_khz, 0, sizeof(c->freqs_khz));
	c->freqs_khz[0] = cpu_to_le32(0xffffffff);
	KUNIT_EXPECT_NOT_NULL(test, vfh_test_fb_why(&t));
	vfh_test_fb_init(&t);
	c->freqs_khz[6] = cpu_to_le32(0xfffffffe);	/* ENTRY_INVALID */
	KUNIT_EXPECT_NOT_NULL(test, vfh_test_fb_why(&t));
}

/* Every rule of a snapshot: one bad field drops the whole of it. */
static void vfh_test_feedback_check(struct kunit *test)
{
	struct virtio_freqhint_freq_class *c;
	struct vfh_test_fb t;

#define FH_BAD(stmt) do {						\
		vfh_test_fb_init(&t);					\
		stmt;							\
		KUNIT_EXPECT_NOT_NULL_MSG(test, vfh_test_fb_why(&t), #stmt); \
	} while (0)
	c = &t.fb.classes[0];
	FH_BAD(t.fb.msg_type = cpu_to_le16(VIRTIO_FREQHINT_MSG_CPU_IDS));
	FH_BAD(t.fb.num_vcpus = cpu_to_le16(3));
	FH_BAD(t.fb.operator_floor = cpu_to_le16(769));
	FH_BAD(t.fb.operator_ceiling = cpu_to_le16(1025));
	FH_BAD(t.fb.num_freq_classes = cpu_to_le16(9));
	FH_BAD(c->min_khz = 0);
	FH_BAD(c->min_khz = cpu_to_le32(3200001));
	FH_BAD(c->perf_step = 0);
	FH_BAD(c->perf_step = cpu_to_le16(1025));
	FH_BAD(c->num_freqs = cpu_to_le16(17));
	FH_BAD(c->freqs_khz[3] = c->freqs_khz[2]);
	FH_BAD(c->freqs_khz[0] = cpu_to_le32(799999));
	FH_BAD(c->freqs_khz[7] = cpu_to_le32(3200000));
	FH_BAD(t.v[1].floor = cpu_to_le16(600); t.v[1].ceiling = cpu_to_le16(500));
	FH_BAD(t.v[1].ceiling = cpu_to_le16(1025));
	FH_BAD(t.v[2].freq_class = 1);
	FH_BAD(t.v[2].reserved[1] = 1);
	/* Flags within FB_ALL, unused classes all zero. */
	FH_BAD(t.fb.flags = cpu_to_le16(2));
	FH_BAD(t.fb.flags = cpu_to_le16(0x8001));
	FH_BAD(t.fb.classes[1].min_khz = cpu_to_le32(1));
	FH_BAD(t.fb.classes[7].freqs_khz[15] = cpu_to_le32(1));
#undef FH_BAD
	/* Classes only with F_HOST_FREQ. */
	vfh_test_fb_init(&t);
	KUNIT_EXPECT_NOT_NULL(test, vfh_feedback_why(&t, sizeof(t),
						     FH_TEST_VCPUS, false));
	t.fb.num_freq_classes = 0;
	memset(&t.fb.classes[0], 0, sizeof(t.fb.classes[0]));
	t.v[0].freq_class = VIRTIO_FREQHINT_NO_FREQ_CLASS;
	t.v[1].freq_class = VIRTIO_FREQHINT_NO_FREQ_CLASS;
	t.v[2].freq_class = VIRTIO_FREQHINT_NO_FREQ_CLASS;
	KUNIT_EXPECT_NULL(test, vfh_feedback_why(&t, sizeof(t),
						 FH_TEST_VCPUS, false));
	/* Short, or longer than the message: the length is exact. */
	vfh_test_fb_init(&t);
	KUNIT_EXPECT_NOT_NULL(test, vfh_feedback_why(&t, sizeof(t) - 1,
						     FH_TEST_VCPUS, true));
	{
		struct {
			struct vfh_test_fb t;
			u8 more[8];
		} *big = kunit_kzalloc(test, sizeof(*big), GFP_KERNEL);

		KUNIT_ASSERT_NOT_NULL(test, big);
		vfh_test_fb_init(&big->t);
		KUNIT_EXPECT_NULL(test, vfh_feedback_why(big, sizeof(big->t),
							 FH_TEST_VCPUS, true));
		KUNIT_EXPECT_NOT_NULL(test, vfh_feedback_why(big, sizeof(*big),
							     FH_TEST_VCPUS,
							     true));
	}
}

/*
 * Taking a snapshot never writes past the driver's arrays, whatever
 * counts the message holds: the buffer is the device's, and a count it
 * rewrites after the check must not become an index.
 */
static void vfh_test_feedback_take_bounded(struct kunit *test)
{
	struct vfh_grant grants[FH_TEST_VCPUS];
	u8 freq_class[FH_TEST_VCPUS];
	struct {
		struct vfh_host h;
		u8 guard[2 * sizeof(struct vfh_freq)];
	} *d;
	struct vfh_test_fb *t;
	unsigned int i;

	d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);
	/* Room for a ninth class, which a count past the array would read. */
	t = kunit_kzalloc(test, sizeof(*t) + sizeof(t->fb.classes[0]),
			  GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, d);
	KUNIT_ASSERT_NOT_NULL(test, t);
	d->h.grants = grants;
	d->h.freq_class = freq_class;
	memset(d->guard, 0xa5, sizeof(d->guard));

	vfh_test_fb_init(t);
	KUNIT_ASSERT_NULL(test, vfh_test_fb_why(t));
	vfh_feedback_take(&d->h, &t->fb, FH_TEST_VCPUS);
	KUNIT_EXPECT_EQ(test, d->h.seq, 1U);
	KUNIT_EXPECT_EQ(test, d->h.operator_ceiling, 768);
	KUNIT_EXPECT_EQ(test, d->h.num_freq_classes, 1);
	KUNIT_EXPECT_EQ(test, d->h.classes[0].n, 7);
	KUNIT_EXPECT_EQ(test, d->h.classes[0].khz[6], 3200000U);
	KUNIT_EXPECT_EQ(test, d->h.class_step[0], 128);
	KUNIT_EXPECT_EQ(test, grants[1].ceiling, 1024);
	KUNIT_EXPECT_EQ(test, freq_class[3], VIRTIO_FREQHINT_NO_FREQ_CLASS);

	/*
	 * Counts past the arrays, as a rewrite after the check leaves them.
	 * A ninth class would take its num_freqs from vcpus[1].ceiling: keep
	 * that small too, so that an unbounded take stays within the guard.
	 */
	t->fb.num_freq_classes = cpu_to_le16(VIRTIO_FREQHINT_MAX_FREQ_CLASSES + 1);
	t->v[1].ceiling = cpu_to_le16(VIRTIO_FREQHINT_MAX_FREQS + 1);
	for (i = 0; i < VIRTIO_FREQHINT_MAX_FREQ_CLASSES; i++)
		t->fb.classes[i].num_freqs =
			cpu_to_le16(VIRTIO_FREQHINT_MAX_FREQS + 1);
	vfh_feedback_take(&d->h, &t->fb, FH_TEST_VCPUS);
	KUNIT_EXPECT_NULL_MSG(test, memchr_inv(d->guard, 0xa5, sizeof(d->guard)),
			      "written past the classes");
	KUNIT_EXPECT_LE(test, d->h.num_freq_classes,
			VIRTIO_FREQHINT_MAX_FREQ_CLASSES);
	for (i = 0; i < VIRTIO_FREQHINT_MAX_FREQ_CLASSES; i++)
		KUNIT_EXPECT_LE(test, d->h.classes[i].n,
				VIRTIO_FREQHINT_MAX_FREQS);
}

static void vfh_test_seq(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, vfh_seq_newer(1, 0));
	KUNIT_EXPECT_TRUE(test, vfh_seq_newer(8, 7));
	KUNIT_EXPECT_FALSE(test, vfh_seq_newer(7, 7));
	KUNIT_EXPECT_FALSE(test, vfh_seq_newer(6, 7));
	/* Across the wrap. */
	KUNIT_EXPECT_TRUE(test, vfh_seq_newer(2, 0xfffffffe));
	KUNIT_EXPECT_FALSE(test, vfh_seq_newer(0xfffffffe, 2));
	/*
	 * FEEDBACK's and CUR_FREQ's counts restart at 1 after a reset: a
	 * driver that kept its last one would take the new 1 as stale.
	 */
	KUNIT_EXPECT_FALSE(test, vfh_seq_newer(1, 40));
}

/* CUR_FREQ (6.8a): what is dropped whole. */
struct vfh_test_cur {
	struct virtio_freqhint_cur_freq h;
	__le32 khz[FH_TEST_VCPUS];
	__le32 more;		/* a used length one value too long */
};

static void vfh_test_cur_init(struct vfh_test_cur *m)
{
	unsigned int i;

	memset(m, 0, sizeof(*m));
	m->h.msg_type = cpu_to_le16(VIRTIO_FREQHINT_MSG_CUR_FREQ);
	m->h.num_vcpus = cpu_to_le16(FH_TEST_VCPUS);
	m->h.seq = cpu_to_le32(1);
	for (i = 0; i < FH_TEST_VCPUS; i++)
		m->khz[i] = cpu_to_le32(2400000);
}

static void vfh_test_cur_freq_check(struct kunit *test)
{
	size_t len = sizeof(struct virtio_freqhint_cur_freq) +
		     FH_TEST_VCPUS * sizeof(__le32);
	struct vfh_test_cur m;

	vfh_test_cur_init(&m);
	KUNIT_EXPECT_EQ(test, len, 8 + 4 * FH_TEST_VCPUS);
	KUNIT_EXPECT_NULL(test, vfh_cur_freq_why(&m, len, FH_TEST_VCPUS));
	/* Short by a byte, by a value, only the header, one value long. */
	KUNIT_EXPECT_NOT_NULL(test, vfh_cur_freq_why(&m, len - 1, FH_TEST_VCPUS));
	KUNIT_EXPECT_NOT_NULL(test, vfh_cur_freq_why(&m, len - 4, FH_TEST_VCPUS));
	KUNIT_EXPECT_NOT_NULL(test, vfh_cur_freq_why(&m, 8, FH_TEST_VCPUS));
	KUNIT_EXPECT_NOT_NULL(test, vfh_cur_freq_why(&m, len + 4, FH_TEST_VCPUS));
	/* num_vcpus of another configuration, with its length. */
	KUNIT_EXPECT_NOT_NULL(test, vfh_cur_freq_why(&m, len - 4, 3));
	m.h.num_vcpus = cpu_to_le16(3);
	KUNIT_EXPECT_NOT_NULL(test, vfh_cur_freq_why(&m, len, FH_TEST_VCPUS));
	vfh_test_cur_init(&m);
	m.h.msg_type = cpu_to_le16(VIRTIO_FREQHINT_MSG_FEEDBACK);
	KUNIT_EXPECT_NOT_NULL(test, vfh_cur_freq_why(&m, len, FH_TEST_VCPUS));
	/* Every value is one the driver may judge: none is a reason to drop. */
	vfh_test_cur_init(&m);
	m.khz[0] = cpu_to_le32(U32_MAX);
	m.khz[1] = 0;
	KUNIT_EXPECT_NULL(test, vfh_cur_freq_why(&m, len, FH_TEST_VCPUS));
}

/* Values against the classes of the latest snapshot. */
static void vfh_test_cur_freq_take(struct kunit *test)
{
	struct vfh_grant grants[FH_TEST_VCPUS] = {};
	u8 freq_class[FH_TEST_VCPUS] = { 0, 1, 0, VIRTIO_FREQHINT_NO_FREQ_CLASS };
	struct vfh_host *h;
	struct vfh_test_cur m;
	u32 khz[FH_TEST_VCPUS];

	h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, h);
	h->grants = grants;
	h->freq_class = freq_class;
	h->num_freq_classes = 2;
	h->classes[0] = (struct vfh_freq){ .min_khz = 800000, .max_khz = 3200000 };
	h->classes[1] = (struct vfh_freq){ .min_khz = 1000000, .max_khz = 2000000 };

	vfh_test_cur_init(&m);
	m.khz[0] = cpu_to_le32(800000);		/* class 0's min */
	m.khz[1] = cpu_to_le32(2000000);	/* class 1's max */
	m.khz[2] = 0;				/* unknown */
	m.khz[3] = 0;				/* no class, unknown */
	KUNIT_EXPECT_EQ(test, vfh_cur_freq_take(khz, h, &m.h, FH_TEST_VCPUS), 0U);
	KUNIT_EXPECT_EQ(test, khz[0], 800000U);
	KUNIT_EXPECT_EQ(test, khz[1], 2000000U);
	KUNIT_EXPECT_EQ(test, khz[2], 0U);
	KUNIT_EXPECT_EQ(test, khz[3], 0U);

	/* Out of class: unknown, not clamped; the others still apply. */
	m.khz[0] = cpu_to_le32(799999);		/* below class 0 */
	m.khz[1] = cpu_to_le32(2400000);	/* in class 0, above class 1 */
	m.khz[2] = cpu_to_le32(3200000);
	m.khz[3] = cpu_to_le32(1000000);	/* a value without a class */
	KUNIT_EXPECT_EQ(test, vfh_cur_freq_take(khz, h, &m.h, FH_TEST_VCPUS), 3U);
	KUNIT_EXPECT_EQ(test, khz[0], 0U);
	KUNIT_EXPECT_EQ(test, khz[1], 0U);
	KUNIT_EXPECT_EQ(test, khz[2], 3200000U);
	KUNIT_EXPECT_EQ(test, khz[3], 0U);

	/* A class index the snapshot no longer has (fewer classes now). */
	h->num_freq_classes = 1;
	m.khz[1] = cpu_to_le32(1500000);
	m.khz[3] = 0;
	KUNIT_EXPECT_EQ(test, vfh_cur_freq_take(khz, h, &m.h, FH_TEST_VCPUS), 2U);
	KUNIT_EXPECT_EQ(test, khz[1], 0U);
	/* No snapshot with classes: every value other than 0 is out. */
	h->num_freq_classes = 0;
	KUNIT_EXPECT_EQ(test, vfh_cur_freq_take(khz, h, &m.h, FH_TEST_VCPUS), 3U);
	KUNIT_EXPECT_EQ(test, khz[2], 0U);
}

/* 64-bit firmware ids: an arm64 MPIDR with Aff3 is not its low 32 bits. */
static void vfh_test_cpu_ids(struct kunit *test)
{
	struct {
		struct virtio_freqhint_cpu_ids h;
		__le64 id[FH_TEST_VCPUS];
	} m = {};
	u64 ids[FH_TEST_VCPUS];
	unsigned int i;

	m.h.msg_type = cpu_to_le16(VIRTIO_FREQHINT_MSG_CPU_IDS);
	m.h.num_vcpus = cpu_to_le16(FH_TEST_VCPUS);
	m.id[0] = cpu_to_le64(0x0000000000ULL);
	m.id[1] = cpu_to_le64(0x0100000000ULL);
	m.id[2] = cpu_to_le64(VIRTIO_FREQHINT_CPU_ID_NONE);
	m.id[3] = cpu_to_le64(0x0000000101ULL);
	KUNIT_EXPECT_NULL(test, vfh_cpu_ids_why(&m, sizeof(m), FH_TEST_VCPUS));
	KUNIT_EXPECT_NOT_NULL(test, vfh_cpu_ids_why(&m, sizeof(m) - 8,
						    FH_TEST_VCPUS));
	KUNIT_EXPECT_NOT_NULL(test, vfh_cpu_ids_why(&m, sizeof(m), 3));
	m.h.reserved[2] = 1;
	KUNIT_EXPECT_NOT_NULL(test, vfh_cpu_ids_why(&m, sizeof(m),
						    FH_TEST_VCPUS));
	m.h.reserved[2] = 0;
	/* A used length longer than the message is refused too. */
	{
		struct {
			typeof(m) m;
			__le64 more;
		} big = { .m = m };

		KUNIT_EXPECT_NOT_NULL(test, vfh_cpu_ids_why(&big, sizeof(big),
							    FH_TEST_VCPUS));
	}
	for (i = 0; i < FH_TEST_VCPUS; i++)
		ids[i] = le64_to_cpu(m.id[i]);
	KUNIT_EXPECT_EQ(test, vfh_cpu_ids_find(ids, FH_TEST_VCPUS, 0), 0);
	KUNIT_EXPECT_EQ(test, vfh_cpu_ids_find(ids, FH_TEST_VCPUS,
					       0x0100000000ULL), 1);
	KUNIT_EXPECT_EQ(test, vfh_cpu_ids_find(ids, FH_TEST_VCPUS, 0x101), 3);
	KUNIT_EXPECT_EQ(test, vfh_cpu_ids_find(ids, FH_TEST_VCPUS, 2), -ENOENT);
	KUNIT_EXPECT_EQ(test, vfh_cpu_ids_find(ids, FH_TEST_VCPUS,
					       VIRTIO_FREQHINT_CPU_ID_NONE),
			-ENOENT);
}

/* The first CPU_IDS after DRIVER_OK holds until the next reset. */
static void vfh_test_cpu_ids_first(struct kunit *test)
{
	struct {
		struct virtio_freqhint_cpu_ids h;
		__le64 id[FH_TEST_VCPUS];
	} m = {};
	u64 ids[FH_TEST_VCPUS] = {};
	unsigned int i;

	m.h.msg_type = cpu_to_le16(VIRTIO_FREQHINT_MSG_CPU_IDS);
	m.h.num_vcpus = cpu_to_le16(FH_TEST_VCPUS);
	for (i = 0; i < FH_TEST_VCPUS; i++)
		m.id[i] = cpu_to_le64(i);
	KUNIT_EXPECT_TRUE(test, vfh_cpu_ids_take(ids, false, &m.h,
						 FH_TEST_VCPUS));
	KUNIT_EXPECT_EQ(test, ids[3], 3ULL);
	for (i = 0; i < FH_TEST_VCPUS; i++)
		m.id[i] = cpu_to_le64(FH_TEST_VCPUS - 1 - i);
	KUNIT_EXPECT_FALSE(test, vfh_cpu_ids_take(ids, true, &m.h,
						  FH_TEST_VCPUS));
	for (i = 0; i < FH_TEST_VCPUS; i++)
		KUNIT_EXPECT_EQ(test, ids[i], (u64)i);
}

/*
 * The sender's wait: the rest of the window after the last send, and none
 * once that is over, however long ago it was (jiffies wrap on 32 bits
 * after 2^31 ticks, 24.8 days at HZ=1000).
 */
static void vfh_test_send_delay(struct kunit *test)
{
	unsigned long now = 1000, w = 10;

	KUNIT_EXPECT_EQ(test, vfh_send_delay(now, now, w), w);
	KUNIT_EXPECT_EQ(test, vfh_send_delay(now, now - 4, w), 6UL);
	KUNIT_EXPECT_EQ(test, vfh_send_delay(now, now - w, w), 0UL);
	KUNIT_EXPECT_EQ(test, vfh_send_delay(now, now - 5000, w), 0UL);
	/* Across the counter's wrap, a send just before it. */
	now = 2;
	KUNIT_EXPECT_EQ(test, vfh_send_delay(now, ULONG_MAX - 2, w), 5UL);
	/* Nothing sent for more than half the counter's range. */
	now = 1000;
	KUNIT_EXPECT_EQ(test, vfh_send_delay(now, now - LONG_MAX - 1 - w - 5, w),
			0UL);
	KUNIT_EXPECT_EQ(test, vfh_send_delay(now, now - ULONG_MAX + 5, w),
			0UL);
}

/* kHz <-> capacity (scale.c): the synthetic range and a host class. */
static void vfh_test_scale(struct kunit *test)
{
	struct vfh_freq f = { .min_khz = 800000, .max_khz = 3200000, .n = 3,
			     .khz = { 800000, 1600000, 3200000 } };
	struct vfh_levels l;
	struct vfh_freq s;

	vfh_freq_synthetic(&s);
	KUNIT_EXPECT_EQ(test, s.min_khz, 1000U);
	KUNIT_EXPECT_EQ(test, s.max_khz, 1024000U);
	KUNIT_EXPECT_EQ(test, s.n, 0);
	KUNIT_EXPECT_EQ(test, vfh_cap_to_khz(&s, 512), 512000U);
	KUNIT_EXPECT_EQ(test, vfh_khz_to_perf(&s, 512000), 512U);
	/* Limits stay within the policy's range. */
	KUNIT_EXPECT_EQ(test, vfh_cap_to_khz(&f, 0), 800000U);
	KUNIT_EXPECT_EQ(test, vfh_cap_to_khz(&f, 768), 2400000U);
	KUNIT_EXPECT_EQ(test, vfh_cap_to_khz(&f, 1024), 3200000U);
	KUNIT_EXPECT_EQ(test, vfh_cap_to_khz(&f, 5000), 3200000U);
	/* A request is 1..1024, never "none" (0) nor above the scale. */
	KUNIT_EXPECT_EQ(test, vfh_khz_to_perf(&f, 0), 1U);
	KUNIT_EXPECT_EQ(test, vfh_khz_to_perf(&f, 1600000), 512U);
	KUNIT_EXPECT_EQ(test, vfh_khz_to_perf(&f, 3200000), 1024U);
	KUNIT_EXPECT_EQ(test, vfh_khz_to_perf(&f, U32_MAX), 1024U);
	/* The largest kHz the device may send does not overflow. */
	f.max_khz = VIRTIO_FREQHINT_MAX_KHZ;
	KUNIT_EXPECT_EQ(test, vfh_cap_to_khz(&f, 1024),
			(unsigned int)VIRTIO_FREQHINT_MAX_KHZ);
	KUNIT_EXPECT_EQ(test, vfh_khz_to_perf(&f, VIRTIO_FREQHINT_MAX_KHZ),
			1024U);
	/* A table's levels: each entry's share of the top, in capacity. */
	f.max_khz = 3200000;
	vfh_freq_levels(&f, 16, &l);
	KUNIT_EXPECT_EQ(test, l.step, 16);
	KUNIT_EXPECT_EQ(test, l.n, 3);
	KUNIT_EXPECT_EQ(test, l.thr[0], 256);
	KUNIT_EXPECT_EQ(test, l.thr[1], 512);
	KUNIT_EXPECT_EQ(test, l.thr[2], 1024);
	/*
	 * A new policy's cur: the highest frequency it shows, not max_khz
	 * when the table ends below it (then above cpuinfo_max_freq).
	 */
	KUNIT_EXPECT_EQ(test, vfh_freq_top(&s), 1024000U);
	f = (struct vfh_freq){ .min_khz = 800000, .max_khz = 3200000, .n = 5,
			      .khz = { 1000000, 1500000, 2000000, 2500000,
				       3000000 } };
	KUNIT_EXPECT_EQ(test, vfh_freq_top(&f), 3000000U);
}

/* What a closed window reports: flags and values together. */
static void vfh_test_flag_composition(struct kunit *test)
{
	const u16 clamps = VIRTIO_FREQHINT_R_MIN_VALID |
			   VIRTIO_FREQHINT_R_MAX_VALID;
	struct vfh_win_result r = { .min = 300, .max = 600, .busy = 900 };
	u64 rep;

	rep = vfh_rep_from_window(&r, clamps, 700);
	KUNIT_EXPECT_EQ(test, rep, vfh_rep_pack(clamps |
					       VIRTIO_FREQHINT_R_PERF_VALID,
					       300, 600, 700));
	/* No request known: no PERF_VALID, perf 0. */
	rep = vfh_rep_from_window(&r, clamps, FH_PERF_NONE);
	KUNIT_EXPECT_EQ(test, rep, vfh_rep_pack(clamps, 300, 600, 0));
	/* No uclamp: no clamp flags, clamps 0. */
	rep = vfh_rep_from_window(&r, 0, 700);
	KUNIT_EXPECT_EQ(test, rep,
			vfh_rep_pack(VIRTIO_FREQHINT_R_PERF_VALID, 0, 0, 700));
	rep = vfh_rep_from_window(&r, 0, FH_PERF_NONE);
	KUNIT_EXPECT_EQ(test, rep, vfh_rep_pack(0, 0, 0, 0));
	/* Idle: IDLE alone, every value 0, whatever else is known. */
	r.idle = true;
	rep = vfh_rep_from_window(&r, clamps, 700);
	KUNIT_EXPECT_EQ(test, rep,
			vfh_rep_pack(VIRTIO_FREQHINT_R_IDLE, 0, 0, 0));
}

static void vfh_test_check_record(struct kunit *test,
				  const struct virtio_freqhint_record *r)
{
	u16 flags = le16_to_cpu(r->flags);
	u16 lo = le16_to_cpu(r->clamp_min), hi = le16_to_cpu(r->clamp_max);
	u16 perf = le16_to_cpu(r->perf);

	/* Known flags only, a value only under its flag, reserved zero. */
	KUNIT_EXPECT_EQ(test, flags & ~VIRTIO_FREQHINT_R_ALL, 0);
	KUNIT_EXPECT_EQ(test, r->reserved, 0);
	if (!(flags & VIRTIO_FREQHINT_R_MIN_VALID))
		KUNIT_EXPECT_EQ(test, lo, 0);
	if (!(flags & VIRTIO_FREQHINT_R_MAX_VALID))
		KUNIT_EXPECT_EQ(test, hi, 0);
	if (!(flags & VIRTIO_FREQHINT_R_PERF_VALID))
		KUNIT_EXPECT_EQ(test, perf, 0);
	/* No value above the scale. */
	KUNIT_EXPECT_LE(test, lo, VIRTIO_FREQHINT_SCALE);
	KUNIT_EXPECT_LE(test, hi, VIRTIO_FREQHINT_SCALE);
	KUNIT_EXPECT_LE(test, perf, VIRTIO_FREQHINT_SCALE);
	/* clamp_max not below clamp_min. */
	if ((flags & VIRTIO_FREQHINT_R_MIN_VALID) &&
	    (flags & VIRTIO_FREQHINT_R_MAX_VALID))
		KUNIT_EXPECT_LE(test, lo, hi);
}

/*
 * The record invariants hold for any packed report, however wrong: every
 * combination of the four flags with out-of-range, inverted and stray
 * values, with and without F_PERF.
 */
static void vfh_test_record_invariants(struct kunit *test)
{
	static const u16 vals[][3] = {
		{ 0, 0, 0 }, { 300, 600, 700 }, { 900, 100, 1024 },
		{ 2047, 2047, 2047 }, { 1024, 1025, 1500 },
	};
	struct virtio_freqhint_record r;
	unsigned int f, i, p;

	for (f = 0; f < 16; f++)
		for (i = 0; i < ARRAY_SIZE(vals); i++)
			for (p = 0; p < 2; p++) {
				memset(&r, 0xff, sizeof(r));
				vfh_record_fill(&r, vfh_rep_pack(f, vals[i][0],
								 vals[i][1],
								vals[i][2]),
						3, 42, p);
				vfh_test_check_record(test, &r);
				/* No perf without F_PERF. */
				if (!p)
					KUNIT_EXPECT_FALSE(test, le16_to_cpu(r.flags) &
							   VIRTIO_FREQHINT_R_PERF_VALID);
				KUNIT_EXPECT_EQ(test, le16_to_cpu(r.vcpu), 3);
				KUNIT_EXPECT_EQ(test, le32_to_cpu(r.seq), 42U);
			}
	/* A sound report goes out as it is. */
	vfh_record_fill(&r, vfh_rep_pack(VIRTIO_FREQHINT_R_ALL &
					~VIRTIO_FREQHINT_R_IDLE, 300, 600, 700),
			1, 7, true);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(r.clamp_min), 300);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(r.clamp_max), 600);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(r.perf), 700);
	/* An inversion reports clamp_max equal to clamp_min. */
	vfh_record_fill(&r, vfh_rep_pack(VIRTIO_FREQHINT_R_MIN_VALID |
					VIRTIO_FREQHINT_R_MAX_VALID, 900, 100, 0),
			1, 8, true);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(r.clamp_max), 900);
}

/* vsock_msg.c: HELLO as the host reads it, byte for byte. */
static void vfh_test_vsock_hello(struct kunit *test)
{
	static const u8 want[16] = { 16, 0, 1, 0, 0x0b, 0, 0, 0, 4, 0 };
	struct freqhint_vsock_hello h;

	memset(&h, 0xa5, sizeof(h));
	vfh_vsock_hello(&h, 0x0b, 4);
	KUNIT_EXPECT_MEMEQ(test, &h, want, sizeof(want));
	vfh_vsock_hello(&h, 0, 0);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(h.num_cpus), 1);
	vfh_vsock_hello(&h, 0, 70000);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(h.num_cpus), U16_MAX);
}

/* A vsock frame's count, at both ends of its range. */
static void vfh_test_vsock_frame(struct kunit *test)
{
	KUNIT_EXPECT_NOT_NULL(test, vfh_vsock_frame_why(0));
	KUNIT_EXPECT_NOT_NULL(test, vfh_vsock_frame_why(1));
	KUNIT_EXPECT_NULL(test, vfh_vsock_frame_why(2));
	KUNIT_EXPECT_NULL(test, vfh_vsock_frame_why(FREQHINT_VSOCK_MAX_FRAME));
	KUNIT_EXPECT_NOT_NULL(test,
			      vfh_vsock_frame_why(FREQHINT_VSOCK_MAX_FRAME + 1));
	KUNIT_EXPECT_NOT_NULL(test, vfh_vsock_frame_why(U32_MAX));
}

static const struct freqhint_vsock_config vfh_test_vcfg = {
	.msg_type = cpu_to_le16(FREQHINT_VSOCK_MSG_CONFIG),
	.version = cpu_to_le16(FREQHINT_VSOCK_VERSION),
	.features = cpu_to_le32(0x0f),
	.config = {
		.num_vcpus = cpu_to_le16(4), .max_records = cpu_to_le16(4),
		.rate_window_ms = cpu_to_le16(10), .perf_step = cpu_to_le16(16),
		.idle_share = cpu_to_le16(20), .reserved = cpu_to_le16(7),
		.event_buf_size = cpu_to_le32(1),
	},
};

#define FH_VBAD(stmt) do {						\
	struct freqhint_vsock_config m = vfh_test_vcfg;			\
	stmt;								\
	KUNIT_EXPECT_NOT_NULL(test, vfh_vsock_config_why(&m, sizeof(m),	\
							0x0f, &c, &f));	\
} while (0)

/* The vsock host's CONFIG, hostile in each field it has. */
static void vfh_test_vsock_config(struct kunit *test)
{
	struct freqhint_vsock_config m = vfh_test_vcfg;
	struct vfh_config c;
	u32 f = 0;
	u32 len;

	KUNIT_ASSERT_NULL(test, vfh_vsock_config_why(&m, sizeof(m), 0x0f,
						     &c, &f));
	KUNIT_EXPECT_EQ(test, f, 0x0fU);
	KUNIT_EXPECT_EQ(test, c.num_vcpus, 4);
	KUNIT_EXPECT_EQ(test, c.max_records, 4);
	KUNIT_EXPECT_EQ(test, c.rate_window_ms, 10);
	KUNIT_EXPECT_EQ(test, c.perf_step, 16);
	KUNIT_EXPECT_EQ(test, c.idle_share, 20);
	/* No buffers over vsock; reserved is ignored, as on the device. */
	KUNIT_EXPECT_EQ(test, c.event_buf_size, 0U);
	KUNIT_EXPECT_EQ(test, c.reserved, 0);
	/* A subset of what was offered is accepted. */
	m.features = cpu_to_le32(0x01);
	KUNIT_EXPECT_NULL(test, vfh_vsock_config_why(&m, sizeof(m), 0x0f,
						     &c, &f));
	KUNIT_EXPECT_EQ(test, f, 0x01U);

	KUNIT_EXPECT_NOT_NULL(test, vfh_vsock_config_why(&vfh_test_vcfg,
							 sizeof(m) - 1, 0x0f,
							 &c, &f));
	KUNIT_EXPECT_NOT_NULL(test, vfh_vsock_config_why(&vfh_test_vcfg,
							 sizeof(m) + 1, 0x0f,
							 &c, &f));
	/* Features the driver did not offer. */
	KUNIT_EXPECT_NOT_NULL(test, vfh_vsock_config_why(&vfh_test_vcfg,
							 sizeof(m), 0x07,
							 &c, &f));
	FH_VBAD(m.msg_type = cpu_to_le16(VIRTIO_FREQHINT_MSG_FEEDBACK));
	FH_VBAD(m.msg_type = cpu_to_le16(FREQHINT_VSOCK_MSG_HELLO));
	FH_VBAD(m.version = cpu_to_le16(2));
	FH_VBAD(m.version = 0);
	FH_VBAD(m.features = cpu_to_le32(BIT(31)));
	FH_VBAD(m.config.num_vcpus = 0);
	FH_VBAD(m.config.num_vcpus = cpu_to_le16(FREQHINT_VSOCK_MAX_VCPUS + 1);
		m.config.max_records = cpu_to_le16(1));
	FH_VBAD(m.config.num_vcpus = cpu_to_le16(U16_MAX));
	FH_VBAD(m.config.max_records = 0);
	FH_VBAD(m.config.max_records = cpu_to_le16(5));
	FH_VBAD(m.config.rate_window_ms = 0);
	FH_VBAD(m.config.perf_step = 0);
	FH_VBAD(m.config.perf_step = cpu_to_le16(VIRTIO_FREQHINT_SCALE + 1));
	FH_VBAD(m.config.idle_share = cpu_to_le16(VIRTIO_FREQHINT_SCALE + 1));

	/*
	 * A record for each of FREQHINT_VSOCK_MAX_VCPUS vCPUs fits one
	 * frame: max_records is taken as the host gives it, and the frame
	 * of that HINTS message is one to read; a record more is not.
	 */
	m = vfh_test_vcfg;
	m.config.num_vcpus = cpu_to_le16(FREQHINT_VSOCK_MAX_VCPUS);
	m.config.max_records = cpu_to_le16(FREQHINT_VSOCK_MAX_VCPUS);
	KUNIT_ASSERT_NULL(test, vfh_vsock_config_why(&m, sizeof(m), 0x0f,
						     &c, &f));
	KUNIT_EXPECT_EQ(test, c.max_records, FREQHINT_VSOCK_MAX_VCPUS);
	len = sizeof(struct virtio_freqhint_hints) +
	      c.max_records * sizeof(struct virtio_freqhint_record);
	KUNIT_EXPECT_NULL(test, vfh_vsock_frame_why(len));
	len += sizeof(struct virtio_freqhint_record);
	KUNIT_EXPECT_NOT_NULL(test, vfh_vsock_frame_why(len));
}

static struct kunit_case vfh_test_cases[] = {
	KUNIT_CASE(vfh_test_bucket),
	KUNIT_CASE(vfh_test_window_exact),
	KUNIT_CASE(vfh_test_window_max_rule),
	KUNIT_CASE(vfh_test_window_share),
	KUNIT_CASE(vfh_test_window_no_clamp),
	KUNIT_CASE(vfh_test_window_inversion),
	KUNIT_CASE(vfh_test_window_idle),
	KUNIT_CASE(vfh_test_window_reset),
	KUNIT_CASE(vfh_test_perf_step),
	KUNIT_CASE(vfh_test_perf_table),
	KUNIT_CASE(vfh_test_publish_rule),
	KUNIT_CASE(vfh_test_rep_pack),
	KUNIT_CASE(vfh_test_slot_sequential),
	KUNIT_CASE_SLOW(vfh_test_slot_concurrent),
	KUNIT_CASE(vfh_test_backdate_early),
	KUNIT_CASE(vfh_test_backdate_busy),
	KUNIT_CASE(vfh_test_busy_from_idle),
	KUNIT_CASE(vfh_test_config_check),
	KUNIT_CASE(vfh_test_feedback_khz_bound),
	KUNIT_CASE(vfh_test_feedback_check),
	KUNIT_CASE(vfh_test_feedback_take_bounded),
	KUNIT_CASE(vfh_test_seq),
	KUNIT_CASE(vfh_test_cur_freq_check),
	KUNIT_CASE(vfh_test_cur_freq_take),
	KUNIT_CASE(vfh_test_cpu_ids),
	KUNIT_CASE(vfh_test_cpu_ids_first),
	KUNIT_CASE(vfh_test_send_delay),
	KUNIT_CASE(vfh_test_scale),
	KUNIT_CASE(vfh_test_flag_composition),
	KUNIT_CASE(vfh_test_record_invariants),
	KUNIT_CASE(vfh_test_vsock_hello),
	KUNIT_CASE(vfh_test_vsock_frame),
	KUNIT_CASE(vfh_test_vsock_config),
	{}
};

static struct kunit_suite vfh_test_suite = {
	.name = "virtio_freqhint",
	.test_cases = vfh_test_cases,
};

kunit_test_suite(vfh_test_suite);

MODULE_DESCRIPTION("KUnit tests for virtio_freqhint");
MODULE_LICENSE("GPL");
