/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <gio/gio.h>
#include <microhttpd.h>

#include "fh-log.h"

#if MHD_VERSION < 0x00097002
typedef int MhdResult;
#else
typedef enum MHD_Result MhdResult;
#endif

/*
 * Bounded (threat model G-13): at most max_connections connections, and each
 * lives at most timeout_ms from accept — headers, answer and keep-alive
 * included — however slowly its client trickles bytes.  libmicrohttpd's own
 * timeout only measures idleness, so the daemon's main loop shuts down
 * connections past their deadline; MHD then closes them in its thread.
 *
 * A fixed number of slots alone lets a local user deny every scrape: the
 * scraper shares 127.0.0.1 with every local process, so a per-address limit
 * cannot tell them apart, and a client that holds its slots with requests it
 * never finishes, reopening them when cut, keeps them full.  So, like the
 * control socket, a connection beyond max_connections displaces the oldest
 * one that has not sent a whole request yet (itself, if every other one is
 * being answered).  A scraper sends its request at once, so it is answered
 * however many half-open requests others keep reopening.  MHD's own limit
 * is higher by FH_METRICS_SPARE, for displaced connections its thread has
 * not closed yet, so that it never refuses at accept.
 */
typedef struct {
  int fd;
  gint64 start_us;
  struct sockaddr_storage peer;
  socklen_t peer_len; /* 0: unknown, never shut down */
  gboolean requested; /* a whole request arrived, its answer is not done */
  gboolean cut;       /* shut down (deadline or displaced): MHD closes it */
} Conn;

struct _FhMetrics {
  struct MHD_Daemon *mhd;
  GMutex lock;
  GCond rendered; /* a scrape's next piece is there (or the daemon stops) */
  GMainContext *context; /* the main loop's, where the page is rendered */
  FhMetricsRenderer renderer;
  gpointer renderer_data;
  GPtrArray *requests; /* GSource*: pieces asked of the main loop; under lock */
  gboolean stopping;   /* under lock */
  guint port;
  GHashTable *conns; /* struct MHD_Connection* -> Conn*; under lock */
  guint max_connections;
  gint64 timeout_us;
  guint reaper;
  guint64 expired;
};

/* libmicrohttpd's messages, one per refused or broken connection if a
 * client wants: rate-limited like the device socket's refusals (G-13). */
static FhLogLimit mhd_messages = FH_LOG_LIMIT_INIT ("libmicrohttpd messages", 20, 10);

static void G_GNUC_PRINTF (2, 0) mhd_log (void *cls, const char *fmt, va_list ap)
{
  g_autofree char *text = NULL;

  (void) cls;
  if (!fh_log_limit_allow (&mhd_messages))
    return;
  text = g_strdup_vprintf (fmt, ap);
  g_message ("metrics: libmicrohttpd: %s", g_strchomp (text));
}

/* Under m->lock: shut a connection down once; MHD's thread then closes it. */
static gboolean
conn_cut (Conn *c)
{
  struct sockaddr_storage now_peer = { 0 };
  socklen_t len = sizeof now_peer;
  gboolean done = FALSE;

  if (c->cut || c->fd < 0)
    return FALSE;
  /* Still the same socket (never another one that reused the number)? */
  if (c->peer_len && getpeername (c->fd, (struct sockaddr *) &now_peer, &len) == 0 &&
      len == c->peer_len && memcmp (&now_peer, &c->peer, len) == 0) {
    shutdown (c->fd, SHUT_RDWR);
    done = TRUE;
  }
  c->cut = TRUE;
  return done;
}

/* Under m->lock, after a connection started: over the limit, displace one. */
static void
displace_oldest (FhMetrics *m)
{
  GHashTableIter it;
  gpointer value;
  Conn *victim = NULL;
  guint live = 0;

  g_hash_table_iter_init (&it, m->conns);
  while (g_hash_table_iter_next (&it, NULL, &value)) {
    Conn *c = value;

    if (c->cut)
      continue;
    live++;
    if (!c->requested && (!victim || c->start_us < victim->start_us))
      victim = c;
  }
  if (live > m->max_connections && victim)
    conn_cut (victim);
}

/*
 * One answer being drained.  The page is the daemon's state, which only
 * the main loop touches: when the answer's text runs out, the HTTP thread
 * asks the main loop for the next piece (an idle source) and waits for it.
 * So the page is rendered at scrape time, at most about two pieces ahead
 * of the socket, and never held whole, let alone twice; the main loop
 * renders a piece between its other events, as it does for the control
 * socket's streams, and no piece sees a half-updated state.  The next
 * piece is asked for when half of the current one is served, so that the
 * main loop renders while the socket drains; pieces are large (a few
 * hundred VMs' vCPUs each) because a busy loop may take a while to come
 * round to each, and the whole answer must fit in the connection's
 * deadline (G-13).
 * (The alternative, a snapshot taken after each decision pass, cost a
 * copy of the page per pass whether or not anyone scraped.)
 */
#define FH_METRICS_PIECE (256 * 1024)

typedef struct {
  gint refs;      /* atomic: the MHD response, and a request in flight */
  FhMetrics *m;   /* fh_metrics_free() ends both before freeing it */
  GDestroyNotify free_page;
  gpointer page;  /* the renderer's cursor; main thread only */
  GString *text;  /* rendered, from pos on not yet served; under m->lock */
  gsize pos;
  gboolean asked; /* a request in flight; under m->lock */
  gboolean done;  /* the page is complete in text; under m->lock */
} Scrape;

static void
scrape_unref (gpointer data)
{
  Scrape *sc = data;

  if (!g_atomic_int_dec_and_test (&sc->refs))
    return;
  /* the renderer's free only frees memory (any thread may drop the last ref) */
  if (sc->page)
    sc->free_page (sc->page);
  g_string_free (sc->text, TRUE);
  g_free (sc);
}

/* Main thread, under m->lock: the request being dispatched is done. */
static void
request_done (FhMetrics *m)
{
  GSource *self = g_main_current_source ();

  if (g_ptr_array_remove_fast (m->requests, self))
    g_source_unref (self); /* ours; the context holds its own until we return */
}

/* Main thread: the scrape's next piece, appended to what is left of its text. */
static gboolean
render_piece (gpointer data)
{
  Scrape *sc = data;
  FhMetrics *m = sc->m;
  GString *piece = g_string_sized_new (FH_METRICS_PIECE + FH_METRICS_PIECE / 4);
  gboolean more;

  if (g_atomic_int_get (&sc->refs) == 1) {
    /* the answer is gone (client closed): nothing to render for */
    g_string_free (piece, TRUE);
    g_mutex_lock (&m->lock);
    request_done (m);
    sc->asked = FALSE;
    g_mutex_unlock (&m->lock);
    return G_SOURCE_REMOVE;
  }
  if (!sc->page)
    sc->page = m->renderer.open (m->renderer_data);
  more = m->renderer.next (sc->page, piece, FH_METRICS_PIECE);
  if (!more)
    g_clear_pointer (&sc->page, sc->free_page);
  g_mutex_lock (&m->lock);
  request_done (m);
  if (sc->pos == sc->text->len) {
    g_string_free (sc->text, TRUE);
    sc->text = piece;
  } else {
    g_string_erase (sc->text, 0, (gssize) sc->pos);
    g_string_append_len (sc->text, piece->str, (gssize) piece->len);
    g_string_free (piece, TRUE);
  }
  sc->pos = 0;
  sc->done = !more;
  sc->asked = FALSE;
  g_cond_broadcast (&m->rendered);
  g_mutex_unlock (&m->lock);
  return G_SOURCE_REMOVE;
}

/* HTTP thread, under m->lock: ask the main loop for the scrape's next piece. */
static void
ask_piece (FhMetrics *m, Scrape *sc)
{
  GSource *src;

  if (sc->asked || sc->done)
    return;
  src = g_idle_source_new ();
  sc->asked = TRUE;
  g_atomic_int_inc (&sc->refs);
  g_source_set_priority (src, G_PRIORITY_DEFAULT);
  g_source_set_callback (src, render_piece, sc, scrape_unref);
  g_ptr_array_add (m->requests, src);
  /* never dispatched here: only the main loop (which owns the context) runs it */
  g_source_attach (src, m->context);
}

/*
 * HTTP thread: MHD asks for the next bytes of the answer as the socket
 * drains.  Waits for the main loop at most the connection's timeout (the
 * reaper cuts the connection then anyway).
 */
static ssize_t
read_page (void *cls, uint64_t pos, char *buf, size_t max)
{
  Scrape *sc = cls;
  FhMetrics *m = sc->m;
  ssize_t ret;

  (void) pos;
  g_mutex_lock (&m->lock);
  for (;;) {
    gint64 deadline;

    if (sc->pos < sc->text->len) {
      max = MIN (max, sc->text->len - sc->pos);
      memcpy (buf, sc->text->str + sc->pos, max);
      sc->pos += max;
      ret = (ssize_t) max;
      if (sc->text->len - sc->pos < FH_METRICS_PIECE / 2)
        ask_piece (m, sc);
      break;
    }
    if (sc->done) {
      ret = MHD_CONTENT_READER_END_OF_STREAM;
      break;
    }
    if (m->stopping) {
      ret = MHD_CONTENT_READER_END_WITH_ERROR;
      break;
    }
    ask_piece (m, sc);
    deadline = g_get_monotonic_time () + m->timeout_us;
    if (!g_cond_wait_until (&m->rendered, &m->lock, deadline) && sc->asked) {
      ret = MHD_CONTENT_READER_END_WITH_ERROR;
      break;
    }
  }
  g_mutex_unlock (&m->lock);
  return ret;
}

static void
notify_connection (void *cls, struct MHD_Connection *connection, void **socket_context,
                   enum MHD_ConnectionNotificationCode toe)
{
  FhMetrics *m = cls;

  g_mutex_lock (&m->lock);
  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *fd =
        MHD_get_connection_info (connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *addr =
        MHD_get_connection_info (connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    Conn *c = g_new0 (Conn, 1);

    c->fd = fd ? fd->connect_fd : -1;
    c->start_us = g_get_monotonic_time ();
    if (addr && addr->client_addr && addr->client_addr->sa_family == AF_INET)
      c->peer_len = sizeof (struct sockaddr_in);
    else if (addr && addr->client_addr && addr->client_addr->sa_family == AF_INET6)
      c->peer_len = sizeof (struct sockaddr_in6);
    if (c->peer_len)
      memcpy (&c->peer, addr->client_addr, c->peer_len);
    g_hash_table_insert (m->conns, connection, c);
    displace_oldest (m);
  } else {
    g_hash_table_remove (m->conns, connection);
  }
  g_mutex_unlock (&m->lock);
}

/* An answer is done: a kept-alive connection waits for a request again. */
static void
request_completed (void *cls, struct MHD_Connection *connection, void **con_cls,
                   enum MHD_RequestTerminationCode toe)
{
  FhMetrics *m = cls;
  Conn *c;

  (void) con_cls;
  (void) toe;
  g_mutex_lock (&m->lock);
  c = g_hash_table_lookup (m->conns, connection);
  if (c)
    c->requested = FALSE;
  g_mutex_unlock (&m->lock);
}

/* Shut down connections past their deadline (MHD closes them). */
static gboolean
reap (gpointer data)
{
  FhMetrics *m = data;
  gint64 now = g_get_monotonic_time ();
  GHashTableIter it;
  gpointer value;

  g_mutex_lock (&m->lock);
  g_hash_table_iter_init (&it, m->conns);
  while (g_hash_table_iter_next (&it, NULL, &value)) {
    Conn *c = value;

    if (now - c->start_us >= m->timeout_us && conn_cut (c))
      m->expired++;
  }
  g_mutex_unlock (&m->lock);
  return G_SOURCE_CONTINUE;
}

static MhdResult
answer (void *cls, struct MHD_Connection *connection, const char *url, const char *method,
        const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
  FhMetrics *m = cls;
  struct MHD_Response *resp;
  MhdResult ret;
  unsigned int status = MHD_HTTP_OK;
  char *body = NULL;
  Conn *c;

  /* A whole request: no longer one to displace (until its answer is done). */
  g_mutex_lock (&m->lock);
  c = g_hash_table_lookup (m->conns, connection);
  if (c)
    c->requested = TRUE;
  g_mutex_unlock (&m->lock);

  if (strcmp (method, "GET") != 0 && strcmp (method, "HEAD") != 0) {
    body = g_strdup ("only GET\n");
    status = MHD_HTTP_METHOD_NOT_ALLOWED;
  } else if (strcmp (url, "/metrics") != 0) {
    body = g_strdup ("freqhintd: see /metrics\n");
    status = MHD_HTTP_NOT_FOUND;
  } else {
    Scrape *sc = g_new0 (Scrape, 1);

    sc->refs = 1;
    sc->m = m;
    sc->free_page = m->renderer.free;
    sc->text = g_string_new (NULL);
    /* length unknown: HTTP/1.1 chunked, or HTTP/1.0 until the close */
    resp = MHD_create_response_from_callback (MHD_SIZE_UNKNOWN, 16 * 1024, read_page, sc,
                                              scrape_unref);
    goto queue;
  }
  resp = MHD_create_response_from_buffer (strlen (body), body, MHD_RESPMEM_MUST_FREE);
queue:
  MHD_add_response_header (resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                           status == MHD_HTTP_OK ? "text/plain; version=0.0.4; charset=utf-8"
                                                 : "text/plain");
  ret = MHD_queue_response (connection, status, resp);
  MHD_destroy_response (resp);
  return ret;
}

/*
 * An IPv4 or IPv6 literal ("127.0.0.1", "::1", "[::1]", "::" for every
 * address of both families); host names are not resolved.
 */
static gboolean
parse_address (const char *address, guint port, struct sockaddr_storage *ss, unsigned int *flags,
               GError **error)
{
  struct sockaddr_in *sin = (struct sockaddr_in *) ss;
  struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *) ss;
  g_autofree char *bare = NULL;
  gsize len = strlen (address);

  memset (ss, 0, sizeof *ss);
  if (len >= 2 && address[0] == '[' && address[len - 1] == ']')
    bare = g_strndup (address + 1, len - 2);
  else
    bare = g_strdup (address);
  if (inet_pton (AF_INET, bare, &sin->sin_addr) == 1) {
    sin->sin_family = AF_INET;
    sin->sin_port = htons ((uint16_t) port);
    return TRUE;
  }
  if (inet_pton (AF_INET6, bare, &sin6->sin6_addr) == 1) {
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons ((uint16_t) port);
    *flags |= MHD_USE_IPv6;
    /* "::" also takes IPv4 connections (mapped), like most daemons. */
    if (IN6_IS_ADDR_UNSPECIFIED (&sin6->sin6_addr))
      *flags |= MHD_USE_DUAL_STACK;
    return TRUE;
  }
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
               "metrics address \"%s\" is not an IPv4 or IPv6 address", address);
  return FALSE;
}

FhMetrics *
fh_metrics_new (const char *address, guint port, guint max_connections, guint timeout_ms,
                const FhMetricsRenderer *renderer, gpointer renderer_data, GError **error)
{
  struct sockaddr_storage ss;
  unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  FhMetrics *m;
  const union MHD_DaemonInfo *info;

  if (!parse_address (address, port, &ss, &flags, error))
    return NULL;
  m = g_new0 (FhMetrics, 1);
  g_mutex_init (&m->lock);
  g_cond_init (&m->rendered);
  m->context = g_main_context_ref_thread_default ();
  m->renderer = *renderer;
  m->renderer_data = renderer_data;
  m->requests = g_ptr_array_new ();
  m->conns = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  m->max_connections = max_connections;
  m->timeout_us = (gint64) timeout_ms * G_TIME_SPAN_MILLISECOND;
  m->mhd = MHD_start_daemon (
      flags | MHD_USE_AUTO, (uint16_t) port, NULL, NULL, answer, m,
      /* first, or MHD logs the other options' complaints itself */
      MHD_OPTION_EXTERNAL_LOGGER, mhd_log, m, MHD_OPTION_SOCK_ADDR, &ss,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned int) (max_connections + FH_METRICS_SPARE),
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) MAX (1, (timeout_ms + 999) / 1000),
      MHD_OPTION_NOTIFY_CONNECTION, notify_connection, m, MHD_OPTION_NOTIFY_COMPLETED,
      request_completed, m, MHD_OPTION_END);
  if (!m->mhd) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "cannot serve metrics on %s:%u", address,
                 port);
    g_mutex_clear (&m->lock);
    g_cond_clear (&m->rendered);
    g_main_context_unref (m->context);
    g_ptr_array_unref (m->requests);
    g_hash_table_unref (m->conns);
    g_free (m);
    return NULL;
  }
  m->reaper = g_timeout_add (MAX (50u, timeout_ms / 4), reap, m);
  info = MHD_get_daemon_info (m->mhd, MHD_DAEMON_INFO_BIND_PORT);
  m->port = info ? info->port : port;
  return m;
}

/* Main thread (the one that runs the context the pieces are asked of). */
void
fh_metrics_free (FhMetrics *m)
{
  if (!m)
    return;
  g_clear_handle_id (&m->reaper, g_source_remove);
  /* An answer waiting for a piece gives up; then the HTTP thread ends. */
  g_mutex_lock (&m->lock);
  m->stopping = TRUE;
  g_cond_broadcast (&m->rendered);
  g_mutex_unlock (&m->lock);
  MHD_stop_daemon (m->mhd);
  /* Pieces asked and not rendered: never rendered now (that drops their scrape). */
  while (m->requests->len) {
    GSource *src = g_ptr_array_steal_index_fast (m->requests, 0);

    g_source_destroy (src);
    g_source_unref (src);
  }
  g_ptr_array_unref (m->requests);
  g_main_context_unref (m->context);
  g_hash_table_unref (m->conns);
  g_cond_clear (&m->rendered);
  g_mutex_clear (&m->lock);
  g_free (m);
}

guint
fh_metrics_port (FhMetrics *m)
{
  return m->port;
}

guint64
fh_metrics_expired (FhMetrics *m)
{
  guint64 n;

  g_mutex_lock (&m->lock);
  n = m->expired;
  g_mutex_unlock (&m->lock);
  return n;
}
