/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host's own list of running VMs (MR-28): libvirt's status files and
 * the config's pidfile=/unit= VMs.  Only reads; the daemon decides.
 */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-host-vms.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <freqhint/agent_protocol.h>

#include "fh-parse.h"
#include "fh-peer.h"

static void
host_vm_clear (gpointer data)
{
  FhHostVm *vm = data;

  g_free (vm->key);
  g_free (vm->name);
  g_free (vm->vsock_path);
  g_clear_pointer (&vm->tids, g_array_unref);
}

GArray *
fh_host_vms_new (void)
{
  GArray *vms = g_array_new (FALSE, TRUE, sizeof (FhHostVm));

  g_array_set_clear_func (vms, host_vm_clear);
  return vms;
}

static gboolean
process_exists (const FhPaths *paths, pid_t pid)
{
  g_autofree char *dir = fh_path (paths, FH_ROOT_PROC, "%d", (int) pid);

  return g_file_test (dir, G_FILE_TEST_IS_DIR);
}

static gboolean
any_tid (const GArray *tids)
{
  for (guint i = 0; tids && i < tids->len; i++)
    if (g_array_index (tids, guint32, i) != 0)
      return TRUE;
  return FALSE;
}

static void
add_libvirt (GArray *vms, const FhPaths *paths, const GPtrArray *domains)
{
  for (guint i = 0; domains && i < domains->len; i++) {
    const FhLibvirtDomain *dom = g_ptr_array_index (domains, i);
    FhHostVm vm = { NULL, NULL, "", dom->pid, "libvirt", NULL, dom->vsock_cid, NULL };

    /* A status file outlives its QEMU only while libvirt cleans up; a
     * domain without libvirt's record of its vCPU threads has none to cap. */
    if (!any_tid (dom->vcpu_tids) || !process_exists (paths, dom->pid))
      continue;
    vm.key = g_strdup (dom->uuid);
    vm.name = g_strdup (dom->name);
    memcpy (vm.uuid, dom->uuid, sizeof vm.uuid);
    vm.tids = g_array_copy (dom->vcpu_tids);
    g_array_append_val (vms, vm);
  }
}

/*
 * The vCPU threads of process pid, by name (fh_parse_vcpu_thread_name()).
 * NULL when it has none; a vCPU index that two threads claim is refused.
 */
static GArray *
vcpu_threads (const FhPaths *paths, pid_t pid, char **why)
{
  g_autofree char *task = fh_path (paths, FH_ROOT_PROC, "%d/task", (int) pid);
  g_autoptr (GArray) tids = g_array_new (FALSE, TRUE, sizeof (guint32));
  DIR *dir = opendir (task);
  struct dirent *de;
  guint seen = 0;

  if (!dir) {
    *why = g_strdup_printf ("%s: %s", task, g_strerror (errno));
    return NULL;
  }
  while ((de = readdir (dir)) && seen < FH_HOST_VM_TASKS_MAX) {
    g_autofree char *path = NULL, *comm = NULL;
    guint64 tid;
    int index;

    if (!g_ascii_string_to_unsigned (de->d_name, 10, 1, G_MAXINT32, &tid, NULL))
      continue;
    seen++;
    path = fh_path (paths, FH_ROOT_PROC, "%d/task/%s/comm", (int) pid, de->d_name);
    comm = fh_read_small_file (path, NULL);
    if (!comm)
      continue;
    g_strchomp (comm);
    index = fh_parse_vcpu_thread_name (comm);
    if (index < 0)
      continue;
    if ((guint) index < tids->len && g_array_index (tids, guint32, index) != 0) {
      *why = g_strdup_printf ("process %d: two threads are named as vCPU %d", (int) pid, index);
      closedir (dir);
      return NULL;
    }
    if (tids->len <= (guint) index)
      g_array_set_size (tids, (guint) index + 1);
    g_array_index (tids, guint32, index) = (guint32) tid;
  }
  closedir (dir);
  if (tids->len == 0) {
    *why = g_strdup_printf ("process %d has no thread named as a vCPU (\"CPU N/KVM\": QEMU needs "
                            "-name debug-threads=on; \"vcpuN\"; \"fc_vcpu N\")",
                            (int) pid);
    return NULL;
  }
  return g_steal_pointer (&tids);
}

/* The real uid of pid (its "Uid:" line), -1 when unknown. */
static gint64
process_uid (const FhPaths *paths, pid_t pid)
{
  g_autofree char *path = fh_path (paths, FH_ROOT_PROC, "%d/status", (int) pid);
  g_autofree char *status = fh_read_small_file (path, NULL);
  g_autofree char *uids = status ? fh_parse_status_field (status, "Uid", NULL) : NULL;
  guint64 uid;
  char *end;

  if (!uids)
    return -1;
  uid = g_ascii_strtoull (uids, &end, 10);
  return end != uids && uid <= G_MAXUINT32 ? (gint64) uid : -1;
}

/*
 * A pidfile says which process is the VM only if nobody else could have
 * written it: a regular file, not writable by group or others, owned by
 * root, by us, or by the user the process it names runs as (a user can
 * point at their own processes only).
 */
static pid_t
read_pidfile (const FhPaths *paths, const char *file, char **why)
{
  int fd = open (file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  struct stat st;
  char buf[32];
  ssize_t n;
  guint64 pid;
  gint64 uid;

  if (fd < 0) {
    *why = g_strdup_printf ("pidfile %s: %s", file, g_strerror (errno));
    return 0;
  }
  if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode) || (st.st_mode & 022) != 0) {
    close (fd);
    *why = g_strdup_printf ("pidfile %s: not a regular file writable by its owner only", file);
    return 0;
  }
  n = read (fd, buf, sizeof buf - 1);
  close (fd);
  buf[MAX (n, 0)] = '\0';
  g_strstrip (buf);
  if (!g_ascii_string_to_unsigned (buf, 10, 1, G_MAXINT32, &pid, NULL)) {
    *why = g_strdup_printf ("pidfile %s: does not hold a process id", file);
    return 0;
  }
  if (!process_exists (paths, (pid_t) pid)) {
    *why = g_strdup_printf ("pidfile %s: process %" G_GUINT64_FORMAT " is not running", file, pid);
    return 0;
  }
  uid = process_uid (paths, (pid_t) pid);
  if (st.st_uid != 0 && st.st_uid != geteuid () && (gint64) st.st_uid != uid) {
    *why = g_strdup_printf ("pidfile %s: owned by uid %u, names process %" G_GUINT64_FORMAT
                            " of uid %" G_GINT64_FORMAT ": not trusted",
                            file, (guint) st.st_uid, pid, uid);
    return 0;
  }
  return (pid_t) pid;
}

/* The one process of a unit's cgroup that has vCPU threads. */
static pid_t
unit_process (const FhPaths *paths, const char *unit, GArray **tids, char **why)
{
  static const char *const slices[] = { "system.slice", "machine.slice" };

  for (guint s = 0; s < G_N_ELEMENTS (slices); s++) {
    g_autofree char *path = fh_path (paths, FH_ROOT_CGROUP, "%s/%s/cgroup.procs", slices[s], unit);
    g_autofree char *procs = fh_read_small_file (path, NULL);
    g_auto (GStrv) lines = NULL;
    pid_t found = 0;
    guint n = 0;

    if (!procs)
      continue;
    lines = g_strsplit (procs, "\n", -1);
    for (char **l = lines; *l && n < FH_HOST_VM_UNIT_PROCS_MAX; l++) {
      g_autofree char *ignored = NULL;
      GArray *t;
      guint64 pid;

      if (!g_ascii_string_to_unsigned (g_strstrip (*l), 10, 1, G_MAXINT32, &pid, NULL))
        continue;
      n++;
      t = vcpu_threads (paths, (pid_t) pid, &ignored);
      if (!t)
        continue;
      if (found) {
        g_array_unref (t);
        g_clear_pointer (tids, g_array_unref);
        *why = g_strdup_printf ("unit %s: processes %d and %" G_GUINT64_FORMAT
                                " both have vCPU threads; which is the VM is not clear",
                                unit, (int) found, pid);
        return 0;
      }
      found = (pid_t) pid;
      *tids = t;
    }
    if (found)
      return found;
    *why = g_strdup_printf ("unit %s: no process with threads named as vCPUs", unit);
    return 0;
  }
  *why = g_strdup_printf ("unit %s: no cgroup under system.slice or machine.slice", unit);
  return 0;
}

static void
add_config (GArray *vms, GHashTable *problems, const FhPaths *paths, const FhConfig *config)
{
  GHashTableIter it;
  gpointer value;

  g_hash_table_iter_init (&it, config->vms);
  while (g_hash_table_iter_next (&it, NULL, &value)) {
    const FhVmConfig *c = value;
    g_autofree char *why = NULL;
    g_autoptr (GArray) tids = NULL;
    const char *old;
    pid_t pid = 0;

    if (!c->pidfile && !c->unit)
      continue;
    if (c->pidfile) {
      pid = read_pidfile (paths, c->pidfile, &why);
      if (pid)
        tids = vcpu_threads (paths, pid, &why);
    } else {
      pid = unit_process (paths, c->unit, &tids, &why);
    }
    old = g_hash_table_lookup (problems, c->key);
    if (!tids) {
      g_autofree char *name = g_strescape (c->key, NULL);

      if (g_strcmp0 (old, why) != 0)
        g_message ("VM \"%s\" ([vm] %s): not found: %s", name, c->pidfile ? "pidfile" : "unit",
                   why);
      g_hash_table_replace (problems, g_strdup (c->key), g_steal_pointer (&why));
      continue;
    }
    if (old) {
      g_autofree char *name = g_strescape (c->key, NULL);

      g_message ("VM \"%s\": found: process %d, %u vCPUs", name, (int) pid, tids->len);
      g_hash_table_remove (problems, c->key);
    }
    {
      FhHostVm vm = { g_strdup_printf ("name:%s", c->key),
                      g_strdup (c->key),
                      "00000000-0000-0000-0000-000000000000",
                      pid,
                      "config",
                      g_steal_pointer (&tids),
                      c->vsock_cid,
                      fh_config_vsock_listen_path (c) };

      g_array_append_val (vms, vm);
    }
  }
}

void
fh_host_vms_scan (GArray *vms, GHashTable *problems, const FhPaths *paths, const GPtrArray *domains,
                  const FhConfig *config)
{
  g_array_set_size (vms, 0);
  add_libvirt (vms, paths, domains);
  add_config (vms, problems, paths, config);
}

const FhHostVm *
fh_host_vms_by_transport (const GArray *vms, guint32 cid, const char *path)
{
  const FhHostVm *found = NULL;

  for (guint i = 0; vms && i < vms->len; i++) {
    const FhHostVm *vm = &g_array_index (vms, FhHostVm, i);
    gboolean match = path ? g_strcmp0 (vm->vsock_path, path) == 0 : cid && vm->vsock_cid == cid;

    if (!match)
      continue;
    if (found && found->pid != vm->pid)
      return NULL; /* two VMs claim it: neither is served */
    found = found ? found : vm;
  }
  return found;
}
