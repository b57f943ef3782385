/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The VMs the host itself knows of, device or not (merge rules MR-28):
 *
 *  - libvirt's running domains, from its own status files (fh-peer.h's
 *    FhLibvirtView): name, UUID, QEMU pid and, from <vcpus>, the thread of
 *    each vCPU;
 *  - [vm NAME] sections with pidfile= or unit=: a hypervisor libvirt does
 *    not run, whose vCPU threads are found by their names
 *    (fh_parse_vcpu_thread_name()).
 *
 * Neither source is anything a guest or its QEMU writes: libvirt's files are
 * root's, a pidfile must be its owner's and name a process of that owner,
 * and a thread counts only if it is a thread of that process.  The daemon
 * places and caps these threads as it does a connected VM's.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include "fh-config.h"
#include "fh-paths.h"

/* Bounds on what one scan reads (every resource bounded, threat model G-13). */
#define FH_HOST_VM_TASKS_MAX 4096    /* threads of one process looked at by name */
#define FH_HOST_VM_UNIT_PROCS_MAX 64 /* processes of one unit looked at */

typedef struct {
  char *key; /* the daemon's key: the UUID, or "name:NAME" for a config VM */
  char *name;
  char uuid[37]; /* nil for a config VM */
  pid_t pid;
  const char *source; /* "libvirt" or "config" */
  GArray *tids;       /* guint32 per vCPU index, 0: no thread; at least one non-zero */
  guint32 vsock_cid;  /* libvirt's <vsock><cid address>, or the config's vsock_cid; 0 none */
  char *vsock_path;   /* the config's hybrid socket, "<vsock_uds>_853"; NULL none */
} FhHostVm;

/* An array of FhHostVm that clears its elements. */
GArray *fh_host_vms_new (void);

/*
 * Replace vms' contents with what the host says runs now: domains
 * (FhLibvirtDomain*, may be NULL) whose process exists under the proc root,
 * then the config's VMs with pidfile= or unit=.  A config VM that cannot be
 * found is logged when the reason in problems (section name -> reason,
 * owned strings) changes, not on every scan.
 */
/*
 * The running VM a vsock peer is (spec/vsock-transport.md §5): the one
 * whose CID is cid, or (path non-NULL) whose hybrid socket is path.  NULL
 * when none, or when two claim it (a CID libvirt and the config both give).
 */
const FhHostVm *fh_host_vms_by_transport (const GArray *vms, guint32 cid, const char *path);

void fh_host_vms_scan (GArray *vms, GHashTable *problems, const FhPaths *paths,
                       const GPtrArray *domains, const FhConfig *config);
