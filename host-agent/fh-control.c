/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-control.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib-unix.h>
#include <glib/gstdio.h>

#include "fh-listen.h"
#include "fh-listener.h"
#include "fh-telemetry.h"

#define REQUEST_MAX 4096
/* Time a streamed answer may take per wakeup before other sources run. */
#define WAKEUP_BUDGET_US 10000

/*
 * Bounded (threat model G-13): at most control_max_clients clients; each
 * must send its request and take its answer within control_timeout_ms of
 * being accepted.  At the cap a new client displaces the oldest one that
 * has not finished sending its request, so idle connections cannot lock
 * freqhintctl out.  Accepting never spins when descriptors run out
 * (fh-listener.c).  An answer about every vCPU is rendered a piece at a time
 * (fh_telemetry_vcpus_stream), each piece only once the previous one is in
 * the socket: a client holds at most one piece (tens of KiB) however many
 * vCPUs there are, and the main loop serves VMs and other clients between
 * pieces.
 */
struct _FhControl {
  FhDaemon *daemon;
  FhListener *listener;
  char *path;
  GQueue clients; /* Client*, oldest first */
  guint64 evicted;
  guint64 timed_out;
  gboolean activated; /* passed by systemd: the path is the socket unit's */
  gid_t group;        /* the socket file's group: its members may ask */
};

typedef struct {
  FhControl *control;
  GList *link; /* in control->clients */
  int fd;
  guint in_watch, out_watch, timer;
  char buf[REQUEST_MAX];
  gsize len;
  GString *out;               /* the piece being sent */
  gsize out_off;
  FhTelemetryStream *stream; /* the rest of the answer, or NULL */
  gboolean refused;
} Client;

static void
client_free (Client *c)
{
  FhControl *control = c->control;

  g_clear_handle_id (&c->in_watch, g_source_remove);
  g_clear_handle_id (&c->out_watch, g_source_remove);
  g_clear_handle_id (&c->timer, g_source_remove);
  g_queue_delete_link (&control->clients, c->link);
  close (c->fd);
  if (c->out)
    g_string_free (c->out, TRUE);
  fh_telemetry_stream_free (c->stream);
  g_free (c);
}

static char *
reply_error (const char *msg)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autoptr (JsonNode) root = NULL;

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "ok");
  json_builder_add_boolean_value (b, FALSE);
  json_builder_set_member_name (b, "error");
  json_builder_add_string_value (b, msg);
  json_builder_end_object (b);
  root = json_builder_get_root (b);
  return json_to_string (root, FALSE);
}

/* The whole answer as text, or *stream set and the text its opening. */
static char *
handle_request (FhDaemon *d, const char *line, FhTelemetryStream **stream)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  g_autoptr (JsonNode) result = NULL;
  g_autoptr (JsonNode) reply = NULL;
  JsonObject *req, *obj;
  const char *cmd, *vm = NULL;

  if (!json_parser_load_from_data (parser, line, -1, &error))
    return reply_error ("request is not JSON");
  if (!JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)))
    return reply_error ("request is not a JSON object");
  req = json_node_get_object (json_parser_get_root (parser));
  cmd = json_object_get_string_member_with_default (req, "command", NULL);
  if (json_object_has_member (req, "vm"))
    vm = json_object_get_string_member_with_default (req, "vm", NULL);
  if (!cmd)
    return reply_error ("request has no \"command\"");
  if (strcmp (cmd, "status") == 0)
    result = fh_telemetry_status (d);
  else if (strcmp (cmd, "vms") == 0)
    result = fh_telemetry_vms (d);
  else if (strcmp (cmd, "vcpus") == 0)
    *stream = fh_telemetry_vcpus_stream (d, vm, &error);
  else if (strcmp (cmd, "cpus") == 0)
    *stream = fh_telemetry_cpus_stream (d);
  else
    return reply_error ("unknown command");
  /* {"ok":true,"result":...}, as json_to_string() writes it */
  if (*stream)
    return g_strdup ("{\"ok\":true,\"result\":");
  if (!result)
    return reply_error (error->message);

  reply = json_node_new (JSON_NODE_OBJECT);
  obj = json_object_new ();
  json_object_set_boolean_member (obj, "ok", TRUE);
  json_object_set_member (obj, "result", g_steal_pointer (&result));
  json_node_take_object (reply, obj);
  return json_to_string (reply, FALSE);
}

static gboolean client_timeout (gpointer data);

/* While an answer goes out, the deadline counts from the last progress. */
static void
restart_deadline (Client *c)
{
  g_clear_handle_id (&c->timer, g_source_remove);
  c->timer = g_timeout_add (c->control->daemon->config->control_timeout_ms, client_timeout, c);
}

/* Something left to send: the rest of this piece, or the next one. */
static gboolean
fill (Client *c)
{
  if (c->out_off < c->out->len)
    return TRUE;
  if (!c->stream)
    return FALSE;
  g_string_truncate (c->out, 0);
  c->out_off = 0;
  /* (a piece is empty when the VMs it was to show have left) */
  while (c->stream && c->out->len == 0)
    if (!fh_telemetry_stream_next (c->stream, c->out)) {
      g_clear_pointer (&c->stream, fh_telemetry_stream_free);
      g_string_append (c->out, "}\n");
    }
  return c->out->len > 0;
}

static gboolean
client_out (gint fd, GIOCondition cond, gpointer data)
{
  Client *c = data;
  gint64 until = g_get_monotonic_time () + WAKEUP_BUDGET_US;
  gboolean progress = FALSE;

  while (fill (c)) {
    ssize_t n;

    if (c->out_off == 0 && progress && g_get_monotonic_time () >= until)
      goto later; /* let the main loop serve others; the socket is still writable */
    n = send (fd, c->out->str + c->out_off, c->out->len - c->out_off,
              MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      goto later;
    if (n <= 0) {
      g_debug ("control client: %s", g_strerror (errno));
      break;
    }
    c->out_off += (gsize) n;
    progress = TRUE;
  }
  c->out_watch = 0;
  client_free (c);
  return G_SOURCE_REMOVE;
later:
  if (progress)
    restart_deadline (c);
  return G_SOURCE_CONTINUE;
}

static void
reply_and_close (Client *c, char *reply, FhTelemetryStream *stream)
{
  g_clear_handle_id (&c->in_watch, g_source_remove);
  c->out = g_string_new (reply);
  g_free (reply);
  if (!stream)
    g_string_append_c (c->out, '\n');
  c->stream = stream;
  restart_deadline (c);
  c->out_watch = g_unix_fd_add (c->fd, G_IO_OUT, client_out, c);
}

static gboolean
client_in (gint fd, GIOCondition cond, gpointer data)
{
  Client *c = data;
  ssize_t n = recv (fd, c->buf + c->len, sizeof c->buf - 1 - c->len, MSG_DONTWAIT);
  char *nl;

  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return G_SOURCE_CONTINUE;
  if (n <= 0) {
    c->in_watch = 0;
    client_free (c);
    return G_SOURCE_REMOVE;
  }
  c->len += (gsize) n;
  c->buf[c->len] = '\0';
  nl = memchr (c->buf, '\n', c->len);
  if (nl) {
    FhTelemetryStream *stream = NULL;
    char *reply;

    *nl = '\0';
    c->in_watch = 0;
    reply = c->refused ? reply_error ("permission denied")
                       : handle_request (c->control->daemon, c->buf, &stream);
    reply_and_close (c, reply, stream);
    return G_SOURCE_REMOVE;
  }
  if (c->len >= sizeof c->buf - 1) {
    c->in_watch = 0;
    reply_and_close (c, reply_error ("request too long"), NULL);
    return G_SOURCE_REMOVE;
  }
  return G_SOURCE_CONTINUE;
}

static gboolean
client_timeout (gpointer data)
{
  Client *c = data;

  c->timer = 0;
  c->control->timed_out++;
  g_debug ("control client: no request and answer within %u ms; closed",
           c->control->daemon->config->control_timeout_ms);
  client_free (c);
  return G_SOURCE_REMOVE;
}

static void
on_accept (int fd, gpointer data)
{
  FhControl *control = data;
  struct ucred cred = { 0, (uid_t) -1, (gid_t) -1 };
  socklen_t len = sizeof cred;
  Client *c;

  if (getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
    cred.uid = (uid_t) -1;
    cred.gid = (gid_t) -1;
  }
  /* At the cap: the oldest client still sending its request makes room. */
  if (control->clients.length >= control->daemon->config->control_max_clients) {
    Client *victim = NULL;

    for (GList *l = control->clients.head; l; l = l->next)
      if (((Client *) l->data)->in_watch) {
        victim = l->data;
        break;
      }
    if (!victim) {
      /* every slot is answering: refuse the newcomer */
      close (fd);
      control->evicted++;
      return;
    }
    control->evicted++;
    client_free (victim);
  }
  c = g_new0 (Client, 1);
  c->control = control;
  c->fd = fd;
  g_queue_push_tail (&control->clients, c);
  c->link = control->clients.tail;
  /* A refused peer still gets its request read, so that it sees the answer. */
  if (cred.uid == (uid_t) -1 ||
      (!fh_config_uid_allowed (control->daemon->config, cred.uid, cred.gid) &&
       !fh_listen_peer_in_groups (fd, (const gid_t *) control->daemon->config->allowed_gids->data,
                                  control->daemon->config->allowed_gids->len) &&
       !fh_listen_peer_in_group (fd, control->group))) {
    g_warning ("control socket: refusing uid %d", (int) cred.uid);
    c->refused = TRUE;
  }
  c->in_watch = g_unix_fd_add (fd, G_IO_IN | G_IO_HUP | G_IO_ERR, client_in, c);
  c->timer = g_timeout_add (control->daemon->config->control_timeout_ms, client_timeout, c);
}

FhControl *
fh_control_new (FhDaemon *daemon, const char *path, GError **error)
{
  FhControl *control;
  struct stat st;
  gboolean activated;
  gid_t gid;
  int fd;

  if (!fh_config_socket_gid (daemon->config, &gid, error))
    return NULL;
  /* Root and the socket group only, like the device socket (PA-1); credentials are checked per
   * connection too. */
  fd = fh_listen_unix ("control", path, gid, 0660, &activated, error);
  if (fd < 0)
    return NULL;
  control = g_new0 (FhControl, 1);
  control->daemon = daemon;
  control->path = g_strdup (path);
  control->activated = activated;
  control->group = stat (path, &st) == 0 ? st.st_gid : (gid_t) -1;
  g_queue_init (&control->clients);
  control->listener = fh_listener_new (fd, path, on_accept, control);
  return control;
}

void
fh_control_free (FhControl *control)
{
  if (!control)
    return;
  while (control->clients.head)
    client_free (control->clients.head->data);
  fh_listener_free (control->listener);
  /* A socket unit's path outlives us: systemd listens on it while we are down. */
  if (!control->activated)
    unlink (control->path);
  g_free (control->path);
  g_free (control);
}

guint
fh_control_n_clients (FhControl *control)
{
  return control->clients.length;
}

guint64
fh_control_evicted (FhControl *control)
{
  return control->evicted;
}
