#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Grafana dashboard loads by provisioning: valid JSON, a fixed uid, every
# panel on the $datasource variable (no data source uid of one installation),
# every target with an expression, unique panel ids.
set -euo pipefail
d=$1
command -v jq >/dev/null || { echo "FAIL: jq is not installed" >&2; exit 1; }
jq -e . "$d" >/dev/null || { echo "FAIL: $d is not JSON" >&2; exit 1; }
jq -e '.uid == "freqhint-overview" and (.id == null) and (.panels | length > 0)' "$d" >/dev/null ||
	{ echo "FAIL: uid/id/panels" >&2; exit 1; }
jq -e '[.panels[] | .datasource.uid, (.targets[] | .datasource.uid)] | all(. == "${datasource}")' "$d" >/dev/null ||
	{ echo "FAIL: a panel not on \${datasource}" >&2; exit 1; }
jq -e '[.panels[].targets[] | .expr | type == "string" and length > 0] | all' "$d" >/dev/null ||
	{ echo "FAIL: a target without an expression" >&2; exit 1; }
jq -e '[.panels[].id] | length == (unique | length)' "$d" >/dev/null ||
	{ echo "FAIL: duplicate panel ids" >&2; exit 1; }
echo "PASS: $d"
