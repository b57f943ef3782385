/* SPDX-License-Identifier: GPL-2.0-or-later */
#define _GNU_SOURCE /* close_range */
#include "fh-testclient-lib.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include <linux/virtio_freqhint.h>

struct _FhTestClient {
  int fd;
  uint8_t in[FH_FRAME_MAX];
  size_t in_len;
  size_t consumed; /* bytes of the last returned frame, dropped on the next call */
};

FhTestClient *
fhtc_adopt_fd (int fd)
{
  FhTestClient *c = g_new0 (FhTestClient, 1);

  c->fd = fd;
  return c;
}

FhTestClient *
fhtc_connect (const char *path, GError **error)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  FhTestClient *c;
  int fd;

  if (strlen (path) >= sizeof addr.sun_path) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "socket path too long");
    return NULL;
  }
  strcpy (addr.sun_path, path);
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect (fd, (struct sockaddr *) &addr, sizeof addr) < 0) {
    int e = errno;

    if (fd >= 0)
      close (fd);
    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "connect %s: %s", path,
                 g_strerror (e));
    return NULL;
  }
  c = g_new0 (FhTestClient, 1);
  c->fd = fd;
  return c;
}

void
fhtc_free (FhTestClient *c)
{
  if (!c)
    return;
  close (c->fd);
  g_free (c);
}

int
fhtc_fd (FhTestClient *c)
{
  return c->fd;
}

gboolean
fhtc_send (FhTestClient *c, const void *buf, size_t len, GError **error)
{
  const uint8_t *p = buf;

  while (len) {
    ssize_t n = send (c->fd, p, len, MSG_NOSIGNAL);

    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int e = errno;

      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "send: %s", g_strerror (e));
      return FALSE;
    }
    p += n;
    len -= (size_t) n;
  }
  return TRUE;
}

gboolean
fhtc_send_hello (FhTestClient *c, const FhHello *hello, GError **error)
{
  uint8_t buf[FH_FRAME_MAX];
  size_t n = fh_encode_hello (buf, sizeof buf, hello);

  if (!n) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "cannot encode HELLO");
    return FALSE;
  }
  return fhtc_send (c, buf, n, error);
}

gboolean
fhtc_send_hints (FhTestClient *c, const FhHints *hints, GError **error)
{
  uint8_t buf[FH_FRAME_MAX];
  size_t n = fh_encode_hints (buf, sizeof buf, hints);

  if (!n) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "cannot encode HINTS");
    return FALSE;
  }
  return fhtc_send (c, buf, n, error);
}

gboolean
fhtc_send_close (FhTestClient *c, uint16_t reason, const char *text, GError **error)
{
  uint8_t buf[FH_FRAME_MAX];
  size_t n = fh_encode_close (buf, sizeof buf, reason, text);

  return fhtc_send (c, buf, n, error);
}

gboolean
fhtc_next_frame (FhTestClient *c, int timeout_ms, FhFrame *frame, GError **error)
{
  gint64 deadline = timeout_ms < 0 ? -1 : g_get_monotonic_time () + timeout_ms * 1000LL;

  if (c->consumed) {
    memmove (c->in, c->in + c->consumed, c->in_len - c->consumed);
    c->in_len -= c->consumed;
    c->consumed = 0;
  }
  for (;;) {
    FhError err;
    size_t size;
    struct pollfd pfd = { c->fd, POLLIN, 0 };
    int wait_ms;
    ssize_t n;

    switch (fh_frame_parse (c->in, c->in_len, frame, &size, &err)) {
      case FH_PARSE_FRAME:
        c->consumed = size;
        return TRUE;
      case FH_PARSE_ERROR:
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "agent sent a bad frame: %s",
                     err.text);
        return FALSE;
      case FH_PARSE_NEED_MORE:
        break;
    }
    wait_ms = deadline < 0 ? -1 : (int) MAX (0, (deadline - g_get_monotonic_time ()) / 1000);
    n = poll (&pfd, 1, wait_ms);
    if (n < 0 && errno == EINTR)
      continue;
    if (n == 0) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "no frame within %d ms", timeout_ms);
      return FALSE;
    }
    n = recv (c->fd, c->in + c->in_len, sizeof c->in - c->in_len, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED, "agent closed the socket%s%s",
                   n < 0 ? ": " : "", n < 0 ? g_strerror (errno) : "");
      return FALSE;
    }
    c->in_len += (size_t) n;
  }
}

gboolean
fhtc_has_frame (FhTestClient *c)
{
  FhFrame f;
  FhError err;
  size_t size;

  return fh_frame_parse (c->in + c->consumed, c->in_len - c->consumed, &f, &size, &err) !=
         FH_PARSE_NEED_MORE;
}

gboolean
fhtc_handshake (FhTestClient *c, const FhHello *hello, FhWelcome *welcome, GError **error)
{
  return fhtc_handshake_within (c, hello, welcome, 10000, error);
}

gboolean
fhtc_handshake_within (FhTestClient *c, const FhHello *hello, FhWelcome *welcome, int timeout_ms,
                       GError **error)
{
  FhFrame f;
  FhError err;

  if (!fhtc_send_hello (c, hello, error) || !fhtc_next_frame (c, timeout_ms, &f, error))
    return FALSE;
  if (f.msg_type == FH_MSG_CLOSE) {
    FhClose cl;

    if (fh_decode_close (&f, &cl, &err))
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_CONNECTION_REFUSED, "agent closed: %s: %s",
                   fh_close_reason_name (cl.reason), cl.text);
    else
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "bad CLOSE: %s", err.text);
    return FALSE;
  }
  if (!fh_decode_welcome (&f, welcome, &err)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "expected WELCOME: %s", err.text);
    return FALSE;
  }
  return TRUE;
}

static gboolean
parse_field (const char *s, uint16_t *v, gboolean *valid)
{
  guint64 x;

  if (strcmp (s, "-") == 0 || *s == '\0') {
    *v = 0;
    *valid = FALSE;
    return TRUE;
  }
  /* No range check: tests send out-of-range values on purpose. */
  if (!g_ascii_string_to_unsigned (s, 10, 0, G_MAXUINT16, &x, NULL))
    return FALSE;
  *v = (uint16_t) x;
  *valid = TRUE;
  return TRUE;
}

gboolean
fhtc_parse_hint (const char *spec, FhRecord *rec, GError **error)
{
  g_auto (GStrv) f = g_strsplit (spec, ":", -1);
  guint n = g_strv_length (f);
  guint64 vcpu;
  gboolean valid;

  memset (rec, 0, sizeof *rec);
  if (n < 2 || !g_ascii_string_to_unsigned (f[0], 10, 0, G_MAXUINT16, &vcpu, NULL))
    goto bad;
  rec->vcpu = (uint16_t) vcpu;
  if (n == 2 && strcmp (f[1], "none") == 0)
    return TRUE;
  if (n > 2 && strcmp (f[n - 1], "idle") == 0) {
    rec->flags |= VIRTIO_FREQHINT_R_IDLE;
    n--;
  }
  if (n < 3 || n > 4)
    goto bad;
  if (!parse_field (f[1], &rec->clamp_min, &valid))
    goto bad;
  rec->flags |= valid ? VIRTIO_FREQHINT_R_MIN_VALID : 0;
  if (!parse_field (f[2], &rec->clamp_max, &valid))
    goto bad;
  rec->flags |= valid ? VIRTIO_FREQHINT_R_MAX_VALID : 0;
  if (n == 4) {
    if (!parse_field (f[3], &rec->perf, &valid))
      goto bad;
    rec->flags |= valid ? VIRTIO_FREQHINT_R_PERF_VALID : 0;
  }
  return TRUE;
bad:
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
               "bad hint \"%s\": want vcpu:min:max[:perf][:idle] or vcpu:none", spec);
  return FALSE;
}

gboolean
fhtc_parse_uuid (const char *text, uint8_t uuid[16])
{
  guint j = 0;

  for (const char *p = text; *p; p++) {
    int hi, lo;

    if (*p == '-')
      continue;
    if (j == 16 || !p[1])
      return FALSE;
    hi = g_ascii_xdigit_value (p[0]);
    lo = g_ascii_xdigit_value (p[1]);
    if (hi < 0 || lo < 0)
      return FALSE;
    uuid[j++] = (uint8_t) (hi << 4 | lo);
    p++;
  }
  return j == 16;
}

/* Our argv strings' memory: a child rewrites it to change its /proc cmdline. */
static char *arg_area;
static size_t arg_area_len;

void
fhtc_peer_init (int argc, char **argv)
{
  arg_area = argv[0];
  arg_area_len = (size_t) (argv[argc - 1] + strlen (argv[argc - 1]) + 1 - argv[0]);
}

/*
 * A child process with the command line "fh-loadclient -name NAME -uuid
 * UUID" connects to the agent and passes the socket back; it stays (paused)
 * as the VM's process until we kill it or exit.  Returns the socket.
 */
int
fhtc_spawn_peer (const char *socket_path, const char *name, const uint8_t u[16], pid_t *pid)
{
  char uuid[37];
  int sv[2], fd = -1;
  char cbuf[CMSG_SPACE (sizeof (int))] = { 0 };
  char byte = 0;
  struct iovec iov = { &byte, 1 };
  struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                        .msg_controllen = sizeof cbuf };
  pid_t child;

  g_snprintf (uuid, sizeof uuid,
              "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
              u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
              u[15]);
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    return -1;
  child = fork ();
  if (child == 0) {
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    char cmd[256];
    int n = snprintf (cmd, sizeof cmd, "fh-loadclient%c-name%c%s%c-uuid%c%s", 0, 0, name, 0, 0,
                      uuid);
    struct cmsghdr *cm;
    int s;

    prctl (PR_SET_PDEATHSIG, SIGKILL);
    /* keep stdio and the channel; the other VMs' sockets are not ours */
    if (dup2 (sv[1], 3) < 0 || close_range (4, ~0U, 0) < 0)
      _exit (3);
    if (n < 0 || (size_t) n + 1 > arg_area_len)
      _exit (4);
    memset (arg_area, 0, arg_area_len);
    memcpy (arg_area, cmd, (size_t) n + 1);
    strncpy (a.sun_path, socket_path, sizeof a.sun_path - 1);
    s = socket (AF_UNIX, SOCK_STREAM, 0);
    if (s < 0 || connect (s, (struct sockaddr *) &a, sizeof a) < 0)
      _exit (5);
    cm = CMSG_FIRSTHDR (&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN (sizeof (int));
    memcpy (CMSG_DATA (cm), &s, sizeof s);
    if (sendmsg (3, &msg, 0) != 1)
      _exit (6);
    close (s);
    close (3);
    for (;;)
      pause ();
  }
  close (sv[1]);
  if (child > 0 && recvmsg (sv[0], &msg, MSG_CMSG_CLOEXEC) == 1) {
    struct cmsghdr *cm = CMSG_FIRSTHDR (&msg);

    if (cm && cm->cmsg_type == SCM_RIGHTS)
      memcpy (&fd, CMSG_DATA (cm), sizeof fd);
  }
  close (sv[0]);
  *pid = child;
  return fd;
}

gboolean
fhtc_link_cmdline (const char *dir, pid_t pid)
{
  g_autofree char *d = g_strdup_printf ("%s/%d", dir, (int) pid);
  g_autofree char *link = g_build_filename (d, "cmdline", NULL);
  g_autofree char *target = g_strdup_printf ("/proc/%d/cmdline", (int) pid);

  unlink (link);
  return g_mkdir_with_parents (d, 0755) == 0 && symlink (target, link) == 0;
}
