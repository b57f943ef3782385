/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-peer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gio/gio.h>

#include <freqhint/agent_protocol.h>

void
fh_peer_identity_clear (FhPeerIdentity *id)
{
  g_clear_pointer (&id->name, g_free);
  g_clear_pointer (&id->scope_name, g_free);
  id->have_name = FALSE;
  id->have_uuid = FALSE;
  id->uuid[0] = '\0';
}

/* QemuOpts value: ",," is a comma; a single comma ends the value. */
static const char *
opts_value (const char *p, GString *out)
{
  for (; *p; p++) {
    if (*p == ',') {
      if (p[1] != ',')
        break;
      p++;
    }
    g_string_append_c (out, *p);
  }
  return p;
}

/*
 * -name's argument: "NAME[,key=value...]" or "guest=NAME,...": the guest
 * name it sets, or NULL when it sets none ("-name debug-threads=on").
 */
static char *
parse_name_opts (const char *arg)
{
  g_autoptr (GString) guest = NULL;
  const char *p = arg;
  gboolean first = TRUE;

  while (*p) {
    g_autoptr (GString) key = g_string_new (NULL);
    g_autoptr (GString) val = g_string_new (NULL);
    const char *eq = NULL;

    /* Is there an '=' before the end of this option? */
    for (const char *q = p; *q; q++) {
      if (*q == ',' && q[1] == ',') {
        q++;
        continue;
      }
      if (*q == ',')
        break;
      if (*q == '=') {
        eq = q;
        break;
      }
    }
    if (!eq && first) {
      p = opts_value (p, val);
      g_string_assign (key, "guest");
    } else if (!eq) {
      /* "flag" form (e.g. "debug-threads"): not the name */
      p = opts_value (p, key);
    } else {
      g_string_append_len (key, p, eq - p);
      p = opts_value (eq + 1, val);
    }
    if (strcmp (key->str, "guest") == 0) {
      if (guest)
        g_string_free (guest, TRUE);
      guest = g_steal_pointer (&val);
    }
    first = FALSE;
    if (*p == ',')
      p++;
  }
  return guest ? g_string_free (g_steal_pointer (&guest), FALSE) : NULL;
}

/*
 * The options of QEMU's option table (qemu-options.hx, QEMU 10.0) that take
 * no argument; every other option takes the next argument as its value,
 * whatever it looks like (lookup_opt() in system/vl.c: HAS_ARG), so
 * "-append -name" is -append's value, not a -name.  Options QEMU does not
 * know never reach a running QEMU (it exits on them).
 */
/* clang-format off */
static const char *const qemu_no_arg_options[] = {
  "help", "version", "mem-prealloc", "snapshot", "usb", "nographic", "full-screen",
  "win2k-hack", "no-fd-bootchk", "preconfig", "S", "s", "enable-kvm", "xen-attach",
  "xen-domid-restrict", "no-reboot", "no-shutdown", "daemonize", "only-migratable", "nodefaults",
  "semihosting", "old-param", "no-user-config", "enable-sync-profile", "perfmap", "jitdump",
};
/* clang-format on */

static gboolean
qemu_option_has_arg (const char *name)
{
  return !g_strv_contains (qemu_no_arg_options, name);
}

static gboolean
parse_uuid (const char *s, char out[37])
{
  if (strlen (s) != 36)
    return FALSE;
  for (int i = 0; i < 36; i++) {
    gboolean dash = i == 8 || i == 13 || i == 18 || i == 23;

    if (dash ? s[i] != '-' : !g_ascii_isxdigit (s[i]))
      return FALSE;
    out[i] = g_ascii_tolower (s[i]);
  }
  out[36] = '\0';
  return TRUE;
}

gboolean
fh_peer_parse_cmdline (const char *buf, gsize len, FhPeerIdentity *id)
{
  g_autoptr (GPtrArray) args = g_ptr_array_new ();
  gboolean ok = TRUE;
  gsize i = 0;

  while (i < len) {
    const char *a = buf + i;
    gsize n = strnlen (a, len - i);

    g_ptr_array_add (args, (gpointer) a);
    i += n + 1;
  }
  /* The last argument may lack its NUL (a truncated read): ignore it. */
  if (len > 0 && buf[len - 1] != '\0' && args->len > 0)
    g_ptr_array_set_size (args, args->len - 1);

  /*
   * As QEMU walks its arguments (qemu_init(), lookup_opt()): a bare argument
   * is a disk image; "-opt" or "--opt" is an option, which takes the next
   * argument if the table says so.  Repeated -name options merge into one
   * (the "name" QemuOptsList has merge_lists): a later guest= replaces an
   * earlier one, and "-name debug-threads=on" keeps the name.
   */
  for (guint k = 1; k < args->len; k++) {
    const char *opt = g_ptr_array_index (args, k);
    const char *val;

    if (opt[0] != '-')
      continue;
    opt += opt[1] == '-' ? 2 : 1;
    /* "--" is no QEMU option (QEMU exits on it): skipped, it takes nothing */
    if (*opt == '\0' || !qemu_option_has_arg (opt))
      continue;
    if (++k >= args->len)
      break; /* QEMU refuses an option without its argument */
    val = g_ptr_array_index (args, k);
    if (strcmp (opt, "name") == 0) {
      char *guest = parse_name_opts (val);

      if (guest) {
        g_free (id->name);
        id->name = guest;
      } else if (!id->name) {
        id->name = g_strdup ("");
      }
      id->have_name = TRUE;
    } else if (strcmp (opt, "uuid") == 0) {
      if (parse_uuid (val, id->uuid)) {
        /* An all-zero UUID means "no UUID" (spec/agent-protocol.md, 3), as
         * the nil UUID in HELLO does. */
        id->have_uuid = strcmp (id->uuid, "00000000-0000-0000-0000-000000000000") != 0;
        if (!id->have_uuid)
          id->uuid[0] = '\0';
      } else {
        ok = FALSE;
      }
    }
  }
  return ok;
}

/* systemd unit-name escaping: "\xNN" is one byte. */
static char *
unescape_unit (const char *s, gsize len)
{
  GString *out = g_string_new (NULL);

  for (gsize i = 0; i < len; i++) {
    if (s[i] == '\\' && i + 3 < len + 0 && s[i + 1] == 'x' && g_ascii_isxdigit (s[i + 2]) &&
        g_ascii_isxdigit (s[i + 3])) {
      g_string_append_c (out, (char) (g_ascii_xdigit_value (s[i + 2]) * 16 +
                                       g_ascii_xdigit_value (s[i + 3])));
      i += 3;
    } else {
      g_string_append_c (out, s[i]);
    }
  }
  return g_string_free (out, FALSE);
}

char *
fh_peer_parse_scope (const char *text)
{
  static const char prefix[] = "machine-qemu\\x2d";
  static const char suffix[] = ".scope";
  char *found = NULL;
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);

  for (guint l = 0; lines[l]; l++) {
    g_auto (GStrv) parts = g_strsplit (lines[l], "/", -1);

    for (guint i = 0; parts[i]; i++) {
      const char *c = parts[i];
      gsize n = strlen (c);

      if (g_str_has_prefix (c, prefix) && n > sizeof prefix - 1 + sizeof suffix - 1 &&
          g_str_has_suffix (c, suffix)) {
        g_free (found);
        /* "machine-" + escaped "qemu-ID-NAME" + ".scope" */
        found = unescape_unit (c + 8, n - 8 - (sizeof suffix - 1));
      }
    }
  }
  return found;
}

/*
 * libvirt's machine name for a domain of its privileged QEMU driver, as
 * virDomainDriverGenerateMachineName() makes it (libvirt 11,
 * src/hypervisor/domain_driver.c): "qemu-<id>-", then the name's ASCII
 * letters and digits, a '.' or '-' only after one of those (so a run of
 * them keeps its first, leading ones none), everything else dropped, no
 * more once the whole is 64 bytes long, and trailing '-' and '.' trimmed.
 */
char *
fh_peer_machine_name (const char *domain_id, const char *name)
{
  GString *m = g_string_new (NULL);
  gboolean sep_ok = FALSE;

  g_string_printf (m, "qemu-%s-", domain_id);
  for (const char *p = name; *p && m->len < 64; p++) {
    if (*p == '.' || *p == '-') {
      if (sep_ok)
        g_string_append_c (m, *p);
      sep_ok = FALSE;
    } else if (g_ascii_isalnum (*p)) {
      g_string_append_c (m, *p);
      sep_ok = TRUE;
    }
  }
  while (m->len && (m->str[m->len - 1] == '-' || m->str[m->len - 1] == '.'))
    g_string_truncate (m, m->len - 1);
  return g_string_free (m, FALSE);
}

FhScopeMatch
fh_peer_scope_match (const char *scope_name, const char *vm_name, const char *const *others)
{
  const char *p = scope_name;
  g_autofree char *id = NULL, *want = NULL;

  /* "qemu-<ID>-<name>" */
  if (!g_str_has_prefix (p, "qemu-"))
    return FH_SCOPE_NO_MATCH;
  p += 5;
  while (g_ascii_isdigit (*p))
    p++;
  if (p == scope_name + 5 || *p != '-')
    return FH_SCOPE_NO_MATCH;
  id = g_strndup (scope_name + 5, (gsize) (p - scope_name - 5));
  want = fh_peer_machine_name (id, vm_name);
  if (strcmp (want, scope_name) != 0)
    return FH_SCOPE_NO_MATCH;
  /* libvirt's escaping loses characters: another name the host knows may make the same scope */
  for (guint i = 0; others && others[i]; i++) {
    g_autofree char *other = NULL;

    if (strcmp (others[i], vm_name) == 0)
      continue;
    other = fh_peer_machine_name (id, others[i]);
    if (strcmp (other, scope_name) == 0)
      return FH_SCOPE_AMBIGUOUS;
  }
  return FH_SCOPE_MATCH;
}

/* The name as the device puts it in HELLO (PD-2): at most 63 bytes, cut at a character. */
static char *
device_name (const char *name)
{
  gsize len = strlen (name);

  if (len >= FH_NAME_MAX) {
    const char *end = g_utf8_find_prev_char (name, name + FH_NAME_MAX);

    len = end ? (gsize) (end - name) : 0;
  }
  return g_strndup (name, len);
}

gboolean
fh_peer_check_hello (const FhPeerIdentity *id, const char *hello_name, const char *hello_uuid,
                     const char *const *others, char *why, gsize why_len)
{
  static const char nil[] = "00000000-0000-0000-0000-000000000000";
  g_autofree char *want_name = device_name (id->have_name ? id->name : "");
  char uuid[37] = "";

  if (hello_uuid[0] && g_ascii_strcasecmp (hello_uuid, nil) != 0) {
    if (!parse_uuid (hello_uuid, uuid)) {
      g_snprintf (why, why_len, "HELLO UUID is not a UUID");
      return FALSE;
    }
  }
  if (!id->have_uuid && uuid[0]) {
    g_snprintf (why, why_len, "HELLO has a UUID, the process has no -uuid");
    return FALSE;
  }
  if (id->have_uuid && strcmp (uuid, id->uuid) != 0) {
    g_snprintf (why, why_len, "HELLO UUID differs from the process's -uuid %s", id->uuid);
    return FALSE;
  }
  if (strcmp (hello_name, want_name) != 0) {
    g_snprintf (why, why_len, "HELLO name differs from the process's %s",
                id->have_name ? "-name" : "(absent) -name");
    return FALSE;
  }
  if (id->scope_name) {
    /* libvirt made the scope from the whole -name, not the HELLO's cut of it */
    FhScopeMatch m = fh_peer_scope_match (id->scope_name, id->have_name ? id->name : "", others);
    g_autofree char *scope = g_strescape (id->scope_name, NULL);

    if (m == FH_SCOPE_NO_MATCH) {
      g_snprintf (why, why_len, "HELLO name does not match the process's machine scope \"%s\"",
                  scope);
      return FALSE;
    }
    if (m == FH_SCOPE_AMBIGUOUS) {
      g_snprintf (why, why_len,
                  "the process's machine scope \"%s\" is also another known name's: ambiguous",
                  scope);
      return FALSE;
    }
  }
  return TRUE;
}

/* A bounded read of a /proc file that may hold NULs. */
static char *
read_bounded (const char *path, gsize max, gsize *len, GError **error)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  char *buf;
  gsize off = 0;

  if (fd < 0) {
    int e = errno;

    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "%s: %s", path, g_strerror (e));
    return NULL;
  }
  buf = g_malloc (max + 1);
  while (off < max) {
    ssize_t n = read (fd, buf + off, max - off);

    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int e = errno;

      close (fd);
      g_free (buf);
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "%s: %s", path, g_strerror (e));
      return NULL;
    }
    if (n == 0)
      break;
    off += (gsize) n;
  }
  close (fd);
  buf[off] = '\0';
  *len = off;
  return buf;
}

/* QEMU's command lines are long (libvirt's: some KiB); -name and -uuid come early. */
#define CMDLINE_MAX (256 * 1024)

gboolean
fh_peer_read_identity (const FhPaths *paths, pid_t pid, FhPeerIdentity *id, GError **error)
{
  g_autofree char *cmd_path = fh_path (paths, FH_ROOT_PROC, "%d/cmdline", (int) pid);
  g_autofree char *cg_path = fh_path (paths, FH_ROOT_PROC, "%d/cgroup", (int) pid);
  g_autofree char *cmdline = NULL, *cgroup = NULL;
  gsize len = 0;

  fh_peer_identity_clear (id);
  cmdline = read_bounded (cmd_path, CMDLINE_MAX, &len, error);
  if (!cmdline)
    return FALSE;
  if (len == 0) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s is empty (a kernel thread or a zombie)",
                 cmd_path);
    return FALSE;
  }
  if (!fh_peer_parse_cmdline (cmdline, len, id)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: -uuid is not a UUID", cmd_path);
    return FALSE;
  }
  /* No cgroup file (fixtures, or no cgroup v2) means no scope to compare. */
  cgroup = read_bounded (cg_path, 64 * 1024, &len, NULL);
  if (cgroup)
    id->scope_name = fh_peer_parse_scope (cgroup);
  return TRUE;
}

int
fh_peer_pin (pid_t pid)
{
  if (pid <= 0) {
    errno = ESRCH;
    return -1;
  }
  return (int) syscall (SYS_pidfd_open, pid, 0);
}

gboolean
fh_peer_alive (int pidfd)
{
  struct pollfd p = { .fd = pidfd, .events = POLLIN };

  if (pidfd < 0)
    return FALSE;
  /* A pidfd polls readable once its process has exited. */
  return poll (&p, 1, 0) == 0;
}

/* --- libvirt's view of its domains (PA-22) ---------------------------------- */

void
fh_libvirt_domain_free (FhLibvirtDomain *dom)
{
  if (!dom)
    return;
  g_free (dom->name);
  if (dom->vcpu_tids)
    g_array_unref (dom->vcpu_tids);
  g_free (dom);
}

typedef struct {
  guint depth;
  gboolean in_domain; /* inside domstatus/domain */
  gboolean in_vcpus;  /* inside domstatus/vcpus (not domain/vcpus: that is the definition) */
  int text;           /* 0: none, 1: name, 2: uuid (direct children of domain) */
  GString *buf;
  FhLibvirtDomain *dom;
  gboolean have_root, have_pid, have_name, have_uuid;
  gboolean in_devices, in_vsock;
} DomstatusParse;

/* <vsock><cid address='N'/></vsock>: the CID libvirt gave the guest (auto or not). */
static void
ds_vsock_cid (DomstatusParse *p, const char **names, const char **values)
{
  for (guint i = 0; names[i]; i++) {
    guint64 cid;

    if (strcmp (names[i], "address") == 0 &&
        g_ascii_string_to_unsigned (values[i], 10, 3, G_MAXUINT32 - 1, &cid, NULL))
      p->dom->vsock_cid = (guint32) cid;
  }
}

/* <vcpu id='N' pid='TID'/>: libvirt's record of vCPU N's thread. */
static void
ds_vcpu (DomstatusParse *p, const char **names, const char **values)
{
  guint64 id = G_MAXUINT64, tid = 0;

  for (guint i = 0; names[i]; i++) {
    if (strcmp (names[i], "id") == 0)
      g_ascii_string_to_unsigned (values[i], 10, 0, FH_MAX_VCPUS - 1, &id, NULL);
    else if (strcmp (names[i], "pid") == 0)
      g_ascii_string_to_unsigned (values[i], 10, 1, G_MAXINT32, &tid, NULL);
  }
  if (id == G_MAXUINT64 || tid == 0)
    return;
  if (!p->dom->vcpu_tids)
    p->dom->vcpu_tids = g_array_new (FALSE, TRUE, sizeof (guint32));
  if (p->dom->vcpu_tids->len <= id)
    g_array_set_size (p->dom->vcpu_tids, (guint) id + 1);
  g_array_index (p->dom->vcpu_tids, guint32, id) = (guint32) tid;
}

static void
ds_start (GMarkupParseContext *ctx, const char *element, const char **names, const char **values,
          gpointer data, GError **error)
{
  DomstatusParse *p = data;

  p->depth++;
  if (p->depth == 1) {
    if (strcmp (element, "domstatus") != 0) {
      g_set_error (error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT,
                   "root element is <%s>, not <domstatus>", element);
      return;
    }
    p->have_root = TRUE;
    for (guint i = 0; names[i]; i++) {
      guint64 pid;

      if (strcmp (names[i], "pid") == 0 &&
          g_ascii_string_to_unsigned (values[i], 10, 1, G_MAXINT32, &pid, NULL)) {
        p->dom->pid = (pid_t) pid;
        p->have_pid = TRUE;
      }
    }
  } else if (p->depth == 2 && strcmp (element, "domain") == 0) {
    p->in_domain = TRUE;
  } else if (p->depth == 2 && strcmp (element, "vcpus") == 0) {
    p->in_vcpus = TRUE;
  } else if (p->depth == 3 && p->in_vcpus && strcmp (element, "vcpu") == 0) {
    ds_vcpu (p, names, values);
  } else if (p->depth == 3 && p->in_domain && strcmp (element, "devices") == 0) {
    p->in_devices = TRUE;
  } else if (p->depth == 4 && p->in_devices && strcmp (element, "vsock") == 0) {
    p->in_vsock = TRUE;
  } else if (p->depth == 5 && p->in_vsock && strcmp (element, "cid") == 0) {
    ds_vsock_cid (p, names, values);
  } else if (p->depth == 3 && p->in_domain) {
    p->text = strcmp (element, "name") == 0 ? 1 : strcmp (element, "uuid") == 0 ? 2 : 0;
    g_string_truncate (p->buf, 0);
  }
}

static void
ds_end (GMarkupParseContext *ctx, const char *element, gpointer data, GError **error)
{
  DomstatusParse *p = data;

  if (p->depth == 3 && p->text == 1 && !p->have_name) {
    p->dom->name = g_strdup (p->buf->str);
    p->have_name = TRUE;
  } else if (p->depth == 3 && p->text == 2 && !p->have_uuid) {
    g_strstrip (p->buf->str);
    p->have_uuid = parse_uuid (p->buf->str, p->dom->uuid);
  } else if (p->depth == 2) {
    p->in_domain = FALSE;
    p->in_vcpus = FALSE;
  } else if (p->depth == 3) {
    p->in_devices = FALSE;
  } else if (p->depth == 4) {
    p->in_vsock = FALSE;
  }
  p->text = 0;
  p->depth--;
}

static void
ds_text (GMarkupParseContext *ctx, const char *text, gsize len, gpointer data, GError **error)
{
  DomstatusParse *p = data;

  if (p->text && p->buf->len + len <= 4096)
    g_string_append_len (p->buf, text, len);
}

FhLibvirtDomain *
fh_peer_parse_domstatus (const char *text, gsize len, GError **error)
{
  static const GMarkupParser parser = { ds_start, ds_end, ds_text, NULL, NULL };
  g_autoptr (GString) buf = g_string_new (NULL);
  DomstatusParse p = { 0 };
  GMarkupParseContext *ctx;
  gboolean ok;

  p.buf = buf;
  p.dom = g_new0 (FhLibvirtDomain, 1);
  ctx = g_markup_parse_context_new (&parser, 0, &p, NULL);
  ok = g_markup_parse_context_parse (ctx, text, (gssize) len, error) &&
       g_markup_parse_context_end_parse (ctx, error);
  g_markup_parse_context_free (ctx);
  if (ok && !(p.have_root && p.have_pid && p.have_name && p.have_uuid && p.dom->name[0])) {
    g_set_error (error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT,
                 "no <domstatus pid=...> with <domain><name> and <uuid>");
    ok = FALSE;
  }
  if (!ok) {
    fh_libvirt_domain_free (p.dom);
    return NULL;
  }
  return p.dom;
}

gboolean
fh_peer_check_libvirt (const GPtrArray *domains, pid_t pid, const char *hello_name,
                       const char *hello_uuid, gboolean require, char *why, gsize why_len)
{
  static const char nil[] = "00000000-0000-0000-0000-000000000000";
  const FhLibvirtDomain *by_pid = NULL, *by_name = NULL, *by_uuid = NULL;
  char uuid[37] = "";

  if (hello_uuid[0] && g_ascii_strcasecmp (hello_uuid, nil) != 0)
    parse_uuid (hello_uuid, uuid);
  for (guint i = 0; domains && i < domains->len; i++) {
    const FhLibvirtDomain *dom = g_ptr_array_index (domains, i);
    g_autofree char *dname = device_name (dom->name);

    if (dom->pid == pid)
      by_pid = dom;
    if (hello_name[0] && strcmp (dname, hello_name) == 0)
      by_name = dom;
    if (uuid[0] && strcmp (dom->uuid, uuid) == 0)
      by_uuid = dom;
  }
  if (by_pid) {
    g_autofree char *dname = device_name (by_pid->name);
    g_autofree char *name = g_strescape (by_pid->name, NULL);

    if (strcmp (hello_name, dname) != 0 || strcmp (uuid, by_pid->uuid) != 0) {
      g_snprintf (why, why_len, "process %d is libvirt domain \"%s\" (%s); HELLO says otherwise",
                  (int) pid, name, by_pid->uuid);
      return FALSE;
    }
    return TRUE;
  }
  if (by_name || by_uuid) {
    const FhLibvirtDomain *dom = by_name ? by_name : by_uuid;
    g_autofree char *name = g_strescape (dom->name, NULL);

    g_snprintf (why, why_len, "HELLO claims libvirt domain \"%s\" (%s), whose process is %d, not %d",
                name, dom->uuid, (int) dom->pid, (int) pid);
    return FALSE;
  }
  if (require) {
    g_snprintf (why, why_len, "process %d is no running libvirt domain's (require_libvirt)",
                (int) pid);
    return FALSE;
  }
  return TRUE;
}

struct _FhLibvirtView {
  char *dir;
  GPtrArray *domains; /* FhLibvirtDomain* */
  gboolean scanned;
  dev_t dev;
  ino_t ino;
  struct timespec mtime;
};

FhLibvirtView *
fh_libvirt_view_new (const char *dir)
{
  FhLibvirtView *v = g_new0 (FhLibvirtView, 1);

  v->dir = g_strdup (dir);
  v->domains = g_ptr_array_new_with_free_func ((GDestroyNotify) fh_libvirt_domain_free);
  return v;
}

void
fh_libvirt_view_free (FhLibvirtView *v)
{
  if (!v)
    return;
  g_free (v->dir);
  g_ptr_array_unref (v->domains);
  g_free (v);
}

/* Written by root (or by us): nobody else may have put it there or changed it. */
static gboolean
trusted_owner_mode (const struct stat *st)
{
  return (st->st_uid == 0 || st->st_uid == geteuid ()) && (st->st_mode & 022) == 0;
}

/* Status files are some KiB; a domain with many devices some 100 KiB. */
#define DOMSTATUS_MAX (4 * 1024 * 1024)
#define DOMAINS_MAX 16384

static FhLibvirtDomain *
read_domstatus (int dirfd, const char *file, GError **error)
{
  int fd = openat (dirfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  g_autofree char *buf = NULL;
  struct stat st;
  gsize off = 0;

  if (fd < 0) {
    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "%s", g_strerror (errno));
    return NULL;
  }
  if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode) || !trusted_owner_mode (&st) ||
      st.st_size > DOMSTATUS_MAX) {
    close (fd);
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
                 "not a regular file of root's, writable by root only, under 4 MiB");
    return NULL;
  }
  buf = g_malloc ((gsize) st.st_size + 1);
  while (off < (gsize) st.st_size) {
    ssize_t n = read (fd, buf + off, (gsize) st.st_size - off);

    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    off += (gsize) n;
  }
  close (fd);
  return fh_peer_parse_domstatus (buf, off, error);
}

gboolean
fh_libvirt_view_refresh (FhLibvirtView *v, GError **error)
{
  struct stat st;
  int dirfd;
  DIR *dir;
  struct dirent *de;
  guint skipped = 0;

  if (!v->dir || !*v->dir)
    return TRUE;
  dirfd = open (v->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0 && errno == ENOENT) {
    /* libvirt's QEMU driver is not running here: no domains */
    g_ptr_array_set_size (v->domains, 0);
    v->scanned = FALSE;
    return TRUE;
  }
  if (dirfd < 0 || fstat (dirfd, &st) < 0) {
    int e = errno;

    if (dirfd >= 0)
      close (dirfd);
    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "%s: %s", v->dir, g_strerror (e));
    return FALSE;
  }
  if (!trusted_owner_mode (&st)) {
    close (dirfd);
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
                 "%s is not root's or is writable by others: not trusted", v->dir);
    return FALSE;
  }
  /* libvirt replaces a status file by rename: the directory's mtime moves */
  if (v->scanned && st.st_dev == v->dev && st.st_ino == v->ino &&
      st.st_mtim.tv_sec == v->mtime.tv_sec && st.st_mtim.tv_nsec == v->mtime.tv_nsec) {
    close (dirfd);
    return TRUE;
  }
  dir = fdopendir (dirfd);
  if (!dir) {
    close (dirfd);
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: %s", v->dir, g_strerror (errno));
    return FALSE;
  }
  g_ptr_array_set_size (v->domains, 0);
  while ((de = readdir (dir)) && v->domains->len < DOMAINS_MAX) {
    g_autoptr (GError) err = NULL;
    FhLibvirtDomain *dom;

    if (de->d_name[0] == '.' || !g_str_has_suffix (de->d_name, ".xml"))
      continue;
    dom = read_domstatus (dirfd, de->d_name, &err);
    if (!dom) {
      g_autofree char *file = g_strescape (de->d_name, NULL);

      if (skipped++ < 4)
        g_warning ("libvirt domain status %s/%s: %s; not used", v->dir, file, err->message);
      continue;
    }
    g_ptr_array_add (v->domains, dom);
  }
  closedir (dir);
  v->dev = st.st_dev;
  v->ino = st.st_ino;
  v->mtime = st.st_mtim;
  v->scanned = TRUE;
  g_debug ("libvirt: %u running domains in %s", v->domains->len, v->dir);
  return TRUE;
}

const GPtrArray *
fh_libvirt_view_domains (const FhLibvirtView *v)
{
  return v->domains;
}
