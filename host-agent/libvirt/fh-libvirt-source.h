/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An FhVmSource (fh-vm-source.h) fed by the libvirt watcher: the operator
 * floor/ceiling of a VM from its domain's freqhint metadata, and the
 * placement of vCPUs that libvirt pinned to one host CPU.
 *
 * The source owns its watcher.  lookup() answers only for domains with a
 * freqhint element, so a VM without one falls through to the next source
 * (the config file) and then to the defaults; a VM whose element is invalid
 * gets the defaults (floor 0, ceiling max), spec/libvirt-metadata.md LM-7.  Whenever a domain's
 * settings or pinning change, or it stops, changed(data) is called; the
 * daemon passes fh_daemon_vm_source_changed.
 */
#pragma once

#include "fh-libvirt-watcher.h"
#include "fh-vm-source.h"

typedef void (*FhLibvirtSourceChanged) (gpointer data);

/* uri NULL: qemu:///system.  Starts the watcher (never fails: libvirt may come later). */
FhVmSource *fh_libvirt_source_new (const char *uri, FhLibvirtSourceChanged changed, gpointer data);

/*
 * The domain's whole metadata (guest-hints, per-vCPU overrides) by UUID,
 * then by name; NULL when the domain has no valid element.  Borrowed:
 * valid until the next main loop iteration.
 */
const FhMetadata *fh_libvirt_source_get_metadata (FhVmSource *source, const char *name,
                                                  const char *uuid);

/* Nova flavor mappings (fh-nova.h); re-judges running domains. */
void fh_libvirt_source_set_nova_flavors (FhVmSource *source, GHashTable *flavors);

/* For tests and telemetry. */
FhLibvirtWatcher *fh_libvirt_source_get_watcher (FhVmSource *source);
