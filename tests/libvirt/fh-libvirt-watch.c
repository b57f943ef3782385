/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fh-libvirt-watch [URI]: run the libvirt watcher on a GLib main loop and
 * print, one line each, what it reports -- the test's view of what
 * freqhintd would be told.  Also feeds an FhVmSource-style lookup so that
 * the settings the daemon would apply are printed too.  Stops on SIGTERM.
 *
 *   connected | disconnected
 *   limits NAME UUID floor=F ceiling=C guest-hints=on|off overrides=N op=MIN/MAX
 *   limits NAME UUID none
 *   limits NAME UUID invalid: MESSAGE
 *   gone NAME UUID
 *   placement NAME vCPU:cpu=C,pinned=P ...
 */
#include <stdio.h>

#include <glib-unix.h>
#include <glib.h>

#include "fh-libvirt-watcher.h"

static void
on_limits (const char *uuid, const char *name, const FhMetadata *md, const char *problem,
           gpointer data)
{
  if (md) {
    g_autofree char *f = fh_percent_format (md->floor_pct);
    g_autofree char *c = fh_percent_format (md->ceiling_pct);
    FhClamp op = fh_metadata_vm_clamp (md);

    printf ("limits %s %s floor=%s ceiling=%s guest-hints=%s overrides=%u op=%u/%u\n", name, uuid,
            f, c, md->guest_hints ? "on" : "off", md->vcpus->len, op.min, op.max);
  } else if (problem) {
    printf ("limits %s %s invalid: %s\n", name, uuid, problem);
  } else {
    printf ("limits %s %s none\n", name, uuid);
  }
}

static void
on_gone (const char *uuid, const char *name, gpointer data)
{
  printf ("gone %s %s\n", name, uuid);
}

static void
on_placement (const char *uuid, const char *name, const FhLibvirtVcpu *vcpus, guint n,
              gpointer data)
{
  printf ("placement %s", name);
  for (guint i = 0; i < n; i++)
    printf (" %u:cpu=%d,pinned=%d", vcpus[i].id, vcpus[i].cpu, vcpus[i].pinned_cpu);
  printf ("\n");
}

static void
on_connection (gboolean connected, gpointer data)
{
  printf ("%s\n", connected ? "connected" : "disconnected");
}

static gboolean
on_term (gpointer loop)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

int
main (int argc, char **argv)
{
  static const FhLibvirtCallbacks cb = {
    .domain_limits = on_limits,
    .domain_gone = on_gone,
    .vcpu_placement = on_placement,
    .connection = on_connection,
  };
  g_autoptr (GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  g_autoptr (FhLibvirtWatcher) w = fh_libvirt_watcher_new (argc > 1 ? argv[1] : NULL, &cb, NULL);

  setvbuf (stdout, NULL, _IOLBF, 0);
  /* Reconnect quickly in tests; the daemon keeps the defaults. */
  fh_libvirt_watcher_set_backoff (w, 200, 1000);
  g_unix_signal_add (SIGTERM, on_term, loop);
  g_unix_signal_add (SIGINT, on_term, loop);
  fh_libvirt_watcher_start (w);
  g_main_loop_run (loop);
  return 0;
}
