/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * OpenStack Nova: policy per flavor without touching Nova.
 *
 * Nova writes its own element into each domain's <metadata>
 * (<nova:instance> in http://openstack.org/xmlns/libvirt/nova/1.1, 1.0
 * before), with <nova:flavor name="...">.  freqhintd.conf maps flavor names
 * to the same settings as the freqhint element:
 *
 *   [nova-flavor m1.latency]
 *   floor=30
 *   ceiling=max
 *   guest-hints=on
 *
 * A domain's own freqhint element wins over its flavor's mapping; a flavor
 * without a section maps to nothing (the config's [vm] sections, then the
 * defaults).  Pure: text in, values out.
 */
#pragma once

#include <glib.h>

#include "fh-metadata.h"

/* Newest first; the watcher asks for each in turn. */
#define FH_NOVA_NS_1_1 "http://openstack.org/xmlns/libvirt/nova/1.1"
#define FH_NOVA_NS_1_0 "http://openstack.org/xmlns/libvirt/nova/1.0"
#define FH_NOVA_FLAVOR_GROUP "nova-flavor "

/*
 * The flavor name of a <nova:instance> element as virDomainGetMetadata()
 * returns it (namespace declared or stripped).  NULL with error when the
 * text is not such an element or names no flavor.
 */
char *fh_nova_flavor_name (const char *xml, gsize len, GError **error);

/*
 * The [nova-flavor NAME] sections of a key file: name -> FhMetadata* (no
 * per-vCPU overrides).  Empty table when there are none; NULL with error
 * (naming the section and key) on a bad value or an unknown key.
 */
GHashTable *fh_nova_flavors_from_keyfile (GKeyFile *kf, GError **error);
/* The same from a file; a missing file gives an empty table. */
GHashTable *fh_nova_flavors_load (const char *path, GError **error);
