#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# In-guest half of bench/clamp-cost.sh: `fh-guest-bench pingpong` on vCPU1
# with the module not loaded, with the clamp hook, and with the sched_switch
# probe, interleaved round by round, so that host load drifts hit all three
# alike.  Prints "# cost round=<r> source=<s> pingpong_ns=<n>
# round_trips=<k> events=<m>" per run, <m> the clamp source's events on
# vCPU1 during the run (debugfs switches).
. /lib/freqhint/test-lib.sh
. /lib/freqhint/fh-lib.sh

rounds=$(sed -n 's/.*freqhint\.rounds=\([0-9]*\).*/\1/p' /proc/cmdline)
n=$(sed -n 's/.*freqhint\.n=\([0-9]*\).*/\1/p' /proc/cmdline)
taskset -p 8 $$ >/dev/null
check "fh-guest-bench pingpong runs" /bin/fh-guest-bench pingpong 1 1000
# schedutil calls ->adjust_perf only on frequency-invariant kernels; on x86
# that needs APERF/MPERF (spec/guest-reporting.md GR-2a).
echo "# cpuinfo aperfmperf=$(grep -c -w aperfmperf /proc/cpuinfo)"

run() {
	e0=0
	[ "$1" = none ] || e0=$(vcpu_field 1 switches)
	out=$(/bin/fh-guest-bench pingpong 1 "$n") || return 1
	e1=0
	[ "$1" = none ] || e1=$(vcpu_field 1 switches)
	echo "# cost round=$2 source=$1 ${out} events=$((e1 - e0))"
}

r=1
ok=0
while [ "$r" -le "${rounds:-6}" ]; do
	run none "$r" || break
	for s in hook sched_switch; do
		insmod "$FH_KO" clamp_source=$s || break 2
		run "$s" "$r" || break 2
		rmmod virtio_freqhint || break 2
	done
	r=$((r + 1))
	ok=$((ok + 1))
done
check "all ${rounds:-6} interleaved rounds ran ($ok)" test "$ok" -eq "${rounds:-6}"
check "no kernel warnings" dmesg_clean
done_testing
