/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-peer.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
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

/* -name's argument: "NAME[,key=value...]" or "guest=NAME,...". */
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
  return guest ? g_string_free (g_steal_pointer (&guest), FALSE) : g_strdup ("");
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

  for (guint k = 1; k + 1 < args->len; k++) {
    const char *opt = g_ptr_array_index (args, k);
    const char *val = g_ptr_array_index (args, k + 1);

    if (opt[0] == '-' && opt[1] == '-')
      opt++;
    if (strcmp (opt, "-name") == 0) {
      g_free (id->name);
      id->name = parse_name_opts (val);
      id->have_name = TRUE;
      k++;
    } else if (strcmp (opt, "-uuid") == 0) {
      if (parse_uuid (val, id->uuid)) {
        /* An all-zero UUID means "no UUID" (spec/agent-protocol.md, 3), as
         * the nil UUID in HELLO does. */
        id->have_uuid = strcmp (id->uuid, "00000000-0000-0000-0000-000000000000") != 0;
        if (!id->have_uuid)
          id->uuid[0] = '\0';
      } else {
        ok = FALSE;
      }
      k++;
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

/* What libvirt keeps of a name in a machine name: letters, digits, '-'; compared without '.' */
static char *
machine_chars (const char *s)
{
  GString *out = g_string_new (NULL);

  for (; *s; s++)
    if (g_ascii_isalnum (*s) || *s == '-')
      g_string_append_c (out, *s);
  while (out->len && out->str[out->len - 1] == '-')
    g_string_truncate (out, out->len - 1);
  return g_string_free (out, FALSE);
}

gboolean
fh_peer_scope_matches (const char *scope_name, const char *vm_name)
{
  const char *p = scope_name;
  g_autofree char *want = NULL, *have = NULL;

  /* "qemu-<ID>-<name>" */
  if (!g_str_has_prefix (p, "qemu-"))
    return FALSE;
  p += 5;
  if (!g_ascii_isdigit (*p))
    return FALSE;
  while (g_ascii_isdigit (*p))
    p++;
  if (*p != '-')
    return FALSE;
  p++;
  have = machine_chars (p);
  want = machine_chars (vm_name);
  /* libvirt stops at 64 bytes of machine name: then only a prefix is known. */
  if (strlen (scope_name) >= 63)
    return g_str_has_prefix (want, have);
  return strcmp (want, have) == 0;
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
                     char *why, gsize why_len)
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
  if (id->scope_name && !fh_peer_scope_matches (id->scope_name, hello_name)) {
    g_autofree char *scope = g_strescape (id->scope_name, NULL);

    g_snprintf (why, why_len, "HELLO name does not match the process's machine scope \"%s\"",
                scope);
    return FALSE;
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
