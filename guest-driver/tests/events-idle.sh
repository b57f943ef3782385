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
idle_under_messages 1 "the sender"
check_output "none out of class or invalid" '^0 0$' \
	sh -c "echo \$(cat $FH_STATS/cur_freq_out_of_class $FH_STATS/cur_freq_invalid)"
check "no kernel warnings" dmesg_clean
