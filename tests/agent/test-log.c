/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * freqhintd's structured logging (fh-log.h): the fields a message carries
 * to the journal, and the line it writes on stderr otherwise.
 */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-log.h"

#include <stdio.h>

/* A writer that prints each field as KEY=value, one per line, then "--". */
static GLogWriterOutput
print_fields (GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
  for (gsize i = 0; i < n; i++)
    if (fields[i].length < 0)
      printf ("%s=%s\n", fields[i].key, (const char *) fields[i].value);
  printf ("--\n");
  fflush (stdout);
  return G_LOG_WRITER_HANDLED;
}

static void
test_fields (void)
{
  if (g_test_subprocess ()) {
    g_log_set_writer_func (print_fields, NULL, NULL);
    fh_log_vm (G_LOG_LEVEL_MESSAGE, "web1", "6d2f0e1c-0000-4000-8000-000000000001",
               "VM \"%s\" connected: %u vCPUs", "web1", 16u);
    fh_log_policy (G_LOG_LEVEL_WARNING, 3, "policy%u: writes fail", 3u);
    fh_log_tid (G_LOG_LEVEL_WARNING, 4242, "releasing tid %u", 4242u);
    /* Plain g_message() is structured too (G_LOG_USE_STRUCTURED): it has CODE_* fields. */
    g_message ("plain %d", 7);
    return;
  }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  /* GLib orders the fields as it likes: each is looked for alone, in its own entry. */
  g_test_trap_assert_stdout ("*FREQHINT_VM=web1\n*--\n*--\n*--\n*--\n");
  g_test_trap_assert_stdout ("*FREQHINT_VM_UUID=6d2f0e1c-0000-4000-8000-000000000001\n*--\n*--\n*--\n*--\n");
  g_test_trap_assert_stdout ("*MESSAGE=VM \"web1\" connected: 16 vCPUs\n*--\n*--\n*--\n*--\n");
  g_test_trap_assert_stdout ("*PRIORITY=5\n*--\n*--\n*--\n*--\n");
  g_test_trap_assert_stdout ("*GLIB_DOMAIN=freqhintd\n*--\n*--\n*--\n*--\n");
  g_test_trap_assert_stdout ("*--\n*FREQHINT_POLICY=3\n*--\n*--\n*--\n");
  g_test_trap_assert_stdout ("*--\n*MESSAGE=policy3: writes fail\n*--\n*--\n*--\n");
  g_test_trap_assert_stdout ("*--\n*PRIORITY=4\n*--\n*--\n*--\n");
  g_test_trap_assert_stdout ("*--\n*--\n*FREQHINT_TID=4242\n*--\n*--\n");
  g_test_trap_assert_stdout ("*--\n*--\n*MESSAGE=releasing tid 4242\n*--\n*--\n");
  g_test_trap_assert_stdout ("*--\n*--\n*--\n*CODE_FILE=*test-log.c\n*--\n");
  g_test_trap_assert_stdout ("*--\n*--\n*--\n*CODE_FUNC=test_fields\n*--\n");
  g_test_trap_assert_stdout ("*--\n*--\n*--\n*MESSAGE=plain 7\n*--\n");
}

/* Without a journal: "domain: message" lines on stderr, debug only when verbose. */
static void
test_stderr (void)
{
  if (g_test_subprocess ()) {
    fh_log_init (FALSE);
    g_debug ("not shown");
    fh_log_vm (G_LOG_LEVEL_DEBUG, "web1", "u", "not shown either");
    fh_log_vm (G_LOG_LEVEL_MESSAGE, "web1", "u", "VM \"%s\" connected", "web1");
    g_warning ("a warning");
    return;
  }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("freqhintd: VM \"web1\" connected\nfreqhintd: a warning\n");
}

static void
test_stderr_verbose (void)
{
  if (g_test_subprocess ()) {
    fh_log_init (TRUE);
    g_debug ("shown %s", "now");
    return;
  }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("freqhintd: shown now\n");
}

static void
test_format_line (void)
{
  const GLogField fields[] = {
    { "PRIORITY", "4", -1 },
    { "GLIB_DOMAIN", "freqhint-libvirt", -1 },
    { "MESSAGE", "domain web1: bad value", -1 },
  };
  g_autofree char *line = fh_log_format_line (fields, G_N_ELEMENTS (fields));
  g_autofree char *nodomain = fh_log_format_line (fields + 2, 1);

  g_assert_cmpstr (line, ==, "freqhint-libvirt: domain web1: bad value");
  g_assert_cmpstr (nodomain, ==, "freqhintd: domain web1: bad value");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/log/fields", test_fields);
  g_test_add_func ("/log/stderr", test_stderr);
  g_test_add_func ("/log/stderr-verbose", test_stderr_verbose);
  g_test_add_func ("/log/format-line", test_format_line);
  return g_test_run ();
}
