// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Kernel-context compile check of the shared device header: the guest
 * driver includes <linux/virtio_freqhint.h> next to the kernel's own
 * headers, so it must build there (kernel types, -Werror, every kernel the
 * driver supports) with the layout the device expects.  Never loaded.
 */
#include <linux/build_bug.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/stddef.h>
#include <linux/virtio_config.h>
#include <linux/virtio_freqhint.h>

/* Fill one record the way a driver does; the compiler checks the types. */
static u16 header_check_fill(struct virtio_freqhint_record *r, u16 vcpu)
{
	r->vcpu = cpu_to_le16(vcpu);
	r->flags = cpu_to_le16(VIRTIO_FREQHINT_R_MIN_VALID |
			       VIRTIO_FREQHINT_R_MAX_VALID);
	r->clamp_min = cpu_to_le16(0);
	r->clamp_max = cpu_to_le16(VIRTIO_FREQHINT_SCALE);
	r->perf = 0;
	r->reserved = 0;
	r->seq = cpu_to_le32(1);
	return le16_to_cpu(r->flags);
}

static int __init header_check_init(void)
{
	struct virtio_freqhint_record r;

	BUILD_BUG_ON(sizeof(struct virtio_freqhint_config) != 16);
	BUILD_BUG_ON(sizeof(struct virtio_freqhint_record) != 16);
	BUILD_BUG_ON(sizeof(struct virtio_freqhint_hints) != 8);
	BUILD_BUG_ON(sizeof(struct virtio_freqhint_cpu_ids) != 8);
	BUILD_BUG_ON(sizeof(struct virtio_freqhint_freq_class) != 76);
	BUILD_BUG_ON(sizeof(struct virtio_freqhint_vcpu_feedback) != 8);
	BUILD_BUG_ON(sizeof(struct virtio_freqhint_feedback) != 624);
	BUILD_BUG_ON(VIRTIO_FREQHINT_SCALE != SCHED_CAPACITY_SCALE);
	BUILD_BUG_ON(VIRTIO_FREQHINT_F_CPU_ID >= VIRTIO_TRANSPORT_F_START);
	BUILD_BUG_ON(VIRTIO_FREQHINT_MAX_KHZ > S32_MAX);
	return header_check_fill(&r, 0) == 0 ? -EINVAL : 0;
}

static void __exit header_check_exit(void)
{
}

module_init(header_check_init);
module_exit(header_check_exit);
MODULE_DESCRIPTION("freqhint shared header compile check");
MODULE_LICENSE("GPL");
