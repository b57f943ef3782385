/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Interned cgroup chains (fh-levels.h).  One table maps contents to the
 * copy; the last reference takes the copy out of it, so the table holds
 * only chains some thread sits in.
 */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-levels.h"

#include <string.h>

static GHashTable *interned; /* FhLevels* -> itself, by content */

static guint
levels_hash (gconstpointer key)
{
  const FhLevels *l = key;
  guint h = l->n;

  for (guint i = 0; i < l->n; i++)
    h = h * 31 + ((guint) l->v[i].min << 16 | l->v[i].max);
  return h;
}

static gboolean
levels_equal (gconstpointer a, gconstpointer b)
{
  const FhLevels *x = a, *y = b;

  return x->n == y->n && memcmp (x->v, y->v, x->n * sizeof (FhClamp)) == 0;
}

const FhLevels *
fh_levels_intern (const FhClamp *v, guint n)
{
  FhLevels *l = g_malloc (sizeof (FhLevels) + n * sizeof (FhClamp));
  FhLevels *hit;

  l->ref = 1;
  l->n = n;
  if (n)
    memcpy (l->v, v, n * sizeof (FhClamp));
  if (!interned)
    interned = g_hash_table_new (levels_hash, levels_equal);
  hit = g_hash_table_lookup (interned, l);
  if (hit) {
    g_free (l);
    hit->ref++;
    return hit;
  }
  g_hash_table_add (interned, l);
  return l;
}

const FhLevels *
fh_levels_ref (const FhLevels *levels)
{
  ((FhLevels *) levels)->ref++;
  return levels;
}

void
fh_levels_unref (const FhLevels *levels)
{
  FhLevels *l = (FhLevels *) levels;

  if (--l->ref > 0)
    return;
  g_hash_table_remove (interned, l);
  g_free (l);
}

guint
fh_levels_n_interned (void)
{
  return interned ? g_hash_table_size (interned) : 0;
}
