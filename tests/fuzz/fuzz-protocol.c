/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: arbitrary bytes from a device, through the agent's
 * framing and every decoder, the way fh-device.c consumes them.  The first
 * two input bytes pick the connection's vCPU count (1 to FH_MAX_VCPUS) and
 * features.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fh-protocol.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static FhHello hello;
  static FhHints hints;
  static FhGrants grants;
  static FhHostFreq last_hf; /* PD-20: CUR_FREQ is checked against it */
  bool have_hf = false;
  uint16_t num_vcpus;
  uint32_t features;
  size_t off = 2;

  if (size < 2)
    return 0;
  num_vcpus = (uint16_t) ((data[0] | (data[1] & 0x7f) << 8) % FH_MAX_VCPUS + 1);
  features = data[1] >> 7 ? FH_F_ALL : 0;

  while (off < size) {
    FhFrame f;
    FhError err;
    FhWelcome w;
    FhClose c;
    uint64_t cookie;
    size_t frame_size;
    uint8_t out[FH_FRAME_MAX];

    if (fh_frame_parse (data + off, size - off, &f, &frame_size, &err) != FH_PARSE_FRAME)
      break;
    if (frame_size < FH_FRAME_HDR_SIZE || frame_size > size - off)
      __builtin_trap ();
    if (fh_decode_hello (&f, &hello, &err)) {
      if (!memchr (hello.name, '\0', sizeof hello.name) || hello.num_vcpus == 0 ||
          hello.num_vcpus > FH_MAX_VCPUS)
        __builtin_trap ();
      /* What decodes must encode to the same bytes. */
      if (fh_encode_hello (out, sizeof out, &hello) != frame_size ||
          memcmp (out + FH_FRAME_HDR_SIZE, f.payload, 32) != 0)
        __builtin_trap ();
    }
    if (fh_decode_hints (&f, num_vcpus, features, &hints, &err)) {
      for (unsigned i = 0; i < hints.num_records; i++)
        if (hints.records[i].vcpu >= num_vcpus ||
            !fh_record_check (&hints.records[i], num_vcpus, features, NULL))
          __builtin_trap ();
      if (fh_encode_hints (out, sizeof out, &hints) != frame_size ||
          memcmp (out, data + off, frame_size) != 0)
        __builtin_trap ();
    }
    {
      static FhHostFreq hf;
      static FhVcpus vc;
      static FhCurFreq cf;

      /* PA-18, PA-19: what decodes is valid and encodes to the same bytes */
      if (fh_decode_host_freq (&f, num_vcpus, &hf, &err)) {
        for (unsigned i = 0; i < hf.num_classes; i++)
          if (!fh_freq_class_check (&hf.classes[i], NULL))
            __builtin_trap ();
        if (fh_encode_host_freq (out, sizeof out, &hf) != frame_size ||
            memcmp (out, data + off, frame_size) != 0)
          __builtin_trap ();
        last_hf = hf;
        have_hf = true;
      }
      /* PD-20: what decodes is within the latest classes and encodes to the same bytes */
      if (fh_decode_cur_freq (&f, num_vcpus, have_hf ? &last_hf : NULL, &cf, &err)) {
        for (unsigned i = 0; i < cf.num_vcpus; i++)
          if (!fh_cur_freq_ok (&last_hf, last_hf.freq_class[i], cf.cur_khz[i]))
            __builtin_trap ();
        if (fh_encode_cur_freq (out, sizeof out, &cf, &last_hf) != frame_size ||
            memcmp (out, data + off, frame_size) != 0)
          __builtin_trap ();
      }
      if (fh_decode_vcpus (&f, num_vcpus, &vc, &err) &&
          (fh_encode_vcpus (out, sizeof out, &vc) != frame_size ||
           memcmp (out, data + off, frame_size) != 0))
        __builtin_trap ();
    }
    (void) fh_decode_welcome (&f, &w, &err);
    (void) fh_decode_grants (&f, num_vcpus, &grants, &err);
    (void) fh_decode_ping (&f, &cookie, &err);
    (void) fh_decode_close (&f, &c, &err);
    off += frame_size;
  }
  return 0;
}
