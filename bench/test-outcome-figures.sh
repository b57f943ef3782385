#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Test of bench/outcome-figures.sh (issue 40's figures) on a made-up
# results directory whose figures are known: percentiles of the guest's
# response times, energy within the workload's interval only (put on the
# host's clock by the sync offset), work, energy per work, windows above
# the operator's ceiling and the DVFS identity against the guest's
# requests.  It asserts the arithmetic, no outcome target.
set -euo pipefail

fig=${OUTCOME_FIGURES:-$(dirname "$0")/outcome-figures.sh}
T=$(mktemp -d /tmp/fh-outcome-fig.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
n=0
is() { # KEY EXPECTED
	local got
	n=$((n + 1))
	got=$(sed -n "s/^$1=//p" "$T/out")
	if [ "$got" = "$2" ]; then echo "ok $n - $1 = $2"; else echo "not ok $n - $1: expected $2, got '$got'"; fail=1; fi
}

cat >"$T/run.env" <<'EOF'
cal_loops_per_ms=1000
cal_gmax=1024000
mode_seconds=1
ceiling_e=50
modes=c\ e
EOF
# The guest's epoch 5 s on its clock is host realtime 1001 s: 1 s into a
# trace that started at realtime 1000 s.
for m in c e; do
	printf '%s\n' mode=$m round=1 epoch_ns=5000000000 offset_us=996000000 rtt_us=300 \
		requests=100 late=2 skipped=3 fg_loops=100000 bg_loops=400000 >"$T/step-$m-1"
	# responses 1..100 ms; the even ones released while the background ran
	seq 100 | awk '{ printf "%d %d %d\n", $1 * 20, $1 * 1000, $1 % 2 == 0 }' >"$T/req-$m-1"
	# the guest's requests on vCPU1: f_max, then 300/1024 (-> 1.2 GHz, one
	# step from 800 MHz), then 700/1024 (-> 2.4 GHz, four steps away)
	printf '4.9 1024000\n5.45 300000\n5.75 700000\n' >"$T/freq-$m-1"
done
trace() { # MODE: windows of 100 ms from 0 to 2.5 s on policies 0, 2, 4
	echo "# fh-dvfs-emu trace v1 start_monotonic_us=1 start_realtime_us=1000000000 window_ms=100 period_us=4000 model=\"test\""
	echo "# time_s policy ..."
	awk -v m="$1" 'BEGIN { for (i = 0; i <= 25; i++) { t = i / 10
		f0 = (m == "e" && i == 3) ? 2000000 : 1600000
		f2 = (t >= 1 && t < 1.5) ? 3200000 : (t >= 1.5 && t < 2) ? 800000 : 2000000
		if (m == "e") f2 = 800000
		printf "%.3f\t0\t%d\t800000\t3200000\tschedutil\t0\t0\t1\t0\t1024\t0.5\t%.3f\n", t, f0, 10 * t
		printf "%.3f\t2\t%d\t800000\t3200000\tschedutil\t0\t0\t2\t0\t1024\t0.5\t%.3f\n", t, f2, 20 * t
		printf "%.3f\t4\t800000\t800000\t3200000\tschedutil\t0\t0\t0\t0\t1024\t0\t%.3f\n", t, 5 * t } }'
}
trace c >"$T/trace-c-1.tsv"
trace e >"$T/trace-e-1.tsv"
# (e) has a round 2 of 10 requests, 1..10 ms, one of them late, with the
# same trace; rounds 10 and 2 are taken in number order
for r in 2 10; do
	printf '%s\n' mode=e round=$r epoch_ns=5000000000 offset_us=996000000 rtt_us=300 \
		requests=10 late=$((r / 2)) skipped=0 fg_loops=0 bg_loops=0 >"$T/step-e-$r"
	seq 10 | awk -v r=$r '{ printf "%d %d 0\n", $1 * 20, $1 * 100 * r }' >"$T/req-e-$r"
	cp "$T/freq-e-1" "$T/freq-e-$r"
	trace e >"$T/trace-e-$r.tsv"
done
"$fig" "$T" >"$T/out"

is outcome_c_p50_us 50000
is outcome_c_p99_us 99000
is outcome_c_p99_alone_us 99000
is outcome_c_p99_shared_us 100000
is outcome_c_requests 100
is outcome_c_late 2
is outcome_c_skipped 3
is outcome_c_p50_alone_us 49000
is outcome_c_p50_shared_us 50000
is outcome_c_energy 35.000
is outcome_c_energy_vm 30.000
is outcome_c_work_ms 500.0
is outcome_c_epw 0.070
is outcome_c_epw_vm 0.060
is outcome_c_mean_khz 2000000
# 1.0-1.4 at 3.2 GHz against f_max (0 steps), 1.5-1.7 at 800 MHz against
# 1.2 GHz (1 step), 1.8-1.9 against 2.4 GHz (4 steps): 8 of 10
is outcome_c_identity 0.800
is outcome_c_identity_windows 10
# policy0 at 1.6 GHz is at the cap, not above; policy2 above it in 21 windows
is outcome_c_over_cap 21
is outcome_e_over_cap 3
# per round, in round order: 1..100 ms, 0.2..2 ms, 1..10 ms
is outcome_e_p99_rounds_us 99000,2000,10000
is outcome_e_late_rounds 2,1,5
is outcome_c_p99_rounds_us 99000
is outcome_e_max_khz 2000000
is outcome_c_sync_err_us 150
echo "1..$n"
exit "$fail"
