/* SPDX-License-Identifier: GPL-2.0-or-later */
#define G_LOG_DOMAIN "freqhintd"

#include "fh-telemetry.h"

#include <gio/gio.h>

#include <linux/virtio_freqhint.h>

static void
add_clamp (JsonBuilder *b, const char *name, FhClamp c)
{
  json_builder_set_member_name (b, name);
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "min");
  json_builder_add_int_value (b, c.min);
  json_builder_set_member_name (b, "max");
  json_builder_add_int_value (b, c.max);
  json_builder_end_object (b);
}

static void
add_int (JsonBuilder *b, const char *name, gint64 v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_int_value (b, v);
}

static void
add_str (JsonBuilder *b, const char *name, const char *v)
{
  json_builder_set_member_name (b, name);
  if (v)
    json_builder_add_string_value (b, v);
  else
    json_builder_add_null_value (b);
}

/* A string the peer chose (VM name): escaped, never raw bytes (PA-6). */
static void
add_peer_str (JsonBuilder *b, const char *name, const char *v)
{
  g_autofree char *safe = fh_text_sanitize (v, -1);

  add_str (b, name, safe);
}

static void
add_bool (JsonBuilder *b, const char *name, gboolean v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_boolean_value (b, v);
}

/* The first source behind a connection (libvirt), or NULL. */
static FhVmSource *
connection_source (FhDaemon *d)
{
  for (guint i = 0; i < d->vm_sources->len; i++) {
    FhVmSource *s = g_ptr_array_index (d->vm_sources, i);

    if (s->connection)
      return s;
  }
  return NULL;
}

/* "libvirt": {"uri", "connected"}, or null when freqhintd does not follow libvirt. */
static void
add_libvirt (JsonBuilder *b, FhDaemon *d)
{
  FhVmSource *s = connection_source (d);
  const char *uri = NULL;
  gboolean up;

  json_builder_set_member_name (b, "libvirt");
  if (!s) {
    json_builder_add_null_value (b);
    return;
  }
  up = s->connection (s, &uri);
  json_builder_begin_object (b);
  add_str (b, "uri", uri);
  add_bool (b, "connected", up);
  json_builder_end_object (b);
}

JsonNode *
fh_telemetry_status (FhDaemon *d)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  guint n_vcpus = 0;
  GHashTableIter iter;
  gpointer value;

  g_hash_table_iter_init (&iter, d->vms);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    n_vcpus += ((FhVm *) value)->num_vcpus;

  json_builder_begin_object (b);
  add_str (b, "version", PACKAGE_VERSION);
  add_str (b, "backend", d->backend->ops->name);
  add_int (b, "uptime_seconds", (g_get_monotonic_time () - d->started_us) / G_USEC_PER_SEC);
  add_int (b, "connected_vms", g_hash_table_size (d->vms) - d->n_host_vms);
  /* MR-28: running VMs the host knows of that have no device connection */
  add_int (b, "host_vms", d->n_host_vms);
  add_int (b, "vcpus", n_vcpus);
  add_int (b, "cpus", d->host->n_cpus);
  add_int (b, "cpufreq_policies", d->host->policies->len);
  add_str (b, "governor", fh_host_governor (d->host));
  add_clamp (b, "system_defaults", d->host->sys);
  add_bool (b, "perf_as_floor", d->params.perf_as_floor);
  json_builder_set_member_name (b, "perf_headroom");
  json_builder_add_double_value (b, d->params.perf_headroom);
  add_str (b, "perf_headroom_reason", d->headroom_reason);
  add_str (b, "kernel_release", d->host->kernel_release ? d->host->kernel_release : "");
  add_str (b, "socket", d->config->socket_path);
  add_str (b, "control_socket", d->config->control_socket_path);
  add_str (b, "metrics_address", d->config->metrics_address);
  add_int (b, "metrics_port", d->metrics_port);
  add_libvirt (b, d);
  add_int (b, "vm_connections_total", d->vm_connections_total);
  add_int (b, "hints_frames_total", d->hints_frames_total);
  add_int (b, "updates_total", d->updates_total);
  add_int (b, "last_pass_us", d->last_pass_us);
  add_int (b, "max_pass_us", d->max_pass_us);
  add_int (b, "backend_writes_total", d->backend->writes);
  add_int (b, "write_failures_total", d->backend->write_failures);
  {
    guint64 ext = 0;

    for (guint i = 0; i < d->host->policies->len; i++)
      ext += ((FhPolicy *) g_ptr_array_index (d->host->policies, i))->external_writes;
    add_int (b, "external_writes_total", ext);
  }
  add_int (b, "rejected_total", fh_daemon_rejected_total (d));
  add_int (b, "identity_rejected_total", d->identity_rejected);
  add_int (b, "relay_refused_total", d->relay_refused);
  add_int (b, "relay_unmapped_total", d->relay_unmapped);
  add_int (b, "accept_failures_total",
           d->device ? fh_device_server_accept_failures (d->device) : 0);
  add_int (b, "max_vcpus", d->config->max_vcpus);
  json_builder_set_member_name (b, "rejected");
  json_builder_begin_object (b);
  for (int r = 0; r <= FH_CLOSE_REASON_MAX; r++)
    if (r != FH_CLOSE_NORMAL)
      add_int (b, fh_close_reason_name (r), d->rejected[r]);
  json_builder_end_object (b);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

JsonNode *
fh_telemetry_vms (FhDaemon *d)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autoptr (GPtrArray) vms = fh_daemon_sorted_vms (d);

  json_builder_begin_array (b);
  for (guint i = 0; i < vms->len; i++) {
    FhVm *vm = g_ptr_array_index (vms, i);
    g_autoptr (GDateTime) t =
        g_date_time_new_from_unix_utc (vm->connected_realtime_us / G_USEC_PER_SEC);
    g_autofree char *since = g_date_time_format_iso8601 (t);
    guint active = 0;

    for (guint j = 0; j < vm->num_vcpus; j++)
      active += vm->vcpus[j].d.active && vm->vcpus[j].tid_ok;
    json_builder_begin_object (b);
    add_peer_str (b, "name", vm->name);
    add_str (b, "uuid", vm->uuid);
    add_int (b, "pid", vm->pid);
    add_int (b, "uid", vm->uid);
    add_int (b, "vcpus", vm->num_vcpus);
    add_int (b, "active_vcpus", active);
    add_int (b, "features", vm->features);
    add_str (b, "connected_since", since);
    /* MR-28: guest (device only), host (no connection), both */
    add_str (b, "state_source", fh_vm_state_source (vm));
    add_str (b, "host_record", vm->host_source);
    /* device, vsock or hybrid (the vsock front end), none without a connection */
    add_str (b, "transport", fh_vm_transport (vm));
    if (vm->relay_transport == FH_RELAY_VSOCK)
      add_int (b, "vsock_cid", vm->relay_cid);
    add_bool (b, "connected", vm->conn != NULL);
    add_clamp (b, "operator", vm->settings.op);
    add_str (b, "operator_source", vm->settings_source);
    add_bool (b, "guest_hints", !vm->settings.ignore_hints);
    add_int (b, "hints_frames", vm->hints_frames);
    add_int (b, "hints_records", vm->hints_records);
    add_int (b, "grants_frames", vm->grants_frames);
    add_int (b, "cur_freq_frames", vm->cur_freq_frames);
    json_builder_end_object (b);
  }
  json_builder_end_array (b);
  return json_builder_get_root (b);
}

static void
add_vcpu (JsonBuilder *b, FhVm *vm, FhVcpu *v)
{
  json_builder_begin_object (b);
  add_peer_str (b, "vm", vm->name);
  add_str (b, "uuid", vm->uuid);
  add_int (b, "vcpu", v->index);
  add_int (b, "tid", v->tid);
  add_str (b, "state", fh_vcpu_state (v));
  add_bool (b, "active", v->d.active && v->tid_ok);
  /* MR-29: what made it active (the guest's record or the host's view of its thread) */
  add_str (b, "activity_source", fh_vcpu_activity_source (vm, v));
  add_bool (b, "host_busy", v->busy);
  json_builder_set_member_name (b, "cpu");
  if (v->cpu >= 0)
    json_builder_add_int_value (b, v->cpu);
  else
    json_builder_add_null_value (b);
  add_str (b, "placement",
           v->placed_by_config ? "config"
           : v->info.pinned    ? "pinned"
           : v->cpu >= 0       ? "last-cpu"
                               : "unknown");
  add_str (b, "cgroup", v->info.cgroup);
  add_int (b, "sched_policy", v->info.policy);
  add_bool (b, "rt_default_min", v->d.min_default); /* MR-26 */
  json_builder_set_member_name (b, "cgroup_levels");
  json_builder_begin_array (b);
  for (guint i = 0; v->info.levels && i < v->info.levels->n; i++) {
    FhClamp l = v->info.levels->v[i];

    json_builder_begin_object (b);
    add_int (b, "min", l.min);
    add_int (b, "max", l.max);
    json_builder_end_object (b);
  }
  json_builder_end_array (b);
  json_builder_set_member_name (b, "hint");
  json_builder_begin_object (b);
  add_int (b, "flags", v->hint.flags);
  json_builder_set_member_name (b, "min");
  if (v->hint.flags & VIRTIO_FREQHINT_R_MIN_VALID)
    json_builder_add_int_value (b, v->hint.clamp_min);
  else
    json_builder_add_null_value (b);
  json_builder_set_member_name (b, "max");
  if (v->hint.flags & VIRTIO_FREQHINT_R_MAX_VALID)
    json_builder_add_int_value (b, v->hint.clamp_max);
  else
    json_builder_add_null_value (b);
  json_builder_set_member_name (b, "perf");
  if (v->hint.flags & VIRTIO_FREQHINT_R_PERF_VALID)
    json_builder_add_int_value (b, v->hint.perf);
  else
    json_builder_add_null_value (b);
  add_bool (b, "idle", (v->hint.flags & VIRTIO_FREQHINT_R_IDLE) != 0);
  add_int (b, "seq", v->seq);
  json_builder_end_object (b);
  add_clamp (b, "request", v->d.req);
  /* MR-30: the request or the activity is a held one, not the record's */
  add_bool (b, "held", fh_vcpu_held (vm, v));
  add_clamp (b, "host_range", v->d.chain);
  add_clamp (b, "granted", v->d.grant);
  json_builder_set_member_name (b, "perf_headroom");
  json_builder_add_double_value (b, v->perf_headroom);
  add_clamp (b, "effective", v->d.eff);
  json_builder_end_object (b);
}

struct _FhTelemetryStream {
  FhDaemon *d;
  gboolean cpus;
  GPtrArray *keys;  /* char*: the VMs' keys, in fh_daemon_sorted_vms() order */
  guint vm, vcpu;   /* next vCPU to look at */
  guint cpu;        /* cpus: the CPU being rendered */
  gboolean in_cpu;  /* cpus: its members before "holders" are out */
  guint n_items;    /* vcpus: objects out; cpus: holders of this CPU out */
  gboolean started;
};

static FhTelemetryStream *
stream_new (FhDaemon *d, FhVm *only, gboolean cpus)
{
  FhTelemetryStream *s = g_new0 (FhTelemetryStream, 1);
  g_autoptr (GPtrArray) vms = fh_daemon_sorted_vms (d);

  s->d = d;
  s->cpus = cpus;
  s->keys = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < vms->len; i++) {
    FhVm *vm = g_ptr_array_index (vms, i);

    if (!only || vm == only)
      g_ptr_array_add (s->keys, g_strdup (vm->key));
  }
  return s;
}

void
fh_telemetry_stream_free (FhTelemetryStream *s)
{
  if (!s)
    return;
  g_ptr_array_unref (s->keys);
  g_free (s);
}

FhTelemetryStream *
fh_telemetry_vcpus_stream (FhDaemon *d, const char *name, GError **error)
{
  FhVm *only = NULL;

  if (name) {
    only = fh_daemon_find_vm (d, name);
    if (!only) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no connected VM \"%s\"", name);
      return NULL;
    }
  }
  return stream_new (d, only, FALSE);
}

FhTelemetryStream *
fh_telemetry_cpus_stream (FhDaemon *d)
{
  return stream_new (d, NULL, TRUE);
}

/*
 * The builder's value as JSON text appended to out; drop_first/drop_last
 * leave out its opening or closing brace (an object continued by hand).
 */
static void
append_built (GString *out, JsonBuilder *b, gboolean drop_first, gboolean drop_last)
{
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  gsize start = out->len;

  json_generator_set_root (gen, root);
  json_generator_to_gstring (gen, out);
  if (drop_first)
    g_string_erase (out, (gssize) start, 1);
  if (drop_last)
    g_string_truncate (out, out->len - 1);
  json_builder_reset (b);
}

/* The VM at the cursor that still has a vCPU to look at, or NULL at the end. */
static FhVm *
stream_vm (FhTelemetryStream *s)
{
  while (s->vm < s->keys->len) {
    FhVm *vm = g_hash_table_lookup (s->d->vms, g_ptr_array_index (s->keys, s->vm));

    if (vm && s->vcpu < vm->num_vcpus)
      return vm;
    s->vm++;
    s->vcpu = 0;
  }
  return NULL;
}

static gboolean
vcpus_next (FhTelemetryStream *s, GString *out)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  FhVm *vm;

  for (guint n = 0; n < FH_TELEMETRY_CHUNK && (vm = stream_vm (s)); n++) {
    if (s->n_items++)
      g_string_append_c (out, ',');
    add_vcpu (b, vm, &vm->vcpus[s->vcpu++]);
    append_built (out, b, FALSE, FALSE);
  }
  if (stream_vm (s))
    return TRUE;
  g_string_append_c (out, ']');
  return FALSE;
}

/* MR-27: "member": {"name", "uuid"} of the VM holding the cap over cpus, or null. */
static void
add_cap_holder (JsonBuilder *b, FhDaemon *d, const char *member, const guint *cpus, guint n)
{
  const FhVm *vm = fh_daemon_cap_holder (d, cpus, n);

  json_builder_set_member_name (b, member);
  if (!vm) {
    json_builder_add_null_value (b);
    return;
  }
  json_builder_begin_object (b);
  add_peer_str (b, "name", vm->name);
  add_str (b, "uuid", vm->uuid);
  add_str (b, "state_source", fh_vm_state_source (vm));
  json_builder_end_object (b);
}

/* A CPU object's members before "holders", its opening brace included. */
static void
cpu_head (FhDaemon *d, guint c, JsonBuilder *b, GString *out)
{
  FhCpuDecision *cd = &d->cpus[c];

  json_builder_begin_object (b);
  add_int (b, "cpu", c);
  add_bool (b, "active", cd->active);
  json_builder_set_member_name (b, "floor");
  if (cd->active)
    json_builder_add_int_value (b, cd->floor);
  else
    json_builder_add_null_value (b);
  json_builder_set_member_name (b, "ceiling");
  if (cd->active)
    json_builder_add_int_value (b, cd->ceiling);
  else
    json_builder_add_null_value (b);
  /* MR-27: the highest operator ceiling of the vCPUs placed here, active or not */
  json_builder_set_member_name (b, "cap");
  if (cd->capped)
    json_builder_add_int_value (b, cd->cap);
  else
    json_builder_add_null_value (b);
  add_cap_holder (b, d, "cap_vm", &c, 1);
  json_builder_end_object (b);
  append_built (out, b, FALSE, TRUE);
  g_string_append (out, ",\"holders\":[");
}

/* The members after "holders", and the closing brace. */
static void
cpu_tail (FhDaemon *d, guint c, JsonBuilder *b, GString *out)
{
  gint pi = d->host->cpu_policy[c];

  g_string_append (out, "],");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "policy");
  if (pi >= 0) {
    FhPolicy *p = g_ptr_array_index (d->host->policies, pi);

    json_builder_add_int_value (b, p->id);
    add_bool (b, "policy_active", p->decision.active);
    json_builder_set_member_name (b, "min_freq_khz");
    if (p->have_applied)
      json_builder_add_int_value (b, p->applied_min_khz);
    else
      json_builder_add_null_value (b);
    json_builder_set_member_name (b, "max_freq_khz");
    if (p->have_applied)
      json_builder_add_int_value (b, p->applied_max_khz);
    else
      json_builder_add_null_value (b);
    add_int (b, "write_failures", p->write_failures);
    add_int (b, "external_writes", p->external_writes);
    /* MR-27: the policy's cap and the VM that holds it */
    json_builder_set_member_name (b, "policy_cap");
    if (p->decision.capped && p->decision.cap < FH_SCALE)
      json_builder_add_int_value (b, p->decision.cap);
    else
      json_builder_add_null_value (b);
    add_cap_holder (b, d, "policy_cap_vm", (const guint *) p->cpus->data, p->cpus->len);
  } else {
    json_builder_add_null_value (b);
  }
  json_builder_end_object (b);
  append_built (out, b, TRUE, FALSE);
}

/* Who holds a CPU: every active vCPU placed on it, FH_TELEMETRY_CHUNK at a time. */
static gboolean
cpus_next (FhTelemetryStream *s, GString *out)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  FhDaemon *d = s->d;
  guint n = 0;

  while (s->cpu < d->host->n_cpus && n < FH_TELEMETRY_CHUNK) {
    FhVm *vm;
    FhVcpu *v;

    if (!s->in_cpu) {
      if (s->cpu > 0)
        g_string_append_c (out, ',');
      cpu_head (d, s->cpu, b, out);
      s->in_cpu = TRUE;
      s->vm = s->vcpu = s->n_items = 0;
      n++;
      continue;
    }
    vm = stream_vm (s);
    if (!vm) {
      cpu_tail (d, s->cpu, b, out);
      s->in_cpu = FALSE;
      s->cpu++;
      n++;
      continue;
    }
    v = &vm->vcpus[s->vcpu];
    if (v->cpu == (gint) s->cpu && v->d.active && v->tid_ok) {
      if (s->n_items++)
        g_string_append_c (out, ',');
      json_builder_begin_object (b);
      add_peer_str (b, "vm", vm->name);
      add_str (b, "uuid", vm->uuid);
      add_int (b, "vcpu", s->vcpu);
      add_clamp (b, "effective", v->d.eff);
      json_builder_end_object (b);
      append_built (out, b, FALSE, FALSE);
      n++;
    }
    s->vcpu++;
  }
  if (s->cpu < d->host->n_cpus)
    return TRUE;
  g_string_append_c (out, ']');
  return FALSE;
}

gboolean
fh_telemetry_stream_next (FhTelemetryStream *s, GString *out)
{
  if (!s->started) {
    s->started = TRUE;
    g_string_append_c (out, '[');
  }
  return s->cpus ? cpus_next (s, out) : vcpus_next (s, out);
}

/*
 * Label values: backslash, double quote and newline are escaped (the text
 * format's rules).  Anything but printable ASCII goes through
 * fh_text_sanitize() first, so a label never carries a control byte or
 * invalid UTF-8 (PA-6).
 */
static void
append_label (GString *s, const char *name, const char *value)
{
  g_autofree char *safe = NULL;

  for (const char *p = value; *p; p++)
    if ((guchar) *p < 0x20 || (guchar) *p >= 0x7f || *p == '\\') {
      value = safe = fh_text_sanitize (value, -1);
      break;
    }
  g_string_append_printf (s, "%s=\"", name);
  for (const char *p = value; *p; p++) {
    if (*p == '\\' || *p == '"')
      g_string_append_c (s, '\\');
    if (*p == '\n')
      g_string_append (s, "\\n");
    else
      g_string_append_c (s, *p);
  }
  g_string_append_c (s, '"');
}

static void
family (GString *s, const char *name, const char *type, const char *help)
{
  g_string_append_printf (s, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
vm_labels (GString *s, FhVm *vm)
{
  g_string_append_c (s, '{');
  append_label (s, "domain", vm->name);
  g_string_append_c (s, ',');
  append_label (s, "uuid", vm->uuid);
}

static void
vcpu_labels (GString *s, FhVm *vm, guint vcpu)
{
  g_autofree char *idx = g_strdup_printf ("%u", vcpu);

  g_string_append_c (s, '{');
  append_label (s, "domain", vm->name);
  g_string_append_c (s, ',');
  append_label (s, "uuid", vm->uuid);
  g_string_append_c (s, ',');
  append_label (s, "vcpu", idx);
}

/*
 * Names follow node_exporter: base units (capacity as a 0..1 ratio,
 * frequencies in hertz from sysfs kHz), _total for counters.
 *
 * The page is rendered when it is scraped, piece by piece (as the control
 * socket's vcpus answer is): the families that do not grow with the VMs at
 * once, then each per-VM family one VM at a time.  Like the control
 * streams, it names VMs by key: one that leaves while the page drains is
 * left out of the families not yet rendered.
 */
enum {
  PAGE_HEAD,
  PAGE_CLAMPS, /* 3 families x min/max */
  PAGE_OPERATOR_FLOOR = PAGE_CLAMPS + 6,
  PAGE_OPERATOR_CEILING,
  PAGE_VM_INFO,
  PAGE_VCPU_INFO,
  PAGE_VCPU_ACTIVE,
  PAGE_VM_STATE,
  PAGE_VCPU_HOST_BUSY,
  PAGE_CPUS,
  PAGE_END
};

struct _FhMetricsPage {
  FhDaemon *d;
  GPtrArray *keys; /* char*: the VMs' keys, in fh_daemon_sorted_vms() order */
  guint section;
  guint vm;            /* next VM of a per-VM section */
  gboolean family_out; /* its # HELP/# TYPE lines are out */
};

static const struct {
  const char *suffix;
  const char *help;
} clamp_families[] = {
  { "guest_request", "Clamp the guest requested for a vCPU, as a fraction of full capacity." },
  { "granted",
    "Range the host grants a vCPU (operator limits within its cgroup chain and the system "
    "limits), as a fraction of full capacity." },
  { "effective_clamp",
    "Clamp after host cgroup, operator and system limits, as a fraction of full capacity." },
};

FhMetricsPage *
fh_telemetry_metrics_page (FhDaemon *d)
{
  FhMetricsPage *p = g_new0 (FhMetricsPage, 1);
  g_autoptr (GPtrArray) vms = fh_daemon_sorted_vms (d);

  p->d = d;
  p->keys = g_ptr_array_new_full (vms->len, g_free);
  for (guint i = 0; i < vms->len; i++)
    g_ptr_array_add (p->keys, g_strdup (((FhVm *) g_ptr_array_index (vms, i))->key));
  return p;
}

void
fh_telemetry_metrics_page_free (FhMetricsPage *p)
{
  if (!p)
    return;
  g_ptr_array_unref (p->keys);
  g_free (p);
}

/* The families whose size does not depend on the VMs. */
static void
page_head (FhDaemon *d, GString *s)
{
  family (s, "freqhint_build_info", "gauge",
          "Always 1; labels: freqhintd's version and the actuation backend in use.");
  g_string_append_printf (s, "freqhint_build_info{version=\"%s\",backend=\"%s\"} 1\n",
                          PACKAGE_VERSION, d->backend->ops->name);
  {
    FhVmSource *src = connection_source (d);

    if (src) {
      const char *uri = NULL;
      gboolean up = src->connection (src, &uri);

      family (s, "freqhint_libvirt_connected", "gauge",
              "1 while freqhintd holds a connection to libvirt (operator metadata, pinning), "
              "0 while it retries.");
      g_string_append (s, "freqhint_libvirt_connected{");
      append_label (s, "uri", uri ? uri : "");
      g_string_append_printf (s, "} %d\n", up);
    }
  }
  family (s, "freqhint_connected_vms", "gauge", "VMs whose device is connected.");
  g_string_append_printf (s, "freqhint_connected_vms %u\n",
                          g_hash_table_size (d->vms) - d->n_host_vms);
  family (s, "freqhint_host_vms", "gauge",
          "Running VMs freqhintd knows from the host alone (libvirt's records, config pidfile= "
          "or unit=), without a device connection; their operator ceilings hold (MR-28).");
  g_string_append_printf (s, "freqhint_host_vms %u\n", d->n_host_vms);
  family (s, "freqhint_vm_connections_total", "counter",
          "Device connections accepted after HELLO.");
  g_string_append_printf (s, "freqhint_vm_connections_total %" G_GUINT64_FORMAT "\n",
                          d->vm_connections_total);
  family (s, "freqhint_hints_frames_total", "counter", "HINTS frames received.");
  g_string_append_printf (s, "freqhint_hints_frames_total %" G_GUINT64_FORMAT "\n",
                          d->hints_frames_total);
  family (s, FH_METRIC_REJECTIONS, "counter",
          "Device connections freqhintd closed because the peer broke the protocol or a "
          "limit (bad version, malformed, oversized or unknown frame, frame out of order, "
          "refused credentials, duplicate UUID, handshake or keepalive timeout, connection "
          "limit), by reason.  Orderly closes are not counted.");
  for (int r = 0; r <= FH_CLOSE_REASON_MAX; r++)
    if (r != FH_CLOSE_NORMAL)
      g_string_append_printf (s, FH_METRIC_REJECTIONS "{reason=\"%s\"} %" G_GUINT64_FORMAT "\n",
                              fh_close_reason_name (r), d->rejected[r]);
  family (s, "freqhint_identity_rejections_total", "counter",
          "HELLOs refused because the name, UUID or a thread id is not the peer process's.");
  g_string_append_printf (s, "freqhint_identity_rejections_total %" G_GUINT64_FORMAT "\n",
                          d->identity_rejected);
  family (s, "freqhint_relay_refusals_total", "counter",
          "Relayed vsock guests refused: their CID or hybrid socket is no running VM's.");
  g_string_append_printf (s, "freqhint_relay_refusals_total %" G_GUINT64_FORMAT "\n",
                          d->relay_refused);
  family (s, "freqhint_relay_unmapped_total", "counter",
          "Relayed vsock guests closed because their CID or socket no longer maps to their VM.");
  g_string_append_printf (s, "freqhint_relay_unmapped_total %" G_GUINT64_FORMAT "\n",
                          d->relay_unmapped);
  family (s, "freqhint_accept_failures_total", "counter",
          "Device socket accept() failures for lack of descriptors or memory (each pauses accepting).");
  g_string_append_printf (s, "freqhint_accept_failures_total %" G_GUINT64_FORMAT "\n",
                          d->device ? fh_device_server_accept_failures (d->device) : 0);
  family (s, "freqhint_backend_writes_total", "counter", "Writes the backend attempted.");
  g_string_append_printf (s,
                          "freqhint_backend_writes_total{backend=\"%s\"} %" G_GUINT64_FORMAT "\n",
                          d->backend->ops->name, d->backend->writes);
  family (s, "freqhint_write_failures_total", "counter", "Backend writes that failed.");
  g_string_append_printf (s,
                          "freqhint_write_failures_total{backend=\"%s\"} %" G_GUINT64_FORMAT "\n",
                          d->backend->ops->name, d->backend->write_failures);
  family (s, FH_METRIC_EXTERNAL_WRITES, "counter",
          "Times freqhintd found a policy's scaling_min_freq or scaling_max_freq changed by "
          "another program (tuned, power-profiles-daemon, an admin) since its own last write; "
          "each such value becomes the host's limit.");
  for (guint i = 0; i < d->host->policies->len; i++) {
    FhPolicy *p = g_ptr_array_index (d->host->policies, i);

    g_string_append_printf (s, FH_METRIC_EXTERNAL_WRITES "{policy=\"%u\"} %" G_GUINT64_FORMAT "\n",
                            p->id, p->external_writes);
  }
}

/* The per-CPU families (as many lines as CPUs, whatever the VMs). */
static void
page_cpus (FhDaemon *d, GString *s)
{
  family (s, "freqhint_policy_cap_ratio", "gauge",
          "The operator ceiling holding a cpufreq policy (MR-27), labelled with the VM that holds "
          "it (the highest ceiling placed there). Absent while the policy is not capped.");
  for (guint i = 0; i < d->host->policies->len; i++) {
    FhPolicy *p = g_ptr_array_index (d->host->policies, i);
    const FhVm *vm;

    if (!p->decision.capped || p->decision.cap >= FH_SCALE)
      continue;
    vm = fh_daemon_cap_holder (d, (const guint *) p->cpus->data, p->cpus->len);
    g_string_append_printf (s, "freqhint_policy_cap_ratio{policy=\"%u\"", p->id);
    if (vm) {
      g_string_append_c (s, ',');
      append_label (s, "domain", vm->name);
      g_string_append_c (s, ',');
      append_label (s, "uuid", vm->uuid);
    }
    g_string_append_printf (s, "} %.6g\n", (double) p->decision.cap / FH_SCALE);
  }
  family (s, "freqhint_cpu_floor_ratio", "gauge", "Aggregated floor of the active vCPUs on a CPU.");
  for (guint c = 0; c < d->host->n_cpus; c++)
    if (d->cpus[c].active)
      g_string_append_printf (s, "freqhint_cpu_floor_ratio{cpu=\"%u\"} %.6g\n", c,
                              (double) d->cpus[c].floor / FH_SCALE);
  family (s, "freqhint_cpu_ceiling_ratio", "gauge",
          "Aggregated ceiling of the active vCPUs on a CPU.");
  for (guint c = 0; c < d->host->n_cpus; c++)
    if (d->cpus[c].active)
      g_string_append_printf (s, "freqhint_cpu_ceiling_ratio{cpu=\"%u\"} %.6g\n", c,
                              (double) d->cpus[c].ceiling / FH_SCALE);

  family (s, "freqhint_cpu_scaling_frequency_min_hertz", "gauge",
          "scaling_min_freq of the CPU's policy as freqhintd last wrote or read it (node_exporter's "
          "node_cpu_scaling_frequency_min_hertz reads the file).");
  for (guint c = 0; c < d->host->n_cpus; c++) {
    gint pi = d->host->cpu_policy[c];
    FhPolicy *p = pi >= 0 ? g_ptr_array_index (d->host->policies, pi) : NULL;

    if (p && p->have_applied)
      g_string_append_printf (
          s, "freqhint_cpu_scaling_frequency_min_hertz{cpu=\"%u\"} %" G_GUINT64_FORMAT "\n", c,
          (guint64) p->applied_min_khz * 1000);
  }
  family (s, "freqhint_cpu_scaling_frequency_max_hertz", "gauge",
          "scaling_max_freq of the CPU's policy as freqhintd last wrote or read it.");
  for (guint c = 0; c < d->host->n_cpus; c++) {
    gint pi = d->host->cpu_policy[c];
    FhPolicy *p = pi >= 0 ? g_ptr_array_index (d->host->policies, pi) : NULL;

    if (p && p->have_applied)
      g_string_append_printf (
          s, "freqhint_cpu_scaling_frequency_max_hertz{cpu=\"%u\"} %" G_GUINT64_FORMAT "\n", c,
          (guint64) p->applied_max_khz * 1000);
  }
}

/* A per-VM section's # HELP and # TYPE lines. */
static void
section_family (guint section, GString *s)
{
  if (section < PAGE_OPERATOR_FLOOR) {
    guint f = (section - PAGE_CLAMPS) / 2, m = (section - PAGE_CLAMPS) % 2;
    g_autofree char *name = g_strdup_printf ("freqhint_vcpu_%s_%s_ratio",
                                             clamp_families[f].suffix, m ? "max" : "min");

    family (s, name, "gauge", clamp_families[f].help);
    return;
  }
  switch (section) {
  case PAGE_OPERATOR_FLOOR:
    family (s, "freqhint_vm_operator_floor_ratio", "gauge",
            "The operator's floor for a VM (libvirt metadata, config [vm] section, or 0), as a "
            "fraction of full capacity.");
    break;
  case PAGE_OPERATOR_CEILING:
    family (s, "freqhint_vm_operator_ceiling_ratio", "gauge",
            "The operator's ceiling for a VM, as a fraction of full capacity.");
    break;
  case PAGE_VM_INFO:
    family (s, "freqhint_vm_info", "gauge",
            "Always 1; labels: where the VM's operator settings come from (libvirt, config, "
            "default) and whether its guest's hints are followed (guest_hints=\"on\"|\"off\").");
    break;
  case PAGE_VCPU_INFO:
    family (s, "freqhint_vcpu_info", "gauge",
            "Always 1; maps a VM's vCPU to the host CPU it is placed on (cpu, as in "
            "node_exporter's node_cpu_* series) and how that was found (pinned, last-cpu, config). "
            "Absent while the placement is unknown.");
    break;
  case PAGE_VCPU_ACTIVE:
    family (s, "freqhint_vcpu_active", "gauge",
            "1 when the vCPU holds its CPU's limits (hinted, not idle).");
    break;
  case PAGE_VM_STATE:
    family (s, "freqhint_vm_state_info", "gauge",
            "Always 1; labels: where the VM's state comes from (state_source: guest = its device "
            "only, host = the host's record only, both) and which host record knows it "
            "(host_record: libvirt, config, none) (MR-28), and how its hints arrive (transport: "
            "device, vsock, hybrid, none).");
    break;
  case PAGE_VCPU_HOST_BUSY:
    family (s, "freqhint_vcpu_host_busy", "gauge",
            "1 when the vCPU's thread ran at least 25 % of the last window, as the host sees it; "
            "without a guest record this makes the vCPU active (MR-29).");
    break;
  default:
    g_assert_not_reached ();
  }
}

/* One VM's lines of a per-VM section. */
static void
section_vm (guint section, FhVm *vm, GString *s)
{
  if (section < PAGE_OPERATOR_FLOOR) {
    guint f = (section - PAGE_CLAMPS) / 2, m = (section - PAGE_CLAMPS) % 2;
    g_autofree char *name = g_strdup_printf ("freqhint_vcpu_%s_%s_ratio",
                                             clamp_families[f].suffix, m ? "max" : "min");

    for (guint j = 0; j < vm->num_vcpus; j++) {
      FhClamp c = f == 0   ? vm->vcpus[j].d.req
                  : f == 1 ? vm->vcpus[j].d.grant
                           : vm->vcpus[j].d.eff;

      g_string_append (s, name);
      vcpu_labels (s, vm, j);
      g_string_append_printf (s, "} %.6g\n", (double) (m ? c.max : c.min) / FH_SCALE);
    }
    return;
  }
  switch (section) {
  case PAGE_OPERATOR_FLOOR:
    g_string_append (s, "freqhint_vm_operator_floor_ratio");
    vm_labels (s, vm);
    g_string_append_printf (s, "} %.6g\n", (double) vm->settings.op.min / FH_SCALE);
    break;
  case PAGE_OPERATOR_CEILING:
    g_string_append (s, "freqhint_vm_operator_ceiling_ratio");
    vm_labels (s, vm);
    g_string_append_printf (s, "} %.6g\n", (double) vm->settings.op.max / FH_SCALE);
    break;
  case PAGE_VM_INFO:
    g_string_append (s, "freqhint_vm_info");
    vm_labels (s, vm);
    g_string_append_printf (s, ",source=\"%s\",guest_hints=\"%s\"} 1\n",
                            vm->settings_source ? vm->settings_source : "default",
                            vm->settings.ignore_hints ? "off" : "on");
    break;
  case PAGE_VCPU_INFO:
    for (guint j = 0; j < vm->num_vcpus; j++) {
      FhVcpu *v = &vm->vcpus[j];

      if (v->cpu < 0)
        continue;
      g_string_append (s, "freqhint_vcpu_info");
      vcpu_labels (s, vm, j);
      g_string_append_printf (s, ",cpu=\"%d\",placement=\"%s\"} 1\n", v->cpu,
                              v->placed_by_config ? "config"
                              : v->info.pinned    ? "pinned"
                                                  : "last-cpu");
    }
    break;
  case PAGE_VCPU_ACTIVE:
    for (guint j = 0; j < vm->num_vcpus; j++) {
      g_string_append (s, "freqhint_vcpu_active");
      vcpu_labels (s, vm, j);
      g_string_append_printf (s, "} %d\n", vm->vcpus[j].d.active && vm->vcpus[j].tid_ok);
    }
    break;
  case PAGE_VM_STATE:
    g_string_append (s, "freqhint_vm_state_info");
    vm_labels (s, vm);
    g_string_append_printf (s, ",state_source=\"%s\",host_record=\"%s\",transport=\"%s\"} 1\n",
                            fh_vm_state_source (vm), vm->host_source ? vm->host_source : "none",
                            fh_vm_transport (vm));
    break;
  case PAGE_VCPU_HOST_BUSY:
    for (guint j = 0; j < vm->num_vcpus; j++) {
      g_string_append (s, "freqhint_vcpu_host_busy");
      vcpu_labels (s, vm, j);
      g_string_append_printf (s, "} %d\n", vm->vcpus[j].busy);
    }
    break;
  default:
    g_assert_not_reached ();
  }
}

gboolean
fh_telemetry_metrics_next (FhMetricsPage *p, GString *out, gsize want)
{
  FhDaemon *d = p->d;

  while (p->section < PAGE_END && out->len < want) {
    FhVm *vm = NULL;

    if (p->section == PAGE_HEAD || p->section == PAGE_CPUS) {
      if (p->section == PAGE_HEAD)
        page_head (d, out);
      else
        page_cpus (d, out);
      p->section++;
      continue;
    }
    if (!p->family_out) {
      section_family (p->section, out);
      p->family_out = TRUE;
    }
    while (p->vm < p->keys->len &&
           !(vm = g_hash_table_lookup (d->vms, g_ptr_array_index (p->keys, p->vm))))
      p->vm++;
    if (!vm) {
      p->section++;
      p->vm = 0;
      p->family_out = FALSE;
      continue;
    }
    section_vm (p->section, vm, out);
    p->vm++;
  }
  return p->section < PAGE_END;
}
