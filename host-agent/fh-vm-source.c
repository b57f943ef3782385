/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fh-vm-source.h"

#include "fh-config.h"

static gboolean
config_lookup (FhVmSource *self, const char *name, const char *uuid, FhVmSettings *out)
{
  const FhVmConfig *vm = fh_config_lookup_vm (self->priv, name, uuid);

  if (!vm)
    return FALSE;
  out->op = vm->op;
  out->cpus = vm->cpus ? g_array_copy (vm->cpus) : NULL;
  return TRUE;
}

static void
config_free (FhVmSource *self)
{
  g_free (self);
}

FhVmSource *
fh_vm_source_config_new (const void *config)
{
  FhVmSource *s = g_new0 (FhVmSource, 1);

  s->name = "config";
  s->lookup = config_lookup;
  s->free = config_free;
  s->priv = (gpointer) config;
  return s;
}
