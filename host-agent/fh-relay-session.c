/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhint-vsockd"

#include "fh-relay-session.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <freqhint/vsock_host.h>

#include "fh-poller.h"
#include "fh-protocol.h"
#include "fh-vsock-codec.h"

/* Output to the agent: HELLO, one HINTS, PONGs (PB-13 is the agent's bound on its own). */
#define AGENT_OUT_MAX (2 * FH_FRAME_MAX)
/* Output to the guest: a CONFIG and one snapshot being written; the next one waits as state. */
#define GUEST_OUT_MAX (2 * FH_VSOCK_FRAME_MAX)

typedef enum {
  STATE_HELLO,   /* waiting for the guest's HELLO */
  STATE_WELCOME, /* HELLO relayed, waiting for the agent's WELCOME */
  STATE_RUNNING, /* CONFIG sent: hints flow */
} State;

struct _FhRelaySession {
  const FhRelayParams *params;
  FhRelayPeer peer;
  char desc[FH_RELAY_PATH_MAX + 32];
  State state;
  gboolean ended;
  gint64 accepted_us;

  int gfd, afd;
  FhPollerWatch *gwatch, *awatch;
  GByteArray *gout, *aout;
  gint64 gout_since_us; /* when the guest's output last was empty */
  uint8_t *gin, *ain;   /* one frame each: FH_VSOCK_FRAME_MAX, FH_FRAME_MAX */
  size_t gin_len, ain_len;

  /* the guest's state, as the device keeps it */
  uint16_t num_cpus;
  uint32_t features;       /* VIRTIO_FREQHINT_F_* bits accepted */
  uint32_t agent_features; /* FH_F_* the agent accepted */
  FhRecord *vcpus;
  guint8 *dirty;
  gboolean resend_full;
  gint64 last_forward_us;
  guint forward_timer;

  FhVsockFeedback *fb;
  gboolean fb_dirty;
  gint64 last_fb_us;
  guint fb_timer;

  /* CUR_FREQ (6.8a): the agent's latest values, checked against its latest
   * HOST_FREQ (hf, NULL before one), and what the guest was last told */
  FhHostFreq *hf;
  uint32_t *cur_khz, *cur_sent;
  uint32_t cur_seq;
  gboolean cur_dirty;
  gint64 last_cur_us;
  guint cur_timer;

  /* rate bounds, per second since period_us */
  gint64 period_us;
  guint64 msgs, records, bytes;
};

static const char *const end_names[FH_RELAY_END_N] = {
  [FH_RELAY_END_EOF] = "closed-by-guest", [FH_RELAY_END_MALFORMED] = "malformed",
  [FH_RELAY_END_RATE] = "rate",           [FH_RELAY_END_SLOW] = "slow-reader",
  [FH_RELAY_END_TIMEOUT] = "timeout",     [FH_RELAY_END_AGENT] = "refused-by-agent",
  [FH_RELAY_END_AGENT_GONE] = "agent-unavailable",
  [FH_RELAY_END_SHUTDOWN] = "shutdown",
};

const char *
fh_relay_end_name (FhRelayEnd end)
{
  return end < FH_RELAY_END_N ? end_names[end] : "unknown";
}

gboolean
fh_relay_end_is_fault (FhRelayEnd end)
{
  return end == FH_RELAY_END_MALFORMED || end == FH_RELAY_END_RATE || end == FH_RELAY_END_SLOW ||
         end == FH_RELAY_END_TIMEOUT || end == FH_RELAY_END_AGENT;
}

static gint64
window_us (void)
{
  return (gint64) FREQHINT_VSOCK_HOST_WINDOW_MS * G_TIME_SPAN_MILLISECOND;
}

/* Ends the session: CLOSE to the agent (best effort), both sockets closed, done called, freed. */
static void G_GNUC_PRINTF (3, 4)
session_end (FhRelaySession *s, FhRelayEnd end, const char *fmt, ...)
{
  g_autofree char *why = NULL;
  va_list ap;

  if (s->ended)
    return;
  s->ended = TRUE;
  va_start (ap, fmt);
  why = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  if (s->afd >= 0 && s->aout->len == 0 && s->state != STATE_HELLO) {
    uint8_t frame[FH_FRAME_HDR_SIZE + sizeof (struct fh_msg_close)];
    size_t n = fh_encode_close (frame, sizeof frame,
                                end == FH_RELAY_END_EOF || end == FH_RELAY_END_SHUTDOWN
                                    ? FH_CLOSE_NORMAL
                                    : FH_CLOSE_MALFORMED,
                                why);

    (void) !send (s->afd, frame, n, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  g_clear_pointer (&s->gwatch, fh_poller_watch_remove);
  g_clear_pointer (&s->awatch, fh_poller_watch_remove);
  if (s->afd >= 0)
    close (s->afd);
  close (s->gfd);
  g_clear_handle_id (&s->forward_timer, g_source_remove);
  g_clear_handle_id (&s->fb_timer, g_source_remove);
  g_clear_handle_id (&s->cur_timer, g_source_remove);
  s->params->done (s, end, why, s->params->data);
  g_byte_array_unref (s->gout);
  g_byte_array_unref (s->aout);
  g_free (s->gin);
  g_free (s->ain);
  g_free (s->vcpus);
  g_free (s->dirty);
  g_free (s->fb);
  g_free (s->hf);
  g_free (s->cur_khz);
  g_free (s->cur_sent);
  g_free (s);
}

/*
 * Send or queue bytes on fd.  FALSE when the queue would pass max (the
 * peer does not read) or the socket failed; the caller ends the session.
 */
static gboolean
out_send (int fd, FhPollerWatch *watch, GByteArray *out, const uint8_t *buf, size_t len, size_t max)
{
  size_t off = 0;

  if (out->len == 0) {
    ssize_t n = send (fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return FALSE;
    off = n > 0 ? (size_t) n : 0;
  }
  if (off == len)
    return TRUE;
  if (out->len + (len - off) > max)
    return FALSE;
  g_byte_array_append (out, buf + off, (guint) (len - off));
  fh_poller_watch_set_cond (watch, G_IO_IN | G_IO_OUT);
  return TRUE;
}

/* The queued output goes on; FALSE when the socket failed. */
static gboolean
out_flush (int fd, FhPollerWatch *watch, GByteArray *out)
{
  ssize_t n;

  if (out->len == 0)
    return TRUE;
  n = send (fd, out->data, out->len, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n < 0)
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  g_byte_array_remove_range (out, 0, (guint) n);
  if (out->len == 0)
    fh_poller_watch_set_cond (watch, G_IO_IN);
  return TRUE;
}

static gboolean
to_guest (FhRelaySession *s, const uint8_t *buf, size_t len)
{
  gboolean was_empty = s->gout->len == 0;

  if (!out_send (s->gfd, s->gwatch, s->gout, buf, len, GUEST_OUT_MAX)) {
    session_end (s, FH_RELAY_END_SLOW, "the guest does not read its socket");
    return FALSE;
  }
  if (was_empty && s->gout->len)
    s->gout_since_us = g_get_monotonic_time ();
  return TRUE;
}

static gboolean
to_agent (FhRelaySession *s, const uint8_t *buf, size_t len)
{
  if (!out_send (s->afd, s->awatch, s->aout, buf, len, AGENT_OUT_MAX)) {
    session_end (s, FH_RELAY_END_AGENT_GONE, "the agent does not take our frames");
    return FALSE;
  }
  return TRUE;
}

/* What fd has, up to room bytes.  > 0: bytes read; 0: none now; -1: it closed or failed (ended). */
static gssize
read_some (FhRelaySession *s, int fd, uint8_t *buf, size_t room, FhRelayEnd end, const char *closed)
{
  ssize_t n = recv (fd, buf, room, MSG_DONTWAIT);

  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return 0;
  if (n <= 0) {
    session_end (s, end, "%s%s%s", closed, n < 0 ? ": " : "", n < 0 ? g_strerror (errno) : "");
    return -1;
  }
  return n;
}

typedef FhParseResult (*ParseFn) (const uint8_t *buf, size_t avail, FhFrame *frame,
                                  size_t *frame_size, FhError *err);
typedef gboolean (*FrameFn) (FhRelaySession *s, const FhFrame *f);

/*
 * Handle the whole frames at the start of buf (*len bytes), keeping a
 * partial one for the next read.  A framing error ends the session as
 * bad; FALSE when the session ended.
 */
static gboolean
take_frames (FhRelaySession *s, uint8_t *buf, size_t *len, ParseFn parse, FrameFn handle,
             FhRelayEnd bad)
{
  for (;;) {
    FhFrame f;
    FhError err = { 0 };
    size_t size;
    FhParseResult r = parse (buf, *len, &f, &size, &err);

    if (r == FH_PARSE_NEED_MORE)
      return TRUE;
    if (r == FH_PARSE_ERROR) {
      session_end (s, bad, "%s%s", bad != FH_RELAY_END_MALFORMED ? "from the agent: " : "", err.text);
      return FALSE;
    }
    if (!handle (s, &f))
      return FALSE;
    memmove (buf, buf + size, *len - size);
    *len -= size;
  }
}

/* ---- feedback: the agent's GRANTS and HOST_FREQ, to the guest ---- */

static gboolean on_fb_timer (gpointer data);

/* A snapshot when something changed, at most one per window, never queued behind another. */
static gboolean
feedback_send (FhRelaySession *s)
{
  static uint8_t frame[FH_VSOCK_FRAME_MAX]; /* the main loop is single-threaded */
  gint64 now = g_get_monotonic_time ();
  size_t n;

  if (!s->fb_dirty || !(s->features & (1u << VIRTIO_FREQHINT_F_FEEDBACK)) || s->gout->len ||
      s->fb_timer)
    return TRUE;
  if (now - s->last_fb_us < window_us ()) {
    s->fb_timer = g_timeout_add ((guint) ((s->last_fb_us + window_us () - now) / 1000) + 1,
                                 on_fb_timer, s);
    return TRUE;
  }
  s->fb->seq++;
  n = fh_vsock_encode_feedback (frame, sizeof frame, s->fb);
  s->fb_dirty = FALSE;
  s->last_fb_us = now;
  return n == 0 || to_guest (s, frame, n);
}

static gboolean on_cur_timer (gpointer data);

/*
 * DEV-41 as the device keeps it: a CUR_FREQ when what the guest may see
 * changed, at most one per window on the leading edge, never while a
 * snapshot is due, each value 0 or within its class of the guest's
 * snapshot (classes that changed since the agent sampled make it 0).
 */
static gboolean
cur_freq_send (FhRelaySession *s)
{
  static uint8_t frame[FH_VSOCK_FRAME_MAX]; /* the main loop is single-threaded */
  static uint32_t vals[FH_MAX_VCPUS];
  gint64 now = g_get_monotonic_time ();
  size_t n;

  if (!s->cur_dirty || !(s->features & (1u << VIRTIO_FREQHINT_F_CUR_FREQ)) || s->fb_dirty ||
      s->gout->len || s->cur_timer)
    return TRUE;
  for (guint i = 0; i < s->num_cpus; i++) {
    uint8_t k = s->fb->freq_class[i];

    vals[i] = k < s->fb->num_classes && s->cur_khz[i] >= s->fb->classes[k].min_khz &&
                      s->cur_khz[i] <= s->fb->classes[k].max_khz
                  ? s->cur_khz[i]
                  : 0;
  }
  if (memcmp (vals, s->cur_sent, s->num_cpus * sizeof (uint32_t)) == 0) {
    s->cur_dirty = FALSE;
    return TRUE;
  }
  if (now - s->last_cur_us < window_us ()) {
    s->cur_timer = g_timeout_add ((guint) ((s->last_cur_us + window_us () - now) / 1000) + 1,
                                  on_cur_timer, s);
    return TRUE;
  }
  n = fh_vsock_encode_cur_freq (frame, sizeof frame, s->cur_seq + 1, s->num_cpus, vals);
  if (n == 0)
    return TRUE;
  s->cur_seq++;
  memcpy (s->cur_sent, vals, s->num_cpus * sizeof (uint32_t));
  s->cur_dirty = FALSE;
  s->last_cur_us = now;
  return to_guest (s, frame, n);
}

/* What the guest is owed: the snapshot first, then CUR_FREQ. */
static gboolean
guest_events (FhRelaySession *s)
{
  return feedback_send (s) && cur_freq_send (s);
}

static gboolean
on_cur_timer (gpointer data)
{
  FhRelaySession *s = data;

  s->cur_timer = 0;
  cur_freq_send (s);
  return G_SOURCE_REMOVE;
}

static gboolean
on_fb_timer (gpointer data)
{
  FhRelaySession *s = data;

  s->fb_timer = 0;
  guest_events (s);
  return G_SOURCE_REMOVE;
}

static void
feedback_defaults (FhRelaySession *s)
{
  FhVsockFeedback *fb = s->fb;

  fb->operator_floor = 0;
  fb->operator_ceiling = VIRTIO_FREQHINT_SCALE;
  fb->num_vcpus = s->num_cpus;
  fb->num_classes = 0;
  for (guint i = 0; i < s->num_cpus; i++) {
    fb->grants[i] = (FhGrant){ 0, VIRTIO_FREQHINT_SCALE };
    fb->freq_class[i] = VIRTIO_FREQHINT_NO_FREQ_CLASS;
  }
}

/* ---- hints: the guest's records, coalesced, to the agent ---- */

static gboolean on_forward_timer (gpointer data);

/* What changed since the last frame (everything after a drop), if the link takes it now. */
static gboolean
forward (FhRelaySession *s)
{
  static uint8_t frame[FH_FRAME_MAX];
  static FhHints hints;
  size_t n;

  if (s->state != STATE_RUNNING || s->aout->len)
    return TRUE; /* the agent's link takes it when it drains (state, not events) */
  hints.num_records = 0;
  hints.flags = s->resend_full ? FH_HINTS_F_FULL : 0;
  hints.timestamp_ns = (uint64_t) g_get_real_time () * 1000;
  for (guint i = 0; i < s->num_cpus; i++)
    if (s->resend_full || s->dirty[i])
      hints.records[hints.num_records++] = s->vcpus[i];
  if (hints.num_records == 0)
    return TRUE;
  n = fh_encode_hints (frame, sizeof frame, &hints);
  if (n == 0) {
    session_end (s, FH_RELAY_END_MALFORMED, "cannot encode %u records", hints.num_records);
    return FALSE;
  }
  if (!to_agent (s, frame, n))
    return FALSE;
  s->resend_full = FALSE;
  memset (s->dirty, 0, s->num_cpus);
  s->last_forward_us = g_get_monotonic_time ();
  return TRUE;
}

/* Leading edge: at once after a quiet window, else at the window's end. */
static gboolean
schedule_forward (FhRelaySession *s)
{
  gint64 due = s->last_forward_us + window_us ();
  gint64 now = g_get_monotonic_time ();

  if (s->forward_timer)
    return TRUE;
  if (now >= due)
    return forward (s);
  s->forward_timer = g_timeout_add ((guint) ((due - now) / 1000) + 1, on_forward_timer, s);
  return TRUE;
}

static gboolean
on_forward_timer (gpointer data)
{
  FhRelaySession *s = data;

  s->forward_timer = 0;
  forward (s);
  return G_SOURCE_REMOVE;
}

/* ---- the agent's side ---- */

static gboolean on_agent (int fd, GIOCondition cond, gpointer data);

static gboolean
agent_connect (FhRelaySession *s, const FhVsockHello *gh)
{
  static FhHello hello; /* 1.2 KiB */
  uint8_t frame[FH_FRAME_MAX];
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  size_t n;

  if (strlen (s->params->agent_socket) >= sizeof sa.sun_path) {
    session_end (s, FH_RELAY_END_AGENT_GONE, "agent socket path too long");
    return FALSE;
  }
  strcpy (sa.sun_path, s->params->agent_socket);
  s->afd = socket (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->afd < 0 || connect (s->afd, (struct sockaddr *) &sa, sizeof sa) < 0) {
    session_end (s, FH_RELAY_END_AGENT_GONE, "cannot connect to the agent at %s: %s",
                 s->params->agent_socket, g_strerror (errno));
    return FALSE;
  }
  s->awatch = fh_poller_add (s->params->poller, s->afd, G_IO_IN, on_agent, s);
  if (!s->awatch) {
    session_end (s, FH_RELAY_END_AGENT_GONE, "cannot watch the agent's socket: %s",
                 g_strerror (errno));
    return FALSE;
  }
  memset (&hello, 0, sizeof hello);
  hello.version = FH_PROTO_VERSION;
  hello.num_vcpus = gh->num_cpus;
  hello.features = FH_F_RELAY;
  if (gh->features & (1u << VIRTIO_FREQHINT_F_PERF))
    hello.features |= FH_F_PERF;
  if (gh->features & (1u << VIRTIO_FREQHINT_F_FEEDBACK))
    hello.features |= FH_F_GRANTS;
  if ((gh->features & (1u << VIRTIO_FREQHINT_F_FEEDBACK)) &&
      (gh->features & (1u << VIRTIO_FREQHINT_F_HOST_FREQ)))
    hello.features |= FH_F_HOST_FREQ;
  if (s->features & (1u << VIRTIO_FREQHINT_F_CUR_FREQ))
    hello.features |= FH_F_CUR_FREQ;
  hello.relay_transport = s->peer.transport;
  hello.relay_cid = s->peer.cid;
  hello.qemu_pid = s->peer.pid;
  memcpy (hello.relay_path, s->peer.path, sizeof hello.relay_path);
  n = fh_encode_hello (frame, sizeof frame, &hello);
  return n && to_agent (s, frame, n);
}

/* WELCOME: CONFIG to the guest, the first snapshot, and the state the guest sends next. */
static gboolean
agent_welcome (FhRelaySession *s, const FhFrame *f, uint32_t offered)
{
  uint8_t frame[64];
  FhWelcome w;
  FhError err = { 0 };
  size_t n;

  if (!fh_decode_welcome (f, &w, &err) || (w.features & ~offered)) {
    session_end (s, FH_RELAY_END_AGENT_GONE, "bad WELCOME: %s", err.text[0] ? err.text : "features");
    return FALSE;
  }
  s->agent_features = w.features;
  /* VS-7: a subset of what the guest offered and the agent can carry */
  if (!(w.features & FH_F_PERF))
    s->features &= ~(1u << VIRTIO_FREQHINT_F_PERF);
  if (!(w.features & FH_F_GRANTS))
    s->features &= ~((1u << VIRTIO_FREQHINT_F_FEEDBACK) | (1u << VIRTIO_FREQHINT_F_HOST_FREQ));
  if (!(w.features & FH_F_HOST_FREQ))
    s->features &= ~(1u << VIRTIO_FREQHINT_F_HOST_FREQ);
  if (!(w.features & FH_F_CUR_FREQ) || !(s->features & (1u << VIRTIO_FREQHINT_F_HOST_FREQ)))
    s->features &= ~(1u << VIRTIO_FREQHINT_F_CUR_FREQ);
  n = fh_vsock_encode_config (frame, sizeof frame, s->features, s->num_cpus);
  if (!to_guest (s, frame, n))
    return FALSE;
  s->state = STATE_RUNNING;
  s->fb->flags = VIRTIO_FREQHINT_FB_ACTIVE;
  s->fb_dirty = TRUE;
  s->last_fb_us = 0;
  s->resend_full = TRUE;
  g_message ("%s: served (%u vCPUs, features 0x%x)", s->desc, s->num_cpus, s->features);
  return guest_events (s);
}

static gboolean
agent_frame (FhRelaySession *s, const FhFrame *f)
{
  static FhGrants grants;
  static FhHostFreq hf;
  FhError err = { 0 };

  switch (f->msg_type) {
  case FH_MSG_WELCOME:
    if (s->state != STATE_WELCOME)
      break;
    return agent_welcome (s, f,
                          FH_F_RELAY | FH_F_PERF | FH_F_GRANTS | FH_F_HOST_FREQ | FH_F_CUR_FREQ);
  case FH_MSG_GRANTS:
    if (s->state != STATE_RUNNING)
      break;
    if (!fh_decode_grants (f, s->num_cpus, &grants, &err))
      goto bad;
    s->fb->operator_floor = grants.operator_floor;
    s->fb->operator_ceiling = grants.operator_ceiling;
    memcpy (s->fb->grants, grants.grants, s->num_cpus * sizeof (FhGrant));
    s->fb_dirty = TRUE;
    return guest_events (s);
  case FH_MSG_HOST_FREQ:
    if (s->state != STATE_RUNNING || !(s->agent_features & FH_F_HOST_FREQ))
      break;
    if (!fh_decode_host_freq (f, s->num_cpus, &hf, &err))
      goto bad;
    if (s->features & (1u << VIRTIO_FREQHINT_F_HOST_FREQ)) {
      s->fb->num_classes = hf.num_classes;
      memcpy (s->fb->classes, hf.classes, sizeof hf.classes);
      memcpy (s->fb->freq_class, hf.freq_class, s->num_cpus);
      s->fb_dirty = TRUE;
    }
    if (!s->hf)
      s->hf = g_new (FhHostFreq, 1);
    *s->hf = hf;
    s->cur_dirty = TRUE;
    return guest_events (s);
  case FH_MSG_CUR_FREQ: {
    static FhCurFreq cf;

    if (s->state != STATE_RUNNING || !(s->agent_features & FH_F_CUR_FREQ))
      break;
    if (!fh_decode_cur_freq (f, s->num_cpus, s->hf, &cf, &err))
      goto bad;
    memcpy (s->cur_khz, cf.cur_khz, s->num_cpus * sizeof (uint32_t));
    s->cur_dirty = TRUE;
    return guest_events (s);
  }
  case FH_MSG_PING: {
    uint8_t frame[32];
    uint64_t cookie;

    if (s->state == STATE_HELLO || !fh_decode_ping (f, &cookie, &err))
      goto bad;
    return to_agent (s, frame, fh_encode_ping (frame, sizeof frame, FH_MSG_PONG, cookie));
  }
  case FH_MSG_CLOSE: {
    FhClose c = { 0 };
    g_autofree char *text = NULL;

    fh_decode_close (f, &c, &err);
    text = fh_text_sanitize (c.text, -1);
    /* the agent's refusal of this guest (no such VM, ...) is the guest's fault;
     * its exit or a newer connection of the same VM is not */
    session_end (s,
                 c.reason == FH_CLOSE_NORMAL || c.reason == FH_CLOSE_DUPLICATE ||
                         c.reason == FH_CLOSE_TIMEOUT
                     ? FH_RELAY_END_AGENT_GONE
                     : FH_RELAY_END_AGENT,
                 "the agent closed the link: %s: %s", fh_close_reason_name (c.reason), text);
    return FALSE;
  }
  default:
    break;
  }
  fh_error_set (&err, FH_CLOSE_PROTOCOL, "unexpected %s from the agent",
                fh_msg_type_name (f->msg_type));
bad:
  session_end (s, FH_RELAY_END_AGENT_GONE, "%s", err.text);
  return FALSE;
}

static gboolean
on_agent (int fd, GIOCondition cond, gpointer data)
{
  FhRelaySession *s = data;
  ssize_t n;

  if ((cond & G_IO_OUT) && !out_flush (s->afd, s->awatch, s->aout)) {
    session_end (s, FH_RELAY_END_AGENT_GONE, "the agent's socket failed: %s", g_strerror (errno));
    return G_SOURCE_REMOVE;
  }
  if ((cond & G_IO_OUT) && s->aout->len == 0 && !forward (s))
    return G_SOURCE_REMOVE;
  if (!(cond & (G_IO_IN | G_IO_HUP | G_IO_ERR)))
    return G_SOURCE_CONTINUE;
  n = read_some (s, fd, s->ain + s->ain_len, FH_FRAME_MAX - s->ain_len, FH_RELAY_END_AGENT_GONE,
                 "the agent closed the link");
  if (n <= 0)
    return n == 0 ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
  s->ain_len += (size_t) n;
  return take_frames (s, s->ain, &s->ain_len, fh_frame_parse, agent_frame,
                      FH_RELAY_END_AGENT_GONE)
             ? G_SOURCE_CONTINUE
             : G_SOURCE_REMOVE;
}

/* ---- the guest's side ---- */

/* VS-6, VS-7: the guest's HELLO, relayed; CONFIG follows the agent's WELCOME. */
static gboolean
guest_hello (FhRelaySession *s, const FhFrame *f)
{
  FhVsockHello gh;
  FhError err = { 0 };

  if (!fh_vsock_decode_hello (f, MIN (FREQHINT_VSOCK_MAX_VCPUS, FH_MAX_VCPUS), &gh, &err)) {
    session_end (s, FH_RELAY_END_MALFORMED, "HELLO: %s", err.text);
    return FALSE;
  }
  s->num_cpus = gh.num_cpus;
  s->features = gh.features & FH_VSOCK_HOST_FEATURES;
  if (!(s->features & (1u << VIRTIO_FREQHINT_F_FEEDBACK)))
    s->features &= ~(1u << VIRTIO_FREQHINT_F_HOST_FREQ);
  if (!(s->features & (1u << VIRTIO_FREQHINT_F_HOST_FREQ)))
    s->features &= ~(1u << VIRTIO_FREQHINT_F_CUR_FREQ);
  s->vcpus = g_new0 (FhRecord, s->num_cpus);
  for (guint i = 0; i < s->num_cpus; i++)
    s->vcpus[i].vcpu = (uint16_t) i;
  s->dirty = g_new0 (guint8, s->num_cpus);
  s->fb = g_new0 (FhVsockFeedback, 1);
  s->cur_khz = g_new0 (uint32_t, s->num_cpus);
  s->cur_sent = g_new0 (uint32_t, s->num_cpus);
  feedback_defaults (s);
  s->state = STATE_WELCOME;
  return agent_connect (s, &gh);
}

static gboolean
guest_hints (FhRelaySession *s, const FhFrame *f)
{
  static FhHints hints;
  FhError err = { 0 };
  unsigned rejected;

  if (s->state != STATE_RUNNING) {
    session_end (s, FH_RELAY_END_MALFORMED, "message type %u before CONFIG", f->msg_type);
    return FALSE;
  }
  if (!fh_vsock_decode_hints (f, s->num_cpus,
                              (s->features & (1u << VIRTIO_FREQHINT_F_PERF)) != 0, &hints,
                              &rejected, &err)) {
    session_end (s, FH_RELAY_END_MALFORMED, "%s", err.text);
    return FALSE;
  }
  s->records += hints.num_records + rejected;
  if (s->records > FREQHINT_VSOCK_HOST_RECORDS_PER_S ((guint64) s->num_cpus)) {
    session_end (s, FH_RELAY_END_RATE, "more than %u records in a second",
                 (guint) FREQHINT_VSOCK_HOST_RECORDS_PER_S (s->num_cpus));
    return FALSE;
  }
  if (rejected)
    g_debug ("%s: %u records broke the record rules and were dropped", s->desc, rejected);
  /* hints are state: within a message and across them the later record wins */
  for (guint i = 0; i < hints.num_records; i++) {
    s->vcpus[hints.records[i].vcpu] = hints.records[i];
    s->dirty[hints.records[i].vcpu] = 1;
  }
  return hints.num_records == 0 || schedule_forward (s);
}

static gboolean
guest_frame (FhRelaySession *s, const FhFrame *f)
{
  if (++s->msgs > FREQHINT_VSOCK_HOST_MSGS_PER_S) {
    session_end (s, FH_RELAY_END_RATE, "more than %u messages in a second",
                 FREQHINT_VSOCK_HOST_MSGS_PER_S);
    return FALSE;
  }
  if (s->state == STATE_HELLO)
    return guest_hello (s, f);
  if (f->msg_type == VIRTIO_FREQHINT_MSG_HINTS)
    return guest_hints (s, f);
  session_end (s, FH_RELAY_END_MALFORMED, "message type %u is not one a driver sends",
               f->msg_type);
  return FALSE;
}

static gboolean
on_guest (int fd, GIOCondition cond, gpointer data)
{
  FhRelaySession *s = data;
  gint64 now = g_get_monotonic_time ();
  guint64 bytes_max;
  ssize_t n;

  if (cond & G_IO_OUT) {
    if (!out_flush (s->gfd, s->gwatch, s->gout)) {
      session_end (s, FH_RELAY_END_EOF, "the guest's socket failed: %s", g_strerror (errno));
      return G_SOURCE_REMOVE;
    }
    if (s->gout->len == 0 && !guest_events (s))
      return G_SOURCE_REMOVE;
  }
  if (!(cond & (G_IO_IN | G_IO_HUP | G_IO_ERR)))
    return G_SOURCE_CONTINUE;
  n = read_some (s, fd, s->gin + s->gin_len, FH_VSOCK_FRAME_MAX - s->gin_len, FH_RELAY_END_EOF,
                 "the guest closed the connection");
  if (n <= 0)
    return n == 0 ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
  if (now - s->period_us >= G_USEC_PER_SEC) {
    s->period_us = now;
    s->msgs = s->records = s->bytes = 0;
  }
  s->bytes += (guint64) n;
  bytes_max = FREQHINT_VSOCK_HOST_BYTES_PER_S ((guint64) MAX (s->num_cpus, 1));
  if (s->bytes > bytes_max) {
    session_end (s, FH_RELAY_END_RATE, "more than %" G_GUINT64_FORMAT " bytes in a second",
                 bytes_max);
    return G_SOURCE_REMOVE;
  }
  s->gin_len += (size_t) n;
  return take_frames (s, s->gin, &s->gin_len, fh_vsock_frame_parse, guest_frame,
                      FH_RELAY_END_MALFORMED)
             ? G_SOURCE_CONTINUE
             : G_SOURCE_REMOVE;
}

FhRelaySession *
fh_relay_session_new (int fd, const FhRelayPeer *peer, const FhRelayParams *params)
{
  FhRelaySession *s = g_new0 (FhRelaySession, 1);

  s->params = params;
  s->peer = *peer;
  s->gfd = fd;
  s->afd = -1;
  s->gout = g_byte_array_new ();
  s->aout = g_byte_array_new ();
  s->gin = g_malloc (FH_VSOCK_FRAME_MAX);
  s->ain = g_malloc (FH_FRAME_MAX);
  s->accepted_us = s->period_us = g_get_monotonic_time ();
  if (peer->transport == FH_RELAY_HYBRID) {
    g_autofree char *path = fh_text_sanitize (peer->path, -1);

    g_snprintf (s->desc, sizeof s->desc, "hybrid socket %s", path);
  } else {
    g_snprintf (s->desc, sizeof s->desc, "CID %u", peer->cid);
  }
  s->gwatch = fh_poller_add (params->poller, fd, G_IO_IN, on_guest, s);
  if (!s->gwatch) {
    session_end (s, FH_RELAY_END_SHUTDOWN, "cannot watch the socket: %s", g_strerror (errno));
    return NULL;
  }
  return s;
}

void
fh_relay_session_close (FhRelaySession *s)
{
  session_end (s, FH_RELAY_END_SHUTDOWN, "the front end stops");
}

const FhRelayPeer *
fh_relay_session_peer (FhRelaySession *s)
{
  return &s->peer;
}

const char *
fh_relay_session_describe (FhRelaySession *s)
{
  return s->desc;
}

void
fh_relay_session_tick (FhRelaySession *s, gint64 now_us)
{
  if (s->state != STATE_RUNNING &&
      now_us - s->accepted_us > (gint64) s->params->hello_timeout_ms * G_TIME_SPAN_MILLISECOND) {
    session_end (s, s->state == STATE_HELLO ? FH_RELAY_END_TIMEOUT : FH_RELAY_END_AGENT_GONE,
                 s->state == STATE_HELLO ? "no HELLO within %u ms"
                                         : "no WELCOME from the agent within %u ms",
                 s->params->hello_timeout_ms);
    return;
  }
  if (s->gout->len &&
      now_us - s->gout_since_us > (gint64) s->params->write_timeout_ms * G_TIME_SPAN_MILLISECOND)
    session_end (s, FH_RELAY_END_SLOW, "output unread for %u ms", s->params->write_timeout_ms);
}
