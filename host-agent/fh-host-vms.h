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
#define FH_HOST_VM_TASKS_MAX 4096 /* threads of one process looked at by name */
#define FH_HOST_VM_UNIT_PROCS_MAX 64 /* processes of one unit looked at */

typedef struct {
  char *key;  /* the daemon's key: the UUID, or "name:NAME" for a config VM */
  char *name;
  char uuid[37]; /* nil for a config VM */
  pid_t pid;
  const char *source; /* "libvirt" or "config" */
  GArray *tids;       /* guint32 per vCPU index, 0: no thread; at least one non-zero */
} FhHostVm;

void fh_host_vm_free (FhHostVm *vm);

typedef struct _FhHostVms FhHostVms;

FhHostVms *fh_host_vms_new (void);
void fh_host_vms_free (FhHostVms *hv);

/*
 * Read what the host says runs now: domains (FhLibvirtDomain*, may be NULL)
 * whose process exists under the proc root, then the config's VMs with
 * pidfile= or unit=.  A config VM that cannot be found is logged when the
 * reason changes, not on every scan.  Returns FhHostVm* (owned by hv, valid
 * until the next scan).
 */
const GPtrArray *fh_host_vms_scan (FhHostVms *hv, const FhPaths *paths, const GPtrArray *domains,
                                   const FhConfig *config);
