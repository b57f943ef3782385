/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/*
 * freqhint over virtio-vsock: guest-visible interface, version 1.
 *
 * The normative text is spec/vsock-transport.md.  The same driver that
 * reports through a virtio-freqhint device reports over a vsock stream
 * connection where no such device exists: the messages are the device's
 * own buffers (<linux/virtio_freqhint.h>), each carried in one frame, and
 * two handshake messages stand in for feature negotiation and the
 * configuration space.
 *
 * A frame is a __le32 byte count followed by that many bytes: one message,
 * which starts, like every device message, with its __le16 msg_type.
 * All multi-byte fields are little-endian.
 *
 * How much a host takes from a guest (rates, connections, timeouts) is the
 * host's policy, not part of this interface (spec/vsock-transport.md §5.4).
 */
#ifndef _LINUX_FREQHINT_VSOCK_H
#define _LINUX_FREQHINT_VSOCK_H

#include <linux/types.h>
#include <linux/virtio_freqhint.h>

/*
 * The host's port.  Below 1024, so that only a privileged host process
 * (CAP_NET_BIND_SERVICE, or a socket handed over by the service manager)
 * can listen on it; no registry of vsock ports exists.
 */
#define FREQHINT_VSOCK_PORT		853
/* The host's CID as a guest addresses it (VMADDR_CID_HOST). */
#define FREQHINT_VSOCK_HOST_CID		2

#define FREQHINT_VSOCK_VERSION		1

/*
 * Message types beside the device's (VIRTIO_FREQHINT_MSG_HINTS,
 * _CPU_IDS, _FEEDBACK keep their values and layouts).
 */
#define FREQHINT_VSOCK_MSG_HELLO	16	/* driver -> host, first frame */
#define FREQHINT_VSOCK_MSG_CONFIG	17	/* host -> driver, answer to HELLO */

/* vCPUs of one guest this transport carries. */
#define FREQHINT_VSOCK_MAX_VCPUS	1024
/*
 * Largest frame payload either side sends or accepts; a larger count
 * closes the connection.  It is the largest message: HINTS with a record
 * for each of FREQHINT_VSOCK_MAX_VCPUS vCPUs (16392 bytes), so a guest's
 * whole state goes in one frame.  FEEDBACK (8816 bytes) and CPU_IDS (8200)
 * at that many vCPUs are smaller.
 */
#define FREQHINT_VSOCK_MAX_FRAME					\
	(sizeof(struct virtio_freqhint_hints) +				\
	 FREQHINT_VSOCK_MAX_VCPUS * sizeof(struct virtio_freqhint_record))

/* Frame header. */
struct freqhint_vsock_frame {
	__le32 len;		/* message bytes that follow, 2 .. MAX_FRAME */
};

/* First frame of a connection, driver -> host. */
struct freqhint_vsock_hello {
	__le16 msg_type;	/* FREQHINT_VSOCK_MSG_HELLO */
	__le16 version;		/* FREQHINT_VSOCK_VERSION */
	__le32 features;	/* VIRTIO_FREQHINT_F_* the driver supports */
	__le16 num_cpus;	/* the guest's possible CPUs, >= 1 */
	__u8 reserved[6];	/* zero */
};

/*
 * Answer to HELLO, host -> driver: the features the host accepted (a
 * subset of those offered) and what a device's configuration space would
 * hold.  With VIRTIO_FREQHINT_F_CPU_ID accepted, CPU_IDS follows; with
 * VIRTIO_FREQHINT_F_FEEDBACK, a FEEDBACK snapshot follows.
 */
struct freqhint_vsock_config {
	__le16 msg_type;	/* FREQHINT_VSOCK_MSG_CONFIG */
	__le16 version;		/* FREQHINT_VSOCK_VERSION */
	__le32 features;	/* accepted VIRTIO_FREQHINT_F_* */
	struct virtio_freqhint_config config;
};

#endif /* _LINUX_FREQHINT_VSOCK_H */
