/* SPDX-License-Identifier: GPL-2.0-or-later OR BSD-3-Clause */
/*
 * freqhint over virtio-vsock: the host front end's policy
 * (spec/vsock-transport.md §5).
 *
 * Not part of the guest-visible interface (<linux/freqhint_vsock.h>): a
 * driver learns the window, perf_step and idle_share from CONFIG, and the
 * bounds below only decide when the host closes a connection.  A host may
 * choose others without a new transport version.
 */
#ifndef FREQHINT_VSOCK_HOST_H
#define FREQHINT_VSOCK_HOST_H

#include <stddef.h>
#include <linux/freqhint_vsock.h>

/* What the host gives in CONFIG (the device's defaults). */
#define FREQHINT_VSOCK_HOST_WINDOW_MS		10	/* rate_window_ms */
#define FREQHINT_VSOCK_HOST_PERF_STEP		16
#define FREQHINT_VSOCK_HOST_IDLE_SHARE		20

/*
 * Bounds per peer, a CID or a hybrid socket (VS-20 to VS-25).  Exceeding
 * one closes that peer's connection only.
 */
/* Open connections of one peer: one established, one reconnecting. */
#define FREQHINT_VSOCK_HOST_CONNS_PER_PEER	2
/* HELLO must arrive within this of the connection. */
#define FREQHINT_VSOCK_HOST_HELLO_TIMEOUT_MS	5000
/*
 * Per second of a connection: messages (a driver sends at most one HINTS
 * per window, twice that is allowed, plus a handshake's worth), records
 * (one per vCPU per window, twice that), and bytes (messages of the
 * largest size the driver's num_cpus allows, frame header included).
 */
#define FREQHINT_VSOCK_HOST_MSGS_PER_S \
	(2 * 1000 / FREQHINT_VSOCK_HOST_WINDOW_MS + 16)
#define FREQHINT_VSOCK_HOST_RECORDS_PER_S(num_cpus) \
	(2 * 1000 / FREQHINT_VSOCK_HOST_WINDOW_MS * (num_cpus))
#define FREQHINT_VSOCK_HOST_BYTES_PER_S(num_cpus) \
	(FREQHINT_VSOCK_HOST_MSGS_PER_S * \
	 (sizeof(struct freqhint_vsock_frame) + \
	  sizeof(struct virtio_freqhint_hints) + \
	  (num_cpus) * sizeof(struct virtio_freqhint_record)))
/* Output (CONFIG, FEEDBACK) a guest leaves unread this long: closed. */
#define FREQHINT_VSOCK_HOST_WRITE_TIMEOUT_MS	5000
/*
 * After the host closed a peer's connection for a fault (malformed input,
 * a bound exceeded), that peer's new connections are refused for this
 * long, doubling with each fault up to the maximum; an orderly close
 * clears it.
 */
#define FREQHINT_VSOCK_HOST_PENALTY_MS		1000
#define FREQHINT_VSOCK_HOST_PENALTY_MAX_MS	60000

#endif /* FREQHINT_VSOCK_HOST_H */
