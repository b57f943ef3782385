/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fh-hog: hold many connections to a socket, idle or trickling bytes, to
 * test that freqhintd bounds what one client can hold (threat model G-13).
 *
 *   fh-hog (--unix PATH | --tcp ADDR:PORT) --count N [--send TEXT]
 *          [--trickle TEXT --trickle-ms MS] [--hold S] [--paused] [--reconnect]
 *
 * Prints "held N" once the connections are opened (N connected), then
 * "closed M" each time the number the other side has closed changes, and
 * exits after --hold seconds (default: until killed).  Whatever the other
 * side sends is read as it comes, every 50 ms; with --paused nothing is read
 * until SIGUSR1 (a reader that stopped: the other side's answers stay in
 * flight, however fast this host is), and a close is still reported.
 * With --reconnect a connection the other side closed (or refused) is
 * opened again at once, its --send text sent again, and "reconnected N"
 * reports the total now and then: a client that keeps its slots full.
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib.h>

static volatile sig_atomic_t paused;

static void
resume (int sig)
{
  (void) sig;
  paused = 0;
}

/* Has the other side closed?  Asked without reading what it sent. */
static gboolean
peer_closed (int fd)
{
  struct pollfd p = { .fd = fd, .events = POLLRDHUP };

  return poll (&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static int
open_one (const char *unix_path, const char *tcp)
{
  int fd;

  if (unix_path) {
    struct sockaddr_un a = { .sun_family = AF_UNIX };

    g_strlcpy (a.sun_path, unix_path, sizeof a.sun_path);
    fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect (fd, (struct sockaddr *) &a, sizeof a) < 0) {
      close (fd);
      return -1;
    }
  } else {
    struct sockaddr_in a = { .sin_family = AF_INET };
    g_autofree char *host = g_strdup (tcp);
    char *colon = strrchr (host, ':');

    if (!colon)
      return -1;
    *colon = '\0';
    a.sin_port = htons ((uint16_t) atoi (colon + 1));
    if (inet_pton (AF_INET, host, &a.sin_addr) != 1)
      return -1;
    fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect (fd, (struct sockaddr *) &a, sizeof a) < 0) {
      close (fd);
      return -1;
    }
  }
  return fd;
}

int
main (int argc, char **argv)
{
  g_autofree char *unix_path = NULL, *tcp = NULL, *send_text = NULL, *trickle = NULL;
  int count = 1, trickle_ms = 0, hold = -1, held = 0, closed = 0, last_closed = -1;
  gboolean start_paused = FALSE, reconnect = FALSE;
  guint64 reconnected = 0, last_reported = 0;
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- hold connections");
  g_autoptr (GError) error = NULL;
  const GOptionEntry entries[] = {
    { "unix", 0, 0, G_OPTION_ARG_FILENAME, &unix_path, "UNIX socket", "PATH" },
    { "tcp", 0, 0, G_OPTION_ARG_STRING, &tcp, "IPv4 address:port", "ADDR:PORT" },
    { "count", 'n', 0, G_OPTION_ARG_INT, &count, "Connections", "N" },
    { "send", 0, 0, G_OPTION_ARG_STRING, &send_text, "Send this first (\\r\\n escapes)", "TEXT" },
    { "trickle", 0, 0, G_OPTION_ARG_STRING, &trickle, "Then send this every --trickle-ms", "TEXT" },
    { "trickle-ms", 0, 0, G_OPTION_ARG_INT, &trickle_ms, "Trickle interval", "MS" },
    { "hold", 0, 0, G_OPTION_ARG_INT, &hold, "Seconds to hold (default: until killed)", "S" },
    { "paused", 0, 0, G_OPTION_ARG_NONE, &start_paused, "Read nothing until SIGUSR1", NULL },
    { "reconnect", 0, 0, G_OPTION_ARG_NONE, &reconnect, "Reopen closed connections at once", NULL },
    { NULL }
  };
  struct rlimit rl;
  g_autofree int *fds = NULL;
  gint64 end, next_trickle;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error) || (!unix_path == !tcp) || count < 1) {
    g_printerr ("fh-hog: %s\n", error ? error->message : "need one of --unix/--tcp, --count >= 1");
    return 2;
  }
  if (getrlimit (RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t) count + 16) {
    rl.rlim_cur = MIN (rl.rlim_max, (rlim_t) count + 16);
    setrlimit (RLIMIT_NOFILE, &rl);
  }
  if (send_text) {
    g_autofree char *t = g_strcompress (send_text);
    g_free (send_text);
    send_text = g_steal_pointer (&t);
  }
  if (trickle) {
    g_autofree char *t = g_strcompress (trickle);
    g_free (trickle);
    trickle = g_steal_pointer (&t);
  }
  paused = start_paused;
  signal (SIGUSR1, resume);
  fds = g_new (int, count);
  for (int i = 0; i < count; i++) {
    fds[i] = open_one (unix_path, tcp);
    if (fds[i] >= 0) {
      held++;
      if (send_text)
        (void) !send (fds[i], send_text, strlen (send_text), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  }
  printf ("held %d\n", held);
  fflush (stdout);
  end = hold >= 0 ? g_get_monotonic_time () + (gint64) hold * G_USEC_PER_SEC : G_MAXINT64;
  next_trickle = g_get_monotonic_time () + (gint64) trickle_ms * 1000;
  while (g_get_monotonic_time () < end) {
    char buf[4096];

    closed = 0;
    for (int i = 0; i < count; i++) {
      if (fds[i] < 0 && reconnect) {
        fds[i] = open_one (unix_path, tcp);
        if (fds[i] >= 0) {
          reconnected++;
          if (send_text)
            (void) !send (fds[i], send_text, strlen (send_text), MSG_NOSIGNAL | MSG_DONTWAIT);
        }
      }
      if (fds[i] < 0) {
        closed++;
        continue;
      }
      if (paused) {
        if (peer_closed (fds[i]))
          closed++;
        continue;
      }
      for (;;) {
        ssize_t n = recv (fds[i], buf, sizeof buf, MSG_DONTWAIT);

        if (n > 0)
          continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          close (fds[i]);
          fds[i] = -1;
          closed++;
        }
        break;
      }
    }
    if (reconnect && reconnected >= last_reported + 100) {
      printf ("reconnected %" G_GUINT64_FORMAT "\n", reconnected);
      fflush (stdout);
      last_reported = reconnected;
    }
    if (closed != last_closed) {
      printf ("closed %d\n", closed);
      fflush (stdout);
      last_closed = closed;
    }
    if (trickle && trickle_ms > 0 && g_get_monotonic_time () >= next_trickle) {
      for (int i = 0; i < count; i++)
        if (fds[i] >= 0)
          (void) !send (fds[i], trickle, strlen (trickle), MSG_NOSIGNAL | MSG_DONTWAIT);
      next_trickle += (gint64) trickle_ms * 1000;
    }
    /* reconnecting: as soon as a slot is free, as an attacker would */
    g_usleep ((reconnect ? 5 : 50) * 1000);
  }
  return 0;
}
