/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fh-nova.h"

#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

static gboolean
ns_is_nova (const xmlNode *n)
{
  /* Stripped (as libvirt returns it), or one of Nova's versions. */
  return !n->ns || !n->ns->href || strcmp ((const char *) n->ns->href, FH_NOVA_NS_1_1) == 0 ||
         strcmp ((const char *) n->ns->href, FH_NOVA_NS_1_0) == 0;
}

char *
fh_nova_flavor_name (const char *xml, gsize len, GError **error)
{
  xmlDocPtr doc;
  xmlNodePtr root;
  char *name = NULL;

  if (len > FH_METADATA_MAX_BYTES) {
    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_XML, "Nova metadata too big");
    return NULL;
  }
  doc = xmlReadMemory (xml, (int) len, "nova.xml", NULL,
                       XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  if (!doc) {
    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_XML, "Nova metadata is not XML");
    return NULL;
  }
  root = xmlDocGetRootElement (doc);
  if (!root || strcmp ((const char *) root->name, "instance") != 0 || !ns_is_nova (root)) {
    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT,
                 "not a <nova:instance> element");
    goto out;
  }
  for (xmlNodePtr c = root->children; c; c = c->next) {
    xmlChar *v;

    if (c->type != XML_ELEMENT_NODE || strcmp ((const char *) c->name, "flavor") != 0 ||
        !ns_is_nova (c))
      continue;
    v = xmlGetProp (c, (const xmlChar *) "name");
    if (v && *v && g_utf8_validate ((const char *) v, -1, NULL))
      name = g_strdup ((const char *) v);
    xmlFree (v);
    break;
  }
  if (!name)
    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT,
                 "<nova:instance> without <nova:flavor name=...>");
out:
  xmlFreeDoc (doc);
  return name;
}

static gboolean
take_percent (GKeyFile *kf, const char *group, const char *key, guint *out, GError **error)
{
  g_autofree char *v = g_key_file_get_value (kf, group, key, NULL);
  g_autoptr (GError) e = NULL;

  if (!v)
    return TRUE;
  if (!fh_metadata_parse_percent (v, out, &e)) {
    g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "[%s] %s: %s", group,
                 key, e->message);
    return FALSE;
  }
  return TRUE;
}

GHashTable *
fh_nova_flavors_from_keyfile (GKeyFile *kf, GError **error)
{
  g_autoptr (GHashTable) t =
      g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) fh_metadata_free);
  g_auto (GStrv) groups = g_key_file_get_groups (kf, NULL);

  for (char **g = groups; *g; g++) {
    const char *flavor;
    g_autoptr (FhMetadata) md = NULL;
    g_auto (GStrv) keys = NULL;

    if (!g_str_has_prefix (*g, FH_NOVA_FLAVOR_GROUP))
      continue;
    flavor = *g + strlen (FH_NOVA_FLAVOR_GROUP);
    if (!*flavor) {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_GROUP_NOT_FOUND,
                   "[%s]: no flavor name", *g);
      return NULL;
    }
    md = fh_metadata_new ();
    keys = g_key_file_get_keys (kf, *g, NULL, NULL);
    for (char **k = keys; k && *k; k++) {
      if (strcmp (*k, "floor") && strcmp (*k, "ceiling") && strcmp (*k, "guest-hints")) {
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                     "[%s]: unknown key \"%s\" (floor, ceiling, guest-hints)", *g, *k);
        return NULL;
      }
    }
    if (!take_percent (kf, *g, "floor", &md->floor_pct, error) ||
        !take_percent (kf, *g, "ceiling", &md->ceiling_pct, error))
      return NULL;
    if (md->floor_pct > md->ceiling_pct) {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "[%s]: floor above ceiling", *g);
      return NULL;
    }
    if (g_key_file_has_key (kf, *g, "guest-hints", NULL)) {
      g_autofree char *v = g_key_file_get_value (kf, *g, "guest-hints", NULL);

      g_strstrip (v);
      if (strcmp (v, "on") == 0)
        md->guest_hints = TRUE;
      else if (strcmp (v, "off") == 0)
        md->guest_hints = FALSE;
      else {
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                     "[%s] guest-hints: \"%s\" is not on or off", *g, v);
        return NULL;
      }
    }
    g_hash_table_replace (t, g_strdup (flavor), g_steal_pointer (&md));
  }
  return g_steal_pointer (&t);
}

GHashTable *
fh_nova_flavors_load (const char *path, GError **error)
{
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_autoptr (GError) e = NULL;

  if (!g_key_file_load_from_file (kf, path, G_KEY_FILE_NONE, &e)) {
    if (g_error_matches (e, G_FILE_ERROR, G_FILE_ERROR_NOENT))
      return g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                    (GDestroyNotify) fh_metadata_free);
    g_propagate_prefixed_error (error, g_steal_pointer (&e), "%s: ", path);
    return NULL;
  }
  return fh_nova_flavors_from_keyfile (kf, error);
}
