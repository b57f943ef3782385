/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-config.h"

#include <linux/freqhint_vsock.h>

#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include "fh-backend.h"
#include "fh-parse.h"

static void
vm_config_free (FhVmConfig *vm)
{
  g_free (vm->key);
  g_clear_pointer (&vm->cpus, g_array_unref);
  g_free (vm->pidfile);
  g_free (vm->unit);
  g_free (vm->vsock_uds);
  g_free (vm);
}

FhConfig *
fh_config_new (void)
{
  FhConfig *c = g_new0 (FhConfig, 1);

  c->sysfs_root = g_strdup ("/sys");
  c->proc_root = g_strdup ("/proc");
  c->cgroup_root = g_strdup ("/sys/fs/cgroup");
  c->backend = g_strdup ("auto");
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
  c->max_connections_per_process = 4;
  c->max_connections_per_uid = 0;
  c->max_prehello = 64;
  c->max_prehello_per_uid = 32;
  c->max_prehello_per_group = 8;
  c->max_vcpus = 16384;
  c->control_max_clients = 16;
  c->control_timeout_ms = 5000;
  c->metrics_max_connections = 16;
  c->metrics_timeout_ms = 3000;
  c->allowed_uids = g_array_new (FALSE, FALSE, sizeof (uid_t));
  c->allowed_gids = g_array_new (FALSE, FALSE, sizeof (gid_t));
  c->check_thread_owner = TRUE;
  c->relay_uid = (uid_t) -1;
  /* MR-27: where the host has the files, the kernel holds the ceiling too */
  c->mirror_ceiling = TRUE;
  c->libvirt_state_dir = g_strdup ("/run/libvirt/qemu");
  c->perf_as_floor = TRUE;
  c->perf_only = FALSE;
  c->hold_ms = 50;
  c->perf_headroom = -1;
  /* One write per policy per 50 ms at most: a governor's own time scale
   * (ondemand samples every 10..100 ms), long enough to coalesce a perf
   * walk, short next to a clamp a person or a tool set. */
  c->cpufreq_min_write_interval_ms = 50;
  /* 100 MHz: the P-state ratio step of intel_pstate and amd-pstate. */
  c->cpufreq_quantum_khz = 100000;
  /* 4.4c: ten samples a second, a governor's own time scale. */
  c->cur_freq_interval_ms = 100;
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
  g_free (c->libvirt_state_dir);
  g_free (c->metrics_address);
  g_array_unref (c->allowed_uids);
  g_array_unref (c->allowed_gids);
  g_hash_table_unref (c->vms);
  g_free (c);
}

/*
 * Every key freqhintd knows, by section.  Anything else is an error that
 * names file, line and key: a misspelled key must not be ignored (a typo
 * in backend= would leave the daemon doing nothing, silently).
 */
static const char *const daemon_keys[] = {
  "sysfs_root", "proc_root", "cgroup_root", "backend", "socket", "socket_mode", "socket_group",
  "control_socket", "state_dir", "poll_interval_ms", "rescan_interval_ms", "keepalive_ms", "hello_timeout_ms",
  "max_connections", "max_connections_per_process", "max_connections_per_uid", "max_prehello",
  "max_prehello_per_uid", "max_prehello_per_group", "max_vcpus",
  "control_max_clients", "control_timeout_ms", "allowed_uids", "allowed_gids",
  "check_thread_owner", "libvirt_state_dir", "require_libvirt", "relay_user", NULL,
};
static const char *const merge_keys[] = { "perf_as_floor", "perf_headroom", "perf_only", "hold_ms", NULL };
static const char *const cpufreq_keys[] = { "min_write_interval_ms", "quantum_khz",
                                             "cur_freq_interval_ms", NULL };
static const char *const libvirt_keys[] = { "mirror_ceiling", NULL };
static const char *const metrics_keys[] = {
  "enabled", "address", "port", "max_connections", "timeout_ms", NULL,
};
static const char *const vm_keys[] = { "floor",     "ceiling",   "cpus", "pidfile",
                                        "unit",      "vsock_cid", "vsock_uds", NULL };
/* OpenStack flavor mappings: values read by the libvirt watcher (libvirt/fh-nova.c). */
static const char *const nova_flavor_keys[] = { "floor", "ceiling", "guest-hints", NULL };

static const struct {
  const char *group; /* "vm " matches as a prefix */
  const char *const *keys;
} sections[] = {
  { "daemon", daemon_keys },   { "merge", merge_keys },     { "cpufreq", cpufreq_keys },
  { "libvirt", libvirt_keys }, { "metrics", metrics_keys }, { "vm ", vm_keys },
  { "nova-flavor ", nova_flavor_keys },
};

/* The file as read, to say on which line a key or section is. */
typedef struct {
  const char *path;
  char **lines;
} Src;

static gboolean
line_group (const char *l, const char *group)
{
  const char *end;

  if (*l != '[' || !(end = strrchr (l, ']')))
    return FALSE;
  return (gsize) (end - l - 1) == strlen (group) && strncmp (l + 1, group, end - l - 1) == 0;
}

/* 1-based line of [group] (key NULL) or of key in [group]; 0 when not found. */
static guint
src_line (const Src *src, const char *group, const char *key)
{
  gboolean in = FALSE;
  guint found = 0;

  if (!src->lines)
    return 0;
  for (guint i = 0; src->lines[i]; i++) {
    const char *l = src->lines[i];

    while (*l == ' ' || *l == '\t')
      l++;
    if (*l == '#' || *l == '\0')
      continue;
    if (*l == '[') {
      in = line_group (l, group);
      if (in && !key)
        return i + 1;
      continue;
    }
    if (in && key) {
      const char *eq = strchr (l, '=');
      gsize n = eq ? (gsize) (eq - l) : 0;

      while (n > 0 && (l[n - 1] == ' ' || l[n - 1] == '\t'))
        n--;
      if (eq && n == strlen (key) && strncmp (l, key, n) == 0)
        found = i + 1; /* GKeyFile keeps the last of duplicate keys */
    }
  }
  return found;
}

/* "FILE:LINE: [group] key: message" */
static void G_GNUC_PRINTF (5, 6)
cfg_error (GError **error, const Src *src, const char *group, const char *key, const char *fmt,
           ...)
{
  g_autofree char *msg = NULL;
  g_autofree char *where = NULL;
  guint line = src_line (src, group, key);
  va_list ap;

  va_start (ap, fmt);
  msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  where = line ? g_strdup_printf ("%s:%u", src->path, line) : g_strdup (src->path);
  if (key)
    g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "%s: [%s] %s: %s", where,
                 group, key, msg);
  else
    g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "%s: [%s]: %s", where,
                 group, msg);
}

/* The value as written, escaped for a message. */
static char *
raw_value (GKeyFile *kf, const char *group, const char *key)
{
  g_autofree char *v = g_key_file_get_value (kf, group, key, NULL);

  return g_strescape (v ? v : "", NULL);
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
take_uint (const Src *src, GKeyFile *kf, const char *group, const char *key, guint min, guint max,
           guint *dst, GError **error)
{
  g_autofree char *v = g_key_file_get_value (kf, group, key, NULL);
  guint64 n;

  if (!v)
    return TRUE;
  if (!g_ascii_string_to_unsigned (g_strstrip (v), 10, min, max, &n, NULL)) {
    g_autofree char *raw = raw_value (kf, group, key);

    cfg_error (error, src, group, key, "\"%s\" is not an integer in %u..%u", raw, min, max);
    return FALSE;
  }
  *dst = (guint) n;
  return TRUE;
}

/* GKeyFile's own rules: true/false (or 1/0); anything else is an error, never false. */
static gboolean
take_bool (const Src *src, GKeyFile *kf, const char *group, const char *key, gboolean *dst,
           GError **error)
{
  g_autoptr (GError) local = NULL;
  gboolean v;

  if (!g_key_file_has_key (kf, group, key, NULL))
    return TRUE;
  v = g_key_file_get_boolean (kf, group, key, &local);
  if (local) {
    g_autofree char *raw = raw_value (kf, group, key);

    cfg_error (error, src, group, key, "\"%s\" is not a boolean (true or false)", raw);
    return FALSE;
  }
  *dst = v;
  return TRUE;
}

static gboolean
take_ids (const Src *src, GKeyFile *kf, const char *key, GArray *dst, GError **error)
{
  g_autoptr (GError) local = NULL;
  gsize n = 0;
  g_auto (GStrv) list = g_key_file_get_string_list (kf, "daemon", key, &n, &local);

  if (!list)
    return TRUE;
  for (gsize i = 0; i < n; i++) {
    guint64 v;

    if (!g_ascii_string_to_unsigned (g_strstrip (list[i]), 10, 0, G_MAXUINT32 - 1, &v, NULL)) {
      g_autofree char *raw = g_strescape (list[i], NULL);

      cfg_error (error, src, "daemon", key, "\"%s\" is not a numeric id", raw);
      return FALSE;
    }
    guint32 id = (guint32) v;
    g_array_append_val (dst, id);
  }
  return TRUE;
}

/* relay_user=NAME or a numeric uid: the vsock front end's user. */
static gboolean
take_relay_user (const Src *src, GKeyFile *kf, FhConfig *c, GError **error)
{
  g_autofree char *user = g_key_file_get_string (kf, "daemon", "relay_user", NULL);
  struct passwd *pw;
  guint64 v;

  if (!user)
    return TRUE;
  g_strstrip (user);
  if (g_ascii_string_to_unsigned (user, 10, 0, G_MAXUINT32 - 1, &v, NULL)) {
    c->relay_uid = (uid_t) v;
  } else if ((pw = getpwnam (user))) {
    c->relay_uid = pw->pw_uid;
  } else {
    g_autofree char *raw = raw_value (kf, "daemon", "relay_user");

    cfg_error (error, src, "daemon", "relay_user", "\"%s\" is no user of this host", raw);
    return FALSE;
  }
  if (c->relay_uid == 0) {
    cfg_error (error, src, "daemon", "relay_user",
               "root: the front end that parses guest bytes must not run as root");
    return FALSE;
  }
  return TRUE;
}

/* Operator values are written like cgroup files: "max" or a percentage. */
static gboolean
take_percent (const Src *src, GKeyFile *kf, const char *group, const char *key, guint16 *dst,
              GError **error)
{
  g_autofree char *v = g_key_file_get_string (kf, group, key, NULL);
  g_autoptr (GError) local = NULL;
  guint value;

  if (!v)
    return TRUE;
  if (!fh_parse_uclamp (v, &value, &local)) {
    cfg_error (error, src, group, key, "%s", local->message);
    return FALSE;
  }
  *dst = (guint16) value; /* <= FH_SCALE */
  return TRUE;
}

/*
 * The vsock transport for a VM libvirt does not run: its CID, or its hybrid
 * socket, whose "_853" name must fit a sun_path.  Meaningful with pidfile=
 * or unit= (a CID maps only to a running VM).
 */
static gboolean
load_vm_vsock (const Src *src, GKeyFile *kf, const char *group, FhVmConfig *vm, GError **error)
{
  g_autofree char *cid = g_key_file_get_string (kf, group, "vsock_cid", NULL);
  guint64 v;

  /* 0 hypervisor, 2 host, 0xffffffff any: never a guest's own; 1 (local) is the
   * host's own loopback, a stand-in VM for tests */
  if (cid && (!g_ascii_string_to_unsigned (g_strstrip (cid), 10, 1, G_MAXUINT32 - 1, &v, NULL) ||
              v == 2)) {
    g_autofree char *raw = raw_value (kf, group, "vsock_cid");

    cfg_error (error, src, group, "vsock_cid",
               "\"%s\" is not a guest CID (3 to 4294967294; 1 for the host's own loopback)", raw);
    return FALSE;
  }
  vm->vsock_cid = cid ? (guint32) v : 0;
  take_string (kf, group, "vsock_uds", &vm->vsock_uds);
  if (vm->vsock_uds &&
      (!g_path_is_absolute (vm->vsock_uds) ||
       strlen (vm->vsock_uds) + sizeof "_853" > FH_RELAY_PATH_MAX)) {
    g_autofree char *raw = raw_value (kf, group, "vsock_uds");

    cfg_error (error, src, group, "vsock_uds",
               "\"%s\" is not an absolute path short enough for a socket (\"_853\" is added)",
               raw);
    return FALSE;
  }
  if ((vm->vsock_cid || vm->vsock_uds) && !vm->pidfile && !vm->unit) {
    cfg_error (error, src, group, vm->vsock_cid ? "vsock_cid" : "vsock_uds",
               "needs pidfile= or unit=: a guest is served only while its VM runs");
    return FALSE;
  }
  return TRUE;
}

/*
 * MR-28: pidfile= or unit= names the process of a VM that libvirt does not
 * run, so that its vCPU threads are found by name and capped without a
 * device connection.
 */
static gboolean
load_vm_process (const Src *src, GKeyFile *kf, const char *group, FhVmConfig *vm, GError **error)
{
  take_string (kf, group, "pidfile", &vm->pidfile);
  take_string (kf, group, "unit", &vm->unit);
  if (vm->pidfile && vm->unit) {
    cfg_error (error, src, group, "unit", "a VM's process is named by pidfile= or unit=, not both");
    return FALSE;
  }
  if (vm->pidfile && !g_path_is_absolute (vm->pidfile)) {
    g_autofree char *raw = raw_value (kf, group, "pidfile");

    cfg_error (error, src, group, "pidfile", "\"%s\" is not an absolute path", raw);
    return FALSE;
  }
  if (!load_vm_vsock (src, kf, group, vm, error))
    return FALSE;
  if (vm->unit && !fh_config_unit_name_valid (vm->unit)) {
    g_autofree char *raw = raw_value (kf, group, "unit");

    cfg_error (error, src, group, "unit",
               "\"%s\" is not a systemd unit name ending in .service or .scope", raw);
    return FALSE;
  }
  return TRUE;
}

gboolean
fh_config_unit_name_valid (const char *unit)
{
  gsize n = strlen (unit);

  if (n == 0 || n > 255 ||
      !(g_str_has_suffix (unit, ".service") || g_str_has_suffix (unit, ".scope")))
    return FALSE;
  /* systemd's unit name characters: no '/', so the name is one directory */
  for (const char *p = unit; *p; p++)
    if (!g_ascii_isalnum (*p) && !strchr (":-_.\\@", *p))
      return FALSE;
  return unit[0] != '.';
}

static gboolean
load_vm (const Src *src, FhConfig *c, GKeyFile *kf, const char *group, GError **error)
{
  FhVmConfig *vm = g_new0 (FhVmConfig, 1);
  g_autofree char *cpus = NULL;

  vm->key = g_strstrip (g_strdup (group + strlen ("vm ")));
  vm->op = FH_CLAMP_NONE;
  if (*vm->key == '\0') {
    cfg_error (error, src, group, NULL, "needs a VM name or UUID");
    goto fail;
  }
  if (!take_percent (src, kf, group, "floor", &vm->op.min, error) ||
      !take_percent (src, kf, group, "ceiling", &vm->op.max, error))
    goto fail;
  if (vm->op.min > vm->op.max) {
    cfg_error (error, src, group, "floor", "floor is above ceiling");
    goto fail;
  }
  cpus = g_key_file_get_string (kf, group, "cpus", NULL);
  if (cpus) {
    g_auto (GStrv) list = g_strsplit (cpus, ",", -1);

    vm->cpus = g_array_new (FALSE, FALSE, sizeof (guint));
    for (char **p = list; *p; p++) {
      guint64 v;

      if (!g_ascii_string_to_unsigned (g_strstrip (*p), 10, 0, 4095, &v, NULL)) {
        g_autofree char *raw = g_strescape (*p, NULL);

        cfg_error (error, src, group, "cpus", "\"%s\" is not a CPU number", raw);
        goto fail;
      }
      guint cpu = (guint) v;
      g_array_append_val (vm->cpus, cpu);
    }
  }
  if (!load_vm_process (src, kf, group, vm, error))
    goto fail;
  {
    /* one VM per CID and per socket: the transport says which VM */
    const FhVmConfig *other = vm->vsock_cid ? fh_config_vm_by_cid (c, vm->vsock_cid) : NULL;
    g_autofree char *path = fh_config_vsock_listen_path (vm);

    if (!other && path)
      other = fh_config_vm_by_vsock_path (c, path);
    if (other && strcmp (other->key, vm->key) != 0) {
      g_autofree char *name = g_strescape (other->key, NULL);

      cfg_error (error, src, group, vm->vsock_cid && other->vsock_cid == vm->vsock_cid ? "vsock_cid" : "vsock_uds",
                 "already [vm %s]'s", name);
      goto fail;
    }
  }
  g_hash_table_replace (c->vms, vm->key, vm);
  return TRUE;
fail:
  vm_config_free (vm);
  return FALSE;
}

/* Unknown sections and keys are errors (file, line, name). */
static gboolean
check_known (const Src *src, GKeyFile *kf, GError **error)
{
  g_auto (GStrv) groups = g_key_file_get_groups (kf, NULL);

  for (char **g = groups; *g; g++) {
    const char *const *known = NULL;
    g_auto (GStrv) keys = NULL;

    for (gsize i = 0; i < G_N_ELEMENTS (sections) && !known; i++)
      if (g_str_has_suffix (sections[i].group, " ") ? g_str_has_prefix (*g, sections[i].group)
                                                    : strcmp (*g, sections[i].group) == 0)
        known = sections[i].keys;
    if (!known) {
      g_autofree char *name = g_strescape (*g, NULL);

      cfg_error (error, src, *g, NULL,
                 "unknown section \"%s\" (daemon, merge, cpufreq, libvirt, metrics, vm NAME, "
                 "nova-flavor NAME)",
                 name);
      return FALSE;
    }
    keys = g_key_file_get_keys (kf, *g, NULL, NULL);
    for (char **k = keys; keys && *k; k++) {
      if (!g_strv_contains (known, *k)) {
        g_autofree char *name = g_strescape (*k, NULL);
        guint line = src_line (src, *g, *k);

        if (line)
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                       "%s:%u: [%s] unknown key \"%s\"", src->path, line, *g, name);
        else
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                       "%s: [%s] unknown key \"%s\"", src->path, *g, name);
        return FALSE;
      }
    }
  }
  return TRUE;
}

gboolean
fh_config_load (FhConfig *c, const char *path, gboolean required, GError **error)
{
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_autoptr (GError) local = NULL;
  g_auto (GStrv) groups = NULL;
  g_auto (GStrv) lines = NULL;
  g_autofree char *headroom = NULL, *text = NULL;
  gsize len = 0;
  guint port;
  gboolean metrics_enabled = TRUE;
  Src src = { path, NULL };

  if (!g_file_get_contents (path, &text, &len, &local)) {
    if (!required && g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
      return TRUE;
    g_propagate_prefixed_error (error, g_steal_pointer (&local), "%s: ", path);
    return FALSE;
  }
  if (!g_key_file_load_from_data (kf, text, len, G_KEY_FILE_NONE, &local)) {
    g_propagate_prefixed_error (error, g_steal_pointer (&local), "%s: ", path);
    return FALSE;
  }
  lines = g_strsplit (text, "\n", -1);
  src.lines = lines;
  if (!check_known (&src, kf, error))
    return FALSE;

  take_string (kf, "daemon", "sysfs_root", &c->sysfs_root);
  take_string (kf, "daemon", "proc_root", &c->proc_root);
  take_string (kf, "daemon", "cgroup_root", &c->cgroup_root);
  take_string (kf, "daemon", "backend", &c->backend);
  if (!fh_config_backend_valid (c->backend)) {
    g_autofree char *raw = raw_value (kf, "daemon", "backend");

    cfg_error (error, &src, "daemon", "backend", "\"%s\" is not a backend (%s)", raw,
               FH_BACKEND_NAMES);
    return FALSE;
  }
  take_string (kf, "daemon", "socket", &c->socket_path);
  take_string (kf, "daemon", "socket_group", &c->socket_group);
  take_string (kf, "daemon", "control_socket", &c->control_socket_path);
  take_string (kf, "daemon", "state_dir", &c->state_dir);
  take_string (kf, "daemon", "libvirt_state_dir", &c->libvirt_state_dir);
  if (!take_relay_user (&src, kf, c, error))
    return FALSE;
  take_string (kf, "metrics", "address", &c->metrics_address);
  port = c->metrics_port < 0 ? 0 : (guint) c->metrics_port;
  if (!take_uint (&src, kf, "metrics", "port", 0, 65535, &port, error) ||
      !take_uint (&src, kf, "daemon", "poll_interval_ms", 50, 60000, &c->poll_interval_ms, error) ||
      !take_uint (&src, kf, "daemon", "rescan_interval_ms", 50, 3600000, &c->rescan_interval_ms,
                  error) ||
      !take_uint (&src, kf, "daemon", "keepalive_ms", 100, 600000, &c->keepalive_ms, error) ||
      !take_uint (&src, kf, "daemon", "hello_timeout_ms", 100, 600000, &c->hello_timeout_ms,
                  error) ||
      !take_uint (&src, kf, "daemon", "max_connections", 1, 65536, &c->max_connections, error) ||
      !take_uint (&src, kf, "daemon", "max_connections_per_process", 0, 65536,
                  &c->max_connections_per_process, error) ||
      !take_uint (&src, kf, "daemon", "max_connections_per_uid", 0, 65536,
                  &c->max_connections_per_uid, error) ||
      !take_uint (&src, kf, "daemon", "max_prehello", 1, 4096, &c->max_prehello, error) ||
      !take_uint (&src, kf, "daemon", "max_prehello_per_uid", 0, 4096, &c->max_prehello_per_uid,
                  error) ||
      !take_uint (&src, kf, "daemon", "max_prehello_per_group", 0, 4096, &c->max_prehello_per_group,
                  error) ||
      !take_uint (&src, kf, "daemon", "max_vcpus", 1, 1048576, &c->max_vcpus, error) ||
      !take_uint (&src, kf, "daemon", "control_max_clients", 1, 1024, &c->control_max_clients,
                  error) ||
      !take_uint (&src, kf, "daemon", "control_timeout_ms", 100, 600000, &c->control_timeout_ms,
                  error) ||
      !take_uint (&src, kf, "metrics", "max_connections", 1, 1024, &c->metrics_max_connections,
                  error) ||
      !take_uint (&src, kf, "metrics", "timeout_ms", 100, 600000, &c->metrics_timeout_ms, error) ||
      !take_uint (&src, kf, "merge", "hold_ms", 0, 10000, &c->hold_ms, error) ||
      !take_uint (&src, kf, "cpufreq", "min_write_interval_ms", 0, 10000,
                  &c->cpufreq_min_write_interval_ms, error) ||
      !take_uint (&src, kf, "cpufreq", "quantum_khz", 0, 1000000, &c->cpufreq_quantum_khz, error) ||
      !take_uint (&src, kf, "cpufreq", "cur_freq_interval_ms", 0, 60000, &c->cur_freq_interval_ms,
                  error) ||
      !take_ids (&src, kf, "allowed_uids", c->allowed_uids, error) ||
      !take_ids (&src, kf, "allowed_gids", c->allowed_gids, error) ||
      !take_bool (&src, kf, "metrics", "enabled", &metrics_enabled, error) ||
      !take_bool (&src, kf, "libvirt", "mirror_ceiling", &c->mirror_ceiling, error) ||
      !take_bool (&src, kf, "daemon", "check_thread_owner", &c->check_thread_owner, error) ||
      !take_bool (&src, kf, "daemon", "require_libvirt", &c->require_libvirt, error) ||
      !take_bool (&src, kf, "merge", "perf_as_floor", &c->perf_as_floor, error) ||
      !take_bool (&src, kf, "merge", "perf_only", &c->perf_only, error))
    return FALSE;
  c->metrics_port = metrics_enabled ? (int) port : -1;
  if (c->cur_freq_interval_ms > 0 && c->cur_freq_interval_ms < 10) {
    cfg_error (error, &src, "cpufreq", "cur_freq_interval_ms",
               "%u is neither 0 (off) nor in 10..60000", c->cur_freq_interval_ms);
    return FALSE;
  }
  {
    /* octal, like chmod(1) */
    g_autofree char *mode = g_key_file_get_value (kf, "daemon", "socket_mode", NULL);
    guint64 m;

    if (mode && !g_ascii_string_to_unsigned (g_strstrip (mode), 8, 0, 0777, &m, NULL)) {
      g_autofree char *raw = raw_value (kf, "daemon", "socket_mode");

      cfg_error (error, &src, "daemon", "socket_mode",
                 "\"%s\" is not an octal mode like 0660", raw);
      return FALSE;
    }
    if (mode)
      c->socket_mode = (guint) m;
  }
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
        g_autofree char *raw = g_strescape (headroom, NULL);

        cfg_error (error, &src, "merge", "perf_headroom",
                   "\"%s\": must be auto or a number from 0.1 to 2.0", raw);
        return FALSE;
      }
      c->perf_headroom = h;
    }
  }

  groups = g_key_file_get_groups (kf, NULL);
  for (char **g = groups; *g; g++)
    if (g_str_has_prefix (*g, "vm ") && !load_vm (&src, c, kf, *g, error))
      return FALSE;
  return TRUE;
}

gboolean
fh_config_backend_valid (const char *name)
{
  static const char *const names[] = { "auto", "none", "cpufreq", "uclamp", NULL };

  return name && g_strv_contains (names, name);
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

/*
 * freqhintd --check-config: the file parsed (by then), the options applied;
 * say what the daemon would run with, start nothing.  Exit status.
 */
int
fh_config_check (const FhConfig *c, const char *path)
{
  g_autoptr (FhHost) host = fh_host_new ();
  g_autoptr (GError) error = NULL;
  g_autofree char *reason = NULL;
  FhPaths paths;
  const char *backend = c->backend;
  gid_t gid;
  int ret = 0;

  if (!fh_config_socket_gid (c, &gid, &error)) {
    g_printerr ("freqhintd: %s: %s\n", path, error->message);
    return 2;
  }
  fh_paths_init (&paths, c->sysfs_root, c->proc_root, c->cgroup_root);
  if (!fh_host_load (host, &paths, &error)) {
    g_printerr ("freqhintd: host: %s\n", error->message);
    ret = 1;
  } else {
    if (strcmp (backend, "auto") == 0)
      backend = fh_backend_choose (host, &paths, &reason);
    g_print ("%s: valid; backend %s%s%s%s; %u VM sections\n", path, backend,
             reason ? " (auto: " : "", reason ? reason : "", reason ? ")" : "",
             g_hash_table_size (c->vms));
  }
  fh_paths_clear (&paths);
  return ret;
}

char *
fh_config_vsock_listen_path (const FhVmConfig *vm)
{
  /* Cloud Hypervisor's and Firecracker's name for a guest's connection to port P */
  return vm->vsock_uds ? g_strdup_printf ("%s_%u", vm->vsock_uds, FREQHINT_VSOCK_PORT) : NULL;
}

const FhVmConfig *
fh_config_vm_by_cid (const FhConfig *config, guint32 cid)
{
  GHashTableIter it;
  gpointer value;

  g_hash_table_iter_init (&it, config->vms);
  while (g_hash_table_iter_next (&it, NULL, &value))
    if (cid && ((const FhVmConfig *) value)->vsock_cid == cid)
      return value;
  return NULL;
}

const FhVmConfig *
fh_config_vm_by_vsock_path (const FhConfig *config, const char *path)
{
  GHashTableIter it;
  gpointer value;

  g_hash_table_iter_init (&it, config->vms);
  while (g_hash_table_iter_next (&it, NULL, &value)) {
    const FhVmConfig *vm = value;
    g_autofree char *listen = fh_config_vsock_listen_path (vm);

    if (listen && strcmp (listen, path) == 0)
      return vm;
  }
  return NULL;
}
