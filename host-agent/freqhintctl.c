/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * freqhintctl: ask freqhintd what it decided.
 *
 * Exit status: 0 success; 1 the daemon answered with an error (e.g. no
 * such VM); 2 bad usage; 3 the daemon could not be reached or answered
 * garbage.
 */
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <json-glib/json-glib.h>
#ifdef HAVE_LIBVIRT
#include "fh-libvirt-xml.h"
#endif

#include "fh-config.h"

enum {
  EXIT_OK = 0,
  EXIT_DAEMON_ERROR = 1,
  EXIT_USAGE = 2,
  EXIT_UNREACHABLE = 3,
};

#define REPLY_MAX (16 * 1024 * 1024)

/* timeout_s: how long connecting, and then each read, may wait (0: no limit). */
static char *
request (const char *path, const char *line, guint timeout_s, GError **error)
{
  g_autoptr (GSocketClient) client = g_socket_client_new ();
  g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (path);
  g_autoptr (GSocketConnection) conn = NULL;
  g_autoptr (GByteArray) reply = g_byte_array_new ();
  GInputStream *in;
  char buf[8192];

  g_socket_client_set_timeout (client, timeout_s);
  conn = g_socket_client_connect (client, G_SOCKET_CONNECTABLE (addr), NULL, error);
  if (!conn)
    return NULL;
  if (!g_output_stream_write_all (g_io_stream_get_output_stream (G_IO_STREAM (conn)), line,
                                  strlen (line), NULL, NULL, error))
    return NULL;
  in = g_io_stream_get_input_stream (G_IO_STREAM (conn));
  for (;;) {
    gssize n = g_input_stream_read (in, buf, sizeof buf, NULL, error);

    if (n < 0)
      return NULL;
    if (n == 0)
      break;
    if (reply->len + n > REPLY_MAX) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_MESSAGE_TOO_LARGE, "reply too large");
      return NULL;
    }
    g_byte_array_append (reply, (guint8 *) buf, (guint) n);
  }
  g_byte_array_append (reply, (guint8 *) "", 1);
  return (char *) g_byte_array_free (g_steal_pointer (&reply), FALSE);
}

static gint64
iget (JsonObject *o, const char *name)
{
  JsonNode *n = json_object_get_member (o, name);

  return n && JSON_NODE_HOLDS_VALUE (n) ? json_node_get_int (n) : -1;
}

static const char *
sget (JsonObject *o, const char *name)
{
  JsonNode *n = json_object_get_member (o, name);

  return n && JSON_NODE_HOLDS_VALUE (n) ? json_node_get_string (n) : "-";
}

/* Capacity (0..1024) as the cgroup files and the domain XML print it: "max" or a percentage. */
static char *
percent (gint64 cap)
{
  guint hundredths;

  if (cap < 0)
    return g_strdup ("-");
  if (cap >= 1024)
    return g_strdup ("max");
  hundredths = (guint) ((cap * 10000 + 512) / 1024);
  return g_strdup_printf ("%u.%02u", hundredths / 100, hundredths % 100);
}

/* "29.30..58.59" (percent) for a {"min","max"} member, "-" when absent. */
static char *
range (JsonObject *o, const char *name)
{
  JsonNode *n = json_object_get_member (o, name);
  g_autofree char *lo = NULL, *hi = NULL;
  JsonObject *r;

  if (!n || !JSON_NODE_HOLDS_OBJECT (n))
    return g_strdup ("-");
  r = json_node_get_object (n);
  lo = percent (iget (r, "min"));
  hi = percent (iget (r, "max"));
  return g_strdup_printf ("%s..%s", lo, hi);
}

static char *
opt_int (JsonObject *o, const char *name)
{
  JsonNode *n = json_object_get_member (o, name);

  if (!n || JSON_NODE_HOLDS_NULL (n))
    return g_strdup ("-");
  return g_strdup_printf ("%" G_GINT64_FORMAT, json_node_get_int (n));
}

static char *
opt_percent (JsonObject *o, const char *name)
{
  JsonNode *n = json_object_get_member (o, name);

  if (!n || JSON_NODE_HOLDS_NULL (n))
    return g_strdup ("-");
  return percent (json_node_get_int (n));
}

/*
 * Tables: cells are collected first, then each column is as wide as its
 * widest cell on the terminal -- counted in display columns, not bytes, so
 * VM names in any script line up (wide CJK characters take two).
 */
typedef struct {
  guint n_cols;
  const char *align; /* per column: 'l' or 'r' */
  GPtrArray *cells;  /* char*, row-major, the header first */
} Table;

static Table *
table_new (const char *align, ...)
{
  Table *t = g_new0 (Table, 1);
  va_list ap;
  const char *h;

  t->align = align;
  t->n_cols = (guint) strlen (align);
  t->cells = g_ptr_array_new_with_free_func (g_free);
  va_start (ap, align);
  while ((h = va_arg (ap, const char *)))
    g_ptr_array_add (t->cells, g_strdup (h));
  va_end (ap);
  g_assert (t->cells->len == t->n_cols);
  return t;
}

/* Takes ownership of the cell. */
static void
table_add (Table *t, char *cell)
{
  g_ptr_array_add (t->cells, cell);
}

static gsize
display_width (const char *s)
{
  gsize w = 0;

  for (const char *p = s; *p; p = g_utf8_next_char (p)) {
    gunichar c = g_utf8_get_char (p);

    if (g_unichar_iszerowidth (c))
      continue;
    w += g_unichar_iswide (c) ? 2 : 1;
  }
  return w;
}

static void
table_print_free (Table *t)
{
  g_autofree gsize *width = g_new0 (gsize, t->n_cols);

  g_assert (t->cells->len % t->n_cols == 0);
  for (guint i = 0; i < t->cells->len; i++)
    width[i % t->n_cols] = MAX (width[i % t->n_cols], display_width (t->cells->pdata[i]));
  for (guint i = 0; i < t->cells->len; i++) {
    guint col = i % t->n_cols;
    const char *cell = t->cells->pdata[i];
    gsize pad = width[col] - display_width (cell);
    gboolean last = col == t->n_cols - 1;

    if (col > 0)
      fputs (t->align[col] == 'r' ? " " : "  ", stdout);
    if (t->align[col] == 'r')
      printf ("%*s", (int) pad, "");
    fputs (cell, stdout);
    if (t->align[col] != 'r' && !last)
      printf ("%*s", (int) pad, "");
    if (last)
      putchar ('\n');
  }
  g_ptr_array_unref (t->cells);
  g_free (t);
}

static void
print_status (JsonObject *o)
{
  JsonObject *rej = json_object_get_object_member (o, "rejected");
  JsonNode *lv = json_object_get_member (o, "libvirt");
  g_autofree char *sys = range (o, "system_defaults");
  GList *members, *l;

  printf ("version:          %s\n", sget (o, "version"));
  printf ("backend:          %s\n", sget (o, "backend"));
  printf ("uptime:           %" G_GINT64_FORMAT " s\n", iget (o, "uptime_seconds"));
  printf ("connected VMs:    %" G_GINT64_FORMAT " (%" G_GINT64_FORMAT " vCPUs, with the host's)\n",
          iget (o, "connected_vms"), iget (o, "vcpus"));
  printf ("host-only VMs:    %" G_GINT64_FORMAT " (no device connection; ceilings held)\n",
          iget (o, "host_vms"));
  printf ("CPUs:             %" G_GINT64_FORMAT " in %" G_GINT64_FORMAT
          " cpufreq policies, governor %s\n",
          iget (o, "cpus"), iget (o, "cpufreq_policies"), sget (o, "governor"));
  printf ("system clamps:    %s %%\n", sys);
  printf ("perf as floor:    %s, headroom %.2f (%s)\n",
          json_object_get_boolean_member (o, "perf_as_floor") ? "yes" : "no",
          json_object_get_double_member (o, "perf_headroom"), sget (o, "perf_headroom_reason"));
  if (lv && JSON_NODE_HOLDS_OBJECT (lv)) {
    JsonObject *lo = json_node_get_object (lv);

    printf ("libvirt:          %s, %s\n", sget (lo, "uri"),
            json_object_get_boolean_member_with_default (lo, "connected", FALSE)
                ? "connected"
                : "not connected (retrying)");
  } else {
    printf ("libvirt:          not followed\n");
  }
  printf ("device socket:    %s\n", sget (o, "socket"));
  if (iget (o, "metrics_port") >= 0)
    printf ("metrics:          %s port %" G_GINT64_FORMAT "\n", sget (o, "metrics_address"),
            iget (o, "metrics_port"));
  else
    printf ("metrics:          off\n");
  printf ("connections:      %" G_GINT64_FORMAT "\n", iget (o, "vm_connections_total"));
  printf ("hint frames:      %" G_GINT64_FORMAT "\n", iget (o, "hints_frames_total"));
  printf ("backend writes:   %" G_GINT64_FORMAT " (%" G_GINT64_FORMAT " failed)\n",
          iget (o, "backend_writes_total"), iget (o, "write_failures_total"));
  printf ("rejected:         %" G_GINT64_FORMAT, iget (o, "rejected_total"));
  members = rej ? json_object_get_members (rej) : NULL;
  for (l = members; l; l = l->next)
    if (iget (rej, l->data) > 0)
      printf (" %s=%" G_GINT64_FORMAT, (char *) l->data, iget (rej, l->data));
  g_list_free (members);
  printf ("\n");
}

static void
print_vms (JsonArray *a)
{
  Table *t = table_new ("llrrrllllll", "NAME", "UUID", "PID", "VCPUS", "ACTIVE", "OPERATOR(%)",
                        "SOURCE", "GUEST-HINTS", "SINCE", "STATE-FROM", "TRANSPORT", NULL);

  for (guint i = 0; i < json_array_get_length (a); i++) {
    JsonObject *o = json_array_get_object_element (a, i);
    JsonNode *src = json_object_get_member (o, "operator_source");

    table_add (t, g_strdup (sget (o, "name")));
    table_add (t, g_strdup (sget (o, "uuid")));
    table_add (t, opt_int (o, "pid"));
    table_add (t, opt_int (o, "vcpus"));
    table_add (t, opt_int (o, "active_vcpus"));
    table_add (t, range (o, "operator"));
    table_add (t, g_strdup (src && JSON_NODE_HOLDS_VALUE (src) ? json_node_get_string (src)
                                                               : "default"));
    table_add (t, g_strdup (json_object_get_boolean_member_with_default (o, "guest_hints", TRUE)
                                ? "on"
                                : "off"));
    table_add (t, g_strdup (sget (o, "connected_since")));
    /* MR-28: guest, host or both; and which host record */
    {
      JsonNode *rec = json_object_get_member (o, "host_record");

      table_add (
          t, rec && JSON_NODE_HOLDS_VALUE (rec)
                 ? g_strdup_printf ("%s (%s)", sget (o, "state_source"), json_node_get_string (rec))
                 : g_strdup (sget (o, "state_source")));
    }
    /* how the guest's hints arrive: device, vsock (CID N), hybrid, none */
    table_add (t, json_object_has_member (o, "vsock_cid")
                      ? g_strdup_printf ("vsock (CID %" G_GINT64_FORMAT ")", iget (o, "vsock_cid"))
                      : g_strdup (sget (o, "transport")));
  }
  table_print_free (t);
}

static void
print_vcpus (JsonArray *a)
{
  Table *t = table_new ("lrrlrllllll", "VM", "VCPU", "TID", "STATE", "CPU", "PLACED", "REQUEST(%)",
                        "GRANTED(%)", "EFFECTIVE(%)", "CGROUP", "ACTIVE-BY", NULL);

  for (guint i = 0; i < json_array_get_length (a); i++) {
    JsonObject *o = json_array_get_object_element (a, i);

    table_add (t, g_strdup (sget (o, "vm")));
    table_add (t, opt_int (o, "vcpu"));
    table_add (t, opt_int (o, "tid"));
    table_add (t, g_strdup (sget (o, "state")));
    table_add (t, opt_int (o, "cpu"));
    table_add (t, g_strdup (sget (o, "placement")));
    {
      /* MR-30: a fall the guest asked for has not taken effect yet */
      g_autofree char *req = range (o, "request");

      table_add (t, json_object_get_boolean_member_with_default (o, "held", FALSE)
                        ? g_strdup_printf ("%s held", req)
                        : g_steal_pointer (&req));
    }
    table_add (t, range (o, "granted"));
    table_add (t, range (o, "effective"));
    table_add (t, g_strdup (sget (o, "cgroup")));
    {
      JsonNode *by = json_object_get_member (o, "activity_source");

      table_add (t, g_strdup (by && JSON_NODE_HOLDS_VALUE (by) ? json_node_get_string (by) : "-"));
    }
  }
  table_print_free (t);
}

static void
print_cpus (JsonArray *a)
{
  Table *t = table_new ("rrrrrrlrl", "CPU", "POLICY", "FLOOR(%)", "CEILING(%)", "MIN(kHz)",
                        "MAX(kHz)", "HELD BY", "CAP(%)", "CAPPED BY", NULL);

  for (guint i = 0; i < json_array_get_length (a); i++) {
    JsonObject *o = json_array_get_object_element (a, i);
    JsonArray *holders = json_object_get_array_member (o, "holders");
    GString *held = g_string_new (NULL);

    for (guint j = 0; holders && j < json_array_get_length (holders); j++) {
      JsonObject *h = json_array_get_object_element (holders, j);

      g_string_append_printf (held, "%s%s/%" G_GINT64_FORMAT, j ? ", " : "", sget (h, "vm"),
                              iget (h, "vcpu"));
    }
    if (held->len == 0)
      g_string_append (held, "-");
    table_add (t, opt_int (o, "cpu"));
    table_add (t, opt_int (o, "policy"));
    table_add (t, opt_percent (o, "floor"));
    table_add (t, opt_percent (o, "ceiling"));
    table_add (t, opt_int (o, "min_freq_khz"));
    table_add (t, opt_int (o, "max_freq_khz"));
    table_add (t, g_string_free (held, FALSE));
    /* MR-27: the policy's cap and the VM whose ceiling it is */
    {
      JsonNode *cap_vm = json_object_get_member (o, "policy_cap_vm");

      table_add (t, opt_percent (o, "policy_cap"));
      table_add (t, cap_vm && JSON_NODE_HOLDS_OBJECT (cap_vm)
                        ? g_strdup_printf ("%s (%s)", sget (json_node_get_object (cap_vm), "name"),
                                           sget (json_node_get_object (cap_vm), "state_source"))
                        : g_strdup ("-"));
    }
  }
  table_print_free (t);
}

int
main (int argc, char **argv)
{
  g_autofree char *socket_path = NULL;
  g_autofree char *libvirt_uri = NULL, *device_socket = NULL;
  gboolean json = FALSE, version = FALSE, vsock = FALSE;
  /* A busy daemon (thousands of vCPUs, a loaded host) can be slow to start
   * an answer; a dead one never answers.  10 s tells them apart on an
   * ordinary host; scripts on a loaded one may allow more. */
  gint timeout_s = 10;
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = NULL;
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autoptr (JsonNode) req = NULL;
  g_autofree char *line = NULL, *reply = NULL, *req_text = NULL;
  JsonObject *root;
  JsonNode *result;
  const char *cmd;
  const GOptionEntry entries[] = {
    { "socket", 's', 0, G_OPTION_ARG_FILENAME, &socket_path,
      "freqhintd's control socket (default " FH_DEFAULT_CONTROL_SOCKET ")", "PATH" },
    { "json", 'j', 0, G_OPTION_ARG_NONE, &json, "Print the daemon's JSON answer", NULL },
    { "libvirt-uri", 0, 0, G_OPTION_ARG_STRING, &libvirt_uri,
      "libvirt-xml: the libvirt connection (default qemu:///system)", "URI" },
    { "device-socket", 0, 0, G_OPTION_ARG_FILENAME, &device_socket,
      "libvirt-xml: freqhintd's device socket (default " FH_DEFAULT_SOCKET ")", "PATH" },
    { "vsock", 0, 0, G_OPTION_ARG_NONE, &vsock,
      "libvirt-xml: a virtio-vsock device (<vsock><cid auto='yes'/>) instead of virtio-freqhint: "
      "the stock path, for a distribution's QEMU",
      NULL },
    { "timeout", 't', 0, G_OPTION_ARG_INT, &timeout_s,
      "Seconds to wait for freqhintd to accept, and then for each part of its answer "
      "(default 10; 0: no limit)",
      "SECONDS" },
    { "version", 0, 0, G_OPTION_ARG_NONE, &version, "Print freqhintctl's version and exit", NULL },
    { NULL }
  };

  setlocale (LC_ALL, "");
  ctx = g_option_context_new ("COMMAND [VM]");
  g_option_context_set_summary (
      ctx,
      "Commands:\n"
      "  status        daemon state, backend, counters\n"
      "  vms           connected VMs and their operator limits\n"
      "  vcpus [VM]    per vCPU: thread, placement, cgroup, request, grant, effective clamp\n"
      "  cpus          per CPU: floor, ceiling, the vCPUs holding it, frequency limits written\n"
      "  libvirt-xml [DOMAIN|FILE|-]\n"
      "                print the domain XML pieces for freqhint, or add them to a domain's XML");
  g_option_context_set_description (
      ctx, "Tables show clamps as percentages of full capacity, like cgroup cpu.uclamp.*\n"
           "files and the domain XML (\"max\" = 100); --json gives capacity units 0..1024.\n"
           "VM is a name or a UUID.\n"
           "Exit status: 0 success, 1 error reported by freqhintd (e.g. unknown VM),\n"
           "2 bad usage, 3 freqhintd unreachable or its answer unreadable.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    g_printerr ("freqhintctl: %s\n", error->message);
    return EXIT_USAGE;
  }
  if (timeout_s < 0) {
    g_printerr ("freqhintctl: --timeout must be 0 (no limit) or a number of seconds, not %d\n",
                timeout_s);
    return EXIT_USAGE;
  }
  if (version) {
    printf ("freqhintctl %s\n", PACKAGE_VERSION);
    return fflush (stdout) == 0 ? EXIT_OK : EXIT_UNREACHABLE;
  }
  cmd = argc > 1 ? argv[1] : "status";
  if (strcmp (cmd, "libvirt-xml") == 0) {
#ifdef HAVE_LIBVIRT
    FhLibvirtXmlOptions opts;
    g_autofree char *out = NULL;

    if (argc > 3) {
      g_printerr ("freqhintctl: libvirt-xml takes one DOMAIN, FILE or -\n");
      return EXIT_USAGE;
    }
    fh_libvirt_xml_options_init (&opts);
    if (device_socket)
      opts.socket_path = device_socket;
    opts.vsock = vsock;
    out = fh_libvirt_xml_run (argc > 2 ? argv[2] : NULL, libvirt_uri, &opts, &error);
    if (!out) {
      g_printerr ("freqhintctl: %s\n", error->message);
      return EXIT_DAEMON_ERROR;
    }
    fputs (out, stdout);
    return fflush (stdout) == 0 ? EXIT_OK : EXIT_UNREACHABLE;
#else
    g_printerr ("freqhintctl: built without libvirt support\n");
    return EXIT_USAGE;
#endif
  }
  if (strcmp (cmd, "status") && strcmp (cmd, "vms") && strcmp (cmd, "vcpus") &&
      strcmp (cmd, "cpus")) {
    g_printerr ("freqhintctl: unknown command \"%s\" (status, vms, vcpus, cpus, libvirt-xml; "
                "see --help)\n",
                cmd);
    return EXIT_USAGE;
  }
  if (argc > (strcmp (cmd, "vcpus") == 0 ? 3 : 2)) {
    g_printerr ("freqhintctl: %s takes %s, not \"%s\"\n", cmd,
                strcmp (cmd, "vcpus") == 0 ? "at most one VM" : "no argument", argv[argc - 1]);
    return EXIT_USAGE;
  }
  if (!socket_path)
    socket_path = g_strdup (FH_DEFAULT_CONTROL_SOCKET);

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "command");
  json_builder_add_string_value (b, cmd);
  if (argc > 2) {
    json_builder_set_member_name (b, "vm");
    json_builder_add_string_value (b, argv[2]);
  }
  json_builder_end_object (b);
  req = json_builder_get_root (b);
  req_text = json_to_string (req, FALSE);
  line = g_strconcat (req_text, "\n", NULL);

  reply = request (socket_path, line, (guint) timeout_s, &error);
  if (!reply) {
    g_printerr ("freqhintctl: cannot reach freqhintd at %s: %s\n", socket_path, error->message);
    return EXIT_UNREACHABLE;
  }
  if (!json_parser_load_from_data (parser, reply, -1, &error) ||
      !JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser))) {
    g_printerr ("freqhintctl: unreadable answer from freqhintd at %s\n", socket_path);
    return EXIT_UNREACHABLE;
  }
  root = json_node_get_object (json_parser_get_root (parser));
  if (!json_object_get_boolean_member_with_default (root, "ok", FALSE)) {
    g_printerr ("freqhintctl: %s\n",
                json_object_get_string_member_with_default (root, "error", "unknown error"));
    return EXIT_DAEMON_ERROR;
  }
  result = json_object_get_member (root, "result");
  if (!result) {
    g_printerr ("freqhintctl: answer without a result from %s\n", socket_path);
    return EXIT_UNREACHABLE;
  }
  if (json) {
    g_autofree char *text = json_to_string (result, TRUE);

    printf ("%s\n", text);
  } else if (strcmp (cmd, "status") == 0 && JSON_NODE_HOLDS_OBJECT (result)) {
    print_status (json_node_get_object (result));
  } else if (JSON_NODE_HOLDS_ARRAY (result)) {
    JsonArray *a = json_node_get_array (result);

    if (strcmp (cmd, "vms") == 0)
      print_vms (a);
    else if (strcmp (cmd, "vcpus") == 0)
      print_vcpus (a);
    else
      print_cpus (a);
  } else {
    g_printerr ("freqhintctl: unexpected answer shape from %s\n", socket_path);
    return EXIT_UNREACHABLE;
  }
  return fflush (stdout) == 0 ? EXIT_OK : EXIT_UNREACHABLE;
}
