/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-paths.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <gio/gio.h>

/* Pseudo-files we read are a few hundred bytes; bound what a fixture or a
 * hostile tree can make us allocate. */
#define SMALL_FILE_MAX (64 * 1024)

void
fh_paths_init (FhPaths *paths, const char *sysfs, const char *proc, const char *cgroup)
{
  paths->sysfs = g_strdup (sysfs ? sysfs : "/sys");
  paths->proc = g_strdup (proc ? proc : "/proc");
  paths->cgroup = g_strdup (cgroup ? cgroup : "/sys/fs/cgroup");
}

void
fh_paths_clear (FhPaths *paths)
{
  g_clear_pointer (&paths->sysfs, g_free);
  g_clear_pointer (&paths->proc, g_free);
  g_clear_pointer (&paths->cgroup, g_free);
}

char *
fh_path (const FhPaths *paths, FhRoot root, const char *fmt, ...)
{
  g_autofree char *rel = NULL;
  const char *base;
  va_list ap;

  switch (root) {
    case FH_ROOT_SYSFS:
      base = paths->sysfs;
      break;
    case FH_ROOT_PROC:
      base = paths->proc;
      break;
    case FH_ROOT_CGROUP:
    default:
      base = paths->cgroup;
      break;
  }
  va_start (ap, fmt);
  rel = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  while (*rel == '/')
    memmove (rel, rel + 1, strlen (rel));
  return g_build_filename (base, rel, NULL);
}

/*
 * Most of these files are far below a page: read through a small stack
 * buffer and allocate only what the file holds (the daemon reads several
 * per vCPU thread on every poll).
 */
char *
fh_read_small_file (const char *path, GError **error)
{
  char chunk[4096];
  g_autoptr (GString) buf = NULL;
  int fd;

  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;

    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "%s: %s", path, g_strerror (e));
    return NULL;
  }
  for (;;) {
    ssize_t n = read (fd, chunk, sizeof chunk);

    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int e = errno;

      close (fd);
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "%s: %s", path, g_strerror (e));
      return NULL;
    }
    if (n == 0)
      break;
    if (!buf)
      buf = g_string_sized_new ((gsize) n + 1);
    g_string_append_len (buf, chunk, n);
    if (buf->len >= SMALL_FILE_MAX) {
      close (fd);
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: larger than %d bytes", path,
                   SMALL_FILE_MAX);
      return NULL;
    }
  }
  close (fd);
  return buf ? g_string_free (g_steal_pointer (&buf), FALSE) : g_strdup ("");
}

/*
 * Sysfs attributes take one write(2) of the whole value; no O_CREAT, no
 * O_TRUNC games: a missing attribute is an error (ENOENT), not a new file.
 */
gboolean
fh_write_small_file (const char *path, const char *value, GError **error)
{
  size_t len = strlen (value);
  ssize_t n;
  int fd;

  fd = open (path, O_WRONLY | O_CLOEXEC | O_TRUNC);
  if (fd < 0) {
    int e = errno;

    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "%s: %s", path, g_strerror (e));
    return FALSE;
  }
  do
    n = write (fd, value, len);
  while (n < 0 && errno == EINTR);
  if (n < 0 || (size_t) n != len) {
    int e = n < 0 ? errno : EIO;

    close (fd);
    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "%s: %s", path, g_strerror (e));
    return FALSE;
  }
  if (close (fd) < 0) {
    int e = errno;

    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "%s: %s", path, g_strerror (e));
    return FALSE;
  }
  return TRUE;
}
