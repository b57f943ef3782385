/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * freqhintctl: ask freqhintd what it decided.
 *
 * Exit status: 0 success; 1 the daemon answered with an error (e.g. no
 * such VM); 2 bad usage; 3 the daemon could not be reached or answered
 * garbage.
 */
#include <locale.h>
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

static char *
request (const char *path, const char *line, GError **error)
{
  g_autoptr (GSocketClient) client = g_socket_client_new ();
  g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (path);
  g_autoptr (GSocketConnection) conn = NULL;
  g_autoptr (GByteArray) reply = g_byte_array_new ();
  GInputStream *in;
  char buf[8192];

  g_socket_client_set_timeout (client, 10);
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

/* "300..600" for a {"min","max"} member, "-" when absent. */
static char *
range (JsonObject *o, const char *name)
{
  JsonNode *n = json_object_get_member (o, name);
  JsonObject *r;

  if (!n || !JSON_NODE_HOLDS_OBJECT (n))
    return g_strdup ("-");
  r = json_node_get_object (n);
  return g_strdup_printf ("%" G_GINT64_FORMAT "..%" G_GINT64_FORMAT, iget (r, "min"),
                          iget (r, "max"));
}

static char *
opt_int (JsonObject *o, const char *name)
{
  JsonNode *n = json_object_get_member (o, name);

  if (!n || JSON_NODE_HOLDS_NULL (n))
    return g_strdup ("-");
  return g_strdup_printf ("%" G_GINT64_FORMAT, json_node_get_int (n));
}

static void
print_status (JsonObject *o)
{
  JsonObject *rej = json_object_get_object_member (o, "rejected");
  g_autofree char *sys = range (o, "system_defaults");
  GList *members, *l;

  printf ("version:          %s\n", sget (o, "version"));
  printf ("backend:          %s\n", sget (o, "backend"));
  printf ("uptime:           %" G_GINT64_FORMAT " s\n", iget (o, "uptime_seconds"));
  printf ("connected VMs:    %" G_GINT64_FORMAT " (%" G_GINT64_FORMAT " vCPUs)\n",
          iget (o, "connected_vms"), iget (o, "vcpus"));
  printf ("CPUs:             %" G_GINT64_FORMAT " in %" G_GINT64_FORMAT
          " cpufreq policies, governor %s\n",
          iget (o, "cpus"), iget (o, "cpufreq_policies"), sget (o, "governor"));
  printf ("system clamps:    %s\n", sys);
  printf ("perf as floor:    %s, headroom %.2f (%s)\n",
          json_object_get_boolean_member (o, "perf_as_floor") ? "yes" : "no",
          json_object_get_double_member (o, "perf_headroom"), sget (o, "perf_headroom_reason"));
  printf ("device socket:    %s\n", sget (o, "socket"));
  printf ("metrics port:     %" G_GINT64_FORMAT "\n", iget (o, "metrics_port"));
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
  printf ("%-20s %-36s %7s %5s %6s %-11s %s\n", "NAME", "UUID", "PID", "VCPUS", "ACTIVE",
          "OPERATOR", "SINCE");
  for (guint i = 0; i < json_array_get_length (a); i++) {
    JsonObject *o = json_array_get_object_element (a, i);
    g_autofree char *op = range (o, "operator");

    printf ("%-20s %-36s %7" G_GINT64_FORMAT " %5" G_GINT64_FORMAT " %6" G_GINT64_FORMAT
            " %-11s %s\n",
            sget (o, "name"), sget (o, "uuid"), iget (o, "pid"), iget (o, "vcpus"),
            iget (o, "active_vcpus"), op, sget (o, "connected_since"));
  }
}

static void
print_vcpus (JsonArray *a)
{
  printf ("%-16s %4s %7s %-14s %4s %-9s %-11s %-11s %-11s %s\n", "VM", "VCPU", "TID", "STATE",
          "CPU", "PLACED", "REQUEST", "GRANTED", "EFFECTIVE", "CGROUP");
  for (guint i = 0; i < json_array_get_length (a); i++) {
    JsonObject *o = json_array_get_object_element (a, i);
    g_autofree char *req = range (o, "request");
    g_autofree char *granted = range (o, "granted");
    g_autofree char *eff = range (o, "effective");
    g_autofree char *cpu = opt_int (o, "cpu");

    printf ("%-16s %4" G_GINT64_FORMAT " %7" G_GINT64_FORMAT
            " %-14s %4s %-9s %-11s %-11s %-11s %s\n",
            sget (o, "vm"), iget (o, "vcpu"), iget (o, "tid"), sget (o, "state"), cpu,
            sget (o, "placement"), req, granted, eff, sget (o, "cgroup"));
  }
}

static void
print_cpus (JsonArray *a)
{
  printf ("%4s %6s %6s %8s %10s %10s  %s\n", "CPU", "POLICY", "FLOOR", "CEILING", "MIN_KHZ",
          "MAX_KHZ", "HELD BY");
  for (guint i = 0; i < json_array_get_length (a); i++) {
    JsonObject *o = json_array_get_object_element (a, i);
    JsonArray *holders = json_object_get_array_member (o, "holders");
    g_autofree char *pol = opt_int (o, "policy");
    g_autofree char *floor = opt_int (o, "floor");
    g_autofree char *ceil = opt_int (o, "ceiling");
    g_autofree char *minf = opt_int (o, "min_freq_khz");
    g_autofree char *maxf = opt_int (o, "max_freq_khz");
    g_autoptr (GString) held = g_string_new (NULL);

    for (guint j = 0; holders && j < json_array_get_length (holders); j++) {
      JsonObject *h = json_array_get_object_element (holders, j);

      g_string_append_printf (held, "%s%s/%" G_GINT64_FORMAT, j ? ", " : "", sget (h, "vm"),
                              iget (h, "vcpu"));
    }
    printf ("%4" G_GINT64_FORMAT " %6s %6s %8s %10s %10s  %s\n", iget (o, "cpu"), pol, floor, ceil,
            minf, maxf, held->len ? held->str : "-");
  }
}

int
main (int argc, char **argv)
{
  g_autofree char *socket_path = NULL;
  g_autofree char *libvirt_uri = NULL, *device_socket = NULL;
  gboolean json = FALSE;
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
      ctx, "Clamp values are capacity units, 0..1024.  VM is a name or a UUID.\n"
           "Exit status: 0 success, 1 error reported by freqhintd (e.g. unknown VM),\n"
           "2 bad usage, 3 freqhintd unreachable or its answer unreadable.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    g_printerr ("freqhintctl: %s\n", error->message);
    return EXIT_USAGE;
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
  if ((strcmp (cmd, "status") && strcmp (cmd, "vms") && strcmp (cmd, "vcpus") &&
       strcmp (cmd, "cpus")) ||
      argc > (strcmp (cmd, "vcpus") == 0 ? 3 : 2)) {
    g_autofree char *help = g_option_context_get_help (ctx, TRUE, NULL);

    g_printerr ("freqhintctl: bad command line\n%s", help);
    return EXIT_USAGE;
  }

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

  reply = request (socket_path ? socket_path : FH_DEFAULT_CONTROL_SOCKET, line, &error);
  if (!reply) {
    g_printerr ("freqhintctl: cannot reach freqhintd: %s\n", error->message);
    return EXIT_UNREACHABLE;
  }
  if (!json_parser_load_from_data (parser, reply, -1, &error) ||
      !JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser))) {
    g_printerr ("freqhintctl: unreadable answer from freqhintd\n");
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
    g_printerr ("freqhintctl: answer without a result\n");
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
    g_printerr ("freqhintctl: unexpected answer shape\n");
    return EXIT_UNREACHABLE;
  }
  return fflush (stdout) == 0 ? EXIT_OK : EXIT_UNREACHABLE;
}
