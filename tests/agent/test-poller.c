/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fh-poller: the one epoll source for every device socket and pidfd
 * (issue 29, item 8).  Real sockets, a real main loop: many fds, a watch
 * ended while its event waits in the same dispatch, a watch that ends
 * itself, output readiness, hang-up, and that peers which never stop
 * sending cannot keep another ready fd waiting.
 */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib.h>

#include "fh-poller.h"

typedef struct {
  int fd;   /* watched end */
  int peer; /* the other end */
  FhPollerWatch *watch;
  guint calls;
  GIOCondition last;
  gboolean drain; /* read everything on each call; else one byte */
} End;

static End *
ends_new (FhPoller *p, guint n, FhPollerFunc func, gpointer data)
{
  End *e = g_new0 (End, n);

  for (guint i = 0; i < n; i++) {
    int sv[2];

    g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), ==,
                     0);
    e[i].fd = sv[0];
    e[i].peer = sv[1];
    e[i].drain = TRUE;
    e[i].watch = fh_poller_add (p, e[i].fd, G_IO_IN, func, data ? data : &e[i]);
    g_assert_nonnull (e[i].watch);
  }
  return e;
}

static void
ends_free (End *e, guint n)
{
  for (guint i = 0; i < n; i++) {
    g_clear_pointer (&e[i].watch, fh_poller_watch_remove);
    if (e[i].fd >= 0)
      close (e[i].fd);
    close (e[i].peer);
  }
  g_free (e);
}

static void
poke (End *e)
{
  g_assert_cmpint (write (e->peer, "x", 1), ==, 1);
}

static gboolean
on_ready (int fd, GIOCondition cond, gpointer data)
{
  End *e = data;
  char buf[256];

  e->calls++;
  e->last = cond;
  if (cond & G_IO_IN)
    while (read (fd, buf, e->drain ? sizeof buf : 1) > 0 && e->drain)
      ;
  return G_SOURCE_CONTINUE;
}

/* Main-loop iterations until none is pending (each dispatch is one batch). */
static void
iterate_idle (void)
{
  for (guint i = 0; i < 1000 && g_main_context_iteration (NULL, FALSE); i++)
    ;
}

static void
raise_nofile (rlim_t want)
{
  struct rlimit r;

  g_assert_cmpint (getrlimit (RLIMIT_NOFILE, &r), ==, 0);
  if (r.rlim_cur < want) {
    r.rlim_cur = MIN (want, r.rlim_max);
    g_assert_cmpint (setrlimit (RLIMIT_NOFILE, &r), ==, 0);
  }
}

/* 1000 sockets in one source: each ready one is called once per byte batch, the others not at all. */
static void
test_many (void)
{
  const guint n = 1000;
  g_autoptr (GError) error = NULL;
  FhPoller *p = fh_poller_new (&error);
  End *e;

  g_assert_no_error (error);
  raise_nofile (2 * n + 64);
  e = ends_new (p, n, on_ready, NULL);
  g_assert_cmpuint (fh_poller_n_watches (p), ==, n);
  for (guint i = 0; i < n; i += 3)
    poke (&e[i]);
  iterate_idle ();
  for (guint i = 0; i < n; i++) {
    g_assert_cmpuint (e[i].calls, ==, i % 3 == 0 ? 1 : 0);
    if (e[i].calls)
      g_assert_true (e[i].last & G_IO_IN);
  }
  /* level-triggered: nothing new, nothing called */
  iterate_idle ();
  for (guint i = 0; i < n; i++)
    g_assert_cmpuint (e[i].calls, <=, 1);
  ends_free (e, n);
  g_assert_cmpuint (fh_poller_n_watches (p), ==, 0);
  fh_poller_free (p);
}

/*
 * A connection closed while others' events wait in the same dispatch: the
 * first callback ends every other watch and closes its fd; their events,
 * already collected, must not reach them (their owner may be freed).
 */
static End *closing_set;
static guint closing_n, closing_calls;

static gboolean
on_ready_close_others (int fd, GIOCondition cond, gpointer data)
{
  End *self = data;

  closing_calls++;
  for (guint i = 0; i < closing_n; i++) {
    End *o = &closing_set[i];

    if (o == self || !o->watch)
      continue;
    g_clear_pointer (&o->watch, fh_poller_watch_remove);
    close (o->fd);
    o->fd = -1;
  }
  return on_ready (fd, cond, self);
}

static void
test_close_mid_dispatch (void)
{
  g_autoptr (GError) error = NULL;
  FhPoller *p = fh_poller_new (&error);

  closing_n = 32; /* fewer than one batch: all in the same dispatch */
  closing_calls = 0;
  closing_set = ends_new (p, closing_n, on_ready_close_others, NULL);
  for (guint i = 0; i < closing_n; i++)
    poke (&closing_set[i]);
  iterate_idle ();
  g_assert_cmpuint (closing_calls, ==, 1);
  g_assert_cmpuint (fh_poller_n_watches (p), ==, 1);
  ends_free (closing_set, closing_n);
  fh_poller_free (p);
}

/* A watch that ends itself and also returns G_SOURCE_REMOVE is ended once. */
static gboolean
on_ready_end_self (int fd, GIOCondition cond, gpointer data)
{
  End *e = data;

  on_ready (fd, cond, e);
  g_clear_pointer (&e->watch, fh_poller_watch_remove);
  return G_SOURCE_REMOVE;
}

static gboolean
on_ready_remove (int fd, GIOCondition cond, gpointer data)
{
  End *e = data;

  on_ready (fd, cond, e);
  e->watch = NULL; /* the poller ends it */
  return G_SOURCE_REMOVE;
}

static void
test_remove_from_callback (void)
{
  g_autoptr (GError) error = NULL;
  FhPoller *p = fh_poller_new (&error);
  End *a = ends_new (p, 1, on_ready_end_self, NULL);
  End *b = ends_new (p, 1, on_ready_remove, NULL);

  poke (a);
  poke (b);
  iterate_idle ();
  g_assert_cmpuint (fh_poller_n_watches (p), ==, 0);
  poke (a);
  poke (b);
  iterate_idle ();
  g_assert_cmpuint (a->calls, ==, 1);
  g_assert_cmpuint (b->calls, ==, 1);
  ends_free (a, 1);
  ends_free (b, 1);
  fh_poller_free (p);
}

/* Output readiness on demand, and a peer's hang-up. */
static void
test_out_and_hup (void)
{
  g_autoptr (GError) error = NULL;
  FhPoller *p = fh_poller_new (&error);
  End *e = ends_new (p, 1, on_ready, NULL);

  iterate_idle ();
  g_assert_cmpuint (e->calls, ==, 0);
  fh_poller_watch_set_cond (e->watch, G_IO_IN | G_IO_OUT);
  g_main_context_iteration (NULL, FALSE);
  g_assert_cmpuint (e->calls, ==, 1);
  g_assert_true (e->last & G_IO_OUT);
  fh_poller_watch_set_cond (e->watch, G_IO_IN);
  e->calls = 0;
  iterate_idle ();
  g_assert_cmpuint (e->calls, ==, 0);
  close (e->peer);
  e->peer = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0); /* for ends_free() */
  g_main_context_iteration (NULL, FALSE);
  g_assert_cmpuint (e->calls, ==, 1);
  g_assert_true (e->last & G_IO_HUP);
  ends_free (e, 1);
  fh_poller_free (p);
}

/*
 * Fairness: 300 peers that never stop sending (each call takes one byte of
 * many, so they stay ready) and one that sends once.  One dispatch takes
 * one batch of events and the kernel reports the ones it left first next
 * time, so the quiet peer is served within (301 / batch) + 1 dispatches,
 * and every flooder gets a turn before any gets a second.
 */
static void
test_fairness (void)
{
  const guint n = 300;
  g_autoptr (GError) error = NULL;
  FhPoller *p = fh_poller_new (&error);
  End *flood, *quiet;
  char junk[512];
  guint i, dispatches;

  raise_nofile (2 * n + 64);
  memset (junk, 'f', sizeof junk);
  flood = ends_new (p, n, on_ready, NULL);
  for (i = 0; i < n; i++) {
    flood[i].drain = FALSE;
    g_assert_cmpint (write (flood[i].peer, junk, sizeof junk), ==, sizeof junk);
  }
  /* the flooders have the loop to themselves for a while */
  for (i = 0; i < 20; i++)
    g_main_context_iteration (NULL, FALSE);
  quiet = ends_new (p, 1, on_ready, NULL);
  poke (quiet);
  for (dispatches = 0; quiet->calls == 0 && dispatches < 100; dispatches++)
    g_main_context_iteration (NULL, FALSE);
  g_assert_cmpuint (quiet->calls, ==, 1);
  g_assert_cmpuint (dispatches, <=, (n + 1) / 64 + 2);
  /* round robin among the flooders: no one is two turns ahead */
  {
    guint lo = G_MAXUINT, hi = 0;

    for (i = 0; i < n; i++) {
      lo = MIN (lo, flood[i].calls);
      hi = MAX (hi, flood[i].calls);
    }
    g_assert_cmpuint (lo, >=, 1);
    g_assert_cmpuint (hi - lo, <=, 1);
  }
  ends_free (flood, n);
  ends_free (quiet, 1);
  fh_poller_free (p);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/poller/many", test_many);
  g_test_add_func ("/poller/close-mid-dispatch", test_close_mid_dispatch);
  g_test_add_func ("/poller/remove-from-callback", test_remove_from_callback);
  g_test_add_func ("/poller/out-and-hup", test_out_and_hup);
  g_test_add_func ("/poller/fairness", test_fairness);
  return g_test_run ();
}
