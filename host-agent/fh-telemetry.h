/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Read-only views of the daemon's state: JSON for the control socket and
 * freqhintctl, Prometheus text for the metrics endpoint.
 */
#pragma once

#include <json-glib/json-glib.h>

#include "fh-daemon.h"

JsonNode *fh_telemetry_status (FhDaemon *daemon);
JsonNode *fh_telemetry_vms (FhDaemon *daemon);

/*
 * The vcpus and cpus answers (JSON arrays, the text json_to_string() gives
 * of them), rendered piece by piece so that
 * an answer about thousands of vCPUs never sits in memory whole (threat
 * model G-13): each fh_telemetry_stream_next() appends at most
 * FH_TELEMETRY_CHUNK objects' text to out and returns FALSE once it has
 * appended the closing bracket.  The stream names VMs by key, not by
 * pointer: a VM that leaves while its answer drains is skipped from then
 * on, so each piece is read from the daemon's state when it is rendered.
 */
#define FH_TELEMETRY_CHUNK 32
typedef struct _FhTelemetryStream FhTelemetryStream;
/* vm: name or UUID, NULL for all; NULL return with error when not found. */
FhTelemetryStream *fh_telemetry_vcpus_stream (FhDaemon *daemon, const char *vm, GError **error);
FhTelemetryStream *fh_telemetry_cpus_stream (FhDaemon *daemon);
gboolean fh_telemetry_stream_next (FhTelemetryStream *stream, GString *out);
void fh_telemetry_stream_free (FhTelemetryStream *stream);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FhTelemetryStream, fh_telemetry_stream_free)

/*
 * Counters other parts of freqhintd feed (names fixed here so dashboards and
 * alert rules under host-agent/monitoring/ can rely on them):
 *  - FH_METRIC_EXTERNAL_WRITES{policy}: FhPolicy.external_writes, bumped by
 *    the cpufreq backend each time it finds a limit file changed by someone
 *    else;
 *  - FH_METRIC_REJECTIONS{reason}: FhDaemon.rejected[], one per close
 *    reason (enum fh_close_reason); a new reason appears by itself.
 */
#define FH_METRIC_EXTERNAL_WRITES "freqhint_cpufreq_external_writes_total"
#define FH_METRIC_REJECTIONS "freqhint_device_connections_rejected_total"

/*
 * Prometheus text exposition format 0.0.4, rendered piece by piece when it
 * is scraped (never held whole): fh_telemetry_metrics_next() appends to out
 * until it holds at least want bytes (or the page's end) and returns FALSE
 * once the page is complete.  Main thread only, like the daemon's state;
 * fh_telemetry_metrics_page_free() only frees memory and may run anywhere.
 */
typedef struct _FhMetricsPage FhMetricsPage;
FhMetricsPage *fh_telemetry_metrics_page (FhDaemon *daemon);
gboolean fh_telemetry_metrics_next (FhMetricsPage *page, GString *out, gsize want);
void fh_telemetry_metrics_page_free (FhMetricsPage *page);
