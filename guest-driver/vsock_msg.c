// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint over vsock: the transport's own messages, built and
 * checked.  Pure: no socket, no
 * locks, no allocation, so it can be unit-tested (virtio_freqhint_test.c)
 * with any bytes.  The device's messages inside the frames are event.c's.
 *
 * The host is trusted less than the guest kernel: a frame or a CONFIG
 * that breaks a rule ends the connection (vsock.c); nothing is clamped
 * into something the host did not mean.
 */
#include <kunit/visibility.h>
#include <linux/export.h>
#include <linux/minmax.h>
#include <linux/string.h>

#include "freqhint.h"
#include "vsock.h"

static_assert(sizeof(struct freqhint_vsock_frame) == 4);
static_assert(sizeof(struct freqhint_vsock_hello) == 16);
static_assert(sizeof(struct freqhint_vsock_config) == 24);

/* A HINTS message of max_records <= num_vcpus records fits one frame. */
static_assert(FREQHINT_VSOCK_MAX_FRAME >=
	      sizeof(struct virtio_freqhint_hints) +
	      FREQHINT_VSOCK_MAX_VCPUS * sizeof(struct virtio_freqhint_record));

/* The driver's first frame's message. */
void vfh_vsock_hello(struct freqhint_vsock_hello *h, u32 features,
		     unsigned int num_cpus)
{
	memset(h, 0, sizeof(*h));
	h->msg_type = cpu_to_le16(FREQHINT_VSOCK_MSG_HELLO);
	h->version = cpu_to_le16(FREQHINT_VSOCK_VERSION);
	h->features = cpu_to_le32(features);
	h->num_cpus = cpu_to_le16(clamp_t(unsigned int, num_cpus, 1, U16_MAX));
}
EXPORT_SYMBOL_IF_KUNIT(vfh_vsock_hello);

/* A frame's byte count: NULL if it may be read, else why not. */
const char *vfh_vsock_frame_why(u32 len)
{
	if (len < sizeof(__le16))
		return "frame shorter than a message type";
	if (len > FREQHINT_VSOCK_MAX_FRAME)
		return "frame longer than FREQHINT_VSOCK_MAX_FRAME";
	return NULL;
}
EXPORT_SYMBOL_IF_KUNIT(vfh_vsock_frame_why);

/*
 * The host's answer to HELLO, @len bytes: NULL if it is one to
 * talk to, with the configuration in *@c (host order; event_buf_size and
 * reserved zero: no buffers here, and reserved is ignored as on the
 * device) and the accepted features in *@features; else why not.
 * @offered: what HELLO offered.
 */
const char *vfh_vsock_config_why(const void *msg, size_t len, u32 offered,
				 struct vfh_config *c, u32 *features)
{
	const struct freqhint_vsock_config *m = msg;
	const char *why;
	u32 f;

	if (len != sizeof(*m))
		return "CONFIG of the wrong length";
	if (le16_to_cpu(m->msg_type) != FREQHINT_VSOCK_MSG_CONFIG)
		return "the first message is not CONFIG";
	if (le16_to_cpu(m->version) != FREQHINT_VSOCK_VERSION)
		return "unknown version";
	f = le32_to_cpu(m->features);
	if (f & ~offered)
		return "features that were not offered";
	*c = (struct vfh_config){
		.num_vcpus = le16_to_cpu(m->config.num_vcpus),
		.max_records = le16_to_cpu(m->config.max_records),
		.rate_window_ms = le16_to_cpu(m->config.rate_window_ms),
		.perf_step = le16_to_cpu(m->config.perf_step),
		.idle_share = le16_to_cpu(m->config.idle_share),
	};
	why = vfh_config_why(c, false);
	if (why)
		return why;
	if (c->num_vcpus > FREQHINT_VSOCK_MAX_VCPUS)
		return "num_vcpus above FREQHINT_VSOCK_MAX_VCPUS";
	*features = f;
	return NULL;
}
EXPORT_SYMBOL_IF_KUNIT(vfh_vsock_config_why);
