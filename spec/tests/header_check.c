// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Compile the shared headers as strict C11 and check at run time what the
 * _Static_asserts cannot: the constants the spec text quotes.
 */
#include <stdio.h>
#include <linux/virtio_freqhint.h>
#include <freqhint/agent_protocol.h>
#include <linux/freqhint_vsock.h>
#include <freqhint/vsock_host.h>

/* The agent keeps a VM of either transport in the same tables. */
_Static_assert(FH_MAX_VCPUS >= FREQHINT_VSOCK_MAX_VCPUS,
	       "the agent protocol carries every vsock VM");
/* The vsock frame is the largest message: every other one fits it. */
_Static_assert(sizeof(struct virtio_freqhint_feedback) +
	       FREQHINT_VSOCK_MAX_VCPUS *
	       sizeof(struct virtio_freqhint_vcpu_feedback) <=
	       FREQHINT_VSOCK_MAX_FRAME,
	       "a FEEDBACK for FREQHINT_VSOCK_MAX_VCPUS fits a vsock frame");
_Static_assert(sizeof(struct virtio_freqhint_cpu_ids) +
	       FREQHINT_VSOCK_MAX_VCPUS * sizeof(__le64) <=
	       FREQHINT_VSOCK_MAX_FRAME,
	       "a CPU_IDS for FREQHINT_VSOCK_MAX_VCPUS fits a vsock frame");
_Static_assert(sizeof(struct freqhint_vsock_config) <=
	       FREQHINT_VSOCK_MAX_FRAME, "CONFIG fits a vsock frame");

static int failures;

#define EXPECT(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		failures++; \
	} \
} while (0)

/* The shared codec helpers: what QEMU, the agent and the test client rely on. */
static void check_codec(void)
{
	uint8_t h[8];
	uint32_t len;
	uint16_t type;

	fh_frame_hdr_put(h, 0x01020304u, FH_MSG_HINTS);
	EXPECT(h[0] == 0x04 && h[3] == 0x01 && h[4] == FH_MSG_HINTS &&
	       h[5] == 0 && h[6] == 0 && h[7] == 0);
	fh_frame_hdr_put(h, 16, FH_MSG_HINTS);
	EXPECT(fh_frame_hdr_get(h, &len, &type) == FH_CLOSE_NORMAL);
	EXPECT(len == 16 && type == FH_MSG_HINTS);
	fh_frame_hdr_put(h, FH_MAX_PAYLOAD + 1, FH_MSG_HINTS);
	EXPECT(fh_frame_hdr_get(h, &len, &type) == FH_CLOSE_TOO_BIG);
	fh_frame_hdr_put(h, FH_MAX_PAYLOAD, FH_MSG_HINTS);
	EXPECT(fh_frame_hdr_get(h, &len, &type) == FH_CLOSE_NORMAL);
	fh_frame_hdr_put(h, 8, 0);
	EXPECT(fh_frame_hdr_get(h, &len, &type) == FH_CLOSE_UNKNOWN_TYPE);
	fh_frame_hdr_put(h, 8, FH_MSG_MAX + 1);
	EXPECT(fh_frame_hdr_get(h, &len, &type) == FH_CLOSE_UNKNOWN_TYPE);
	fh_frame_hdr_put(h, 8, FH_MSG_PING);
	h[7] = 0x80;
	EXPECT(fh_frame_hdr_get(h, &len, &type) == FH_CLOSE_MALFORMED);
	fh_put_le64(h, 0x0102030405060708ull);
	EXPECT(h[0] == 8 && h[7] == 1 && fh_get_le64(h) == 0x0102030405060708ull);

	/* num_vcpus, vcpu, flags, min, max, perf, reserved, perf_ok */
	EXPECT(!fh_record_why(2, 1, VIRTIO_FREQHINT_R_MIN_VALID |
			      VIRTIO_FREQHINT_R_MAX_VALID, 300, 800, 0, 0, 0));
	EXPECT(fh_record_why(2, 2, 0, 0, 0, 0, 0, 1));
	EXPECT(fh_record_why(2, 0, 0x8000, 0, 0, 0, 0, 1));
	EXPECT(fh_record_why(2, 0, 0, 0, 0, 0, 1, 1));
	EXPECT(fh_record_why(2, 0, 0, 5, 0, 0, 0, 1));
	EXPECT(fh_record_why(2, 0, VIRTIO_FREQHINT_R_MAX_VALID, 0, 1025,
			     0, 0, 1));
	EXPECT(fh_record_why(2, 0, VIRTIO_FREQHINT_R_MIN_VALID |
			     VIRTIO_FREQHINT_R_MAX_VALID, 900, 800, 0, 0, 1));
	EXPECT(fh_record_why(2, 0, VIRTIO_FREQHINT_R_PERF_VALID, 0, 0, 512,
			     0, 0));
	EXPECT(!fh_record_why(2, 0, VIRTIO_FREQHINT_R_PERF_VALID, 0, 0, 512,
			      0, 1));
	EXPECT(fh_range_ok(0, VIRTIO_FREQHINT_SCALE) && !fh_range_ok(2, 1) &&
	       !fh_range_ok(0, VIRTIO_FREQHINT_SCALE + 1));
}

int main(void)
{
	EXPECT(VIRTIO_ID_FREQHINT == 56);
	EXPECT(0x1040 + VIRTIO_ID_FREQHINT <= 0x107f);
	EXPECT(VIRTIO_FREQHINT_SCALE == 1024);
	EXPECT((VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID |
		VIRTIO_FREQHINT_R_PERF_VALID | VIRTIO_FREQHINT_R_IDLE) ==
	       VIRTIO_FREQHINT_R_ALL);
	/* FB_ACTIVE is FB_AGENT's new name: the same bit, the only one. */
	EXPECT(VIRTIO_FREQHINT_FB_ACTIVE == VIRTIO_FREQHINT_FB_AGENT &&
	       VIRTIO_FREQHINT_FB_ACTIVE == VIRTIO_FREQHINT_FB_ALL);
	EXPECT(FH_MAX_PAYLOAD < 65536);
	/* spec/vsock-transport.md VS-4 quotes it */
	EXPECT(FREQHINT_VSOCK_MAX_FRAME == 16392);
	/* and the host's policy it quotes (VS-16, VS-20, VS-21) */
	EXPECT(FREQHINT_VSOCK_HOST_WINDOW_MS == 10);
	EXPECT(FREQHINT_VSOCK_HOST_CONNS_PER_PEER == 2);
	EXPECT(FREQHINT_VSOCK_HOST_MSGS_PER_S == 216);
	EXPECT(FH_CLOSE_REASON_MAX == FH_CLOSE_OVERLOAD);
	check_codec();
	EXPECT(FH_PROTO_VERSION == 2);
	EXPECT(VIRTIO_FREQHINT_MAX_KHZ < 0x7fffffff);
	EXPECT((VIRTIO_FREQHINT_MPIDR_AFF_MASK >> 32) == 0xff);
	printf("headers: %zu-byte record, %zu-byte config, %zu-byte feedback header, %zu-byte max frame payload\n",
	       sizeof(struct virtio_freqhint_record),
	       sizeof(struct virtio_freqhint_config),
	       sizeof(struct virtio_freqhint_feedback), (size_t)FH_MAX_PAYLOAD);
	return failures ? 1 : 0;
}
