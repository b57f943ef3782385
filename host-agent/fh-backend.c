/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-backend.h"

#include <string.h>
#include <unistd.h>

#include "fh-config.h"

const FhBackendOps fh_backend_none_ops = {
  .name = "none",
};

/*
 * backend=auto: what the host offers.  cpufreq when the sysfs root has
 * policies whose limits we may write, else uclamp when the kernel has
 * CONFIG_UCLAMP_TASK (it then has the sched_util_clamp_* sysctls), else
 * none.  cpufreq first: it works for pinned vCPUs on any kernel and is the
 * one the operator can read back in sysfs.
 */
const char *
fh_backend_choose (const FhHost *host, const FhPaths *paths, char **reason)
{
  guint writable = 0;
  g_autofree char *sysctl = fh_path (paths, FH_ROOT_PROC, "sys/kernel/sched_util_clamp_min");

  for (guint i = 0; i < host->policies->len; i++) {
    const FhPolicy *p = g_ptr_array_index (host->policies, i);
    g_autofree char *min = fh_path (paths, FH_ROOT_SYSFS,
                                    "devices/system/cpu/cpufreq/policy%u/scaling_min_freq", p->id);
    g_autofree char *max = fh_path (paths, FH_ROOT_SYSFS,
                                    "devices/system/cpu/cpufreq/policy%u/scaling_max_freq", p->id);

    if (access (min, W_OK) == 0 && access (max, W_OK) == 0)
      writable++;
  }
  if (writable > 0) {
    *reason = g_strdup_printf ("%u of %u cpufreq policies under %s have writable limits", writable,
                               host->policies->len, paths->sysfs);
    return "cpufreq";
  }
  if (g_file_test (sysctl, G_FILE_TEST_EXISTS)) {
    *reason = g_strdup_printf ("no writable cpufreq policy under %s; the kernel has uclamp (%s)",
                               paths->sysfs, sysctl);
    return "uclamp";
  }
  *reason = g_strdup_printf ("no writable cpufreq policy under %s and no uclamp in the kernel (no "
                             "%s): deciding and reporting only",
                             paths->sysfs, sysctl);
  return "none";
}

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

  if (g_strcmp0 (name, "auto") == 0) {
    g_autofree char *reason = NULL;

    name = fh_backend_choose (host, paths, &reason);
    g_message ("backend auto: %s (%s)", name, reason);
  }
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
               "unknown backend \"%s\" (%s)", name, FH_BACKEND_NAMES);
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
