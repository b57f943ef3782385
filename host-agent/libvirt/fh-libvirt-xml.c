/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Domain XML editing for `freqhintctl libvirt-xml`, with libxml2.
 */
#define G_LOG_DOMAIN "freqhint-libvirt"

#include "fh-libvirt-xml.h"

#include <stdio.h>
#include <string.h>

#include <gio/gio.h> /* G_IO_ERROR */
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlsave.h>

#include "fh-libvirt-watcher.h"
#include "fh-metadata.h"

#define FH_DOMAIN_XML_MAX (16 * 1024 * 1024)

void
fh_libvirt_xml_options_init (FhLibvirtXmlOptions *opts)
{
  opts->socket_path = "/run/freqhint/device.sock";
  opts->chardev_id = "freqhint0";
  opts->reconnect_ms = 1000;
  opts->pci_slot = 0x1c;
  opts->vsock = FALSE;
}

char *
fh_libvirt_xml_chardev_arg (const FhLibvirtXmlOptions *opts)
{
  /* QEMU is the client and retries, so the VM starts even while freqhintd is down. */
  return g_strdup_printf ("socket,id=%s,path=%s,reconnect-ms=%u", opts->chardev_id,
                          opts->socket_path, opts->reconnect_ms);
}

char *
fh_libvirt_xml_object_arg (const FhLibvirtXmlOptions *opts)
{
  return g_strdup_printf ("freqhint-agent,id=%s-agent,chardev=%s", opts->chardev_id,
                          opts->chardev_id);
}

char *
fh_libvirt_xml_device_arg (const FhLibvirtXmlOptions *opts, gboolean q35)
{
  return g_strdup_printf ("virtio-freqhint-pci,backend=%s-agent,bus=%s,addr=0x%x", opts->chardev_id,
                          q35 ? "pcie.0" : "pci.0", opts->pci_slot);
}

static char *
default_metadata_xml (void)
{
  g_autoptr (FhMetadata) md = fh_metadata_new ();

  return fh_metadata_to_xml (md);
}

char *
fh_libvirt_xml_snippet (const FhLibvirtXmlOptions *opts)
{
  g_autofree char *chardev = fh_libvirt_xml_chardev_arg (opts);
  g_autofree char *object = fh_libvirt_xml_object_arg (opts);
  g_autofree char *device = fh_libvirt_xml_device_arg (opts, TRUE);
  g_autofree char *device_pc = fh_libvirt_xml_device_arg (opts, FALSE);
  g_autofree char *md = default_metadata_xml ();
  g_auto (GStrv) lines = g_strsplit (g_strchomp (md), "\n", -1);
  GString *s = g_string_new (NULL);

  g_string_append_printf (s,
                          "<!-- On the root element: <domain type=\"...\" xmlns:qemu=\"%s\"> -->\n"
                          "<!-- Inside <domain>: -->\n"
                          "<metadata>\n",
                          FH_LIBVIRT_QEMU_NS);
  for (char **l = lines; *l; l++)
    g_string_append_printf (s, "  %s\n", *l);
  if (opts->vsock) {
    g_string_append (s, "</metadata>\n"
                        "<!-- Inside <devices>: -->\n"
                        "<vsock model=\"virtio\">\n"
                        "  <cid auto=\"yes\"/>\n"
                        "</vsock>\n"
                        "<!-- The guest's virtio_freqhint reports over it to freqhint-vsockd,\n"
                        "     which freqhintd trusts as relay_user; the CID libvirt gives the\n"
                        "     guest says which domain it is. -->\n");
    return g_string_free (s, FALSE);
  }
  g_string_append_printf (s,
                          "</metadata>\n"
                          "<qemu:commandline>\n"
                          "  <qemu:arg value=\"-chardev\"/>\n"
                          "  <qemu:arg value=\"%s\"/>\n"
                          "  <qemu:arg value=\"-object\"/>\n"
                          "  <qemu:arg value=\"%s\"/>\n"
                          "  <qemu:arg value=\"-device\"/>\n"
                          "  <qemu:arg value=\"%s\"/>\n"
                          "</qemu:commandline>\n"
                          "<!-- That is for machine type q35; for pc (i440fx) the device is\n"
                          "     %s -->\n",
                          chardev, object, device, device_pc);
  return g_string_free (s, FALSE);
}

static gboolean
node_is (xmlNode *n, const char *ns, const char *name)
{
  if (n->type != XML_ELEMENT_NODE || strcmp ((const char *) n->name, name) != 0)
    return FALSE;
  if (!ns)
    return n->ns == NULL;
  return n->ns && n->ns->href && strcmp ((const char *) n->ns->href, ns) == 0;
}

static xmlNode *
find_child (xmlNode *parent, const char *ns, const char *name)
{
  for (xmlNode *c = parent->children; c; c = c->next)
    if (node_is (c, ns, name))
      return c;
  return NULL;
}

static void
add_arg (xmlNode *cmdline, xmlNs *qns, const char *value)
{
  xmlNode *arg = xmlNewChild (cmdline, qns, BAD_CAST "arg", NULL);

  xmlNewProp (arg, BAD_CAST "value", BAD_CAST value);
}

/* Returns TRUE if it added anything. */
static gboolean
is_q35 (xmlNode *root)
{
  xmlNode *os = find_child (root, NULL, "os");
  xmlNode *type = os ? find_child (os, NULL, "type") : NULL;
  g_autofree char *machine = type ? (char *) xmlGetProp (type, BAD_CAST "machine") : NULL;

  /* "q35" or versioned "pc-q35-10.0"; everything else here is i440fx ("pc", "pc-i440fx-*"). */
  return machine && strstr (machine, "q35");
}

static gboolean
ensure_commandline (xmlNode *root, const FhLibvirtXmlOptions *opts, GError **error)
{
  g_autofree char *chardev = fh_libvirt_xml_chardev_arg (opts);
  g_autofree char *object = fh_libvirt_xml_object_arg (opts);
  g_autofree char *device = fh_libvirt_xml_device_arg (opts, is_q35 (root));
  g_autofree char *id_match = g_strdup_printf ("id=%s", opts->chardev_id);
  g_autofree char *object_match = g_strdup_printf ("id=%s-agent", opts->chardev_id);
  gboolean have_device = FALSE, have_chardev = FALSE, have_object = FALSE;
  xmlNs *qns = xmlSearchNsByHref (root->doc, root, BAD_CAST FH_LIBVIRT_QEMU_NS);
  xmlNode *cmdline;

  if (!qns) {
    if (xmlSearchNs (root->doc, root, BAD_CAST "qemu")) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                   "prefix \"qemu\" is bound to another namespace than %s", FH_LIBVIRT_QEMU_NS);
      return FALSE;
    }
    qns = xmlNewNs (root, BAD_CAST FH_LIBVIRT_QEMU_NS, BAD_CAST "qemu");
  }
  cmdline = find_child (root, FH_LIBVIRT_QEMU_NS, "commandline");
  if (cmdline) {
    for (xmlNode *a = cmdline->children; a; a = a->next) {
      g_autofree char *v = NULL;

      if (!node_is (a, FH_LIBVIRT_QEMU_NS, "arg"))
        continue;
      v = (char *) xmlGetProp (a, BAD_CAST "value");
      if (!v)
        continue;
      if (g_str_has_prefix (v, "virtio-freqhint-pci"))
        have_device = TRUE;
      if (g_str_has_prefix (v, "socket,") && strstr (v, id_match))
        have_chardev = TRUE;
      if (g_str_has_prefix (v, "freqhint-agent,") && strstr (v, object_match))
        have_object = TRUE;
    }
  }
  /* An operator's own device line (other socket, other id) is respected as is. */
  if (have_device)
    return TRUE;
  if (!cmdline)
    cmdline = xmlNewChild (root, qns, BAD_CAST "commandline", NULL);
  if (!have_chardev) {
    add_arg (cmdline, qns, "-chardev");
    add_arg (cmdline, qns, chardev);
  }
  if (!have_object) {
    add_arg (cmdline, qns, "-object");
    add_arg (cmdline, qns, object);
  }
  add_arg (cmdline, qns, "-device");
  add_arg (cmdline, qns, device);
  return TRUE;
}

/* <devices><vsock model='virtio'><cid auto='yes'/></vsock>, unless the domain has a <vsock>. */
static gboolean
ensure_vsock (xmlNode *root)
{
  xmlNode *devices = find_child (root, NULL, "devices");
  xmlNode *vsock, *cid;

  if (!devices)
    devices = xmlNewChild (root, NULL, BAD_CAST "devices", NULL);
  if (find_child (devices, NULL, "vsock"))
    return TRUE; /* the operator's own (a fixed CID, another model) stays */
  vsock = xmlNewChild (devices, NULL, BAD_CAST "vsock", NULL);
  xmlNewProp (vsock, BAD_CAST "model", BAD_CAST "virtio");
  cid = xmlNewChild (vsock, NULL, BAD_CAST "cid", NULL);
  xmlNewProp (cid, BAD_CAST "auto", BAD_CAST "yes");
  return TRUE;
}

static xmlNode *
new_metadata_element (void)
{
  xmlNode *el = xmlNewNode (NULL, BAD_CAST FH_METADATA_ROOT);
  xmlNs *ns = xmlNewNs (el, BAD_CAST FH_METADATA_NS, BAD_CAST FH_METADATA_PREFIX);

  xmlSetNs (el, ns);
  xmlNewTextChild (el, ns, BAD_CAST "floor", BAD_CAST "0");
  xmlNewTextChild (el, ns, BAD_CAST "ceiling", BAD_CAST "max");
  xmlNewTextChild (el, ns, BAD_CAST "guest-hints", BAD_CAST "on");
  return el;
}

/* libvirt keeps <metadata> near the top; put a new one after name/uuid/title/description. */
static xmlNode *
ensure_metadata_parent (xmlNode *root)
{
  static const char *const before[] = { "name", "uuid", "genid", "title", "description" };
  xmlNode *md = find_child (root, NULL, "metadata");
  xmlNode *after = NULL;

  if (md)
    return md;
  md = xmlNewNode (NULL, BAD_CAST "metadata");
  for (xmlNode *c = root->children; c; c = c->next)
    for (gsize i = 0; i < G_N_ELEMENTS (before); i++)
      if (node_is (c, NULL, before[i]))
        after = c;
  if (after)
    xmlAddNextSibling (after, md);
  else if (root->children)
    xmlAddPrevSibling (root->children, md);
  else
    xmlAddChild (root, md);
  return md;
}

static gboolean
ensure_metadata (xmlNode *root)
{
  xmlNode *parent = ensure_metadata_parent (root);

  for (xmlNode *c = parent->children; c; c = c->next)
    if (c->type == XML_ELEMENT_NODE && c->ns && c->ns->href &&
        strcmp ((const char *) c->ns->href, FH_METADATA_NS) == 0)
      return FALSE; /* the operator's values stay */
  xmlAddChild (parent, new_metadata_element ());
  return TRUE;
}

static char *
serialize (xmlDoc *doc)
{
  xmlBuffer *buf = xmlBufferCreate ();
  xmlSaveCtxt *save = xmlSaveToBuffer (buf, "UTF-8", XML_SAVE_FORMAT | XML_SAVE_NO_DECL);
  char *out;

  xmlSaveDoc (save, doc);
  xmlSaveClose (save);
  out = g_strdup ((const char *) xmlBufferContent (buf));
  xmlBufferFree (buf);
  return out;
}

char *
fh_libvirt_xml_insert (const char *xml, gsize len, const FhLibvirtXmlOptions *opts,
                       gboolean *changed, GError **error)
{
  g_autofree char *before = NULL;
  xmlDoc *doc;
  xmlNode *root;
  char *out;

  if (changed)
    *changed = FALSE;
  if (len > FH_DOMAIN_XML_MAX) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "domain XML too large");
    return NULL;
  }
  /* NOBLANKS: the output is re-indented as a whole, so new lines fit in. */
  doc = xmlReadMemory (xml, (int) len, NULL, NULL,
                       XML_PARSE_NONET | XML_PARSE_NOBLANKS | XML_PARSE_NOERROR |
                           XML_PARSE_NOWARNING);
  if (!doc) {
    const xmlError *e = xmlGetLastError ();
    g_autofree char *msg = g_strdup (e && e->message ? e->message : "parse error");

    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "not well-formed XML: %s",
                 g_strchomp (msg));
    return NULL;
  }
  root = xmlDocGetRootElement (doc);
  if (!root || !node_is (root, NULL, "domain")) {
    xmlFreeDoc (doc);
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                 "not a libvirt domain: the root element is not <domain>");
    return NULL;
  }
  before = serialize (doc);
  if (opts->vsock ? !ensure_vsock (root) : !ensure_commandline (root, opts, error)) {
    xmlFreeDoc (doc);
    return NULL;
  }
  ensure_metadata (root);
  out = serialize (doc);
  xmlFreeDoc (doc);
  if (changed)
    *changed = strcmp (before, out) != 0;
  return out;
}

static gboolean
looks_like_file (const char *arg)
{
  return strchr (arg, '/') || g_file_test (arg, G_FILE_TEST_EXISTS);
}

static char *
domain_xml_from_libvirt (const char *domain, const char *uri, GError **error)
{
  virConnectPtr conn;
  virDomainPtr dom;
  char *xml;

  if (!uri)
    uri = FH_LIBVIRT_DEFAULT_URI;
  conn = virConnectOpenReadOnly (uri);
  if (!conn) {
    virErrorPtr e = virGetLastError ();
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "cannot connect to %s: %s", uri,
                 e && e->message ? e->message : "unknown error");
    return NULL;
  }
  dom = virDomainLookupByName (conn, domain);
  if (!dom)
    dom = virDomainLookupByUUIDString (conn, domain);
  if (!dom) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no domain \"%s\" on %s", domain, uri);
    virConnectClose (conn);
    return NULL;
  }
  xml = virDomainGetXMLDesc (dom, VIR_DOMAIN_XML_INACTIVE);
  if (!xml) {
    virErrorPtr e = virGetLastError ();
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "cannot read domain \"%s\": %s", domain,
                 e && e->message ? e->message : "unknown error");
  }
  virDomainFree (dom);
  virConnectClose (conn);
  return xml;
}

char *
fh_libvirt_xml_run (const char *arg, const char *uri, const FhLibvirtXmlOptions *opts,
                    GError **error)
{
  g_autofree char *xml = NULL;
  gsize len = 0;

  if (!arg)
    return fh_libvirt_xml_snippet (opts);
  if (strcmp (arg, "-") == 0) {
    GString *buf = g_string_new (NULL);
    char chunk[65536];
    size_t n;

    while ((n = fread (chunk, 1, sizeof chunk, stdin)) > 0 && buf->len <= FH_DOMAIN_XML_MAX)
      g_string_append_len (buf, chunk, (gssize) n);
    len = buf->len;
    xml = g_string_free (buf, FALSE);
  } else if (looks_like_file (arg)) {
    if (!g_file_get_contents (arg, &xml, &len, error))
      return NULL;
  } else {
    char *x = domain_xml_from_libvirt (arg, uri, error);

    if (!x)
      return NULL;
    xml = g_strdup (x);
    free (x);
    len = strlen (xml);
  }
  return fh_libvirt_xml_insert (xml, len, opts, NULL, error);
}
