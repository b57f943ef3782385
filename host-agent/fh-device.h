/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device socket: one listening UNIX socket, one FhConn per QEMU.
 * Byte handling, framing, handshake, keepalive and closing live here; what
 * a HELLO or HINTS means is the daemon's business (callbacks).
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include "fh-poller.h"
#include "fh-protocol.h"

typedef struct _FhConn FhConn;
typedef struct _FhDeviceServer FhDeviceServer;

typedef struct {
  /* HELLO arrived and decoded.  Return FALSE with err set to refuse it. */
  gboolean (*hello) (FhConn *conn, const FhHello *hello, FhError *err, gpointer data);
  void (*hints) (FhConn *conn, const FhHints *hints, gpointer data);
  /* VCPUS (PA-19, only with FH_F_VCPUS accepted).  Return FALSE with err set to refuse it. */
  gboolean (*vcpus) (FhConn *conn, const FhVcpus *vcpus, FhError *err, gpointer data);
  /* The connection is going away (any reason); conn is unusable afterwards. */
  void (*closed) (FhConn *conn, gpointer data);
  /* A connection was closed by us for a protocol/permission/limit reason. */
  void (*rejected) (uint16_t reason, gpointer data);
} FhDeviceCallbacks;

typedef struct {
  guint hello_timeout_ms;
  guint keepalive_ms;
  guint max_connections; /* after HELLO (PA-4) */
  guint max_per_process; /* connections from one peer process; 0: no limit */
  guint max_per_uid;     /* connections after HELLO from one user; 0: no limit */
  /* Connections waiting for HELLO: a bounded pool apart from max_connections,
   * the oldest silent one displaced when full, in all or per uid or process
   * group (0: no bound) -- so that connections that never
   * send HELLO cannot make a valid HELLO be refused. */
  guint max_prehello;
  guint max_prehello_per_uid;
  guint max_prehello_per_group;
  guint socket_mode;
  gid_t socket_gid; /* group of the socket (and of its directory if we create it) */
  /* The vsock front end's uid ((uid_t) -1: none): exempt from the per-process,
   * per-uid and per-group bounds, which would count all its guests as one peer */
  uid_t relay_uid;
  /* The daemon samples current frequencies: FH_F_CUR_FREQ may be accepted (4.4c) */
  gboolean cur_freq;
  /* peer check: return TRUE to accept (fd: the connection, for SO_PEERGROUPS) */
  gboolean (*peer_allowed) (int fd, uid_t uid, gid_t gid, gpointer data);
} FhDeviceParams;

FhDeviceServer *fh_device_server_new (const char *path, const FhDeviceParams *params,
                                      const FhDeviceCallbacks *cb, gpointer data, GError **error);
/* Closes every connection with FH_CLOSE_NORMAL and removes the socket. */
void fh_device_server_free (FhDeviceServer *server);
guint fh_device_server_n_connections (FhDeviceServer *server);
/* The epoll source of the connections' sockets; other per-VM fds (the
 * peer's pidfd) belong there too, for the same reason (fh-poller.h). */
FhPoller *fh_device_server_poller (FhDeviceServer *server);
/* accept() failures for lack of descriptors or memory (each pauses accepting). */
guint64 fh_device_server_accept_failures (FhDeviceServer *server);

/*
 * Lifetime: the server holds one reference to each open connection and
 * drops it in fh_conn_close() (after the closed callback).  Code that reads
 * conn after calling something that may close it holds its own reference.
 */
FhConn *fh_conn_ref (FhConn *conn);
void fh_conn_unref (FhConn *conn);
gboolean fh_conn_is_closed (FhConn *conn);
/* The pidfd pinning the peer process (PA-20); valid while conn is. */
int fh_conn_peer_pidfd (FhConn *conn);
/* Still open with nothing to read: no EOF, no data the reader has not seen. */
gboolean fh_conn_idle_open (FhConn *conn);

void fh_conn_close (FhConn *conn, uint16_t reason, const char *fmt, ...) G_GNUC_PRINTF (3, 4);
gboolean fh_conn_send_grants (FhConn *conn, const FhGrants *grants);
/* PA-18; only when FH_F_HOST_FREQ was accepted (FALSE otherwise). */
gboolean fh_conn_send_host_freq (FhConn *conn, const FhHostFreq *hf);
/* PA-26; only when FH_F_CUR_FREQ was accepted; hf: the HOST_FREQ last sent. */
gboolean fh_conn_send_cur_freq (FhConn *conn, const FhCurFreq *cf, const FhHostFreq *hf);
void fh_conn_set_data (FhConn *conn, gpointer data);
gpointer fh_conn_get_data (FhConn *conn);
pid_t fh_conn_peer_pid (FhConn *conn);
uid_t fh_conn_peer_uid (FhConn *conn);
uint32_t fh_conn_features (FhConn *conn);
const char *fh_conn_describe (FhConn *conn);
