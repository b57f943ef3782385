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

/* HELLO, then wait for WELCOME (answering nothing else meanwhile). */
gboolean fhtc_handshake (FhTestClient *c, const FhHello *hello, FhWelcome *welcome,
                         GError **error);

/* "vcpu:min:max[:perf][:idle]" or "vcpu:none"; "-" for a field not valid. */
gboolean fhtc_parse_hint (const char *spec, FhRecord *rec, GError **error);
/* "5b1c...-..." (36 chars) -> 16 bytes. */
gboolean fhtc_parse_uuid (const char *text, uint8_t uuid[16]);
