/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target: the libvirt metadata parser takes untrusted bytes. */
#include <string.h>

#include "fh-metadata.h"

int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  g_autoptr (FhMetadata) md = fh_metadata_parse ((const char *) data, size, NULL);
  g_autoptr (FhMetadata) implied =
      fh_metadata_parse_full ((const char *) data, size, FH_METADATA_PARSE_NS_IMPLIED, NULL);

  /* The implied-namespace mode only ever accepts more. */
  if (md && !implied)
    __builtin_trap ();

  if (md) {
    /* What the parser accepts must serialize and parse back to the same. */
    g_autofree char *xml = fh_metadata_to_xml (md);
    g_autoptr (FhMetadata) again = fh_metadata_parse (xml, strlen (xml), NULL);

    if (!fh_metadata_equal (md, again))
      __builtin_trap ();
  }
  return 0;
}
