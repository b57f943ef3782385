/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * freqhintd configuration: built-in defaults, then the GKeyFile
 * (freqhintd.conf), then command-line options.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include <freqhint/agent_protocol.h>

#include "fh-merge.h"

#define FH_DEFAULT_CONFIG SYSCONFDIR "/freqhint/freqhintd.conf"
#define FH_DEFAULT_SOCKET "/run/freqhint/device.sock"
#define FH_DEFAULT_CONTROL_SOCKET "/run/freqhint/control.sock"
#define FH_DEFAULT_STATE_DIR "/var/lib/freqhint"
#define FH_DEFAULT_METRICS_PORT 9484

typedef struct {
  char *key;    /* as written in "[vm KEY]": a name or a UUID */
  FhClamp op;   /* operator floor/ceiling, capacity units */
  GArray *cpus; /* guint per vCPU index: placement override; may be NULL */
  /* MR-28: the VM's process when it runs outside libvirt (at most one of them) */
  char *pidfile; /* absolute path of the pidfile its hypervisor writes */
  char *unit;    /* systemd service or scope holding it (system.slice or machine.slice) */
  /* vsock transport (spec/vsock-transport.md §5) for a VM libvirt does not run: */
  guint32 vsock_cid; /* its guest CID, 0 none */
  char *vsock_uds;   /* its hybrid vsock socket (Cloud Hypervisor, Firecracker); the
                      * front end listens on "<vsock_uds>_853" */
} FhVmConfig;

typedef struct {
  char *sysfs_root, *proc_root, *cgroup_root;
  char *backend; /* auto | none | cpufreq | uclamp */
  char *socket_path;
  guint socket_mode;
  char *socket_group; /* NULL: "freqhint" if that group exists, else our gid (PA-1) */
  char *control_socket_path;
  char *state_dir;
  char *metrics_address;
  int metrics_port; /* 0: ephemeral, -1: disabled */
  guint poll_interval_ms;
  /* The safety net: every VM's threads re-read once per interval, spread
   * over the poll ticks (0: 60 poll intervals). */
  guint rescan_interval_ms;
  guint keepalive_ms;
  guint hello_timeout_ms;
  guint max_connections;
  /* Resource bounds (threat model G-13): what one peer and all peers may hold. */
  guint max_connections_per_process; /* [daemon], 0: no limit */
  guint max_connections_per_uid;     /* [daemon], 0: no limit */
  guint max_prehello;                /* [daemon] connections waiting for HELLO (PA-4) */
  guint max_prehello_per_uid;        /* [daemon], 0: no limit */
  guint max_prehello_per_group;      /* [daemon] per process group, 0: no limit */
  guint max_vcpus;                   /* [daemon] vCPUs of all connected VMs together */
  guint control_max_clients;         /* [daemon] control_max_clients */
  guint control_timeout_ms;          /* [daemon] control_timeout_ms: request and answer */
  guint metrics_max_connections;     /* [metrics] max_connections */
  guint metrics_timeout_ms;          /* [metrics] timeout_ms: a request's headers and answer */
  GArray *allowed_uids; /* uid_t; root and our own uid are always allowed */
  GArray *allowed_gids; /* gid_t */
  gboolean check_thread_owner;
  char *libvirt_state_dir; /* [daemon] libvirt's QEMU status files (PA-22); "": not consulted */
  gboolean require_libvirt; /* [daemon] only a running libvirt domain's process may connect */
  /* [daemon] relay_user: the vsock front end's user, the one peer whose HELLO
   * may offer FH_F_RELAY (agent protocol 4.1a); (uid_t) -1: none */
  uid_t relay_uid;
  gboolean perf_as_floor;
  gboolean perf_only;
  double perf_headroom; /* < 0: auto */
  guint hold_ms;        /* [merge] hold_ms: a fall in the guest's request waits (MR-30) */
  guint cpufreq_min_write_interval_ms; /* [cpufreq] min_write_interval_ms */
  guint cpufreq_quantum_khz;           /* [cpufreq] quantum_khz, 0: off */
  guint cur_freq_interval_ms; /* [cpufreq] cur_freq_interval_ms: CUR_FREQ sampling, 0: off */
  GHashTable *vms;      /* key -> FhVmConfig */
  gboolean mirror_ceiling; /* [libvirt] mirror_ceiling: write ceilings to vcpuN groups (LM-12) */
} FhConfig;

FhConfig *fh_config_new (void);
void fh_config_free (FhConfig *config);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FhConfig, fh_config_free)

/* Load a key file over the defaults.  A missing file is fine when !required. */
gboolean fh_config_load (FhConfig *config, const char *path, gboolean required, GError **error);

/* MR-28: a systemd unit name a [vm] section's unit= may hold (one path component). */
gboolean fh_config_unit_name_valid (const char *unit);

/* The socket a VM's hybrid vsock guest reaches port 853 on: "<vsock_uds>_853", or NULL. */
char *fh_config_vsock_listen_path (const FhVmConfig *vm);
/* The [vm] section with this vsock CID, or whose hybrid socket is path; NULL none. */
const FhVmConfig *fh_config_vm_by_cid (const FhConfig *config, guint32 cid);
const FhVmConfig *fh_config_vm_by_vsock_path (const FhConfig *config, const char *path);

/* A VM's operator settings by name, then by UUID; NULL when none. */
const FhVmConfig *fh_config_lookup_vm (const FhConfig *config, const char *name, const char *uuid);

/* auto: the host decides (fh_backend_choose()); none, cpufreq, uclamp. */
#define FH_BACKEND_NAMES "auto, none, cpufreq, uclamp"
gboolean fh_config_backend_valid (const char *name);

/* freqhintd --check-config: report what the configuration selects; 0 valid, 1 host unreadable, 2 invalid. */
int fh_config_check (const FhConfig *config, const char *path);

/*
 * Root, our uid, allowed_uids, or a primary group in allowed_gids (PA-2).
 * Supplementary groups are the caller's (fh_listen_peer_in_groups()).
 */
gboolean fh_config_uid_allowed (const FhConfig *config, uid_t uid, gid_t gid);

/* The group the device socket and its directory get: socket_group, by name or number. */
gboolean fh_config_socket_gid (const FhConfig *config, gid_t *gid, GError **error);
