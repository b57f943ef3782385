/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-listen.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gio/gio.h>

#define LISTEN_FDS_START 3
#define LISTEN_FDS_MAX 64

typedef struct {
  int fd;
  char *name;
} Passed;

static gboolean parsed;
static GArray *passed; /* Passed; fd -1 once taken */

void
fh_listen_init (void)
{
  const char *pid_s;
  const char *fds_s = g_getenv ("LISTEN_FDS");
  const char *names_s = g_getenv ("LISTEN_FDNAMES");
  g_auto (GStrv) names = NULL;
  guint64 pid, n;

  if (parsed)
    return;
  pid_s = g_getenv ("LISTEN_PID");
  parsed = TRUE;
  passed = g_array_new (FALSE, FALSE, sizeof (Passed));
  if (!pid_s || !fds_s)
    goto out;
  if (!g_ascii_string_to_unsigned (pid_s, 10, 1, G_MAXINT, &pid, NULL) || (pid_t) pid != getpid ())
    goto out; /* meant for another process (our parent, before an exec) */
  if (!g_ascii_string_to_unsigned (fds_s, 10, 0, LISTEN_FDS_MAX, &n, NULL)) {
    g_warning ("LISTEN_FDS=\"%s\" is not a count of descriptors; ignoring it", fds_s);
    goto out;
  }
  names = names_s ? g_strsplit (names_s, ":", -1) : NULL;
  for (guint i = 0; i < n; i++) {
    Passed p = { LISTEN_FDS_START + (int) i, NULL };

    if (fcntl (p.fd, F_SETFD, FD_CLOEXEC) < 0) {
      g_warning ("LISTEN_FDS: descriptor %d: %s", p.fd, g_strerror (errno));
      continue;
    }
    p.name = g_strdup (names && names[0] && i < g_strv_length (names) ? names[i] : "");
    g_array_append_val (passed, p);
  }
out:
  g_unsetenv ("LISTEN_PID");
  g_unsetenv ("LISTEN_FDS");
  g_unsetenv ("LISTEN_FDNAMES");
}

static gboolean
bound_to (int fd, const char *path)
{
  struct sockaddr_un addr;
  socklen_t len = sizeof addr;

  memset (&addr, 0, sizeof addr);
  if (getsockname (fd, (struct sockaddr *) &addr, &len) < 0 || addr.sun_family != AF_UNIX ||
      len <= offsetof (struct sockaddr_un, sun_path))
    return FALSE;
  return strncmp (addr.sun_path, path, sizeof addr.sun_path) == 0;
}

static gboolean
check_listening_stream (int fd, int want, const char *what, GError **error)
{
  int type = 0, listening = 0, domain = 0;
  socklen_t len = sizeof type;

  if (getsockopt (fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
      (len = sizeof domain, getsockopt (fd, SOL_SOCKET, SO_DOMAIN, &domain, &len)) == 0 &&
      (len = sizeof listening, getsockopt (fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len)) == 0 &&
      type == SOCK_STREAM && domain == want && listening)
    return TRUE;
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
               "the descriptor passed for %s is not a listening %s stream socket "
               "(ListenStream=%s in the .socket unit)",
               what, want == AF_UNIX ? "AF_UNIX" : "AF_VSOCK",
               want == AF_UNIX ? " with a path" : "vsock::PORT");
  return FALSE;
}

static int take (const char *name, const char *path, int domain, GError **error);

int
fh_listen_take (const char *name, const char *path, GError **error)
{
  return take (name, path, AF_UNIX, error);
}

int
fh_listen_take_vsock (const char *name, GError **error)
{
  return take (name, NULL, AF_VSOCK, error);
}

static int
take (const char *name, const char *path, int domain, GError **error)
{
  Passed *found = NULL;
  int fd, flags;

  fh_listen_init ();
  for (guint i = 0; !found && i < passed->len; i++) {
    Passed *p = &g_array_index (passed, Passed, i);

    if (p->fd >= 0 && g_strcmp0 (p->name, name) == 0)
      found = p;
  }
  for (guint i = 0; !found && path && i < passed->len; i++) {
    Passed *p = &g_array_index (passed, Passed, i);

    if (p->fd >= 0 && bound_to (p->fd, path))
      found = p;
  }
  if (!found)
    return -1;
  fd = found->fd;
  found->fd = -1;
  if (!check_listening_stream (fd, domain, name, error)) {
    close (fd);
    return -2;
  }
  flags = fcntl (fd, F_GETFL);
  if (flags < 0 || fcntl (fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    int e = errno;

    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "%s socket: %s", name,
                 g_strerror (e));
    close (fd);
    return -2;
  }
  g_message ("%s socket: taken from systemd (descriptor %d%s%s)", name, fd,
             *found->name ? ", " : "", found->name);
  return fd;
}

void
fh_listen_close_unused (void)
{
  if (!passed)
    return;
  for (guint i = 0; i < passed->len; i++) {
    Passed *p = &g_array_index (passed, Passed, i);

    if (p->fd >= 0) {
      g_warning ("systemd passed descriptor %d (\"%s\") that freqhintd has no use for; closing it",
                 p->fd, p->name);
      close (p->fd);
      p->fd = -1;
    }
  }
}

gboolean
fh_listen_peer_in_groups (int fd, const gid_t *gids, guint n_gids)
{
  gid_t groups[256];
  socklen_t len = sizeof groups;
  struct ucred cred;
  socklen_t clen = sizeof cred;
  gboolean have_groups;

  if (n_gids == 0)
    return FALSE;
  if (getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0)
    return FALSE;
  /* ERANGE: more than 256 groups; not worth guessing, the primary still counts */
  have_groups = getsockopt (fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0;
  for (guint k = 0; k < n_gids; k++) {
    if (gids[k] == (gid_t) -1)
      continue;
    if (cred.gid == gids[k])
      return TRUE;
    for (socklen_t i = 0; have_groups && i < len / sizeof (gid_t); i++)
      if (groups[i] == gids[k])
        return TRUE;
  }
  return FALSE;
}

gboolean
fh_listen_peer_in_group (int fd, gid_t gid)
{
  return fh_listen_peer_in_groups (fd, &gid, 1);
}

/*
 * The directory a socket is created in: created 0750 (group gid) if
 * missing, refused if others may write to it (they could swap the socket).
 */
static gboolean
prepare_socket_dir (const char *dir, gid_t gid, GError **error)
{
  struct stat st;
  int e;

  if (stat (dir, &st) == 0) {
    if (!S_ISDIR (st.st_mode)) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_DIRECTORY, "%s is not a directory", dir);
      return FALSE;
    }
    if (st.st_mode & S_IWOTH) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
                   "%s is writable by others (mode %04o); refusing to put the socket there", dir,
                   (unsigned) (st.st_mode & 07777));
      return FALSE;
    }
    return TRUE;
  }
  if (errno == ENOENT && g_mkdir_with_parents (dir, 0750) == 0 && chmod (dir, 0750) == 0 &&
      (gid == (gid_t) -1 || chown (dir, (uid_t) -1, gid) == 0))
    return TRUE;
  e = errno;
  g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "%s: %s", dir, g_strerror (e));
  return FALSE;
}

int
fh_listen_unix (const char *name, const char *path, gid_t gid, mode_t mode, gboolean *activated,
                GError **error)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  g_autofree char *dir = g_path_get_dirname (path);
  struct stat st;
  int fd;

  *activated = FALSE;
  if (strlen (path) >= sizeof addr.sun_path) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FILENAME_TOO_LONG, "socket path too long: %s", path);
    return -1;
  }
  strcpy (addr.sun_path, path);
  /* Socket activation: systemd made the socket with the unit's group and mode. */
  fd = fh_listen_take (name, path, error);
  if (fd == -2)
    return -1;
  if (fd >= 0) {
    *activated = TRUE;
    return fd;
  }
  if (!prepare_socket_dir (dir, gid, error))
    return -1;
  /* A socket left by a previous run; anything else at that path is not ours. */
  if (lstat (path, &st) == 0) {
    if (!S_ISSOCK (st.st_mode)) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_EXISTS, "%s exists and is not a socket", path);
      return -1;
    }
    unlink (path);
  }
  /* Owner and mode are set before listen(): nobody connects to a socket still open to all. */
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind (fd, (struct sockaddr *) &addr, sizeof addr) < 0 ||
      (gid != (gid_t) -1 && chown (path, (uid_t) -1, gid) < 0) || chmod (path, mode) < 0 ||
      listen (fd, 64) < 0) {
    int e = errno;

    if (fd >= 0) {
      close (fd);
      unlink (path);
    }
    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "%s: %s", path, g_strerror (e));
    return -1;
  }
  return fd;
}
