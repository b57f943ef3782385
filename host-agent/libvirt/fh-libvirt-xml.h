/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `freqhintctl libvirt-xml [DOMAIN|FILE|-]`: what an operator adds to a
 * libvirt domain for freqhint -- the <qemu:commandline> arguments that
 * plug the virtio-freqhint device into freqhintd's socket, and the
 * freqhint metadata element (spec/libvirt-metadata.md).
 *
 * Without an argument the pieces are printed; with one, they are added to
 * that domain's XML, idempotently: what is already there (the device, the
 * chardev, its freqhint-agent object, a freqhint element with the
 * operator's values) is kept.
 */
#pragma once

#include <glib.h>

/* libvirt's namespace for QEMU passthrough; an identifier, nothing is fetched. */
#define FH_LIBVIRT_QEMU_NS "http://libvirt.org/schemas/domain/qemu/1.0"

typedef struct {
  const char *socket_path; /* freqhintd's device socket */
  const char *chardev_id;
  guint reconnect_ms;
  /*
   * libvirt gives its own devices explicit PCI addresses and knows nothing
   * of <qemu:commandline> ones, so QEMU's automatic choice can collide with
   * them (on q35 it takes slot 1, which libvirt gives a root port).  The
   * device therefore gets a fixed slot on the root bus that libvirt does
   * not hand out by default: pcie.0 on q35, pci.0 on i440fx.
   */
  guint pci_slot;
  /*
   * The stock path (spec/vsock-transport.md): a virtio-vsock device with a
   * CID libvirt chooses, <vsock model='virtio'><cid auto='yes'/></vsock>,
   * instead of the device and its <qemu:commandline>; the guest's module
   * reports over it to freqhint-vsockd.  An existing <vsock> is kept.
   */
  gboolean vsock;
} FhLibvirtXmlOptions;

/* /run/freqhint/device.sock, "freqhint0", 1000 ms, slot 0x1c, the device (not vsock). */
void fh_libvirt_xml_options_init (FhLibvirtXmlOptions *opts);

/*
 * The -chardev, -object and -device argument values: the device links a
 * freqhint-agent object ("<chardev_id>-agent") on the chardev with
 * backend=; q35 names the root bus pcie.0.
 */
char *fh_libvirt_xml_chardev_arg (const FhLibvirtXmlOptions *opts);
char *fh_libvirt_xml_object_arg (const FhLibvirtXmlOptions *opts);
char *fh_libvirt_xml_device_arg (const FhLibvirtXmlOptions *opts, gboolean q35);

/* The pieces to paste with `virsh edit`, with a comment saying where. */
char *fh_libvirt_xml_snippet (const FhLibvirtXmlOptions *opts);

/*
 * Pure: a <domain> document in, the same document with the pieces added
 * out.  *changed (may be NULL) says whether anything was added.
 */
char *fh_libvirt_xml_insert (const char *xml, gsize len, const FhLibvirtXmlOptions *opts,
                             gboolean *changed, GError **error);

/*
 * The CLI's entry point.  arg NULL: the snippet.  "-": a domain XML on
 * stdin.  An existing file (or anything with a '/'): that file.  Otherwise
 * a domain name or UUID on libvirt at uri (NULL: qemu:///system), whose
 * persistent definition (what `virsh edit` edits) is used.  Returns the
 * text to print; never changes the domain itself (pipe it to `virsh define`).
 */
char *fh_libvirt_xml_run (const char *arg, const char *uri, const FhLibvirtXmlOptions *opts,
                          GError **error);
