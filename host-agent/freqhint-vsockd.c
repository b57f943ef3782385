/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * freqhint-vsockd: the vsock front end of freqhintd (spec/vsock-transport.md
 * §5).  Guests that report over virtio-vsock connect to port 853 (AF_VSOCK)
 * or, under Cloud Hypervisor and Firecracker, to a VM's hybrid socket
 * "<vsock_uds>_853"; each is relayed to freqhintd's device socket as a
 * device would be (agent protocol, FH_F_RELAY), and freqhintd decides
 * which VM it is.
 *
 * Every guest byte is parsed here, in a process that holds nothing but its
 * sockets: it binds them (or takes them from systemd), then runs as an
 * unprivileged user with no capabilities; it refuses to run as root.
 */
#define G_LOG_DOMAIN "freqhint-vsockd"

#include <errno.h>
#include <grp.h>
#include <locale.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <freqhint/vsock_host.h>
#include <linux/freqhint_vsock.h>
#include <linux/vm_sockets.h>

#include <gio/gio.h>

#include <glib-unix.h>
#include <glib.h>

#include "fh-config.h"
#include "fh-listen.h"
#include "fh-listener.h"
#include "fh-log.h"
#include "fh-relay-server.h"

typedef struct {
  GMainLoop *loop;
  FhRelayServer *server;
  GPtrArray *listeners; /* FhListener* */
  GPtrArray *listens;   /* Listen*, their callbacks' data */
} App;

typedef struct {
  App *app;
  FhRelayPeer hybrid; /* a hybrid socket's peer (path); unused for vsock */
} Listen;

static void
on_vsock (int fd, gpointer data)
{
  Listen *l = data;
  struct sockaddr_vm sa = { 0 };
  socklen_t len = sizeof sa;
  FhRelayPeer peer = { FH_RELAY_VSOCK, 0, "", 0 };

  /* The CID the kernel says; vhost-vsock drops what a guest sends from any other. */
  if (getpeername (fd, (struct sockaddr *) &sa, &len) < 0 || sa.svm_family != AF_VSOCK) {
    g_warning ("vsock connection without a peer address: %s", g_strerror (errno));
    close (fd);
    return;
  }
  peer.cid = sa.svm_cid;
  fh_relay_server_accept (l->app->server, fd, &peer);
}

static void
on_hybrid (int fd, gpointer data)
{
  Listen *l = data;
  FhRelayPeer peer = l->hybrid;
  struct ucred cred = { 0 };
  socklen_t len = sizeof cred;

  /* The hypervisor's process: freqhintd checks it is the VM's (4.1a). */
  if (getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0) {
    g_warning ("%s: connection without peer credentials: %s", peer.path, g_strerror (errno));
    close (fd);
    return;
  }
  peer.pid = (uint32_t) cred.pid;
  fh_relay_server_accept (l->app->server, fd, &peer);
}

/* AF_VSOCK, any CID, port; from systemd (FileDescriptorName=vsock) or bound here. */
static int
vsock_socket (guint port, GError **error)
{
  struct sockaddr_vm sa = { .svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY, .svm_port = port };
  int fd = fh_listen_take_vsock ("vsock", error);

  if (fd != -1)
    return fd < 0 ? -1 : fd;
  fd = socket (AF_VSOCK, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind (fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen (fd, 64) < 0) {
    int e = errno;

    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e),
                 "vsock port %u: %s%s", port, g_strerror (e),
                 e == EACCES ? " (a port below 1024 needs CAP_NET_BIND_SERVICE, or a socket "
                               "unit with ListenStream=vsock::PORT)"
                             : "");
    if (fd >= 0)
      close (fd);
    return -1;
  }
  g_message ("listening on vsock port %u", port);
  return fd;
}

/* The config's [vm] hybrid sockets; sockets others may connect to (the VMM), freqhintd checks who. */
static gboolean
add_hybrid (App *app, const FhConfig *config, GError **error)
{
  GHashTableIter it;
  gpointer value;

  g_hash_table_iter_init (&it, config->vms);
  while (g_hash_table_iter_next (&it, NULL, &value)) {
    g_autofree char *path = fh_config_vsock_listen_path (value);
    gboolean activated;
    Listen *l;
    int fd;

    if (!path)
      continue;
    fd = fh_listen_unix (path, path, (gid_t) -1, 0666, &activated, error);
    if (fd < 0)
      return FALSE;
    l = g_new0 (Listen, 1);
    g_ptr_array_add (app->listens, l);
    l->app = app;
    l->hybrid.transport = FH_RELAY_HYBRID;
    g_strlcpy (l->hybrid.path, path, sizeof l->hybrid.path);
    g_ptr_array_add (app->listeners, fh_listener_new (fd, path, on_hybrid, l));
    g_message ("listening on hybrid socket %s ([vm %s])", path, ((FhVmConfig *) value)->key);
  }
  return TRUE;
}

/* No root, no capabilities, no way back: what QEMU's device gives freqhintd. */
static gboolean
drop_privileges (const char *user, GError **error)
{
  if (user) {
    struct passwd *pw = getpwnam (user);

    if (!pw) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "--user %s: no such user", user);
      return FALSE;
    }
    if (initgroups (pw->pw_name, pw->pw_gid) < 0 || setgid (pw->pw_gid) < 0 ||
        setuid (pw->pw_uid) < 0) {
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "--user %s: %s", user,
                   g_strerror (errno));
      return FALSE;
    }
  }
  if (getuid () == 0 || geteuid () == 0 || setuid (0) == 0) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
                 "freqhint-vsockd parses guest bytes and does not run as root: give --user, "
                 "or User= in its service unit");
    return FALSE;
  }
  if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "PR_SET_NO_NEW_PRIVS: %s",
                 g_strerror (errno));
    return FALSE;
  }
  return TRUE;
}

static void
log_stats (App *app)
{
  g_autofree char *json = fh_relay_server_stats_json (app->server);

  g_message ("stats: %s", json);
}

static gboolean
on_usr1 (gpointer data)
{
  log_stats (data);
  return G_SOURCE_CONTINUE;
}

static gboolean
on_quit (gpointer data)
{
  g_main_loop_quit (((App *) data)->loop);
  return G_SOURCE_CONTINUE;
}

int
main (int argc, char **argv)
{
  g_autofree char *config_path = NULL, *agent_socket = NULL, *user = NULL;
  gint vsock_port = FREQHINT_VSOCK_PORT, max_connections = 256;
  gint hello_timeout_ms = FREQHINT_VSOCK_HOST_HELLO_TIMEOUT_MS;
  gint write_timeout_ms = FREQHINT_VSOCK_HOST_WRITE_TIMEOUT_MS;
  gint penalty_ms = FREQHINT_VSOCK_HOST_PENALTY_MS;
  gint penalty_max_ms = FREQHINT_VSOCK_HOST_PENALTY_MAX_MS;
  gboolean verbose = FALSE;
  GOptionEntry entries[] = {
    { "config", 'c', 0, G_OPTION_ARG_FILENAME, &config_path,
      "freqhintd's configuration: [daemon] socket and the [vm] sections' vsock_uds (default "
      FH_DEFAULT_CONFIG ")", "FILE" },
    { "agent-socket", 0, 0, G_OPTION_ARG_FILENAME, &agent_socket,
      "freqhintd's device socket (default: the configuration's)", "PATH" },
    { "vsock-port", 0, 0, G_OPTION_ARG_INT, &vsock_port,
      "AF_VSOCK port to listen on, 0 for none (hybrid sockets only; default 853)", "PORT" },
    { "user", 'u', 0, G_OPTION_ARG_STRING, &user,
      "run as this user once the sockets are bound (required when started as root)", "USER" },
    { "max-connections", 0, 0, G_OPTION_ARG_INT, &max_connections,
      "guest connections in all (default 256)", "N" },
    { "hello-timeout-ms", 0, 0, G_OPTION_ARG_INT, &hello_timeout_ms,
      "a guest's HELLO and the agent's WELCOME must come within this (default 5000)", "MS" },
    { "write-timeout-ms", 0, 0, G_OPTION_ARG_INT, &write_timeout_ms,
      "a guest that leaves output unread this long is closed (default 5000)", "MS" },
    { "penalty-ms", 0, 0, G_OPTION_ARG_INT, &penalty_ms,
      "a peer's connections are refused this long after a fault, doubling (default 1000)", "MS" },
    { "penalty-max-ms", 0, 0, G_OPTION_ARG_INT, &penalty_max_ms,
      "the longest such refusal (default 60000)", "MS" },
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "debug messages", NULL },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- relay guest frequency hints from virtio-vsock to freqhintd");
  g_autoptr (GError) error = NULL;
  g_autoptr (FhConfig) config = fh_config_new ();
  FhRelayServerParams params;
  App app = { 0 };
  int fd;

  setlocale (LC_ALL, "");
  fh_listen_init ();
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    g_printerr ("freqhint-vsockd: %s\n", error->message);
    return 2;
  }
  if (vsock_port < 0 || vsock_port > G_MAXINT32 || max_connections < 1 ||
      max_connections > 65536 || hello_timeout_ms < 100 || hello_timeout_ms > 600000 ||
      write_timeout_ms < 100 || write_timeout_ms > 600000 || penalty_ms < 10 ||
      penalty_max_ms < penalty_ms || penalty_max_ms > 3600000) {
    g_printerr ("freqhint-vsockd: --vsock-port 0 or more, --max-connections 1 to 65536, "
                "--hello-timeout-ms and --write-timeout-ms 100 to 600000, --penalty-ms 10 or "
                "more and at most --penalty-max-ms, which is at most 3600000\n");
    return 2;
  }
  fh_log_init (verbose);
  if (!fh_config_load (config, config_path ? config_path : FH_DEFAULT_CONFIG, config_path != NULL,
                       &error)) {
    g_printerr ("freqhint-vsockd: %s\n", error->message);
    return 2;
  }
  app.loop = g_main_loop_new (NULL, FALSE);
  app.listeners = g_ptr_array_new_with_free_func ((GDestroyNotify) fh_listener_free);
  app.listens = g_ptr_array_new_with_free_func (g_free);
  params = (FhRelayServerParams){
    .agent_socket = agent_socket ? agent_socket : config->socket_path,
    .max_connections = (guint) max_connections,
    .hello_timeout_ms = (guint) hello_timeout_ms,
    .write_timeout_ms = (guint) write_timeout_ms,
    .penalty_ms = (guint) penalty_ms,
    .penalty_max_ms = (guint) penalty_max_ms,
  };
  app.server = fh_relay_server_new (&params, &error);
  if (!app.server)
    goto out;
  if (vsock_port) {
    Listen *l = g_new0 (Listen, 1);

    g_ptr_array_add (app.listens, l);
    l->app = &app;
    fd = vsock_socket ((guint) vsock_port, &error);
    if (fd < 0)
      goto out;
    g_ptr_array_add (app.listeners, fh_listener_new (fd, "vsock", on_vsock, l));
  }
  if (!add_hybrid (&app, config, &error))
    goto out;
  fh_listen_close_unused ();
  if (app.listeners->len == 0) {
    g_set_error (&error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                 "nothing to listen on: --vsock-port is 0 and no [vm] has vsock_uds");
    goto out;
  }
  if (!drop_privileges (user, &error))
    goto out;
  g_message ("relaying to %s as uid %d", params.agent_socket, (int) getuid ());
  g_unix_signal_add (SIGTERM, on_quit, &app);
  g_unix_signal_add (SIGINT, on_quit, &app);
  g_unix_signal_add (SIGUSR1, on_usr1, &app);
  signal (SIGPIPE, SIG_IGN);
  g_main_loop_run (app.loop);
  log_stats (&app);
out:
  if (error)
    g_printerr ("freqhint-vsockd: %s\n", error->message);
  g_ptr_array_unref (app.listeners);
  g_ptr_array_unref (app.listens);
  fh_relay_server_free (app.server);
  g_main_loop_unref (app.loop);
  return error ? 1 : 0;
}
