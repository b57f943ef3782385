/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A cgroup chain as the merge reads it (FhClamp per level below the root,
 * outermost first), interned: threads whose chains hold the same values
 * share one copy.  A VM's vCPU threads mostly sit in groups whose requests
 * are alike, and a copy per thread was ~56 bytes with its headers, 16 times
 * per VM (issue 29, item 7).  Immutable; equal contents are the same
 * pointer.  The main loop's thread only.
 */
#pragma once

#include <glib.h>

#include "fh-merge.h"

typedef struct {
  guint ref;
  guint n;
  FhClamp v[];
} FhLevels;

/* A reference to the one copy of v[0..n-1]. */
const FhLevels *fh_levels_intern (const FhClamp *v, guint n);
const FhLevels *fh_levels_ref (const FhLevels *levels);
void fh_levels_unref (const FhLevels *levels);
/* Distinct chains held now (tests, bench). */
guint fh_levels_n_interned (void);
