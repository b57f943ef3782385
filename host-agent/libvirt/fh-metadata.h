/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * freqhint's element in a libvirt domain's <metadata> (spec/libvirt-metadata.md).
 *
 * Pure: XML text in, a struct or a GError out; no I/O, no globals of ours.
 * The text is untrusted (anyone allowed to edit a domain writes it), so the
 * parser is strict and bounded, and fh_metadata_parse() takes bytes with a
 * length so that it doubles as a libFuzzer entry point.
 */
#pragma once

#include <glib.h>

#include "fh-merge.h"

/* The namespace carries the version, as Nova's does; a new version is a new URI. */
#define FH_METADATA_NS "urn:freqhint:metadata:1"
#define FH_METADATA_PREFIX "fh"
#define FH_METADATA_ROOT "freqhint"

/* Inputs above this size are refused before any XML parsing. */
#define FH_METADATA_MAX_BYTES 65536

/* Percentages are kept in hundredths: 0..10000; "max" is 10000. */
#define FH_PERCENT_MAX 10000u

#define FH_METADATA_ERROR (fh_metadata_error_quark ())
GQuark fh_metadata_error_quark (void);

typedef enum {
  FH_METADATA_ERROR_XML,     /* not well-formed, or too big */
  FH_METADATA_ERROR_ELEMENT, /* wrong namespace, unknown or repeated element/attribute */
  FH_METADATA_ERROR_VALUE,   /* a value is not "max" or a percentage 0..100 */
  FH_METADATA_ERROR_RANGE,   /* a value looks like 0..1024 capacity units, or floor > ceiling */
} FhMetadataError;

typedef struct {
  guint id;
  gboolean has_floor, has_ceiling;
  guint floor_pct, ceiling_pct; /* hundredths of a percent */
} FhMetadataVcpu;

typedef struct {
  guint floor_pct;      /* default 0 */
  guint ceiling_pct;    /* default FH_PERCENT_MAX */
  gboolean guest_hints; /* default TRUE */
  GArray *vcpus;        /* FhMetadataVcpu, sorted by id, ids unique; never NULL */
} FhMetadata;

/* The defaults: floor 0, ceiling max, guest hints on, no overrides. */
FhMetadata *fh_metadata_new (void);
FhMetadata *fh_metadata_copy (const FhMetadata *md);
void fh_metadata_free (FhMetadata *md);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FhMetadata, fh_metadata_free)
gboolean fh_metadata_equal (const FhMetadata *a, const FhMetadata *b);

typedef enum {
  FH_METADATA_PARSE_DEFAULT = 0,
  /*
   * virDomainGetMetadata() returns the element with its namespace stripped
   * (the caller named the namespace to fetch it): accept elements without a
   * namespace as ours.  Elements in another namespace are still refused.
   */
  FH_METADATA_PARSE_NS_IMPLIED = 1 << 0,
} FhMetadataParseFlags;

/* Parse the freqhint element; strict about the namespace (as in a domain XML file). */
FhMetadata *fh_metadata_parse (const char *xml, gsize len, GError **error);
FhMetadata *fh_metadata_parse_full (const char *xml, gsize len, FhMetadataParseFlags flags,
                                    GError **error);

/* One value: "max" or 0..100 with up to two decimals, surrounding blanks allowed. */
gboolean fh_metadata_parse_percent (const char *text, guint *hundredths, GError **error);

/* Hundredths of a percent -> capacity 0..1024, as the kernel's capacity_from_percent(). */
guint fh_percent_to_capacity (guint hundredths);
/* "max" for FH_PERCENT_MAX, else the kernel's "%u.%02u". */
char *fh_percent_format (guint hundredths);

/* The operator range for the whole VM, and for one vCPU (override or VM's), in capacity. */
FhClamp fh_metadata_vm_clamp (const FhMetadata *md);
FhClamp fh_metadata_vcpu_clamp (const FhMetadata *md, guint vcpu);
/* The same in hundredths; for mirroring into cpu.uclamp.* files. */
void fh_metadata_vcpu_percent (const FhMetadata *md, guint vcpu, guint *floor_pct,
                               guint *ceiling_pct);

/* Serialize (canonical form, namespace declared on the element). */
char *fh_metadata_to_xml (const FhMetadata *md);
