/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-config.h"

#include <grp.h>
#include <string.h>
#include <unistd.h>

#include "fh-parse.h"

static void
vm_config_free (FhVmConfig *vm)
{
  g_free (vm->key);
  g_clear_pointer (&vm->cpus, g_array_unref);
  g_free (vm);
}

FhConfig *
fh_config_new (void)
{
  FhConfig *c = g_new0 (FhConfig, 1);

  c->sysfs_root = g_strdup ("/sys");
  c->proc_root = g_strdup ("/proc");
  c->cgroup_root = g_strdup ("/sys/fs/cgroup");
  c->backend = g_strdup ("none");
  c->socket_path = g_strdup (FH_DEFAULT_SOCKET);
  c->socket_mode = 0660;
  c->control_socket_path = g_strdup (FH_DEFAULT_CONTROL_SOCKET);
  c->state_dir = g_strdup (FH_DEFAULT_STATE_DIR);
  c->metrics_address = g_strdup ("127.0.0.1");
  c->metrics_port = FH_DEFAULT_METRICS_PORT;
  c->poll_interval_ms = 1000;
  c->keepalive_ms = FH_KEEPALIVE_MS;
  c->hello_timeout_ms = FH_HELLO_TIMEOUT_MS;
  c->max_connections = 256;
  c->allowed_uids = g_array_new (FALSE, FALSE, sizeof (uid_t));
  c->allowed_gids = g_array_new (FALSE, FALSE, sizeof (gid_t));
  c->check_thread_owner = TRUE;
  c->perf_as_floor = TRUE;
  c->perf_headroom = -1;
  /* One write per policy per 50 ms at most: a governor's own time scale
   * (ondemand samples every 10..100 ms), long enough to coalesce a perf
   * walk, short next to a clamp a person or a tool set. */
  c->cpufreq_min_write_interval_ms = 50;
  /* 100 MHz: the P-state ratio step of intel_pstate and amd-pstate. */
  c->cpufreq_quantum_khz = 100000;
  c->vms = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) vm_config_free);
  return c;
}

void
fh_config_free (FhConfig *c)
{
  if (!c)
    return;
  g_free (c->sysfs_root);
  g_free (c->proc_root);
  g_free (c->cgroup_root);
  g_free (c->backend);
  g_free (c->socket_path);
  g_free (c->socket_group);
  g_free (c->control_socket_path);
  g_free (c->state_dir);
  g_free (c->metrics_address);
  g_array_unref (c->allowed_uids);
  g_array_unref (c->allowed_gids);
  g_hash_table_unref (c->vms);
  g_free (c);
}

static void
take_string (GKeyFile *kf, const char *group, const char *key, char **dst)
{
  g_autofree char *v = g_key_file_get_string (kf, group, key, NULL);

  if (v) {
    g_free (*dst);
    *dst = g_steal_pointer (&v);
  }
}

static gboolean
take_uint (GKeyFile *kf, const char *group, const char *key, guint min, guint max, guint *dst,
           GError **error)
{
  g_autoptr (GError) local = NULL;
  guint64 v;

  if (!g_key_file_has_key (kf, group, key, NULL))
    return TRUE;
  v = g_key_file_get_uint64 (kf, group, key, &local);
  if (local || v < min || v > max) {
    g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                 "[%s] %s must be an integer in %u..%u", group, key, min, max);
    return FALSE;
  }
  *dst = (guint) v;
  return TRUE;
}

static gboolean
take_ids (GKeyFile *kf, const char *key, GArray *dst, GError **error)
{
  g_autoptr (GError) local = NULL;
  gsize n = 0;
  g_auto (GStrv) list = g_key_file_get_string_list (kf, "daemon", key, &n, &local);

  if (!list)
    return TRUE;
  for (gsize i = 0; i < n; i++) {
    guint64 v;

    if (!g_ascii_string_to_unsigned (list[i], 10, 0, G_MAXUINT32 - 1, &v, NULL)) {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "[daemon] %s: \"%s\" is not a numeric id", key, list[i]);
      return FALSE;
    }
    guint32 id = (guint32) v;
    g_array_append_val (dst, id);
  }
  return TRUE;
}

/* Operator values are written like cgroup files: "max" or a percentage. */
static gboolean
take_percent (GKeyFile *kf, const char *group, const char *key, guint *dst, GError **error)
{
  g_autofree char *v = g_key_file_get_string (kf, group, key, NULL);
  g_autoptr (GError) local = NULL;

  if (!v)
    return TRUE;
  if (!fh_parse_uclamp (v, dst, &local)) {
    g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "[%s] %s: %s", group, key,
                 local->message);
    return FALSE;
  }
  return TRUE;
}

static gboolean
load_vm (FhConfig *c, GKeyFile *kf, const char *group, GError **error)
{
  FhVmConfig *vm = g_new0 (FhVmConfig, 1);
  g_autofree char *cpus = NULL;

  vm->key = g_strstrip (g_strdup (group + strlen ("vm ")));
  vm->op = FH_CLAMP_NONE;
  if (!take_percent (kf, group, "floor", &vm->op.min, error) ||
      !take_percent (kf, group, "ceiling", &vm->op.max, error))
    goto fail;
  if (vm->op.min > vm->op.max) {
    g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                 "[%s] floor is above ceiling", group);
    goto fail;
  }
  cpus = g_key_file_get_string (kf, group, "cpus", NULL);
  if (cpus) {
    g_auto (GStrv) list = g_strsplit (cpus, ",", -1);

    vm->cpus = g_array_new (FALSE, FALSE, sizeof (guint));
    for (char **p = list; *p; p++) {
      guint64 v;

      if (!g_ascii_string_to_unsigned (g_strstrip (*p), 10, 0, 4095, &v, NULL)) {
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                     "[%s] cpus: \"%s\" is not a CPU number", group, *p);
        goto fail;
      }
      guint cpu = (guint) v;
      g_array_append_val (vm->cpus, cpu);
    }
  }
  if (*vm->key == '\0') {
    g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                 "[%s] needs a VM name or UUID", group);
    goto fail;
  }
  g_hash_table_replace (c->vms, vm->key, vm);
  return TRUE;
fail:
  vm_config_free (vm);
  return FALSE;
}

gboolean
fh_config_load (FhConfig *c, const char *path, gboolean required, GError **error)
{
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_autoptr (GError) local = NULL;
  g_auto (GStrv) groups = NULL;
  g_autofree char *headroom = NULL;
  guint port;

  if (!g_key_file_load_from_file (kf, path, G_KEY_FILE_NONE, &local)) {
    if (!required && g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
      return TRUE;
    g_propagate_prefixed_error (error, g_steal_pointer (&local), "%s: ", path);
    return FALSE;
  }

  take_string (kf, "daemon", "sysfs_root", &c->sysfs_root);
  take_string (kf, "daemon", "proc_root", &c->proc_root);
  take_string (kf, "daemon", "cgroup_root", &c->cgroup_root);
  take_string (kf, "daemon", "backend", &c->backend);
  take_string (kf, "daemon", "socket", &c->socket_path);
  take_string (kf, "daemon", "socket_group", &c->socket_group);
  take_string (kf, "daemon", "control_socket", &c->control_socket_path);
  take_string (kf, "daemon", "state_dir", &c->state_dir);
  take_string (kf, "metrics", "address", &c->metrics_address);
  port = c->metrics_port < 0 ? 0 : (guint) c->metrics_port;
  if (!take_uint (kf, "metrics", "port", 0, 65535, &port, error) ||
      !take_uint (kf, "daemon", "poll_interval_ms", 50, 60000, &c->poll_interval_ms, error) ||
      !take_uint (kf, "daemon", "keepalive_ms", 100, 600000, &c->keepalive_ms, error) ||
      !take_uint (kf, "daemon", "hello_timeout_ms", 100, 600000, &c->hello_timeout_ms, error) ||
      !take_uint (kf, "daemon", "max_connections", 1, 4096, &c->max_connections, error) ||
      !take_uint (kf, "cpufreq", "min_write_interval_ms", 0, 10000,
                  &c->cpufreq_min_write_interval_ms, error) ||
      !take_uint (kf, "cpufreq", "quantum_khz", 0, 1000000, &c->cpufreq_quantum_khz, error) ||
      !take_ids (kf, "allowed_uids", c->allowed_uids, error) ||
      !take_ids (kf, "allowed_gids", c->allowed_gids, error))
    return FALSE;
  c->metrics_port = (int) port;
  {
    /* octal, like chmod(1) */
    g_autofree char *mode = g_key_file_get_string (kf, "daemon", "socket_mode", NULL);
    guint64 m;

    if (mode && !g_ascii_string_to_unsigned (g_strstrip (mode), 8, 0, 0777, &m, NULL)) {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "[daemon] socket_mode must be an octal mode like 0660");
      return FALSE;
    }
    if (mode)
      c->socket_mode = (guint) m;
  }
  if (g_key_file_has_key (kf, "metrics", "enabled", NULL) &&
      !g_key_file_get_boolean (kf, "metrics", "enabled", NULL))
    c->metrics_port = -1;
  if (g_key_file_has_key (kf, "libvirt", "mirror_ceiling", NULL))
    c->mirror_ceiling = g_key_file_get_boolean (kf, "libvirt", "mirror_ceiling", NULL);
  if (g_key_file_has_key (kf, "daemon", "check_thread_owner", NULL))
    c->check_thread_owner = g_key_file_get_boolean (kf, "daemon", "check_thread_owner", NULL);
  if (g_key_file_has_key (kf, "merge", "perf_as_floor", NULL))
    c->perf_as_floor = g_key_file_get_boolean (kf, "merge", "perf_as_floor", NULL);
  headroom = g_key_file_get_string (kf, "merge", "perf_headroom", NULL);
  if (headroom) {
    char *end = NULL;
    double h;

    g_strstrip (headroom);
    if (strcmp (headroom, "auto") == 0) {
      c->perf_headroom = -1;
    } else {
      h = g_ascii_strtod (headroom, &end);
      if (!end || *end || end == headroom || !(h >= 0.1 && h <= 2.0)) {
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                     "[merge] perf_headroom must be auto or a number from 0.1 to 2.0");
        return FALSE;
      }
      c->perf_headroom = h;
    }
  }

  groups = g_key_file_get_groups (kf, NULL);
  for (char **g = groups; *g; g++) {
    if (g_str_has_prefix (*g, "vm ")) {
      if (!load_vm (c, kf, *g, error))
        return FALSE;
    } else if (g_str_has_prefix (*g, "nova-flavor ")) {
      /* OpenStack flavor mappings: read by the libvirt watcher (libvirt/fh-nova.c). */
    } else if (strcmp (*g, "daemon") != 0 && strcmp (*g, "metrics") != 0 &&
               strcmp (*g, "merge") != 0 && strcmp (*g, "cpufreq") != 0) {
      g_warning ("%s: ignoring unknown section [%s]", path, *g);
    }
  }
  return TRUE;
}

const FhVmConfig *
fh_config_lookup_vm (const FhConfig *c, const char *name, const char *uuid)
{
  const FhVmConfig *vm = name && *name ? g_hash_table_lookup (c->vms, name) : NULL;

  if (!vm && uuid)
    vm = g_hash_table_lookup (c->vms, uuid);
  return vm;
}

gboolean
fh_config_uid_allowed (const FhConfig *c, uid_t uid, gid_t gid)
{
  if (uid == 0 || uid == geteuid ())
    return TRUE;
  for (guint i = 0; i < c->allowed_uids->len; i++)
    if (g_array_index (c->allowed_uids, uid_t, i) == uid)
      return TRUE;
  for (guint i = 0; i < c->allowed_gids->len; i++)
    if (g_array_index (c->allowed_gids, gid_t, i) == gid)
      return TRUE;
  return FALSE;
}

gboolean
fh_config_socket_gid (const FhConfig *c, gid_t *gid, GError **error)
{
  struct group *gr;
  guint64 n;

  if (!c->socket_group || !*c->socket_group) {
    /* The packaged default; a host without it keeps the sockets to our group. */
    gr = getgrnam ("freqhint");
    *gid = gr ? gr->gr_gid : getegid ();
    return TRUE;
  }
  gr = getgrnam (c->socket_group);
  if (gr) {
    *gid = gr->gr_gid;
    return TRUE;
  }
  if (g_ascii_string_to_unsigned (c->socket_group, 10, 0, G_MAXUINT32 - 1, &n, NULL)) {
    *gid = (gid_t) n;
    return TRUE;
  }
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "[daemon] socket_group: no group \"%s\"", c->socket_group);
  return FALSE;
}
