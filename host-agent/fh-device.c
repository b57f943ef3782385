/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Device socket server (spec/agent-protocol.md).
 *
 * Each connection keeps at most one maximal frame of input (what a read
 * left incomplete; reads go through one buffer shared by all) and a
 * bounded send queue, so a VM can never make the agent allocate more than
 * that.  Every protocol error closes only that connection: FH_MSG_CLOSE
 * with the reason (best effort), a log line, a counter.
 */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-device.h"
#include "fh-log.h"
#include "fh-listen.h"

#include "fh-listener.h"
#include "fh-peer.h"
#include "fh-poller.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib-unix.h>
#include <gio/gio.h>
#include <glib/gstdio.h>

/* Sending is GRANTS (<= 1032 B), WELCOME, PING: 64 KiB is many seconds of backlog. */
#define SEND_QUEUE_MAX (64 * 1024)
#define FH_AGENT_FEATURES (FH_F_PERF | FH_F_GRANTS | FH_F_HOST_FREQ | FH_F_VCPUS | FH_F_CUR_FREQ)

typedef enum {
  CONN_AWAIT_HELLO,
  CONN_AWAIT_FULL, /* WELCOME sent; the first HINTS must be FULL */
  CONN_RUNNING,
} ConnState;

struct _FhConn {
  FhDeviceServer *server;
  /* One reference for the server's list (dropped by fh_conn_close()), one
   * for each caller that reads conn after a callback (fh_conn_ref()). */
  guint ref;
  int fd;
  int pidfd; /* the peer process, pinned at accept (PA-20) */
  /* The socket in the server's epoll set: G_IO_IN always, G_IO_OUT while
   * the send queue holds bytes (out_pending). */
  FhPollerWatch *watch;
  gboolean out_pending;
  guint hello_timer;     /* pre-HELLO only: those are few (max_prehello) */
  gint64 next_ping_us;   /* after WELCOME: the server's keepalive tick sends it */
  ConnState state;
  struct ucred peer;
  pid_t pgid; /* the peer's process group at accept; 0 unknown */
  uint16_t num_vcpus;
  uint32_t features;
  gint64 last_rx_us;
  uint64_t ping_cookie;
  /* FH_FRAME_MAX until HELLO, then the largest frame this VM may send (conn_frame_max()) */
  uint8_t *in;
  size_t in_size;
  size_t in_len;
  GByteArray *out;
  gpointer data;
  char desc[96];
  gboolean closing;
  gboolean peer_closed; /* we received CLOSE: answer nothing (PB-9) */
};

struct _FhDeviceServer {
  char *path;
  FhListener *listener;
  FhDeviceParams params;
  FhDeviceCallbacks cb;
  gpointer data;
  GList *conns;       /* FhConn*, newest first; <= max_connections + max_prehello */
  /* Every connection's socket in one epoll source, and one keepalive timer
   * for all: GLib's loop walks each of its sources on every iteration, so
   * a source per VM made each wake-up cost the number of VMs (issue 29). */
  FhPoller *poller;
  guint keepalive_timer;
  gboolean activated; /* passed by systemd: the path is the socket unit's */
  gid_t group;        /* the socket file's group: its members may connect */
};

static void conn_free (FhConn *conn);

FhConn *
fh_conn_ref (FhConn *conn)
{
  conn->ref++;
  return conn;
}

void
fh_conn_unref (FhConn *conn)
{
  if (--conn->ref == 0)
    conn_free (conn);
}

gboolean
fh_conn_is_closed (FhConn *conn)
{
  return conn->closing;
}

int
fh_conn_peer_pidfd (FhConn *conn)
{
  return conn->pidfd;
}

gboolean
fh_conn_idle_open (FhConn *conn)
{
  char b;
  ssize_t n = recv (conn->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

void
fh_conn_set_data (FhConn *conn, gpointer data)
{
  conn->data = data;
}

gpointer
fh_conn_get_data (FhConn *conn)
{
  return conn->data;
}

pid_t
fh_conn_peer_pid (FhConn *conn)
{
  return conn->peer.pid;
}

uid_t
fh_conn_peer_uid (FhConn *conn)
{
  return conn->peer.uid;
}

uint32_t
fh_conn_features (FhConn *conn)
{
  return conn->features;
}

const char *
fh_conn_describe (FhConn *conn)
{
  return conn->desc;
}

guint
fh_device_server_n_connections (FhDeviceServer *server)
{
  return g_list_length (server->conns);
}

guint64
fh_device_server_accept_failures (FhDeviceServer *server)
{
  return fh_listener_failures (server->listener);
}

static void conn_want_out (FhConn *conn, gboolean want);

/*
 * Send or queue bytes.  1: done or queued; 0: the peer stopped reading and
 * the queue is full; -errno: the socket failed (typically EPIPE or
 * ECONNRESET: the peer has closed and we have not read its EOF yet).
 */
static int
conn_send (FhConn *conn, const uint8_t *buf, size_t len)
{
  size_t off = 0;

  if (conn->out->len == 0) {
    ssize_t n = send (conn->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return -errno;
    off = n > 0 ? (size_t) n : 0;
  }
  if (off == len)
    return 1;
  if (conn->out->len + (len - off) > SEND_QUEUE_MAX)
    return 0;
  g_byte_array_append (conn->out, buf + off, len - off);
  conn_want_out (conn, TRUE);
  return 1;
}

/*
 * conn_send(), closing the connection when it fails: OVERLOAD is for a
 * peer that does not read (counted as a rejection); a peer that is already
 * gone is an ordinary disconnect.
 */
static gboolean
conn_queue (FhConn *conn, const uint8_t *buf, size_t len, const char *what)
{
  int r = conn_send (conn, buf, len);

  if (r > 0)
    return TRUE;
  if (r == 0)
    fh_conn_close (conn, FH_CLOSE_OVERLOAD, "peer does not read its socket");
  else
    fh_conn_close (conn, FH_CLOSE_NORMAL, "cannot send %s: %s", what, g_strerror (-r));
  return FALSE;
}

/* Wait for the socket to take more (the send queue holds bytes), or stop. */
static void
conn_want_out (FhConn *conn, gboolean want)
{
  if (conn->out_pending == want || !conn->watch)
    return;
  conn->out_pending = want;
  fh_poller_watch_set_cond (conn->watch, want ? G_IO_IN | G_IO_OUT : G_IO_IN);
}

/* The socket takes more: send the queue.  FALSE when conn was closed. */
static gboolean
conn_out_ready (FhConn *conn)
{
  ssize_t n = send (conn->fd, conn->out->data, conn->out->len, MSG_NOSIGNAL | MSG_DONTWAIT);

  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return TRUE;
  if (n < 0) {
    fh_conn_close (conn, FH_CLOSE_NORMAL, "send failed: %s", g_strerror (errno));
    return FALSE;
  }
  g_byte_array_remove_range (conn->out, 0, (guint) n);
  if (conn->out->len == 0)
    conn_want_out (conn, FALSE);
  return TRUE;
}

/* Try once to send the whole queue without blocking; TRUE if it is empty now. */
static gboolean
conn_flush_now (FhConn *conn)
{
  ssize_t n;

  if (conn->out->len == 0)
    return TRUE;
  n = send (conn->fd, conn->out->data, conn->out->len, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n > 0)
    g_byte_array_remove_range (conn->out, 0, (guint) n);
  return conn->out->len == 0;
}

/* Refusals are logged, but a peer that reconnects in a loop must not fill the journal. */
static FhLogLimit refusals = FH_LOG_LIMIT_INIT ("refused connections", 20, 10);

void
fh_conn_close (FhConn *conn, uint16_t reason, const char *fmt, ...)
{
  FhDeviceServer *server = conn->server;
  uint8_t frame[FH_FRAME_HDR_SIZE + sizeof (struct fh_msg_close)];
  g_autofree char *text = NULL;
  size_t n;
  va_list ap;

  if (conn->closing)
    return;
  conn->closing = TRUE;
  /* Whole in the log (a path in it may be long); the CLOSE frame carries
   * what fits in its FH_TEXT_MAX bytes. */
  va_start (ap, fmt);
  text = g_strdup_vprintf (fmt, ap);
  va_end (ap);

  if (reason == FH_CLOSE_NORMAL)
    g_message ("%s: closing: %s", conn->desc, text);
  else if (fh_log_limit_allow (&refusals))
    g_warning ("%s: closing (%s): %s", conn->desc, fh_close_reason_name (reason), text);

  /*
   * Best effort: the peer may be gone or not reading; never block.  The
   * queue may end in part of a frame: CLOSE goes out only after all of it
   * (PB-4, PB-8), and never in answer to the peer's CLOSE (PB-9).
   */
  if (!conn->peer_closed && conn_flush_now (conn)) {
    n = fh_encode_close (frame, sizeof frame, reason, text);
    (void) !send (conn->fd, frame, n, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  shutdown (conn->fd, SHUT_RDWR);

  if (reason != FH_CLOSE_NORMAL && server->cb.rejected)
    server->cb.rejected (reason, server->data);
  server->conns = g_list_remove (server->conns, conn);
  /* No more events for a closing connection; memory goes with the last reference. */
  g_clear_pointer (&conn->watch, fh_poller_watch_remove);
  g_clear_handle_id (&conn->hello_timer, g_source_remove);
  if (server->cb.closed)
    server->cb.closed (conn, server->data);
  fh_conn_unref (conn);
}

gboolean
fh_conn_send_grants (FhConn *conn, const FhGrants *grants)
{
  uint8_t frame[FH_FRAME_MAX];
  size_t n;

  if (conn->closing || conn->state == CONN_AWAIT_HELLO)
    return FALSE;
  n = fh_encode_grants (frame, sizeof frame, grants);
  if (n == 0)
    return FALSE;
  if (!conn_queue (conn, frame, n, "GRANTS"))
    return FALSE;
  return TRUE;
}

gboolean
fh_conn_send_host_freq (FhConn *conn, const FhHostFreq *hf)
{
  uint8_t frame[FH_FRAME_MAX];
  size_t n;

  if (conn->closing || conn->state == CONN_AWAIT_HELLO || !(conn->features & FH_F_HOST_FREQ))
    return FALSE;
  n = fh_encode_host_freq (frame, sizeof frame, hf);
  if (n == 0)
    return FALSE;
  return conn_queue (conn, frame, n, "HOST_FREQ");
}

gboolean
fh_conn_send_cur_freq (FhConn *conn, const FhCurFreq *cf, const FhHostFreq *hf)
{
  uint8_t frame[FH_FRAME_MAX];
  size_t n;

  if (conn->closing || conn->state == CONN_AWAIT_HELLO || !(conn->features & FH_F_CUR_FREQ))
    return FALSE;
  n = fh_encode_cur_freq (frame, sizeof frame, cf, hf);
  if (n == 0)
    return FALSE;
  return conn_queue (conn, frame, n, "CUR_FREQ");
}

static guint
keepalive_tick_ms (FhDeviceServer *server)
{
  return MAX (server->params.keepalive_ms / 4, 25u);
}

static gboolean
hello_timeout (gpointer user_data)
{
  FhConn *conn = user_data;

  conn->hello_timer = 0;
  fh_conn_close (conn, FH_CLOSE_TIMEOUT, "no HELLO within %u ms",
                 conn->server->params.hello_timeout_ms);
  return G_SOURCE_REMOVE;
}

/*
 * One timer pings every connection past HELLO (PA-15) and closes the silent
 * ones (PB-7).  It ticks four times an interval and pings a connection whose
 * PING would otherwise be late by the next tick, so PINGs are at most
 * keepalive_ms apart (and at least 3/4 of it), and silence is noticed
 * within a quarter interval after FH_KEEPALIVE_MISSES intervals.
 */
static gboolean
keepalive_tick (gpointer user_data)
{
  FhDeviceServer *server = user_data;
  gint64 ms = server->params.keepalive_ms;
  gint64 interval_us = ms * G_TIME_SPAN_MILLISECOND;
  gint64 tick_us = keepalive_tick_ms (server) * G_TIME_SPAN_MILLISECOND;
  gint64 now = g_get_monotonic_time ();
  g_autoptr (GPtrArray) due = g_ptr_array_new_with_free_func ((GDestroyNotify) fh_conn_unref);
  gboolean any = FALSE;

  /* Closing one may close others (the daemon's callbacks): act on a list
   * of references taken first. */
  for (GList *l = server->conns; l; l = l->next) {
    FhConn *c = l->data;

    if (c->closing || c->state == CONN_AWAIT_HELLO)
      continue;
    any = TRUE;
    if (c->next_ping_us - now < tick_us)
      g_ptr_array_add (due, fh_conn_ref (c));
  }
  for (guint i = 0; i < due->len; i++) {
    FhConn *conn = due->pdata[i];
    uint8_t frame[FH_FRAME_HDR_SIZE + sizeof (struct fh_msg_ping)];
    size_t n;

    if (conn->closing)
      continue;
    if (now - conn->last_rx_us > FH_KEEPALIVE_MISSES * interval_us) {
      fh_conn_close (conn, FH_CLOSE_TIMEOUT, "nothing received for %u keepalive intervals",
                     FH_KEEPALIVE_MISSES);
      continue;
    }
    conn->next_ping_us = now + interval_us;
    n = fh_encode_ping (frame, sizeof frame, FH_MSG_PING, ++conn->ping_cookie);
    (void) conn_queue (conn, frame, n, "PING"); /* closes conn when it fails */
  }
  if (any)
    return G_SOURCE_CONTINUE;
  server->keepalive_timer = 0;
  return G_SOURCE_REMOVE;
}

/* After WELCOME: the connection's first PING is due one interval from now. */
static void
keepalive_start (FhConn *conn)
{
  FhDeviceServer *server = conn->server;

  conn->next_ping_us =
      g_get_monotonic_time () + (gint64) server->params.keepalive_ms * G_TIME_SPAN_MILLISECOND;
  if (!server->keepalive_timer)
    server->keepalive_timer = g_timeout_add (keepalive_tick_ms (server), keepalive_tick, server);
}

/* FALSE (OVERLOAD) if a HELLO from conn would pass the limits of established connections. */
static gboolean
room_after_hello (FhConn *conn, FhError *err)
{
  const FhDeviceParams *p = &conn->server->params;
  guint n = 0, same_uid = 0;

  for (GList *l = conn->server->conns; l; l = l->next) {
    FhConn *c = l->data;

    if (c == conn || c->closing || c->state == CONN_AWAIT_HELLO)
      continue;
    n++;
    same_uid += c->peer.uid == conn->peer.uid;
  }
  if (n >= p->max_connections) {
    fh_error_set (err, FH_CLOSE_OVERLOAD, "at the limit of %u connections", p->max_connections);
    return FALSE;
  }
  if (p->max_per_uid && same_uid >= p->max_per_uid && conn->peer.uid != p->relay_uid) {
    fh_error_set (err, FH_CLOSE_OVERLOAD, "uid %d is at the limit of %u connections",
                  (int) conn->peer.uid, p->max_per_uid);
    return FALSE;
  }
  return TRUE;
}

/* One frame.  FALSE when the connection was closed (and freed). */
static gboolean
handle_frame (FhConn *conn, const FhFrame *f)
{
  FhDeviceServer *server = conn->server;
  FhError err = { FH_CLOSE_MALFORMED, "" };

  if (f->msg_type == FH_MSG_CLOSE) {
    FhClose c;

    /* Whatever it says, the peer is gone: close without a word (PB-9). */
    conn->peer_closed = TRUE;
    if (fh_decode_close (f, &c, &err)) {
      g_autofree char *text = fh_text_sanitize (c.text, -1);

      fh_conn_close (conn, FH_CLOSE_NORMAL, "peer closed (%s %u): %s",
                     fh_close_reason_name (c.reason), c.reason, text);
    } else {
      fh_conn_close (conn, err.reason, "%s", err.text);
    }
    return FALSE;
  }

  switch (conn->state) {
    case CONN_AWAIT_HELLO: {
      static FhHello hello; /* 4.1 KiB; the main loop is single-threaded */
      FhWelcome w = { FH_PROTO_VERSION, 0, server->params.keepalive_ms };
      uint8_t frame[64];
      size_t n;

      if (!fh_decode_hello (f, &hello, &err))
        goto refuse;
      /* Only connections past HELLO count against these (PA-4). */
      if (!room_after_hello (conn, &err))
        goto refuse;
      conn->num_vcpus = hello.num_vcpus;
      /* FH_F_RELAY: the daemon's hello callback decides who may offer it (4.1a) */
      conn->features = hello.features & (FH_AGENT_FEATURES | FH_F_RELAY);
      /* 4.7: CUR_FREQ only with HOST_FREQ, and only from an agent that samples */
      if (!(conn->features & FH_F_HOST_FREQ) || !server->params.cur_freq)
        conn->features &= ~FH_F_CUR_FREQ;
      {
        /* The name is the peer's bytes (PA-6). */
        g_autofree char *name = fh_text_sanitize (hello.name, -1);

        if (strlen (name) > 64)
          *g_utf8_find_prev_char (name, name + 65) = '\0';
        g_snprintf (conn->desc, sizeof conn->desc, "VM \"%s\" (pid %d)", name,
                    (int) conn->peer.pid);
      }
      g_clear_handle_id (&conn->hello_timer, g_source_remove);
      if (server->cb.hello && !server->cb.hello (conn, &hello, &err, server->data))
        goto refuse;
      if (conn->closing)
        return FALSE; /* the callback closed it; our caller holds a reference */
      w.features = conn->features;
      n = fh_encode_welcome (frame, sizeof frame, &w);
      if (!conn_queue (conn, frame, n, "WELCOME"))
        return FALSE;
      conn->state = CONN_AWAIT_FULL;
      keepalive_start (conn);
      return TRUE;
    }
    case CONN_AWAIT_FULL:
    case CONN_RUNNING:
      if (f->msg_type == FH_MSG_HINTS) {
        static FhHints hints;

        if (!fh_decode_hints (f, conn->num_vcpus, conn->features, &hints, &err))
          goto refuse;
        if (conn->state == CONN_AWAIT_FULL && !(hints.flags & FH_HINTS_F_FULL)) {
          fh_error_set (&err, FH_CLOSE_PROTOCOL, "first HINTS after WELCOME is not FULL");
          goto refuse;
        }
        conn->state = CONN_RUNNING;
        if (server->cb.hints)
          server->cb.hints (conn, &hints, server->data);
        /* The callback may have closed conn: conn_in_ready() holds a
         * reference, so reading it here is safe. */
        return !conn->closing;
      }
      if (f->msg_type == FH_MSG_VCPUS && (conn->features & FH_F_VCPUS)) {
        static FhVcpus vcpus;

        if (!fh_decode_vcpus (f, conn->num_vcpus, &vcpus, &err))
          goto refuse;
        if (server->cb.vcpus && !server->cb.vcpus (conn, &vcpus, &err, server->data))
          goto refuse;
        return !conn->closing;
      }
      if (f->msg_type == FH_MSG_PING || f->msg_type == FH_MSG_PONG) {
        uint64_t cookie;
        uint8_t frame[32];
        size_t n;

        if (!fh_decode_ping (f, &cookie, &err))
          goto refuse;
        if (f->msg_type == FH_MSG_PONG)
          return TRUE; /* any frame counts as alive */
        n = fh_encode_ping (frame, sizeof frame, FH_MSG_PONG, cookie);
        if (!conn_queue (conn, frame, n, "PONG"))
          return FALSE;
        return TRUE;
      }
      fh_error_set (&err, FH_CLOSE_PROTOCOL, "unexpected %s", fh_msg_type_name (f->msg_type));
      goto refuse;
  }
  fh_error_set (&err, FH_CLOSE_PROTOCOL, "unexpected %s", fh_msg_type_name (f->msg_type));
refuse:
  fh_conn_close (conn, err.reason, "%s", err.text);
  return FALSE;
}

/*
 * The largest frame a device with n vCPUs may send after HELLO (a FULL
 * HINTS, a HELLO again, VCPUS, CLOSE; PA-4): 280 bytes for 16 vCPUs
 * instead of FH_FRAME_MAX, per connection.
 */
static size_t
conn_frame_max (uint16_t n)
{
  size_t m = sizeof (struct fh_msg_hints) + (size_t) n * sizeof (struct virtio_freqhint_record);

  m = MAX (m, sizeof (struct fh_msg_hello) + 4 * (size_t) n);
  m = MAX (m, sizeof (struct fh_msg_vcpus) + 4 * (size_t) n);
  m = MAX (m, sizeof (struct fh_msg_close));
  return FH_FRAME_HDR_SIZE + m;
}

/*
 * What a connection may send per wake-up: one read of up to this many of
 * its largest frames.  Its own buffer holds one frame (issue 16: memory per
 * VM), so reading into it took a recv() per frame; a flood's cost was then
 * mostly syscalls (issue 29, item 8).  A read goes into one buffer shared
 * by all connections instead, and only an incomplete frame at its end is
 * kept in the connection's own.  The bound keeps one busy VM from holding
 * the loop from the others, which the poller then serves (fh-poller.c).
 */
#define FH_CONN_FRAMES_PER_WAKEUP 16

/* The shared read buffer: the main loop is single-threaded, and nothing a
 * frame's handler does reads another connection. */
static uint8_t rx[FH_CONN_FRAMES_PER_WAKEUP * FH_FRAME_MAX];

typedef enum {
  CONN_READ_DRAINED, /* frames were taken (or none waited): wait for the next wake-up */
  CONN_READ_CLOSED,
} ConnReadResult;

/* The largest frame conn may send now: FH_FRAME_MAX until HELLO. */
static size_t
conn_in_cap (FhConn *conn)
{
  return conn->state == CONN_AWAIT_HELLO ? FH_FRAME_MAX : conn_frame_max (conn->num_vcpus);
}

static ConnReadResult
conn_read_frames (FhConn *conn, gint fd)
{
  size_t off = 0, len = conn->in_len, offered;
  ssize_t n;

  /* the incomplete frame kept from the last read comes first */
  memcpy (rx, conn->in, len);
  offered = FH_CONN_FRAMES_PER_WAKEUP * conn_in_cap (conn) - len;
  n = recv (fd, rx + len, offered, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return CONN_READ_DRAINED;
  if (n <= 0) {
    fh_conn_close (conn, FH_CLOSE_NORMAL, "%s", n == 0 ? "peer disconnected" : g_strerror (errno));
    return CONN_READ_CLOSED;
  }
  len += (size_t) n;
  conn->last_rx_us = g_get_monotonic_time ();

  fh_conn_ref (conn);
  for (;;) {
    FhFrame f;
    size_t size = 0;
    FhError err = { 0 };
    FhParseResult r = fh_frame_parse (rx + off, len - off, &f, &size, &err);

    if (r == FH_PARSE_NEED_MORE) {
      /* A frame no buffer of this VM holds would never complete: refuse it now. */
      if (len - off >= FH_FRAME_HDR_SIZE &&
          FH_FRAME_HDR_SIZE + fh_get_le32 (rx + off) > conn_in_cap (conn)) {
        fh_conn_close (conn, FH_CLOSE_MALFORMED,
                       "frame of %u bytes is larger than any a device with %u vCPUs sends",
                       fh_get_le32 (rx + off), conn->num_vcpus);
        fh_conn_unref (conn);
        return CONN_READ_CLOSED;
      }
      break;
    }
    if (r == FH_PARSE_ERROR) {
      fh_conn_close (conn, err.reason, "%s", err.text);
      fh_conn_unref (conn);
      return CONN_READ_CLOSED;
    }
    if (!handle_frame (conn, &f) || conn->closing) {
      /* closed: its watch is removed; our reference keeps conn readable until here */
      fh_conn_unref (conn);
      return CONN_READ_CLOSED;
    }
    off += size;
  }
  fh_conn_unref (conn);
  /* After HELLO the buffer is sized by the VM's vCPU count (issue 16: memory per VM). */
  if (conn->in_size != conn_in_cap (conn)) {
    conn->in_size = conn_in_cap (conn);
    conn->in = g_realloc (conn->in, conn->in_size);
  }
  /* what is left is less than one frame that fits (checked above) */
  conn->in_len = len - off;
  memcpy (conn->in, rx + off, conn->in_len);
  return CONN_READ_DRAINED;
}

static gboolean
conn_ready (gint fd, GIOCondition cond, gpointer user_data)
{
  FhConn *conn = user_data;

  if ((cond & G_IO_OUT) && !conn_out_ready (conn))
    return G_SOURCE_REMOVE;
  if (!(cond & (G_IO_IN | G_IO_HUP | G_IO_ERR)))
    return G_SOURCE_CONTINUE;
  /* level-triggered: bytes left in the socket wake us again, after the others */
  return conn_read_frames (conn, fd) == CONN_READ_CLOSED ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
}

static void
conn_free (FhConn *conn)
{
  g_clear_pointer (&conn->watch, fh_poller_watch_remove);
  g_clear_handle_id (&conn->hello_timer, g_source_remove);
  if (conn->fd >= 0)
    close (conn->fd);
  if (conn->pidfd >= 0)
    close (conn->pidfd);
  g_byte_array_unref (conn->out);
  g_free (conn->in);
  g_free (conn);
}

/* Connections from the same process (PA-4). */
static guint
count_same_pid (FhDeviceServer *server, FhConn *conn)
{
  guint n = 0;

  for (GList *l = server->conns; l; l = l->next) {
    FhConn *c = l->data;

    n += c != conn && !c->closing && c->peer.pid == conn->peer.pid;
  }
  return n;
}

/*
 * The pre-HELLO pool (PA-4): room for conn, made by displacing the oldest
 * silent connection still waiting for HELLO -- of conn's process group if
 * that is at its bound, else of its uid, else of all.  A connection with
 * bytes waiting (a HELLO on its way) is not displaced: a VM sends HELLO at
 * once, so the pool's oldest silent members are the ones that never will.
 * FALSE: every candidate has bytes waiting, conn itself goes.
 */
static gboolean
make_prehello_room (FhDeviceServer *server, FhConn *conn)
{
  const FhDeviceParams *p = &server->params;
  guint n_all = 0, n_uid = 0, n_grp = 0;
  gboolean by_uid = FALSE, by_grp = FALSE;
  const char *scope;

  for (GList *l = server->conns; l; l = l->next) {
    FhConn *c = l->data;

    if (c == conn || c->closing || c->state != CONN_AWAIT_HELLO)
      continue;
    n_all++;
    n_uid += c->peer.uid == conn->peer.uid;
    n_grp += conn->pgid > 0 && c->pgid == conn->pgid;
  }
  if (conn->peer.uid == p->relay_uid && p->max_prehello && n_all < p->max_prehello) {
    return TRUE; /* the relay's own bounds hold its guests (vsock §5) */
  } else if (p->max_prehello_per_group && n_grp >= p->max_prehello_per_group) {
    by_grp = TRUE;
    scope = "its process group's";
  } else if (p->max_prehello_per_uid && n_uid >= p->max_prehello_per_uid) {
    by_uid = TRUE;
    scope = "its uid's";
  } else if (p->max_prehello && n_all >= p->max_prehello) {
    scope = "the";
  } else {
    return TRUE;
  }
  /* oldest first (the list is newest first); only now ask the sockets */
  for (GList *l = g_list_last (server->conns); l; l = l->prev) {
    FhConn *c = l->data;

    if (c == conn || c->closing || c->state != CONN_AWAIT_HELLO ||
        (by_grp && c->pgid != conn->pgid) || (by_uid && c->peer.uid != conn->peer.uid) ||
        !fh_conn_idle_open (c))
      continue;
    fh_conn_close (c, FH_CLOSE_OVERLOAD,
                   "displaced by a newer connection: %s pre-HELLO slots are full", scope);
    return TRUE;
  }
  return FALSE;
}

static void
server_accept (int cfd, gpointer user_data)
{
  FhDeviceServer *server = user_data;
  socklen_t len = sizeof (struct ucred);
  FhConn *conn;

  conn = g_new0 (FhConn, 1);
  conn->in_size = FH_FRAME_MAX;
  conn->in = g_malloc (conn->in_size);
  conn->ref = 1;
  conn->server = server;
  conn->fd = cfd;
  conn->pidfd = -1;
  conn->out = g_byte_array_new ();
  conn->last_rx_us = g_get_monotonic_time ();
  if (getsockopt (cfd, SOL_SOCKET, SO_PEERCRED, &conn->peer, &len) < 0) {
    conn->peer.pid = 0;
    conn->peer.uid = (uid_t) -1;
    conn->peer.gid = (gid_t) -1;
  }
  g_snprintf (conn->desc, sizeof conn->desc, "connection from pid %d uid %d", (int) conn->peer.pid,
              (int) conn->peer.uid);
  server->conns = g_list_prepend (server->conns, conn);

  /* Allowed: root, our uid, allowed_uids/gids, and the socket group's members. */
  if (conn->peer.uid == (uid_t) -1 ||
      (server->params.peer_allowed &&
       !server->params.peer_allowed (cfd, conn->peer.uid, conn->peer.gid, server->data) &&
       !fh_listen_peer_in_group (cfd, server->group))) {
    fh_conn_close (conn, FH_CLOSE_PERMISSION, "uid %d gid %d is not allowed", (int) conn->peer.uid,
                   (int) conn->peer.gid);
    return;
  }
  /* The relay speaks for many guests and bounds them itself (vsock §5). */
  if (server->params.max_per_process && conn->peer.uid != server->params.relay_uid &&
      count_same_pid (server, conn) >= server->params.max_per_process) {
    fh_conn_close (conn, FH_CLOSE_OVERLOAD, "process %d is at the limit of %u connections",
                   (int) conn->peer.pid, server->params.max_per_process);
    return;
  }
  /* PA-20: pin the peer, so its pid names this process for as long as we look. */
  conn->pidfd = fh_peer_pin (conn->peer.pid);
  if (conn->pidfd < 0) {
    fh_conn_close (conn, FH_CLOSE_PERMISSION, "cannot pin the peer process: %s",
                   g_strerror (errno));
    return;
  }
  /* pinned: the pid still names the peer (its children inherit the group) */
  conn->pgid = MAX (getpgid (conn->peer.pid), 0);
  if (!make_prehello_room (server, conn)) {
    fh_conn_close (conn, FH_CLOSE_OVERLOAD, "every pre-HELLO slot is busy with a HELLO");
    return;
  }
  g_debug ("%s: accepted", conn->desc);
  conn->watch = fh_poller_add (server->poller, cfd, G_IO_IN, conn_ready, conn);
  if (!conn->watch) {
    fh_conn_close (conn, FH_CLOSE_OVERLOAD, "cannot watch the socket: %s", g_strerror (errno));
    return;
  }
  conn->hello_timer = g_timeout_add (server->params.hello_timeout_ms, hello_timeout, conn);
}

/*
 * PA-1: whoever may write the socket's directory may replace the socket.
 * An existing directory must not be writable by others; a missing one is
 * created 0750 for our group, so only members reach the socket.
 */
FhDeviceServer *
fh_device_server_new (const char *path, const FhDeviceParams *params, const FhDeviceCallbacks *cb,
                      gpointer data, GError **error)
{
  FhDeviceServer *server;
  FhPoller *poller;
  gboolean activated;
  struct stat st;
  int fd;

  poller = fh_poller_new (error);
  if (!poller)
    return NULL;
  fd = fh_listen_unix ("device", path, params->socket_gid, params->socket_mode, &activated, error);
  if (fd < 0) {
    fh_poller_free (poller);
    return NULL;
  }
  server = g_new0 (FhDeviceServer, 1);
  server->poller = poller;
  server->path = g_strdup (path);
  server->activated = activated;
  server->group = stat (path, &st) == 0 ? st.st_gid : params->socket_gid;
  server->params = *params;
  server->cb = *cb;
  server->data = data;
  server->listener = fh_listener_new (fd, path, server_accept, server);
  return server;
}

FhPoller *
fh_device_server_poller (FhDeviceServer *server)
{
  return server->poller;
}

void
fh_device_server_free (FhDeviceServer *server)
{
  if (!server)
    return;
  while (server->conns)
    fh_conn_close (server->conns->data, FH_CLOSE_NORMAL, "agent shutting down");
  g_clear_pointer (&server->listener, fh_listener_free);
  g_clear_handle_id (&server->keepalive_timer, g_source_remove);
  g_clear_pointer (&server->poller, fh_poller_free);
  /* A socket unit's path outlives us: systemd listens on it while we are down. */
  if (!server->activated)
    unlink (server->path);
  g_free (server->path);
  g_free (server);
}
