/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-backend.h"

#include <string.h>

const FhBackendOps fh_backend_none_ops = {
  .name = "none",
};

FhBackend *
fh_backend_new (const char *name, FhHost *host, const FhPaths *paths, const char *state_dir,
                GError **error)
{
  static const FhBackendOps *const all[] = {
    &fh_backend_none_ops,
    &fh_backend_cpufreq_ops,
    &fh_backend_uclamp_ops,
  };
  FhBackend *b;

  for (gsize i = 0; i < G_N_ELEMENTS (all); i++) {
    if (strcmp (all[i]->name, name) != 0)
      continue;
    b = g_new0 (FhBackend, 1);
    b->ops = all[i];
    b->host = host;
    b->paths = paths;
    b->state_dir = g_strdup (state_dir);
    return b;
  }
  g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
               "unknown backend \"%s\" (none, cpufreq, uclamp)", name);
  return NULL;
}

void
fh_backend_free (FhBackend *self)
{
  if (!self)
    return;
  if (self->ops->free_priv)
    self->ops->free_priv (self);
  g_free (self->state_dir);
  g_free (self);
}
