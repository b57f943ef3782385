/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-control.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>

#include "fh-listen.h"
#include "fh-telemetry.h"

#define REQUEST_MAX 4096

struct _FhControl {
  FhDaemon *daemon;
  GSocketService *service;
  char *path;
  GCancellable *cancel;
  gboolean activated; /* passed by systemd: the path is the socket unit's */
  gid_t group;        /* the socket file's group: its members may ask */
};

typedef struct {
  FhControl *control;
  GSocketConnection *conn;
  char buf[REQUEST_MAX];
  gsize len;
  char *reply;
  gboolean refused;
} Client;

static void
client_free (Client *c)
{
  g_io_stream_close (G_IO_STREAM (c->conn), NULL, NULL);
  g_object_unref (c->conn);
  g_free (c->reply);
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

static char *
handle_request (FhDaemon *d, const char *line)
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
    result = fh_telemetry_vcpus (d, vm, &error);
  else if (strcmp (cmd, "cpus") == 0)
    result = fh_telemetry_cpus (d);
  else
    return reply_error ("unknown command");
  if (!result)
    return reply_error (error->message);

  reply = json_node_new (JSON_NODE_OBJECT);
  obj = json_object_new ();
  json_object_set_boolean_member (obj, "ok", TRUE);
  json_object_set_member (obj, "result", g_steal_pointer (&result));
  json_node_take_object (reply, obj);
  return json_to_string (reply, FALSE);
}

static void
write_done (GObject *source, GAsyncResult *res, gpointer user_data)
{
  Client *c = user_data;
  g_autoptr (GError) error = NULL;

  if (!g_output_stream_write_all_finish (G_OUTPUT_STREAM (source), res, NULL, &error))
    g_debug ("control client: %s", error->message);
  client_free (c);
}

static void
reply_and_close (Client *c, char *reply)
{
  GOutputStream *out = g_io_stream_get_output_stream (G_IO_STREAM (c->conn));

  c->reply = g_strconcat (reply, "\n", NULL);
  g_free (reply);
  g_output_stream_write_all_async (out, c->reply, strlen (c->reply), G_PRIORITY_DEFAULT,
                                   c->control->cancel, write_done, c);
}

static void read_more (Client *c);

static void
read_done (GObject *source, GAsyncResult *res, gpointer user_data)
{
  Client *c = user_data;
  g_autoptr (GError) error = NULL;
  gssize n = g_input_stream_read_finish (G_INPUT_STREAM (source), res, &error);
  char *nl;

  if (n <= 0) {
    client_free (c);
    return;
  }
  c->len += (gsize) n;
  nl = memchr (c->buf, '\n', c->len);
  if (nl) {
    *nl = '\0';
    reply_and_close (c, c->refused ? reply_error ("permission denied")
                                   : handle_request (c->control->daemon, c->buf));
  } else if (c->len >= sizeof c->buf - 1) {
    reply_and_close (c, reply_error ("request too long"));
  } else {
    read_more (c);
  }
}

static void
read_more (Client *c)
{
  GInputStream *in = g_io_stream_get_input_stream (G_IO_STREAM (c->conn));

  g_input_stream_read_async (in, c->buf + c->len, sizeof c->buf - 1 - c->len, G_PRIORITY_DEFAULT,
                             c->control->cancel, read_done, c);
}

static gboolean
on_incoming (GSocketService *service, GSocketConnection *conn, GObject *source, gpointer data)
{
  FhControl *control = data;
  GSocket *sock = g_socket_connection_get_socket (conn);
  g_autoptr (GCredentials) cred = g_socket_get_credentials (sock, NULL);
  Client *c;
  uid_t uid = cred ? g_credentials_get_unix_user (cred, NULL) : (uid_t) -1;
  gid_t gid = (gid_t) -1;

  if (cred) {
    const struct ucred *uc = g_credentials_get_native (cred, G_CREDENTIALS_TYPE_LINUX_UCRED);

    if (uc)
      gid = uc->gid;
  }
  c = g_new0 (Client, 1);
  c->control = control;
  c->conn = g_object_ref (conn);
  /* A refused peer still gets its request read, so that it sees the answer. */
  if (uid == (uid_t) -1 || (!fh_config_uid_allowed (control->daemon->config, uid, gid) &&
                            !fh_listen_peer_in_group (g_socket_get_fd (sock), control->group))) {
    g_warning ("control socket: refusing uid %d", (int) uid);
    c->refused = TRUE;
  }
  read_more (c);
  return TRUE;
}

/* Root and the socket group only: owner root, group socket_group, mode 0660. */
static gboolean
restrict_socket (FhDaemon *daemon, const char *path, GError **error)
{
  gid_t gid;

  if (!fh_config_socket_gid (daemon->config, &gid, error))
    return FALSE;
  if ((gid != (gid_t) -1 && chown (path, (uid_t) -1, gid) < 0) || chmod (path, 0660) < 0) {
    int e = errno;

    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "%s: %s", path, g_strerror (e));
    return FALSE;
  }
  return TRUE;
}

/* Socket activation: the socket unit's socket, with its group and mode (TRUE when taken). */
static gboolean
take_passed (FhControl *control, const char *path, gboolean *taken, GError **error)
{
  g_autoptr (GSocket) sock = NULL;
  int fd = fh_listen_take ("control", path, error);

  *taken = fd >= 0;
  if (fd == -1)
    return TRUE;
  if (fd < 0)
    return FALSE;
  sock = g_socket_new_from_fd (fd, error);
  if (!sock) {
    close (fd);
    return FALSE;
  }
  return g_socket_listener_add_socket (G_SOCKET_LISTENER (control->service), sock, NULL, error);
}

FhControl *
fh_control_new (FhDaemon *daemon, const char *path, GError **error)
{
  g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (path);
  g_autofree char *dir = g_path_get_dirname (path);
  FhControl *control;
  struct stat st;

  control = g_new0 (FhControl, 1);
  control->daemon = daemon;
  control->path = g_strdup (path);
  control->cancel = g_cancellable_new ();
  control->service = g_socket_service_new ();
  if (!take_passed (control, path, &control->activated, error)) {
    g_prefix_error (error, "%s: ", path);
    fh_control_free (control);
    return NULL;
  }
  if (!control->activated) {
    if (g_mkdir_with_parents (dir, 0755) < 0) {
      int e = errno;

      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "%s: %s", dir, g_strerror (e));
      fh_control_free (control);
      return NULL;
    }
    if (lstat (path, &st) == 0 && S_ISSOCK (st.st_mode))
      unlink (path);
    if (!g_socket_listener_add_address (G_SOCKET_LISTENER (control->service), addr,
                                        G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT, NULL,
                                        NULL, error)) {
      g_prefix_error (error, "%s: ", path);
      fh_control_free (control);
      return NULL;
    }
    /* Like the device socket (PA-1); credentials are checked per connection too. */
    if (!restrict_socket (daemon, path, error)) {
      fh_control_free (control);
      return NULL;
    }
  }
  control->group = stat (path, &st) == 0 ? st.st_gid : (gid_t) -1;
  g_signal_connect (control->service, "incoming", G_CALLBACK (on_incoming), control);
  g_socket_service_start (control->service);
  return control;
}

void
fh_control_free (FhControl *control)
{
  if (!control)
    return;
  g_cancellable_cancel (control->cancel);
  g_socket_service_stop (control->service);
  g_socket_listener_close (G_SOCKET_LISTENER (control->service));
  g_object_unref (control->service);
  g_object_unref (control->cancel);
  /* A socket unit's path outlives us: systemd listens on it while we are down. */
  if (!control->activated)
    unlink (control->path);
  g_free (control->path);
  g_free (control);
}
