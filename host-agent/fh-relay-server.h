/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * freqhint-vsockd's guests: the relay sessions and the bounds per peer
 * (spec/vsock-transport.md §5).  A peer is a CID, or a hybrid socket.
 *
 *  - open connections: at most FREQHINT_VSOCK_HOST_CONNS_PER_PEER per peer
 *    (one established, one reconnecting) and max_connections in all; the
 *    kernel's send buffer of each at FH_VSOCK_FRAME_MAX (the unread output
 *    a guest can leave is that and one frame of ours);
 *  - a peer whose session ended in a fault (malformed input, a rate bound,
 *    unread output, no HELLO, the agent's refusal) has its new connections
 *    refused for FREQHINT_VSOCK_HOST_PENALTY_MS, doubling with each fault
 *    to FREQHINT_VSOCK_HOST_PENALTY_MAX_MS; a session that ends cleanly
 *    clears it.
 *
 * Every refusal and every end is logged (at most one line per peer per
 * FREQHINT_VSOCK_HOST_PENALTY_MS for refusals) and counted.
 */
#pragma once

#include <glib.h>

#include "fh-relay-session.h"

typedef struct _FhRelayServer FhRelayServer;

typedef struct {
  const char *agent_socket;
  guint max_connections;
  guint hello_timeout_ms;
  guint write_timeout_ms;
  guint penalty_ms, penalty_max_ms; /* FREQHINT_VSOCK_HOST_PENALTY_MS, _MAX_MS */
} FhRelayServerParams;

FhRelayServer *fh_relay_server_new (const FhRelayServerParams *params, GError **error);
/* Ends every session (the agent gets CLOSE NORMAL for each). */
void fh_relay_server_free (FhRelayServer *srv);
/* A new guest connection (the server owns fd from now on, refused or not). */
void fh_relay_server_accept (FhRelayServer *srv, int fd, const FhRelayPeer *peer);
guint fh_relay_server_n_sessions (FhRelayServer *srv);
/* The counters, as one JSON object (logged on SIGUSR1 and at exit). */
char *fh_relay_server_stats_json (FhRelayServer *srv);
