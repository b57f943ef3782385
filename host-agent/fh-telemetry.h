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
/* vm: name or UUID, NULL for all; NULL return with error when not found. */
JsonNode *fh_telemetry_vcpus (FhDaemon *daemon, const char *vm, GError **error);
JsonNode *fh_telemetry_cpus (FhDaemon *daemon);

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

/* Prometheus text exposition format 0.0.4. */
char *fh_telemetry_metrics (FhDaemon *daemon);
