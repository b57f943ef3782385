/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The libvirt metadata parser (spec/libvirt-metadata.md, LM-n). */
#include <string.h>

#include <glib.h>

#include "fh-metadata.h"
#include "fh-parse.h"

#define NS "xmlns:fh=\"" FH_METADATA_NS "\""

static FhMetadata *
parse (const char *xml, GError **error)
{
  return fh_metadata_parse (xml, strlen (xml), error);
}

static void
expect_error (const char *xml, int code, const char *fragment)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (FhMetadata) md = parse (xml, &error);

  if (md || !error)
    g_error ("accepted: %s", xml);
  g_assert_error (error, FH_METADATA_ERROR, code);
  if (fragment && !strstr (error->message, fragment))
    g_error ("error \"%s\" lacks \"%s\" (input %s)", error->message, fragment, xml);
}

/* LM-3: every element optional, defaults 0 / max / on. */
static void
test_defaults (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (FhMetadata) md = parse ("<fh:freqhint " NS "/>", &error);
  FhClamp c;

  g_assert_no_error (error);
  g_assert_cmpuint (md->floor_pct, ==, 0);
  g_assert_cmpuint (md->ceiling_pct, ==, FH_PERCENT_MAX);
  g_assert_true (md->guest_hints);
  g_assert_cmpuint (md->vcpus->len, ==, 0);
  c = fh_metadata_vm_clamp (md);
  g_assert_cmpuint (c.min, ==, 0);
  g_assert_cmpuint (c.max, ==, 1024);
}

static void
test_full (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (FhMetadata) md = parse ("<fh:freqhint " NS ">\n"
                                     "  <fh:guest-hints> off </fh:guest-hints>\n"
                                     "  <fh:vcpu id=\"3\" ceiling=\"max\"/>\n"
                                     "  <fh:floor>12.5</fh:floor>\n"
                                     "  <!-- comment -->\n"
                                     "  <fh:ceiling>\n 80 \n</fh:ceiling>\n"
                                     "  <fh:vcpu id=\"1\" floor=\"20\" ceiling=\"50.25\"/>\n"
                                     "  <fh:vcpu id=\"0\"/>\n"
                                     "</fh:freqhint>",
                                     &error);
  const FhMetadataVcpu *v;
  FhClamp c;

  g_assert_no_error (error);
  g_assert_cmpuint (md->floor_pct, ==, 1250);
  g_assert_cmpuint (md->ceiling_pct, ==, 8000);
  g_assert_false (md->guest_hints);
  g_assert_cmpuint (md->vcpus->len, ==, 3);
  /* sorted by id */
  v = &g_array_index (md->vcpus, FhMetadataVcpu, 0);
  g_assert_cmpuint (v->id, ==, 0);
  g_assert_false (v->has_floor);
  g_assert_false (v->has_ceiling);
  v = &g_array_index (md->vcpus, FhMetadataVcpu, 1);
  g_assert_cmpuint (v->id, ==, 1);
  g_assert_cmpuint (v->floor_pct, ==, 2000);
  g_assert_cmpuint (v->ceiling_pct, ==, 5025);

  /* LM-5: a vCPU override replaces only the bound it names. */
  c = fh_metadata_vcpu_clamp (md, 1);
  g_assert_cmpuint (c.min, ==, 205); /* 20% of 1024 = 204.8 */
  g_assert_cmpuint (c.max, ==, 515); /* 50.25% = 514.56 */
  c = fh_metadata_vcpu_clamp (md, 3);
  g_assert_cmpuint (c.min, ==, 128); /* 12.5% */
  g_assert_cmpuint (c.max, ==, 1024);
  c = fh_metadata_vcpu_clamp (md, 7); /* no override: the VM's */
  g_assert_cmpuint (c.min, ==, 128);
  g_assert_cmpuint (c.max, ==, 819); /* 80% = 819.2 */
}

/* Any prefix works; the namespace is what counts. */
static void
test_prefix (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (FhMetadata) md = parse (
      "<x:freqhint xmlns:x=\"" FH_METADATA_NS "\"><x:ceiling>max</x:ceiling></x:freqhint>", &error);
  g_autoptr (FhMetadata) md2 =
      parse ("<freqhint xmlns=\"" FH_METADATA_NS "\"><ceiling>40</ceiling></freqhint>", &error);

  g_assert_no_error (error);
  g_assert_cmpuint (md->ceiling_pct, ==, FH_PERCENT_MAX);
  g_assert_cmpuint (md2->ceiling_pct, ==, 4000);
}

/* LM-4: 0..1024-style values are refused with a message saying percent is expected. */
static void
test_capacity_units_rejected (void)
{
  expect_error ("<fh:freqhint " NS "><fh:ceiling>800</fh:ceiling></fh:freqhint>",
                FH_METADATA_ERROR_RANGE, "percent");
  expect_error ("<fh:freqhint " NS "><fh:ceiling>800</fh:ceiling></fh:freqhint>",
                FH_METADATA_ERROR_RANGE, "not capacity units 0 to 1024");
  expect_error ("<fh:freqhint " NS "><fh:floor>1024</fh:floor></fh:freqhint>",
                FH_METADATA_ERROR_RANGE, "<floor>");
  expect_error ("<fh:freqhint " NS "><fh:vcpu id=\"0\" ceiling=\"512\"/></fh:freqhint>",
                FH_METADATA_ERROR_RANGE, "<vcpu> ceiling");
  expect_error ("<fh:freqhint " NS "><fh:ceiling>100.01</fh:ceiling></fh:freqhint>",
                FH_METADATA_ERROR_RANGE, "above 100");
}

static void
test_bad_values (void)
{
  static const char *const bad[] = { "",     " ",   "-5",   "+5",  "5.",  ".5",  "5.123", "1e2",
                                     "0x10", "MAX", "max ", "5 0", "50%", "005", "0100",  "nan" };

  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_autofree char *xml =
        g_strdup_printf ("<fh:freqhint " NS "><fh:ceiling>%s</fh:ceiling></fh:freqhint>", bad[i]);
    g_autoptr (GError) error = NULL;
    g_autoptr (FhMetadata) md = parse (xml, &error);

    /* "max " is fine: blanks around a token are allowed, as in the schema. */
    if (strcmp (bad[i], "max ") == 0) {
      g_assert_no_error (error);
      continue;
    }
    if (md)
      g_error ("accepted ceiling \"%s\"", bad[i]);
    g_assert_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_VALUE);
  }
  expect_error ("<fh:freqhint " NS "><fh:guest-hints>yes</fh:guest-hints></fh:freqhint>",
                FH_METADATA_ERROR_VALUE, "guest-hints");
  expect_error ("<fh:freqhint " NS "><fh:vcpu id=\"1024\"/></fh:freqhint>", FH_METADATA_ERROR_VALUE,
                "vcpu id");
  expect_error ("<fh:freqhint " NS "><fh:vcpu id=\"10000\"/></fh:freqhint>", FH_METADATA_ERROR_VALUE,
                "vcpu id");
  expect_error ("<fh:freqhint " NS "><fh:vcpu id=\"01\"/></fh:freqhint>", FH_METADATA_ERROR_VALUE,
                "vcpu id");
  expect_error ("<fh:freqhint " NS "><fh:vcpu id=\"-1\"/></fh:freqhint>", FH_METADATA_ERROR_VALUE,
                "vcpu id");
}

static void
test_structure (void)
{
  expect_error ("<freqhint><ceiling>5</ceiling></freqhint>", FH_METADATA_ERROR_ELEMENT,
                "without namespace");
  expect_error ("<fh:freqhint xmlns:fh=\"urn:freqhint:metadata:2\"/>", FH_METADATA_ERROR_ELEMENT,
                "urn:freqhint:metadata:2");
  expect_error ("<fh:other " NS "/>", FH_METADATA_ERROR_ELEMENT, "<other>");
  expect_error ("<fh:freqhint " NS "><fh:ceiling>5</fh:ceiling><fh:ceiling>6</fh:ceiling>"
                "</fh:freqhint>",
                FH_METADATA_ERROR_ELEMENT, "twice");
  expect_error ("<fh:freqhint " NS "><fh:turbo/></fh:freqhint>", FH_METADATA_ERROR_ELEMENT,
                "unknown element");
  expect_error ("<fh:freqhint " NS " xmlns:o=\"urn:o\"><o:ceiling>5</o:ceiling></fh:freqhint>",
                FH_METADATA_ERROR_ELEMENT, "not in namespace");
  expect_error ("<fh:freqhint " NS ">junk</fh:freqhint>", FH_METADATA_ERROR_ELEMENT, "text");
  expect_error ("<fh:freqhint " NS " a=\"1\"/>", FH_METADATA_ERROR_ELEMENT, "attributes");
  expect_error ("<fh:freqhint " NS "><fh:ceiling a=\"1\">5</fh:ceiling></fh:freqhint>",
                FH_METADATA_ERROR_ELEMENT, "attributes");
  expect_error ("<fh:freqhint " NS "><fh:ceiling><fh:x/></fh:ceiling></fh:freqhint>",
                FH_METADATA_ERROR_ELEMENT, "text only");
  expect_error ("<fh:freqhint " NS "><fh:vcpu floor=\"5\"/></fh:freqhint>",
                FH_METADATA_ERROR_ELEMENT, "without id");
  expect_error ("<fh:freqhint " NS "><fh:vcpu id=\"1\" turbo=\"5\"/></fh:freqhint>",
                FH_METADATA_ERROR_ELEMENT, "unknown attribute");
  expect_error ("<fh:freqhint " NS "><fh:vcpu id=\"1\"/><fh:vcpu id=\"1\"/></fh:freqhint>",
                FH_METADATA_ERROR_ELEMENT, "twice");
  expect_error ("<fh:freqhint " NS "><fh:vcpu id=\"1\">x</fh:vcpu></fh:freqhint>",
                FH_METADATA_ERROR_ELEMENT, "empty");
  expect_error ("<fh:freqhint " NS ">", FH_METADATA_ERROR_XML, "well-formed");
  expect_error ("", FH_METADATA_ERROR_XML, NULL);
  /* A DTD could carry entity bombs: refused outright. */
  expect_error ("<!DOCTYPE fh:freqhint [<!ENTITY a \"aaaa\">]><fh:freqhint " NS "/>",
                FH_METADATA_ERROR_XML, "DTD");
}

/* LM-6: floor above ceiling, for the VM and per vCPU after inheritance. */
static void
test_inversion (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (FhMetadata) ok =
      parse ("<fh:freqhint " NS "><fh:floor>50</fh:floor><fh:ceiling>50</fh:ceiling></fh:freqhint>",
             &error);

  g_assert_no_error (error);
  g_assert_nonnull (ok);
  expect_error ("<fh:freqhint " NS "><fh:floor>60</fh:floor><fh:ceiling>50</fh:ceiling>"
                "</fh:freqhint>",
                FH_METADATA_ERROR_RANGE, "floor 60.00 is above ceiling 50.00");
  expect_error ("<fh:freqhint " NS "><fh:ceiling>50</fh:ceiling><fh:vcpu id=\"2\" floor=\"70\"/>"
                "</fh:freqhint>",
                FH_METADATA_ERROR_RANGE, "vcpu 2");
}

/* LM-8: what virDomainGetMetadata returns: the same element, namespace stripped. */
static void
test_ns_implied (void)
{
  const char *stripped = "<freqhint>\n  <ceiling>50</ceiling>\n  <vcpu id=\"1\" floor=\"5\"/>\n"
                         "</freqhint>";
  const char *foreign = "<freqhint xmlns:o=\"urn:o\"><o:ceiling>50</o:ceiling></freqhint>";
  const char *other_version = "<freqhint xmlns=\"urn:freqhint:metadata:2\"/>";
  g_autoptr (GError) error = NULL;
  g_autoptr (FhMetadata) md =
      fh_metadata_parse_full (stripped, strlen (stripped), FH_METADATA_PARSE_NS_IMPLIED, &error);
  g_autoptr (FhMetadata) qualified =
      fh_metadata_parse_full ("<fh:freqhint " NS "/>", strlen ("<fh:freqhint " NS "/>"),
                              FH_METADATA_PARSE_NS_IMPLIED, &error);
  g_autoptr (GError) e1 = NULL, e2 = NULL;

  g_assert_no_error (error);
  g_assert_cmpuint (md->ceiling_pct, ==, 5000);
  g_assert_cmpuint (md->vcpus->len, ==, 1);
  g_assert_nonnull (qualified);
  g_assert_null (
      fh_metadata_parse_full (foreign, strlen (foreign), FH_METADATA_PARSE_NS_IMPLIED, &e1));
  g_assert_error (e1, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT);
  g_assert_null (fh_metadata_parse_full (other_version, strlen (other_version),
                                         FH_METADATA_PARSE_NS_IMPLIED, &e2));
  g_assert_error (e2, FH_METADATA_ERROR, FH_METADATA_ERROR_ELEMENT);
  /* Without the flag (a file), the namespace is required. */
  expect_error (stripped, FH_METADATA_ERROR_ELEMENT, "without namespace");
}

static void
test_size_limit (void)
{
  gsize n = FH_METADATA_MAX_BYTES + 1;
  g_autofree char *big = g_malloc (n);
  g_autoptr (GError) error = NULL;

  memset (big, ' ', n);
  g_assert_null (fh_metadata_parse (big, n, &error));
  g_assert_error (error, FH_METADATA_ERROR, FH_METADATA_ERROR_XML);
}

/* Not NUL-terminated input (the fuzz entry point's contract). */
static void
test_length_bound (void)
{
  const char *xml = "<fh:freqhint " NS "/>GARBAGE";
  g_autoptr (GError) error = NULL;
  g_autoptr (FhMetadata) md = fh_metadata_parse (xml, strlen (xml) - 7, &error);

  g_assert_no_error (error);
  g_assert_nonnull (md);
}

/* LM-2: the conversion is the kernel's, i.e. the agent's cgroup parser's, for every value. */
static void
test_conversion_matches_cgroup_parser (void)
{
  for (guint h = 0; h <= FH_PERCENT_MAX; h++) {
    g_autofree char *text = fh_percent_format (h);
    g_autofree char *plain = g_strdup_printf ("%u.%02u", h / 100, h % 100);
    guint mine, cap;

    g_assert_true (fh_metadata_parse_percent (text, &mine, NULL));
    g_assert_cmpuint (mine, ==, h);
    g_assert_true (fh_parse_uclamp (plain, &cap, NULL));
    g_assert_cmpuint (fh_percent_to_capacity (h), ==, cap);
  }
}

static void
test_roundtrip (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (FhMetadata) md = parse ("<fh:freqhint " NS "><fh:floor>5.5</fh:floor>"
                                     "<fh:guest-hints>off</fh:guest-hints>"
                                     "<fh:vcpu id=\"9\" floor=\"7\"/></fh:freqhint>",
                                     &error);
  g_autofree char *xml = NULL;
  g_autoptr (FhMetadata) again = NULL;

  g_assert_no_error (error);
  xml = fh_metadata_to_xml (md);
  again = parse (xml, &error);
  g_assert_no_error (error);
  g_assert_true (fh_metadata_equal (md, again));
  md->floor_pct = 600;
  g_assert_false (fh_metadata_equal (md, again));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/metadata/defaults", test_defaults);
  g_test_add_func ("/metadata/full", test_full);
  g_test_add_func ("/metadata/prefix", test_prefix);
  g_test_add_func ("/metadata/capacity-units-rejected", test_capacity_units_rejected);
  g_test_add_func ("/metadata/bad-values", test_bad_values);
  g_test_add_func ("/metadata/structure", test_structure);
  g_test_add_func ("/metadata/inversion", test_inversion);
  g_test_add_func ("/metadata/ns-implied", test_ns_implied);
  g_test_add_func ("/metadata/size-limit", test_size_limit);
  g_test_add_func ("/metadata/length-bound", test_length_bound);
  g_test_add_func ("/metadata/conversion", test_conversion_matches_cgroup_parser);
  g_test_add_func ("/metadata/roundtrip", test_roundtrip);
  return g_test_run ();
}
