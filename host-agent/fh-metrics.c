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

struct _FhMetrics {
  struct MHD_Daemon *mhd;
  GMutex lock;
  char *text;
  guint port;
};

static MhdResult
answer (void *cls, struct MHD_Connection *connection, const char *url, const char *method,
        const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
  FhMetrics *m = cls;
  struct MHD_Response *resp;
  MhdResult ret;
  unsigned int status = MHD_HTTP_OK;
  char *body;

  if (strcmp (method, "GET") != 0 && strcmp (method, "HEAD") != 0) {
    body = g_strdup ("only GET\n");
    status = MHD_HTTP_METHOD_NOT_ALLOWED;
  } else if (strcmp (url, "/metrics") != 0) {
    body = g_strdup ("freqhintd: see /metrics\n");
    status = MHD_HTTP_NOT_FOUND;
  } else {
    g_mutex_lock (&m->lock);
    body = g_strdup (m->text ? m->text : "");
    g_mutex_unlock (&m->lock);
  }
  resp = MHD_create_response_from_buffer (strlen (body), body, MHD_RESPMEM_MUST_FREE);
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
fh_metrics_new (const char *address, guint port, GError **error)
{
  struct sockaddr_storage ss;
  unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  FhMetrics *m;
  const union MHD_DaemonInfo *info;

  if (!parse_address (address, port, &ss, &flags, error))
    return NULL;
  m = g_new0 (FhMetrics, 1);
  g_mutex_init (&m->lock);
  m->mhd =
      MHD_start_daemon (flags, (uint16_t) port, NULL, NULL, answer, m, MHD_OPTION_SOCK_ADDR, &ss,
                        MHD_OPTION_CONNECTION_LIMIT,
                        16u, MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
  if (!m->mhd) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "cannot serve metrics on %s:%u", address,
                 port);
    g_mutex_clear (&m->lock);
    g_free (m);
    return NULL;
  }
  info = MHD_get_daemon_info (m->mhd, MHD_DAEMON_INFO_BIND_PORT);
  m->port = info ? info->port : port;
  return m;
}

void
fh_metrics_free (FhMetrics *m)
{
  if (!m)
    return;
  MHD_stop_daemon (m->mhd);
  g_mutex_clear (&m->lock);
  g_free (m->text);
  g_free (m);
}

void
fh_metrics_publish (FhMetrics *m, char *text)
{
  char *old;

  g_mutex_lock (&m->lock);
  old = m->text;
  m->text = text;
  g_mutex_unlock (&m->lock);
  g_free (old);
}

guint
fh_metrics_port (FhMetrics *m)
{
  return m->port;
}
