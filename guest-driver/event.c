// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint: the device's configuration and the event queue's
 * messages (CPU_IDS, FEEDBACK, CUR_FREQ), checked against the v1 ABI.  Pure: no
 * device access, no locks, no allocation, so it can be unit-tested
 * (virtio_freqhint_test.c) with any bytes.
 *
 * The host is trusted less than the guest kernel: a message with a value
 * out of range is refused as a whole, never clamped into something the
 * host did not mean.
 */
#include <kunit/visibility.h>
#include <linux/export.h>
#include <linux/minmax.h>
#include <linux/stddef.h>
#include <linux/string.h>

#include "freqhint.h"

static_assert(sizeof(struct virtio_freqhint_config) == 16);
static_assert(sizeof(struct virtio_freqhint_record) == 16);
static_assert(sizeof(struct virtio_freqhint_hints) == 8);
static_assert(sizeof(struct virtio_freqhint_cpu_ids) == 8);
static_assert(sizeof(struct virtio_freqhint_freq_class) == 76);
static_assert(sizeof(struct virtio_freqhint_vcpu_feedback) == 8);
static_assert(sizeof(struct virtio_freqhint_feedback) == 624);
static_assert(sizeof(struct virtio_freqhint_cur_freq) == 8);
/* vfh_head_why() reads both as two le16s. */
static_assert(offsetof(struct virtio_freqhint_cpu_ids, num_vcpus) == 2);
static_assert(offsetof(struct virtio_freqhint_cur_freq, num_vcpus) == 2);

static size_t vfh_cpu_ids_size(unsigned int num_vcpus)
{
	return sizeof(struct virtio_freqhint_cpu_ids) + num_vcpus * sizeof(__le64);
}

static size_t vfh_feedback_size(unsigned int num_vcpus)
{
	return sizeof(struct virtio_freqhint_feedback) +
	       num_vcpus * sizeof(struct virtio_freqhint_vcpu_feedback);
}

static size_t vfh_cur_freq_size(unsigned int num_vcpus)
{
	return sizeof(struct virtio_freqhint_cur_freq) + num_vcpus * sizeof(__le32);
}

/*
 * The configuration, read once at probe (@c in host order).  @eventq: the
 * event queue exists, so event_buf_size must hold each message (CUR_FREQ,
 * 8 + 4 bytes a vCPU, is shorter than FEEDBACK).
 * reserved is ignored: a later device may use it behind a feature.
 * Returns NULL if the device is one to talk to, else why not.
 */
const char *vfh_config_why(const struct vfh_config *c, bool eventq)
{
	if (!c->num_vcpus)
		return "num_vcpus is 0";
	if (!c->max_records || c->max_records > c->num_vcpus)
		return "max_records out of range";
	if (!c->rate_window_ms)
		return "rate_window_ms is 0";
	if (!c->perf_step || c->perf_step > VIRTIO_FREQHINT_SCALE)
		return "perf_step out of range";
	if (c->idle_share > VIRTIO_FREQHINT_SCALE)
		return "idle_share out of range";
	if (eventq &&
	    (c->event_buf_size < vfh_cpu_ids_size(c->num_vcpus) ||
	     c->event_buf_size < vfh_feedback_size(c->num_vcpus) ||
	     c->event_buf_size > FH_EVENT_BUF_MAX))
		return "event_buf_size out of range";
	return NULL;
}
EXPORT_SYMBOL_IF_KUNIT(vfh_config_why);

/*
 * One host frequency class: 1 <= min <= max <= VIRTIO_FREQHINT_MAX_KHZ
 * (which keeps every value clear of cpufreq's table markers and of the S32
 * range of frequency QoS), a perf step, and at most MAX_FREQS frequencies,
 * strictly ascending within [min, max], zero after the last.
 */
static bool vfh_class_valid(const struct virtio_freqhint_freq_class *fc)
{
	u32 min = le32_to_cpu(fc->min_khz), max = le32_to_cpu(fc->max_khz);
	u16 step = le16_to_cpu(fc->perf_step), n = le16_to_cpu(fc->num_freqs);
	u32 prev = 0;
	unsigned int i;

	if (!min || min > max || max > VIRTIO_FREQHINT_MAX_KHZ)
		return false;
	if (!step || step > VIRTIO_FREQHINT_SCALE || n > VIRTIO_FREQHINT_MAX_FREQS)
		return false;
	for (i = 0; i < VIRTIO_FREQHINT_MAX_FREQS; i++) {
		u32 f = le32_to_cpu(fc->freqs_khz[i]);

		if (i >= n) {
			if (f)
				return false;
			continue;
		}
		if (f < min || f > max || f <= prev)
			return false;
		prev = f;
	}
	return true;
}

/*
 * A FEEDBACK message of @len bytes: NULL if the whole snapshot is valid,
 * else why it is dropped.  @host_freq: F_HOST_FREQ was negotiated.
 */
const char *vfh_feedback_why(const void *buf, size_t len, u16 num_vcpus,
			     bool host_freq)
{
	const struct virtio_freqhint_feedback *fb = buf;
	u16 nclasses, of, oc;
	unsigned int i;

	if (len != vfh_feedback_size(num_vcpus))
		return "FEEDBACK length";
	if (le16_to_cpu(fb->msg_type) != VIRTIO_FREQHINT_MSG_FEEDBACK)
		return "not a FEEDBACK";
	if (le16_to_cpu(fb->num_vcpus) != num_vcpus)
		return "num_vcpus differs from the configuration";
	if (le16_to_cpu(fb->flags) & ~VIRTIO_FREQHINT_FB_ALL)
		return "unknown flags";
	of = le16_to_cpu(fb->operator_floor);
	oc = le16_to_cpu(fb->operator_ceiling);
	if (of > oc || oc > VIRTIO_FREQHINT_SCALE)
		return "operator range";
	nclasses = le16_to_cpu(fb->num_freq_classes);
	if (nclasses > (host_freq ? VIRTIO_FREQHINT_MAX_FREQ_CLASSES : 0))
		return "num_freq_classes out of range";
	for (i = 0; i < nclasses; i++)
		if (!vfh_class_valid(&fb->classes[i]))
			return "frequency class out of range";
	if (memchr_inv(&fb->classes[nclasses], 0,
		       (VIRTIO_FREQHINT_MAX_FREQ_CLASSES - nclasses) *
		       sizeof(fb->classes[0])))
		return "unused frequency class not zero";
	for (i = 0; i < num_vcpus; i++) {
		const struct virtio_freqhint_vcpu_feedback *v = &fb->vcpus[i];
		u16 fl = le16_to_cpu(v->floor), ce = le16_to_cpu(v->ceiling);

		if (fl > ce || ce > VIRTIO_FREQHINT_SCALE)
			return "granted range";
		if (v->freq_class != VIRTIO_FREQHINT_NO_FREQ_CLASS &&
		    v->freq_class >= nclasses)
			return "freq_class out of range";
		if (v->reserved[0] || v->reserved[1] || v->reserved[2])
			return "reserved field not zero";
	}
	return NULL;
}
EXPORT_SYMBOL_IF_KUNIT(vfh_feedback_why);

static void vfh_freq_from_class(const struct virtio_freqhint_freq_class *fc,
				struct vfh_freq *f)
{
	unsigned int i;

	memset(f, 0, sizeof(*f));
	f->min_khz = le32_to_cpu(fc->min_khz);
	f->max_khz = le32_to_cpu(fc->max_khz);
	f->n = min_t(u16, le16_to_cpu(fc->num_freqs), VIRTIO_FREQHINT_MAX_FREQS);
	for (i = 0; i < f->n; i++)
		f->khz[i] = le32_to_cpu(fc->freqs_khz[i]);
}

/*
 * A checked FEEDBACK snapshot becomes the driver's state.  @fb is the
 * caller's private copy (main.c), never the device's buffer; the counts
 * are still bounded by the arrays, so that a snapshot taken unchecked
 * cannot write past them.
 */
void vfh_feedback_take(struct vfh_host *h,
		       const struct virtio_freqhint_feedback *fb,
		       u16 num_vcpus)
{
	unsigned int i;

	h->seq = le32_to_cpu(fb->seq);
	h->agent = le16_to_cpu(fb->flags) & VIRTIO_FREQHINT_FB_AGENT;
	h->operator_floor = le16_to_cpu(fb->operator_floor);
	h->operator_ceiling = le16_to_cpu(fb->operator_ceiling);
	h->num_freq_classes = min_t(u16, le16_to_cpu(fb->num_freq_classes),
				    VIRTIO_FREQHINT_MAX_FREQ_CLASSES);
	for (i = 0; i < h->num_freq_classes; i++) {
		vfh_freq_from_class(&fb->classes[i], &h->classes[i]);
		h->class_step[i] = le16_to_cpu(fb->classes[i].perf_step);
	}
	for (i = 0; i < num_vcpus; i++) {
		h->grants[i].floor = le16_to_cpu(fb->vcpus[i].floor);
		h->grants[i].ceiling = le16_to_cpu(fb->vcpus[i].ceiling);
		h->freq_class[i] = fb->vcpus[i].freq_class;
	}
}
EXPORT_SYMBOL_IF_KUNIT(vfh_feedback_take);

/* Serial-number order of snapshot sequence numbers (RFC 1982 style). */
bool vfh_seq_newer(u32 seq, u32 last)
{
	return (s32)(seq - last) > 0;
}
EXPORT_SYMBOL_IF_KUNIT(vfh_seq_newer);

/*
 * The header both CPU_IDS and CUR_FREQ start with (le16 msg_type, le16
 * num_vcpus), and their length @len against @size: NULL if they hold,
 * else why not (@len_why, @type_why: the message's own words).
 */
static const char *vfh_head_why(const void *buf, size_t len, size_t size,
				u16 type, u16 num_vcpus, const char *len_why,
			       const char *type_why)
{
	const __le16 *head = buf;

	if (len != size)
		return len_why;
	if (le16_to_cpu(head[0]) != type)
		return type_why;
	if (le16_to_cpu(head[1]) != num_vcpus)
		return "num_vcpus differs from the configuration";
	return NULL;
}

/* A CPU_IDS message of @len bytes: NULL if usable, else why not. */
const char *vfh_cpu_ids_why(const void *buf, size_t len, u16 num_vcpus)
{
	const struct virtio_freqhint_cpu_ids *m = buf;
	const char *why;

	why = vfh_head_why(buf, len, vfh_cpu_ids_size(num_vcpus),
			   VIRTIO_FREQHINT_MSG_CPU_IDS, num_vcpus,
			  "CPU_IDS length", "not a CPU_IDS");
	if (why)
		return why;
	if (memchr_inv(m->reserved, 0, sizeof(m->reserved)))
		return "reserved field not zero";
	return NULL;
}
EXPORT_SYMBOL_IF_KUNIT(vfh_cpu_ids_why);

/*
 * A checked CPU_IDS message into @ids[@num_vcpus]; whether it was taken.
 * Only the first after DRIVER_OK is: records already went out
 * under its indexes, and the host keeps the last hint of each.
 */
bool vfh_cpu_ids_take(u64 *ids, bool have_ids,
		      const struct virtio_freqhint_cpu_ids *m, u16 num_vcpus)
{
	unsigned int i;

	if (have_ids)
		return false;
	for (i = 0; i < num_vcpus; i++)
		ids[i] = le64_to_cpu(m->cpu_id[i]);
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(vfh_cpu_ids_take);

/* The index whose id is @id in @ids[@n], or -ENOENT. */
int vfh_cpu_ids_find(const u64 *ids, unsigned int n, u64 id)
{
	unsigned int i;

	if (id == VIRTIO_FREQHINT_CPU_ID_NONE)
		return -ENOENT;
	for (i = 0; i < n; i++)
		if (ids[i] == id)
			return i;
	return -ENOENT;
}
EXPORT_SYMBOL_IF_KUNIT(vfh_cpu_ids_find);

/*
 * A CUR_FREQ message of @len bytes (6.8a): NULL if it can be taken, else
 * why it is dropped whole.  Its values are checked one by one when taken.
 */
const char *vfh_cur_freq_why(const void *buf, size_t len, u16 num_vcpus)
{
	return vfh_head_why(buf, len, vfh_cur_freq_size(num_vcpus),
			   VIRTIO_FREQHINT_MSG_CUR_FREQ, num_vcpus,
			   "CUR_FREQ length", "not a CUR_FREQ");
}
EXPORT_SYMBOL_IF_KUNIT(vfh_cur_freq_why);

/*
 * A checked CUR_FREQ into @khz[@num_vcpus], against the classes of the
 * latest applied snapshot @h: a value other than 0 outside its vCPU's
 * class (or for a vCPU without one) is taken as 0, unknown, not clamped,
 * as the device specification asks.  Returns how many values were so
 * taken.
 */
unsigned int vfh_cur_freq_take(u32 *khz, const struct vfh_host *h,
			       const struct virtio_freqhint_cur_freq *m,
			       u16 num_vcpus)
{
	unsigned int i, bad = 0;

	for (i = 0; i < num_vcpus; i++) {
		u32 v = le32_to_cpu(m->cur_khz[i]);
		u8 c = h->freq_class[i];

		if (v && (c >= h->num_freq_classes ||
			  v < h->classes[c].min_khz ||
			  v > h->classes[c].max_khz)) {
			v = 0;
			bad++;
		}
		khz[i] = v;
	}
	return bad;
}
EXPORT_SYMBOL_IF_KUNIT(vfh_cur_freq_take);
