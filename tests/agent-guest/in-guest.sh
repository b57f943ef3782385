#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs as /test.sh in the uclamp test kernel (tests/harness/mkinitramfs.sh):
# freqhintd --backend uclamp on the guest's real /proc, /sys and
# /sys/fs/cgroup, fh-testclient playing the device for two "vCPU" threads,
# and sched_getattr() (uclamp-check) plus /proc/<tid>/sched saying what the
# kernel really holds.  The binaries and their libraries are under /opt/fh.
#
# Expected values (spec/merge-rules.md): machine.slice min 30 % (307) max
# 80 % (819), vm1 min 20 % (205) max 60 % (614): L = (205, 614) (MR-10).
# Operator floor 40 % = 410 (MR-11).  vCPU 0 asks 100..900 -> 410..614;
# vCPU 1 asks perf 700 (headroom 1.0: no cpufreq in a TCG guest) -> 614..614.
# vCPU 2 had clamps 100..900 of its own (uclampset) before; it asks 300..400
# -> 410..410, and gets 100..900 back when released (MR-22).
. /lib/freqhint/test-lib.sh

FH=/opt/fh
export LD_LIBRARY_PATH=$FH/lib
# LeakSanitizer, when the binaries carry it, needs no more than the guest has.
export ASAN_OPTIONS=abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1
CG=/sys/fs/cgroup
W=/tmp/fh

# wait_for WHAT PATTERN CMD...: like check_output, retried for 60 s: what
# the agent does in reply to a change takes a poll interval or two, and the
# ASan-built daemon under TCG on a busy host is slow to get there.
wait_for() {
	wf_what=$1 wf_pat=$2; shift 2
	wf_i=0
	while [ $wf_i -lt 300 ]; do
		if "$@" 2>/dev/null | grep -qE -- "$wf_pat"; then
			check_output "$wf_what" "$wf_pat" "$@"
			return
		fi
		sleep 0.2
		wf_i=$((wf_i + 1))
	done
	check_output "$wf_what" "$wf_pat" "$@"
}
get() { $FH/uclamp-check get "$1"; }
sched() { cat /proc/"$1"/sched; }

mkdir -p $W/state
check "machine.slice made" mkdir $CG/machine.slice
check "cpu controller enabled below it" sh -c "echo +cpu > $CG/machine.slice/cgroup.subtree_control"
check "vm1 made" mkdir $CG/machine.slice/vm1
check "machine.slice cpu.uclamp.min 30" sh -c "echo 30 > $CG/machine.slice/cpu.uclamp.min"
check "machine.slice cpu.uclamp.max 80" sh -c "echo 80 > $CG/machine.slice/cpu.uclamp.max"
check "vm1 cpu.uclamp.min 20" sh -c "echo 20 > $CG/machine.slice/vm1/cpu.uclamp.min"
check "vm1 cpu.uclamp.max 60" sh -c "echo 60 > $CG/machine.slice/vm1/cpu.uclamp.max"

# Two vCPU stand-ins in vm1; vCPU 0 runs SCHED_BATCH at nice 5, which
# freqhintd must keep (MR-21: its own policy, KEEP_PARAMS).
sleep 1000 & V0=$!
sleep 1000 & V1=$!
sleep 1000 & V2=$!
for v in $V0 $V1 $V2; do
	check "vCPU thread $v in vm1" sh -c "echo $v > $CG/machine.slice/vm1/cgroup.procs"
done
check "vCPU 2 has clamps of its own" uclampset -m 100 -M 900 -p $V2
check "vCPU 0 is SCHED_BATCH nice 5" $FH/uclamp-check batch $V0 5
check_output "vCPU 0 starts unclamped" '^policy=3 nice=5 reset_on_fork=0 min=0 max=1024$' get $V0

cat >$W/freqhintd.conf <<EOC
[daemon]
poll_interval_ms=100
check_thread_owner=false
[metrics]
enabled=false
[vm vm1]
floor=40
EOC
$FH/freqhintd --config $W/freqhintd.conf --backend uclamp --socket $W/dev.sock \
	--control-socket $W/ctl.sock --state-dir $W/state --libvirt-uri none -v >$W/daemon.log 2>&1 &
D=$!
wait_for "freqhintd answers on its control socket" 'uclamp' $FH/freqhintctl --socket $W/ctl.sock status

mkfifo $W/in
exec 3<>$W/in
$FH/fh-testclient --socket $W/dev.sock --name vm1 --vcpus 3 --tids "$V0,$V1,$V2" \
	--hint 0:100:900 --hint 1:-:-:700 --hint 2:300:400 --stdin <$W/in >$W/client.out 2>&1 &
C=$!
wait_for "the device side is connected" '^ready' cat $W/client.out

# MR-11/MR-12 on the real kernel: the thread's requested and effective clamps.
wait_for "vCPU 0 clamped 410..614, policy and nice kept, reset-on-fork set" \
	'^policy=3 nice=5 reset_on_fork=1 min=410 max=614$' get $V0
wait_for "vCPU 1 clamped 614..614, reset-on-fork set" \
	'^policy=0 nice=0 reset_on_fork=1 min=614 max=614$' get $V1
wait_for "vCPU 2 clamped 410..410" 'min=410 max=410$' get $V2
check_output "kernel's effective uclamp.min of vCPU 0 is 410" '^effective uclamp\.min +: +410$' sched $V0
check_output "kernel's effective uclamp.max of vCPU 0 is 614" '^effective uclamp\.max +: +614$' sched $V0
check_output "a child vCPU 1 forks gets the defaults (reset on fork)" \
	'min=0 max=1024$' $FH/uclamp-check fork $V1
# The client prints GRANTS when it reads them, after the clamps are set.
wait_for "GRANTS: operator 410..1024, granted 410..614" \
	'grants operator=410..1024 0:410..614 1:410..614 2:410..614' cat $W/client.out
check_output "freqhintctl sees vm1's effective clamp (614 = 59.96 %)" '59\.96\.\.59\.96' $FH/freqhintctl --socket $W/ctl.sock vcpus vm1

# A cgroup change is followed (poll): machine.slice max 50 % = 512.
check "machine.slice cpu.uclamp.max 50" sh -c "echo 50 > $CG/machine.slice/cpu.uclamp.max"
wait_for "vCPU 0 follows: 410..512" 'min=410 max=512$' get $V0
wait_for "vCPU 1 follows: 512..512" 'min=512 max=512$' get $V1
check_output "kernel's effective uclamp.max of vCPU 1 is 512" '^effective uclamp\.max +: +512$' sched $V1

# Idle releases that vCPU only (MR-6, MR-22).
echo "hint 0:100:900:idle" >&3
wait_for "idle vCPU 0 released to the defaults, policy kept" \
	'^policy=3 nice=5 reset_on_fork=[01] min=0 max=1024$' get $V0
check_output "vCPU 1 still clamped" 'min=512 max=512$' get $V1

# Disconnect releases everything.
echo "close" >&3
wait_for "disconnect releases vCPU 1" 'min=0 max=1024$' get $V1
wait_for "vCPU 2 gets its own clamps back (MR-22)" 'min=100 max=900$' get $V2
check_output "vCPU 0 stays released" 'min=0 max=1024$' get $V0
check_output "no write failures" '"write_failures_total" *: *0' \
	$FH/freqhintctl --socket $W/ctl.sock --json status

# MR-26: a real-time vCPU thread whose guest sets no floor.  The kernel gives
# it sched_util_clamp_min_rt_default, restricted by vm1 (L = 205..512) like
# any request; freqhintd must compute what the kernel then holds, and leave
# the minimum to the kernel (-1) so that it follows the sysctl.
sleep 1000 & V3=$!
check "RT vCPU thread in vm1" sh -c "echo $V3 > $CG/machine.slice/vm1/cgroup.procs"
check "it is SCHED_FIFO" $FH/uclamp-check fifo $V3 10
check "RT default minimum 70 % (700)" sh -c "echo 700 > /proc/sys/kernel/sched_util_clamp_min_rt_default"
mkfifo $W/in-rt
exec 4<>$W/in-rt
$FH/fh-testclient --socket $W/dev.sock --name rt --vcpus 1 --tids "$V3" \
	--hint 0:-:900 --stdin <$W/in-rt >$W/client-rt.out 2>&1 &
wait_for "the RT device side is connected" '^ready' cat $W/client-rt.out
fh_eff() {
	$FH/freqhintctl --socket $W/ctl.sock --json vcpus rt | tr -d ' \n\t' |
		sed -n 's/.*"effective":{"min":\([0-9]*\),"max":\([0-9]*\)}.*/\1 \2/p'
}
k_eff() {
	sed -n 's/^effective uclamp\.m[a-z]* *: *\([0-9]*\)$/\1/p' /proc/$V3/sched | tr '\n' ' ' |
		sed 's/ $//'
}
wait_for "RT vCPU: the minimum left to the kernel (its default 700), the maximum set" \
	'^policy=1 nice=0 reset_on_fork=1 min=700 max=512$' get $V3
wait_for "RT vCPU: freqhintd computes 512..512" '^512 512$' fh_eff
wait_for "RT vCPU: the kernel's effective clamps are 512..512" '^512 512$' k_eff
check "freqhintd's effective clamps are the kernel's" test "$(fh_eff)" = "$(k_eff)"
check "RT default minimum 30 % (300)" sh -c "echo 300 > /proc/sys/kernel/sched_util_clamp_min_rt_default"
wait_for "the kernel follows the sysctl: 300..512" '^300 512$' k_eff
wait_for "freqhintd follows it too" '^300 512$' fh_eff
check "freqhintd's effective clamps are still the kernel's" test "$(fh_eff)" = "$(k_eff)"
echo "close" >&4
wait_for "RT vCPU released to the kernel's defaults" 'min=300 max=1024$' get $V3
kill $V3 2>/dev/null

kill -TERM $D; wait $D; rc=$?
check "freqhintd exits cleanly on SIGTERM (status $rc)" test "$rc" = 0

# A daemon killed with clamps in place, then started again: the clamps it
# finds carry its reset-on-fork mark, so a release gives the defaults, not
# the stale values back (MR-22).
start_daemon() {
	$FH/freqhintd --config $W/freqhintd.conf --backend uclamp --socket $W/dev.sock \
		--control-socket $W/ctl.sock --state-dir $W/state --libvirt-uri none -v \
		>>$W/daemon.log 2>&1 &
	D=$!
	wait_for "freqhintd ($1) answers" 'uclamp' $FH/freqhintctl --socket $W/ctl.sock status
}
connect() {
	$FH/fh-testclient --socket $W/dev.sock --name vm1 --vcpus 1 --tids "$V1" \
		--hint 0:300:400 --stdin <$W/in >$W/client-$1.out 2>&1 &
	wait_for "the device side is connected ($1)" '^ready' cat $W/client-$1.out
}
start_daemon "second run"
connect 2
wait_for "vCPU 1 clamped 410..410" 'reset_on_fork=1 min=410 max=410$' get $V1
kill -KILL $D; wait $D 2>/dev/null
check_output "SIGKILL leaves the clamps" 'min=410 max=410$' get $V1
wait_for "the client sees the agent gone" 'disconnected|close' cat $W/client-2.out
start_daemon "third run"
connect 3
wait_for "vCPU 1 clamped again" 'min=410 max=410$' get $V1
echo "close" >&3
wait_for "released to the defaults, not to the stale clamps" 'min=0 max=1024$' get $V1
kill -TERM $D; wait $D; rc=$?
check "freqhintd exits cleanly again (status $rc)" test "$rc" = 0

# MR-27/MR-28 (issue 38): a VM without the device, named by a pidfile, its
# vCPU thread found by its name (QEMU's "CPU N/KVM"): no connection, and
# its thread carries sched_util_max = the ceiling (25 % = 256) all the same.
# Only a thread itself (or its thread group) may write its comm, so the
# stand-in names itself, then idles.
sh -c 'printf "CPU 0/KVM" > /proc/self/comm; while :; do sleep 1; done' & V4=$!
wait_for "a thread named as QEMU names a vCPU thread" '^CPU 0/KVM$' cat /proc/$V4/comm
check "its pidfile" sh -c "echo $V4 > $W/stock.pid"
cat >>$W/freqhintd.conf <<EOC
[vm stock]
ceiling=25
pidfile=$W/stock.pid
EOC
start_daemon "fourth run, a device-less VM"
wait_for "the device-less VM's vCPU thread carries sched_util_max 256" 'min=0 max=256$' get $V4
check_output "freqhintctl: the VM is known from the host (config)" '"state_source" *: *"host"' \
	$FH/freqhintctl --socket $W/ctl.sock --json vms
kill -TERM $D; wait $D; rc=$?
check "freqhintd exits cleanly (status $rc)" test "$rc" = 0
check_output "exit releases the device-less VM's thread" 'min=0 max=1024$' get $V4
kill $V4 2>/dev/null
check_fails "no sanitizer report, warning or critical in the daemon log" \
	grep -E 'AddressSanitizer|LeakSanitizer|runtime error|CRITICAL|WARNING' $W/daemon.log
echo "--- freqhintd log"; cat $W/daemon.log
echo "--- fh-testclient output"; cat $W/client.out
kill $V0 $V1 $V2 2>/dev/null
done_testing
