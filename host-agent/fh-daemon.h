/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * freqhintd's state: VMs, their vCPUs, the host, and the loop that turns
 * inputs into decisions and decisions into actuation.  Telemetry (control
 * socket, metrics) reads these structures; it never writes them.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include "fh-backend.h"
#include "fh-config.h"
#include "fh-device.h"
#include "fh-host.h"
#include "fh-merge.h"
#include "fh-paths.h"
#include "fh-vm-source.h"

typedef struct _FhDaemon FhDaemon;

/*
 * One per connected vCPU, 16 000 of them at 1000 VMs: packed, widest
 * members first, flags as bits and clamps in 16 bits (issue 29, item 7:
 * memory per VM).
 */
typedef struct {
  FhThreadInfo info;    /* host view of the thread */
  FhGuestHint hint;     /* latest record; flags 0 = no hint */
  FhVcpuDecision d;
  guint32 tid;          /* from HELLO; 0 when QEMU did not know it */
  double perf_headroom; /* the factor used for this vCPU (MR-4) */
  guint32 seq;
  gint32 cpu;           /* placement used, -1 unknown */
  /* Where the vCPU counts in the per-CPU aggregation now (daemon_update()):
   * the CPU whose member list holds it (-1 none), its index there, and the
   * contribution it made. */
  gint32 agg_cpu;
  guint32 agg_slot;
  FhClamp agg_eff;
  guint16 agg_cap;
  guint16 index;
  guint8 freq_class; /* PA-18: host frequency class, or VIRTIO_FREQHINT_NO_FREQ_CLASS */
  guint hinted : 1;  /* at least one record seen */
  guint tid_ok : 1;  /* thread exists and belongs to the VM's process */
  guint placed_by_config : 1;
  guint agg_active : 1;
  guint agg_capped : 1; /* its cap counts there (MR-27): the thread is the VM's */
  guint busy : 1;       /* MR-29: the thread ran FH_HOST_BUSY_PERCENT of the last window */
  guint run_sampled : 1; /* run_ns/run_at_us hold a sample */
  guint64 run_ns;        /* MR-29: the thread's run time at run_at_us */
  gint64 run_at_us;
} FhVcpu;

typedef struct {
  FhDaemon *daemon;
  FhConn *conn; /* NULL: known from the host only (MR-28) */
  /* MR-28: which host record knows the VM ("libvirt", "config"), NULL none:
   * with conn, the state source is both; without, the host view alone */
  const char *host_source;
  char *key; /* identity: UUID, or name/pid for a nil UUID */
  char uuid[37];
  char name[FH_NAME_MAX];
  pid_t pid;
  uid_t uid;
  guint num_vcpus;
  guint32 features;
  FhVcpu *vcpus;
  FhVmSettings settings;
  const char *settings_source; /* NULL: defaults */
  gint64 connected_realtime_us; /* or, without conn, when the host view found it */
  guint64 hints_frames;
  guint64 hints_records;
  guint64 grants_hash; /* of the GRANTS frame last sent */
  gboolean grants_sent;
  guint64 grants_frames;
  guint64 host_freq_hash; /* PA-18: of the HOST_FREQ frame last sent */
  gboolean host_freq_sent;
  guint64 host_freq_frames;
  guint64 cur_freq_hash; /* PA-26: of the CUR_FREQ frame last sent */
  gboolean cur_freq_sent;
  guint64 cur_freq_frames;
  guint64 vcpus_frames; /* PA-19: VCPUS applied */
  gboolean dirty;        /* in daemon->dirty_vms: its vCPUs are decided again */
  gint64 decided_us;     /* when its vCPUs were last decided (MR-30's clock) */
  /* MR-30: one per vCPU while a hold is in force in the VM, else NULL
   * (what is in force then is what is asked, v->d) */
  FhHold *holds;
  guint hold_timer;      /* decides it again when a hold lapses */
  gint64 hold_due_us;
  gint64 next_probe_us;  /* the safety net's next re-read of its threads */
  FhPollerWatch *exit_watch; /* the peer's pidfd in the device server's poller */
  /* How the guest's hints arrive: 0 a device (QEMU), else enum fh_relay_transport
   * through the vsock front end, from this CID or hybrid socket (4.1a) */
  guint16 relay_transport;
  guint32 relay_cid;
  char *relay_path;
} FhVm;

typedef void (*FhDaemonNotify) (FhDaemon *daemon, gpointer data);

struct _FhDaemon {
  FhConfig *config; /* owned */
  FhPaths paths;
  FhHost *host;
  FhBackend *backend;
  FhDeviceServer *device;
  GPtrArray *vm_sources; /* FhVmSource* */
  GHashTable *vms;       /* key -> FhVm* */
  FhCpuDecision *cpus;   /* host->n_cpus */
  /* Incremental decisions: per CPU the vCPUs placed there (FhVcpu*) and
   * their aggregate; the VMs whose vCPUs changed since the last pass; a
   * host-wide change (need_full) decides everything again. */
  FhCpuAgg *cpu_agg;
  GPtrArray **cpu_members;
  guint n_cpu_members;
  guint8 *cpu_flags;
  GArray *dirty_cpus;   /* guint */
  GPtrArray *dirty_vms; /* FhVm* */
  gboolean need_full;
  guint64 full_passes_total;
  struct _FhWatch *watch; /* inotify on the vCPUs' cgroup directories */
  GHashTable *cg_events;  /* directories with events since the last idle */
  guint cg_events_idle;
  gint64 next_sys_us;
  FhMergeParams params;
  gboolean headroom_auto;
  const char *headroom_reason;
  guint poll_timer;
  GHashTable *cg_cache; /* during a poll: cgroup levels read once */
  guint update_idle;
  gint64 last_update_us;
  gint64 started_us;
  /* counters */
  guint64 rejected[FH_CLOSE_REASON_MAX + 1];
  guint64 vm_connections_total;
  guint64 hints_frames_total;
  guint64 updates_total;
  /* the latest decision pass and the longest since start, in µs of CPU time (bench/) */
  gint64 last_pass_us;
  gint64 max_pass_us;
  guint64 identity_rejected; /* HELLO/thread ids not matching the peer process (PA-20..PA-22) */
  guint64 relay_refused;     /* relay HELLOs whose CID or socket is no running VM's (4.1a) */
  guint64 relay_unmapped;    /* relayed VMs closed because their CID no longer maps to them */
  struct _FhLibvirtView *libvirt; /* libvirt's running domains (PA-22, MR-28) */
  GArray *host_vms;               /* FhHostVm: the host's last word on what runs (MR-28) */
  GHashTable *host_vm_problems;   /* [vm] section -> why it was not found, logged once */
  gboolean libvirt_view_failed;   /* logged once until it works again */
  guint n_host_vms;               /* VMs without a connection, known from the host (MR-28) */
  guint64 host_vms_found_total;   /* such VMs found (a replaced one counts again) */
  guint n_vcpus;             /* of all connected VMs (max_vcpus) */
  gint64 last_trim_us;
  int metrics_port; /* -1: disabled; set by main for telemetry */
  /* 4.4c: scaling_cur_freq sampling, while a VM accepted FH_F_CUR_FREQ */
  guint cur_freq_timer;
  guint *policy_cur_khz; /* host->policies->len: the latest sample, 0 unknown */
  /* called after every update (freqhintd: LM-12 ceiling mirroring) */
  FhDaemonNotify notify;
  gpointer notify_data;
};

/* Takes ownership of config. */
FhDaemon *fh_daemon_new (FhConfig *config, GError **error);
/* Opens the device socket and starts polling. */
gboolean fh_daemon_start (FhDaemon *daemon, GError **error);
/* Disconnects every VM and restores what the backend changed. */
void fh_daemon_stop (FhDaemon *daemon);
void fh_daemon_free (FhDaemon *daemon);

/*
 * Add a source of operator settings (the libvirt watcher).  Sources are
 * asked in order; first=TRUE puts this one before the config file.  The
 * daemon owns it from now on.
 */
void fh_daemon_add_vm_source (FhDaemon *daemon, FhVmSource *source, gboolean first);

/* Something about VM settings changed in a source: re-read for every VM. */
void fh_daemon_vm_source_changed (FhDaemon *daemon);

/*
 * Re-read the [vm ...] sections of a config file (SIGHUP).  Other settings
 * need a restart.  On error nothing changes.
 */
gboolean fh_daemon_reload_vm_config (FhDaemon *daemon, const char *path, GError **error);

/* Sorted views for telemetry (arrays of borrowed pointers). */
GPtrArray *fh_daemon_sorted_vms (FhDaemon *daemon);
FhVm *fh_daemon_find_vm (FhDaemon *daemon, const char *name_or_uuid);
guint64 fh_daemon_rejected_total (FhDaemon *daemon);
/* PA-21: FALSE (PERMISSION) unless each non-zero tid is a thread of the pinned peer. */
gboolean fh_daemon_check_peer_tids (FhDaemon *daemon, FhConn *conn, const uint32_t *tids, guint n,
                                    FhError *err);
const char *fh_vcpu_state (const FhVcpu *v);
/* MR-30: some value of its request was held at the VM's last decision */
gboolean fh_vcpu_held (const FhVm *vm, const FhVcpu *v);
/* MR-28: where a VM's state comes from: "guest" (device only), "host", "both". */
const char *fh_vm_state_source (const FhVm *vm);
/* "device", "vsock", "hybrid", or "none" for a VM without a connection. */
const char *fh_vm_transport (const FhVm *vm);
/* MR-29: what made the vCPU active: "guest", "host", or NULL (inactive). */
const char *fh_vcpu_activity_source (const FhVm *vm, const FhVcpu *v);
/* MR-27: the VM whose ceiling holds the cap over these CPUs (the first by name
 * among those whose cap is the highest placed there), NULL when uncapped. */
const FhVm *fh_daemon_cap_holder (FhDaemon *daemon, const guint *cpus, guint n_cpus);

/*
 * Tests (and bench/fh-bench-decide.c): a VM without a connection (name, n_vcpus thread ids), a hint on one
 * of its vCPUs, a pass (full or what is dirty), and a check that the state
 * is what a full recompute from scratch gives (FALSE and *why otherwise).
 */
FhVm *fh_daemon_test_add_vm (FhDaemon *daemon, const char *name, const guint *tids, guint n_vcpus);
void fh_daemon_test_remove_vm (FhDaemon *daemon, FhVm *vm);
/* MR-28: re-read the host's VMs now, as the poll tick does. */
void fh_daemon_test_host_sync (FhDaemon *daemon);
void fh_daemon_test_hint (FhDaemon *daemon, FhVm *vm, guint vcpu, const FhGuestHint *hint);
/* Re-read the VM's threads as the safety net does (placement, cgroups). */
void fh_daemon_test_probe (FhDaemon *daemon, FhVm *vm);
void fh_daemon_test_pass (FhDaemon *daemon, gboolean full);
gboolean fh_daemon_test_verify (FhDaemon *daemon, char **why);
