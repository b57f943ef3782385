/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * freqhintd: merges guest frequency hints from virtio-freqhint devices
 * with the host's cgroup clamps and operator limits, and sets CPU
 * frequency limits (or vCPU thread clamps) accordingly.
 */
#define G_LOG_DOMAIN "freqhintd"

#include <locale.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <glib-unix.h>
#include <glib.h>

#include "fh-control.h"
#include "fh-daemon.h"
#include "fh-listen.h"
#include "fh-log.h"
#include "fh-metrics.h"
#include "fh-telemetry.h"
#ifdef HAVE_LIBVIRT
#include "fh-cgroup-mirror.h"
#include "fh-libvirt-source.h"
#include "fh-nova.h"
#endif

typedef struct {
  GMainLoop *loop;
  const char *config_path;
  FhDaemon *daemon;
  FhMetrics *metrics;
  int signal;
  /* LM-12: settings or the set of VMs changed since the last mirroring */
  gboolean mirror_dirty;
  guint64 mirrored_connections;
} App;

#ifdef HAVE_LIBVIRT
/* A domain's freqhint metadata or pinning changed, or it stopped. */
static void
libvirt_settings_changed (gpointer data)
{
  App *app = data;

  app->mirror_dirty = TRUE;
  fh_daemon_vm_source_changed (app->daemon);
}

/*
 * LM-12: each vCPU's operator ceiling into cpu.uclamp.max of its own
 * libvirt vcpuN group, so the kernel holds it even without us.  Runs when
 * settings change or a VM arrives (a connection, or one the host view found,
 * MR-28), not per decision: it reads /proc.
 */
static void
mirror_ceilings (App *app)
{
  FhDaemon *d = app->daemon;
  GHashTableIter it;
  gpointer value;

  g_hash_table_iter_init (&it, d->vms);
  while (g_hash_table_iter_next (&it, NULL, &value)) {
    FhVm *vm = value;

    for (guint i = 0; i < vm->num_vcpus; i++) {
      const FhVcpu *v = &vm->vcpus[i];
      FhClamp op = vm->settings.op;
      g_autoptr (GError) error = NULL;
      gboolean written;
      guint pct;

      if (!v->tid || !v->tid_ok)
        continue;
      if (vm->settings.vcpu_op && i < vm->settings.vcpu_op->len)
        op = g_array_index (vm->settings.vcpu_op, FhClamp, i);
      /* capacity -> hundredths of a percent; fh_percent_to_capacity() gives op.max back */
      pct = (MIN (op.max, FH_SCALE) * 10000 + FH_SCALE / 2) / FH_SCALE;
      if (!fh_cgroup_mirror_vcpu_ceiling (&d->paths, v->tid, i, pct, &written, &error)) {
        g_autofree char *name = fh_text_sanitize (vm->name, -1);

        /* On by default: a host or a VM without libvirt's vcpuN groups
         * with cpu.uclamp.* is normal, not worth a message per connection. */
        if (g_error_matches (error, FH_MIRROR_ERROR, FH_MIRROR_ERROR_FAILED))
          g_message ("VM \"%s\": ceiling not mirrored: %s", name, error->message);
        else
          g_debug ("VM \"%s\": ceiling not mirrored: %s", name, error->message);
      } else if (written) {
        g_autofree char *name = fh_text_sanitize (vm->name, -1);

        g_message ("VM \"%s\" vCPU %u: ceiling %u mirrored into its cgroup", name, i, op.max);
      }
    }
  }
}
#endif

static gboolean
on_signal (gpointer data)
{
  App *app = data;

  g_message ("signal received, shutting down");
  g_main_loop_quit (app->loop);
  return G_SOURCE_CONTINUE;
}

static gboolean
on_sighup (gpointer data)
{
  App *app = data;
  g_autoptr (GError) error = NULL;

  if (!fh_daemon_reload_vm_config (app->daemon, app->config_path, &error))
    g_warning ("reload: %s; keeping the previous VM settings", error->message);
  app->mirror_dirty = TRUE;
  return G_SOURCE_CONTINUE;
}

/* After each decision pass.  (The metrics page is rendered when scraped.) */
static void
after_pass (FhDaemon *daemon, gpointer data)
{
#ifdef HAVE_LIBVIRT
  App *app = data;

  /* a VM found by the host view (MR-28) is new threads to mirror, as a connection is */
  guint64 arrivals = daemon->vm_connections_total + daemon->host_vms_found_total;

  if (daemon->config->mirror_ceiling &&
      (app->mirror_dirty || app->mirrored_connections != arrivals)) {
    app->mirror_dirty = FALSE;
    app->mirrored_connections = arrivals;
    mirror_ceilings (app);
  }
#else
  (void) daemon;
  (void) data;
#endif
}

static gpointer
metrics_open (gpointer daemon)
{
  return fh_telemetry_metrics_page (daemon);
}

static gboolean
metrics_next (gpointer page, GString *out, gsize want)
{
  return fh_telemetry_metrics_next (page, out, want);
}

static void
metrics_free (gpointer page)
{
  fh_telemetry_metrics_page_free (page);
}

static const FhMetricsRenderer metrics_renderer = { metrics_open, metrics_next, metrics_free };

/*
 * Descriptors besides the connections the limits allow: listening sockets,
 * the log, pidfds' neighbours, /proc and sysfs files being read, libvirt,
 * the metrics thread's own.
 */
#define FH_FD_RESERVE 64

/*
 * Every connection limit is a descriptor count (G-13): raise the soft
 * RLIMIT_NOFILE to the hard one and refuse a configuration it cannot hold,
 * naming the key, rather than run out of descriptors under load.  A device
 * connection holds two (its socket and the pidfd of its peer).
 */
static gboolean
fit_descriptor_limit (const FhConfig *c, GError **error)
{
  struct rlimit rl;
  guint64 need =
      ((guint64) c->max_connections + c->max_prehello) * 2 + c->control_max_clients + FH_FD_RESERVE;

  if (c->metrics_port >= 0)
    need += c->metrics_max_connections + FH_METRICS_SPARE;
  if (getrlimit (RLIMIT_NOFILE, &rl) < 0)
    return TRUE;
  if (rl.rlim_cur < need && rl.rlim_cur < rl.rlim_max) {
    struct rlimit want = { MIN (rl.rlim_max, MAX (need, rl.rlim_cur)), rl.rlim_max };

    if (setrlimit (RLIMIT_NOFILE, &want) == 0)
      rl = want;
  }
  if (rl.rlim_cur < need) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                 "[daemon] max_connections=%u needs %" G_GUINT64_FORMAT
                 " descriptors (2 per device connection, max_prehello=%u more of them, plus "
                 "control_max_clients=%u, [metrics] max_connections=%u + %u and %u in reserve) "
                 "but RLIMIT_NOFILE is %llu: lower max_connections or raise the limit "
                 "(LimitNOFILE=)",
                 c->max_connections, need, c->max_prehello, c->control_max_clients,
                 c->metrics_port >= 0 ? c->metrics_max_connections : 0,
                 c->metrics_port >= 0 ? FH_METRICS_SPARE : 0, FH_FD_RESERVE,
                 (unsigned long long) rl.rlim_cur);
    return FALSE;
  }
  g_debug ("descriptor limit %llu, limits need %" G_GUINT64_FORMAT, (unsigned long long) rl.rlim_cur,
           need);
  return TRUE;
}

static gboolean verbose;

int
main (int argc, char **argv)
{
  g_autofree char *config_path = NULL, *sysfs = NULL, *proc = NULL, *cgroup = NULL;
  g_autofree char *backend = NULL, *socket_path = NULL, *control_path = NULL;
  g_autofree char *state_dir = NULL, *metrics_address = NULL;
#ifdef HAVE_LIBVIRT
  g_autofree char *libvirt_uri = NULL;
#endif
  int metrics_port = -2;
  gboolean no_metrics = FALSE, foreground = FALSE, version = FALSE, check_config = FALSE;
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = NULL;
  g_autoptr (FhConfig) config = NULL;
  FhControl *control = NULL;
  App app = { 0 };
  int ret = EXIT_FAILURE;
  const GOptionEntry entries[] = {
    { "config", 'c', 0, G_OPTION_ARG_FILENAME, &config_path,
      "Configuration file (default " FH_DEFAULT_CONFIG ")", "FILE" },
    { "backend", 'b', 0, G_OPTION_ARG_STRING, &backend,
      "Actuation: auto (default: what the host offers), none (report only), cpufreq "
      "(scaling_min/max_freq), uclamp (sched_setattr)",
      "NAME" },
    { "socket", 's', 0, G_OPTION_ARG_FILENAME, &socket_path,
      "Device socket QEMU connects to (default " FH_DEFAULT_SOCKET ")", "PATH" },
    { "control-socket", 0, 0, G_OPTION_ARG_FILENAME, &control_path,
      "Control socket for freqhintctl (default " FH_DEFAULT_CONTROL_SOCKET ")", "PATH" },
    { "state-dir", 0, 0, G_OPTION_ARG_FILENAME, &state_dir,
      "Where original cpufreq limits are saved (default " FH_DEFAULT_STATE_DIR ")", "DIR" },
    { "sysfs-root", 0, 0, G_OPTION_ARG_FILENAME, &sysfs, "Root of sysfs (default /sys)", "DIR" },
    { "proc-root", 0, 0, G_OPTION_ARG_FILENAME, &proc, "Root of procfs (default /proc)", "DIR" },
    { "cgroup-root", 0, 0, G_OPTION_ARG_FILENAME, &cgroup,
      "Root of the cgroup hierarchy (default /sys/fs/cgroup)", "DIR" },
    { "metrics-address", 0, 0, G_OPTION_ARG_STRING, &metrics_address,
      "IPv4 or IPv6 address of the Prometheus endpoint (default 127.0.0.1; \"::\" for all)", "ADDR" },
    { "metrics-port", 0, 0, G_OPTION_ARG_INT, &metrics_port,
      "TCP port of the Prometheus endpoint, 0 for any free port (default 9484)", "PORT" },
    { "no-metrics", 0, 0, G_OPTION_ARG_NONE, &no_metrics, "Do not serve metrics", NULL },
#ifdef HAVE_LIBVIRT
    { "libvirt-uri", 0, 0, G_OPTION_ARG_STRING, &libvirt_uri,
      "Follow domains' freqhint metadata on this libvirt connection (default qemu:///system; "
      "\"none\": do not)", "URI" },
#endif
    { "foreground", 'f', 0, G_OPTION_ARG_NONE, &foreground,
      "Stay in the foreground (freqhintd never forks; accepted for compatibility)", NULL },
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "Log debug messages", NULL },
    { "version", 0, 0, G_OPTION_ARG_NONE, &version, "Print the version and exit", NULL },
    { "check-config", 0, 0, G_OPTION_ARG_NONE, &check_config,
      "Check the configuration (and which backend it selects) and exit: 0 valid, 2 not", NULL },
    { NULL }
  };

  setlocale (LC_ALL, "");
  /* Big buffers (the metrics page, a VM's vCPU table) get their own
   * mappings, given back as soon as they are freed; glibc would otherwise
   * raise this threshold after the first such free and put them on the heap,
   * where what other allocations pin around them stays held (G-13). */
  mallopt (M_MMAP_THRESHOLD, 256 * 1024);
  ctx = g_option_context_new ("- guest CPU frequency hints agent");
  g_option_context_set_summary (
      ctx,
      "Receives per-vCPU utilization clamp hints from virtio-freqhint devices, restricts them\n"
      "by the vCPU threads' host cgroup clamps, the VM's operator floor/ceiling and the system\n"
      "defaults, aggregates them per physical CPU and cpufreq policy, and applies the result.");
  g_option_context_set_description (
      ctx, "Command-line options override the configuration file.  See freqhintd(8) and\n"
           "freqhintd.conf(5).  Exit status: 0 after a clean shutdown (SIGTERM/SIGINT), 1 on\n"
           "errors, 2 on bad usage.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    g_printerr ("freqhintd: %s\n", error->message);
    return 2;
  }
  if (version) {
    g_print ("freqhintd %s\n", PACKAGE_VERSION);
    return EXIT_SUCCESS;
  }
  if (argc > 1) {
    g_printerr ("freqhintd: unexpected argument \"%s\"\n", argv[1]);
    return 2;
  }
  fh_log_init (verbose);
  /* Socket activation: LISTEN_* read and unset before any thread exists. */
  fh_listen_init ();

  config = fh_config_new ();
  if (!fh_config_load (config, config_path ? config_path : FH_DEFAULT_CONFIG, config_path != NULL,
                       &error)) {
    g_printerr ("freqhintd: %s\n", error->message);
    return 2;
  }
#define OVERRIDE(field, value)                                                                     \
  if (value) {                                                                                     \
    g_free (config->field);                                                                        \
    config->field = g_strdup (value);                                                              \
  }
  OVERRIDE (sysfs_root, sysfs);
  OVERRIDE (proc_root, proc);
  OVERRIDE (cgroup_root, cgroup);
  OVERRIDE (backend, backend);
  OVERRIDE (socket_path, socket_path);
  OVERRIDE (control_socket_path, control_path);
  OVERRIDE (state_dir, state_dir);
  OVERRIDE (metrics_address, metrics_address);
#undef OVERRIDE
  if (metrics_port != -2) {
    if (metrics_port < 0 || metrics_port > 65535) {
      g_printerr ("freqhintd: --metrics-port must be 0..65535\n");
      return 2;
    }
    config->metrics_port = metrics_port;
  }
  if (no_metrics)
    config->metrics_port = -1;
  if (!fh_config_backend_valid (config->backend)) {
    g_printerr ("freqhintd: --backend: \"%s\" is not a backend (%s)\n", config->backend,
                FH_BACKEND_NAMES);
    return 2;
  }
  if (check_config)
    return fh_config_check (config, config_path ? config_path : FH_DEFAULT_CONFIG);
  if (!fit_descriptor_limit (config, &error)) {
    g_printerr ("freqhintd: %s\n", error->message);
    return 2;
  }

  app.daemon = fh_daemon_new (g_steal_pointer (&config), &error);
  if (!app.daemon) {
    g_printerr ("freqhintd: %s\n", error->message);
    return EXIT_FAILURE;
  }
#ifdef HAVE_LIBVIRT
  /* Before the config file: a domain's metadata wins over its [vm] section (LM-11). */
  if (g_strcmp0 (libvirt_uri, "none") != 0) {
    /* OpenStack: [nova-flavor NAME] sections, for domains without a freqhint element. */
    g_autoptr (GHashTable) flavors =
        fh_nova_flavors_load (config_path ? config_path : FH_DEFAULT_CONFIG, &error);
    FhVmSource *lv;

    if (!flavors) {
      g_printerr ("freqhintd: %s\n", error->message);
      fh_daemon_free (app.daemon);
      return 2;
    }
    lv = fh_libvirt_source_new (libvirt_uri, libvirt_settings_changed, &app);
    fh_libvirt_source_set_nova_flavors (lv, flavors);
    fh_daemon_add_vm_source (app.daemon, lv, TRUE);
  }
#else
  if (app.daemon->config->mirror_ceiling)
    g_warning ("[libvirt] mirror_ceiling: built without libvirt support; not mirroring");
#endif
  app.loop = g_main_loop_new (NULL, FALSE);
  g_unix_signal_add (SIGTERM, on_signal, &app);
  g_unix_signal_add (SIGINT, on_signal, &app);
  app.config_path = config_path ? config_path : FH_DEFAULT_CONFIG;
  g_unix_signal_add (SIGHUP, on_sighup, &app);
  /* A control client that goes away mid-reply must not kill us. */
  signal (SIGPIPE, SIG_IGN);

  app.daemon->metrics_port = -1;
  if (app.daemon->config->metrics_port >= 0) {
    app.metrics = fh_metrics_new (app.daemon->config->metrics_address,
                                  (guint) app.daemon->config->metrics_port,
                                  app.daemon->config->metrics_max_connections,
                                  app.daemon->config->metrics_timeout_ms, &metrics_renderer,
                                  app.daemon, &error);
    if (!app.metrics)
      goto out;
    app.daemon->metrics_port = (int) fh_metrics_port (app.metrics);
    g_message ("metrics on http://%s:%u/metrics", app.daemon->config->metrics_address,
               fh_metrics_port (app.metrics));
  }
  app.daemon->notify = after_pass;
  app.daemon->notify_data = &app;

  if (!fh_daemon_start (app.daemon, &error))
    goto out;
  control = fh_control_new (app.daemon, app.daemon->config->control_socket_path, &error);
  if (!control) {
    fh_daemon_stop (app.daemon);
    goto out;
  }
  fh_listen_close_unused ();
  g_main_loop_run (app.loop);
  fh_control_free (control);
  fh_daemon_stop (app.daemon);
  ret = EXIT_SUCCESS;
out:
  if (error)
    g_printerr ("freqhintd: %s\n", error->message);
  app.daemon->notify = NULL;
  fh_metrics_free (app.metrics);
  fh_daemon_free (app.daemon);
  if (app.loop)
    g_main_loop_unref (app.loop);
  return ret;
}
