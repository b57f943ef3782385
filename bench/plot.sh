#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Plots of the guest benchmarks (issue 18), PNG by gnuplot (Debian's
# gnuplot-nox), from the key=value results bench/guest/run.sh writes:
#
#   bench/plot.sh --res FILE --out DIR [--data DIR]
#
#   DIR/BENCHMARKS-latency.png        distribution (CDF) of guest clamp
#       change -> host write, default windows (latency_raw_clk) and every
#       window off (latency_nowin_raw_clk), one step curve each
#   DIR/BENCHMARKS-notifications.png  over the bursty run, per interval of
#       about a second: virtqueue notifications/s against schedutil
#       requests/s, the default (coalescing) mode and notify_every_change=1
#       (burst_TAG_series: the guest's "T:requests" cumulative from the
#       burst's start, in guest seconds; device_TAG_series: the device's
#       "T:notifications", host seconds since the same step), with the
#       lines one notification per request and one per 10 ms window
#   DIR/BENCHMARKS-guest-cost.png     distributions (CDF) of the ping-pong
#       round trip and the hackbench-like load's time in each state of the
#       guest cost (guestcost_{pp,hb}_{on,quiet,trivial,off,uon,uoff},
#       interleaved runs of one boot)
#
# A mode without data is left out of its plot; with no data at all the
# plot is not written (and the script says so).  The .dat files gnuplot
# reads (one per curve) are kept in --data DIR (default: DIR/plot-data).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"

res='' out='' data=''
while [ $# -gt 0 ]; do
	case "$1" in
	--res) res=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--data) data=${2:?}; shift ;;
	*) die "usage: $0 --res FILE --out DIR [--data DIR]" ;;
	esac
	shift
done
if [ ! -r "$res" ] || [ -z "$out" ]; then die "usage: $0 --res FILE --out DIR"; fi
command -v gnuplot >/dev/null || die "gnuplot not found: run scripts/setup.sh"
# shellcheck disable=SC1090
. "$res"
data=${data:-$out/plot-data}
mkdir -p "$data"

# cdf "V1 V2 ..." FILE: "value fraction" per sample, ascending.
cdf() {
	tr ' ' '\n' <<<"$1" | grep -E '^-?[0-9.]+$' | sort -g |
		awk '{ v[NR] = $1 } END { for (i = 1; i <= NR; i++) printf "%s %.4f\n", v[i], i / NR }' >"$2"
	[ -s "$2" ]
}

# rates GUEST_SERIES DEVICE_SERIES FILE: per guest interval, "requests/s
# notifications/s"; the device's count at a guest time is interpolated
# between its samples (both series start at the burst-start step).
rates() {
	awk -v g="$1" -v d="$2" '
	function split_series(s, t, c,    n, i, p, kv) {
		n = split(s, p, ",")
		for (i = 1; i <= n; i++) { split(p[i], kv, ":"); t[i] = kv[1] + 0; c[i] = kv[2] + 0 }
		return n
	}
	function at(x,    i) {
		if (x <= dt[1]) return dc[1]
		for (i = 2; i <= nd; i++)
			if (x <= dt[i])
				return dc[i - 1] + (dc[i] - dc[i - 1]) * (x - dt[i - 1]) / (dt[i] - dt[i - 1])
		return dc[nd]
	}
	BEGIN {
		ng = split_series(g, gt, gc)
		nd = split_series(d, dt, dc)
		if (ng < 2 || nd < 2) exit
		for (i = 2; i <= ng; i++) {
			span = gt[i] - gt[i - 1]
			if (span <= 0 || gt[i] > dt[nd]) continue
			printf "%.1f %.1f\n", (gc[i] - gc[i - 1]) / span, (at(gt[i]) - at(gt[i - 1])) / span
		}
	}' >"$3"
	[ -s "$3" ]
}

curves=()
cdf "${latency_raw_clk:-}" "$data/latency-default.dat" &&
	curves+=("'$data/latency-default.dat' using 1:2 with steps lw 2 title 'default windows'")
cdf "${latency_nowin_raw_clk:-}" "$data/latency-nowin.dat" &&
	curves+=("'$data/latency-nowin.dat' using 1:2 with steps lw 2 dt 2 title 'every window off (anchor)'")
if [ ${#curves[@]} -gt 0 ]; then
	gnuplot <<EOF
set terminal pngcairo size 900,560
set output '$out/BENCHMARKS-latency.png'
set title 'Guest clamp change -> host write (TCG guest, clocks related over the serial port)'
set xlabel 'latency (ms)'
set ylabel 'fraction of changes'
set yrange [0:1]
set xrange [0:*]
set grid
set key bottom right
plot $(IFS=,; echo "${curves[*]}")
EOF
	log "wrote $out/BENCHMARKS-latency.png"
else
	log "no latency samples in $res: BENCHMARKS-latency.png not written"
fi

curves=()
rates "${burst_default_series:-}" "${device_default_series:-}" "$data/rates-default.dat" &&
	curves+=("'$data/rates-default.dat' using 1:2 with points pt 7 ps 1.2 title 'freqhint (coalescing)'")
rates "${burst_every_series:-}" "${device_every_series:-}" "$data/rates-every.dat" &&
	curves+=("'$data/rates-every.dat' using 1:2 with points pt 5 ps 1.2 title 'notify on every change (anchor)'")
if [ ${#curves[@]} -gt 0 ]; then
	curves+=("x with lines dt 2 lc rgb 'gray40' title 'one per request'"
		"100 with lines dt 3 lc rgb 'gray40' title 'one per 10 ms window'")
	gnuplot <<EOF
set terminal pngcairo size 900,560
set output '$out/BENCHMARKS-notifications.png'
set title 'Bursty guest load: virtqueue notifications against schedutil requests (per second)'
set xlabel 'schedutil requests/s (all vCPUs)'
set ylabel 'virtqueue notifications/s'
set xrange [0:*]
set yrange [0:120<*]
set grid
set key top left opaque
plot $(IFS=,; echo "${curves[*]}")
EOF
	log "wrote $out/BENCHMARKS-notifications.png"
else
	log "no burst series in $res: BENCHMARKS-notifications.png not written"
fi

# One CDF panel per guest-cost load: the runs of each state of one boot
# (bench-guest.sh guest_cost); a state without runs is left out, the
# module and no cpufreq driver are needed.
cost_panel() {
	local load=$1 title=$2 unit=$3 div=$4 i v curves=()
	local states=(on quiet trivial off uon uoff)
	local titles=('the module' 'the module, reporting off (anchor)' 'a trivial cpufreq driver'
		'no cpufreq driver' 'the module, uclamp accounting on' 'no cpufreq driver, uclamp accounting on')
	local styles=('lw 2' 'lw 2 dt 2' 'lw 2 dt 3' 'lw 2 dt 4' 'lw 1' 'lw 1 dt 4')
	for i in "${!states[@]}"; do
		v=guestcost_${load}_${states[$i]}
		v=${!v:-}
		if cdf "${v//,/ }" "$data/cost-$load-${states[$i]}.dat"; then
			curves+=("'$data/cost-$load-${states[$i]}.dat' using (\$1 / $div):2 with steps ${styles[$i]} title '${titles[$i]}'")
		elif [ "$i" = 0 ] || [ "$i" = 3 ]; then
			return 1
		fi
	done
	cat <<EOP
set title '$title'
set xlabel '$unit'
plot $(IFS=,; echo "${curves[*]}")
EOP
}
if pp=$(cost_panel pp 'Pipe ping-pong, two tasks pinned to vCPU3' 'µs per round trip' 1000) &&
	hb=$(cost_panel hb 'hackbench-like load on every vCPU' 'ms per run' 1); then
	gnuplot <<EOF
set terminal pngcairo size 1200,480
set output '$out/BENCHMARKS-guest-cost.png'
set multiplot layout 1,2
set ylabel 'fraction of runs'
set yrange [0:1]
set grid
set key bottom right
$pp
$hb
unset multiplot
EOF
	log "wrote $out/BENCHMARKS-guest-cost.png"
else
	log "no guest-cost runs in $res: BENCHMARKS-guest-cost.png not written"
fi
