/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fh-bench-vms: many virtio-freqhint devices at once, towards a running
 * freqhintd, for the agent benchmarks (memory, actuation economy, daemon
 * throughput).  Each VM is one connection made with fh-testclient-lib:
 * HELLO, WELCOME, a FULL HINTS frame, then one of
 *
 *   --mode hold    stay connected, answer PINGs, drain GRANTS
 *   --mode mixed   every --tick-ms (the device's rate window) each VM sends
 *                  the records that changed, from a model of a mixed guest
 *                  load (below), republished like the guest driver does:
 *                  only when a value moved by >= 16/1024 or a flag changed
 *   --mode flood   send 16-record HINTS frames round robin as fast as the
 *                  agent takes them (its socket buffers apply back-pressure)
 *   --mode drain   the agent's own cost, whatever the client's speed: stop
 *                  freqhintd (--daemon-pid, SIGSTOP), fill every VM's socket
 *                  with 16-record frames, let it go (SIGCONT) and take its
 *                  CPU time (/proc) until it has read them all (SIOCOUTQ);
 *                  --cycles times.  Prints drain_records and drain_cpu_s.
 *
 *   fh-bench-vms --socket S --vms N --vcpus V --tid-base T [--mode M]
 *                [--seconds S] [--tick-ms 10] [--ready-file F]
 *                [--proc-fixture DIR] [--handshake-ms 10000]
 *
 * Each VM's socket is connected by a process of its own whose command line
 * carries the VM's -name and -uuid (fhtc_spawn_peer(), as fh-loadclient
 * does), since the agent binds a VM's identity to the process that
 * connected (PA-20); this process speaks for all of them.
 *
 * vCPU j of VM i says its thread is T + i*V + j.  --ready-file is created
 * once every VM is connected and its FULL frame sent.  SIGTERM/SIGINT end
 * the run early.  Prints one line of key=value pairs: connected VMs,
 * frames and records sent, GRANTS and PINGs received, seconds.
 *
 * Mixed load model, by vCPU (j + i) % 4:
 *   0 interactive: clamps 0..1024, perf random walk 100..900, idle 5% of ticks toggles
 *   1 batch:       clamp max 512, perf walk 300..512, never idle
 *   2 latency:     clamp min 700, perf walk 200..1024, idle toggles 2%
 *   3 no uclamp:   perf only, walk 0..1024, idle toggles 10%
 * The walk moves by up to +-40 per tick.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gio/gio.h>

#include <linux/virtio_freqhint.h>

#include "fh-testclient-lib.h"

#define HYSTERESIS 16

typedef struct {
  uint16_t flags, min, max, perf;
  uint16_t pub_flags, pub_perf; /* last published */
  int lo, hi;                   /* perf walk range */
  guint idle_permille;          /* chance per tick to toggle idle */
} Vcpu;

typedef struct {
  FhTestClient *c;
  gboolean dead;
  guint32 seq;
  Vcpu *vcpu;
} Vm;

static volatile sig_atomic_t stop;
static guint64 frames_sent, records_sent, grants_rx, pings_rx;
static guint n_dead;
static guint32 rng = 0x2545f491u;

static void
on_signal (int sig)
{
  stop = 1;
}

static guint32
next_rand (void)
{
  rng ^= rng << 13;
  rng ^= rng >> 17;
  rng ^= rng << 5;
  return rng;
}

static void
vcpu_init (Vcpu *v, guint kind)
{
  memset (v, 0, sizeof *v);
  switch (kind) {
    case 0:
      v->flags = VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID;
      v->min = 0, v->max = 1024, v->lo = 100, v->hi = 900, v->idle_permille = 50;
      break;
    case 1:
      v->flags = VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID;
      v->min = 0, v->max = 512, v->lo = 300, v->hi = 512, v->idle_permille = 0;
      break;
    case 2:
      v->flags = VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID;
      v->min = 700, v->max = 1024, v->lo = 200, v->hi = 1024, v->idle_permille = 20;
      break;
    default:
      v->flags = 0, v->lo = 0, v->hi = 1024, v->idle_permille = 100;
      break;
  }
  v->flags |= VIRTIO_FREQHINT_R_PERF_VALID;
  v->perf = (uint16_t) ((v->lo + v->hi) / 2);
}

static void
vcpu_record (const Vcpu *v, guint index, guint32 seq, FhRecord *r)
{
  memset (r, 0, sizeof *r);
  r->vcpu = (uint16_t) index;
  r->flags = v->flags;
  r->clamp_min = (v->flags & VIRTIO_FREQHINT_R_MIN_VALID) ? v->min : 0;
  r->clamp_max = (v->flags & VIRTIO_FREQHINT_R_MAX_VALID) ? v->max : 0;
  r->perf = v->perf;
  r->seq = seq;
}

/* One tick of the model; TRUE when the driver would republish. */
static gboolean
vcpu_step (Vcpu *v)
{
  int p = v->perf + (int) (next_rand () % 81) - 40;

  v->perf = (uint16_t) CLAMP (p, v->lo, v->hi);
  if (v->idle_permille && next_rand () % 1000 < v->idle_permille)
    v->flags ^= VIRTIO_FREQHINT_R_IDLE;
  if (v->flags != v->pub_flags || ABS ((int) v->perf - (int) v->pub_perf) >= HYSTERESIS ||
      (v->perf != v->pub_perf && (v->perf == 0 || v->perf == 1024))) {
    v->pub_flags = v->flags;
    v->pub_perf = v->perf;
    return TRUE;
  }
  return FALSE;
}

static gboolean
send_frame (Vm *vm, FhHints *h)
{
  g_autoptr (GError) error = NULL;

  if (vm->dead)
    return FALSE;
  if (!fhtc_send_hints (vm->c, h, &error)) {
    fprintf (stderr, "fh-bench-vms: send: %s\n", error->message);
    vm->dead = TRUE;
    n_dead++;
    return FALSE;
  }
  frames_sent++;
  records_sent += h->num_records;
  return TRUE;
}

static void
drain (Vm *vm)
{
  g_autoptr (GError) error = NULL;
  FhFrame f;
  FhError err;

  while (!vm->dead && fhtc_next_frame (vm->c, 0, &f, &error)) {
    switch (f.msg_type) {
      case FH_MSG_PING: {
        uint64_t cookie;
        uint8_t buf[32];
        size_t n;

        if (fh_decode_ping (&f, &cookie, &err)) {
          n = fh_encode_ping (buf, sizeof buf, FH_MSG_PONG, cookie);
          fhtc_send (vm->c, buf, n, NULL);
        }
        pings_rx++;
        break;
      }
      case FH_MSG_GRANTS:
        grants_rx++;
        break;
      case FH_MSG_CLOSE: {
        FhClose cl = { 0 };

        fh_decode_close (&f, &cl, &err);
        fprintf (stderr, "fh-bench-vms: agent closed a VM: %s: %s\n",
                 fh_close_reason_name (cl.reason), cl.text);
        vm->dead = TRUE;
        n_dead++;
        return;
      }
      default:
        break;
    }
  }
  if (!vm->dead && !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT)) {
    fprintf (stderr, "fh-bench-vms: %s\n", error ? error->message : "?");
    vm->dead = TRUE;
    n_dead++;
  }
}

/* Answer what the agent sent, for up to timeout_ms. */
static void
service (Vm *vms, guint n, struct pollfd *pfd, int timeout_ms)
{
  for (guint i = 0; i < n; i++) {
    pfd[i].fd = vms[i].dead ? -1 : fhtc_fd (vms[i].c);
    pfd[i].events = POLLIN;
    pfd[i].revents = 0;
  }
  if (poll (pfd, n, timeout_ms) <= 0)
    return;
  for (guint i = 0; i < n; i++)
    if (pfd[i].revents)
      drain (&vms[i]);
}

static double
now_s (void)
{
  return g_get_monotonic_time () / 1e6;
}

/* The daemon's CPU time (utime + stime) in seconds. */
static double
daemon_cpu_s (pid_t pid)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/stat", (int) pid);
  g_autofree char *text = NULL;
  const char *p;
  unsigned long ut = 0, st = 0;

  if (!g_file_get_contents (path, &text, NULL, NULL) || !(p = strrchr (text, ')')))
    return -1;
  /* after comm: state is field 3, utime 14, stime 15 */
  if (sscanf (p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
    return -1;
  return (double) (ut + st) / (double) sysconf (_SC_CLK_TCK);
}

/* Bytes a VM sent that the daemon has not read yet. */
static int
unread (Vm *vm)
{
  int n = 0;

  if (vm->dead || ioctl (fhtc_fd (vm->c), SIOCOUTQ, &n) < 0)
    return 0;
  return n;
}

/*
 * One drain cycle: the daemon stopped, every socket filled (POLLOUT on a
 * UNIX stream socket means at most a quarter of its buffer is used, so a
 * 280-byte send does not block), the daemon let go, and its CPU time until
 * every socket is read.  Records sent: *records.
 */
static double
drain_cycle (Vm *vms, guint n_vms, gint n_vcpus, FhHints *h, pid_t daemon, guint64 *records)
{
  double c0, c1;
  guint64 before = records_sent;

  kill (daemon, SIGSTOP);
  for (guint i = 0; i < n_vms; i++) {
    Vm *vm = &vms[i];
    struct pollfd p = { .fd = vm->dead ? -1 : fhtc_fd (vm->c), .events = POLLOUT };

    while (!vm->dead && poll (&p, 1, 0) == 1 && (p.revents & POLLOUT)) {
      h->flags = 0;
      h->num_records = (uint16_t) n_vcpus;
      for (gint j = 0; j < n_vcpus; j++) {
        vcpu_step (&vm->vcpu[j]);
        vcpu_record (&vm->vcpu[j], (guint) j, ++vm->seq, &h->records[j]);
      }
      if (!send_frame (vm, h))
        break;
    }
  }
  c0 = daemon_cpu_s (daemon);
  kill (daemon, SIGCONT);
  for (;;) {
    guint left = 0;

    for (guint i = 0; i < n_vms; i++)
      left += unread (&vms[i]) > 0;
    if (left == 0 || stop)
      break;
    g_usleep (2000);
  }
  c1 = daemon_cpu_s (daemon);
  *records = records_sent - before;
  return c1 - c0;
}

int
main (int argc, char **argv)
{
  g_autofree char *socket_path = NULL, *mode = NULL, *ready_file = NULL, *proc_fixture = NULL;
  gint n_vms = 1, n_vcpus = 1, tid_base = 100000, tick_ms = 10, handshake_ms = 10000;
  gdouble seconds = 0;
  gint daemon_pid = 0, cycles = 10;
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- many freqhint devices");
  const GOptionEntry entries[] = {
    { "socket", 's', 0, G_OPTION_ARG_FILENAME, &socket_path, "freqhintd's device socket", "PATH" },
    { "vms", 0, 0, G_OPTION_ARG_INT, &n_vms, "VMs", "N" },
    { "vcpus", 0, 0, G_OPTION_ARG_INT, &n_vcpus, "vCPUs per VM", "N" },
    { "tid-base", 0, 0, G_OPTION_ARG_INT, &tid_base, "first vCPU thread id", "TID" },
    { "mode", 0, 0, G_OPTION_ARG_STRING, &mode, "hold | mixed | flood", "MODE" },
    { "seconds", 0, 0, G_OPTION_ARG_DOUBLE, &seconds, "run length (0: until a signal)", "S" },
    { "tick-ms", 0, 0, G_OPTION_ARG_INT, &tick_ms, "mixed: ms between frames of a VM", "MS" },
    { "proc-fixture", 0, 0, G_OPTION_ARG_FILENAME, &proc_fixture,
      "link DIR/<peer>/cmdline to each VM process's real one", "DIR" },
    { "handshake-ms", 0, 0, G_OPTION_ARG_INT, &handshake_ms, "how long a VM waits for WELCOME",
      "MS" },
    { "ready-file", 0, 0, G_OPTION_ARG_FILENAME, &ready_file, "created once all are connected",
      "PATH" },
    { "daemon-pid", 0, 0, G_OPTION_ARG_INT, &daemon_pid, "drain: freqhintd's pid", "PID" },
    { "cycles", 0, 0, G_OPTION_ARG_INT, &cycles, "drain: fill and drain cycles", "N" },
    { NULL },
  };
  static FhHello hello;
  static FhHints h;
  struct pollfd *pfd;
  Vm *vms;
  double t_start, t_conn, t_end;

  fhtc_peer_init (argc, argv);
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    fprintf (stderr, "fh-bench-vms: %s\n", error->message);
    return 2;
  }
  if (!mode)
    mode = g_strdup ("hold");
  if (!socket_path || n_vms < 1 || n_vcpus < 1 || n_vcpus > FH_MAX_VCPUS ||
      tick_ms < 1 ||
      (strcmp (mode, "hold") && strcmp (mode, "mixed") && strcmp (mode, "flood") &&
       strcmp (mode, "drain")) ||
      (strcmp (mode, "drain") == 0 && (daemon_pid <= 0 || cycles < 1))) {
    fprintf (stderr, "fh-bench-vms: need --socket, sane sizes and --mode hold|mixed|flood|drain "
                     "(drain: --daemon-pid)\n");
    return 2;
  }
  signal (SIGTERM, on_signal);
  signal (SIGINT, on_signal);
  signal (SIGPIPE, SIG_IGN);

  vms = g_new0 (Vm, n_vms);
  pfd = g_new0 (struct pollfd, n_vms);
  t_start = now_s ();
  for (gint i = 0; i < n_vms && !stop; i++) {
    Vm *vm = &vms[i];
    FhWelcome w;

    vm->vcpu = g_new0 (Vcpu, n_vcpus);
    memset (&hello, 0, sizeof hello);
    hello.version = FH_PROTO_VERSION;
    hello.num_vcpus = (uint16_t) n_vcpus;
    hello.features = FH_F_PERF | FH_F_GRANTS;
    hello.qemu_pid = (uint32_t) getpid ();
    hello.uuid[0] = 0xbe;
    hello.uuid[1] = 0x4c;
    hello.uuid[12] = (uint8_t) (i >> 24);
    hello.uuid[13] = (uint8_t) (i >> 16);
    hello.uuid[14] = (uint8_t) (i >> 8);
    hello.uuid[15] = (uint8_t) i;
    g_snprintf (hello.name, sizeof hello.name, "bench-%05d", i);
    for (gint j = 0; j < n_vcpus; j++)
      hello.tids[j] = (uint32_t) (tid_base + i * n_vcpus + j);
    {
      pid_t peer;
      int fd;

      fd = fhtc_spawn_peer (socket_path, hello.name, hello.uuid, &peer);
      if (fd < 0 || (proc_fixture && !fhtc_link_cmdline (proc_fixture, peer))) {
        fprintf (stderr, "fh-bench-vms: VM %d: no peer process\n", i);
        return 1;
      }
      hello.qemu_pid = (uint32_t) peer;
      vm->c = fhtc_adopt_fd (fd);
    }
    if (!fhtc_handshake_within (vm->c, &hello, &w, handshake_ms, &error)) {
      fprintf (stderr, "fh-bench-vms: VM %d: %s\n", i, error->message);
      return 1;
    }
    memset (&h, 0, sizeof h);
    h.flags = FH_HINTS_F_FULL;
    h.num_records = (uint16_t) n_vcpus;
    for (gint j = 0; j < n_vcpus; j++) {
      vcpu_init (&vm->vcpu[j], (guint) (i + j) % 4);
      vm->vcpu[j].pub_flags = vm->vcpu[j].flags;
      vm->vcpu[j].pub_perf = vm->vcpu[j].perf;
      vcpu_record (&vm->vcpu[j], (guint) j, ++vm->seq, &h.records[j]);
    }
    if (!send_frame (vm, &h))
      return 1;
    /* Keep up with GRANTS so the agent never sees a stalled reader. */
    if (i % 64 == 63)
      service (vms, (guint) i + 1, pfd, 0);
  }
  t_conn = now_s ();
  if (ready_file)
    g_file_set_contents (ready_file, "", 0, NULL);
  fprintf (stderr, "fh-bench-vms: %d VMs x %d vCPUs connected in %.2f s\n", n_vms, n_vcpus,
           t_conn - t_start);
  /* The FULL frames are set-up, not load. */
  frames_sent = records_sent = 0;

  if (strcmp (mode, "mixed") == 0) {
    double next = now_s ();

    while (!stop && (seconds <= 0 || now_s () - t_conn < seconds)) {
      double t = now_s ();

      if (t >= next) {
        for (gint i = 0; i < n_vms; i++) {
          Vm *vm = &vms[i];

          h.flags = 0;
          h.num_records = 0;
          for (gint j = 0; j < n_vcpus; j++)
            if (vcpu_step (&vm->vcpu[j]))
              vcpu_record (&vm->vcpu[j], (guint) j, ++vm->seq, &h.records[h.num_records++]);
          if (h.num_records)
            send_frame (vm, &h);
        }
        next += tick_ms / 1000.0;
        continue;
      }
      service (vms, (guint) n_vms, pfd, MAX (0, (int) ((next - t) * 1000)));
    }
  } else if (strcmp (mode, "drain") == 0) {
    double cpu = 0;
    guint64 records = 0;

    for (gint k = 0; k < cycles && !stop; k++) {
      guint64 r = 0;

      /* PINGs and GRANTS answered between cycles, as a device would */
      service (vms, (guint) n_vms, pfd, 0);
      cpu += drain_cycle (vms, (guint) n_vms, n_vcpus, &h, (pid_t) daemon_pid, &r);
      records += r;
    }
    printf ("drain_records=%" G_GUINT64_FORMAT " drain_cpu_s=%.2f ", records, cpu);
  } else if (strcmp (mode, "flood") == 0) {
    while (!stop && (seconds <= 0 || now_s () - t_conn < seconds)) {
      for (gint i = 0; i < n_vms && !stop; i++) {
        Vm *vm = &vms[i];

        h.flags = 0;
        h.num_records = (uint16_t) n_vcpus;
        for (gint j = 0; j < n_vcpus; j++) {
          vcpu_step (&vm->vcpu[j]);
          vcpu_record (&vm->vcpu[j], (guint) j, ++vm->seq, &h.records[j]);
        }
        send_frame (vm, &h);
      }
      service (vms, (guint) n_vms, pfd, 0);
    }
  } else {
    while (!stop && (seconds <= 0 || now_s () - t_conn < seconds))
      service (vms, (guint) n_vms, pfd, 200);
  }
  t_end = now_s ();
  printf ("connected=%u connect_s=%.2f frames=%" G_GUINT64_FORMAT " records=%" G_GUINT64_FORMAT
          " grants=%" G_GUINT64_FORMAT " pings=%" G_GUINT64_FORMAT " seconds=%.2f\n",
          (guint) n_vms - n_dead, t_conn - t_start, frames_sent, records_sent, grants_rx, pings_rx,
          t_end - t_conn);
  fflush (stdout);
  for (gint i = 0; i < n_vms; i++) {
    fhtc_free (vms[i].c);
    g_free (vms[i].vcpu);
  }
  g_free (vms);
  g_free (pfd);
  return n_dead ? 1 : 0;
}
