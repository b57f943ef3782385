/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Listening sockets handed over by systemd (socket activation,
 * sd_listen_fds(3)) without linking libsystemd: LISTEN_PID must be our
 * pid, LISTEN_FDS counts descriptors from 3, LISTEN_FDNAMES names them
 * (FileDescriptorName= in the .socket unit).  The variables are read once
 * and removed from the environment, so no child inherits them.
 *
 * freqhintd asks for each socket by name, falling back to the path it is
 * bound to; when nothing was passed it creates the socket itself (run by
 * hand, in tests).
 */
#pragma once

#include <glib.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * Read and unset LISTEN_* now.  Call before any thread starts (unsetenv is
 * not thread-safe); fh_listen_take() calls it if nobody did.
 */
void fh_listen_init (void);

/*
 * A passed listening AF_UNIX stream socket named name, or bound to path;
 * the caller owns it (O_NONBLOCK and FD_CLOEXEC set).  -1 when none was
 * passed; -2 with error set when the one passed is of another kind.
 */
int fh_listen_take (const char *name, const char *path, GError **error);
/* The same for a listening AF_VSOCK stream socket (ListenStream=vsock::PORT), by name only. */
int fh_listen_take_vsock (const char *name, GError **error);

/*
 * The one way freqhintd's servers get their listening AF_UNIX socket: the
 * one systemd passed (by name, else bound to path; *activated set), or a new
 * one at path, bound with group gid ((gid_t) -1: unchanged) and mode set
 * before it listens, in a directory others cannot write to (created 0750
 * if missing).  A stale socket at path is replaced; any other file is an
 * error.  Non-blocking and close-on-exec.  -1 with error set on failure.
 */
int fh_listen_unix (const char *name, const char *path, gid_t gid, mode_t mode,
                    gboolean *activated, GError **error);

/* Passed descriptors nobody took: logged and closed. */
void fh_listen_close_unused (void);

/*
 * Whether the peer on a connected AF_UNIX socket has gid among its groups
 * (primary or supplementary, SO_PEERGROUPS; as they were at connect()).
 */
gboolean fh_listen_peer_in_group (int fd, gid_t gid);
/* The same for any of n_gids groups (allowed_gids, PA-2). */
gboolean fh_listen_peer_in_groups (int fd, const gid_t *gids, guint n_gids);
