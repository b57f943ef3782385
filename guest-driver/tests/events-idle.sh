#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest (events-test.sh): the host changes vCPU2's current frequency
# every rate window, and each change reaches the driver as a CUR_FREQ
# event, handled by the sender thread.  That thread's work counts as idle
# time on the vCPU it runs on, events as much as sends: otherwise each
# event would make an idle vCPU's window read busy (the idle task was
# switched out for a task that is not idle), its report would flap, and
# the send of that report would be more work on it.  The sender is pinned
# to the idle vCPU1 to make every event land there.
#   freqhint.expect=uclamp | nouclamp   as in gather.sh
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=fh-lib.sh
. /lib/freqhint/fh-lib.sh

taskset -p 8 $$ >/dev/null
housekeeping_to 9

fh_probe
check "the agent is connected" wait_file "$dev/agent_connected" '^1$'
spid=$(sender_pid)
check "the sender is pinned to vCPU1" taskset -p 2 "$spid"
check "vCPU1 idle" wait_vcpu 1 'f["idle"]==1' 10
# The agent sends vCPU2's class on vCPU1's idle report, then CUR_FREQ.
check "CUR_FREQ events arrive" wait_file "$FH_STATS/cur_freq_applied" '^[1-9]' 10
sleep 1
e0=$(cat "$FH_STATS/cur_freq_applied")
p0=$(vcpu_field 1 publishes) w0=$(vcpu_field 1 windows) r0=$(vcpu_field 1 sender_runs)
b0=$(cat "$FH_STATS/buffers_sent")
# vCPU1's report, 15 samples over 3 s: the guest's own per-CPU work (a
# kworker, ~5 of 200 windows) makes a window busy now and then (13 to 15
# samples idle in 5 runs beside an arm64 guest); events counted as busy
# make most of them so (1 of 15).
nidle=0
for i in $(seq 15); do
	vcpu_holds 1 'f["idle"]==1' && nidle=$((nidle + 1))
	sleep 0.2
done
e1=$(cat "$FH_STATS/cur_freq_applied")
p1=$(vcpu_field 1 publishes) w1=$(vcpu_field 1 windows) r1=$(vcpu_field 1 sender_runs)
b1=$(cat "$FH_STATS/buffers_sent")
echo "# vCPU1 over 3 s: $((e1 - e0)) CUR_FREQ applied, $((w1 - w0)) windows, $((p1 - p0)) publications, $((r1 - r0)) sender runs; $((b1 - b0)) buffers sent"
check "at least 60 CUR_FREQ applied in 3 s ($((e1 - e0)))" test "$((e1 - e0))" -ge 60
check_output "none out of class or invalid" '^0 0$' \
	sh -c "echo \$(cat $FH_STATS/cur_freq_out_of_class $FH_STATS/cur_freq_invalid)"
check "the sender's runs on vCPU1 include the events' ($((r1 - r0)) >= $((e1 - e0)) / 2)" \
	test "$((r1 - r0))" -ge "$(((e1 - e0) / 2))"
# stays_idle: if not, what ran on vCPU1 and what interrupted it.
stays_idle() {
	[ "$nidle" -ge 8 ] && return 0
	cpu_runners 1
	cpu_irqs 1
	return 1
}
check "vCPU1 reads idle meanwhile ($nidle of 15 samples, >= 8)" stays_idle
check "no kernel warnings" dmesg_clean
