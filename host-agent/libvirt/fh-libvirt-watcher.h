/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Follows libvirt's running domains: their freqhint metadata
 * (spec/libvirt-metadata.md), their lifecycle, and where their vCPUs may
 * run.  Events are dispatched by the GLib main loop (libvirt-glib).
 *
 * The watcher never fails to start: without libvirt (no daemon, no
 * socket) it retries in the background with backoff, and when libvirtd
 * goes away it reconnects the same way and re-reads every running domain.
 * Domains are forgotten only when libvirt says they stopped (or, after a
 * reconnect, are no longer running) -- never because libvirtd restarted.
 *
 * The agent learns everything through FhLibvirtCallbacks; callbacks run
 * on the main loop and are only called when something changed.
 */
#pragma once

#include <glib.h>

#include "fh-metadata.h"

#define FH_LIBVIRT_DEFAULT_URI "qemu:///system"

typedef struct _FhLibvirtWatcher FhLibvirtWatcher;

typedef struct {
  guint id;         /* vCPU index, as in the device's records */
  gint cpu;         /* host CPU it runs on now, -1 unknown */
  gint pinned_cpu;  /* the one host CPU it may run on; -1 when several (or unknown) */
  GArray *affinity; /* guint host CPUs it may run on; empty when unknown */
} FhLibvirtVcpu;

typedef struct {
  /*
   * A running domain's operator settings.  md is NULL when the domain has
   * no freqhint element or an invalid one: the VM gets the defaults (floor
   * 0, ceiling max, guest hints on).  problem is NULL, or why the element
   * was ignored (already logged with the domain's name).
   */
  void (*domain_limits) (const char *uuid, const char *name, const FhMetadata *md,
                         const char *problem, gpointer data);
  /* The domain stopped (destroyed, shut down, crashed) or vanished while disconnected. */
  void (*domain_gone) (const char *uuid, const char *name, gpointer data);
  /* vCPU placement; on start, on reconnect and on vcpupin changes. */
  void (*vcpu_placement) (const char *uuid, const char *name, const FhLibvirtVcpu *vcpus,
                          guint n_vcpus, gpointer data);
  /* Connection state changed (optional). */
  void (*connection) (gboolean connected, gpointer data);
} FhLibvirtCallbacks;

/* uri NULL: FH_LIBVIRT_DEFAULT_URI.  callbacks is copied; members may be NULL. */
FhLibvirtWatcher *fh_libvirt_watcher_new (const char *uri, const FhLibvirtCallbacks *callbacks,
                                          gpointer data);
/* Connect now if libvirt is there, otherwise keep trying in the background. */
void fh_libvirt_watcher_start (FhLibvirtWatcher *w);
gboolean fh_libvirt_watcher_is_connected (FhLibvirtWatcher *w);
const char *fh_libvirt_watcher_get_uri (FhLibvirtWatcher *w);
/*
 * Nova flavor name -> FhMetadata* (fh-nova.h) for domains without a
 * freqhint element; referenced, not copied.  Set before start.
 */
void fh_libvirt_watcher_set_nova_flavors (FhLibvirtWatcher *w, GHashTable *flavors);
/* Backoff bounds for reconnecting, ms (defaults 500 and 30000); for tests. */
void fh_libvirt_watcher_set_backoff (FhLibvirtWatcher *w, guint min_ms, guint max_ms);
void fh_libvirt_watcher_free (FhLibvirtWatcher *w);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FhLibvirtWatcher, fh_libvirt_watcher_free)
