/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * metadata-check FILE...: run the agent's metadata parser on files and say
 * "ok" or the error, exit 1 if any was refused.  The schema test compares
 * its verdicts with xmllint --relaxng's.
 */
#include <stdio.h>

#include "fh-metadata.h"

int
main (int argc, char **argv)
{
  int status = 0;

  for (int i = 1; i < argc; i++) {
    g_autofree char *text = NULL;
    gsize len;
    g_autoptr (GError) error = NULL;
    g_autoptr (FhMetadata) md = NULL;

    if (!g_file_get_contents (argv[i], &text, &len, &error)) {
      fprintf (stderr, "%s\n", error->message);
      return 2;
    }
    md = fh_metadata_parse (text, len, &error);
    printf ("%s: %s\n", argv[i], md ? "ok" : error->message);
    if (!md)
      status = 1;
  }
  return status;
}
