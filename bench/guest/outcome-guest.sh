#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Runs inside the outcome benchmark's guest (issue 40; the host side is
# bench/guest/outcome.sh).  The same workloads in every mode; only the
# host's handling of them changes between modes:
#   foreground  fh-guest-outcome fg under `uclampset -m $FG_MIN`: a request
#               of $LOOPS loops (calibrated as $WORK_US of work with the host
#               at f_max) every $PERIOD_US, in the first $FG_ON_MS of every
#               $CYCLE_MS cycle; its response times measured here
#   background  fh-guest-outcome bg under `uclampset -M $BG_MAX`: spinning
#               from $BG_FROM_MS to $BG_TO_MS of every cycle
#   both pinned to vCPU1 (shared), idle gaps where neither runs.
# Per mode: "STEP mode-start mode=X round=R" (the host sets the mode up),
# clock sync, the workloads with the guest's cpufreq requests traced
# (power:cpu_frequency, trace_clock mono), then lines "R ..." (requests)
# and "F ..." (vCPU1's requests to the driver) on the control port and
# "STEP mode-done ...".
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=../../tests/harness/step-lib.sh
. /lib/freqhint/step-lib.sh
. /etc/freqhint-outcome.env

step_open
step_load_module
check "schedutil governs vCPU1" grep -q schedutil /sys/devices/system/cpu/cpufreq/policy1/scaling_governor
TR=/sys/kernel/tracing
mount -t tracefs nodev "$TR" 2>/dev/null || TR=/sys/kernel/debug/tracing
check "tracefs" test -w "$TR/trace_clock"
echo 0 >"$TR/tracing_on"
echo mono >"$TR/trace_clock"
echo 1 >"$TR/events/power/cpu_frequency/enable"
gmax=$(cat /sys/devices/system/cpu/cpufreq/policy1/cpuinfo_max_freq)
gmin=$(cat /sys/devices/system/cpu/cpufreq/policy1/cpuinfo_min_freq)

# Calibration with the host at f_max (the host holds the performance
# governor meanwhile): loops per ms of vCPU1's work on an undisturbed host
# CPU (the best chunk), so "3 ms of work at f_max" is 3 ms of a host CPU at
# full speed, as the emulator's f/f_max means it; the rate over the whole
# calibration (the host as loaded) is reported beside it.
check "calibration starts" step calibrate-start
cal=$(taskset -c 1 fh-guest-outcome calibrate "$CAL_MS")
lpm=${cal%% *}
lpm=${lpm#loops_per_ms=}
LOOPS=$((lpm * WORK_US / 1000))
check "calibrated" step calibrate-done "$cal" loops=$LOOPS gmin=$gmin gmax=$gmax

# Round r starts at the r-th mode (a b c d e, b c d e a, ...): no mode
# always runs first after the set-up or after the same neighbour.
order=$MODES
r=1
while [ "$r" -le "$ROUNDS" ]; do
	for m in $order; do
		check "mode $m round $r set up" step mode-start mode="$m" round="$r"
		sync=$(fh-guest-outcome sync 8)
		echo >"$TR/trace"
		echo 1 >"$TR/tracing_on"
		# a second for both processes to start (exec and first translation
		# under TCG on a loaded host take hundreds of ms)
		epoch=$(($(fh-guest-outcome now) + 1000000000))
		uclampset -M "$BG_MAX" fh-guest-outcome bg 1 "$epoch" "$MODE_S" "$CYCLE_MS" "$BG_FROM_MS" "$BG_TO_MS" \
			>/tmp/bg.out &
		bgp=$!
		uclampset -m "$FG_MIN" fh-guest-outcome fg 1 "$epoch" "$MODE_S" "$CYCLE_MS" 0 "$FG_ON_MS" \
			"$PERIOD_US" "$LOOPS" "$BG_FROM_MS" "$BG_TO_MS" >/tmp/fg.out
		wait "$bgp"
		echo 0 >"$TR/tracing_on"
		grep '^R ' /tmp/fg.out >&3
		# "F SECONDS KHZ": vCPU1's requests to the driver (guest CLOCK_MONOTONIC)
		sed -n 's/.* \([0-9][0-9]*\.[0-9]*\): cpu_frequency: state=\([0-9]*\) cpu_id=1$/F \1 \2/p' \
			"$TR/trace" >&3
		check "mode $m round $r done" step mode-done mode="$m" round="$r" epoch_ns="$epoch" \
			$sync $(grep '^fg ' /tmp/fg.out | cut -d' ' -f2-) $(cat /tmp/bg.out)
	done
	r=$((r + 1))
	# shellcheck disable=SC2086 # the list's words
	set -- $order
	first=$1
	shift
	order="$* $first"
done
echo "STEP end" >&3
done_testing
