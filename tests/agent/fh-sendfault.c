/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * LD_PRELOAD fault injection for freqhintd tests: the first GRANTS frame
 * freqhintd sends goes out only half, and the socket then refuses the
 * rest (EAGAIN) for good, as if the peer had stopped reading in the middle
 * of a frame.  Any other frame on that socket is let through, so a CLOSE
 * written after the half frame -- the interleaving PB-4 forbids -- reaches
 * the peer and can be seen there.
 *
 * Only when FH_SENDFAULT=grants-half is set; otherwise send() is untouched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <freqhint/agent_protocol.h>

static int held_fd = -1;
static uint8_t held[sizeof (struct fh_frame_hdr) + FH_MAX_PAYLOAD];
static size_t held_len;

ssize_t
send (int fd, const void *buf, size_t len, int flags)
{
  static ssize_t (*real_send) (int, const void *, size_t, int);
  const uint8_t *p = buf;
  const char *mode = getenv ("FH_SENDFAULT");

  if (!real_send)
    real_send = (ssize_t (*) (int, const void *, size_t, int)) dlsym (RTLD_NEXT, "send");
  if (!mode || strcmp (mode, "grants-half") != 0)
    return real_send (fd, buf, len, flags);

  /* The rest of the half-sent frame (freqhintd's queue starts with it). */
  if (fd == held_fd && len >= held_len && memcmp (p, held, held_len) == 0) {
    errno = EAGAIN;
    return -1;
  }
  if (held_fd < 0 && len >= sizeof (struct fh_frame_hdr) && len - len / 2 <= sizeof held &&
      p[4] == (FH_MSG_GRANTS & 0xff) && p[5] == (FH_MSG_GRANTS >> 8)) {
    ssize_t n = real_send (fd, buf, len / 2, flags);

    if (n == (ssize_t) (len / 2)) {
      held_fd = fd;
      held_len = len - len / 2;
      memcpy (held, p + len / 2, held_len);
    }
    return n;
  }
  return real_send (fd, buf, len, flags);
}
