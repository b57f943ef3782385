/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-host.h"

#include <string.h>

#include "fh-parse.h"

static void
policy_free (FhPolicy *p)
{
  g_clear_pointer (&p->cpus, g_array_unref);
  g_clear_pointer (&p->available, g_array_unref);
  g_free (p->governor);
  g_free (p);
}

FhHost *
fh_host_new (void)
{
  FhHost *h = g_new0 (FhHost, 1);

  h->policies = g_ptr_array_new_with_free_func ((GDestroyNotify) policy_free);
  h->sys = (FhClamp){ FH_SCALE, FH_SCALE };
  h->rt_min_default = FH_SCALE;
  return h;
}

void
fh_host_free (FhHost *h)
{
  if (!h)
    return;
  g_ptr_array_unref (h->policies);
  g_free (h->cpu_policy);
  g_free (h->cpu_class);
  g_free (h->kernel_release);
  g_free (h);
}

static gboolean
read_uint (const char *path, guint *value, GError **error)
{
  g_autofree char *text = fh_read_small_file (path, error);

  if (!text)
    return FALSE;
  if (!fh_parse_uint_range (text, 0, G_MAXUINT, value, error)) {
    g_prefix_error (error, "%s: ", path);
    return FALSE;
  }
  return TRUE;
}

void
fh_host_sample_cur_freq (const FhHost *host, const FhPaths *paths, guint *policy_khz)
{
  for (guint i = 0; i < host->policies->len; i++) {
    const FhPolicy *p = g_ptr_array_index (host->policies, i);
    g_autofree char *path =
        fh_path (paths, FH_ROOT_SYSFS, "devices/system/cpu/cpufreq/policy%u/scaling_cur_freq", p->id);

    if (!read_uint (path, &policy_khz[i], NULL))
      policy_khz[i] = 0;
  }
}

guint32
fh_host_cur_khz (const FhHost *host, const guint *policy_khz, gint cpu, guint8 freq_class)
{
  const FhFreqClass *c;
  gint pol;

  if (cpu < 0 || (guint) cpu >= host->n_cpus || freq_class >= host->n_freq_classes)
    return 0;
  pol = host->cpu_policy[cpu];
  if (pol < 0 || policy_khz[pol] == 0)
    return 0;
  c = &host->freq_classes[freq_class];
  return CLAMP (policy_khz[pol], c->min_khz, c->max_khz);
}

static gint
cmp_policy (gconstpointer a, gconstpointer b)
{
  const FhPolicy *x = *(FhPolicy *const *) a, *y = *(FhPolicy *const *) b;

  return x->id < y->id ? -1 : x->id > y->id;
}

static FhPolicy *
load_policy (const FhPaths *paths, guint id, GError **error)
{
  g_autoptr (GError) local = NULL;
  FhPolicy *p = g_new0 (FhPolicy, 1);
  g_autofree char *dir = fh_path (paths, FH_ROOT_SYSFS, "devices/system/cpu/cpufreq/policy%u", id);
  g_autofree char *cpus_path = g_build_filename (dir, "affected_cpus", NULL);
  g_autofree char *min_path = g_build_filename (dir, "cpuinfo_min_freq", NULL);
  g_autofree char *max_path = g_build_filename (dir, "cpuinfo_max_freq", NULL);
  g_autofree char *avail_path = g_build_filename (dir, "scaling_available_frequencies", NULL);
  g_autofree char *gov_path = g_build_filename (dir, "scaling_governor", NULL);
  g_autofree char *text = NULL;

  p->id = id;
  text = fh_read_small_file (cpus_path, error);
  if (!text)
    goto fail;
  /* affected_cpus is space separated; turn it into a list we already parse */
  g_strdelimit (g_strstrip (text), " ", ',');
  p->cpus = fh_parse_cpu_list (text, FH_MAX_CPUS, error);
  if (!p->cpus) {
    g_prefix_error (error, "%s: ", cpus_path);
    goto fail;
  }
  if (!read_uint (min_path, &p->cpuinfo_min_khz, error) ||
      !read_uint (max_path, &p->cpuinfo_max_khz, error))
    goto fail;
  if (p->cpuinfo_min_khz == 0 || p->cpuinfo_min_khz > p->cpuinfo_max_khz) {
    g_set_error (error, FH_PARSE_ERROR, FH_PARSE_ERROR_RANGE,
                 "policy%u: cpuinfo range %u..%u kHz is not usable", id, p->cpuinfo_min_khz,
                 p->cpuinfo_max_khz);
    goto fail;
  }
  g_clear_pointer (&text, g_free);
  /* Optional: intel_pstate and CPPC drivers have no table. */
  text = fh_read_small_file (avail_path, NULL);
  p->available = text ? fh_parse_u32_list (text, &local) : NULL;
  if (!p->available) {
    if (local)
      g_warning ("%s: %s; not snapping to a table", avail_path, local->message);
    p->available = g_array_new (FALSE, FALSE, sizeof (guint));
  }
  g_clear_pointer (&text, g_free);
  text = fh_read_small_file (gov_path, NULL);
  p->governor = text ? g_strstrip (g_strdup (text)) : g_strdup ("");
  return p;
fail:
  policy_free (p);
  return NULL;
}

gboolean
fh_host_load (FhHost *h, const FhPaths *paths, GError **error)
{
  g_autofree char *online_path = fh_path (paths, FH_ROOT_SYSFS, "devices/system/cpu/online");
  g_autofree char *online = NULL;
  g_autofree char *cpufreq = fh_path (paths, FH_ROOT_SYSFS, "devices/system/cpu/cpufreq");
  g_autoptr (GArray) cpus = NULL;
  g_autoptr (GDir) dir = NULL;
  const char *name;

  online = fh_read_small_file (online_path, error);
  if (!online)
    return FALSE;
  cpus = fh_parse_cpu_list (online, FH_MAX_CPUS, error);
  if (!cpus) {
    g_prefix_error (error, "%s: ", online_path);
    return FALSE;
  }
  h->n_cpus = cpus->len ? g_array_index (cpus, guint, cpus->len - 1) + 1 : 0;

  g_ptr_array_set_size (h->policies, 0);
  dir = g_dir_open (cpufreq, 0, NULL);
  while (dir && (name = g_dir_read_name (dir))) {
    guint64 id;
    FhPolicy *p;

    if (!g_str_has_prefix (name, "policy") ||
        !g_ascii_string_to_unsigned (name + 6, 10, 0, FH_MAX_CPUS - 1, &id, NULL))
      continue;
    p = load_policy (paths, (guint) id, error);
    if (!p)
      return FALSE;
    g_ptr_array_add (h->policies, p);
  }
  g_ptr_array_sort (h->policies, cmp_policy);

  g_free (h->cpu_policy);
  h->cpu_policy = g_new (gint, MAX (h->n_cpus, 1));
  for (guint c = 0; c < h->n_cpus; c++)
    h->cpu_policy[c] = -1;
  for (guint i = 0; i < h->policies->len; i++) {
    FhPolicy *p = g_ptr_array_index (h->policies, i);

    for (guint j = 0; j < p->cpus->len; j++) {
      guint c = g_array_index (p->cpus, guint, j);

      if (c < h->n_cpus)
        h->cpu_policy[c] = (gint) i;
    }
  }
  fh_host_refresh_sys (h, paths);

  /* MR-4 asks whether the host kernel predates 6.8 (fh_merge_auto_headroom()). */
  {
    g_autofree char *rel_path = fh_path (paths, FH_ROOT_PROC, "sys/kernel/osrelease");

    g_free (h->kernel_release);
    h->kernel_release = fh_read_small_file (rel_path, NULL);
    if (h->kernel_release)
      g_strstrip (h->kernel_release);
  }
  return TRUE;
}

static void
policy_class (const FhPolicy *p, guint quantum_khz, FhFreqClass *c)
{
  g_autoptr (GArray) t = g_array_new (FALSE, FALSE, sizeof (guint));
  guint gap = G_MAXUINT;

  memset (c, 0, sizeof *c);
  c->min_khz = p->cpuinfo_min_khz;
  c->max_khz = p->cpuinfo_max_khz;
  /* the table ascending, without duplicates, inside the range */
  for (guint i = 0; i < p->available->len; i++) {
    guint f = g_array_index (p->available, guint, i);

    if (f >= c->min_khz && f <= c->max_khz)
      g_array_append_val (t, f);
  }
  g_array_sort (t, (GCompareFunc) fh_cmp_uint);
  for (guint i = 1; i < t->len;) {
    if (g_array_index (t, guint, i) == g_array_index (t, guint, i - 1))
      g_array_remove_index (t, i);
    else
      i++;
  }
  for (guint i = 1; i < t->len; i++)
    gap = MIN (gap, g_array_index (t, guint, i) - g_array_index (t, guint, i - 1));
  if (t->len <= VIRTIO_FREQHINT_MAX_FREQS) {
    c->num_freqs = (uint16_t) t->len;
    for (guint i = 0; i < t->len; i++)
      c->freqs_khz[i] = g_array_index (t, guint, i);
  } else {
    /* thinned: 16 entries spread over the table, both ends kept */
    c->num_freqs = VIRTIO_FREQHINT_MAX_FREQS;
    for (guint i = 0; i < VIRTIO_FREQHINT_MAX_FREQS; i++)
      c->freqs_khz[i] = g_array_index (
          t, guint, (guint) (((guint64) i * (t->len - 1) + (VIRTIO_FREQHINT_MAX_FREQS - 1) / 2) /
                             (VIRTIO_FREQHINT_MAX_FREQS - 1)));
  }
  if (t->len < 2)
    gap = t->len == 1 ? c->max_khz : quantum_khz;
  c->perf_step = (uint16_t) CLAMP ((guint64) gap * FH_SCALE / c->max_khz, 1, FH_SCALE);
}

gint
fh_cmp_uint (gconstpointer a, gconstpointer b)
{
  guint x = *(const guint *) a, y = *(const guint *) b;

  return x < y ? -1 : x > y;
}

void
fh_host_build_freq_classes (FhHost *h, guint quantum_khz)
{
  gint *policy_class_idx = g_new (gint, MAX (h->policies->len, 1));

  h->n_freq_classes = 0;
  memset (h->freq_classes, 0, sizeof h->freq_classes);
  for (guint i = 0; i < h->policies->len; i++) {
    FhFreqClass c;
    guint k;

    policy_class (g_ptr_array_index (h->policies, i), quantum_khz, &c);
    for (k = 0; k < h->n_freq_classes; k++)
      if (memcmp (&h->freq_classes[k], &c, sizeof c) == 0)
        break;
    if (k == h->n_freq_classes) {
      if (k == VIRTIO_FREQHINT_MAX_FREQ_CLASSES) {
        g_warning ("policy%u: more than %d frequency classes; its CPUs get none",
                   ((FhPolicy *) g_ptr_array_index (h->policies, i))->id,
                   VIRTIO_FREQHINT_MAX_FREQ_CLASSES);
        policy_class_idx[i] = VIRTIO_FREQHINT_NO_FREQ_CLASS;
        continue;
      }
      h->freq_classes[h->n_freq_classes++] = c;
    }
    policy_class_idx[i] = (gint) k;
  }
  g_free (h->cpu_class);
  h->cpu_class = g_new (guint8, MAX (h->n_cpus, 1));
  for (guint cpu = 0; cpu < h->n_cpus; cpu++)
    h->cpu_class[cpu] = h->cpu_policy[cpu] < 0 ? VIRTIO_FREQHINT_NO_FREQ_CLASS
                                                : (guint8) policy_class_idx[h->cpu_policy[cpu]];
  g_free (policy_class_idx);
}

guint8
fh_host_freq_class_of (const FhHost *h, const char *allowed_list, gint cpu)
{
  g_autoptr (GArray) cpus = NULL;
  guint8 best = VIRTIO_FREQHINT_NO_FREQ_CLASS;

  if (!h->cpu_class)
    return best;
  if (allowed_list)
    cpus = fh_parse_cpu_list (allowed_list, FH_MAX_CPUS, NULL);
  if (!cpus) {
    if (cpu >= 0 && (guint) cpu < h->n_cpus)
      return h->cpu_class[cpu];
    return best;
  }
  for (guint i = 0; i < cpus->len; i++) {
    guint c = g_array_index (cpus, guint, i);
    guint8 k;

    if (c >= h->n_cpus || (k = h->cpu_class[c]) == VIRTIO_FREQHINT_NO_FREQ_CLASS)
      continue;
    if (best == VIRTIO_FREQHINT_NO_FREQ_CLASS ||
        h->freq_classes[k].max_khz - h->freq_classes[k].min_khz >
            h->freq_classes[best].max_khz - h->freq_classes[best].min_khz ||
        (h->freq_classes[k].max_khz - h->freq_classes[k].min_khz ==
             h->freq_classes[best].max_khz - h->freq_classes[best].min_khz &&
         k < best))
      best = k;
  }
  return best;
}

gboolean
fh_host_refresh_sys (FhHost *h, const FhPaths *paths)
{
  static const char *const names[] = { "sched_util_clamp_min", "sched_util_clamp_max" };
  FhClamp sys = { FH_SCALE, FH_SCALE };
  gboolean have = TRUE;
  gboolean changed;
  guint rt;

  for (int i = 0; i < 2; i++) {
    g_autofree char *path = fh_path (paths, FH_ROOT_PROC, "sys/kernel/%s", names[i]);
    g_autofree char *text = fh_read_small_file (path, NULL);
    g_autoptr (GError) error = NULL;
    guint v = FH_SCALE;

    /* A kernel without CONFIG_UCLAMP_TASK has no such files: no limit. */
    if (!text) {
      have = FALSE;
      continue;
    }
    if (!fh_parse_uint_range (text, 0, FH_SCALE, &v, &error)) {
      g_warning ("%s: %s; assuming %u", path, error->message, FH_SCALE);
      v = FH_SCALE;
    }
    if (i == 0)
      sys.min = v;
    else
      sys.max = v;
  }
  {
    /* The kernel's default: RT tasks run at full capacity unless told otherwise. */
    g_autofree char *path = fh_path (paths, FH_ROOT_PROC, "sys/kernel/sched_util_clamp_min_rt_default");
    g_autofree char *text = fh_read_small_file (path, NULL);
    g_autoptr (GError) error = NULL;

    rt = FH_SCALE;
    if (text && !fh_parse_uint_range (text, 0, FH_SCALE, &rt, &error)) {
      g_warning ("%s: %s; assuming %u", path, error->message, FH_SCALE);
      rt = FH_SCALE;
    }
  }
  changed = sys.min != h->sys.min || sys.max != h->sys.max || rt != h->rt_min_default;
  h->sys = sys;
  h->rt_min_default = rt;
  h->have_sys = have;
  return changed;
}

const char *
fh_host_governor (const FhHost *h)
{
  if (h->policies->len == 0)
    return "";
  return ((FhPolicy *) g_ptr_array_index (h->policies, 0))->governor;
}

const char *
fh_host_cpu_governor (const FhHost *h, gint cpu)
{
  if (cpu < 0 || (guint) cpu >= h->n_cpus || h->cpu_policy[cpu] < 0)
    return NULL;
  return ((FhPolicy *) g_ptr_array_index (h->policies, h->cpu_policy[cpu]))->governor;
}

gboolean
fh_stat_policy (const char *stat, guint *policy)
{
  const char *p = strrchr (stat, ')');
  guint field = 2;

  if (!p)
    return FALSE;
  p++;
  /* fields are separated by single spaces; field 3 follows ") " */
  while (*p) {
    while (*p == ' ')
      p++;
    if (!*p)
      break;
    field++;
    if (field == 41) {
      guint64 v;
      char *end = NULL;

      v = g_ascii_strtoull (p, &end, 10);
      if (end == p || (*end && *end != ' ' && *end != '\n') || v > 7)
        return FALSE;
      *policy = (guint) v;
      return TRUE;
    }
    while (*p && *p != ' ')
      p++;
  }
  return FALSE;
}

void
fh_thread_info_clear (FhThreadInfo *info)
{
  g_clear_pointer (&info->cgroup, g_ref_string_release);
  g_clear_pointer (&info->cgroup_dir, g_free);
  g_clear_pointer (&info->levels, fh_levels_unref);
  g_clear_pointer (&info->allowed, g_ref_string_release);
  memset (info, 0, sizeof *info);
  info->cpu = -1;
}

/*
 * Walk from the hierarchy's root down to the thread's cgroup, reading each
 * level's own request.  The root has no cpu.uclamp.* files (its request is
 * the system defaults).  A level without the files is where the cpu
 * controller stops being enabled: the thread's task group is the deepest
 * level that has them, so the walk stops there.
 */
/* One level's files, as read_chain() found them; cached per poll. */
typedef struct {
  gboolean ok; /* FALSE: the walk stops here */
  FhClamp level;
} CgLevel;

GHashTable *
fh_cgroup_cache_new (void)
{
  return g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
}

static const FhLevels *
read_chain (const FhPaths *paths, const FhCgroupPath *cg, GHashTable *cache)
{
  g_autoptr (GArray) levels = g_array_new (FALSE, FALSE, sizeof (FhClamp));
  g_auto (GStrv) parts = g_strsplit (cg->path, "/", -1);
  g_autoptr (GString) rel = g_string_new (cg->hierarchy ? cg->hierarchy : "");

  for (char **p = parts; *p; p++) {
    FhClamp level;
    guint min, max;
    g_autofree char *min_path = NULL, *max_path = NULL, *min_text = NULL, *max_text = NULL;
    g_autoptr (GError) error = NULL;

    if (**p == '\0')
      continue;
    /* Never let a path component climb out of the cgroup root. */
    if (strcmp (*p, "..") == 0 || strcmp (*p, ".") == 0)
      break;
    g_string_append_printf (rel, "/%s", *p);
    if (cache) {
      CgLevel *hit = g_hash_table_lookup (cache, rel->str);

      if (hit && !hit->ok)
        break;
      if (hit) {
        g_array_append_val (levels, hit->level);
        continue;
      }
    }
    min_path = fh_path (paths, FH_ROOT_CGROUP, "%s/cpu.uclamp.min", rel->str);
    max_path = fh_path (paths, FH_ROOT_CGROUP, "%s/cpu.uclamp.max", rel->str);
    min_text = fh_read_small_file (min_path, NULL);
    max_text = fh_read_small_file (max_path, NULL);
    if (!min_text || !max_text ||
        !fh_parse_uclamp (min_text, &min, &error) ||
        !fh_parse_uclamp (max_text, &max, &error)) {
      if (error)
        g_warning ("cgroup %s: %s; ignoring this level and below", rel->str, error->message);
      if (cache)
        g_hash_table_insert (cache, g_strdup (rel->str), g_new0 (CgLevel, 1));
      break;
    }
    level = (FhClamp){ (guint16) min, (guint16) max }; /* <= FH_SCALE */
    if (cache) {
      CgLevel *e = g_new (CgLevel, 1);

      e->ok = TRUE;
      e->level = level;
      g_hash_table_insert (cache, g_strdup (rel->str), e);
    }
    g_array_append_val (levels, level);
  }
  return fh_levels_intern ((const FhClamp *) levels->data, levels->len);
}

/* The thread's group directory as read_chain() walks it (no "..", no "."). */
static char *
cgroup_dir (const FhCgroupPath *cg)
{
  g_auto (GStrv) parts = g_strsplit (cg->path, "/", -1);
  GString *rel = g_string_new (NULL);

  if (cg->hierarchy && *cg->hierarchy)
    g_string_append_printf (rel, "/%s", cg->hierarchy);
  for (char **p = parts; *p; p++) {
    if (**p == '\0')
      continue;
    if (strcmp (*p, "..") == 0 || strcmp (*p, ".") == 0)
      break;
    g_string_append_printf (rel, "/%s", *p);
  }
  if (rel->len == 0)
    g_string_append_c (rel, '/');
  return g_string_free (rel, FALSE);
}

void
fh_host_probe_thread (const FhPaths *paths, guint tid, guint n_cpus, FhThreadInfo *info)
{
  fh_host_probe_thread_cached (paths, NULL, tid, n_cpus, info);
}

void
fh_host_probe_thread_cached (const FhPaths *paths, GHashTable *cache, guint tid, guint n_cpus,
                             FhThreadInfo *info)
{
  g_autofree char *status_path = fh_path (paths, FH_ROOT_PROC, "%u/status", tid);
  g_autofree char *cgroup_path = fh_path (paths, FH_ROOT_PROC, "%u/cgroup", tid);
  g_autofree char *stat_path = fh_path (paths, FH_ROOT_PROC, "%u/stat", tid);
  g_autofree char *status = NULL, *cgroup = NULL, *stat = NULL, *allowed = NULL, *tgid = NULL;
  g_autoptr (FhCgroupPath) cg = NULL;
  g_autoptr (GError) error = NULL;
  guint policy;

  fh_thread_info_clear (info);
  if (tid == 0)
    return;
  status = fh_read_small_file (status_path, NULL);
  if (!status)
    return;
  info->exists = TRUE;
  tgid = fh_parse_status_field (status, "Tgid", NULL);
  if (tgid) {
    guint64 v;

    if (g_ascii_string_to_unsigned (tgid, 10, 1, G_MAXINT32, &v, NULL))
      info->tgid = (pid_t) v;
  }

  allowed = fh_parse_status_field (status, "Cpus_allowed_list", NULL);
  if (allowed)
    info->allowed = g_ref_string_new_intern (allowed);
  if (allowed) {
    g_autoptr (GArray) cpus = fh_parse_cpu_list (allowed, MAX (n_cpus, 1), &error);

    if (cpus && cpus->len == 1) {
      info->pinned = TRUE;
      info->cpu = (gint) g_array_index (cpus, guint, 0);
    } else if (!cpus) {
      g_debug ("tid %u: Cpus_allowed_list: %s", tid, error->message);
      g_clear_error (&error);
    }
  }
  stat = fh_read_small_file (stat_path, NULL);
  if (!info->pinned) {
    guint cpu;

    if (stat && fh_parse_stat_processor (stat, &cpu, &error) && cpu < n_cpus)
      info->cpu = (gint) cpu;
    g_clear_error (&error);
  }
  if (stat && fh_stat_policy (stat, &policy)) {
    info->policy = (guint8) MIN (policy, G_MAXUINT8);
    info->rt = policy == 1 || policy == 2;
  }

  cgroup = fh_read_small_file (cgroup_path, NULL);
  cg = cgroup ? fh_parse_proc_cgroup (cgroup, &error) : NULL;
  if (cg) {
    g_autofree char *v1 = cg->version == 2 ? NULL : g_strdup_printf ("%s:%s", cg->hierarchy, cg->path);

    info->cgroup = g_ref_string_new_intern (v1 ? v1 : cg->path);
    info->levels = read_chain (paths, cg, cache);
    info->cgroup_dir = cgroup_dir (cg);
    /* v2 paths as the kernel prints them are the directory already: one string, not two */
    if (strcmp (info->cgroup_dir, info->cgroup) == 0)
      g_clear_pointer (&info->cgroup_dir, g_free);
  } else {
    if (error)
      g_debug ("tid %u: cgroup: %s", tid, error->message);
    info->levels = fh_levels_intern (NULL, 0);
  }
}
