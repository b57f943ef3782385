#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The demo's first story (run-e2e.sh --kernel stock), in a guest running
# Debian's stock 6.12 kernel: what a stock distribution guest gets from
# freqhint with no kernel of its own.  That kernel has no
# CONFIG_UCLAMP_TASK, so nobody in the guest can set a clamp; the module
# still reports each vCPU's idleness and its governor's performance request
# (perf), which the host takes as a floor (merge rule MR-4), the host's
# frequencies appear in the guest's cpufreq, and the operator's ceiling
# holds.  Each step is judged by the host, as in guest-story.sh.
#
# The frequencies below are the fixture host's (tests/agent/mkfixture.sh
# host: every policy 800 MHz..3.2 GHz), as the host side knows them.
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=../harness/step-lib.sh
. /lib/freqhint/step-lib.sh
. /etc/freqhint-e2e.env

step_open

settle() { sleep "${1:-1}"; }

# reads_within SECONDS FILE VALUE: FILE reads VALUE within SECONDS (what the
# host grants reaches the guest in its own time); prints what it read last.
reads_within() {
	i=0
	while [ "$i" -lt "$(($1 * 10))" ]; do
		[ "$(cat "$2" 2>/dev/null)" = "$3" ] && { echo "$3"; return 0; }
		sleep 0.1
		i=$((i + 1))
	done
	cat "$2"
	return 1
}

C=/sys/devices/system/cpu
host_range() {
	reads_within 10 $C/cpu1/cpufreq/cpuinfo_min_freq 800000 &&
		reads_within 10 $C/cpu1/cpufreq/cpuinfo_max_freq 3200000
}

# The story's own shell stays on vCPU0, so vCPUs 1-3 run only what a step
# puts there and the host checks can say "others unchanged" of them.
taskset -p 1 $$ >/dev/null

# With the demo's response times (step-lib.sh), vCPU1's speed measured first.
demo_response_init

# What makes this guest a stock one: a clamp cannot be set here.
check_fails "no clamps on this kernel: uclampset -m 800 is refused" uclampset -m 800 /bin/busybox true

step_load_module
settle 2
check "host sees the VM connected" step connected
check "the guest's cpufreq shows the host's 800 MHz..3.2 GHz" host_range
demo_response stock -

# 1. A task keeps vCPU1 busy: the guest's governor asks for the top speed,
# and that request reaches the host as vCPU1's floor.  vCPUs 2 and 3 run
# nothing: idle, they hold no floor.
/bin/busy --cpu 1 &
busy=$!
settle
check "busy vCPU1's governor request raises its host CPU's floor" step perf-floor vcpu=1
# The host's frequency, as the host samples it, reaches the guest: a
# stock guest has no other way to know it.
host_cur_freq 2400000
host_cur_freq 1200000

# 2. The operator caps the VM at 50%: the floor follows the cap, and the
# guest's cpufreq shows the ceiling it is granted.
check "operator ceiling 50% caps the floor" step operator-ceiling vcpu=1 min=512
check "the guest's cpufreq shows the operator's 50% (1.6 GHz)" \
	reads_within 20 $C/cpu1/cpufreq/scaling_max_freq 1600000
demo_response stock-capped "$busy"

# 3. The task exits: vCPU1 idles, its floor is released, the cap stays.
kill "$busy"; wait "$busy" 2>/dev/null
check "idle vCPU1 releases its floor" step released vcpu=1

echo "STEP end" >&3
done_testing
