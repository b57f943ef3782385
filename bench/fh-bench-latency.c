/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fh-bench-latency: host side of the end-to-end latency benchmark.
 *
 *   fh-bench-latency --serial SOCK --watch FILE --high-khz K --low-khz K
 *                    [--samples 200] [--floor 800]
 *
 * SOCK is the UNIX socket behind a guest serial port on which
 * fh-guest-bench runs `step` (bench/guest/fh-guest-bench.c): a task on one
 * vCPU, busy part of the time, that sets its own utilization clamp floor
 * when told ("S <min>") and acknowledges ("A <min>").  FILE is the fixture
 * scaling_min_freq freqhintd's cpufreq backend writes for that vCPU's host
 * CPU.  Each sample alternates the floor between --floor (expected write:
 * --high-khz) and 0 (--low-khz), and measures with CLOCK_MONOTONIC:
 *
 *   cmd->write   host sends the command .. inotify reports FILE closed after
 *                a write holding the expected value
 *   cmd->ack     host sends the command .. the guest's acknowledgement
 *                (the serial link's round trip plus one sched_setattr: the
 *                part of cmd->write that is not freqhint)
 *   ack->write   the guest's acknowledgement .. the write: a lower bound of
 *                clamp change -> host write (the change happened before the
 *                ack left the guest), as cmd->write is an upper bound
 *
 * --rise-only measures only the samples that raise the floor (each
 * followed by an unmeasured one that lowers it again): with the windows
 * off, the floor falls on its own whenever the responder sleeps (a clamp
 * holds only while its task runs), so a lowering write may come before
 * its command and a lowering sample measures nothing.
 *
 * Between samples: a pause of 100..300 ms (varied so samples do not lock
 * to the guest's 10 ms windows).
 *
 * Without the command's trip (the serial port is emulated byte by byte
 * under TCG and dominates cmd->write): the guest stamps the clamp change
 * (its CLOCK_MONOTONIC_RAW just before sched_setattr(), sent back in the
 * acknowledgement) and this side relates the guest's clock to its own
 * CLOCK_MONOTONIC_RAW by round-trip offset estimates over the same serial
 * port, NTP style, before and after the samples (--sync exchanges each):
 * send "T k" at t1, the guest answers with its clock t2 when it reads the
 * line, received at t3; offset = t2 - (t1 + t3) / 2, true within
 * +-(t3 - t1) / 2 whatever the asymmetry of the two directions.  The
 * exchange with the smallest round trip of each phase is kept; the offset
 * at a sample is interpolated between the two (drift).  Then
 *
 *   change->write   the write's host time - (the guest's stamp - offset),
 *                   within +-err (the larger of the two kept round trips'
 *                   halves); an upper bound by the time this process takes
 *                   to wake for the inotify event.
 *
 * The write is stamped from outside the daemon, by the kernel's inotify
 * IN_CLOSE_WRITE of the file: freqhintd is measured unchanged (no debug
 * log on its write path), and its own log stamps would say when it meant
 * to write, not when the file held the value.
 *
 * Prints the raw samples (ms) on stdout, one "sample I CMD_WRITE_MS
 * CMD_ACK_MS ACK_WRITE_MS CHANGE_WRITE_MS" line each, a "sync" line per
 * phase, then a summary line.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

static double
now_ms (void)
{
  struct timespec t;

  clock_gettime (CLOCK_MONOTONIC_RAW, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int
connect_unix (const char *path)
{
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

  g_strlcpy (a.sun_path, path, sizeof a.sun_path);
  if (fd < 0 || connect (fd, (struct sockaddr *) &a, sizeof a) < 0) {
    fprintf (stderr, "fh-bench-latency: connect %s: %s\n", path, g_strerror (errno));
    exit (1);
  }
  return fd;
}

static guint
read_khz (const char *path)
{
  g_autofree char *s = NULL;

  if (!g_file_get_contents (path, &s, NULL, NULL))
    return 0;
  return (guint) strtoul (s, NULL, 10);
}

/* Serial input: accumulate until a line that starts with KIND and a space. */
static char line_buf[256];
static size_t line_len;

static gboolean
wait_line (int fd, double deadline, char kind, char *out, size_t out_len)
{
  for (;;) {
    char *nl;
    struct pollfd p = { fd, POLLIN, 0 };
    int t = (int) (deadline - now_ms ());
    ssize_t n;

    while ((nl = memchr (line_buf, '\n', line_len))) {
      gboolean match = line_len >= 2 && line_buf[0] == kind && line_buf[1] == ' ';
      size_t used = (size_t) (nl - line_buf) + 1;

      if (match)
        g_strlcpy (out, line_buf, MIN (out_len, used));
      memmove (line_buf, nl + 1, line_len - used);
      line_len -= used;
      if (match)
        return TRUE;
    }
    if (poll (&p, 1, MAX (t, 0)) <= 0)
      return FALSE;
    n = read (fd, line_buf + line_len, sizeof line_buf - line_len);
    if (n <= 0)
      return FALSE;
    line_len += (size_t) n;
    if (line_len == sizeof line_buf)
      line_len = 0; /* garbage; drop it */
  }
}

/* One round-trip offset estimate (ms): guest clock - host clock. */
typedef struct {
  double rtt;
  double off;
  double at; /* host time, middle of the exchange */
} Sync;

static int
cmp_rtt (const void *a, const void *b)
{
  const Sync *x = a, *y = b;

  return x->rtt < y->rtt ? -1 : x->rtt > y->rtt;
}

/*
 * N exchanges 3..10 ms apart; *best is the one with the smallest round
 * trip; *spread the range of the offsets among the tenth with the
 * smallest round trips (a check of the estimate).  Returns the exchanges
 * answered.
 */
static guint
clock_sync (int fd, guint n, guint32 *rng, Sync *best, double *spread)
{
  g_autofree Sync *s = g_new0 (Sync, n);
  guint got = 0, keep;
  double lo, hi;

  for (guint k = 0; k < n; k++) {
    char cmd[32], line[64];
    int len = g_snprintf (cmd, sizeof cmd, "T %u\n", k);
    double t1 = now_ms (), deadline = t1 + 1000;

    if (write (fd, cmd, (size_t) len) != len)
      break;
    while (wait_line (fd, deadline, 'T', line, sizeof line)) {
      double t3 = now_ms ();
      unsigned int kk;
      long long t2;

      if (sscanf (line, "T %u %lld", &kk, &t2) != 2 || kk != k)
        continue; /* a late answer to an earlier exchange */
      s[got].rtt = t3 - t1;
      s[got].off = t2 / 1e6 - (t1 + t3) / 2;
      s[got].at = (t1 + t3) / 2;
      got++;
      break;
    }
    *rng = *rng * 1103515245u + 12345u;
    g_usleep (3000 + (*rng >> 8) % 7000);
  }
  if (!got)
    return 0;
  qsort (s, got, sizeof *s, cmp_rtt);
  *best = s[0];
  keep = MAX (got / 10, 1u);
  lo = hi = s[0].off;
  for (guint i = 1; i < keep; i++) {
    lo = MIN (lo, s[i].off);
    hi = MAX (hi, s[i].off);
  }
  *spread = hi - lo;
  return got;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

static double
pct (const double *sorted, guint n, guint p)
{
  guint i = (n * p + 99) / 100;

  return sorted[MIN (MAX (i, 1u), n) - 1];
}

int
main (int argc, char **argv)
{
  g_autofree char *serial = NULL, *watch = NULL;
  gint samples = 200, floor_cap = 800, high_khz = 0, low_khz = 0, sync_n = 200;
  gboolean rise_only = FALSE;
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- guest clamp change -> host write");
  const GOptionEntry entries[] = {
    { "serial", 0, 0, G_OPTION_ARG_FILENAME, &serial, "guest serial socket", "PATH" },
    { "watch", 0, 0, G_OPTION_ARG_FILENAME, &watch, "scaling_min_freq to watch", "FILE" },
    { "high-khz", 0, 0, G_OPTION_ARG_INT, &high_khz, "value written for the floor", "KHZ" },
    { "low-khz", 0, 0, G_OPTION_ARG_INT, &low_khz, "value written for floor 0", "KHZ" },
    { "samples", 0, 0, G_OPTION_ARG_INT, &samples, "samples (default 200)", "N" },
    { "floor", 0, 0, G_OPTION_ARG_INT, &floor_cap, "clamp floor to set (default 800)", "CAP" },
    { "sync", 0, 0, G_OPTION_ARG_INT, &sync_n, "clock exchanges before and after (default 200)", "N" },
    { "rise-only", 0, 0, G_OPTION_ARG_NONE, &rise_only, "measure only raising the floor", NULL },
    { NULL },
  };
  g_autofree double *lat = NULL, *ack = NULL, *aw = NULL, *clk = NULL, *t_w = NULL, *t_g = NULL;
  g_autofree gint *idx = NULL;
  Sync before, after;
  double spread_before, spread_after, err, drift_ppm;
  guint n_ok = 0, n_miss = 0, got_before, got_after;
  char line[64];
  int sfd, ifd;
  guint32 rng = 12345;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error) || !serial || !watch || !high_khz ||
      !low_khz || samples < 1 || sync_n < 1) {
    fprintf (stderr, "fh-bench-latency: need --serial, --watch, --high-khz, --low-khz\n");
    return 2;
  }
  lat = g_new0 (double, samples);
  ack = g_new0 (double, samples);
  aw = g_new0 (double, samples);
  clk = g_new0 (double, samples);
  t_w = g_new0 (double, samples);
  t_g = g_new0 (double, samples);
  idx = g_new0 (gint, samples);
  sfd = connect_unix (serial);
  ifd = inotify_init1 (IN_CLOEXEC | IN_NONBLOCK);
  if (ifd < 0 || inotify_add_watch (ifd, watch, IN_CLOSE_WRITE) < 0) {
    fprintf (stderr, "fh-bench-latency: inotify %s: %s\n", watch, g_strerror (errno));
    return 1;
  }

  /* The responder answers a ping once it is up. */
  {
    double deadline = now_ms () + 60000;
    gboolean up = FALSE;

    while (!up && now_ms () < deadline) {
      if (write (sfd, "P\n", 2) != 2)
        break;
      up = wait_line (sfd, now_ms () + 1000, 'A', line, sizeof line);
    }
    if (!up) {
      fprintf (stderr, "fh-bench-latency: the guest responder does not answer\n");
      return 1;
    }
  }

  got_before = clock_sync (sfd, (guint) sync_n, &rng, &before, &spread_before);
  if (!got_before) {
    fprintf (stderr, "fh-bench-latency: no clock exchange answered\n");
    return 1;
  }
  printf ("sync before n=%u rtt=%.3f offset=%.3f spread=%.3f\n", got_before, before.rtt,
          before.off, spread_before);

  for (gint i = 0; i < (rise_only ? 2 * samples : samples); i++) {
    gboolean high = (i % 2) == 0;
    guint want = (guint) (high ? high_khz : low_khz);
    char cmd[32];
    double t0, t_ack = -1, t_write = -1, t_guest = -1, deadline;
    uint8_t evbuf[4096];
    int len;

    /* Settle, and forget writes from before this sample. */
    rng = rng * 1103515245u + 12345u;
    g_usleep (100000 + (rng >> 8) % 200000);
    while (read (ifd, evbuf, sizeof evbuf) > 0)
      ;
    if (read_khz (watch) == want) {
      /* The previous sample's change was never written: count a miss. */
      fprintf (stderr, "fh-bench-latency: sample %d: file already holds %u\n", i, want);
    }
    len = g_snprintf (cmd, sizeof cmd, "S %d\n", high ? floor_cap : 0);
    t0 = now_ms ();
    if (write (sfd, cmd, (size_t) len) != len) {
      fprintf (stderr, "fh-bench-latency: serial write failed\n");
      return 1;
    }
    deadline = t0 + 5000;
    while ((t_ack < 0 || t_write < 0) && now_ms () < deadline) {
      struct pollfd p[2] = { { sfd, POLLIN, 0 }, { ifd, POLLIN, 0 } };

      if (poll (p, 2, (int) (deadline - now_ms ()) + 1) <= 0)
        break;
      if ((p[0].revents & POLLIN) && t_ack < 0 && wait_line (sfd, now_ms (), 'A', line, sizeof line))
        t_ack = now_ms ();
      if (p[1].revents & POLLIN) {
        double t = now_ms ();

        while (read (ifd, evbuf, sizeof evbuf) > 0)
          ;
        if (t_write < 0 && read_khz (watch) == want)
          t_write = t;
      }
      /* wait_line() may have buffered the ack without poll saying so */
      if (t_ack < 0 && wait_line (sfd, now_ms (), 'A', line, sizeof line))
        t_ack = now_ms ();
      if (t_ack >= 0 && t_guest < 0) {
        int v;
        long long ns;

        /* A late answer to an earlier ping or sample is not this one's. */
        if (sscanf (line, "A %d %lld", &v, &ns) == 2 && v == (high ? floor_cap : 0))
          t_guest = ns / 1e6;
        else
          t_ack = -1;
      }
    }
    if (rise_only && !high)
      continue; /* the floor back to 0, not measured */
    if (t_write < 0 || t_ack < 0) {
      n_miss++;
      printf ("sample %d miss\n", i);
      continue;
    }
    lat[n_ok] = t_write - t0;
    ack[n_ok] = t_ack - t0;
    aw[n_ok] = t_write - t_ack;
    t_w[n_ok] = t_write;
    t_g[n_ok] = t_guest;
    idx[n_ok] = i;
    n_ok++;
  }

  got_after = clock_sync (sfd, (guint) sync_n, &rng, &after, &spread_after);
  if (!got_after) {
    fprintf (stderr, "fh-bench-latency: no clock exchange answered after the samples\n");
    return 1;
  }
  printf ("sync after n=%u rtt=%.3f offset=%.3f spread=%.3f\n", got_after, after.rtt, after.off,
          spread_after);
  err = MAX (before.rtt, after.rtt) / 2;
  drift_ppm = (after.off - before.off) / (after.at - before.at) * 1e6;
  for (guint j = 0; j < n_ok; j++) {
    double off = before.off + (after.off - before.off) * (t_w[j] - before.at) / (after.at - before.at);

    clk[j] = t_w[j] - (t_g[j] - off);
    printf ("sample %d %.3f %.3f %.3f %.3f\n", idx[j], lat[j], ack[j], aw[j], clk[j]);
  }
  if (write (sfd, "Q\n", 2) != 2)
    fprintf (stderr, "fh-bench-latency: cannot tell the responder to quit\n");
  if (!n_ok) {
    printf ("summary n=0 missed=%u\n", n_miss);
    return 1;
  }
  qsort (lat, n_ok, sizeof *lat, cmp_double);
  qsort (ack, n_ok, sizeof *ack, cmp_double);
  qsort (aw, n_ok, sizeof *aw, cmp_double);
  qsort (clk, n_ok, sizeof *clk, cmp_double);
  printf ("summary n=%u missed=%u write_p50=%.2f write_p90=%.2f write_p99=%.2f write_max=%.2f "
          "ack_p50=%.2f ack_p99=%.2f ackw_p50=%.2f ackw_p99=%.2f "
          "clk_p50=%.2f clk_p90=%.2f clk_p99=%.2f clk_max=%.2f clk_min=%.2f clk_err=%.2f "
          "offset_before=%.3f offset_after=%.3f drift_ppm=%.1f sync_n=%u/%u\n",
          n_ok, n_miss, pct (lat, n_ok, 50), pct (lat, n_ok, 90), pct (lat, n_ok, 99),
          lat[n_ok - 1], pct (ack, n_ok, 50), pct (ack, n_ok, 99), pct (aw, n_ok, 50),
          pct (aw, n_ok, 99), pct (clk, n_ok, 50), pct (clk, n_ok, 90), pct (clk, n_ok, 99),
          clk[n_ok - 1], clk[0], err, before.off, after.off, drift_ppm, got_before, got_after);
  return 0;
}
