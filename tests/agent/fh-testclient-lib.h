/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device side of the freqhint agent protocol, for tests, load tests and
 * benchmarks: connect to freqhintd like QEMU's virtio-freqhint does, do the
 * handshake, send hints, answer PINGs, collect GRANTS and CLOSE.
 *
 * Blocking I/O with poll() timeouts; no main loop needed.
 */
#pragma once

#include <glib.h>

#include "fh-protocol.h"

typedef struct _FhTestClient FhTestClient;

FhTestClient *fhtc_connect (const char *socket_path, GError **error);
/* A client on a socket connected elsewhere (another process connected it). */
FhTestClient *fhtc_adopt_fd (int fd);
void fhtc_free (FhTestClient *c);
int fhtc_fd (FhTestClient *c);

gboolean fhtc_send (FhTestClient *c, const void *buf, size_t len, GError **error);
gboolean fhtc_send_hello (FhTestClient *c, const FhHello *hello, GError **error);
gboolean fhtc_send_hints (FhTestClient *c, const FhHints *hints, GError **error);
gboolean fhtc_send_close (FhTestClient *c, uint16_t reason, const char *text, GError **error);

/*
 * Wait up to timeout_ms (-1: forever) for the next frame.  Returns TRUE
 * with *frame pointing into the client's buffer (valid until the next
 * call), FALSE with error on timeout (G_IO_ERROR_TIMED_OUT), EOF
 * (G_IO_ERROR_CONNECTION_CLOSED) or a frame the agent should never send.
 */
gboolean fhtc_next_frame (FhTestClient *c, int timeout_ms, FhFrame *frame, GError **error);

/* TRUE when a whole frame is already buffered (poll() on the fd would not say so). */
gboolean fhtc_has_frame (FhTestClient *c);

/* HELLO, then wait for WELCOME (answering nothing else meanwhile): 10 s, or timeout_ms. */
gboolean fhtc_handshake (FhTestClient *c, const FhHello *hello, FhWelcome *welcome,
                         GError **error);
gboolean fhtc_handshake_within (FhTestClient *c, const FhHello *hello, FhWelcome *welcome,
                                int timeout_ms, GError **error);

/*
 * A VM's own process, as the agent wants one per VM (agent protocol PA-20):
 * fhtc_spawn_peer() forks a child whose command line reads "fh-loadclient
 * -name NAME -uuid UUID" (it rewrites the argv area fhtc_peer_init() was
 * given, from main()'s argc/argv), which connects to socket_path, hands
 * the socket back and pauses until killed (or its parent dies).  Returns
 * the socket, -1 on failure.  fhtc_link_cmdline() makes DIR/<pid>/cmdline
 * of a /proc fixture a link to the child's real one.
 */
void fhtc_peer_init (int argc, char **argv);
int fhtc_spawn_peer (const char *socket_path, const char *name, const uint8_t uuid[16], pid_t *pid);
gboolean fhtc_link_cmdline (const char *proc_fixture, pid_t pid);

/* "vcpu:min:max[:perf][:idle]" or "vcpu:none"; "-" for a field not valid. */
gboolean fhtc_parse_hint (const char *spec, FhRecord *rec, GError **error);
/* "5b1c...-..." (36 chars) -> 16 bytes. */
gboolean fhtc_parse_uuid (const char *text, uint8_t uuid[16]);
