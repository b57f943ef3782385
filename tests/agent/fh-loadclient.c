/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fh-loadclient: many virtio-freqhint devices at once, for load tests.
 *
 *   fh-loadclient --socket PATH --vms N --vcpus M --seconds S [--rate HZ]
 *                 [--proc-fixture DIR] [--tid-base B] [--seed X] [--handshake-ms MS]
 *
 * Opens N connections, each with M vCPUs, handshakes all, then for S seconds sends each VM's random hints
 * (1..4 records per frame, about HZ frames per second per VM, valid records
 * of every kind: clamps, perf, idle, no hint) and answers every PING.
 * The agent binds a VM's identity to the process that connected (agent
 * protocol PA-20, one process per QEMU): each VM's socket is connected by a
 * child process whose command line reads "-name load-NNNN -uuid ...", which
 * hands the socket over (SCM_RIGHTS) and then waits; this process speaks
 * for all of them.  With --proc-fixture, writes DIR/<child>/cmdline (a link
 * to the real one) and DIR/<tid>/{status,stat,cgroup} for the tids it
 * announces (B + vm * M + vcpu, pinned to tid % 8, Tgid = that VM's child,
 * cgroup /machine.slice), the layout of tests/agent/mkfixture.sh.
 *
 * Prints "connected N" once all are up, "stopping" when the S seconds are
 * over (before it closes the connections and reaps the children, which
 * takes seconds on a busy host: a test sampling the agent tells the two
 * phases apart by it), then at the end
 *   "vms=N alive=K frames=F records=R pings=P grants=G closed=C"
 * and exits 0 only if every connection stayed up (K == N).
 */
#define _GNU_SOURCE /* close_range */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>
#include <gio/gio.h>
#include <glib/gstdio.h>

#include <linux/virtio_freqhint.h>

#include "fh-testclient-lib.h"

typedef struct {
  FhTestClient *c;
  guint index;
  gint64 next_send_us;
  uint32_t seq;
  gboolean dead;
} Vm;

static guint64 frames, records, pings, grants, closed;

static gboolean
write_fixture (const char *dir, guint tid, guint cpu, pid_t tgid)
{
  g_autofree char *d = g_strdup_printf ("%s/%u", dir, tid);
  g_autofree char *status =
      g_strdup_printf ("Name:\tCPU %u/KVM\nTgid:\t%d\nPid:\t%u\nCpus_allowed_list:\t%u\n", tid,
                       (int) tgid, tid, cpu);
  g_autoptr (GString) stat = g_string_new (NULL);
  g_autofree char *sp = g_build_filename (d, "status", NULL);
  g_autofree char *tp = g_build_filename (d, "stat", NULL);
  g_autofree char *cp = g_build_filename (d, "cgroup", NULL);

  g_string_printf (stat, "%u (CPU %u/KVM) S", tid, tid);
  for (int i = 4; i < 39; i++)
    g_string_append (stat, " 0");
  g_string_append_printf (stat, " %u 0 0\n", cpu);
  return g_mkdir_with_parents (d, 0755) == 0 && g_file_set_contents (sp, status, -1, NULL) &&
         g_file_set_contents (tp, stat->str, -1, NULL) &&
         g_file_set_contents (cp, "0::/machine.slice\n", -1, NULL);
}

static FhRecord
random_record (GRand *r, guint vcpu, uint32_t seq)
{
  FhRecord rec = { (uint16_t) vcpu, 0, 0, 0, 0, seq };
  guint lo = g_rand_int_range (r, 0, 1025), hi = g_rand_int_range (r, lo, 1025);

  switch (g_rand_int_range (r, 0, 8)) {
    case 0:
      break; /* no hint */
    case 1:
      rec.flags = VIRTIO_FREQHINT_R_IDLE;
      break;
    case 2:
      rec.flags = VIRTIO_FREQHINT_R_PERF_VALID;
      rec.perf = (uint16_t) lo;
      break;
    case 3:
      rec.flags =
          VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID | VIRTIO_FREQHINT_R_PERF_VALID;
      rec.clamp_min = (uint16_t) lo;
      rec.clamp_max = (uint16_t) hi;
      rec.perf = (uint16_t) g_rand_int_range (r, 0, 1025);
      break;
    default:
      rec.flags = VIRTIO_FREQHINT_R_MIN_VALID | VIRTIO_FREQHINT_R_MAX_VALID;
      rec.clamp_min = (uint16_t) lo;
      rec.clamp_max = (uint16_t) hi;
      break;
  }
  return rec;
}

static gboolean
send_random (Vm *vm, GRand *r, guint vcpus, gboolean full, GError **error)
{
  static FhHints h;

  memset (&h, 0, sizeof h);
  h.flags = full ? FH_HINTS_F_FULL : 0;
  h.num_records = full ? vcpus : (uint16_t) g_rand_int_range (r, 1, MIN (vcpus, 4) + 1);
  for (guint i = 0; i < h.num_records; i++)
    h.records[i] = random_record (r, full ? i : (guint) g_rand_int_range (r, 0, vcpus), ++vm->seq);
  frames++;
  records += h.num_records;
  return fhtc_send_hints (vm->c, &h, error);
}

/* Everything the agent sent so far; FALSE when the connection ended. */
static gboolean
drain (Vm *vm)
{
  g_autoptr (GError) error = NULL;

  do {
    FhFrame f;

    if (!fhtc_next_frame (vm->c, 0, &f, &error)) {
      if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT))
        return TRUE;
      g_printerr ("fh-loadclient: VM %u: %s\n", vm->index, error->message);
      return FALSE;
    }
    if (f.msg_type == FH_MSG_PING) {
      FhError err;
      uint64_t cookie;
      uint8_t buf[32];

      pings++;
      if (!fh_decode_ping (&f, &cookie, &err) ||
          !fhtc_send (vm->c, buf, fh_encode_ping (buf, sizeof buf, FH_MSG_PONG, cookie), &error))
        return FALSE;
    } else if (f.msg_type == FH_MSG_GRANTS) {
      grants++;
    } else if (f.msg_type == FH_MSG_CLOSE) {
      FhClose cl;
      FhError err;

      if (fh_decode_close (&f, &cl, &err))
        g_printerr ("fh-loadclient: VM %u closed: %s %s\n", vm->index,
                    fh_close_reason_name (cl.reason), cl.text);
      return FALSE;
    }
  } while (fhtc_has_frame (vm->c));
  return TRUE;
}

int
main (int argc, char **argv)
{
  g_autofree char *socket_path = NULL, *fixture = NULL;
  int n_vms = 100, vcpus = 16, seconds = 10, tid_base = 100000, seed = 1, handshake_ms = 10000;
  double rate = 1.0;
  g_autoptr (GOptionContext) ctx = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GRand) r = NULL;
  g_autofree Vm *vms = NULL;
  g_autofree struct pollfd *pfd = NULL;
  g_autofree pid_t *peers = NULL;
  struct rlimit rl;
  guint alive;
  gint64 end, period_us;
  const GOptionEntry entries[] = {
    { "socket", 's', 0, G_OPTION_ARG_FILENAME, &socket_path, "freqhintd's device socket", "PATH" },
    { "vms", 0, 0, G_OPTION_ARG_INT, &n_vms, "Connections (default 100)", "N" },
    { "vcpus", 0, 0, G_OPTION_ARG_INT, &vcpus, "vCPUs per VM (default 16)", "M" },
    { "seconds", 0, 0, G_OPTION_ARG_INT, &seconds, "Duration of the load (default 10)", "S" },
    { "rate", 0, 0, G_OPTION_ARG_DOUBLE, &rate, "HINTS frames per second per VM (default 1)",
      "HZ" },
    { "proc-fixture", 0, 0, G_OPTION_ARG_FILENAME, &fixture, "Write /proc fixtures here", "DIR" },
    { "tid-base", 0, 0, G_OPTION_ARG_INT, &tid_base, "First tid (default 100000)", "B" },
    { "seed", 0, 0, G_OPTION_ARG_INT, &seed, "Random seed (default 1)", "X" },
    { "handshake-ms", 0, 0, G_OPTION_ARG_INT, &handshake_ms,
      "How long a VM waits for WELCOME (default 10000; a loaded host forking 1000 peers needs more)",
      "MS" },
    { NULL }
  };

  fhtc_peer_init (argc, argv);
  ctx = g_option_context_new ("- many virtio-freqhint devices towards freqhintd");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    g_printerr ("fh-loadclient: %s\n", error->message);
    return 2;
  }
  if (!socket_path || n_vms < 1 || vcpus < 1 || vcpus > FH_MAX_VCPUS || seconds < 1 ||
      !(rate > 0) || tid_base < 1 || handshake_ms < 1) {
    g_printerr ("fh-loadclient: need --socket, --vms >= 1, 1 <= --vcpus <= %d, --seconds >= 1, "
                "--rate > 0\n",
                FH_MAX_VCPUS);
    return 2;
  }
  signal (SIGPIPE, SIG_IGN);
  /* One descriptor per VM, like one QEMU per VM would have. */
  if (getrlimit (RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t) n_vms + 64) {
    rl.rlim_cur = MIN (rl.rlim_max, (rlim_t) n_vms + 64);
    if (setrlimit (RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < (rlim_t) n_vms + 64) {
      g_printerr ("fh-loadclient: cannot raise RLIMIT_NOFILE to %d\n", n_vms + 64);
      return 1;
    }
  }
  r = g_rand_new_with_seed ((guint32) seed);
  peers = g_new0 (pid_t, n_vms);

  vms = g_new0 (Vm, n_vms);
  pfd = g_new0 (struct pollfd, n_vms);
  period_us = (gint64) (G_USEC_PER_SEC / rate);
  for (int v = 0; v < n_vms; v++) {
    static FhHello hello;
    FhWelcome welcome;

    memset (&hello, 0, sizeof hello);
    hello.version = FH_PROTO_VERSION;
    hello.num_vcpus = (uint16_t) vcpus;
    hello.features = FH_F_ALL;
    hello.qemu_pid = (uint32_t) getpid ();
    g_snprintf (hello.name, sizeof hello.name, "load-%04d", v);
    /* A distinct non-nil UUID per VM: 4c4f4144 ("LOAD") + the index. */
    hello.uuid[0] = 0x4c, hello.uuid[1] = 0x4f, hello.uuid[2] = 0x41, hello.uuid[3] = 0x44;
    hello.uuid[12] = (uint8_t) (v >> 24), hello.uuid[13] = (uint8_t) (v >> 16);
    hello.uuid[14] = (uint8_t) (v >> 8), hello.uuid[15] = (uint8_t) v;
    for (int i = 0; i < vcpus; i++)
      hello.tids[i] = fixture ? (uint32_t) (tid_base + v * vcpus + i) : 0;
    vms[v].index = (guint) v;
    {
      int fd;

      fd = fhtc_spawn_peer (socket_path, hello.name, hello.uuid, &peers[v]);
      if (fd < 0) {
        g_printerr ("fh-loadclient: VM %d: no peer process\n", v);
        return 1;
      }
      hello.qemu_pid = (uint32_t) peers[v];
      if (fixture) {
        if (!fhtc_link_cmdline (fixture, peers[v])) {
          g_printerr ("fh-loadclient: cannot link the cmdline of %d\n", (int) peers[v]);
          return 1;
        }
        for (int i = 0; i < vcpus; i++) {
          guint tid = (guint) (tid_base + v * vcpus + i);

          if (!write_fixture (fixture, tid, tid % 8, peers[v])) {
            g_printerr ("fh-loadclient: cannot write the fixture for tid %u\n", tid);
            return 1;
          }
        }
      }
      vms[v].c = fhtc_adopt_fd (fd);
    }
    if (!fhtc_handshake_within (vms[v].c, &hello, &welcome, handshake_ms, &error) ||
        !send_random (&vms[v], r, (guint) vcpus, TRUE, &error)) {
      g_printerr ("fh-loadclient: VM %d: %s\n", v, error->message);
      return 1;
    }
    vms[v].next_send_us = g_get_monotonic_time () + g_rand_int_range (r, 0, (gint32) period_us);
  }
  printf ("connected %d\n", n_vms);
  fflush (stdout);

  end = g_get_monotonic_time () + (gint64) seconds * G_USEC_PER_SEC;
  for (;;) {
    gint64 now = g_get_monotonic_time (), next = end;

    if (now >= end)
      break;
    for (int v = 0; v < n_vms; v++) {
      Vm *vm = &vms[v];

      pfd[v] = (struct pollfd){ vm->dead ? -1 : fhtc_fd (vm->c), POLLIN, 0 };
      if (vm->dead)
        continue;
      if (now >= vm->next_send_us) {
        if (!send_random (vm, r, (guint) vcpus, FALSE, &error)) {
          g_printerr ("fh-loadclient: VM %d: %s\n", v, error->message);
          g_clear_error (&error);
          vm->dead = TRUE;
          closed++;
          continue;
        }
        vm->next_send_us += period_us;
      }
      next = MIN (next, vm->next_send_us);
    }
    if (poll (pfd, (nfds_t) n_vms, (int) MAX (0, (next - now) / 1000)) < 0 && errno != EINTR) {
      perror ("poll");
      return 1;
    }
    for (int v = 0; v < n_vms; v++)
      if (!vms[v].dead && (pfd[v].revents || fhtc_has_frame (vms[v].c)) && !drain (&vms[v])) {
        vms[v].dead = TRUE;
        closed++;
      }
  }

  printf ("stopping\n");
  fflush (stdout);
  alive = 0;
  for (int v = 0; v < n_vms; v++) {
    alive += !vms[v].dead;
    fhtc_free (vms[v].c);
    kill (peers[v], SIGKILL);
    waitpid (peers[v], NULL, 0);
  }
  printf ("vms=%d alive=%u frames=%" G_GUINT64_FORMAT " records=%" G_GUINT64_FORMAT
          " pings=%" G_GUINT64_FORMAT " grants=%" G_GUINT64_FORMAT " closed=%" G_GUINT64_FORMAT
          "\n",
          n_vms, alive, frames, records, pings, grants, closed);
  return alive == (guint) n_vms ? 0 : 1;
}
