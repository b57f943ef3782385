// SPDX-License-Identifier: GPL-2.0-only
/*
 * A host side of spec/vsock-transport.md for the module's own tests
 * (tests/vsock-fakehost.sh), in the guest over vsock_loopback: it checks what the
 * driver sends against the protocol and says it on stdout, one line per
 * event, and it misbehaves on request, which the real front end
 * (freqhint-vsockd) never does.  Not a host: no agent, no merge.
 *
 *   fh-fake-vsock-host [-n VCPUS] [-a ACCEPT] [-c CEILING] [-k FRAMES]
 *                 [-u FRAMES] [-b BAD] [-s MS] [-B BYTES] [-p PORT]
 *                 [-f FIFO] [-e MS]
 *     -n   num_vcpus in CONFIG (default 4); CPU_IDS gives index i the
 *          APIC ID i (QEMU's q35)
 *     -a   the features accepted, of those HELLO offered (default 0xf)
 *     -c   the operator ceiling and every vCPU's granted ceiling (default
 *          768 = 75 %); with HOST_FREQ one class, 800 MHz - 3.2 GHz in
 *          four steps
 *     -k   close each connection after FRAMES HINTS messages (0: never)
 *     -u   after FRAMES HINTS messages, a second FEEDBACK with ceiling 512
 *     -b   the first connection misbehaves: "version" (CONFIG version 2),
 *          "type" (a HINTS message to the driver), "long" (a frame count
 *          above the maximum), "short" (FEEDBACK one byte short),
 *          "silent" (no CONFIG at all)
 *     -s   after 10 HINTS messages, read nothing for MS ms (a slow host)
 *     -B   the connections' receive buffer (SO_VM_SOCKETS_BUFFER_SIZE)
 *     -f   read CUR_FREQ requests from FIFO, one a line, and send each to
 *          the connection of the moment: "SEQ KHZ0 KHZ1 ... [short]", the
 *          message's seq and a value for each vCPU index (missing ones 0);
 *          "short" sends it one byte short.  Accept CUR_FREQ (0x10) with -a.
 *     -e   besides, a CUR_FREQ every MS ms (a host whose frequency changes
 *          all the time): every vCPU at 1.6 and 2.4 GHz in turn, seq
 *          counting up from 1000000 (above -f's); counted, not printed
 * (-s and -B are not used by vsock-fakehost.sh: over vsock_loopback, a
 * 6.12.95 receiver that reads nothing drops the driver's small packets by
 * its per-packet overhead long before the driver's credit runs out, so a
 * stalled host tests the kernel's accounting, not the driver.)
 * Lines: CONNECT n, HELLO version= features= num_cpus=, REC n vcpu= flags=
 * min= max= perf= seq=, CUR_FREQ n seq= len=, CLOSED n frames= span_us=
 * min_gap_us=, ERROR ....
 * Exits on SIGTERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <endian.h>
#include <sys/socket.h>
#include <linux/vm_sockets.h>
#include <linux/freqhint_vsock.h>

static unsigned int nvcpus = 4, accept_mask = 0xf, ceiling = 768;
static unsigned int close_after, update_after, stall_ms;
static const char *bad;
static int fifo = -1;
static unsigned int every_ms;
static uint32_t every_seq = 1000000;
static uint64_t every_next;
static unsigned long every_sent;

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
}

static int read_all(int fd, void *buf, size_t len)
{
	size_t have = 0;

	while (have < len) {
		ssize_t n = read(fd, (char *)buf + have, len - have);

		if (n <= 0)
			return -1;
		have += n;
	}
	return 0;
}

static int send_frame(int fd, const void *msg, uint32_t len)
{
	uint32_t le = htole32(len);

	if (write(fd, &le, 4) != 4 || write(fd, msg, len) != (ssize_t)len)
		return -1;
	return 0;
}

/* One frame into buf (at most FREQHINT_VSOCK_MAX_FRAME); its length, or -1. */
static long read_frame(int fd, void *buf)
{
	uint32_t le, len;

	if (read_all(fd, &le, 4))
		return -1;
	len = le32toh(le);
	if (len < 2 || len > FREQHINT_VSOCK_MAX_FRAME) {
		printf("ERROR frame count %u\n", len);
		return -1;
	}
	if (read_all(fd, buf, len))
		return -1;
	return len;
}

static int send_feedback(int fd, uint32_t seq, unsigned int ceil, int host_freq,
			 int short_by)
{
	size_t len = sizeof(struct virtio_freqhint_feedback) +
		     nvcpus * sizeof(struct virtio_freqhint_vcpu_feedback);
	struct virtio_freqhint_feedback *fb = calloc(1, len);
	unsigned int i;
	int ret;

	fb->msg_type = htole16(VIRTIO_FREQHINT_MSG_FEEDBACK);
	fb->flags = htole16(VIRTIO_FREQHINT_FB_ACTIVE);
	fb->seq = htole32(seq);
	fb->operator_ceiling = htole16(ceil);
	fb->num_vcpus = htole16(nvcpus);
	if (host_freq) {
		struct virtio_freqhint_freq_class *c = &fb->classes[0];

		fb->num_freq_classes = htole16(1);
		c->min_khz = htole32(800000);
		c->max_khz = htole32(3200000);
		c->perf_step = htole16(256);
		c->num_freqs = htole16(4);
		for (i = 0; i < 4; i++)
			c->freqs_khz[i] = htole32(800000 * (i + 1));
	}
	for (i = 0; i < nvcpus; i++) {
		fb->vcpus[i].ceiling = htole16(ceil);
		fb->vcpus[i].freq_class = host_freq ? 0 :
					  VIRTIO_FREQHINT_NO_FREQ_CLASS;
	}
	ret = send_frame(fd, fb, len - short_by);
	free(fb);
	return ret;
}

static struct virtio_freqhint_cur_freq *cur_freq_msg(size_t len)
{
	struct virtio_freqhint_cur_freq *m = calloc(1, len);

	m->msg_type = htole16(VIRTIO_FREQHINT_MSG_CUR_FREQ);
	m->num_vcpus = htole16(nvcpus);
	return m;
}

/* -e: the next periodic CUR_FREQ. */
static int send_cur_freq_tick(int fd)
{
	size_t len = sizeof(struct virtio_freqhint_cur_freq) + 4 * nvcpus;
	struct virtio_freqhint_cur_freq *m = cur_freq_msg(len);
	unsigned int i;
	int ret;

	m->seq = htole32(++every_seq);
	for (i = 0; i < nvcpus; i++)
		m->cur_khz[i] = htole32(every_seq & 1 ? 1600000 : 2400000);
	ret = send_frame(fd, m, len);
	free(m);
	every_sent++;
	return ret;
}

/* One request line from -f's FIFO: a CUR_FREQ to the driver. */
static int send_cur_freq(int fd, unsigned int conn, char *line)
{
	size_t len = sizeof(struct virtio_freqhint_cur_freq) + 4 * nvcpus;
	struct virtio_freqhint_cur_freq *m = cur_freq_msg(len);
	char *tok, *save;
	unsigned int i = 0;
	int ret;

	tok = strtok_r(line, " \t\n", &save);
	m->seq = htole32(tok ? strtoul(tok, NULL, 0) : 0);
	while ((tok = strtok_r(NULL, " \t\n", &save))) {
		if (!strcmp(tok, "short"))
			len--;
		else if (i < nvcpus)
			m->cur_khz[i++] = htole32(strtoul(tok, NULL, 0));
	}
	ret = send_frame(fd, m, len);
	printf("CUR_FREQ %u seq=%u len=%zu\n", conn, le32toh(m->seq), len);
	fflush(stdout);
	free(m);
	return ret;
}

/* The requests waiting in -f's FIFO, each line sent. */
static int fifo_requests(int fd, unsigned int conn)
{
	static char line[1024];
	static size_t have;
	ssize_t n;
	char *nl;

	n = read(fifo, line + have, sizeof(line) - 1 - have);
	if (n <= 0)
		return 0;
	have += n;
	line[have] = 0;
	while ((nl = strchr(line, '\n'))) {
		size_t used = nl + 1 - line;

		*nl = 0;
		if (send_cur_freq(fd, conn, line))
			return -1;
		memmove(line, nl + 1, have - used + 1);
		have -= used;
	}
	return 0;
}

/*
 * Until a frame from the driver can be read: -f's requests and -e's
 * CUR_FREQ meanwhile.
 */
static int wait_frame(int fd, unsigned int conn)
{
	struct pollfd p[2] = {
		{ .fd = fd, .events = POLLIN },
		{ .fd = fifo, .events = POLLIN },
	};

	for (;;) {
		int timeout = -1;

		if (every_ms) {
			uint64_t t = now_us();

			if (t >= every_next) {
				if (send_cur_freq_tick(fd))
					return -1;
				every_next = t + every_ms * 1000ull;
			}
			timeout = (every_next - t) / 1000 + 1;
		}
		if (poll(p, fifo < 0 ? 1 : 2, timeout) < 0)
			return errno == EINTR ? 0 : -1;
		if (fifo >= 0 && (p[1].revents & POLLIN) &&
		    fifo_requests(fd, conn))
			return -1;
		if (p[0].revents)
			return 0;
	}
}

static void serve(int fd, unsigned int conn, int misbehave)
{
	static unsigned char buf[FREQHINT_VSOCK_MAX_FRAME];
	struct freqhint_vsock_config cfg = { 0 };
	struct freqhint_vsock_hello *h = (void *)buf;
	uint64_t first = 0, last = 0, gap = UINT64_MAX;
	unsigned int frames = 0, feats, i;
	long len;

	printf("CONNECT %u\n", conn);
	len = read_frame(fd, buf);
	if (len != sizeof(*h) || le16toh(h->msg_type) != FREQHINT_VSOCK_MSG_HELLO) {
		printf("ERROR first frame is not HELLO (%ld bytes)\n", len);
		return;
	}
	feats = le32toh(h->features);
	printf("HELLO version=%u features=%#x num_cpus=%u reserved=%s\n",
	       le16toh(h->version), feats, le16toh(h->num_cpus),
	       memcmp(h->reserved, "\0\0\0\0\0\0", 6) ? "set" : "zero");
	if (misbehave && !strcmp(bad, "silent")) {
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		printf("CLOSED %u silent\n", conn);
		return;
	}
	feats &= accept_mask;
	cfg.msg_type = htole16(FREQHINT_VSOCK_MSG_CONFIG);
	cfg.version = htole16(misbehave && !strcmp(bad, "version") ? 2 :
			      FREQHINT_VSOCK_VERSION);
	cfg.features = htole32(feats);
	cfg.config.num_vcpus = htole16(nvcpus);
	cfg.config.max_records = htole16(nvcpus);
	cfg.config.rate_window_ms = htole16(10);
	cfg.config.perf_step = htole16(16);
	cfg.config.idle_share = htole16(20);
	if (send_frame(fd, &cfg, sizeof(cfg)))
		return;
	if (misbehave && !strcmp(bad, "type")) {
		struct virtio_freqhint_hints hm = {
			.msg_type = htole16(VIRTIO_FREQHINT_MSG_HINTS),
		};

		send_frame(fd, &hm, sizeof(hm));
	}
	if (misbehave && !strcmp(bad, "long")) {
		uint32_t le = htole32(FREQHINT_VSOCK_MAX_FRAME + 1);

		if (write(fd, &le, 4) != 4)
			return;
	}
	if (feats & (1u << VIRTIO_FREQHINT_F_CPU_ID)) {
		size_t n = sizeof(struct virtio_freqhint_cpu_ids) + 8 * nvcpus;
		struct virtio_freqhint_cpu_ids *ids = calloc(1, n);

		ids->msg_type = htole16(VIRTIO_FREQHINT_MSG_CPU_IDS);
		ids->num_vcpus = htole16(nvcpus);
		for (i = 0; i < nvcpus; i++)
			ids->cpu_id[i] = htole64(i);
		send_frame(fd, ids, n);
		free(ids);
	}
	if (feats & (1u << VIRTIO_FREQHINT_F_FEEDBACK))
		send_feedback(fd, 1, ceiling,
			      !!(feats & (1u << VIRTIO_FREQHINT_F_HOST_FREQ)),
			      misbehave && !strcmp(bad, "short"));
	fflush(stdout);
	while (!wait_frame(fd, conn) && (len = read_frame(fd, buf)) > 0) {
		struct virtio_freqhint_hints *m = (void *)buf;
		uint64_t t = now_us();
		unsigned int n;

		if (le16toh(m->msg_type) != VIRTIO_FREQHINT_MSG_HINTS) {
			printf("ERROR message type %u\n", le16toh(m->msg_type));
			break;
		}
		n = le16toh(m->num_records);
		if (len != (long)(sizeof(*m) + n * sizeof(m->records[0])) ||
		    !n || n > nvcpus) {
			printf("ERROR HINTS of %ld bytes, %u records\n", len, n);
			break;
		}
		if (frames)
			gap = t - last < gap ? t - last : gap;
		else
			first = t;
		last = t;
		frames++;
		for (i = 0; i < n; i++) {
			struct virtio_freqhint_record *r = &m->records[i];

			printf("REC %u vcpu=%u flags=%#x min=%u max=%u perf=%u seq=%u\n",
			       conn, le16toh(r->vcpu), le16toh(r->flags),
			       le16toh(r->clamp_min), le16toh(r->clamp_max),
			       le16toh(r->perf), le32toh(r->seq));
		}
		fflush(stdout);
		if (stall_ms && frames == 10) {
			printf("STALL %u\n", conn);
			usleep(stall_ms * 1000);
			printf("RESUME %u\n", conn);
		}
		if (update_after && frames == update_after)
			send_feedback(fd, 2, 512,
				      !!(feats & (1u << VIRTIO_FREQHINT_F_HOST_FREQ)), 0);
		if (close_after && frames == close_after)
			break;
	}
	printf("CLOSED %u frames=%u span_us=%llu min_gap_us=%llu cur_freq_every=%lu\n",
	       conn, frames, (unsigned long long)(last - first),
	       (unsigned long long)(frames > 1 ? gap : 0), every_sent);
}

int main(int argc, char **argv)
{
	struct sockaddr_vm addr = {
		.svm_family = AF_VSOCK,
		.svm_cid = VMADDR_CID_ANY,
		.svm_port = FREQHINT_VSOCK_PORT,
	};
	unsigned int conn = 0;
	int opt, lfd, fd;

	unsigned long long bufsize = 0;

	while ((opt = getopt(argc, argv, "n:a:c:k:u:b:s:B:p:f:e:")) != -1) {
		switch (opt) {
		case 'n': nvcpus = strtoul(optarg, NULL, 0); break;
		case 'a': accept_mask = strtoul(optarg, NULL, 0); break;
		case 'c': ceiling = strtoul(optarg, NULL, 0); break;
		case 'k': close_after = strtoul(optarg, NULL, 0); break;
		case 'u': update_after = strtoul(optarg, NULL, 0); break;
		case 'b': bad = optarg; break;
		case 's': stall_ms = strtoul(optarg, NULL, 0); break;
		case 'B': bufsize = strtoull(optarg, NULL, 0); break;
		case 'p': addr.svm_port = strtoul(optarg, NULL, 0); break;
		case 'e': every_ms = strtoul(optarg, NULL, 0); break;
		case 'f':
			/* O_RDWR: never EOF, and the open does not wait for a writer. */
			fifo = open(optarg, O_RDWR | O_NONBLOCK);
			if (fifo < 0) {
				printf("ERROR %s: %s\n", optarg, strerror(errno));
				return 1;
			}
			break;
		default: return 2;
		}
	}
	/* A driver that leaves mid-message is an event, not the end. */
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	lfd = socket(AF_VSOCK, SOCK_STREAM, 0);
	/* Accepted connections inherit it. */
	if (bufsize && setsockopt(lfd, AF_VSOCK, SO_VM_SOCKETS_BUFFER_SIZE,
				  &bufsize, sizeof(bufsize)))
		printf("ERROR buffer size: %s\n", strerror(errno));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(lfd, 4)) {
		printf("ERROR listen: %s\n", strerror(errno));
		return 1;
	}
	printf("LISTENING %u\n", addr.svm_port);
	for (;;) {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		conn++;
		serve(fd, conn, bad && conn == 1);
		close(fd);
	}
}
