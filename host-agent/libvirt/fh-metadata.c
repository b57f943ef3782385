/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The libvirt metadata element, parsed with libxml2 (libvirt brings it
 * anyway, and it knows namespaces, which GMarkup does not).
 *
 * The rules mirror spec/freqhint-metadata.rng so that the schema and the
 * agent agree on every document; tests/libvirt checks that they do.
 */
#include "fh-metadata.h"

#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <freqhint/agent_protocol.h>

G_DEFINE_QUARK (fh - metadata - error - quark, fh_metadata_error)

FhMetadata *
fh_metadata_new (void)
{
  FhMetadata *md = g_new0 (FhMetadata, 1);

  md->floor_pct = 0;
  md->ceiling_pct = FH_PERCENT_MAX;
  md->guest_hints = TRUE;
  md->vcpus = g_array_new (FALSE, TRUE, sizeof (FhMetadataVcpu));
  return md;
}

FhMetadata *
fh_metadata_copy (const FhMetadata *md)
{
  FhMetadata *c = g_new0 (FhMetadata, 1);

  *c = *md;
  c->vcpus = g_array_copy (md->vcpus);
  return c;
}

void
fh_metadata_free (FhMetadata *md)
{
  if (!md)
    return;
  g_array_unref (md->vcpus);
  g_free (md);
}

gboolean
fh_metadata_equal (const FhMetadata *a, const FhMetadata *b)
{
  if (a == b)
    return TRUE;
  if (!a || !b)
    return FALSE;
  if (a->floor_pct != b->floor_pct || a->ceiling_pct != b->ceiling_pct ||
      a->guest_hints != b->guest_hints || a->vcpus->len != b->vcpus->len)
    return FALSE;
  for (guint i = 0; i < a->vcpus->len; i++) {
    const FhMetadataVcpu *x = &g_array_index (a->vcpus, FhMetadataVcpu, i);
    const FhMetadataVcpu *y = &g_array_index (b->vcpus, FhMetadataVcpu, i);

    if (x->id != y->id || x->has_floor != y->has_floor || x->has_ceiling != y->has_ceiling ||
        (x->has_floor && x->floor_pct != y->floor_pct) ||
        (x->has_ceiling && x->ceiling_pct != y->ceiling_pct))
      return FALSE;
  }
  return TRUE;
}

guint
fh_percent_to_capacity (guint hundredths)
{
  /* capacity_from_percent(): DIV_ROUND_CLOSEST_ULL(percent << 10, 10000) */
  return (guint) ((((guint64) hundredths << 10) + FH_PERCENT_MAX / 2) / FH_PERCENT_MAX);
}

char *
fh_percent_format (guint hundredths)
{
  if (hundredths >= FH_PERCENT_MAX)
    return g_strdup ("max");
  return g_strdup_printf ("%u.%02u", hundredths / 100, hundredths % 100);
}

static gboolean
is_blank (char c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * The cgroup format, stricter than the kernel's sscanf: at most two
 * decimals (the RELAX NG pattern says so too), no sign, no exponent.  A
 * value above 100 gets its own message, because the likely mistake is
 * writing capacity units (0..1024) where a percentage belongs.
 */
gboolean
fh_metadata_parse_percent (const char *text, guint *hundredths, GError **error)
{
  const char *s = text, *e = text + strlen (text);
  const char *p;
  guint64 whole = 0;
  guint frac = 0, nfrac = 0, nwhole = 0;

  while (s < e && is_blank (*s))
    s++;
  while (e > s && is_blank (e[-1]))
    e--;
  if (e - s == 3 && memcmp (s, "max", 3) == 0) {
    *hundredths = FH_PERCENT_MAX;
    return TRUE;
  }
  for (p = s; p < e && g_ascii_isdigit (*p); p++, nwhole++)
    if (whole < 100000)
      whole = whole * 10 + (guint) (*p - '0');
  if (p < e && *p == '.') {
    for (p++; p < e && g_ascii_isdigit (*p); p++, nfrac++)
      if (nfrac < 2)
        frac = frac * 10 + (guint) (*p - '0');
    if (nfrac == 0)
      p = e + 1; /* "5." is not a number here */
  }
  if (nwhole == 0 || p != e) {
    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_VALUE,
                 "\"%.*s\" is not a percentage: expected \"max\" or 0 to 100 with at most two "
                 "decimals",
                 (int) MIN (e - s, 32), s);
    return FALSE;
  }
  if (nfrac > 2) {
    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_VALUE,
                 "\"%.*s\" has more than two decimals (percent, as in cpu.uclamp files)",
                 (int) MIN (e - s, 32), s);
    return FALSE;
  }
  if (nfrac == 1)
    frac *= 10;
  if (whole <= 100 && nwhole > 2 && !(nwhole == 3 && whole == 100)) {
    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_VALUE,
                 "\"%.*s\" is not a percentage: leading zeros are not allowed",
                 (int) MIN (e - s, 32), s);
    return FALSE;
  }
  if (whole > 100 || (whole == 100 && frac > 0)) {
    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_RANGE,
                 "\"%.*s\" is above 100: values are percent (0 to 100, or \"max\") as in "
                 "cpu.uclamp.min/max, not capacity units 0 to 1024",
                 (int) MIN (e - s, 32), s);
    return FALSE;
  }
  *hundredths = (guint) whole * 100 + frac;
  return TRUE;
}

static gboolean
parse_vcpu_id (const char *text, guint *id, GError **error)
{
  guint64 v;
  g_autofree char *t = g_strstrip (g_strdup (text));

  /* No leading zeros, as in the schema's pattern. */
  if (!*t || (t[0] == '0' && t[1]) || strlen (t) > 4 ||
      !g_ascii_string_to_unsigned (t, 10, 0, FH_MAX_VCPUS - 1, &v, NULL)) {
    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_VALUE,
                 "vcpu id \"%.16s\" is not an index 0 to %u", t, FH_MAX_VCPUS - 1);
    return FALSE;
  }
  *id = (guint) v;
  return TRUE;
}

static gboolean
in_our_ns (xmlNode *n, FhMetadataParseFlags flags)
{
  if (!n->ns)
    return (flags & FH_METADATA_PARSE_NS_IMPLIED) != 0;
  return n->ns->href && strcmp ((const char *) n->ns->href, FH_METADATA_NS) == 0;
}

/* An element's text, refusing child elements (entities are refused with the DTD). */
static char *
element_text (xmlNode *el, GError **error)
{
  GString *s = g_string_new (NULL);

  for (xmlNode *c = el->children; c; c = c->next) {
    if (c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) {
      g_string_append (s, (const char *) c->content);
    } else if (c->type != XML_COMMENT_NODE && c->type != XML_PI_NODE) {
      g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT, "<%s> must hold text only",
                   (const char *) el->name);
      g_string_free (s, TRUE);
      return NULL;
    }
  }
  return g_string_free (s, FALSE);
}

static gboolean
parse_value_element (xmlNode *el, guint *out, GError **error)
{
  g_autofree char *text = element_text (el, error);
  GError *local = NULL;

  if (!text)
    return FALSE;
  if (!fh_metadata_parse_percent (text, out, &local)) {
    g_propagate_prefixed_error (error, local, "<%s>: ", (const char *) el->name);
    return FALSE;
  }
  return TRUE;
}

static gboolean
parse_vcpu (xmlNode *el, FhMetadataVcpu *v, GError **error)
{
  gboolean has_id = FALSE;

  memset (v, 0, sizeof *v);
  if (el->children) {
    for (xmlNode *c = el->children; c; c = c->next)
      if (c->type != XML_COMMENT_NODE && !(c->type == XML_TEXT_NODE && xmlIsBlankNode (c))) {
        g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT, "<vcpu> must be empty");
        return FALSE;
      }
  }
  for (xmlAttr *a = el->properties; a; a = a->next) {
    const char *name = (const char *) a->name;
    g_autofree char *value = (char *) xmlNodeGetContent ((xmlNode *) a);
    GError *local = NULL;
    gboolean ok;

    if (!value)
      value = g_strdup ("");
    if (a->ns) {
      g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT,
                   "<vcpu>: unexpected attribute %s:%s", (const char *) a->ns->prefix, name);
      return FALSE;
    }
    if (strcmp (name, "id") == 0) {
      has_id = TRUE;
      ok = parse_vcpu_id (value, &v->id, &local);
    } else if (strcmp (name, "floor") == 0) {
      v->has_floor = TRUE;
      ok = fh_metadata_parse_percent (value, &v->floor_pct, &local);
    } else if (strcmp (name, "ceiling") == 0) {
      v->has_ceiling = TRUE;
      ok = fh_metadata_parse_percent (value, &v->ceiling_pct, &local);
    } else {
      g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT,
                   "<vcpu>: unknown attribute \"%s\"", name);
      return FALSE;
    }
    if (!ok) {
      g_propagate_prefixed_error (error, local, "<vcpu> %s: ", name);
      return FALSE;
    }
  }
  if (!has_id) {
    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT, "<vcpu> without id");
    return FALSE;
  }
  return TRUE;
}

static int
vcpu_cmp (gconstpointer a, gconstpointer b)
{
  const FhMetadataVcpu *x = a, *y = b;

  return (x->id > y->id) - (x->id < y->id);
}

static gboolean
parse_root (xmlNode *root, FhMetadataParseFlags flags, FhMetadata *md, GError **error)
{
  gboolean seen_floor = FALSE, seen_ceiling = FALSE, seen_hints = FALSE;

  if (!in_our_ns (root, flags) || strcmp ((const char *) root->name, FH_METADATA_ROOT) != 0) {
    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT,
                 "expected <%s> in namespace %s, found <%s>%s%s", FH_METADATA_ROOT, FH_METADATA_NS,
                 (const char *) root->name, root->ns ? " in namespace " : " without namespace",
                 root->ns && root->ns->href ? (const char *) root->ns->href : "");
    return FALSE;
  }
  if (root->properties) {
    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT, "<%s> takes no attributes",
                 FH_METADATA_ROOT);
    return FALSE;
  }
  for (xmlNode *c = root->children; c; c = c->next) {
    const char *name = (const char *) c->name;

    if (c->type == XML_COMMENT_NODE || c->type == XML_PI_NODE ||
        (c->type == XML_TEXT_NODE && xmlIsBlankNode (c)))
      continue;
    if (c->type != XML_ELEMENT_NODE) {
      g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT,
                   "text is not allowed directly inside <%s>", FH_METADATA_ROOT);
      return FALSE;
    }
    if (!in_our_ns (c, flags)) {
      g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT,
                   "<%s> is not in namespace %s", name, FH_METADATA_NS);
      return FALSE;
    }
    if (c->properties && strcmp (name, "vcpu") != 0) {
      g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT, "<%s> takes no attributes",
                   name);
      return FALSE;
    }
    if (strcmp (name, "floor") == 0 || strcmp (name, "ceiling") == 0) {
      gboolean is_floor = name[0] == 'f';
      gboolean *seen = is_floor ? &seen_floor : &seen_ceiling;

      if (*seen) {
        g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT, "<%s> given twice", name);
        return FALSE;
      }
      *seen = TRUE;
      if (!parse_value_element (c, is_floor ? &md->floor_pct : &md->ceiling_pct, error))
        return FALSE;
    } else if (strcmp (name, "guest-hints") == 0) {
      g_autofree char *text = NULL;

      if (seen_hints) {
        g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT, "<%s> given twice", name);
        return FALSE;
      }
      seen_hints = TRUE;
      text = element_text (c, error);
      if (!text)
        return FALSE;
      g_strstrip (text);
      if (strcmp (text, "on") == 0) {
        md->guest_hints = TRUE;
      } else if (strcmp (text, "off") == 0) {
        md->guest_hints = FALSE;
      } else {
        g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_VALUE,
                     "<guest-hints>: \"%.16s\" is neither \"on\" nor \"off\"", text);
        return FALSE;
      }
    } else if (strcmp (name, "vcpu") == 0) {
      FhMetadataVcpu v;

      if (md->vcpus->len >= FH_MAX_VCPUS) {
        g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT,
                     "more than %u <vcpu> elements", FH_MAX_VCPUS);
        return FALSE;
      }
      if (!parse_vcpu (c, &v, error))
        return FALSE;
      g_array_append_val (md->vcpus, v);
    } else {
      g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT, "unknown element <%s>",
                   name);
      return FALSE;
    }
  }

  g_array_sort (md->vcpus, vcpu_cmp);
  for (guint i = 1; i < md->vcpus->len; i++)
    if (g_array_index (md->vcpus, FhMetadataVcpu, i).id ==
        g_array_index (md->vcpus, FhMetadataVcpu, i - 1).id) {
      g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT,
                   "<vcpu id=\"%u\"> given twice", g_array_index (md->vcpus, FhMetadataVcpu, i).id);
      return FALSE;
    }

  /* LM-6: what the schema cannot say. */
  if (md->floor_pct > md->ceiling_pct) {
    g_autofree char *f = fh_percent_format (md->floor_pct);
    g_autofree char *c = fh_percent_format (md->ceiling_pct);

    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_RANGE, "floor %s is above ceiling %s",
                 f, c);
    return FALSE;
  }
  for (guint i = 0; i < md->vcpus->len; i++) {
    guint id = g_array_index (md->vcpus, FhMetadataVcpu, i).id;
    guint f, c;

    fh_metadata_vcpu_percent (md, id, &f, &c);
    if (f > c) {
      g_autofree char *fs = fh_percent_format (f);
      g_autofree char *cs = fh_percent_format (c);

      g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_RANGE,
                   "vcpu %u: floor %s is above ceiling %s", id, fs, cs);
      return FALSE;
    }
  }
  return TRUE;
}

FhMetadata *
fh_metadata_parse (const char *xml, gsize len, GError **error)
{
  return fh_metadata_parse_full (xml, len, FH_METADATA_PARSE_DEFAULT, error);
}

FhMetadata *
fh_metadata_parse_full (const char *xml, gsize len, FhMetadataParseFlags flags, GError **error)
{
  g_autoptr (FhMetadata) md = fh_metadata_new ();
  xmlDoc *doc;
  xmlNode *root;
  gboolean ok;

  if (len > FH_METADATA_MAX_BYTES || len > G_MAXINT) {
    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_XML,
                 "metadata too large (%" G_GSIZE_FORMAT " bytes, at most %u)", len,
                 FH_METADATA_MAX_BYTES);
    return NULL;
  }
  /* No network, no entity substitution, no noise on stderr. */
  doc = xmlReadMemory (xml, (int) len, NULL, NULL,
                       XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  if (!doc) {
    const xmlError *e = xmlGetLastError ();
    g_autofree char *msg = g_strdup (e && e->message ? e->message : "parse error");

    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_XML, "not well-formed XML: %s",
                 g_strchomp (msg));
    return NULL;
  }
  /* A DTD can only bring entities (and their blow-ups); libvirt never emits one. */
  if (doc->intSubset || doc->extSubset) {
    xmlFreeDoc (doc);
    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_XML, "a DTD is not allowed");
    return NULL;
  }
  root = xmlDocGetRootElement (doc);
  if (!root) {
    xmlFreeDoc (doc);
    g_set_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_XML, "no element");
    return NULL;
  }
  ok = parse_root (root, flags, md, error);
  xmlFreeDoc (doc);
  return ok ? g_steal_pointer (&md) : NULL;
}

void
fh_metadata_vcpu_percent (const FhMetadata *md, guint vcpu, guint *floor_pct, guint *ceiling_pct)
{
  *floor_pct = md->floor_pct;
  *ceiling_pct = md->ceiling_pct;
  for (guint i = 0; i < md->vcpus->len; i++) {
    const FhMetadataVcpu *v = &g_array_index (md->vcpus, FhMetadataVcpu, i);

    if (v->id != vcpu)
      continue;
    if (v->has_floor)
      *floor_pct = v->floor_pct;
    if (v->has_ceiling)
      *ceiling_pct = v->ceiling_pct;
    break;
  }
}

FhClamp
fh_metadata_vm_clamp (const FhMetadata *md)
{
  return (FhClamp){ fh_percent_to_capacity (md->floor_pct),
                    fh_percent_to_capacity (md->ceiling_pct) };
}

FhClamp
fh_metadata_vcpu_clamp (const FhMetadata *md, guint vcpu)
{
  guint f, c;

  fh_metadata_vcpu_percent (md, vcpu, &f, &c);
  return (FhClamp){ fh_percent_to_capacity (f), fh_percent_to_capacity (c) };
}

char *
fh_metadata_to_xml (const FhMetadata *md)
{
  GString *s = g_string_new (NULL);
  g_autofree char *f = fh_percent_format (md->floor_pct);
  g_autofree char *c = fh_percent_format (md->ceiling_pct);

  g_string_append_printf (s, "<%s:%s xmlns:%s=\"%s\">\n", FH_METADATA_PREFIX, FH_METADATA_ROOT,
                          FH_METADATA_PREFIX, FH_METADATA_NS);
  g_string_append_printf (s, "  <fh:floor>%s</fh:floor>\n", f);
  g_string_append_printf (s, "  <fh:ceiling>%s</fh:ceiling>\n", c);
  g_string_append_printf (s, "  <fh:guest-hints>%s</fh:guest-hints>\n",
                          md->guest_hints ? "on" : "off");
  for (guint i = 0; i < md->vcpus->len; i++) {
    const FhMetadataVcpu *v = &g_array_index (md->vcpus, FhMetadataVcpu, i);

    g_string_append_printf (s, "  <fh:vcpu id=\"%u\"", v->id);
    if (v->has_floor) {
      g_autofree char *x = fh_percent_format (v->floor_pct);
      g_string_append_printf (s, " floor=\"%s\"", x);
    }
    if (v->has_ceiling) {
      g_autofree char *x = fh_percent_format (v->ceiling_pct);
      g_string_append_printf (s, " ceiling=\"%s\"", x);
    }
    g_string_append (s, "/>\n");
  }
  g_string_append_printf (s, "</%s:%s>\n", FH_METADATA_PREFIX, FH_METADATA_ROOT);
  return g_string_free (s, FALSE);
}
