/* SPDX-License-Identifier: GPL-2.0-or-later */
/* freqhintctl libvirt-xml: inserting the device and metadata into domain XML. */
#include <string.h>

#include <glib.h>

#include "fh-libvirt-xml.h"
#include "fh-metadata.h"

/* Shaped like `virsh dumpxml` output. */
static const char domain[] =
    "<domain type='qemu'>\n"
    "  <name>vm1</name>\n"
    "  <uuid>6b1c3e7e-5d0f-4c55-9a53-0f3f0b1a2c3d</uuid>\n"
    "  <memory unit='KiB'>65536</memory>\n"
    "  <vcpu placement='static'>2</vcpu>\n"
    "  <os><type arch='x86_64' machine='pc'>hvm</type></os>\n"
    "  <devices><emulator>/usr/bin/qemu-system-x86_64</emulator></devices>\n"
    "</domain>\n";

static guint
count (const char *hay, const char *needle)
{
  guint n = 0;

  for (const char *p = strstr (hay, needle); p; p = strstr (p + 1, needle))
    n++;
  return n;
}

static char *
insert (const char *xml, gboolean *changed)
{
  FhLibvirtXmlOptions o;
  g_autoptr (GError) error = NULL;
  char *out;

  fh_libvirt_xml_options_init (&o);
  out = fh_libvirt_xml_insert (xml, strlen (xml), &o, changed, &error);
  g_assert_no_error (error);
  g_assert_nonnull (out);
  return out;
}

/* The freqhint element inside an output, parsed by the agent's own parser. */
static FhMetadata *
metadata_of (const char *xml)
{
  const char *start = strstr (xml, "<fh:freqhint");
  const char *end = strstr (xml, "</fh:freqhint>");
  g_autoptr (GError) error = NULL;
  FhMetadata *md;

  g_assert_nonnull (start);
  g_assert_nonnull (end);
  md = fh_metadata_parse (start, (gsize) (end - start) + strlen ("</fh:freqhint>"), &error);
  g_assert_no_error (error);
  return md;
}

static void
test_insert (void)
{
  gboolean changed;
  g_autofree char *out = insert (domain, &changed);
  g_autoptr (FhMetadata) md = metadata_of (out);

  g_assert_true (changed);
  g_assert_true (strstr (out, "xmlns:qemu=\"" FH_LIBVIRT_QEMU_NS "\""));
  g_assert_true (strstr (out, "<qemu:arg value=\"-chardev\"/>"));
  g_assert_true (strstr (out, "<qemu:arg value=\"socket,id=freqhint0,"
                              "path=/run/freqhint/device.sock,reconnect-ms=1000\"/>"));
  g_assert_true (strstr (out, "<qemu:arg value=\"-object\"/>"));
  g_assert_true (strstr (
      out, "<qemu:arg value=\"freqhint-agent,id=freqhint0-agent,chardev=freqhint0\"/>"));
  g_assert_true (strstr (out, "<qemu:arg value=\"-device\"/>"));
  /* machine "pc": the root bus is pci.0; a fixed slot libvirt does not use. */
  g_assert_true (strstr (
      out,
      "<qemu:arg value=\"virtio-freqhint-pci,backend=freqhint0-agent,bus=pci.0,addr=0x1c\"/>"));
  g_assert_true (strstr (out, "<metadata>"));
  g_assert_cmpuint (md->ceiling_pct, ==, FH_PERCENT_MAX);
  g_assert_true (md->guest_hints);
  /* Metadata after <uuid>, and the rest of the domain intact. */
  g_assert_true (strstr (out, "</uuid>") < strstr (out, "<metadata>"));
  g_assert_true (strstr (out, "<memory unit=\"KiB\">65536</memory>"));
  g_assert_false (g_str_has_prefix (out, "<?xml"));
}

/* q35: the root bus is pcie.0 (QEMU's own choice, slot 1, is a root port of libvirt's). */
static void
test_q35 (void)
{
  const char *q35 = "<domain type='qemu'><name>vm2</name>"
                    "<os><type arch='x86_64' machine='pc-q35-10.0'>hvm</type></os></domain>";
  gboolean changed;
  g_autofree char *out = insert (q35, &changed);

  g_assert_true (changed);
  g_assert_true (strstr (out, "virtio-freqhint-pci,backend=freqhint0-agent,bus=pcie.0,addr=0x1c"));
}

static void
test_idempotent (void)
{
  gboolean changed;
  g_autofree char *once = insert (domain, &changed);
  g_autofree char *twice = insert (once, &changed);

  g_assert_false (changed);
  g_assert_cmpstr (once, ==, twice);
  g_assert_cmpuint (count (twice, "virtio-freqhint-pci"), ==, 1);
  g_assert_cmpuint (count (twice, "<fh:freqhint"), ==, 1);
  g_assert_cmpuint (count (twice, "<metadata>"), ==, 1);
}

/* The operator's values and other metadata stay; an existing chardev is reused. */
static void
test_keeps_existing (void)
{
  const char *xml =
      "<domain type='qemu' xmlns:qemu='" FH_LIBVIRT_QEMU_NS "'>\n"
      "  <name>vm1</name>\n"
      "  <metadata>\n"
      "    <nova:instance xmlns:nova='urn:example:nova'/>\n"
      "    <x:freqhint xmlns:x='" FH_METADATA_NS "'><x:ceiling>40</x:ceiling></x:freqhint>\n"
      "  </metadata>\n"
      "  <qemu:commandline>\n"
      "    <qemu:arg value='-chardev'/>\n"
      "    <qemu:arg value='socket,id=freqhint0,path=/srv/fh.sock'/>\n"
      "  </qemu:commandline>\n"
      "</domain>\n";
  gboolean changed;
  g_autofree char *out = insert (xml, &changed);

  g_assert_true (changed); /* the -device pair was missing */
  g_assert_true (strstr (out, "<x:ceiling>40</x:ceiling>"));
  g_assert_true (strstr (out, "nova:instance"));
  g_assert_cmpuint (count (out, "freqhint xmlns"), ==, 1);
  g_assert_cmpuint (count (out, "-chardev"), ==, 1);
  g_assert_true (strstr (out, "path=/srv/fh.sock"));
  g_assert_cmpuint (count (out, "freqhint-agent,id=freqhint0-agent,chardev=freqhint0"), ==, 1);
  g_assert_cmpuint (count (out, "virtio-freqhint-pci,backend=freqhint0-agent"), ==, 1);
  g_assert_cmpuint (count (out, "<qemu:commandline>"), ==, 1);
}

static void
test_errors (void)
{
  FhLibvirtXmlOptions o;
  g_autoptr (GError) e1 = NULL, e2 = NULL;

  fh_libvirt_xml_options_init (&o);
  g_assert_null (fh_libvirt_xml_insert ("<network/>", 10, &o, NULL, &e1));
  g_assert_nonnull (e1);
  g_assert_true (strstr (e1->message, "<domain>"));
  g_assert_null (fh_libvirt_xml_insert ("<domain>", 8, &o, NULL, &e2));
  g_assert_nonnull (e2);
}

static void
test_snippet (void)
{
  FhLibvirtXmlOptions o;
  g_autofree char *s = NULL;
  g_autoptr (FhMetadata) md = NULL;

  fh_libvirt_xml_options_init (&o);
  o.socket_path = "/run/other.sock";
  s = fh_libvirt_xml_snippet (&o);
  g_assert_true (strstr (s, "path=/run/other.sock,reconnect-ms=1000"));
  g_assert_true (strstr (s, FH_LIBVIRT_QEMU_NS));
  md = metadata_of (s);
  g_assert_cmpuint (md->floor_pct, ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/libvirt-xml/insert", test_insert);
  g_test_add_func ("/libvirt-xml/q35", test_q35);
  g_test_add_func ("/libvirt-xml/idempotent", test_idempotent);
  g_test_add_func ("/libvirt-xml/keeps-existing", test_keeps_existing);
  g_test_add_func ("/libvirt-xml/errors", test_errors);
  g_test_add_func ("/libvirt-xml/snippet", test_snippet);
  return g_test_run ();
}
