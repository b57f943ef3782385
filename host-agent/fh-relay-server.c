/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhint-vsockd"

#include "fh-relay-server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <freqhint/vsock_host.h>
#include <json-glib/json-glib.h>
#include <linux/freqhint_vsock.h>

#include "fh-poller.h"
#include "fh-vsock-codec.h"

#define TICK_MS 250

typedef enum {
  REFUSE_PEER_LIMIT, /* the peer has FREQHINT_VSOCK_HOST_CONNS_PER_PEER open */
  REFUSE_PENALTY,    /* the peer's last session ended in a fault, not long ago */
  REFUSE_TOTAL,      /* max_connections */
  REFUSE_N,
} Refusal;

static const char *const refusal_names[REFUSE_N] = { "peer-limit", "penalty", "max-connections" };

typedef struct {
  guint open;
  guint penalty_ms;       /* 0: none */
  gint64 penalty_until_us;
  gint64 last_log_us;
  guint64 suppressed;
} Peer;

struct _FhRelayServer {
  FhRelayServerParams params;
  char *agent_socket;
  FhRelayParams session_params;
  FhPoller *poller;
  GHashTable *sessions; /* FhRelaySession* set */
  GHashTable *peers;    /* "cid:N" / "uds:PATH" -> Peer */
  guint tick;
  guint64 accepted;
  guint64 refused[REFUSE_N];
  guint64 ended[FH_RELAY_END_N];
};

static char *
peer_key (const FhRelayPeer *p)
{
  return p->transport == FH_RELAY_HYBRID ? g_strdup_printf ("uds:%s", p->path)
                                         : g_strdup_printf ("cid:%u", p->cid);
}

static Peer *
peer_get (FhRelayServer *srv, const FhRelayPeer *p)
{
  g_autofree char *key = peer_key (p);
  Peer *peer = g_hash_table_lookup (srv->peers, key);

  if (!peer) {
    peer = g_new0 (Peer, 1);
    g_hash_table_insert (srv->peers, g_steal_pointer (&key), peer);
  }
  return peer;
}

static void
session_done (FhRelaySession *s, FhRelayEnd end, const char *why, gpointer data)
{
  FhRelayServer *srv = data;
  Peer *peer = peer_get (srv, fh_relay_session_peer (s));
  g_autofree char *text = NULL;

  if (!g_hash_table_remove (srv->sessions, s))
    return; /* never started (fh_relay_session_new() failed) */
  peer->open--;
  srv->ended[end]++;
  text = g_strescape (why, NULL);
  if (fh_relay_end_is_fault (end)) {
    peer->penalty_ms = peer->penalty_ms ? MIN (peer->penalty_ms * 2, srv->params.penalty_max_ms)
                                        : srv->params.penalty_ms;
    peer->penalty_until_us = g_get_monotonic_time () + (gint64) peer->penalty_ms * 1000;
    g_message ("%s: closed (%s): %s; its connections are refused for %u ms (%s: %" G_GUINT64_FORMAT
               " so far)",
               fh_relay_session_describe (s), fh_relay_end_name (end), text, peer->penalty_ms,
               fh_relay_end_name (end), srv->ended[end]);
  } else {
    if (end == FH_RELAY_END_EOF)
      peer->penalty_ms = 0;
    g_message ("%s: closed (%s): %s", fh_relay_session_describe (s), fh_relay_end_name (end), text);
  }
}

static void
refuse (FhRelayServer *srv, int fd, const FhRelayPeer *p, Peer *peer, Refusal why)
{
  gint64 now = g_get_monotonic_time ();
  g_autofree char *key = peer_key (p);
  g_autofree char *shown = g_strescape (key, NULL);

  close (fd);
  srv->refused[why]++;
  if (peer && peer->last_log_us &&
      now - peer->last_log_us < (gint64) srv->params.penalty_ms * 1000) {
    peer->suppressed++;
    return;
  }
  g_message ("%s: connection refused (%s; %" G_GUINT64_FORMAT " such refusals, %" G_GUINT64_FORMAT
             " of this peer's not logged since the last line)",
             shown, refusal_names[why], srv->refused[why], peer ? peer->suppressed : 0);
  if (peer) {
    peer->last_log_us = now;
    peer->suppressed = 0;
  }
}

void
fh_relay_server_accept (FhRelayServer *srv, int fd, const FhRelayPeer *p)
{
  Peer *peer = peer_get (srv, p);
  FhRelaySession *s;

  if (peer->penalty_ms && g_get_monotonic_time () < peer->penalty_until_us) {
    refuse (srv, fd, p, peer, REFUSE_PENALTY);
    return;
  }
  if (peer->open >= FREQHINT_VSOCK_HOST_CONNS_PER_PEER) {
    refuse (srv, fd, p, peer, REFUSE_PEER_LIMIT);
    return;
  }
  if (g_hash_table_size (srv->sessions) >= srv->params.max_connections) {
    refuse (srv, fd, p, NULL, REFUSE_TOTAL);
    return;
  }
  {
    /* bounds the kernel memory a guest that does not read can hold */
    int sndbuf = (int) FH_VSOCK_FRAME_MAX;

    (void) setsockopt (fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  }
  peer->open++;
  srv->accepted++;
  s = fh_relay_session_new (fd, p, &srv->session_params);
  if (!s) {
    peer->open--;
    return;
  }
  g_hash_table_add (srv->sessions, s);
  g_debug ("%s: accepted", fh_relay_session_describe (s));
}

/* Time bounds of every session; peers with nothing open and no penalty left are forgotten. */
static gboolean
on_tick (gpointer data)
{
  FhRelayServer *srv = data;
  gint64 now = g_get_monotonic_time ();
  g_autofree gpointer *list = (gpointer *) g_hash_table_get_keys_as_array (srv->sessions, NULL);
  GHashTableIter it;
  gpointer value;

  for (gpointer *l = list; *l; l++)
    if (g_hash_table_contains (srv->sessions, *l)) /* an earlier one's end cannot free another */
      fh_relay_session_tick (*l, now);
  g_hash_table_iter_init (&it, srv->peers);
  while (g_hash_table_iter_next (&it, NULL, &value)) {
    Peer *peer = value;

    if (peer->open == 0 && now >= peer->penalty_until_us + (gint64) peer->penalty_ms * 1000)
      g_hash_table_iter_remove (&it);
  }
  return G_SOURCE_CONTINUE;
}

FhRelayServer *
fh_relay_server_new (const FhRelayServerParams *params, GError **error)
{
  FhRelayServer *srv = g_new0 (FhRelayServer, 1);

  srv->params = *params;
  srv->agent_socket = g_strdup (params->agent_socket);
  srv->params.agent_socket = srv->agent_socket;
  srv->poller = fh_poller_new (error);
  if (!srv->poller) {
    g_free (srv->agent_socket);
    g_free (srv);
    return NULL;
  }
  srv->session_params = (FhRelayParams){
    .poller = srv->poller,
    .agent_socket = srv->agent_socket,
    .hello_timeout_ms = params->hello_timeout_ms,
    .write_timeout_ms = params->write_timeout_ms,
    .done = session_done,
    .data = srv,
  };
  srv->sessions = g_hash_table_new (NULL, NULL);
  srv->peers = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  srv->tick = g_timeout_add (TICK_MS, on_tick, srv);
  return srv;
}

void
fh_relay_server_free (FhRelayServer *srv)
{
  g_autofree gpointer *list = NULL;

  if (!srv)
    return;
  list = (gpointer *) g_hash_table_get_keys_as_array (srv->sessions, NULL);
  for (gpointer *l = list; *l; l++)
    fh_relay_session_close (*l);
  g_clear_handle_id (&srv->tick, g_source_remove);
  g_hash_table_unref (srv->sessions);
  g_hash_table_unref (srv->peers);
  fh_poller_free (srv->poller);
  g_free (srv->agent_socket);
  g_free (srv);
}

guint
fh_relay_server_n_sessions (FhRelayServer *srv)
{
  return g_hash_table_size (srv->sessions);
}

char *
fh_relay_server_stats_json (FhRelayServer *srv)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autoptr (JsonNode) root = NULL;

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "sessions");
  json_builder_add_int_value (b, g_hash_table_size (srv->sessions));
  json_builder_set_member_name (b, "accepted_total");
  json_builder_add_int_value (b, (gint64) srv->accepted);
  json_builder_set_member_name (b, "refused_total");
  json_builder_begin_object (b);
  for (int i = 0; i < REFUSE_N; i++) {
    json_builder_set_member_name (b, refusal_names[i]);
    json_builder_add_int_value (b, (gint64) srv->refused[i]);
  }
  json_builder_end_object (b);
  json_builder_set_member_name (b, "closed_total");
  json_builder_begin_object (b);
  for (int i = 0; i < FH_RELAY_END_N; i++) {
    json_builder_set_member_name (b, fh_relay_end_name (i));
    json_builder_add_int_value (b, (gint64) srv->ended[i]);
  }
  json_builder_end_object (b);
  json_builder_end_object (b);
  root = json_builder_get_root (b);
  return json_to_string (root, FALSE);
}
