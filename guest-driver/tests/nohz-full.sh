#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest: Debian's stock kernel booted with nohz_full=2-3.  The
# idle-time clamp source closes the windows of those CPUs from a
# housekeeping CPU (gather.c, "remote windows"): no timer of the module's
# is started or expires on them, busy and idle are still reported, and
# hotplug takes a CPU out of the remote windows and back.  vCPU1, a
# housekeeping CPU, keeps its own window timer: the control that shows the
# trace would see one.
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=fh-lib.sh
. /lib/freqhint/fh-lib.sh

T=/sys/kernel/tracing
taskset -p 1 $$ >/dev/null

check_output "the kernel runs CPUs 2-3 tickless (nohz_full)" '^2-3$' \
	cat /sys/devices/system/cpu/nohz_full
fh_probe
check_output "clamp source: idle_time (no uclamp)" '^idle_time$' \
	cat /sys/kernel/debug/virtio_freqhint/clamp_source
# The product build times nothing of its own (review §B.2.6): only the
# benchmark's build (FREQHINT_OWN_TIME=y) has sampler_ns.
check_fails "the product build has no sampler_ns in debugfs vcpus" \
	grep -q ' sampler_ns=' /sys/kernel/debug/virtio_freqhint/vcpus
for c in 2 3; do
	check "cpu$c: windows closed remotely" wait_vcpu $c 'f["remote"]==1' 1
done
for c in 0 1; do
	check "cpu$c: its own window timer (housekeeping)" vcpu_holds $c 'f["remote"]==0'
done

busy 2
p2=$fh_pid
busy 1
check "vCPU2 (nohz_full) reports busy" wait_vcpu 2 'f["idle"]==0 && f["busy"]>=900'
check "vCPU1 reports busy" wait_vcpu 1 'f["idle"]==0'
check "the spinner runs on cpu2" task_runs_on 2 "$p2"

[ -d $T/events ] || mount -t tracefs nodev $T
echo 0 >$T/tracing_on
: >$T/trace
echo 1 >$T/events/timer/timer_start/enable
echo 1 >$T/events/timer/timer_expire_entry/enable
echo 1 >$T/events/hrtimer/hrtimer_start/enable
echo 1 >$T/events/hrtimer/hrtimer_expire_entry/enable
w0=$(vcpu_field 2 windows)
echo 1 >$T/tracing_on
sleep 3
echo 0 >$T/tracing_on
w1=$(vcpu_field 2 windows)
grep -E 'fh_|virtio_freqhint' $T/trace >/tmp/fh-timers
echo "the module's timer events in 3 s: $(wc -l </tmp/fh-timers)"
# The trace's CPU column, "[002]": what ran there is shown before the check.
grep -E '\[00[23]\]' /tmp/fh-timers | head -5
check_output "none on cpu2 or cpu3" '^0$' \
	sh -c "grep -cE '\[00[23]\]' /tmp/fh-timers || true"
check "vCPU1's own window timer expired on cpu1 (the control)" \
	sh -c "grep '\[001\]' /tmp/fh-timers | grep -q 'timer_expire_entry.*vfh_window_timer'"
check "the remote windows' timer expired on a housekeeping CPU" \
	sh -c "grep -E '\[00[01]\]' /tmp/fh-timers | grep -q 'timer_expire_entry.*vfh_remote_windows'"
check "vCPU2's windows kept closing ($w0 -> $w1)" test "$w1" -gt "$w0"
echo 0 >$T/events/enable

stop_busy
check "vCPU2 reports idle once its task exits" wait_vcpu 2 'f["idle"]==1'

check "cpu3 offline" sh -c 'echo 0 >/sys/devices/system/cpu/cpu3/online'
check "cpu3: no hint, out of the remote windows" \
	wait_vcpu 3 'f["online"]==0 && f["remote"]==0' 2
check "cpu3 online" sh -c 'echo 1 >/sys/devices/system/cpu/cpu3/online'
check "cpu3: back in the remote windows" \
	wait_vcpu 3 'f["online"]==1 && f["remote"]==1' 5
busy 3
check "vCPU3 reports busy after coming back" wait_vcpu 3 'f["idle"]==0'
stop_busy
check "vCPU3 reports idle" wait_vcpu 3 'f["idle"]==1'

check "rmmod" rmmod virtio_freqhint
check "no kernel warnings" dmesg_clean
done_testing
