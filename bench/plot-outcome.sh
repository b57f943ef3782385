#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Issue 40's plot, PNG by gnuplot, from bench/guest/outcome.sh's results:
#
#   bench/plot-outcome.sh --data DIR --out FILE.png [--round R] [--seconds S]
#
# One panel per mode: over the first S seconds (default 6: three cycles) of
# round R's (default 1) workload interval, the frequency fh-dvfs-emu set on
# vCPU1's policy (policy2: both guest tasks) and on vCPU0's (policy0), and
# each foreground request marked at its release, at the height of its
# response time (right axis; open marks: released while the background ran
# on the same vCPU).  The interval is put on the trace's clock as
# bench/outcome-figures.sh does.
set -euo pipefail

data='' out='' round=1 secs=6
while [ $# -gt 0 ]; do
	case "$1" in
	--data) data=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--round) round=${2:?}; shift ;;
	--seconds) secs=${2:?}; shift ;;
	*) echo "usage: $0 --data DIR --out FILE.png [--round R] [--seconds S]" >&2; exit 2 ;;
	esac
	shift
done
[ -n "$data" ] && [ -n "$out" ] || { echo "$0: --data and --out are required" >&2; exit 2; }
# shellcheck disable=SC1091
. "$data/run.env"
declare -A names=([a]="(a) status quo: no hints" [b]="(b) perf-only (the information virtual-cpufreq carries)" [c]="(c) freqhint"
	[d]="(d) performance governor" [e]="(e) freqhint, operator ceiling ${ceiling_e:-50} %")
word() { sed -n "s/^$1=//p" "$2" | sed -n 1p; }

pd=$data/plot
mkdir -p "$pd"
panels=()
for m in ${modes:?}; do
	step=$data/step-$m-$round
	[ -r "$step" ] || continue
	epoch_us=$(($(word epoch_ns "$step") / 1000))
	off=$(word offset_us "$step")
	# Trace windows relative to the workload's start: "t policy GHz".
	awk -F'\t' -v e="$epoch_us" -v o="$off" -v s="$secs" '
		/^# fh-dvfs-emu/ { n = split($0, h, " "); for (i = 1; i <= n; i++) if (h[i] ~ /^start_realtime_us=/) { sub(/.*=/, "", h[i]); t0 = (e + o - h[i]) / 1e6 } next }
		/^#/ { next }
		$1 - t0 >= -0.2 && $1 - t0 <= s && ($2 == 0 || $2 == 2) { printf "%.3f %s %.3f\n", $1 - t0, $2, $3 / 1e6 }' \
		"$data/trace-$m-$round.tsv" >"$pd/trace-$m"
	awk '$2 == 2' "$pd/trace-$m" >"$pd/p2-$m"
	awk '$2 == 0' "$pd/trace-$m" >"$pd/p0-$m"
	awk -v s="$secs" '$1 / 1000 <= s { printf "%.3f %.3f %d\n", $1 / 1000, $2 / 1000, $3 }' "$data/req-$m-$round" >"$pd/req-$m"
	panels+=("$m")
done
[ "${#panels[@]}" -gt 0 ] || { echo "$0: no results in $data" >&2; exit 1; }
{
	echo "set terminal pngcairo size 1100,$((200 * ${#panels[@]} + 60))"
	echo "set output '$out'"
	echo "set multiplot layout ${#panels[@]},1 title 'Emulated host frequency per policy and foreground response times, one guest, modes interleaved (round $round)'"
	echo "set yrange [0:3.4]; set ytics 0.8; set ylabel 'GHz'; set y2label 'response ms'; set y2tics; set y2range [0:*]"
	echo "set xrange [-0.2:$secs]; set key outside right top; set grid"
	for m in "${panels[@]}"; do
		echo "set title '${names[$m]}'"
		[ "$m" != "${panels[-1]}" ] || echo "set xlabel 'seconds since the workload started (cycle: fg 0-1.4 s, bg 0.6-1.7 s, idle 1.7-2 s)'"
		echo "plot '$pd/p2-$m' using 1:3 with steps lw 2 title 'policy2 (vCPU1)', \\"
		echo "  '$pd/p0-$m' using 1:3 with steps lw 1 dt 2 title 'policy0 (vCPU0)', \\"
		echo "  '$pd/req-$m' using 1:(\$3 == 0 ? \$2 : 1/0) axes x1y2 with points pt 7 ps 0.5 title 'request, fg alone', \\"
		echo "  '' using 1:(\$3 == 1 ? \$2 : 1/0) axes x1y2 with points pt 6 ps 0.5 title 'request, bg too'"
	done
	echo "unset multiplot"
} >"$pd/outcome.gp"
gnuplot "$pd/outcome.gp"
