/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The libvirt watcher: connection with reconnect and backoff, the domain
 * table, and the three domain events freqhint cares about.
 */
#define G_LOG_DOMAIN "freqhint-libvirt"

#include "fh-libvirt-watcher.h"

#include <string.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <libvirt-glib/libvirt-glib.h>

#include "fh-nova.h"

typedef struct {
  char *uuid;
  char *name;
  FhMetadata *md; /* NULL: defaults */
  char *problem;
  gboolean reported;
  gboolean seen; /* in the latest listing */
} FhDomainState;

struct _FhLibvirtWatcher {
  char *uri;
  FhLibvirtCallbacks cb;
  gpointer data;
  virConnectPtr conn;
  int ev_lifecycle, ev_metadata, ev_tunable;
  gboolean close_registered;
  guint retry_source;
  guint close_idle;
  guint backoff_min_ms, backoff_max_ms, backoff_ms;
  gboolean warned_unreachable;
  GHashTable *domains; /* uuid -> FhDomainState* */
  GHashTable *nova_flavors; /* flavor name -> FhMetadata*; NULL: none */
};

static void schedule_connect (FhLibvirtWatcher *w);
static gboolean scan_domains (FhLibvirtWatcher *w);
static void on_close (virConnectPtr conn, int reason, void *opaque);

static void
domain_state_free (FhDomainState *s)
{
  g_free (s->uuid);
  g_free (s->name);
  fh_metadata_free (s->md);
  g_free (s->problem);
  g_free (s);
}

/* libvirt prints every error on stderr unless told otherwise; we report the ones that matter. */
static void
quiet_errors (void *data, virErrorPtr err)
{
  g_debug ("libvirt: %s", err && err->message ? err->message : "error");
}

static const char *
last_error (void)
{
  virErrorPtr e = virGetLastError ();

  return e && e->message ? e->message : "unknown libvirt error";
}

static gboolean
domain_ids (virDomainPtr dom, char uuid[VIR_UUID_STRING_BUFLEN], const char **name)
{
  if (virDomainGetUUIDString (dom, uuid) < 0)
    return FALSE;
  *name = virDomainGetName (dom);
  return *name != NULL;
}

static FhDomainState *
domain_state (FhLibvirtWatcher *w, const char *uuid, const char *name)
{
  FhDomainState *s = g_hash_table_lookup (w->domains, uuid);

  if (!s) {
    s = g_new0 (FhDomainState, 1);
    s->uuid = g_strdup (uuid);
    g_hash_table_insert (w->domains, s->uuid, s);
  }
  if (g_strcmp0 (s->name, name) != 0) {
    g_free (s->name);
    s->name = g_strdup (name);
  }
  return s;
}

/*
 * A domain without a freqhint element: the settings its Nova flavor maps
 * to in freqhintd.conf ([nova-flavor NAME]), or NULL.
 */
static FhMetadata *
nova_flavor_settings (FhLibvirtWatcher *w, virDomainPtr dom, const char *name)
{
  static const char *const ns[] = { FH_NOVA_NS_1_1, FH_NOVA_NS_1_0 };
  g_autofree char *flavor = NULL;
  const FhMetadata *md;

  if (!w->nova_flavors || g_hash_table_size (w->nova_flavors) == 0)
    return NULL;
  for (gsize i = 0; i < G_N_ELEMENTS (ns) && !flavor; i++) {
    g_autofree char *xml =
        virDomainGetMetadata (dom, VIR_DOMAIN_METADATA_ELEMENT, ns[i], VIR_DOMAIN_AFFECT_LIVE);
    g_autoptr (GError) error = NULL;

    if (!xml)
      continue;
    flavor = fh_nova_flavor_name (xml, strlen (xml), &error);
    if (!flavor)
      g_debug ("domain \"%s\": Nova metadata without a usable flavor: %s", name, error->message);
  }
  if (!flavor)
    return NULL;
  md = g_hash_table_lookup (w->nova_flavors, flavor);
  if (!md) {
    g_debug ("domain \"%s\": Nova flavor \"%s\" has no [nova-flavor] section", name, flavor);
    return NULL;
  }
  g_message ("domain \"%s\": settings of Nova flavor \"%s\"", name, flavor);
  return fh_metadata_copy (md);
}

/* Read the freqhint element of a running domain and report it if it changed. */
static void
read_metadata (FhLibvirtWatcher *w, virDomainPtr dom)
{
  char uuid[VIR_UUID_STRING_BUFLEN];
  const char *name;
  g_autofree char *xml = NULL;
  g_autoptr (FhMetadata) md = NULL;
  g_autofree char *problem = NULL;
  FhDomainState *s;

  if (!domain_ids (dom, uuid, &name))
    return;
  xml = virDomainGetMetadata (dom, VIR_DOMAIN_METADATA_ELEMENT, FH_METADATA_NS,
                              VIR_DOMAIN_AFFECT_LIVE);
  if (xml) {
    g_autoptr (GError) error = NULL;

    md = fh_metadata_parse_full (xml, strlen (xml), FH_METADATA_PARSE_NS_IMPLIED, &error);
    if (!md) {
      problem = g_strdup (error->message);
      /* LM-7: logged with the domain's name, ignored; the VM keeps the defaults. */
      g_warning ("domain \"%s\" (%s): freqhint metadata ignored, defaults apply: %s", name, uuid,
                 problem);
    }
  } else {
    virErrorPtr e = virGetLastError ();

    if (!e || e->code != VIR_ERR_NO_DOMAIN_METADATA) {
      /* The domain may have stopped meanwhile; its lifecycle event follows. */
      g_debug ("domain \"%s\": cannot read metadata: %s", name, last_error ());
      return;
    }
    /* No element of ours: the freqhint element wins, the flavor comes second. */
    md = nova_flavor_settings (w, dom, name);
  }

  s = domain_state (w, uuid, name);
  s->seen = TRUE;
  if (s->reported && fh_metadata_equal (s->md, md) && g_strcmp0 (s->problem, problem) == 0)
    return;
  fh_metadata_free (s->md);
  s->md = g_steal_pointer (&md);
  g_free (s->problem);
  s->problem = g_steal_pointer (&problem);
  s->reported = TRUE;
  if (s->md) {
    g_autofree char *f = fh_percent_format (s->md->floor_pct);
    g_autofree char *c = fh_percent_format (s->md->ceiling_pct);

    g_message ("domain \"%s\": floor %s%%, ceiling %s%%, guest hints %s, %u vCPU override(s)", name,
               f, c, s->md->guest_hints ? "on" : "off", s->md->vcpus->len);
  } else if (!s->problem) {
    g_debug ("domain \"%s\": no freqhint metadata, defaults apply", name);
  }
  if (w->cb.domain_limits)
    w->cb.domain_limits (s->uuid, s->name, s->md, s->problem, w->data);
}

static void
vcpu_clear (gpointer p)
{
  FhLibvirtVcpu *v = p;

  g_clear_pointer (&v->affinity, g_array_unref);
}

static void
fill_affinity (FhLibvirtVcpu *v, const unsigned char *map, int maplen, int n_host_cpus)
{
  v->affinity = g_array_new (FALSE, FALSE, sizeof (guint));
  for (int c = 0; c < n_host_cpus && c < maplen * 8; c++)
    if (VIR_CPU_USABLE (map, maplen, 0, c)) {
      guint u = (guint) c;
      g_array_append_val (v->affinity, u);
    }
  v->pinned_cpu = v->affinity->len == 1 ? (gint) g_array_index (v->affinity, guint, 0) : -1;
}

/* Where each vCPU may run (pinning) and runs now; reported as is. */
static void
read_placement (FhLibvirtWatcher *w, virDomainPtr dom)
{
  char uuid[VIR_UUID_STRING_BUFLEN];
  const char *name;
  virDomainInfo info;
  int n_host, maplen, n;
  g_autofree virVcpuInfoPtr infos = NULL;
  g_autofree unsigned char *maps = NULL;
  g_autoptr (GArray) vcpus = NULL;

  if (!w->cb.vcpu_placement || !domain_ids (dom, uuid, &name))
    return;
  n_host = virNodeGetCPUMap (w->conn, NULL, NULL, 0);
  if (n_host <= 0 || virDomainGetInfo (dom, &info) < 0 || info.nrVirtCpu == 0) {
    g_debug ("domain \"%s\": no vCPU information: %s", name, last_error ());
    return;
  }
  maplen = VIR_CPU_MAPLEN (n_host);
  infos = g_new0 (virVcpuInfo, info.nrVirtCpu);
  maps = g_malloc0 ((gsize) maplen * info.nrVirtCpu);
  vcpus = g_array_new (FALSE, TRUE, sizeof (FhLibvirtVcpu));
  g_array_set_clear_func (vcpus, vcpu_clear);

  n = virDomainGetVcpus (dom, infos, (int) info.nrVirtCpu, maps, maplen);
  if (n >= 0) {
    for (int i = 0; i < n; i++) {
      FhLibvirtVcpu v = { .id = infos[i].number, .cpu = infos[i].cpu };

      fill_affinity (&v, maps + (gsize) i * maplen, maplen, n_host);
      g_array_append_val (vcpus, v);
    }
  } else {
    /* Drivers without live vCPU info still know the pinning. */
    n = virDomainGetVcpuPinInfo (dom, (int) info.nrVirtCpu, maps, maplen, VIR_DOMAIN_AFFECT_LIVE);
    if (n < 0) {
      g_debug ("domain \"%s\": no vCPU pinning: %s", name, last_error ());
      return;
    }
    for (int i = 0; i < n; i++) {
      FhLibvirtVcpu v = { .id = (guint) i, .cpu = -1 };

      fill_affinity (&v, maps + (gsize) i * maplen, maplen, n_host);
      g_array_append_val (vcpus, v);
    }
  }
  w->cb.vcpu_placement (uuid, name, (const FhLibvirtVcpu *) (void *) vcpus->data, vcpus->len,
                        w->data);
}

static void
domain_gone (FhLibvirtWatcher *w, const char *uuid)
{
  FhDomainState *s = g_hash_table_lookup (w->domains, uuid);

  if (!s)
    return;
  g_message ("domain \"%s\" stopped", s->name);
  g_hash_table_steal (w->domains, uuid);
  if (w->cb.domain_gone)
    w->cb.domain_gone (s->uuid, s->name, w->data);
  domain_state_free (s);
}

static int
on_lifecycle (virConnectPtr conn, virDomainPtr dom, int event, int detail, void *opaque)
{
  FhLibvirtWatcher *w = opaque;
  char uuid[VIR_UUID_STRING_BUFLEN];
  const char *name;

  if (!domain_ids (dom, uuid, &name))
    return 0;
  g_debug ("domain \"%s\": lifecycle event %d/%d", name, event, detail);
  switch (event) {
    case VIR_DOMAIN_EVENT_STARTED:
      read_metadata (w, dom);
      read_placement (w, dom);
      break;
    case VIR_DOMAIN_EVENT_STOPPED:
      domain_gone (w, uuid);
      break;
    default:
      break;
  }
  return 0;
}

static void
on_metadata_change (virConnectPtr conn, virDomainPtr dom, int type, const char *nsuri, void *opaque)
{
  if (type != VIR_DOMAIN_METADATA_ELEMENT ||
      (g_strcmp0 (nsuri, FH_METADATA_NS) != 0 && g_strcmp0 (nsuri, FH_NOVA_NS_1_1) != 0 &&
       g_strcmp0 (nsuri, FH_NOVA_NS_1_0) != 0))
    return;
  read_metadata (opaque, dom);
}

static void
on_tunable (virConnectPtr conn, virDomainPtr dom, virTypedParameterPtr params, int nparams,
            void *opaque)
{
  for (int i = 0; i < nparams; i++)
    if (g_str_has_prefix (params[i].field, "cputune.vcpupin")) {
      read_placement (opaque, dom);
      return;
    }
}

/* Every running domain, after (re)connecting; those gone meanwhile are dropped. */
static gboolean
scan_domains (FhLibvirtWatcher *w)
{
  virDomainPtr *doms = NULL;
  int n;
  GHashTableIter it;
  FhDomainState *s;
  g_autoptr (GPtrArray) gone = g_ptr_array_new_with_free_func (g_free);

  n = virConnectListAllDomains (w->conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
  if (n < 0) {
    g_warning ("libvirt: cannot list domains: %s", last_error ());
    return FALSE;
  }
  g_hash_table_iter_init (&it, w->domains);
  while (g_hash_table_iter_next (&it, NULL, (gpointer *) &s))
    s->seen = FALSE;
  for (int i = 0; i < n; i++) {
    read_metadata (w, doms[i]);
    read_placement (w, doms[i]);
    virDomainFree (doms[i]);
  }
  free (doms);
  g_hash_table_iter_init (&it, w->domains);
  while (g_hash_table_iter_next (&it, NULL, (gpointer *) &s))
    if (!s->seen)
      g_ptr_array_add (gone, g_strdup (s->uuid));
  for (guint i = 0; i < gone->len; i++)
    domain_gone (w, g_ptr_array_index (gone, i));
  return TRUE;
}

static void
disconnect (FhLibvirtWatcher *w)
{
  if (!w->conn)
    return;
  /* On a dead connection these fail; that is fine, the connection goes anyway. */
  if (w->ev_lifecycle >= 0)
    virConnectDomainEventDeregisterAny (w->conn, w->ev_lifecycle);
  if (w->ev_metadata >= 0)
    virConnectDomainEventDeregisterAny (w->conn, w->ev_metadata);
  if (w->ev_tunable >= 0)
    virConnectDomainEventDeregisterAny (w->conn, w->ev_tunable);
  w->ev_lifecycle = w->ev_metadata = w->ev_tunable = -1;
  if (w->close_registered)
    virConnectUnregisterCloseCallback (w->conn, on_close);
  w->close_registered = FALSE;
  virConnectClose (w->conn);
  w->conn = NULL;
  if (w->cb.connection)
    w->cb.connection (FALSE, w->data);
}

static gboolean
handle_close (gpointer data)
{
  FhLibvirtWatcher *w = data;

  w->close_idle = 0;
  disconnect (w);
  w->backoff_ms = w->backoff_min_ms;
  schedule_connect (w);
  return G_SOURCE_REMOVE;
}

static void
on_close (virConnectPtr conn, int reason, void *opaque)
{
  FhLibvirtWatcher *w = opaque;

  g_message ("libvirt: connection to %s closed (reason %d); reconnecting", w->uri, reason);
  /* Not from inside libvirt's own callback: tear down from the main loop. */
  if (!w->close_idle)
    w->close_idle = g_idle_add (handle_close, w);
}

static gboolean
try_connect (FhLibvirtWatcher *w)
{
  virConnectPtr conn = virConnectOpen (w->uri);

  if (!conn) {
    if (!w->warned_unreachable)
      g_message ("libvirt: cannot connect to %s (%s); retrying in the background", w->uri,
                 last_error ());
    else
      g_debug ("libvirt: cannot connect to %s: %s", w->uri, last_error ());
    w->warned_unreachable = TRUE;
    return FALSE;
  }
  w->conn = conn;
  virConnSetErrorFunc (conn, NULL, quiet_errors);
  /* Notice a vanished libvirtd even when no event is due (5 s, 3 misses). */
  if (virConnectSetKeepAlive (conn, 5, 3) < 0)
    g_debug ("libvirt: no keepalive: %s", last_error ());
  if (virConnectRegisterCloseCallback (conn, on_close, w, NULL) == 0)
    w->close_registered = TRUE;
  w->ev_lifecycle = virConnectDomainEventRegisterAny (
      conn, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE, VIR_DOMAIN_EVENT_CALLBACK (on_lifecycle), w, NULL);
  w->ev_metadata =
      virConnectDomainEventRegisterAny (conn, NULL, VIR_DOMAIN_EVENT_ID_METADATA_CHANGE,
                                        VIR_DOMAIN_EVENT_CALLBACK (on_metadata_change), w, NULL);
  w->ev_tunable = virConnectDomainEventRegisterAny (
      conn, NULL, VIR_DOMAIN_EVENT_ID_TUNABLE, VIR_DOMAIN_EVENT_CALLBACK (on_tunable), w, NULL);
  if (w->ev_lifecycle < 0 || w->ev_metadata < 0) {
    g_warning ("libvirt: cannot register domain events on %s: %s", w->uri, last_error ());
    disconnect (w);
    return FALSE;
  }
  g_message ("libvirt: connected to %s", w->uri);
  w->warned_unreachable = FALSE;
  if (w->cb.connection)
    w->cb.connection (TRUE, w->data);
  if (!scan_domains (w)) {
    disconnect (w);
    return FALSE;
  }
  return TRUE;
}

static gboolean
retry_connect (gpointer data)
{
  FhLibvirtWatcher *w = data;

  w->retry_source = 0;
  if (!try_connect (w)) {
    w->backoff_ms = MIN (w->backoff_ms * 2, w->backoff_max_ms);
    schedule_connect (w);
  } else {
    w->backoff_ms = w->backoff_min_ms;
  }
  return G_SOURCE_REMOVE;
}

static void
schedule_connect (FhLibvirtWatcher *w)
{
  if (w->retry_source || w->conn)
    return;
  w->retry_source = g_timeout_add (w->backoff_ms, retry_connect, w);
}

FhLibvirtWatcher *
fh_libvirt_watcher_new (const char *uri, const FhLibvirtCallbacks *callbacks, gpointer data)
{
  FhLibvirtWatcher *w = g_new0 (FhLibvirtWatcher, 1);

  /*
   * libvirt's sockets, keepalives and domain events on the default GLib
   * main context, the agent's one loop: no second loop, no thread.
   * Idempotent; it must come before the first virConnectOpen*().
   */
  gvir_event_register ();
  virSetErrorFunc (NULL, quiet_errors);
  w->uri = g_strdup (uri && *uri ? uri : FH_LIBVIRT_DEFAULT_URI);
  if (callbacks)
    w->cb = *callbacks;
  w->data = data;
  w->ev_lifecycle = w->ev_metadata = w->ev_tunable = -1;
  w->backoff_min_ms = 500;
  w->backoff_max_ms = 30000;
  w->backoff_ms = w->backoff_min_ms;
  w->domains =
      g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) domain_state_free);
  return w;
}

void
fh_libvirt_watcher_set_backoff (FhLibvirtWatcher *w, guint min_ms, guint max_ms)
{
  w->backoff_min_ms = MAX (min_ms, 1);
  w->backoff_max_ms = MAX (max_ms, w->backoff_min_ms);
  w->backoff_ms = w->backoff_min_ms;
}

void
fh_libvirt_watcher_start (FhLibvirtWatcher *w)
{
  if (w->conn || w->retry_source)
    return;
  if (!try_connect (w))
    schedule_connect (w);
}

void
fh_libvirt_watcher_set_nova_flavors (FhLibvirtWatcher *w, GHashTable *flavors)
{
  g_clear_pointer (&w->nova_flavors, g_hash_table_unref);
  w->nova_flavors = flavors ? g_hash_table_ref (flavors) : NULL;
  /* Already connected: every running domain is judged again. */
  if (w->conn)
    scan_domains (w);
}

const char *
fh_libvirt_watcher_get_uri (FhLibvirtWatcher *w)
{
  return w->uri;
}

gboolean
fh_libvirt_watcher_is_connected (FhLibvirtWatcher *w)
{
  return w->conn != NULL;
}

void
fh_libvirt_watcher_free (FhLibvirtWatcher *w)
{
  if (!w)
    return;
  g_clear_handle_id (&w->retry_source, g_source_remove);
  g_clear_handle_id (&w->close_idle, g_source_remove);
  w->cb.connection = NULL;
  disconnect (w);
  g_hash_table_unref (w->domains);
  g_clear_pointer (&w->nova_flavors, g_hash_table_unref);
  g_free (w->uri);
  g_free (w);
}
