// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Compile the shared headers as strict C11 and check at run time what the
 * _Static_asserts cannot: the constants the spec text quotes.
 */
#include <stdio.h>
#include <linux/virtio_freqhint.h>
#include <freqhint/agent_protocol.h>

static int failures;

#define EXPECT(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		failures++; \
	} \
} while (0)

int main(void)
{
	EXPECT(VIRTIO_ID_FREQHINT == 63);
	EXPECT(0x1040 + VIRTIO_ID_FREQHINT <= 0x107f);
	EXPECT(VIRTIO_FREQHINT_SCALE == 1024);
	EXPECT((VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID |
		VIRTIO_FREQHINT_R_PERF_VALID | VIRTIO_FREQHINT_R_IDLE) ==
	       VIRTIO_FREQHINT_R_ALL);
	EXPECT(FH_MAX_PAYLOAD < 65536);
	EXPECT(FH_CLOSE_REASON_MAX == FH_CLOSE_OVERLOAD);
	printf("headers: %zu-byte record, %zu-byte config, %zu-byte max frame payload\n",
	       sizeof(struct virtio_freqhint_record),
	       sizeof(struct virtio_freqhint_config), (size_t)FH_MAX_PAYLOAD);
	return failures ? 1 : 0;
}
