#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The guest's context-switch cost per clamp source (issue 27): a pipe
# ping-pong pinned to one vCPU of the uclamp test kernel (which carries the
# clamp hook, guest-driver/rfc/), with the module not loaded, with the hook
# and with the sched_switch probe, interleaved.  A benchmark, not a test.
#
#   bench/clamp-cost.sh [ROUNDS [ROUND_TRIPS]]   (default 6, 20000)
# Prints every run, then one line per source: the median over its runs of
# pingpong_ns (each run's mean ns per round trip, fh-guest-bench) and the
# clamp source's events per round trip (two context switches each).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"

rounds=${1:-6} n=${2:-20000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -static -O2 -Wall -Werror -o "$work/fh-guest-bench" "$here/bench/guest/fh-guest-bench.c"
FH_RUN_GUEST_ARGS="${FH_RUN_GUEST_ARGS:-} --add $work/fh-guest-bench:/bin/fh-guest-bench --append freqhint.rounds=$rounds --append freqhint.n=$n" \
	"$here/guest-driver/tests/run-guest-test.sh" uclamp uclamp \
	"$here/bench/guest/clamp-cost.sh" "$work/console.log" \
	-- -device virtio-freqhint-pci >&2 ||
	{ cat "$work/console.log" >&2; die "the guest run failed"; }
# Every run, then the summary.
grep -E '^# (cost|cpuinfo) ' "$work/console.log" | tr -d '\r' | sed 's/^# //'
grep '^# cost ' "$work/console.log" | tr -d '\r' | awk -v n="$n" '
	{ for (i = 3; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
	  s = f["source"]; k[s]++; pp[s, k[s]] = f["pingpong_ns"]; ev[s] += f["events"] }
	END {
		for (s in k) {
			m = k[s]
			for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++)
				if (pp[s, j] < pp[s, i]) { t = pp[s, i]; pp[s, i] = pp[s, j]; pp[s, j] = t }
			med = m % 2 ? pp[s, (m + 1) / 2] : (pp[s, m / 2] + pp[s, m / 2 + 1]) / 2
			printf "%-13s runs=%d median_pingpong_ns=%d events_per_round_trip=%.3f\n", s, m, med, ev[s] / (m * n)
		}
	}' | sort
