/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where a VM's operator floor/ceiling (and placement override) come from.
 *
 * Today: the config file's [vm NAME-or-UUID] sections.  Later: libvirt
 * domain metadata, live.  The daemon asks its sources in order, the first
 * that knows the VM wins; a source that learns of a change calls
 * fh_daemon_vm_source_changed() so the daemon asks again.
 */
#pragma once

#include <glib.h>

#include "fh-merge.h"

typedef struct _FhVmSource FhVmSource;

typedef struct {
  FhClamp op;             /* operator floor/ceiling, capacity units */
  GArray *cpus;           /* guint per vCPU index, placement override; NULL: none */
  GArray *vcpu_op;        /* FhClamp per vCPU index, overriding op; NULL: op for all */
  gboolean ignore_hints;  /* the guest's records count as "no hint" (libvirt LM-9) */
} FhVmSettings;

struct _FhVmSource {
  const char *name;
  /* Fill *out (cpus owned by the caller) and return TRUE if the VM is known. */
  gboolean (*lookup) (FhVmSource *self, const char *name, const char *uuid, FhVmSettings *out);
  void (*free) (FhVmSource *self);
  /*
   * Optional, for sources behind a connection (libvirt): whether it is up
   * now, and *uri (borrowed) what it connects to.  Telemetry only.
   */
  gboolean (*connection) (FhVmSource *self, const char **uri);
  gpointer priv;
};

/* The config-file source; config must outlive it. */
FhVmSource *fh_vm_source_config_new (const void *config /* const FhConfig * */);

static inline void
fh_vm_settings_clear (FhVmSettings *s)
{
  g_clear_pointer (&s->cpus, g_array_unref);
  g_clear_pointer (&s->vcpu_op, g_array_unref);
}
