// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio_freqhint over virtio-vsock (spec/vsock-transport.md): where no
 * virtio-freqhint device is bound, the same driver reports to the host
 * through one vsock stream connection to CID 2, port 853, which every
 * stock hypervisor's vsock device carries to a host process.
 *
 * The driver's state (gatherer, cpufreq driver, sender, feedback) is
 * main.c's, built from the host's CONFIG (vfh_link_create()) and kept
 * across reconnections to a host with the same configuration, so the
 * cpufreq policies, and the user's governors and limits, survive a host
 * restart.  A CONFIG that differs builds the state again, as a rebind of
 * the device would.
 *
 * Contexts:
 *  - connecting, receiving and closing run on ->worker, the link's own
 *    thread (freezable), each under ->lock; the socket's callbacks only
 *    queue work there.  Like the sender, that thread counts as idle time
 *    on the vCPU it runs on (gather.c): a host that sends a message every
 *    window must not make an idle vCPU read busy;
 *  - sending runs on the state's own worker (transport.c's), as on the
 *    device, with MSG_DONTWAIT: a frame the socket does not take whole
 *    is finished by later runs before the next is built.  The socket is
 *    set before the link goes up and cleared only after it went down and
 *    the sender was cancelled (vfh_link_down()), so the sender needs no
 *    lock of this file; lock order: ->lock, then the state's ->lock.
 * Nothing here blocks the system: a receive never waits, a connect waits
 * at most the vsock connect timeout (2 s) on ->worker, and a run reads at
 * most FH_VS_RX_BUDGET frames before it queues itself again.
 *
 * The link is module-wide (one host per guest), so its state is this
 * file's; the module's exit and a device's probe end it (vfh_vsock_stop()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/device.h>
#include <linux/err.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/socket.h>
#include <linux/string.h>
#include <linux/uio.h>
#include <linux/vm_sockets.h>
#include <net/net_namespace.h>
#include <net/sock.h>

#include "device.h"
#include "vsock.h"

static char *transport = "auto";
module_param(transport, charp, 0444);
MODULE_PARM_DESC(transport,
		 "auto (the device when one is bound, else vsock), virtio or vsock");

static unsigned int vsock_cid = FREQHINT_VSOCK_HOST_CID;
module_param(vsock_cid, uint, 0444);
MODULE_PARM_DESC(vsock_cid,
		 "the host's vsock CID (default 2, the host; 1 reaches this guest's own loopback, for tests)");

/* Everything the driver can do; the host's CONFIG accepts a subset. */
#define FH_VS_FEATURES	(BIT(VIRTIO_FREQHINT_F_PERF) |			\
			 BIT(VIRTIO_FREQHINT_F_FEEDBACK) |		\
			 BIT(VIRTIO_FREQHINT_F_HOST_FREQ) |		\
			 BIT(VIRTIO_FREQHINT_F_CPU_ID) |		\
			 BIT(VIRTIO_FREQHINT_F_CUR_FREQ))

/* The first retry within 1 s, then doubling up to 60 s apart. */
#define FH_VS_BACKOFF_MIN	(HZ / 2)
#define FH_VS_BACKOFF_MAX	(60 * HZ)
/* A host that accepted but does not answer HELLO is given this long. */
#define FH_VS_HELLO_WAIT	(10 * HZ)
/* A frame header and the largest message. */
#define FH_VS_TX_SIZE	(sizeof(struct freqhint_vsock_frame) +		\
			 FREQHINT_VSOCK_MAX_FRAME)
/* Frames one receive run takes before it lets other work run. */
#define FH_VS_RX_BUDGET		16

enum vfh_vs_state {
	FH_VS_IDLE,		/* no connection (a connect is queued) */
	FH_VS_HELLO,		/* HELLO sent, CONFIG awaited */
	FH_VS_UP,		/* the link is up */
};

static const char * const vfh_vs_state_names[] = {
	[FH_VS_IDLE] = "idle",
	[FH_VS_HELLO] = "hello",
	[FH_VS_UP] = "up",
};

/* debugfs virtio_freqhint_vsock/, not ABI */
struct vfh_vs_stats {
	unsigned long connects;		/* CONFIG taken: the link went up */
	unsigned long connect_errors;	/* socket or connect failed */
	unsigned long disconnects;	/* a connection ended */
	unsigned long protocol_errors;	/* of which: the host broke a rule */
	unsigned long frames_in;
	unsigned long frames_out;	/* HELLO and HINTS written whole */
	unsigned long rebuilds;		/* a CONFIG unlike the last one */
};

struct vfh_vsock {
	struct mutex lock;		/* the fields below but tx */
	bool running;			/* start to stop; nothing queues after */
	enum vfh_vs_state state;
	struct socket *sock;
	struct kthread_worker *worker;
	struct kthread_delayed_work conn_work;	/* connect, retry, HELLO timeout */
	struct kthread_work rx_work;
	struct kthread_work kick_work;	/* the socket has room again */
	unsigned long backoff;
	bool quiet;			/* a failure was logged: retries are not */
	int last_err;			/* ... unless they fail otherwise */
	struct device *dev;		/* /sys/devices/freqhint-vsock */
	struct dentry *debugfs;

	/* Receiving (->worker): the frame header, then its message. */
	struct freqhint_vsock_frame rx_hdr;
	u32 rx_hdr_have;
	u32 rx_len;
	u32 rx_have;
	void *rx;			/* FREQHINT_VSOCK_MAX_FRAME */

	/* Sending (the sender, or ->worker before the link is up). */
	void *tx;			/* a frame header and a message */
	size_t tx_len;			/* 0: no frame pending */
	size_t tx_off;

	/* The state, and the configuration and features it was built for. */
	struct virtio_freqhint *vi;
	struct vfh_config cfg;
	u32 features;

	struct vfh_vs_stats stats;
};

static struct vfh_vsock vfh_vs;
static bool vfh_vs_wanted;	/* transport= allows vsock */

/* The socket's callbacks (softirq): queue the work, nothing else. */
static void vfh_vs_sk_queue(struct sock *sk, bool room)
{
	struct vfh_vsock *vs;

	read_lock_bh(&sk->sk_callback_lock);
	vs = sk->sk_user_data;
	if (vs)
		kthread_queue_work(vs->worker,
				   room ? &vs->kick_work : &vs->rx_work);
	read_unlock_bh(&sk->sk_callback_lock);
}

static void vfh_vs_sk_ready(struct sock *sk)
{
	vfh_vs_sk_queue(sk, false);
}

static void vfh_vs_sk_write_space(struct sock *sk)
{
	vfh_vs_sk_queue(sk, true);
}

/* The socket's own callbacks, put back before it is released. */
static struct {
	void (*data_ready)(struct sock *sk);
	void (*state_change)(struct sock *sk);
	void (*error_report)(struct sock *sk);
	void (*write_space)(struct sock *sk);
} vfh_vs_saved;

static void vfh_vs_callbacks(struct vfh_vsock *vs, struct sock *sk, bool on)
{
	write_lock_bh(&sk->sk_callback_lock);
	if (on) {
		vfh_vs_saved.data_ready = sk->sk_data_ready;
		vfh_vs_saved.state_change = sk->sk_state_change;
		vfh_vs_saved.error_report = sk->sk_error_report;
		vfh_vs_saved.write_space = sk->sk_write_space;
		sk->sk_user_data = vs;
		/* A reset (TRANSPORT_RESET, the host's RST) reports an error. */
		sk->sk_data_ready = vfh_vs_sk_ready;
		sk->sk_state_change = vfh_vs_sk_ready;
		sk->sk_error_report = vfh_vs_sk_ready;
		sk->sk_write_space = vfh_vs_sk_write_space;
	} else {
		sk->sk_user_data = NULL;
		sk->sk_data_ready = vfh_vs_saved.data_ready;
		sk->sk_state_change = vfh_vs_saved.state_change;
		sk->sk_error_report = vfh_vs_saved.error_report;
		sk->sk_write_space = vfh_vs_saved.write_space;
	}
	write_unlock_bh(&sk->sk_callback_lock);
}

/* Where the pending frame's message goes: after its header. */
static void *vfh_vs_msg(struct vfh_vsock *vs)
{
	return (struct freqhint_vsock_frame *)vs->tx + 1;
}

/*
 * Write what is left of the pending frame without waiting: 0 once it is
 * all written, -EAGAIN if the socket has no room (the rest goes later),
 * another error if the connection broke.
 */
static int vfh_vs_write(struct vfh_vsock *vs)
{
	while (vs->tx_off < vs->tx_len) {
		struct kvec iov = {
			.iov_base = (u8 *)vs->tx + vs->tx_off,
			.iov_len = vs->tx_len - vs->tx_off,
		};
		struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL };
		int ret;

		ret = kernel_sendmsg(vs->sock, &msg, &iov, 1, iov.iov_len);
		if (ret <= 0)
			return ret ? ret : -EPIPE;
		vs->tx_off += ret;
	}
	vs->tx_len = 0;
	vs->tx_off = 0;
	vs->stats.frames_out++;
	return 0;
}

/* Frame the @len message bytes already after ->tx's header. */
static void vfh_vs_frame(struct vfh_vsock *vs, size_t len)
{
	struct freqhint_vsock_frame *f = vs->tx;

	f->len = cpu_to_le32(len);
	vs->tx_len = sizeof(struct freqhint_vsock_frame) + len;
	vs->tx_off = 0;
}

/*
 * The link's sender, on the state's worker (transport.c's kick queues it):
 * one HINTS message per frame, at most one per rate window, every dirty
 * vCPU's latest record in it.
 */
static void vfh_vs_send(struct virtio_freqhint *vi)
{
	unsigned long window = msecs_to_jiffies(vi->tune.window_ms);
	struct vfh_vsock *vs = &vfh_vs;
	unsigned long delay;
	bool more = false;
	unsigned int n;
	int err;

	mutex_lock(&vi->lock);
	/* Indexes are known once CPU_IDS arrived, which kicks again. */
	if (!vi->link_up || (vi->has_cpu_id && !vi->have_ids))
		goto out;
	if (!vs->tx_len) {
		/*
		 * The kick's delay keeps to the window already; checked here
		 * too, so that no path sends two messages within one.
		 */
		delay = vfh_send_delay(jiffies, READ_ONCE(vi->last_send), window);
		if (delay) {
			kthread_queue_delayed_work(vi->worker, &vi->send_work,
						   delay);
			goto out;
		}
		n = vfh_transport_build(vi, vfh_vs_msg(vs), &more);
		if (!n)
			goto out;
		vfh_vs_frame(vs, vfh_buf_size(n));
		WRITE_ONCE(vi->last_send, jiffies);
		vi->stats.buffers_sent++;
		vi->stats.records_sent += n;
	}
	err = vfh_vs_write(vs);
	if (err == -EAGAIN) {
		/* The host reads slowly: write_space kicks, or the next window. */
		vi->stats.send_deferred++;
		kthread_queue_delayed_work(vi->worker, &vi->send_work, window);
		goto out;
	}
	if (err) {
		/* The receiver notices the end and reconnects; all is sent again. */
		vi->stats.send_errors++;
		kthread_queue_work(vs->worker, &vs->rx_work);
		goto out;
	}
	if (more)
		vfh_transport_kick(vi);
out:
	mutex_unlock(&vi->lock);
}

/*
 * One run of the link's thread, counted as the module's work on the state
 * it began with (gather.c), if there is one and no CONFIG built it again
 * meanwhile.  Both under ->lock.
 */
struct vfh_vs_run {
	struct virtio_freqhint *vi;
	unsigned long rebuilds;
	struct vfh_worker_run run;
};

static void vfh_vs_run_begin(struct vfh_vsock *vs, struct vfh_vs_run *r)
{
	r->vi = vs->vi;
	r->rebuilds = vs->stats.rebuilds;
	if (r->vi)
		vfh_gather_work_begin(&r->vi->gather, &r->run);
}

static void vfh_vs_run_end(struct vfh_vsock *vs, const struct vfh_vs_run *r)
{
	if (r->vi && r->vi == vs->vi && r->rebuilds == vs->stats.rebuilds)
		vfh_gather_work_end(&r->vi->gather, &r->run);
}

static void vfh_vs_kick_fn(struct kthread_work *work)
{
	struct vfh_vsock *vs = container_of(work, struct vfh_vsock, kick_work);
	struct vfh_vs_run run;

	mutex_lock(&vs->lock);
	vfh_vs_run_begin(vs, &run);
	if (vs->running && vs->state == FH_VS_UP)
		vfh_transport_kick(vs->vi);
	vfh_vs_run_end(vs, &run);
	mutex_unlock(&vs->lock);
}

/* The connection is gone (->lock held): the link down, the socket released. */
static void vfh_vs_close(struct vfh_vsock *vs)
{
	struct socket *sock = vs->sock;

	if (!sock)
		return;
	if (vs->vi)
		vfh_link_down(vs->vi);
	vfh_vs_callbacks(vs, sock->sk, false);
	vs->sock = NULL;
	vs->tx_len = 0;
	vs->tx_off = 0;
	vs->state = FH_VS_IDLE;
	kernel_sock_shutdown(sock, SHUT_RDWR);
	sock_release(sock);
}

/* The next connect, after the backoff (->lock held). */
static void vfh_vs_retry(struct vfh_vsock *vs)
{
	if (!vs->running)
		return;
	kthread_mod_delayed_work(vs->worker, &vs->conn_work, vs->backoff);
	vs->backoff = min(vs->backoff * 2, (unsigned long)FH_VS_BACKOFF_MAX);
}

/*
 * The connection ends (->lock held): @why for the log (once until the
 * link is up again), @err if it was a socket error, @proto if the host
 * broke the protocol.
 */
static void vfh_vs_fault(struct vfh_vsock *vs, const char *why, int err,
			 bool proto)
{
	/* A host that accepts and closes again and again is not logged so. */
	if (!vs->quiet)
		dev_info_ratelimited(vs->dev, "connection to CID %u port %u ended: %s (%d); reconnecting with backoff\n",
				     vsock_cid, FREQHINT_VSOCK_PORT, why, err);
	vs->quiet = true;
	vs->stats.disconnects++;
	if (proto)
		vs->stats.protocol_errors++;
	vfh_vs_close(vs);
	vfh_vs_retry(vs);
}

/*
 * CONFIG arrived: the state as the host describes it, built again
 * only if the host describes it differently; then the link goes up and
 * every vCPU is sent.
 */
static bool vfh_vs_config(struct vfh_vsock *vs, unsigned int len)
{
	struct virtio_freqhint *vi;
	struct vfh_config c;
	const char *why;
	u32 features;

	why = vfh_vsock_config_why(vs->rx, len, FH_VS_FEATURES, &c, &features);
	if (why) {
		dev_warn(vs->dev, "CONFIG refused: %s\n", why);
		return false;
	}
	if (vs->vi && (features != vs->features ||
		       memcmp(&c, &vs->cfg, sizeof(c)))) {
		vfh_link_destroy(vs->vi);
		vs->vi = NULL;
		vs->stats.rebuilds++;
	}
	if (!vs->vi) {
		vi = vfh_link_create(vs->dev, &c, features, vfh_vs_send);
		if (IS_ERR(vi)) {
			dev_warn(vs->dev, "state not built: %ld\n", PTR_ERR(vi));
			return false;
		}
		vs->vi = vi;
		vs->cfg = c;
		vs->features = features;
		vfh_gather_set_receiver(&vi->gather, vs->worker->task);
	}
	vs->state = FH_VS_UP;
	vs->backoff = FH_VS_BACKOFF_MIN;
	vs->stats.connects++;
	if (vs->quiet)
		dev_info(vs->dev, "connected to CID %u port %u again\n",
			 vsock_cid, FREQHINT_VSOCK_PORT);
	else
		dev_info(vs->dev, "reporting over vsock to CID %u port %u, features %#x, %u vCPUs\n",
			 vsock_cid, FREQHINT_VSOCK_PORT, features, c.num_vcpus);
	vs->quiet = false;
	vfh_link_up(vs->vi);
	return true;
}

/* One whole message in ->rx: false ends the connection. */
static bool vfh_vs_message(struct vfh_vsock *vs, unsigned int len)
{
	u16 type = le16_to_cpup(vs->rx);

	vs->stats.frames_in++;
	if (vs->state == FH_VS_HELLO)
		return vfh_vs_config(vs, len);
	if (type != VIRTIO_FREQHINT_MSG_CPU_IDS &&
	    type != VIRTIO_FREQHINT_MSG_FEEDBACK &&
	    type != VIRTIO_FREQHINT_MSG_CUR_FREQ) {
		dev_warn(vs->dev, "message type %u from the host refused\n",
			 type);
		return false;
	}
	/* event.c checks it whole; an invalid one ends the connection. */
	return vfh_link_message(vs->vi, vs->rx, len);
}

/* Read without waiting: bytes read, 0 at the end, or an error. */
static int vfh_vs_recv(struct vfh_vsock *vs, void *buf, size_t len)
{
	struct kvec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };

	return kernel_recvmsg(vs->sock, &msg, &iov, 1, len, MSG_DONTWAIT);
}

static void vfh_vs_rx_fn(struct kthread_work *work)
{
	struct vfh_vsock *vs = container_of(work, struct vfh_vsock, rx_work);
	unsigned int frames = 0;
	struct vfh_vs_run run;
	const char *why;
	int ret;

	mutex_lock(&vs->lock);
	vfh_vs_run_begin(vs, &run);
	while (vs->running && vs->sock) {
		if (frames == FH_VS_RX_BUDGET) {
			kthread_queue_work(vs->worker, &vs->rx_work);
			break;
		}
		if (vs->rx_hdr_have < sizeof(vs->rx_hdr)) {
			ret = vfh_vs_recv(vs, (u8 *)&vs->rx_hdr + vs->rx_hdr_have,
					  sizeof(vs->rx_hdr) - vs->rx_hdr_have);
			if (ret > 0) {
				vs->rx_hdr_have += ret;
				if (vs->rx_hdr_have < sizeof(vs->rx_hdr))
					continue;
				vs->rx_len = le32_to_cpu(vs->rx_hdr.len);
				vs->rx_have = 0;
				why = vfh_vsock_frame_why(vs->rx_len);
				if (why) {
					vfh_vs_fault(vs, why, -EPROTO, true);
					break;
				}
				continue;
			}
		} else {
			ret = vfh_vs_recv(vs, (u8 *)vs->rx + vs->rx_have,
					  vs->rx_len - vs->rx_have);
			if (ret > 0) {
				vs->rx_have += ret;
				if (vs->rx_have < vs->rx_len)
					continue;
				vs->rx_hdr_have = 0;
				frames++;
				if (!vfh_vs_message(vs, vs->rx_len)) {
					vfh_vs_fault(vs, "invalid message",
						     -EPROTO, true);
					break;
				}
				continue;
			}
		}
		if (ret == -EAGAIN)
			break;
		vfh_vs_fault(vs, ret ? "socket error" : "closed by the host",
			     ret, false);
		break;
	}
	vfh_vs_run_end(vs, &run);
	mutex_unlock(&vs->lock);
}

/* Open the connection and send HELLO (->lock held). */
static int vfh_vs_connect(struct vfh_vsock *vs)
{
	struct sockaddr_vm addr = {
		.svm_family = AF_VSOCK,
		.svm_cid = vsock_cid,
		.svm_port = FREQHINT_VSOCK_PORT,
	};
	struct socket *sock;
	int err;

	/* Loads the vsock family if it is a module: no symbol of it is used. */
	err = sock_create_kern(&init_net, AF_VSOCK, SOCK_STREAM, 0, &sock);
	if (err)
		return err;
	err = kernel_connect(sock, (struct sockaddr *)&addr, sizeof(addr), 0);
	if (err) {
		sock_release(sock);
		return err;
	}
	vs->sock = sock;
	vs->rx_hdr_have = 0;
	vfh_vs_callbacks(vs, sock->sk, true);
	vfh_vsock_hello(vfh_vs_msg(vs), FH_VS_FEATURES, num_possible_cpus());
	vfh_vs_frame(vs, sizeof(struct freqhint_vsock_hello));
	/* A fresh socket has room for 20 bytes; if not, it is not usable. */
	err = vfh_vs_write(vs);
	if (err) {
		vfh_vs_close(vs);
		return err == -EAGAIN ? -ENOBUFS : err;
	}
	vs->state = FH_VS_HELLO;
	/* What arrived before the callbacks were set. */
	kthread_queue_work(vs->worker, &vs->rx_work);
	return 0;
}

static void vfh_vs_conn_fn(struct kthread_work *work)
{
	struct vfh_vsock *vs = container_of(work, struct vfh_vsock,
					   conn_work.work);
	struct vfh_vs_run run;
	int err;

	mutex_lock(&vs->lock);
	vfh_vs_run_begin(vs, &run);
	if (!vs->running)
		goto out;
	if (vs->state == FH_VS_HELLO) {
		vfh_vs_fault(vs, "no CONFIG in time", -ETIMEDOUT, true);
		goto out;
	}
	if (vs->state != FH_VS_IDLE)
		goto out;
	err = vfh_vs_connect(vs);
	if (err) {
		vs->stats.connect_errors++;
		if (!vs->quiet || err != vs->last_err)
			dev_info_ratelimited(vs->dev, "no connection to CID %u port %u (%d); retrying with backoff\n",
					     vsock_cid, FREQHINT_VSOCK_PORT, err);
		vs->quiet = true;
		vs->last_err = err;
		vfh_vs_retry(vs);
		goto out;
	}
	kthread_mod_delayed_work(vs->worker, &vs->conn_work, FH_VS_HELLO_WAIT);
out:
	vfh_vs_run_end(vs, &run);
	mutex_unlock(&vs->lock);
}

static int vfh_vs_state_show(struct seq_file *m, void *unused)
{
	struct vfh_vsock *vs = m->private;

	mutex_lock(&vs->lock);
	seq_printf(m, "%s cid=%u port=%u\n", vfh_vs_state_names[vs->state],
		   vsock_cid, FREQHINT_VSOCK_PORT);
	mutex_unlock(&vs->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vfh_vs_state);

#define FH_VS_STAT(dir, st, name) \
	debugfs_create_ulong(#name, 0444, dir, &(st).name)

int vfh_vsock_init(bool *want_device)
{
	struct vfh_vsock *vs = &vfh_vs;

	*want_device = strcmp(transport, "vsock");
	vfh_vs_wanted = strcmp(transport, "virtio");
	if (*want_device && !vfh_vs_wanted)
		return 0;
	if (*want_device && strcmp(transport, "auto")) {
		pr_err("transport=%s: auto, virtio or vsock\n", transport);
		return -EINVAL;
	}
	mutex_init(&vs->lock);
	kthread_init_delayed_work(&vs->conn_work, vfh_vs_conn_fn);
	kthread_init_work(&vs->rx_work, vfh_vs_rx_fn);
	kthread_init_work(&vs->kick_work, vfh_vs_kick_fn);
	vs->rx = kmalloc(FREQHINT_VSOCK_MAX_FRAME, GFP_KERNEL);
	vs->tx = kmalloc(FH_VS_TX_SIZE, GFP_KERNEL);
	if (!vs->rx || !vs->tx)
		goto err;
	/*
	 * One thread: one of connect, receive, close at a time; freezable,
	 * so no connect in suspend.
	 */
	vs->worker = kthread_create_worker(KTW_FREEZABLE, "virtio_freqhint_vsock");
	if (IS_ERR(vs->worker)) {
		vs->worker = NULL;
		goto err;
	}
	vs->dev = root_device_register("freqhint-vsock");
	if (IS_ERR(vs->dev)) {
		vs->dev = NULL;
		goto err;
	}
	return 0;

err:
	vfh_vsock_exit();
	return -ENOMEM;
}

/* Module init, no device bound: connect (main.c's probe lock held). */
void vfh_vsock_start(void)
{
	struct vfh_vsock *vs = &vfh_vs;

	if (!vfh_vs_wanted)
		return;
	mutex_lock(&vs->lock);
	vs->running = true;
	vs->state = FH_VS_IDLE;
	vs->backoff = FH_VS_BACKOFF_MIN;
	vs->debugfs = debugfs_create_dir("virtio_freqhint_vsock", NULL);
	debugfs_create_file("state", 0444, vs->debugfs, vs, &vfh_vs_state_fops);
	FH_VS_STAT(vs->debugfs, vs->stats, connects);
	FH_VS_STAT(vs->debugfs, vs->stats, connect_errors);
	FH_VS_STAT(vs->debugfs, vs->stats, disconnects);
	FH_VS_STAT(vs->debugfs, vs->stats, protocol_errors);
	FH_VS_STAT(vs->debugfs, vs->stats, frames_in);
	FH_VS_STAT(vs->debugfs, vs->stats, frames_out);
	FH_VS_STAT(vs->debugfs, vs->stats, rebuilds);
	kthread_queue_delayed_work(vs->worker, &vs->conn_work, 0);
	mutex_unlock(&vs->lock);
}

/*
 * For good: a device took over, or the module goes.  Once ->running is
 * clear and the socket's callbacks are restored nothing queues work, and
 * work that still runs finds nothing to do.
 */
void vfh_vsock_stop(void)
{
	struct vfh_vsock *vs = &vfh_vs;

	if (!vfh_vs_wanted || !vs->worker)
		return;
	mutex_lock(&vs->lock);
	if (!vs->running) {
		mutex_unlock(&vs->lock);
		return;
	}
	vs->running = false;
	vfh_vs_close(vs);
	if (vs->vi) {
		vfh_link_destroy(vs->vi);
		vs->vi = NULL;
	}
	debugfs_remove_recursive(vs->debugfs);
	vs->debugfs = NULL;
	mutex_unlock(&vs->lock);
	kthread_cancel_delayed_work_sync(&vs->conn_work);
	kthread_cancel_work_sync(&vs->rx_work);
	kthread_cancel_work_sync(&vs->kick_work);
	if (vs->dev)
		dev_info(vs->dev, "vsock link stopped\n");
}

void vfh_vsock_exit(void)
{
	struct vfh_vsock *vs = &vfh_vs;

	vfh_vsock_stop();
	if (vs->worker)
		kthread_destroy_worker(vs->worker);
	vs->worker = NULL;
	if (vs->dev)
		root_device_unregister(vs->dev);
	vs->dev = NULL;
	kfree(vs->tx);
	vs->tx = NULL;
	kfree(vs->rx);
	vs->rx = NULL;
}
