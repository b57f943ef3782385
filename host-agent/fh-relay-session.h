/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One guest on the vsock transport, relayed to freqhintd
 * (spec/vsock-transport.md §5): the guest's socket on one side, a device
 * connection to the agent on the other (agent protocol, FH_F_RELAY).
 *
 * It does for the guest what QEMU's virtio-freqhint does for a driver:
 * checks every message, keeps the latest record per vCPU, forwards what
 * changed at most once per rate window (leading edge: the first change
 * after a quiet window goes at once), and turns the agent's GRANTS and
 * HOST_FREQ into FEEDBACK snapshots, at most one per window, the newest
 * replacing one not yet sent.  What a guest may cost is bounded: messages,
 * records and bytes per second, unread output and its age, the handshake's
 * time.  Any fault ends this session only.
 */
#pragma once

#include <glib.h>

#include <freqhint/agent_protocol.h>

/* Why a session ended; the front end counts each and penalizes the faults. */
typedef enum {
  FH_RELAY_END_EOF,       /* the guest closed: not a fault */
  FH_RELAY_END_MALFORMED, /* a frame or message broke the transport's rules */
  FH_RELAY_END_RATE,      /* messages, records or bytes per second over the bound */
  FH_RELAY_END_SLOW,      /* output left unread past the write timeout */
  FH_RELAY_END_TIMEOUT,   /* no HELLO in time */
  FH_RELAY_END_AGENT,     /* the agent refused or closed it (unknown CID, agent gone) */
  FH_RELAY_END_SHUTDOWN,  /* the front end stops */
  FH_RELAY_END_N,
} FhRelayEnd;

const char *fh_relay_end_name (FhRelayEnd end);
/* Whether the end counts against the peer (penalty). */
gboolean fh_relay_end_is_fault (FhRelayEnd end);

/* Where the guest came from, as the kernel or the hypervisor says. */
typedef struct {
  uint16_t transport; /* FH_RELAY_VSOCK, FH_RELAY_HYBRID */
  uint32_t cid;
  char path[FH_RELAY_PATH_MAX];
  uint32_t pid; /* hybrid: the process that connected (SO_PEERCRED), the VM's hypervisor */
} FhRelayPeer;

typedef struct _FhRelaySession FhRelaySession;

/* The session has ended (it is freed after this returns). */
typedef void (*FhRelayDone) (FhRelaySession *s, FhRelayEnd end, const char *why, gpointer data);

typedef struct {
  struct _FhPoller *poller; /* the front end's epoll source (fh-poller.h) */
  const char *agent_socket;
  guint hello_timeout_ms;
  guint write_timeout_ms;
  FhRelayDone done;
  gpointer data;
} FhRelayParams;

/* Takes the guest socket (non-blocking); params must outlive the session. */
FhRelaySession *fh_relay_session_new (int fd, const FhRelayPeer *peer, const FhRelayParams *params);
/* Ends it with FH_RELAY_END_SHUTDOWN (done is called). */
void fh_relay_session_close (FhRelaySession *s);
const FhRelayPeer *fh_relay_session_peer (FhRelaySession *s);
/* "CID 3" or "hybrid socket PATH". */
const char *fh_relay_session_describe (FhRelaySession *s);
/* Checks the time bounds (handshake, unread output); call a few times a second. */
void fh_relay_session_tick (FhRelaySession *s, gint64 now_us);
