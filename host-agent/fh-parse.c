/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fh-parse.h"

#include <string.h>

#include <freqhint/agent_protocol.h>
#include <linux/virtio_freqhint.h>

G_DEFINE_QUARK (fh - parse - error - quark, fh_parse_error)

/* Sysfs files end in one newline; a value has no other whitespace around it. */
static char *
strip_value (const char *text)
{
  return g_strstrip (g_strdup (text));
}

static gboolean
all_digits (const char *s, gsize n)
{
  if (n == 0)
    return FALSE;
  for (gsize i = 0; i < n; i++)
    if (!g_ascii_isdigit (s[i]))
      return FALSE;
  return TRUE;
}

/*
 * cpu.uclamp.{min,max}, as kernel/sched/core.c prints and parses them.
 *
 * cpu_uclamp_print() writes "max" when the clamp is SCHED_CAPACITY_SCALE --
 * for cpu.uclamp.min too -- and otherwise the stored percentage as
 * "%llu.%02u".  capacity_from_percent() parses with cgroup_parse_float()
 * (two decimal places, further digits rounded to the closest hundredth),
 * rejects more than 100.00 % with -ERANGE and converts with
 * DIV_ROUND_CLOSEST_ULL(percent << SCHED_CAPACITY_SHIFT, 10000).
 * Unlike the kernel's sscanf we refuse trailing garbage and signs: this is
 * for reading files, where anything but the kernel's format means trouble.
 */
gboolean
fh_parse_uclamp (const char *text, guint *value, GError **error)
{
  g_autofree char *s = strip_value (text);
  const char *dot;
  guint64 whole, frac = 0, pct;
  gsize wlen, flen = 0;

  if (strcmp (s, "max") == 0) {
    *value = VIRTIO_FREQHINT_SCALE;
    return TRUE;
  }
  dot = strchr (s, '.');
  wlen = dot ? (gsize) (dot - s) : strlen (s);
  if (!all_digits (s, wlen) || wlen > 6) {
    g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_INVALID, "not a uclamp value: \"%s\"", s);
    return FALSE;
  }
  whole = g_ascii_strtoull (s, NULL, 10);
  if (dot) {
    flen = strlen (dot + 1);
    /* cgroup_parse_float() needs a digit after the dot; 18 digits fit a u64. */
    if (!all_digits (dot + 1, flen) || flen > 18) {
      g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_INVALID, "not a uclamp value: \"%s\"", s);
      return FALSE;
    }
    frac = g_ascii_strtoull (dot + 1, NULL, 10);
  }
  /* cgroup_parse_float(input, UCLAMP_PERCENT_SHIFT = 2, &percent) */
  if (flen < 2) {
    for (gsize i = flen; i < 2; i++)
      frac *= 10;
  } else {
    guint64 div = 1;

    for (gsize i = 2; i < flen; i++)
      div *= 10;
    frac = (frac + div / 2) / div; /* DIV_ROUND_CLOSEST_ULL */
  }
  pct = whole * 100 + frac;
  if (pct > 10000) { /* UCLAMP_PERCENT_SCALE */
    g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_RANGE, "uclamp value over 100%%: \"%s\"", s);
    return FALSE;
  }
  *value = (guint) (((pct << 10) + 5000) / 10000);
  return TRUE;
}

char *
fh_format_uclamp_percent (guint hundredths)
{
  return g_strdup_printf ("%u.%02u", hundredths / 100, hundredths % 100);
}

gboolean
fh_parse_u64 (const char *text, guint64 *value, GError **error)
{
  g_autofree char *s = strip_value (text);
  guint64 v;

  /* 20 digits may already overflow; g_ascii_string_to_unsigned checks. */
  if (!all_digits (s, strlen (s)) ||
      !g_ascii_string_to_unsigned (s, 10, 0, G_MAXUINT64, &v, NULL)) {
    g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_INVALID, "not an unsigned integer: \"%s\"",
                 s);
    return FALSE;
  }
  *value = v;
  return TRUE;
}

gboolean
fh_parse_uint_range (const char *text, guint min, guint max, guint *value, GError **error)
{
  guint64 v;

  if (!fh_parse_u64 (text, &v, error))
    return FALSE;
  if (v < min || v > max) {
    g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_RANGE,
                 "%" G_GUINT64_FORMAT " out of range %u..%u", v, min, max);
    return FALSE;
  }
  *value = (guint) v;
  return TRUE;
}

GArray *
fh_parse_u32_list (const char *text, GError **error)
{
  g_autoptr (GArray) out = g_array_new (FALSE, FALSE, sizeof (guint));
  g_auto (GStrv) words = g_strsplit_set (text, " \t\n", -1);

  for (char **w = words; *w; w++) {
    guint64 v;

    if (**w == '\0')
      continue;
    if (!all_digits (*w, strlen (*w)) ||
        !g_ascii_string_to_unsigned (*w, 10, 0, G_MAXUINT32, &v, NULL)) {
      g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_INVALID, "not an unsigned integer: \"%s\"",
                   *w);
      return NULL;
    }
    guint u = (guint) v;
    g_array_append_val (out, u);
  }
  return g_steal_pointer (&out);
}

static gboolean
parse_cpu (const char *s, guint max_cpus, guint *cpu, GError **error)
{
  guint64 v;

  if (!all_digits (s, strlen (s)) || !g_ascii_string_to_unsigned (s, 10, 0, G_MAXUINT, &v, NULL)) {
    g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_INVALID, "not a CPU number: \"%s\"", s);
    return FALSE;
  }
  if (v >= max_cpus) {
    g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_RANGE, "CPU %s beyond %u", s, max_cpus);
    return FALSE;
  }
  *cpu = (guint) v;
  return TRUE;
}

static gint
cmp_uint (gconstpointer a, gconstpointer b)
{
  guint x = *(const guint *) a, y = *(const guint *) b;

  return x < y ? -1 : x > y;
}

/* The format of bitmap_print_to_pagebuf(list = true): ranges joined by commas. */
GArray *
fh_parse_cpu_list (const char *text, guint max_cpus, GError **error)
{
  g_autofree char *s = strip_value (text);
  g_autoptr (GArray) cpus = g_array_new (FALSE, FALSE, sizeof (guint));
  g_auto (GStrv) parts = NULL;

  if (*s == '\0') /* an empty mask prints as an empty line */
    return g_steal_pointer (&cpus);
  parts = g_strsplit (s, ",", -1);
  for (char **p = parts; *p; p++) {
    char *dash = strchr (*p, '-');
    guint lo, hi;

    if (dash) {
      *dash = '\0';
      if (!parse_cpu (*p, max_cpus, &lo, error) || !parse_cpu (dash + 1, max_cpus, &hi, error))
        return NULL;
      if (lo > hi) {
        g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_INVALID, "CPU range %u-%u is reversed",
                     lo, hi);
        return NULL;
      }
    } else {
      if (!parse_cpu (*p, max_cpus, &lo, error))
        return NULL;
      hi = lo;
    }
    for (guint c = lo; c <= hi; c++)
      g_array_append_val (cpus, c);
  }
  g_array_sort (cpus, cmp_uint);
  for (guint i = 1; i < cpus->len;) {
    if (g_array_index (cpus, guint, i) == g_array_index (cpus, guint, i - 1))
      g_array_remove_index (cpus, i);
    else
      i++;
  }
  return g_steal_pointer (&cpus);
}

char *
fh_parse_status_field (const char *status, const char *key, GError **error)
{
  gsize klen = strlen (key);

  /* line by line without splitting: called for every vCPU thread on every re-scan */
  for (const char *l = status; l && *l;) {
    const char *nl = strchr (l, '\n');

    if (strncmp (l, key, klen) == 0 && l[klen] == ':') {
      const char *v = l + klen + 1;

      return g_strstrip (nl ? g_strndup (v, (gsize) (nl - v)) : g_strdup (v));
    }
    l = nl ? nl + 1 : NULL;
  }
  g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_MISSING, "no \"%s:\" line", key);
  return NULL;
}

void
fh_cgroup_path_free (FhCgroupPath *cg)
{
  if (!cg)
    return;
  g_free (cg->hierarchy);
  g_free (cg->path);
  g_free (cg);
}

static gboolean
controllers_have_cpu (const char *list)
{
  g_auto (GStrv) names = g_strsplit (list, ",", -1);

  for (char **n = names; *n; n++)
    if (strcmp (*n, "cpu") == 0)
      return TRUE;
  return FALSE;
}

/*
 * proc_cgroup_show(): one "hierarchy-ID:controller-list:path" line per
 * hierarchy; the v2 hierarchy is "0::/path".  The path may contain ':', so
 * only the first two colons separate fields.
 */
FhCgroupPath *
fh_parse_proc_cgroup (const char *text, GError **error)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  g_autoptr (FhCgroupPath) v2 = NULL;

  for (char **l = lines; *l; l++) {
    char *c1, *c2;
    g_autofree char *id = NULL;

    if (**l == '\0')
      continue;
    c1 = strchr (*l, ':');
    c2 = c1 ? strchr (c1 + 1, ':') : NULL;
    if (!c2 || c2[1] != '/') {
      g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_INVALID, "bad cgroup line \"%s\"", *l);
      return NULL;
    }
    id = g_strndup (*l, c1 - *l);
    if (!all_digits (id, strlen (id))) {
      g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_INVALID, "bad cgroup line \"%s\"", *l);
      return NULL;
    }
    if (strcmp (id, "0") == 0 && c2 == c1 + 1) {
      if (!v2) {
        v2 = g_new0 (FhCgroupPath, 1);
        v2->version = 2;
        v2->path = g_strdup (c2 + 1);
      }
    } else {
      g_autofree char *ctrl = g_strndup (c1 + 1, c2 - c1 - 1);

      if (controllers_have_cpu (ctrl)) {
        FhCgroupPath *v1 = g_new0 (FhCgroupPath, 1);

        v1->version = 1;
        v1->hierarchy = g_steal_pointer (&ctrl);
        v1->path = g_strdup (c2 + 1);
        return v1;
      }
    }
  }
  if (!v2)
    g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_MISSING,
                 "no cgroup v2 line and no v1 cpu controller");
  return g_steal_pointer (&v2);
}

/*
 * do_task_stat(): "pid (comm) state ppid ...".  comm may hold spaces and
 * parentheses, so fields are counted after the last ')'.  *value is field
 * number `field` (1-based, 3 or more), a decimal no greater than max.
 */
static gboolean
stat_field (const char *text, guint field, guint64 max, guint64 *value, GError **error)
{
  const char *rp = strrchr (text, ')');
  g_auto (GStrv) fields = NULL;
  guint n = 2; /* fields after ')' start at field 3 (state) */

  if (!rp) {
    g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_INVALID, "stat without \"(comm)\"");
    return FALSE;
  }
  fields = g_strsplit_set (rp + 1, " \n", -1);
  for (char **f = fields; *f; f++) {
    if (**f == '\0' || ++n != field)
      continue;
    if (!all_digits (*f, strlen (*f)) ||
        !g_ascii_string_to_unsigned (*f, 10, 0, max, value, NULL)) {
      g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_INVALID, "bad field %u \"%s\"", field, *f);
      return FALSE;
    }
    return TRUE;
  }
  g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_MISSING, "stat has only %u fields", n);
  return FALSE;
}

/* Field 39 is task_cpu(): the CPU the thread last ran on. */
gboolean
fh_parse_stat_processor (const char *text, guint *cpu, GError **error)
{
  guint64 v;

  if (!stat_field (text, 39, G_MAXINT, &v, error))
    return FALSE;
  *cpu = (guint) v;
  return TRUE;
}

/* Fields 14 and 15: utime and stime, in clock ticks (MR-29). */
gboolean
fh_parse_stat_cputime (const char *text, guint64 *ticks, GError **error)
{
  guint64 utime, stime;

  if (!stat_field (text, 14, G_MAXUINT32, &utime, error) ||
      !stat_field (text, 15, G_MAXUINT32, &stime, error))
    return FALSE;
  *ticks = utime + stime;
  return TRUE;
}

gboolean
fh_parse_schedstat_run_ns (const char *text, guint64 *ns, GError **error)
{
  const char *end;
  g_autofree char *first = NULL;

  while (*text == ' ')
    text++;
  end = text;
  while (g_ascii_isdigit (*end))
    end++;
  if (end == text || (*end != ' ' && *end != '\n' && *end != '\0')) {
    g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_INVALID,
                 "schedstat does not start with a number");
    return FALSE;
  }
  first = g_strndup (text, (gsize) (end - text));
  if (!g_ascii_string_to_unsigned (first, 10, 0, G_MAXUINT64, ns, NULL)) {
    g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_INVALID, "schedstat run time out of range");
    return FALSE;
  }
  return TRUE;
}

/* A decimal below FH_MAX_VCPUS, no sign, no leading zero; *end past it. */
static int
vcpu_number (const char *s, const char **end)
{
  guint v = 0;
  const char *p = s;

  if (!g_ascii_isdigit (*p) || (*p == '0' && g_ascii_isdigit (p[1])))
    return -1;
  while (g_ascii_isdigit (*p)) {
    v = v * 10 + (guint) (*p - '0');
    if (v >= FH_MAX_VCPUS)
      return -1;
    p++;
  }
  *end = p;
  return (int) v;
}

int
fh_parse_vcpu_thread_name (const char *comm)
{
  const char *end = NULL;
  int n;

  if (g_str_has_prefix (comm, "CPU ")) {
    n = vcpu_number (comm + 4, &end);
    if (n < 0 || *end != '/' || !g_ascii_isalpha (end[1]))
      return -1;
    for (end++; *end; end++)
      if (!g_ascii_isalpha (*end))
        return -1;
    return n;
  }
  if (g_str_has_prefix (comm, "vcpu")) {
    n = vcpu_number (comm + 4, &end);
    return n >= 0 && *end == '\0' ? n : -1;
  }
  if (g_str_has_prefix (comm, "fc_vcpu ")) {
    n = vcpu_number (comm + 8, &end);
    return n >= 0 && *end == '\0' ? n : -1;
  }
  return -1;
}
