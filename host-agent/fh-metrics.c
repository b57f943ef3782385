/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <gio/gio.h>
#include <microhttpd.h>

#if MHD_VERSION < 0x00097002
typedef int MhdResult;
#else
typedef enum MHD_Result MhdResult;
#endif

/*
 * Bounded (threat model G-13): at most max_connections connections (half of
 * them from one address), and each lives at most timeout_ms from accept —
 * headers, answer and keep-alive included — however slowly its client
 * trickles bytes.  libmicrohttpd's own timeout only measures idleness, so
 * the daemon's main loop shuts down connections past their deadline; MHD
 * then closes them in its thread.
 */
typedef struct {
  int fd;
  gint64 start_us;
  struct sockaddr_storage peer;
  socklen_t peer_len; /* 0: unknown, never shut down */
} Conn;

struct _FhMetrics {
  struct MHD_Daemon *mhd;
  GMutex lock;
  GBytes *text; /* shared by every answer in flight, never copied per scrape */
  guint port;
  GHashTable *conns; /* struct MHD_Connection* -> Conn*; under lock */
  gint64 timeout_us;
  guint reaper;
  guint64 expired;
};

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
  } else {
    g_hash_table_remove (m->conns, connection);
  }
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
    struct sockaddr_storage now_peer = { 0 };
    socklen_t len = sizeof now_peer;

    if (c->fd < 0 || now - c->start_us < m->timeout_us)
      continue;
    /* Still the same socket (never another one that reused the number)? */
    if (c->peer_len && getpeername (c->fd, (struct sockaddr *) &now_peer, &len) == 0 &&
        len == c->peer_len && memcmp (&now_peer, &c->peer, len) == 0) {
      shutdown (c->fd, SHUT_RDWR);
      m->expired++;
    }
    c->fd = -1; /* once */
  }
  g_mutex_unlock (&m->lock);
  return G_SOURCE_CONTINUE;
}

/* MHD copies the page into each connection's buffer as the socket drains. */
static ssize_t
read_page (void *cls, uint64_t pos, char *buf, size_t max)
{
  gsize len;
  const char *data = g_bytes_get_data (cls, &len);

  if (pos >= len)
    return MHD_CONTENT_READER_END_OF_STREAM;
  max = MIN (max, len - pos);
  memcpy (buf, data + pos, max);
  return (ssize_t) max;
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

  if (strcmp (method, "GET") != 0 && strcmp (method, "HEAD") != 0) {
    body = g_strdup ("only GET\n");
    status = MHD_HTTP_METHOD_NOT_ALLOWED;
  } else if (strcmp (url, "/metrics") != 0) {
    body = g_strdup ("freqhintd: see /metrics\n");
    status = MHD_HTTP_NOT_FOUND;
  } else {
    GBytes *text;

    g_mutex_lock (&m->lock);
    text = m->text ? g_bytes_ref (m->text) : NULL;
    g_mutex_unlock (&m->lock);
    if (text)
      resp = MHD_create_response_from_callback (g_bytes_get_size (text), 64 * 1024, read_page,
                                                text, (MHD_ContentReaderFreeCallback) g_bytes_unref);
    else
      resp = MHD_create_response_from_buffer (0, (void *) "", MHD_RESPMEM_PERSISTENT);
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
                GError **error)
{
  struct sockaddr_storage ss;
  unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  FhMetrics *m;
  const union MHD_DaemonInfo *info;

  if (!parse_address (address, port, &ss, &flags, error))
    return NULL;
  m = g_new0 (FhMetrics, 1);
  g_mutex_init (&m->lock);
  m->conns = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  m->timeout_us = (gint64) timeout_ms * G_TIME_SPAN_MILLISECOND;
  m->mhd = MHD_start_daemon (
      flags | MHD_USE_AUTO, (uint16_t) port, NULL, NULL, answer, m, MHD_OPTION_SOCK_ADDR, &ss,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned int) max_connections,
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int) MAX (1, max_connections / 2),
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) MAX (1, (timeout_ms + 999) / 1000),
      MHD_OPTION_NOTIFY_CONNECTION, notify_connection, m, MHD_OPTION_END);
  if (!m->mhd) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "cannot serve metrics on %s:%u", address,
                 port);
    g_mutex_clear (&m->lock);
    g_hash_table_unref (m->conns);
    g_free (m);
    return NULL;
  }
  m->reaper = g_timeout_add (MAX (50u, timeout_ms / 4), reap, m);
  info = MHD_get_daemon_info (m->mhd, MHD_DAEMON_INFO_BIND_PORT);
  m->port = info ? info->port : port;
  return m;
}

void
fh_metrics_free (FhMetrics *m)
{
  if (!m)
    return;
  g_clear_handle_id (&m->reaper, g_source_remove);
  MHD_stop_daemon (m->mhd);
  g_hash_table_unref (m->conns);
  g_mutex_clear (&m->lock);
  g_clear_pointer (&m->text, g_bytes_unref);
  g_free (m);
}

void
fh_metrics_publish (FhMetrics *m, GBytes *text)
{
  GBytes *old;

  g_mutex_lock (&m->lock);
  old = m->text;
  m->text = text;
  g_mutex_unlock (&m->lock);
  if (old)
    g_bytes_unref (old);
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
