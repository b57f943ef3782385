/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the watcher reports, kept per domain for the daemon's lookups.
 */
#define G_LOG_DOMAIN "freqhint-libvirt"

#include "fh-libvirt-source.h"

#include <string.h>

#define NIL_UUID "00000000-0000-0000-0000-000000000000"

typedef struct {
  char *uuid;
  char *name;
  FhMetadata *md;   /* NULL: none or invalid */
  gboolean invalid; /* an element that was ignored: the defaults apply (LM-7) */
  GArray *pinned;   /* guint per vCPU index: the single host CPU, G_MAXUINT if not pinned */
} FhLibvirtEntry;

typedef struct {
  FhLibvirtWatcher *watcher;
  GHashTable *by_uuid; /* uuid (lower case) -> FhLibvirtEntry* */
  FhLibvirtSourceChanged changed;
  gpointer data;
} FhLibvirtSource;

static void
entry_free (FhLibvirtEntry *e)
{
  g_free (e->uuid);
  g_free (e->name);
  fh_metadata_free (e->md);
  if (e->pinned)
    g_array_unref (e->pinned);
  g_free (e);
}

static FhLibvirtEntry *
entry_get (FhLibvirtSource *ls, const char *uuid, const char *name)
{
  g_autofree char *key = g_ascii_strdown (uuid, -1);
  FhLibvirtEntry *e = g_hash_table_lookup (ls->by_uuid, key);

  if (!e) {
    e = g_new0 (FhLibvirtEntry, 1);
    e->uuid = g_steal_pointer (&key);
    g_hash_table_insert (ls->by_uuid, e->uuid, e);
  }
  g_free (e->name);
  e->name = g_strdup (name);
  return e;
}

static FhLibvirtEntry *
entry_find (FhLibvirtSource *ls, const char *name, const char *uuid)
{
  GHashTableIter it;
  FhLibvirtEntry *e;

  if (uuid && *uuid && strcmp (uuid, NIL_UUID) != 0) {
    g_autofree char *key = g_ascii_strdown (uuid, -1);

    /*
     * LM-10: a real UUID is the identity.  A QEMU started outside libvirt
     * with a domain's name must not inherit the domain's bounds.
     */
    return g_hash_table_lookup (ls->by_uuid, key);
  }
  /* QEMU started without -uuid (nil UUID): libvirt always passes one; match by name. */
  if (name && *name) {
    g_hash_table_iter_init (&it, ls->by_uuid);
    while (g_hash_table_iter_next (&it, NULL, (gpointer *) &e))
      if (g_strcmp0 (e->name, name) == 0)
        return e;
  }
  return NULL;
}

static void
on_limits (const char *uuid, const char *name, const FhMetadata *md, const char *problem,
           gpointer data)
{
  FhLibvirtSource *ls = data;
  FhLibvirtEntry *e = entry_get (ls, uuid, name);

  fh_metadata_free (e->md);
  e->md = md ? fh_metadata_copy (md) : NULL;
  e->invalid = !md && problem;
  if (ls->changed)
    ls->changed (ls->data);
}

static void
on_gone (const char *uuid, const char *name, gpointer data)
{
  FhLibvirtSource *ls = data;
  g_autofree char *key = g_ascii_strdown (uuid, -1);

  if (g_hash_table_remove (ls->by_uuid, key) && ls->changed)
    ls->changed (ls->data);
}

static void
on_placement (const char *uuid, const char *name, const FhLibvirtVcpu *vcpus, guint n_vcpus,
              gpointer data)
{
  FhLibvirtSource *ls = data;
  FhLibvirtEntry *e = entry_get (ls, uuid, name);
  g_autoptr (GArray) pinned = g_array_new (FALSE, FALSE, sizeof (guint));
  gboolean any = FALSE;

  for (guint i = 0; i < n_vcpus; i++) {
    guint none = G_MAXUINT;

    if (vcpus[i].id >= 4096)
      continue;
    while (pinned->len <= vcpus[i].id)
      g_array_append_val (pinned, none);
    if (vcpus[i].pinned_cpu >= 0) {
      g_array_index (pinned, guint, vcpus[i].id) = (guint) vcpus[i].pinned_cpu;
      any = TRUE;
    }
  }
  if (!any)
    g_clear_pointer (&pinned, g_array_unref);
  if (e->pinned == NULL && pinned == NULL)
    return;
  if (e->pinned && pinned && e->pinned->len == pinned->len &&
      memcmp (e->pinned->data, pinned->data, pinned->len * sizeof (guint)) == 0)
    return;
  if (e->pinned)
    g_array_unref (e->pinned);
  e->pinned = g_steal_pointer (&pinned);
  if (ls->changed)
    ls->changed (ls->data);
}

static gboolean
source_lookup (FhVmSource *self, const char *name, const char *uuid, FhVmSettings *out)
{
  FhLibvirtEntry *e = entry_find (self->priv, name, uuid);

  /* No element at all: not ours to say, the next source (the config file) may know the VM. */
  if (!e || (!e->md && !e->invalid))
    return FALSE;
  /* LM-7: an invalid element is not a fall-through: the VM gets the defaults. */
  out->op = e->md ? fh_metadata_vm_clamp (e->md) : FH_CLAMP_NONE;
  out->ignore_hints = e->md && !e->md->guest_hints;
  if (e->md && e->md->vcpus->len > 0) {
    guint last = g_array_index (e->md->vcpus, FhMetadataVcpu, e->md->vcpus->len - 1).id;

    out->vcpu_op = g_array_sized_new (FALSE, FALSE, sizeof (FhClamp), last + 1);
    for (guint i = 0; i <= last; i++) {
      FhClamp c = fh_metadata_vcpu_clamp (e->md, i);

      g_array_append_val (out->vcpu_op, c);
    }
  }
  out->cpus = e->pinned ? g_array_copy (e->pinned) : NULL;
  return TRUE;
}

static gboolean
source_connection (FhVmSource *self, const char **uri)
{
  FhLibvirtSource *ls = self->priv;

  *uri = fh_libvirt_watcher_get_uri (ls->watcher);
  return fh_libvirt_watcher_is_connected (ls->watcher);
}

static void
source_free (FhVmSource *self)
{
  FhLibvirtSource *ls = self->priv;

  fh_libvirt_watcher_free (ls->watcher);
  g_hash_table_unref (ls->by_uuid);
  g_free (ls);
  g_free (self);
}

FhVmSource *
fh_libvirt_source_new (const char *uri, FhLibvirtSourceChanged changed, gpointer data)
{
  static const FhLibvirtCallbacks callbacks = {
    .domain_limits = on_limits,
    .domain_gone = on_gone,
    .vcpu_placement = on_placement,
  };
  FhVmSource *s = g_new0 (FhVmSource, 1);
  FhLibvirtSource *ls = g_new0 (FhLibvirtSource, 1);

  ls->by_uuid = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) entry_free);
  ls->changed = changed;
  ls->data = data;
  ls->watcher = fh_libvirt_watcher_new (uri, &callbacks, ls);
  s->name = "libvirt";
  s->lookup = source_lookup;
  s->free = source_free;
  s->connection = source_connection;
  s->priv = ls;
  fh_libvirt_watcher_start (ls->watcher);
  return s;
}

const FhMetadata *
fh_libvirt_source_get_metadata (FhVmSource *source, const char *name, const char *uuid)
{
  FhLibvirtEntry *e = entry_find (source->priv, name, uuid);

  return e ? e->md : NULL;
}

void
fh_libvirt_source_set_nova_flavors (FhVmSource *source, GHashTable *flavors)
{
  fh_libvirt_watcher_set_nova_flavors (((FhLibvirtSource *) source->priv)->watcher, flavors);
}

FhLibvirtWatcher *
fh_libvirt_source_get_watcher (FhVmSource *source)
{
  return ((FhLibvirtSource *) source->priv)->watcher;
}
