/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: arbitrary bytes from a guest on the vsock transport,
 * through freqhint-vsockd's framing and decoders (fh-vsock-codec.h) the way
 * fh-relay-session.c consumes them: HELLO first, then HINTS.  The first
 * input byte picks the guest's vCPU count and whether PERF was accepted.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fh-vsock-codec.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static FhHints hints;
  uint16_t num_cpus;
  bool perf_ok;
  bool hello_seen = false;
  size_t off = 1;

  if (size < 1)
    return 0;
  num_cpus = (uint16_t) (data[0] % FH_MAX_VCPUS + 1);
  perf_ok = data[0] >> 7;
  while (off < size) {
    FhFrame f;
    FhError err;
    FhVsockHello hello;
    size_t frame_size;
    unsigned rejected;

    if (fh_vsock_frame_parse (data + off, size - off, &f, &frame_size, &err) != FH_PARSE_FRAME)
      break;
    if (frame_size < FH_VSOCK_FRAME_HDR + 2 || frame_size > size - off ||
        f.len > FREQHINT_VSOCK_MAX_FRAME)
      __builtin_trap ();
    if (!hello_seen) {
      if (!fh_vsock_decode_hello (&f, num_cpus, &hello, &err))
        break;
      if (hello.num_cpus < 1 || hello.num_cpus > num_cpus)
        __builtin_trap ();
      hello_seen = true;
    } else if (fh_vsock_decode_hints (&f, num_cpus, perf_ok, &hints, &rejected, &err)) {
      /* every record kept is one the device would keep */
      for (unsigned i = 0; i < hints.num_records; i++)
        if (!fh_record_check (&hints.records[i], num_cpus, perf_ok ? FH_F_PERF : 0, NULL))
          __builtin_trap ();
      if (hints.num_records + rejected != fh_get_le16 (f.payload + 2))
        __builtin_trap ();
    } else {
      break;
    }
    off += frame_size;
  }
  return 0;
}
