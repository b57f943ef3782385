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

/* Prometheus text exposition format 0.0.4. */
char *fh_telemetry_metrics (FhDaemon *daemon);
