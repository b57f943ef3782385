/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Inputs -> state -> merge -> actuation.
 *
 * Device frames and host polls only change state and queue an update; the
 * update (an idle callback, so a burst of frames costs one decision) runs
 * the pure merge engine, hands the result to the backend, and tells each VM
 * what it was granted.  A frame marks its VM dirty and the pass decides only
 * that VM's vCPUs again, re-aggregates only the CPUs and policies they sit
 * on and talks only to that VM; a host-wide change (system defaults,
 * operator settings, a VM joining or leaving, thread ids) decides everything
 * again.  fh_daemon_test_verify() checks the two agree.
 */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-daemon.h"
#include "fh-log.h"

#include <malloc.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fh-host-vms.h"
#include "fh-listen.h"
#include "fh-parse.h"
#include "fh-peer.h"
#include "fh-watch.h"

#include <glib-unix.h>

#include <linux/virtio_freqhint.h>

static void queue_update (FhDaemon *d);
static void queue_full (FhDaemon *d);
static void queue_vm (FhDaemon *d, FhVm *vm);
static void vcpu_unplace (FhDaemon *d, FhVcpu *v);
static void vm_watch_exit (FhDaemon *d, FhVm *vm);
static void on_cgroup_event (const char *rel, gpointer data);
static void host_vms_sync (FhDaemon *d);

/* The safety net's period: rescan_interval_ms, or 60 poll intervals. */
static gint64
fh_daemon_rescan_us (FhDaemon *d)
{
  guint ms = d->config->rescan_interval_ms ? d->config->rescan_interval_ms
                                           : 60 * d->config->poll_interval_ms;

  return (gint64) ms * G_TIME_SPAN_MILLISECOND;
}

static void
vm_free (FhVm *vm)
{
  FhDaemon *d = vm->daemon;

  if (vm->conn)
    d->n_vcpus -= vm->num_vcpus;
  else
    d->n_host_vms--;
  g_clear_pointer (&vm->exit_watch, fh_poller_watch_remove);
  g_clear_handle_id (&vm->hold_timer, g_source_remove);
  g_free (vm->holds);
  if (vm->dirty)
    g_ptr_array_remove_fast (d->dirty_vms, vm);
  /* Its vCPUs leave their CPUs now: the member lists never hold freed vCPUs. */
  d->need_full = TRUE;
  for (guint i = 0; i < vm->num_vcpus; i++) {
    vcpu_unplace (d, &vm->vcpus[i]);
    fh_thread_info_clear (&vm->vcpus[i].info);
  }
  fh_vm_settings_clear (&vm->settings);
  g_free (vm->relay_path);
  g_free (vm); /* its vCPUs and key with it (vm_alloc()) */
}

/*
 * The VM, its vCPUs and its key in one allocation sized at HELLO: at 1000
 * VMs, three blocks per VM with their headers and the holes between them
 * were a good part of the memory per VM (issue 29, item 7).
 */
G_STATIC_ASSERT (sizeof (FhVm) % G_ALIGNOF (FhVcpu) == 0);

static FhVm *
vm_alloc (FhDaemon *d, const char *key, guint n_vcpus)
{
  gsize key_off = sizeof (FhVm) + (gsize) n_vcpus * sizeof (FhVcpu);
  FhVm *vm = g_malloc0 (key_off + strlen (key) + 1);

  vm->daemon = d;
  vm->num_vcpus = n_vcpus;
  vm->vcpus = (FhVcpu *) (vm + 1);
  vm->key = strcpy ((char *) vm + key_off, key);
  return vm;
}

const char *
fh_vcpu_state (const FhVcpu *v)
{
  if (!v->tid_ok)
    return v->tid == 0 ? "no-thread" : v->info.exists ? "foreign-thread" : "thread-gone";
  if (v->hint.flags == 0)
    return v->busy ? "host-busy" : "no-hint";
  if (v->hint.flags & VIRTIO_FREQHINT_R_IDLE)
    return "idle";
  return "active";
}

gboolean
fh_vcpu_held (const FhVm *vm, const FhVcpu *v)
{
  return vm->holds && fh_merge_hold_next (&vm->holds[v - vm->vcpus], vm->decided_us) != 0;
}

const char *
fh_vm_state_source (const FhVm *vm)
{
  return !vm->conn ? "host" : vm->host_source ? "both" : "guest";
}

const char *
fh_vm_transport (const FhVm *vm)
{
  if (!vm->conn)
    return "none";
  return vm->relay_transport == FH_RELAY_VSOCK    ? "vsock"
         : vm->relay_transport == FH_RELAY_HYBRID ? "hybrid"
                                                  : "device";
}

const char *
fh_vcpu_activity_source (const FhVm *vm, const FhVcpu *v)
{
  if (!v->d.active || !v->tid_ok)
    return NULL;
  return (vm->settings.ignore_hints || v->hint.flags == 0) ? "host" : "guest";
}

static void
vm_load_settings (FhDaemon *d, FhVm *vm)
{
  fh_vm_settings_clear (&vm->settings);
  vm->settings.op = FH_CLAMP_NONE;
  vm->settings_source = NULL;
  for (guint i = 0; i < d->vm_sources->len; i++) {
    FhVmSource *s = g_ptr_array_index (d->vm_sources, i);
    FhVmSettings out = { FH_CLAMP_NONE, NULL, NULL, FALSE };

    if (s->lookup (s, vm->name, vm->uuid, &out)) {
      vm->settings = out;
      vm->settings_source = s->name;
      break;
    }
  }
}

/* Re-read where each vCPU thread sits; log what changed. */
static void
vm_probe (FhDaemon *d, FhVm *vm)
{
  for (guint i = 0; i < vm->num_vcpus; i++) {
    FhVcpu *v = &vm->vcpus[i];
    gboolean was_ok = v->tid_ok;
    const GArray *override = vm->settings.cpus;

    fh_host_probe_thread_cached (&d->paths, d->cg_cache, v->tid, d->host->n_cpus, &v->info);
    if (d->watch && fh_thread_info_cgroup_dir (&v->info))
      fh_watch_cgroup (d->watch, fh_thread_info_cgroup_dir (&v->info));
    v->tid_ok = v->info.exists && (!d->config->check_thread_owner || v->info.tgid == vm->pid);
    if (was_ok && !v->tid_ok) {
      g_autofree char *name = fh_text_sanitize (vm->name, -1);

      fh_log_vm (G_LOG_LEVEL_MESSAGE, name, vm->uuid, "VM \"%s\" vCPU %u: thread %u %s", name, i,
                 v->tid, v->info.exists ? "no longer belongs to the VM" : "exited");
    } else if (!was_ok && v->tid_ok) {
      g_autofree char *name = fh_text_sanitize (vm->name, -1);

      fh_log_vm (G_LOG_LEVEL_DEBUG, name, vm->uuid, "VM \"%s\" vCPU %u: thread %u found", name, i,
                 v->tid);
    }
    if (override && i < override->len && g_array_index (override, guint, i) < d->host->n_cpus) {
      v->cpu = (gint) g_array_index (override, guint, i);
      v->placed_by_config = TRUE;
    } else {
      v->cpu = v->info.cpu;
      v->placed_by_config = FALSE;
    }
    /* PA-18: the class of the CPUs the thread may run on (the widest of several). */
    if (v->placed_by_config)
      v->freq_class = fh_host_freq_class_of (d->host, NULL, v->cpu);
    else if (v->tid_ok)
      v->freq_class = fh_host_freq_class_of (d->host, v->info.allowed, v->cpu);
    else
      v->freq_class = VIRTIO_FREQHINT_NO_FREQ_CLASS;
  }
}

static void
format_uuid (const uint8_t *u, char out[37])
{
  g_snprintf (out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
              u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
              u[14], u[15]);
}

/*
 * PA-21: every thread id the peer announces is one of its own threads (or 0,
 * "no thread yet").  The pidfd says the process still lives, so its pid is
 * not reused and a Tgid equal to it means this process.  Used for HELLO and
 * for every later table of thread ids.
 */
gboolean
fh_daemon_check_peer_tids (FhDaemon *d, FhConn *conn, const uint32_t *tids, guint n, FhError *err)
{
  pid_t pid = fh_conn_peer_pid (conn);

  if (!fh_peer_alive (fh_conn_peer_pidfd (conn))) {
    fh_error_set (err, FH_CLOSE_PERMISSION, "peer process %d has exited", (int) pid);
    return FALSE;
  }
  if (!d->config->check_thread_owner)
    return TRUE;
  for (guint i = 0; i < n; i++) {
    FhThreadInfo info = { 0 };
    gboolean ours;

    if (tids[i] == 0)
      continue;
    fh_host_probe_thread (&d->paths, tids[i], d->host->n_cpus, &info);
    ours = info.exists && info.tgid == pid;
    fh_thread_info_clear (&info);
    if (!ours) {
      fh_error_set (err, FH_CLOSE_PERMISSION, "vCPU %u: thread %u is not a thread of process %d", i,
                    tids[i], (int) pid);
      d->identity_rejected++;
      return FALSE;
    }
  }
  return TRUE;
}

/*
 * The VM names the host knows of besides a peer's (borrowed, NULL-ended):
 * libvirt's running domains, the configured [vm NAME] sections and the
 * connected VMs.  A machine scope that one of them could have made too
 * does not say which VM a process is (PA-22, fh_peer_scope_match()).
 */
static GPtrArray *
known_names (FhDaemon *d)
{
  GPtrArray *names = g_ptr_array_new ();
  const GPtrArray *doms = fh_libvirt_view_domains (d->libvirt);
  GHashTableIter it;
  gpointer key, value;

  for (guint i = 0; doms && i < doms->len; i++)
    g_ptr_array_add (names, ((FhLibvirtDomain *) g_ptr_array_index (doms, i))->name);
  if (d->config->vms) {
    g_hash_table_iter_init (&it, d->config->vms);
    while (g_hash_table_iter_next (&it, &key, NULL))
      g_ptr_array_add (names, key);
  }
  g_hash_table_iter_init (&it, d->vms);
  while (g_hash_table_iter_next (&it, NULL, &value))
    g_ptr_array_add (names, ((FhVm *) value)->name);
  g_ptr_array_add (names, NULL);
  return names;
}

/* PA-20: the HELLO's name and UUID are what the host says the peer is. */
static gboolean
check_identity (FhDaemon *d, FhConn *conn, const FhHello *hello, const char *uuid, FhError *err)
{
  g_auto (FhPeerIdentity) id = { 0 };
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) others = NULL;
  char why[160];
  pid_t pid = fh_conn_peer_pid (conn);

  if (!fh_peer_alive (fh_conn_peer_pidfd (conn))) {
    fh_error_set (err, FH_CLOSE_PERMISSION, "peer process %d has exited", (int) pid);
  } else if (!fh_peer_read_identity (&d->paths, pid, &id, &error)) {
    fh_error_set (err, FH_CLOSE_PERMISSION, "cannot tell who process %d is: %s", (int) pid,
                  error->message);
  } else if (!fh_peer_alive (fh_conn_peer_pidfd (conn))) {
    /* read after the check: the pid might have been reused meanwhile */
    fh_error_set (err, FH_CLOSE_PERMISSION, "peer process %d has exited", (int) pid);
  } else if (!fh_libvirt_view_refresh (d->libvirt, &error)) {
    /* PA-22: without libvirt's record nobody can be told apart from a domain */
    fh_error_set (err, FH_CLOSE_PERMISSION, "identity: libvirt's domains unknown: %s",
                  error->message);
  } else if (!fh_peer_check_hello (&id, hello->name, uuid,
                                   (const char *const *) (others = known_names (d))->pdata, why,
                                   sizeof why)) {
    fh_error_set (err, FH_CLOSE_PERMISSION, "identity: %s", why);
  } else if (!fh_peer_check_libvirt (fh_libvirt_view_domains (d->libvirt), pid, hello->name, uuid,
                                     d->config->require_libvirt, why, sizeof why)) {
    fh_error_set (err, FH_CLOSE_PERMISSION, "identity: %s", why);
  } else {
    return TRUE;
  }
  d->identity_rejected++;
  return FALSE;
}

/* What a relay HELLO's VM is, copied out of the host view (which the next scan replaces). */
typedef struct {
  char *key, *name;
  char uuid[37];
  pid_t pid;
  GArray *tids;
} RelayVm;

static void
relay_vm_clear (RelayVm *r)
{
  g_free (r->key);
  g_free (r->name);
  g_clear_pointer (&r->tids, g_array_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (RelayVm, relay_vm_clear)

static const char *
relay_describe (const FhHello *hello, char *buf, gsize len)
{
  if (hello->relay_transport == FH_RELAY_HYBRID) {
    g_autofree char *path = fh_text_sanitize (hello->relay_path, -1);

    g_snprintf (buf, len, "hybrid socket %s", path);
  } else {
    g_snprintf (buf, len, "CID %u", hello->relay_cid);
  }
  return buf;
}

/*
 * 4.1a: a relay is trusted for one thing, where the guest's connection came
 * from, and only if it is the configured relay user.  Which VM that is, its
 * threads and its process, the host says: libvirt's record of the running
 * domain's <vsock><cid>, or a [vm] section's vsock_cid/vsock_uds with its
 * pidfile= or unit=.  Nothing the guest or the relay names is used.
 */
static gboolean
relay_identity (FhDaemon *d, FhConn *conn, const FhHello *hello, RelayVm *out, FhError *err)
{
  const FhHostVm *e;
  char where[160];

  if (d->config->relay_uid == (uid_t) -1 || fh_conn_peer_uid (conn) != d->config->relay_uid) {
    fh_error_set (err, FH_CLOSE_PERMISSION, "uid %d may not relay guests (relay_user)",
                  (int) fh_conn_peer_uid (conn));
    d->identity_rejected++;
    return FALSE;
  }
  host_vms_sync (d); /* the host's word now: a domain may have just started */
  e = fh_host_vms_by_transport (d->host_vms, hello->relay_cid,
                                hello->relay_transport == FH_RELAY_HYBRID ? hello->relay_path
                                                                          : NULL);
  if (!e) {
    fh_error_set (err, FH_CLOSE_PERMISSION, "%s is no running VM's",
                  relay_describe (hello, where, sizeof where));
    d->relay_refused++;
    return FALSE;
  }
  /* A hybrid socket is the VM's only if its hypervisor is what connected to it. */
  if (hello->relay_transport == FH_RELAY_HYBRID && (pid_t) hello->qemu_pid != e->pid) {
    fh_error_set (err, FH_CLOSE_PERMISSION, "%s: process %u connected, the VM's is %d",
                  relay_describe (hello, where, sizeof where), hello->qemu_pid, (int) e->pid);
    d->relay_refused++;
    return FALSE;
  }
  out->key = g_strdup (e->key);
  out->name = g_strdup (e->name);
  memcpy (out->uuid, e->uuid, sizeof out->uuid);
  out->pid = e->pid;
  out->tids = g_array_copy (e->tids);
  return TRUE;
}

/* Does host view entry e still say that a relayed VM's CID or socket is this VM's? */
static gboolean
relay_still_maps (const FhVm *vm, const FhHostVm *e)
{
  if (vm->relay_transport == FH_RELAY_HYBRID)
    return g_strcmp0 (e->vsock_path, vm->relay_path) == 0;
  return e->vsock_cid == vm->relay_cid;
}

static void cur_freq_start (FhDaemon *d);
static void send_cur_freq (FhDaemon *d, FhVm *vm);

static gboolean
on_hello (FhConn *conn, const FhHello *hello, FhError *err, gpointer data)
{
  FhDaemon *d = data;
  FhVm *vm, *old;
  static const uint8_t nil[16];
  g_autofree char *log_name = NULL; /* the peer's bytes, escaped (PA-6) */
  char uuid[37], where[160];
  guint n_vcpus = hello->num_vcpus;
  g_autofree char *key = NULL;

  g_auto (RelayVm) relay = { 0 };
  gboolean relayed = (hello->features & FH_F_RELAY) != 0;

  /* Refusals here close this connection only; no existing VM is touched. */
  format_uuid (hello->uuid, uuid);
  if (relayed ? !relay_identity (d, conn, hello, &relay, err)
              : !check_identity (d, conn, hello, uuid, err) ||
                    !fh_daemon_check_peer_tids (d, conn, hello->tids, hello->num_vcpus, err))
    return FALSE;
  /*
   * QEMU without -uuid reports the nil UUID; such VMs are told apart by
   * name, or by process when they have none.  A relayed guest is the
   * host's VM, under the host view's key.
   */
  key = relayed                         ? g_strdup (relay.key)
        : memcmp (hello->uuid, nil, 16) != 0 ? g_strdup (uuid)
        : hello->name[0] ? g_strdup_printf ("name:%s", hello->name)
                         : g_strdup_printf ("pid:%d", (int) fh_conn_peer_pid (conn));
  /* The VM this HELLO replaces (PA-8) gives its vCPUs back. */
  old = g_hash_table_lookup (d->vms, key);
  if (d->n_vcpus - (old && old->conn ? old->num_vcpus : 0) + n_vcpus > d->config->max_vcpus) {
    fh_error_set (err, FH_CLOSE_OVERLOAD, "%u vCPUs would exceed max_vcpus=%u (%u connected)",
                  n_vcpus, d->config->max_vcpus, d->n_vcpus);
    return FALSE;
  }

  vm = vm_alloc (d, key, n_vcpus);
  memcpy (vm->uuid, uuid, sizeof uuid);
  vm->conn = conn;
  g_strlcpy (vm->name, relayed ? relay.name : hello->name, sizeof vm->name);
  log_name = fh_text_sanitize (vm->name, -1);
  vm->pid = relayed ? relay.pid : fh_conn_peer_pid (conn);
  if (relayed) {
    memcpy (vm->uuid, relay.uuid, sizeof vm->uuid);
    vm->relay_transport = hello->relay_transport;
    vm->relay_cid = hello->relay_cid;
    vm->relay_path = hello->relay_transport == FH_RELAY_HYBRID ? g_strdup (hello->relay_path) : NULL;
  }
  vm->uid = fh_conn_peer_uid (conn);
  vm->features = fh_conn_features (conn);
  vm->connected_realtime_us = g_get_real_time ();
  d->n_vcpus += vm->num_vcpus;
  for (guint i = 0; i < vm->num_vcpus; i++) {
    vm->vcpus[i].index = i;
    /* a relayed guest's threads are the host's record of them (MR-28) */
    vm->vcpus[i].tid = !relayed ? hello->tids[i]
                       : i < relay.tids->len ? g_array_index (relay.tids, guint32, i)
                                             : 0;
    vm->vcpus[i].cpu = -1;
    vm->vcpus[i].info.cpu = -1;
    vm->vcpus[i].agg_cpu = -1;
  }
  if (!relayed && hello->qemu_pid != (uint32_t) vm->pid)
    g_debug ("VM \"%s\": HELLO says pid %u, socket peer is %d", log_name, hello->qemu_pid,
             (int) vm->pid);

  /* A restarted or migrated QEMU wins over a stale connection. */
  old = g_hash_table_lookup (d->vms, vm->key);
  if (old && old->conn) {
    g_autofree char *shown = fh_text_sanitize (vm->key, -1);

    fh_conn_close (old->conn, FH_CLOSE_DUPLICATE, "VM %s connected again (pid %d)", shown,
                   (int) vm->pid);
  }

  vm_load_settings (d, vm);
  vm_probe (d, vm);
  fh_conn_set_data (conn, vm);
  /* replace, not insert: a VM of the host view under this key goes, key and all (MR-28) */
  g_hash_table_replace (d->vms, vm->key, vm);
  d->vm_connections_total++;
  fh_log_vm (G_LOG_LEVEL_MESSAGE, log_name, vm->uuid,
             "VM \"%s\" (%s) connected%s%s: pid %d, %u vCPUs, features 0x%x%s%s", log_name,
             vm->uuid, relayed ? " over vsock, " : "",
             relayed ? relay_describe (hello, where, sizeof where) : "", (int) vm->pid,
             vm->num_vcpus, vm->features,
             vm->settings_source ? ", operator settings from " : "",
             vm->settings_source ? vm->settings_source : "");
  vm_watch_exit (d, vm);
  /* MR-28: the host's record of this process, if any, joins it (and its
   * host-view entry under another key goes) */
  host_vms_sync (d);
  /* The safety net's first turn for this VM: in the second half of the
   * interval (it was just read), VMs that come together spread over it. */
  {
    gint64 period = fh_daemon_rescan_us (d);

    vm->next_probe_us = g_get_monotonic_time () + period / 2 +
                        (gint64) (g_random_double () * (double) (period / 2));
  }
  if (vm->features & FH_F_CUR_FREQ)
    cur_freq_start (d);
  /* After WELCOME has gone out: GRANTS follow it. */
  queue_full (d);
  return TRUE;
}

static void
on_hints (FhConn *conn, const FhHints *hints, gpointer data)
{
  FhDaemon *d = data;
  FhVm *vm = fh_conn_get_data (conn);

  if (!vm)
    return;
  vm->hints_frames++;
  d->hints_frames_total++;
  /* FULL is the whole state: a vCPU it does not mention has no hint. */
  if (hints->flags & FH_HINTS_F_FULL)
    for (guint i = 0; i < vm->num_vcpus; i++)
      vm->vcpus[i].hint = (FhGuestHint){ 0 };
  /* Records are state: within a frame the later record for a vCPU wins. */
  for (guint i = 0; i < hints->num_records; i++) {
    const FhRecord *r = &hints->records[i];
    FhVcpu *v = &vm->vcpus[r->vcpu]; /* vcpu < num_vcpus: checked by the decoder */

    v->hint = (FhGuestHint){ r->flags, r->clamp_min, r->clamp_max, r->perf };
    v->seq = r->seq;
    v->hinted = TRUE;
    vm->hints_records++;
  }
  queue_vm (d, vm);
}

/*
 * PA-19: the device's vCPU table after hot-plug.  Every thread must be the
 * peer's, checked as HELLO's are (PA-21); a vCPU whose thread went away loses
 * its hint.  The connection and everything else about the VM stay.
 */
static gboolean
on_vcpus (FhConn *conn, const FhVcpus *vcpus, FhError *err, gpointer data)
{
  FhDaemon *d = data;
  FhVm *vm = fh_conn_get_data (conn);
  g_autofree char *name = NULL;
  guint present = 0;

  if (!vm)
    return TRUE;
  if (!fh_daemon_check_peer_tids (d, conn, vcpus->tids, vm->num_vcpus, err))
    return FALSE;
  for (guint i = 0; i < vm->num_vcpus; i++) {
    FhVcpu *v = &vm->vcpus[i];

    if (vcpus->tids[i] != v->tid) {
      v->tid = vcpus->tids[i];
      fh_thread_info_clear (&v->info);
      v->tid_ok = FALSE;
    }
    if (v->tid == 0) {
      v->hint = (FhGuestHint){ 0 };
      v->hinted = FALSE;
    } else {
      present++;
    }
  }
  vm->vcpus_frames++;
  vm_probe (d, vm);
  /* MR-28: where the host records the vCPU threads, its record wins */
  host_vms_sync (d);
  name = fh_text_sanitize (vm->name, -1);
  fh_log_vm (G_LOG_LEVEL_MESSAGE, name, vm->uuid,
             "VM \"%s\": vCPU threads replaced (VCPUS): %u of %u present", name, present,
             vm->num_vcpus);
  queue_full (d);
  return TRUE;
}

static void
on_closed (FhConn *conn, gpointer data)
{
  FhDaemon *d = data;
  FhVm *vm = fh_conn_get_data (conn);
  g_autofree char *name = NULL;

  if (!vm)
    return;
  name = fh_text_sanitize (vm->name, -1);
  fh_log_vm (G_LOG_LEVEL_MESSAGE, name, vm->uuid,
             "VM \"%s\" (%s) disconnected; its influence through the device is removed", name,
             vm->uuid);
  fh_conn_set_data (conn, NULL);
  g_hash_table_remove (d->vms, vm->key); /* frees vm */
  /* MR-28: a VM the host still knows of falls back to the host view, never to "no VM" */
  host_vms_sync (d);
  queue_full (d);
}

static void
on_rejected (uint16_t reason, gpointer data)
{
  FhDaemon *d = data;

  if (reason <= FH_CLOSE_REASON_MAX)
    d->rejected[reason]++;
}

static gboolean
peer_allowed (int fd, uid_t uid, gid_t gid, gpointer data)
{
  FhDaemon *d = data;

  return fh_config_uid_allowed (d->config, uid, gid) || uid == d->config->relay_uid ||
         fh_listen_peer_in_groups (fd, (const gid_t *) d->config->allowed_gids->data,
                                   d->config->allowed_gids->len);
}

/* FNV-1a, 64 bits: what was last sent, without keeping a copy of it. */
static guint64
frame_hash (const void *data, size_t n)
{
  const guint8 *p = data;
  guint64 hash = 14695981039346656037u;

  for (size_t i = 0; i < n; i++)
    hash = (hash ^ p[i]) * 1099511628211u;
  return hash;
}

/*
 * Sent when its content changes.  The VM keeps a hash of the frame last
 * sent, not the frame (FhGrants is sized for 1024 vCPUs: 4 KiB per VM); a
 * 64-bit collision that would hide a change is not a practical concern.
 */
static void
send_grants (FhVm *vm)
{
  static uint8_t frame[FH_FRAME_MAX]; /* the main loop is single-threaded */
  FhGrants g = { 0 };
  size_t n;
  guint64 hash;

  g.operator_floor = (uint16_t) vm->settings.op.min;
  g.operator_ceiling = (uint16_t) vm->settings.op.max;
  g.num_grants = (uint16_t) vm->num_vcpus;
  for (guint i = 0; i < vm->num_vcpus; i++) {
    FhClamp r = vm->vcpus[i].d.grant;

    g.grants[i].floor = (uint16_t) r.min;
    g.grants[i].ceiling = (uint16_t) r.max;
  }
  n = fh_encode_grants (frame, sizeof frame, &g);
  hash = frame_hash (frame, n);
  if (n == 0 || (vm->grants_sent && hash == vm->grants_hash))
    return;
  if (fh_conn_send_grants (vm->conn, &g)) {
    vm->grants_hash = hash;
    vm->grants_sent = TRUE;
    vm->grants_frames++;
  }
}

/* The VM's HOST_FREQ as it stands, encoded into frame (0: none), and its hash. */
static size_t
host_freq_now (FhDaemon *d, FhVm *vm, FhHostFreq *hf, uint8_t *frame, guint64 *hash)
{
  size_t n;

  memset (hf, 0, sizeof *hf);
  hf->num_classes = (uint16_t) d->host->n_freq_classes;
  hf->num_vcpus = (uint16_t) vm->num_vcpus;
  memcpy (hf->classes, d->host->freq_classes, sizeof hf->classes);
  for (guint i = 0; i < vm->num_vcpus; i++)
    hf->freq_class[i] = vm->vcpus[i].freq_class;
  n = fh_encode_host_freq (frame, FH_FRAME_MAX, hf);
  *hash = frame_hash (frame, n);
  return n;
}

/* PA-18: sent when its content changes, never because of hints. */
static void
send_host_freq (FhDaemon *d, FhVm *vm)
{
  static FhHostFreq hf; /* 1.6 KiB; the main loop is single-threaded */
  static uint8_t frame[FH_FRAME_MAX];
  size_t n;
  guint64 hash;

  if (!(vm->features & FH_F_HOST_FREQ))
    return;
  n = host_freq_now (d, vm, &hf, frame, &hash);
  if (n == 0 || (vm->host_freq_sent && hash == vm->host_freq_hash))
    return;
  if (fh_conn_send_host_freq (vm->conn, &hf)) {
    vm->host_freq_hash = hash;
    vm->host_freq_sent = TRUE;
    vm->host_freq_frames++;
    /* PA-26: values that refer to the classes the device now has */
    send_cur_freq (d, vm);
  }
}

/*
 * PA-26: the vCPUs' current frequencies, when they changed since the last
 * CUR_FREQ, and only against the classes of the HOST_FREQ the device has
 * (a class change not sent yet waits for its HOST_FREQ, which calls this).
 */
static void
send_cur_freq (FhDaemon *d, FhVm *vm)
{
  static FhHostFreq hf; /* the main loop is single-threaded */
  static FhCurFreq cf;
  static uint8_t frame[FH_FRAME_MAX];
  gboolean known = FALSE;
  size_t n;
  guint64 hash;

  if (!(vm->features & FH_F_CUR_FREQ) || !vm->host_freq_sent || !d->policy_cur_khz)
    return;
  if (host_freq_now (d, vm, &hf, frame, &hash) == 0 || hash != vm->host_freq_hash)
    return;
  cf.num_vcpus = (uint16_t) vm->num_vcpus;
  for (guint i = 0; i < vm->num_vcpus; i++) {
    const FhVcpu *v = &vm->vcpus[i];

    cf.cur_khz[i] = fh_host_cur_khz (d->host, d->policy_cur_khz, v->cpu, v->freq_class);
    known |= cf.cur_khz[i] != 0;
  }
  n = fh_encode_cur_freq (frame, sizeof frame, &cf, &hf);
  hash = frame_hash (frame, n);
  /* The device starts from "unknown": nothing to say until a value is known. */
  if (n == 0 || (vm->cur_freq_sent ? hash == vm->cur_freq_hash : !known))
    return;
  if (fh_conn_send_cur_freq (vm->conn, &cf, &hf)) {
    vm->cur_freq_hash = hash;
    vm->cur_freq_sent = TRUE;
    vm->cur_freq_frames++;
  }
}

/* 4.4c: sample every policy once, then tell each VM that takes it what changed. */
static gboolean
cur_freq_tick (gpointer data)
{
  FhDaemon *d = data;
  g_autoptr (GPtrArray) keys = g_ptr_array_new_with_free_func (g_free);
  GHashTableIter it;
  gpointer value;

  g_hash_table_iter_init (&it, d->vms);
  while (g_hash_table_iter_next (&it, NULL, &value)) {
    FhVm *vm = value;

    if (vm->conn && (vm->features & FH_F_CUR_FREQ))
      g_ptr_array_add (keys, g_strdup (vm->key));
  }
  if (keys->len == 0) {
    d->cur_freq_timer = 0;
    return G_SOURCE_REMOVE;
  }
  d->policy_cur_khz = g_renew (guint, d->policy_cur_khz, MAX (d->host->policies->len, 1));
  fh_host_sample_cur_freq (d->host, &d->paths, d->policy_cur_khz);
  /* keys: sending may close, and free, a VM */
  for (guint i = 0; i < keys->len; i++) {
    FhVm *vm = g_hash_table_lookup (d->vms, g_ptr_array_index (keys, i));

    if (vm && vm->conn)
      send_cur_freq (d, vm);
  }
  return G_SOURCE_CONTINUE;
}

/* A VM took FH_F_CUR_FREQ: sample from the next tick on (it stops with the last such VM). */
static void
cur_freq_start (FhDaemon *d)
{
  if (!d->cur_freq_timer && d->config->cur_freq_interval_ms)
    d->cur_freq_timer = g_timeout_add (d->config->cur_freq_interval_ms, cur_freq_tick, d);
}

/* cpu_flags */
#define CPU_DIRTY 1u  /* in dirty_cpus: its decision is taken again */
#define CPU_RESCAN 2u /* its aggregate lost a maximum: rebuilt from its members */

static void
cpu_mark (FhDaemon *d, guint c, guint8 flag)
{
  if (!(d->cpu_flags[c] & CPU_DIRTY))
    g_array_append_val (d->dirty_cpus, c);
  d->cpu_flags[c] |= CPU_DIRTY | flag;
}

/* Take the vCPU's contribution off the CPU it counts on. */
static void
vcpu_unplace (FhDaemon *d, FhVcpu *v)
{
  GPtrArray *m;

  if (v->agg_cpu < 0)
    return;
  m = d->cpu_members[v->agg_cpu];
  g_ptr_array_remove_index_fast (m, v->agg_slot);
  if (v->agg_slot < m->len)
    ((FhVcpu *) g_ptr_array_index (m, v->agg_slot))->agg_slot = v->agg_slot;
  if ((v->agg_active && !fh_merge_agg_remove (&d->cpu_agg[v->agg_cpu], v->agg_eff)) ||
      (v->agg_capped && !fh_merge_agg_remove_cap (&d->cpu_agg[v->agg_cpu], v->agg_cap)))
    cpu_mark (d, (guint) v->agg_cpu, CPU_RESCAN);
  else
    cpu_mark (d, (guint) v->agg_cpu, 0);
  v->agg_cpu = -1;
  v->agg_active = FALSE;
  v->agg_capped = FALSE;
}

/*
 * Make the vCPU count on its CPU as fh_merge_aggregate_cpus() would count it
 * (active: hinted, not idle, thread ours; CPUs past n_cpus ignored).
 */
static void
vcpu_place (FhDaemon *d, FhVcpu *v)
{
  gint cpu = v->cpu >= 0 && (guint) v->cpu < d->host->n_cpus ? v->cpu : -1;
  gboolean active = v->d.active && v->tid_ok;
  /* MR-27: a thread that is not the VM's caps nothing, as it asks for nothing */
  gboolean capped = v->tid_ok;

  if (cpu < 0) {
    vcpu_unplace (d, v);
    return;
  }
  if (cpu == v->agg_cpu && active == v->agg_active && capped == v->agg_capped &&
      (!active || (v->agg_eff.min == v->d.eff.min && v->agg_eff.max == v->d.eff.max)) &&
      (!capped || v->agg_cap == v->d.cap))
    return;
  if (cpu != v->agg_cpu) {
    vcpu_unplace (d, v);
    v->agg_cpu = cpu;
    v->agg_slot = d->cpu_members[cpu]->len;
    g_ptr_array_add (d->cpu_members[cpu], v);
  } else if ((v->agg_active && !fh_merge_agg_remove (&d->cpu_agg[cpu], v->agg_eff)) ||
             (v->agg_capped && !fh_merge_agg_remove_cap (&d->cpu_agg[cpu], v->agg_cap))) {
    /* the aggregate is rebuilt from the members: the other removal is moot */
    cpu_mark (d, (guint) cpu, CPU_RESCAN);
  }
  v->agg_active = active;
  v->agg_eff = v->d.eff;
  v->agg_capped = capped;
  v->agg_cap = v->d.cap;
  if (active)
    fh_merge_agg_add (&d->cpu_agg[cpu], v->d.eff);
  if (capped)
    fh_merge_agg_add_cap (&d->cpu_agg[cpu], v->d.cap);
  cpu_mark (d, (guint) cpu, 0);
}

/*
 * MR-30 without a hold in force: what the vCPU asked last is what is in
 * force, its decision.  An inactive vCPU's last ceiling is not kept past
 * its hold: it starts afresh when it asks again.
 */
static void
vcpu_hold_from_decision (FhHold *h, const FhVcpuDecision *vd)
{
  guint16 asked[FH_HOLD_N] = {
    [FH_HOLD_ACTIVE] = vd->active ? 1 : 0,
    [FH_HOLD_MIN] = vd->active ? vd->req.min : 0,
    [FH_HOLD_MAX] = vd->active ? vd->req.max : 0,
  };

  memset (h, 0, sizeof *h);
  memcpy (h->asked, asked, sizeof asked);
  memcpy (h->high, asked, sizeof asked);
}

/*
 * Step vCPU j's hold with what it asks now.  The VM keeps hold records
 * only while one is in force (vm_arm_hold() drops them at the last
 * lapse): the first fall gives every vCPU its record, from its decision.
 */
static const FhHold *
vcpu_hold_step (FhDaemon *d, FhVm *vm, guint j, const FhGuestHint *hint,
                const FhMergeParams *params)
{
  gint64 hold_us = (gint64) d->config->hold_ms * G_TIME_SPAN_MILLISECOND;
  gboolean active = fh_merge_guest_active (hint);
  FhClamp req = fh_merge_guest_request (hint, params);
  FhHold h;

  if (vm->holds) {
    fh_merge_hold_step (&vm->holds[j], active, req, vm->decided_us, hold_us);
    return &vm->holds[j];
  }
  vcpu_hold_from_decision (&h, &vm->vcpus[j].d);
  fh_merge_hold_step (&h, active, req, vm->decided_us, hold_us);
  if (!fh_merge_hold_next (&h, vm->decided_us))
    return NULL; /* nothing held: the hint's own request is in force */
  vm->holds = g_new (FhHold, vm->num_vcpus);
  for (guint k = 0; k < vm->num_vcpus; k++)
    vcpu_hold_from_decision (&vm->holds[k], &vm->vcpus[k].d);
  vm->holds[j] = h;
  return &vm->holds[j];
}

/*
 * The merge engine over one vCPU at the VM's decision time; *headroom gets
 * the MR-4 factor used.  step: the decision takes the vCPU's latest record
 * into its hold first (MR-30); a check that only recomputes does not.
 */
static FhVcpuDecision
vcpu_decision (FhDaemon *d, FhVm *vm, guint j, gboolean step, double *headroom)
{
  static const FhGuestHint no_hint = { 0 };
  static const FhGuestHint host_busy = { FH_HINT_HOST_BUSY, 0, 0, 0 };
  FhVcpu *v = &vm->vcpus[j];
  const FhGuestHint *hint = vm->settings.ignore_hints ? &no_hint : &v->hint;
  FhChain chain = { d->host->sys, NULL, 0 };
  FhMergeParams params = d->params;
  FhClamp op = vm->settings.op;

  if (v->info.levels) {
    chain.levels = v->info.levels->v;
    chain.n_levels = v->info.levels->n;
  }
  chain.rt = v->info.rt; /* MR-26 */
  chain.rt_min_default = d->host->rt_min_default;
  /* MR-4: the governor that matters is the one of the vCPU's CPU. */
  if (d->headroom_auto)
    params.perf_headroom = fh_merge_auto_headroom (d->backend->ops == &fh_backend_uclamp_ops,
                                                   fh_host_cpu_governor (d->host, v->cpu),
                                                   d->host->kernel_release, NULL);
  if (vm->settings.vcpu_op && j < vm->settings.vcpu_op->len)
    op = g_array_index (vm->settings.vcpu_op, FhClamp, j);
  *headroom = params.perf_headroom;
  /* MR-29: without a guest record, the host's view of the thread says whether it is active */
  if (hint->flags == 0 && v->busy)
    hint = &host_busy;
  if (step)
    return fh_merge_vcpu_held (hint, vcpu_hold_step (d, vm, j, hint, &params), vm->decided_us,
                               &chain, op, &params);
  return fh_merge_vcpu_held (hint, vm->holds ? &vm->holds[j] : NULL, vm->decided_us, &chain, op,
                             &params);
}

static gboolean
hold_lapse_cb (gpointer data)
{
  FhVm *vm = data;

  vm->hold_timer = 0;
  queue_vm (vm->daemon, vm);
  return G_SOURCE_REMOVE;
}

/* Decide the VM again when its first hold lapses (MR-30, MR-17). */
static void
vm_arm_hold (FhVm *vm)
{
  gint64 next = 0;

  for (guint j = 0; vm->holds && j < vm->num_vcpus; j++) {
    gint64 t = fh_merge_hold_next (&vm->holds[j], vm->decided_us);

    if (t && (next == 0 || t < next))
      next = t;
  }
  /* all lapsed: what each vCPU asks is in force, as its decision says */
  if (!next)
    g_clear_pointer (&vm->holds, g_free);
  if (vm->hold_timer && next == vm->hold_due_us)
    return;
  g_clear_handle_id (&vm->hold_timer, g_source_remove);
  if (next) {
    /* rounded up: at the callback the hold has lapsed */
    guint ms = (guint) ((next - vm->decided_us + G_TIME_SPAN_MILLISECOND - 1) /
                        G_TIME_SPAN_MILLISECOND);

    vm->hold_due_us = next;
    vm->hold_timer = g_timeout_add (MAX (ms, 1), hold_lapse_cb, vm);
  }
}

/* Decide a VM's vCPUs, place them, and add the backend's targets. */
static void
vm_decide (FhDaemon *d, FhVm *vm, GArray *targets)
{
  vm->decided_us = g_get_monotonic_time ();
  for (guint j = 0; j < vm->num_vcpus; j++) {
    FhVcpu *v = &vm->vcpus[j];

    v->d = vcpu_decision (d, vm, j, TRUE, &v->perf_headroom);
    vcpu_place (d, v);
    if (v->tid_ok) {
      /* The process the thread belongs to now: a release later must find
       * it still there (tid reuse), whether or not that is the socket
       * peer (check_thread_owner=false). */
      FhTidTarget t = { v->tid, v->info.tgid, v->d.active, v->d.eff, v->d.min_default, v->d.cap };

      g_array_append_val (targets, t);
    }
  }
  vm_arm_hold (vm);
}

/* The dirty CPUs' decisions, then the policies covering them. */
static void
settle_cpus (FhDaemon *d)
{
  guint n_pol = d->host->policies->len;
  g_autofree guint8 *pol_dirty = g_new0 (guint8, MAX (n_pol, 1));

  for (guint i = 0; i < d->dirty_cpus->len; i++) {
    guint c = g_array_index (d->dirty_cpus, guint, i);

    if (d->cpu_flags[c] & CPU_RESCAN) {
      GPtrArray *m = d->cpu_members[c];

      d->cpu_agg[c] = (FhCpuAgg){ 0 };
      for (guint k = 0; k < m->len; k++) {
        const FhVcpu *v = g_ptr_array_index (m, k);

        if (v->agg_active)
          fh_merge_agg_add (&d->cpu_agg[c], v->agg_eff);
        if (v->agg_capped)
          fh_merge_agg_add_cap (&d->cpu_agg[c], v->agg_cap);
      }
    }
    d->cpu_flags[c] = 0;
    d->cpus[c] = fh_merge_agg_decision (&d->cpu_agg[c]);
    if (d->host->cpu_policy[c] >= 0)
      pol_dirty[d->host->cpu_policy[c]] = 1;
  }
  g_array_set_size (d->dirty_cpus, 0);
  for (guint i = 0; i < n_pol; i++) {
    FhPolicy *p = g_ptr_array_index (d->host->policies, i);

    if (pol_dirty[i])
      p->decision = fh_merge_aggregate_set (d->cpus, d->host->n_cpus, (const guint *) p->cpus->data,
                                            p->cpus->len);
  }
}

/* GRANTS and HOST_FREQ to these VMs (keys: sending may close, and free, one). */
static void
send_to (FhDaemon *d, GPtrArray *keys)
{
  for (guint i = 0; i < keys->len; i++) {
    const char *key = g_ptr_array_index (keys, i);
    FhVm *vm = g_hash_table_lookup (d->vms, key);

    if (vm && vm->conn)
      send_grants (vm);
    /* send_grants() may have closed it */
    vm = g_hash_table_lookup (d->vms, key);
    if (vm && vm->conn)
      send_host_freq (d, vm);
  }
}

static void
daemon_update (FhDaemon *d)
{
  g_autoptr (GArray) targets = g_array_new (FALSE, FALSE, sizeof (FhTidTarget));
  g_autoptr (GPtrArray) keys = g_ptr_array_new_with_free_func (g_free);
  gboolean full = d->need_full;

  d->updates_total++;
  d->last_update_us = g_get_monotonic_time ();
  if (full) {
    g_autoptr (GPtrArray) vms = fh_daemon_sorted_vms (d);

    d->need_full = FALSE;
    d->full_passes_total++;
    for (guint i = 0; i < d->dirty_vms->len; i++)
      ((FhVm *) g_ptr_array_index (d->dirty_vms, i))->dirty = FALSE;
    g_ptr_array_set_size (d->dirty_vms, 0);
    for (guint i = 0; i < vms->len; i++) {
      FhVm *vm = g_ptr_array_index (vms, i);

      vm_decide (d, vm, targets);
      g_ptr_array_add (keys, g_strdup (vm->key));
    }
    for (guint c = 0; c < d->host->n_cpus; c++)
      cpu_mark (d, c, CPU_RESCAN);
  } else {
    for (guint i = 0; i < d->dirty_vms->len; i++) {
      FhVm *vm = g_ptr_array_index (d->dirty_vms, i);

      vm->dirty = FALSE;
      vm_decide (d, vm, targets);
      g_ptr_array_add (keys, g_strdup (vm->key));
    }
    g_ptr_array_set_size (d->dirty_vms, 0);
  }
  settle_cpus (d);
  /* A full pass hands over every thread (the backend releases the others);
   * an incremental one only the threads of the VMs it decided. */
  if (full)
    fh_backend_apply (d->backend, targets, g_get_monotonic_time ());
  else
    fh_backend_update (d->backend, targets, g_get_monotonic_time ());
  send_to (d, keys);
  if (d->notify)
    d->notify (d, d->notify_data);
}

/* CPU time of the calling thread, µs: unlike wall time, not inflated by a loaded machine. */
static gint64
thread_cpu_us (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (gint64) ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

/* One decision pass, timed in CPU time (status: last_pass_us, max_pass_us). */
static void
daemon_pass (FhDaemon *d)
{
  gint64 t0 = thread_cpu_us ();

  daemon_update (d);
  d->last_pass_us = thread_cpu_us () - t0;
  d->max_pass_us = MAX (d->max_pass_us, d->last_pass_us);
}

static gboolean
update_idle_cb (gpointer data)
{
  FhDaemon *d = data;

  d->update_idle = 0;
  daemon_pass (d);
  return G_SOURCE_REMOVE;
}

/*
 * Coalesce: frames from many VMs that arrive together cost one decision,
 * and decisions are at most FH_UPDATE_MIN_US apart however fast devices
 * send (each may write sysfs).
 */
#define FH_UPDATE_MIN_US (5 * G_TIME_SPAN_MILLISECOND)

static void
queue_update (FhDaemon *d)
{
  gint64 since = g_get_monotonic_time () - d->last_update_us;

  if (d->update_idle)
    return;
  /* At the devices' priority, not G_PRIORITY_DEFAULT_IDLE: an idle source
   * never runs while some socket is always readable, and a flood of frames
   * from a few VMs would hold every VM's decision back (it did: 10 passes
   * in 10 s with 1000 VMs flooding).  The frames read in this iteration
   * still share the pass, which runs at the next one. */
  if (since >= FH_UPDATE_MIN_US)
    d->update_idle = g_idle_add_full (G_PRIORITY_DEFAULT, update_idle_cb, d, NULL);
  else
    d->update_idle =
        g_timeout_add ((guint) MAX (1, (FH_UPDATE_MIN_US - since + 999) / G_TIME_SPAN_MILLISECOND),
                       update_idle_cb, d);
}

/* Something host-wide changed: the next pass decides every vCPU. */
static void
queue_full (FhDaemon *d)
{
  d->need_full = TRUE;
  queue_update (d);
}

/* Only this VM's inputs changed: the next pass decides its vCPUs. */
static void
queue_vm (FhDaemon *d, FhVm *vm)
{
  if (!vm->dirty) {
    vm->dirty = TRUE;
    g_ptr_array_add (d->dirty_vms, vm);
  }
  queue_update (d);
}

static void
levels_unref (gpointer levels)
{
  if (levels)
    fh_levels_unref (levels);
}

/* What of a vCPU's host view the decision and HOST_FREQ depend on. */
static gboolean
vcpu_view_equal (const FhVcpu *v, gint cpu, gboolean by_config, guint8 cls, gboolean rt,
                 const FhLevels *levels)
{
  guint n = v->info.levels ? v->info.levels->n : 0;

  /* interned: the same chain is the same pointer, but an empty one may also be NULL */
  return v->cpu == cpu && v->placed_by_config == by_config && v->freq_class == cls &&
         v->info.rt == rt && (v->info.levels == levels || (n == 0 && (levels ? levels->n : 0) == 0));
}

/*
 * Re-read where the VM's threads sit, and queue what that changes: nothing,
 * its own vCPUs (placement, cgroup chain, policy), or -- a thread found,
 * lost or owned by another process -- everything (the backend then hears of
 * every thread, and releases the ones no longer ours).
 */
static void
vm_reprobe (FhDaemon *d, FhVm *vm)
{
  guint n = vm->num_vcpus;
  g_autofree gint *cpu = g_new (gint, MAX (n, 1));
  g_autofree guint8 *flags = g_new (guint8, MAX (n, 1));
  g_autofree pid_t *tgid = g_new (pid_t, MAX (n, 1));
  g_autofree guint8 *cls = g_new (guint8, MAX (n, 1));
  g_autoptr (GPtrArray) levels = g_ptr_array_new_with_free_func (levels_unref);
  gboolean changed = FALSE, full = FALSE;

  for (guint i = 0; i < n; i++) {
    FhVcpu *v = &vm->vcpus[i];

    cpu[i] = v->cpu;
    flags[i] = (v->tid_ok ? 1 : 0) | (v->placed_by_config ? 2 : 0) | (v->info.rt ? 4 : 0);
    tgid[i] = v->info.tgid;
    cls[i] = v->freq_class;
    g_ptr_array_add (levels, v->info.levels ? (gpointer) fh_levels_ref (v->info.levels) : NULL);
  }
  vm_probe (d, vm);
  for (guint i = 0; i < n; i++) {
    FhVcpu *v = &vm->vcpus[i];

    if (!!(flags[i] & 1) != v->tid_ok || tgid[i] != v->info.tgid)
      full = TRUE;
    else if (!vcpu_view_equal (v, cpu[i], !!(flags[i] & 2), cls[i], !!(flags[i] & 4),
                               g_ptr_array_index (levels, i)))
      changed = TRUE;
  }
  if (full)
    queue_full (d);
  else if (changed)
    queue_vm (d, vm);
}

/*
 * A connection whose process exited (its socket passed on to another
 * process) no longer says who is there: its pid may be anyone's now.  (A
 * process's sockets close before its pidfd reports the exit: an ordinary
 * disconnect shows as EOF here and is left to the reader.)
 */
static gboolean
peer_gone (FhVm *vm)
{
  return !fh_peer_alive (fh_conn_peer_pidfd (vm->conn)) && fh_conn_idle_open (vm->conn);
}

static void
close_gone (FhConn *conn)
{
  fh_conn_close (conn, FH_CLOSE_PERMISSION,
                 "the peer process has exited; its pid is no longer the VM's");
}

/* The pidfd pinned at accept (PA-20) turns readable when the process exits. */
static gboolean
on_peer_exit (gint fd, GIOCondition cond, gpointer data)
{
  FhVm *vm = data;

  /* out of the epoll set while the pidfd is still open (fh_poller_watch_remove()) */
  g_clear_pointer (&vm->exit_watch, fh_poller_watch_remove);
  if (peer_gone (vm))
    close_gone (vm->conn); /* frees vm */
  /* else the reader sees EOF; the re-scan looks again */
  return G_SOURCE_REMOVE;
}

static void
vm_watch_exit (FhDaemon *d, FhVm *vm)
{
  int fd = vm->conn ? fh_conn_peer_pidfd (vm->conn) : -1;

  /* In the device sockets' epoll set: a GSource per VM would make every
   * main-loop iteration walk them all (fh-poller.h). */
  if (fd >= 0)
    vm->exit_watch = fh_poller_add (fh_device_server_poller (d->device), fd, G_IO_IN, on_peer_exit, vm);
}

/* Directory rel is, or lies below or above, the group of one of the VM's threads. */
static gboolean
vm_related_to (const FhVm *vm, const char *rel)
{
  gsize n = strlen (rel);

  if (n == 0)
    return TRUE;
  for (guint i = 0; i < vm->num_vcpus; i++) {
    const char *dir = fh_thread_info_cgroup_dir (&vm->vcpus[i].info);
    gsize m;

    if (!dir)
      continue;
    m = strlen (dir);
    if (m >= n ? strncmp (dir, rel, n) == 0 && (dir[n] == '\0' || dir[n] == '/')
               : strncmp (rel, dir, m) == 0 && (rel[m] == '/' || (m == 1 && dir[0] == '/')))
      return TRUE;
  }
  return FALSE;
}

/* inotify events since the last idle: re-read the VMs whose groups they touch. */
static gboolean
cgroup_events_idle (gpointer data)
{
  FhDaemon *d = data;
  GHashTableIter iter;
  gpointer value;
  guint n = 0;

  d->cg_events_idle = 0;
  d->cg_cache = fh_cgroup_cache_new ();
  g_hash_table_iter_init (&iter, d->vms);
  while (g_hash_table_iter_next (&iter, NULL, &value)) {
    GHashTableIter ev;
    gpointer rel;

    g_hash_table_iter_init (&ev, d->cg_events);
    while (g_hash_table_iter_next (&ev, &rel, NULL))
      if (vm_related_to (value, rel)) {
        vm_reprobe (d, value);
        n++;
        break;
      }
  }
  g_clear_pointer (&d->cg_cache, g_hash_table_unref);
  g_hash_table_remove_all (d->cg_events);
  g_debug ("cgroup change: %u VMs re-read", n);
  return G_SOURCE_REMOVE;
}

static void
on_cgroup_event (const char *rel, gpointer data)
{
  FhDaemon *d = data;

  g_hash_table_add (d->cg_events, g_strdup (rel));
  if (!d->cg_events_idle)
    d->cg_events_idle = g_idle_add_full (G_PRIORITY_DEFAULT, cgroup_events_idle, d, NULL); /* as queue_update() */
}

/* MR-28: a VM the host knows of, without a device connection. */
static FhVm *
host_vm_new (FhDaemon *d, const FhHostVm *e)
{
  guint n = MIN (e->tids->len, FH_MAX_VCPUS);
  FhVm *vm = vm_alloc (d, e->key, n);
  g_autofree char *name = NULL;
  gint64 period = fh_daemon_rescan_us (d);

  g_strlcpy (vm->name, e->name, sizeof vm->name);
  memcpy (vm->uuid, e->uuid, sizeof vm->uuid);
  vm->pid = e->pid;
  vm->host_source = e->source;
  vm->connected_realtime_us = g_get_real_time ();
  for (guint i = 0; i < n; i++) {
    vm->vcpus[i].index = i;
    vm->vcpus[i].tid = g_array_index (e->tids, guint32, i);
    vm->vcpus[i].cpu = -1;
    vm->vcpus[i].info.cpu = -1;
    vm->vcpus[i].agg_cpu = -1;
  }
  vm_load_settings (d, vm);
  vm_probe (d, vm);
  vm->next_probe_us =
      g_get_monotonic_time () + period / 2 + (gint64) (g_random_double () * (double) (period / 2));
  d->n_host_vms++;
  d->host_vms_found_total++;
  g_hash_table_replace (d->vms, vm->key, vm);
  name = fh_text_sanitize (vm->name, -1);
  fh_log_vm (G_LOG_LEVEL_MESSAGE, name, vm->uuid,
             "VM \"%s\" (%s) known from %s: pid %d, %u vCPUs, no device connection%s%s", name,
             vm->uuid, e->source, (int) vm->pid, n,
             vm->settings_source ? ", operator settings from " : "",
             vm->settings_source ? vm->settings_source : "");
  return vm;
}

static gboolean
same_tids (const FhVm *vm, const FhHostVm *e)
{
  if (MIN (e->tids->len, FH_MAX_VCPUS) != vm->num_vcpus)
    return FALSE;
  for (guint i = 0; i < vm->num_vcpus; i++)
    if (vm->vcpus[i].tid != g_array_index (e->tids, guint32, i))
      return FALSE;
  return TRUE;
}

/*
 * A connected VM that the host knows of too: the host's record says which
 * threads are its vCPUs (MR-28), whatever the device's HELLO or VCPUS said:
 * what the guest side sends cannot move which threads are capped.
 */
static void
host_vm_attach (FhDaemon *d, FhVm *vm, const FhHostVm *e)
{
  gboolean moved = FALSE;

  vm->host_source = e->source;
  for (guint i = 0; i < vm->num_vcpus && i < e->tids->len; i++) {
    FhVcpu *v = &vm->vcpus[i];
    guint32 tid = g_array_index (e->tids, guint32, i);

    if (tid == 0 || tid == v->tid)
      continue;
    if (v->tid != 0) {
      g_autofree char *name = fh_text_sanitize (vm->name, -1);

      fh_log_vm (G_LOG_LEVEL_MESSAGE, name, vm->uuid,
                 "VM \"%s\" vCPU %u: the device names thread %u, %s records %u: %u counts", name, i,
                 v->tid, e->source, tid, tid);
    }
    v->tid = tid;
    fh_thread_info_clear (&v->info);
    v->tid_ok = FALSE;
    v->run_sampled = FALSE;
    v->busy = FALSE;
    moved = TRUE;
  }
  if (moved) {
    vm_probe (d, vm);
    queue_full (d);
  }
}

/*
 * MR-28: make the VMs agree with what the host says runs.  A connected VM
 * stays as it is and takes the host's record of its process; a VM known
 * only to the host is added, replaced when its process or threads change,
 * and removed when the host no longer knows it.  One process is one VM:
 * libvirt's record first, then the config's.
 */
static void
host_vms_sync (FhDaemon *d)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GHashTable) by_pid = g_hash_table_new (NULL, NULL); /* connected VMs */
  g_autoptr (GHashTable) pids = g_hash_table_new (NULL, NULL);   /* taken in this pass */
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);   /* FhVm* matched */
  /* relayed VMs whose CID or socket no longer maps to them: closed after the walk */
  g_autoptr (GPtrArray) unmapped = g_ptr_array_new_with_free_func ((GDestroyNotify) fh_conn_unref);
  const GPtrArray *doms = NULL;
  GArray *known = d->host_vms;
  GHashTableIter it;
  gpointer value;

  if (fh_libvirt_view_refresh (d->libvirt, &error)) {
    doms = fh_libvirt_view_domains (d->libvirt);
    if (d->libvirt_view_failed)
      g_message ("libvirt's domain records are readable again");
    d->libvirt_view_failed = FALSE;
  } else if (!d->libvirt_view_failed) {
    g_warning ("libvirt's domains unknown: %s; domains without a device connection are not capped "
               "until this is fixed",
               error->message);
    d->libvirt_view_failed = TRUE;
  }
  fh_host_vms_scan (known, d->host_vm_problems, &d->paths, doms, d->config);
  g_hash_table_iter_init (&it, d->vms);
  while (g_hash_table_iter_next (&it, NULL, &value))
    if (((FhVm *) value)->conn)
      g_hash_table_insert (by_pid, GINT_TO_POINTER (((FhVm *) value)->pid), value);
  for (guint i = 0; i < known->len; i++) {
    const FhHostVm *e = &g_array_index (known, FhHostVm, i);
    FhVm *vm;

    if (g_hash_table_contains (pids, GINT_TO_POINTER (e->pid)))
      continue;
    g_hash_table_add (pids, GINT_TO_POINTER (e->pid));
    vm = g_hash_table_lookup (by_pid, GINT_TO_POINTER (e->pid));
    if (vm && vm->relay_transport && !relay_still_maps (vm, e))
      continue; /* not seen: closed below */
    if (vm) {
      host_vm_attach (d, vm, e);
      g_hash_table_add (seen, vm);
      continue;
    }
    vm = g_hash_table_lookup (d->vms, e->key);
    if (vm && vm->conn)
      continue; /* its key is a connected VM's, another process: that one stays */
    if (vm && vm->pid == e->pid && same_tids (vm, e)) {
      g_hash_table_add (seen, vm);
      continue;
    }
    if (vm) {
      g_hash_table_remove (d->vms, vm->key);
      queue_full (d);
    }
    g_hash_table_add (seen, host_vm_new (d, e));
    queue_full (d);
  }
  g_hash_table_iter_init (&it, d->vms);
  while (g_hash_table_iter_next (&it, NULL, &value)) {
    FhVm *vm = value;

    if (g_hash_table_contains (seen, vm))
      continue;
    if (vm->conn && vm->relay_transport) {
      /* A CID is reused once its VM stops: a guest is served only as the VM it was. */
      g_ptr_array_add (unmapped, fh_conn_ref (vm->conn));
      continue;
    }
    if (vm->conn) {
      vm->host_source = NULL;
      continue;
    }
    if (!vm->host_source)
      continue; /* a test's VM (fh_daemon_test_add_vm()) */
    {
      g_autofree char *name = fh_text_sanitize (vm->name, -1);

      fh_log_vm (G_LOG_LEVEL_MESSAGE, name, vm->uuid,
                 "VM \"%s\" (%s) no longer runs (%s); its operator bounds are released", name,
                 vm->uuid, vm->host_source);
    }
    g_hash_table_iter_remove (&it); /* frees vm */
    queue_full (d);
  }
  for (guint i = 0; i < unmapped->len; i++) {
    FhConn *conn = g_ptr_array_index (unmapped, i);

    if (fh_conn_is_closed (conn))
      continue;
    d->relay_unmapped++;
    fh_conn_close (conn, FH_CLOSE_PERMISSION,
                   "its vsock CID or socket no longer belongs to the VM it was served as");
  }
}

/* MR-29: the thread's run time in ns: schedstat, else utime + stime. */
static gboolean
thread_run_ns (FhDaemon *d, guint tid, guint64 *ns)
{
  g_autofree char *path = fh_path (&d->paths, FH_ROOT_PROC, "%u/schedstat", tid);
  g_autofree char *text = fh_read_small_file (path, NULL);
  guint64 ticks;
  long hz;

  if (text && fh_parse_schedstat_run_ns (text, ns, NULL))
    return TRUE;
  g_free (path);
  g_free (text);
  path = fh_path (&d->paths, FH_ROOT_PROC, "%u/stat", tid);
  text = fh_read_small_file (path, NULL);
  hz = sysconf (_SC_CLK_TCK);
  if (!text || hz <= 0 || !fh_parse_stat_cputime (text, &ticks, NULL))
    return FALSE;
  *ns = ticks * (G_GUINT64_CONSTANT (1000000000) / (guint64) hz);
  return TRUE;
}

/* MR-29: the operator floor of vCPU i, its per-vCPU override included. */
static guint
vcpu_operator_floor (const FhVm *vm, guint i)
{
  const GArray *per = vm->settings.vcpu_op;

  return per && i < per->len ? g_array_index (per, FhClamp, i).min : vm->settings.op.min;
}

/*
 * MR-29: once per poll tick, each vCPU with an operator floor and without a
 * guest record in force (no hint, or guest hints off) is busy if its thread
 * ran FH_HOST_BUSY_PERCENT of the time since the last sample.  A change
 * decides the VM again.  The others read nothing: at 1000 VMs of 16 vCPUs
 * that would be 16 000 files a tick for decisions it cannot change.
 */
static void
vm_sample_busy (FhDaemon *d, FhVm *vm, gint64 now)
{
  gboolean changed = FALSE;

  for (guint i = 0; i < vm->num_vcpus; i++) {
    FhVcpu *v = &vm->vcpus[i];
    gboolean busy = FALSE;
    guint64 ns;

    if (!v->tid_ok || (v->hint.flags != 0 && !vm->settings.ignore_hints) ||
        vcpu_operator_floor (vm, i) == 0 || !thread_run_ns (d, v->tid, &ns)) {
      v->run_sampled = FALSE;
    } else {
      if (v->run_sampled && now > v->run_at_us && ns >= v->run_ns)
        busy = fh_merge_host_busy (ns - v->run_ns, (guint64) (now - v->run_at_us) * 1000u);
      v->run_ns = ns;
      v->run_at_us = now;
      v->run_sampled = TRUE;
    }
    if (busy != v->busy) {
      v->busy = busy;
      changed = TRUE;
    }
  }
  if (changed)
    queue_vm (d, vm);
}

static gboolean
poll_tick (gpointer data)
{
  FhDaemon *d = data;
  GHashTableIter iter;
  gpointer value;
  gint64 now = g_get_monotonic_time ();
  gint64 period = fh_daemon_rescan_us (d);
  g_autoptr (GPtrArray) gone = g_ptr_array_new ();

  /* Three small files, whatever the number of VMs. */
  if (fh_host_refresh_sys (d->host, &d->paths)) {
    g_message ("system clamp defaults now %u..%u", d->host->sys.min, d->host->sys.max);
    d->need_full = TRUE;
  }
  /*
   * The safety net: what no event reports (a thread's placement, its
   * scheduling policy, its exit, a move between groups nobody watched)
   * is found by re-reading each VM's threads once per rescan interval,
   * the VMs spread over the ticks.
   */
  d->cg_cache = fh_cgroup_cache_new ();
  g_hash_table_iter_init (&iter, d->vms);
  while (g_hash_table_iter_next (&iter, NULL, &value)) {
    FhVm *vm = value;

    if (now < vm->next_probe_us)
      continue;
    vm->next_probe_us = MAX (vm->next_probe_us + period, now);
    if (vm->conn && peer_gone (vm)) {
      g_ptr_array_add (gone, vm->conn);
      continue;
    }
    vm_reprobe (d, vm);
  }
  g_clear_pointer (&d->cg_cache, g_hash_table_unref);
  for (guint i = 0; i < gone->len; i++)
    close_gone (g_ptr_array_index (gone, i));
  host_vms_sync (d);
  g_hash_table_iter_init (&iter, d->vms);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    vm_sample_busy (d, value, now);
  if (d->need_full || d->dirty_vms->len > 0) {
    g_clear_handle_id (&d->update_idle, g_source_remove);
    daemon_pass (d);
  } else {
    /* Nothing changed: the backends' retry point only. */
    g_autoptr (GArray) none = g_array_new (FALSE, FALSE, sizeof (FhTidTarget));

    fh_backend_update (d->backend, none, now);
    /* The owner's after-pass work (the libvirt ceiling mirror) catches up
     * on what changed without a pass; metrics are rendered when scraped. */
    if (d->notify)
      d->notify (d, d->notify_data);
  }
  /* Memory freed by VMs that left and by big telemetry answers goes back to
   * the system (G-13), at most every 10 s. */
  if (now - d->last_trim_us >= 10 * G_USEC_PER_SEC) {
    d->last_trim_us = now;
    malloc_trim (0);
  }
  return G_SOURCE_CONTINUE;
}

void
fh_daemon_vm_source_changed (FhDaemon *d)
{
  GHashTableIter iter;
  gpointer value;

  g_hash_table_iter_init (&iter, d->vms);
  while (g_hash_table_iter_next (&iter, NULL, &value)) {
    vm_load_settings (d, value);
    vm_probe (d, value);
  }
  queue_full (d);
}

void
fh_daemon_add_vm_source (FhDaemon *d, FhVmSource *source, gboolean first)
{
  if (first)
    g_ptr_array_insert (d->vm_sources, 0, source);
  else
    g_ptr_array_add (d->vm_sources, source);
  fh_daemon_vm_source_changed (d);
}

gboolean
fh_daemon_reload_vm_config (FhDaemon *d, const char *path, GError **error)
{
  g_autoptr (FhConfig) fresh = fh_config_new ();
  GHashTable *old;

  if (!fh_config_load (fresh, path, FALSE, error))
    return FALSE;
  old = d->config->vms;
  d->config->vms = fresh->vms;
  fresh->vms = old; /* freed with fresh */
  g_message ("reloaded %u VM sections from %s", g_hash_table_size (d->config->vms), path);
  fh_daemon_vm_source_changed (d);
  return TRUE;
}

/*
 * MR-4.  With perf_headroom=auto each vCPU takes the factor for the policy
 * covering its CPU (daemon_update()); the value here is the one for the
 * host's first policy, for the start-up log and `freqhintctl status`.
 */
static void
choose_headroom (FhDaemon *d)
{
  d->params.perf_as_floor = d->config->perf_as_floor;
  d->params.perf_only = d->config->perf_only;
  if (d->config->perf_headroom > 0) {
    d->headroom_auto = FALSE;
    d->params.perf_headroom = d->config->perf_headroom;
    d->headroom_reason = "configured";
  } else {
    d->headroom_auto = TRUE;
    d->params.perf_headroom = fh_merge_auto_headroom (d->backend->ops == &fh_backend_uclamp_ops,
                                                      fh_host_governor (d->host),
                                                      d->host->kernel_release, &d->headroom_reason);
  }
}

FhDaemon *
fh_daemon_new (FhConfig *config, GError **error)
{
  g_autoptr (FhConfig) owned = config;
  FhDaemon *d = g_new0 (FhDaemon, 1);

  d->config = g_steal_pointer (&owned);
  fh_paths_init (&d->paths, config->sysfs_root, config->proc_root, config->cgroup_root);
  d->host = fh_host_new ();
  d->vms = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) vm_free);
  d->vm_sources = g_ptr_array_new ();
  d->dirty_vms = g_ptr_array_new ();
  d->cg_events = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  d->dirty_cpus = g_array_new (FALSE, FALSE, sizeof (guint));
  d->need_full = TRUE;
  d->started_us = g_get_monotonic_time ();
  d->libvirt = fh_libvirt_view_new (config->libvirt_state_dir);
  d->host_vms = fh_host_vms_new ();
  d->host_vm_problems = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  if (!fh_host_load (d->host, &d->paths, error))
    goto fail;
  d->cpus = g_new0 (FhCpuDecision, MAX (d->host->n_cpus, 1));
  d->cpu_agg = g_new0 (FhCpuAgg, MAX (d->host->n_cpus, 1));
  d->cpu_flags = g_new0 (guint8, MAX (d->host->n_cpus, 1));
  d->cpu_members = g_new0 (GPtrArray *, MAX (d->host->n_cpus, 1));
  for (guint c = 0; c < d->host->n_cpus; c++)
    d->cpu_members[c] = g_ptr_array_new ();
  d->n_cpu_members = d->host->n_cpus;
  d->backend = fh_backend_new (config->backend, d->host, &d->paths, config->state_dir, error);
  if (!d->backend)
    goto fail;
  d->backend->min_write_interval_us =
      (gint64) config->cpufreq_min_write_interval_ms * G_TIME_SPAN_MILLISECOND;
  d->backend->quantum_khz = config->cpufreq_quantum_khz;
  fh_host_build_freq_classes (d->host, config->cpufreq_quantum_khz);
  g_ptr_array_add (d->vm_sources, fh_vm_source_config_new (config));
  choose_headroom (d);
  return d;
fail:
  fh_daemon_free (d);
  return NULL;
}

gboolean
fh_daemon_start (FhDaemon *d, GError **error)
{
  FhDeviceParams params = {
    .hello_timeout_ms = d->config->hello_timeout_ms,
    .keepalive_ms = d->config->keepalive_ms,
    .max_connections = d->config->max_connections,
    .max_per_process = d->config->max_connections_per_process,
    .max_per_uid = d->config->max_connections_per_uid,
    .max_prehello = d->config->max_prehello,
    .max_prehello_per_uid = d->config->max_prehello_per_uid,
    .max_prehello_per_group = d->config->max_prehello_per_group,
    .socket_mode = d->config->socket_mode,
    .relay_uid = d->config->relay_uid,
    .cur_freq = d->config->cur_freq_interval_ms > 0,
    .peer_allowed = peer_allowed,
  };
  static const FhDeviceCallbacks cb = {
    .hello = on_hello,
    .hints = on_hints,
    .vcpus = on_vcpus,
    .closed = on_closed,
    .rejected = on_rejected,
  };

  if (!fh_config_socket_gid (d->config, &params.socket_gid, error))
    return FALSE;
  if (!fh_backend_start (d->backend, error)) {
    g_prefix_error (error, "backend %s: ", d->backend->ops->name);
    return FALSE;
  }
  d->device = fh_device_server_new (d->config->socket_path, &params, &cb, d, error);
  if (!d->device)
    return FALSE;
  g_message ("listening on %s; backend %s; %u CPUs, %u cpufreq policies; system clamps %u..%u; "
             "perf headroom %.2f (%s)",
             d->config->socket_path, d->backend->ops->name, d->host->n_cpus, d->host->policies->len,
             d->host->sys.min, d->host->sys.max, d->params.perf_headroom, d->headroom_reason);
  {
    g_autoptr (GError) local = NULL;

    d->watch = fh_watch_new (&d->paths, on_cgroup_event, d, &local);
    if (!d->watch)
      g_warning ("%s: cgroup changes are noticed by the periodic re-scan only", local->message);
  }
  d->poll_timer = g_timeout_add (d->config->poll_interval_ms, poll_tick, d);
  /* MR-28: the VMs running already, device or not */
  host_vms_sync (d);
  daemon_update (d);
  return TRUE;
}

void
fh_daemon_stop (FhDaemon *d)
{
  g_clear_handle_id (&d->poll_timer, g_source_remove);
  g_clear_handle_id (&d->cg_events_idle, g_source_remove);
  g_clear_pointer (&d->device, fh_device_server_free);
  g_clear_handle_id (&d->update_idle, g_source_remove);
  /* Every VM is gone now: one last decision releases everything ... */
  daemon_update (d);
  /* ... and the backend puts back what it changed. */
  fh_backend_stop (d->backend);
}

void
fh_daemon_free (FhDaemon *d)
{
  if (!d)
    return;
  g_clear_handle_id (&d->poll_timer, g_source_remove);
  g_clear_handle_id (&d->cur_freq_timer, g_source_remove);
  g_free (d->policy_cur_khz);
  g_clear_handle_id (&d->update_idle, g_source_remove);
  g_clear_handle_id (&d->cg_events_idle, g_source_remove);
  g_clear_pointer (&d->device, fh_device_server_free);
  g_clear_pointer (&d->vms, g_hash_table_unref);
  for (guint i = 0; i < d->vm_sources->len; i++) {
    FhVmSource *s = g_ptr_array_index (d->vm_sources, i);

    s->free (s);
  }
  g_ptr_array_unref (d->vm_sources);
  g_clear_pointer (&d->backend, fh_backend_free);
  g_clear_pointer (&d->host, fh_host_free);
  g_clear_pointer (&d->libvirt, fh_libvirt_view_free);
  g_clear_pointer (&d->host_vms, g_array_unref);
  g_clear_pointer (&d->host_vm_problems, g_hash_table_unref);
  g_clear_pointer (&d->watch, fh_watch_free);
  g_free (d->cpus);
  g_free (d->cpu_agg);
  g_free (d->cpu_flags);
  for (guint c = 0; d->cpu_members && c < d->n_cpu_members; c++)
    g_ptr_array_unref (d->cpu_members[c]);
  g_free (d->cpu_members);
  g_ptr_array_unref (d->dirty_vms);
  g_hash_table_unref (d->cg_events);
  g_array_unref (d->dirty_cpus);
  fh_paths_clear (&d->paths);
  fh_config_free (d->config);
  g_free (d);
}

static gint
cmp_vm (gconstpointer a, gconstpointer b)
{
  const FhVm *x = *(FhVm *const *) a, *y = *(FhVm *const *) b;
  int r = strcmp (x->name, y->name);

  return r ? r : strcmp (x->key, y->key);
}

GPtrArray *
fh_daemon_sorted_vms (FhDaemon *d)
{
  GPtrArray *out = g_ptr_array_new ();
  GHashTableIter iter;
  gpointer value;

  g_hash_table_iter_init (&iter, d->vms);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    g_ptr_array_add (out, value);
  g_ptr_array_sort (out, cmp_vm);
  return out;
}

FhVm *
fh_daemon_find_vm (FhDaemon *d, const char *name_or_uuid)
{
  g_autoptr (GPtrArray) vms = fh_daemon_sorted_vms (d);

  for (guint i = 0; i < vms->len; i++) {
    FhVm *vm = g_ptr_array_index (vms, i);

    if (strcmp (vm->name, name_or_uuid) == 0 || g_ascii_strcasecmp (vm->uuid, name_or_uuid) == 0 ||
        strcmp (vm->key, name_or_uuid) == 0)
      return vm;
  }
  return NULL;
}

guint64
fh_daemon_rejected_total (FhDaemon *d)
{
  guint64 n = 0;

  for (int i = 0; i <= FH_CLOSE_REASON_MAX; i++)
    n += d->rejected[i];
  return n;
}

FhVm *
fh_daemon_test_add_vm (FhDaemon *d, const char *name, const guint *tids, guint n_vcpus)
{
  g_autofree char *key = g_strdup_printf ("name:%s", name);
  FhVm *vm = vm_alloc (d, key, n_vcpus);

  g_strlcpy (vm->name, name, sizeof vm->name);
  g_strlcpy (vm->uuid, "00000000-0000-0000-0000-000000000000", sizeof vm->uuid);
  vm->pid = getpid ();
  d->n_host_vms++; /* no connection: vm_free() counts it out as one */
  for (guint i = 0; i < n_vcpus; i++) {
    vm->vcpus[i].index = i;
    vm->vcpus[i].tid = tids[i];
    vm->vcpus[i].cpu = -1;
    vm->vcpus[i].info.cpu = -1;
    vm->vcpus[i].agg_cpu = -1;
  }
  vm_load_settings (d, vm);
  vm_probe (d, vm);
  g_hash_table_replace (d->vms, vm->key, vm);
  d->need_full = TRUE;
  return vm;
}

void
fh_daemon_test_remove_vm (FhDaemon *d, FhVm *vm)
{
  g_hash_table_remove (d->vms, vm->key);
}

void
fh_daemon_test_host_sync (FhDaemon *d)
{
  host_vms_sync (d);
  g_clear_handle_id (&d->update_idle, g_source_remove);
}

const FhVm *
fh_daemon_cap_holder (FhDaemon *d, const guint *cpus, guint n_cpus)
{
  const FhVm *best = NULL;
  guint best_cap = 0;

  for (guint k = 0; k < n_cpus; k++) {
    GPtrArray *m;

    if (cpus[k] >= d->n_cpu_members)
      continue;
    m = d->cpu_members[cpus[k]];
    for (guint i = 0; i < m->len; i++) {
      const FhVcpu *v = g_ptr_array_index (m, i);
      /* the vCPU's VM: vcpus[] follows the FhVm in one allocation (vm_alloc()) */
      const FhVm *vm = (const FhVm *) (v - v->index) - 1;

      if (!v->agg_capped)
        continue;
      if (!best || v->agg_cap > best_cap ||
          (v->agg_cap == best_cap && strcmp (vm->name, best->name) < 0)) {
        best = vm;
        best_cap = v->agg_cap;
      }
    }
  }
  return best_cap < FH_SCALE ? best : NULL;
}

void
fh_daemon_test_hint (FhDaemon *d, FhVm *vm, guint vcpu, const FhGuestHint *hint)
{
  vm->vcpus[vcpu].hint = *hint;
  vm->vcpus[vcpu].hinted = TRUE;
  if (!vm->dirty) {
    vm->dirty = TRUE;
    g_ptr_array_add (d->dirty_vms, vm);
  }
}

void
fh_daemon_test_probe (FhDaemon *d, FhVm *vm)
{
  if (fh_host_refresh_sys (d->host, &d->paths))
    d->need_full = TRUE;
  vm_reprobe (d, vm);
  g_clear_handle_id (&d->update_idle, g_source_remove);
}

void
fh_daemon_test_pass (FhDaemon *d, gboolean full)
{
  if (full)
    d->need_full = TRUE;
  g_clear_handle_id (&d->update_idle, g_source_remove);
  daemon_pass (d);
}

static gboolean
same_cpu_decision (const FhCpuDecision *a, const FhCpuDecision *b)
{
  return a->active == b->active && a->floor == b->floor && a->ceiling == b->ceiling &&
         a->n_active == b->n_active && a->capped == b->capped && a->cap == b->cap;
}

/* The state a full recompute from scratch gives, with the engine's own (non-incremental) functions. */
gboolean
fh_daemon_test_verify (FhDaemon *d, char **why)
{
  g_autoptr (GArray) placed = g_array_new (FALSE, FALSE, sizeof (FhPlacedVcpu));
  g_autoptr (GArray) caps = g_array_new (FALSE, FALSE, sizeof (FhPlacedCap));
  g_autoptr (GPtrArray) vms = fh_daemon_sorted_vms (d);
  g_autofree FhCpuDecision *cpus = g_new0 (FhCpuDecision, MAX (d->host->n_cpus, 1));

  for (guint i = 0; i < vms->len; i++) {
    FhVm *vm = g_ptr_array_index (vms, i);

    for (guint j = 0; j < vm->num_vcpus; j++) {
      FhVcpu *v = &vm->vcpus[j];
      double h;
      FhVcpuDecision ref = vcpu_decision (d, vm, j, FALSE, &h);

      if (memcmp (&ref, &v->d, sizeof ref) != 0 || h != v->perf_headroom) {
        *why = g_strdup_printf ("VM %s vCPU %u: decision differs (eff %u..%u, want %u..%u)",
                                vm->name, j, v->d.eff.min, v->d.eff.max, ref.eff.min, ref.eff.max);
        return FALSE;
      }
      if (v->cpu >= 0) {
        FhPlacedVcpu p = { ref.active && v->tid_ok, ref.eff, (guint) v->cpu };
        FhPlacedCap c = { (guint) v->cpu, ref.cap };

        g_array_append_val (placed, p);
        if (v->tid_ok)
          g_array_append_val (caps, c);
      }
    }
  }
  fh_merge_aggregate_cpus ((const FhPlacedVcpu *) placed->data, placed->len, cpus,
                           d->host->n_cpus);
  fh_merge_cap_cpus ((const FhPlacedCap *) caps->data, caps->len, cpus, d->host->n_cpus);
  for (guint c = 0; c < d->host->n_cpus; c++)
    if (!same_cpu_decision (&cpus[c], &d->cpus[c])) {
      *why = g_strdup_printf ("CPU %u: %s %u..%u (%u active), want %s %u..%u (%u active)", c,
                              d->cpus[c].active ? "active" : "inactive", d->cpus[c].floor,
                              d->cpus[c].ceiling, d->cpus[c].n_active,
                              cpus[c].active ? "active" : "inactive", cpus[c].floor,
                              cpus[c].ceiling, cpus[c].n_active);
      return FALSE;
    }
  for (guint i = 0; i < d->host->policies->len; i++) {
    FhPolicy *p = g_ptr_array_index (d->host->policies, i);
    FhCpuDecision ref = fh_merge_aggregate_set (cpus, d->host->n_cpus,
                                                (const guint *) p->cpus->data, p->cpus->len);

    if (!same_cpu_decision (&ref, &p->decision)) {
      *why = g_strdup_printf ("policy%u: %u..%u, want %u..%u", p->id, p->decision.floor,
                              p->decision.ceiling, ref.floor, ref.ceiling);
      return FALSE;
    }
  }
  return TRUE;
}
