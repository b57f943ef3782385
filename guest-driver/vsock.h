/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * virtio_freqhint over vsock: the transport's own messages (vsock_msg.c,
 * pure, KUnit-tested), used by the link (vsock.c).
 */
#ifndef _FREQHINT_VSOCK_H
#define _FREQHINT_VSOCK_H

#include <linux/freqhint_vsock.h>
#include <linux/types.h>

struct vfh_config;

void vfh_vsock_hello(struct freqhint_vsock_hello *h, u32 features,
		     unsigned int num_cpus);
const char *vfh_vsock_frame_why(u32 len);
const char *vfh_vsock_config_why(const void *msg, size_t len, u32 offered,
				 struct vfh_config *c, u32 *features);

#endif /* _FREQHINT_VSOCK_H */
