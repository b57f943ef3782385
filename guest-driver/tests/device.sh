#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest: virtio_freqhint with the project's virtio-freqhint-pci device
# (or virtio-freqhint-device on virtio-mmio), whose chardev leads to
# fake-agent.py on the host (see device-test.sh).
# The agent grants an operator ceiling of 700 and vCPU2 a ceiling of 500,
# which the device passes on as FEEDBACK snapshots on its event queue; the
# host side checks the records that arrive.
#   freqhint.expect=uclamp | nouclamp   as in gather.sh
#   freqhint.packed=1                   the device has packed=on: the packed
#                                       ring must have been negotiated
#   freqhint.transport=mmio             the device is on virtio-mmio (else PCI)
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=fh-lib.sh
. /lib/freqhint/fh-lib.sh

expect=$(sed -n 's/.*freqhint\.expect=\([a-z]*\).*/\1/p' /proc/cmdline)
taskset -p 8 $$ >/dev/null
# vCPU1 must read idle once its task exits: housekeeping on vCPUs 0 and 3
# (vCPU1 read busy 31/1024 for 10 s once, arm64, in a bare-tree run).
housekeeping_to 9

fh_probe
if grep -q 'freqhint\.transport=mmio' /proc/cmdline; then
	check_output "the device is on virtio-mmio" '\.virtio_mmio/' readlink -f "$dev"
else
	check_output "the device is on PCI" '/pci[0-9a-f:]+/' readlink -f "$dev"
fi
check_output "the driver binds" 'virtio_freqhint$' readlink "$dev/driver"
check "the agent is connected" wait_file "$dev/agent_connected" '^1$'
check "operator ceiling 700 arrives" wait_file "$dev/operator_ceiling" '^700$'
check_output "operator floor 0" '^0$' cat "$dev/operator_floor"
check "granted ceilings arrive" wait_file "$FH_GRANTS/granted_ceiling" '^1024 1024 500 1024$'
check_output "granted floors" '^0 0 0 0$' cat "$FH_GRANTS/granted_floor"
check "FEEDBACK snapshots were applied" \
	wait_file "$FH_STATS/feedback_applied" '^[1-9]'
check_output "none dropped as invalid" '^0$' cat "$FH_STATS/feedback_invalid"
check_output "no unknown or malformed event" '^0$' cat "$FH_STATS/events_invalid"
check_output "the v1 features were negotiated (PERF FEEDBACK HOST_FREQ CPU_ID)" \
	'^1111' cat "$dev/features"
if grep -q 'freqhint\.packed=1' /proc/cmdline; then
	# Feature bit 34, VIRTIO_F_RING_PACKED: character 35 of the bit string.
	check_output "the packed ring was negotiated" '^1$' cut -c35 "$dev/features"
fi
check_output "vCPU indexes by firmware id (F_CPU_ID)" 'vCPU indexes by firmware id' dmesg
check_fails "no config-space feedback: no config_* statistics" \
	sh -c "ls $FH_STATS | grep config_"
check_output "num_vcpus" '^4$' cat /sys/kernel/debug/virtio_freqhint/num_vcpus
check_output "rate window (the device's, 200 ms here)" '^200$' cat /sys/kernel/debug/virtio_freqhint/rate_window_ms
check_fails "the configuration is not sysfs ABI" test -e "$dev/num_vcpus"
check "use schedutil" use_schedutil
check "the ceiling reaches vCPU0's policy" \
	wait_file /sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq '^700000$' 10
check "vCPU2's own grant wins there" \
	wait_file /sys/devices/system/cpu/cpu2/cpufreq/scaling_max_freq '^500000$' 10

if [ "$expect" = uclamp ]; then
	busy 1 -m 800 -M 1024
	check "vCPU1 under -m 800: min 800" wait_vcpu 1 'f["min"]==800 && f["idle"]==0'
else
	busy 1
	check "vCPU1 busy: perf valid, clamps invalid" \
		wait_vcpu 1 'f["idle"]==0 && f["perf"]!="-" && f["min"]=="-"'
fi
check "and schedutil's request stays under the ceiling (perf <= 700)" \
	steady_vcpu 1 'f["perf"]=="-" || f["perf"]<=700' 1
check "records were sent" wait_file "$FH_STATS/records_sent" '^[1-9]'
check_output "no send errors" '^0$' cat "$FH_STATS/send_errors"
sleep 0.5
stop_busy
check "vCPU1 idle" wait_vcpu 1 'f["idle"]==1' 10
sleep 0.5

# The user's choices on policy0, which a class change for vCPU3 must
# leave alone (the driver is never registered again; that reset every
# policy's governor and limits).
C=/sys/devices/system/cpu
P0=$C/cpufreq/policy0
check "policy0: the user picks performance" sh -c "echo performance >$P0/scaling_governor"
check "policy0: the user's limit 600 MHz" sh -c "echo 600000 >$P0/scaling_max_freq"
pino=$(stat -c %i $P0)
fb0=$(cat "$FH_STATS/feedback_applied")

# An offline vCPU sends "no hint" (the agent checks it arrives).
taskset -p 4 $$ >/dev/null
check "vCPU3 offline" sh -c 'echo 0 >/sys/devices/system/cpu/cpu3/online'
sleep 0.5
check "vCPU3 online" sh -c 'echo 1 >/sys/devices/system/cpu/cpu3/online'
check "vCPU3 reports again" wait_vcpu 3 'f["online"]==1 && (f["idle"]==1 || f["perf"]!="-")'
# The agent answered vCPU3's "no hint" with a host frequency class for it
# (800 MHz..3.2 GHz, table 1.0..3.0 GHz), its only snapshot since fb0.
check "the snapshot with vCPU3's class is applied" sh -c \
	"i=0; while [ \$i -lt 200 ]; do [ \$(cat $FH_STATS/feedback_applied) -gt $fb0 ] && exit 0; sleep 0.1; i=\$((i + 1)); done; exit 1"
sleep 1
check_output "policy0 keeps the user's governor" '^performance$' cat $P0/scaling_governor
check_output "and the user's limit" '^600000$' cat $P0/scaling_max_freq
check_output "policy0 was not created again" "^$pino\$" stat -c %i $P0
# A policy's table is fixed for its lifetime (never rewritten under a live
# governor): vCPU3's live policy keeps the range it was created with; its
# next policy takes the class (after the rebind below).
check_output "vCPU3's live policy keeps its range" '^1024000$' \
	cat $C/cpu3/cpufreq/cpuinfo_max_freq
check "policy0: back to the driver's limits" sh -c "echo 1024000 >$P0/scaling_max_freq"
check "schedutil again" use_schedutil
taskset -p 8 $$ >/dev/null

if [ "$expect" = nouclamp ]; then
	# freeze/restore of the driver: the device is reset and set up again.
	# The agent gives vCPU3 another class (1.2..2.4 GHz) while the guest
	# is frozen, so the first snapshot after restore changes a class:
	# nothing may create a policy while cpufreq is suspended (its
	# governor would start uninitialised, and sugov_start() oopses).
	pino=$(stat -c %i $P0)
	check "suspend/resume cycle (pm_test=devices)" pm_suspend_cycle
	check "the agent link is back after resume" wait_file "$dev/agent_connected" '^1$'
	check "the ceiling is back after resume" \
		wait_file /sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq '^700000$' 10
	sleep 1
	check_output "no policy was created across the cycle" "^$pino\$" stat -c %i $P0
	check_output "and schedutil still runs policy0" '^schedutil$' cat $P0/scaling_governor
	check "no oops or warning across the cycle" dmesg_clean
	check_output "and vCPU2's grant (FEEDBACK seq restarted at 1 and was taken)" \
		'^1024 1024 500 1024$' cat "$FH_GRANTS/granted_ceiling"
	check_output "no snapshot dropped across the reset" '^0$' \
		cat "$FH_STATS/feedback_invalid"
	n0=$(cat "$FH_STATS/records_sent")
	busy 1
	check "records flow after resume" wait_vcpu 1 'f["idle"]==0'
	check "more records sent (eventually more than $n0)" sh -c \
		"i=0; while [ \$i -lt 100 ]; do [ \$(cat $FH_STATS/records_sent) -gt $n0 ] && exit 0; sleep 0.1; i=\$((i + 1)); done; cat $FH_STATS/records_sent; exit 1"
	stop_busy
	check "vCPU1 idle" wait_vcpu 1 'f["idle"]==1' 10
	sleep 0.5
fi

# The cpufreq half binds to an auxiliary device below the virtio device
# where the kernel has the bus (Debian's kernels; the uclamp test kernel
# selects none of its users, and there the driver registers directly).
# Unbound, the device still reports, without perf; bound again, its new
# policies take the host's latest class.
A=/sys/bus/auxiliary
adev=virtio_freqhint.cpufreq.0
if [ "$expect" = nouclamp ]; then
	check "the cpufreq half's auxiliary device is the virtio device's child" \
		sh -c "readlink -f $A/devices/$adev | grep -q '/${dev##*/}/$adev\$'"
	check_output "and the cpufreq driver is bound to it" '^virtio_freqhint.cpufreq$' \
		sh -c "basename \$(readlink $A/devices/$adev/driver)"
	check "unbind the cpufreq half" \
		sh -c "echo $adev >$A/drivers/virtio_freqhint.cpufreq/unbind"
	check_fails "its policies are gone" test -e $P0
	check_output "the virtio device stays bound" '^virtio_freqhint$' \
		sh -c "basename \$(readlink $dev/driver)"
	busy 1
	check "vCPU1 still reported, without perf" \
		wait_vcpu 1 'f["idle"]==0 && f["perf"]=="-"'
	stop_busy
	check "bind the cpufreq half again" \
		sh -c "echo $adev >$A/drivers/virtio_freqhint.cpufreq/bind"
	check "the ceiling is back on policy0" \
		wait_file $C/cpu0/cpufreq/scaling_max_freq '^700000$' 10
	check_output "vCPU3's new policy has the class the host sent last" \
		'^2400000$' cat $C/cpu3/cpufreq/cpuinfo_max_freq
	check "schedutil again" use_schedutil
	busy 1
	check "vCPU1 reports perf again" \
		wait_vcpu 1 'f["idle"]==0 && f["perf"]!="-"'
	stop_busy
	check "vCPU1 idle" wait_vcpu 1 'f["idle"]==1' 10
else
	check_fails "no auxiliary device without the bus (registered directly)" \
		test -e $A/devices/$adev
	check_output "and the cpufreq driver is ours" '^virtio-freqhint$' \
		cat $P0/scaling_driver
fi

# Remove/probe without unloading: everything (policies, ceiling, gathering)
# leaves with the device and comes back with it.
drv=/sys/bus/virtio/drivers/virtio_freqhint
# The cpufreq driver registers once per bind, after the device's first
# snapshot: never with made-up frequencies first and then again with the
# host's (which dropped every policy's governor and limits).
T=/sys/kernel/tracing
[ -d "$T/events" ] || mount -t tracefs nodev "$T"
reg_probe() {
	echo 'p:fh/reg cpufreq_register_driver' >>"$T/kprobe_events" &&
		echo >"$T/trace" && echo 1 >"$T/events/fh/reg/enable" &&
		echo 1 >"$T/tracing_on"
}
check "a kprobe on cpufreq_register_driver" reg_probe
check "unbind the device" sh -c "echo ${dev##*/} >$drv/unbind"
check_fails "the cpufreq policies go with the device" \
	test -e /sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq
check_fails "and so does the debugfs state" test -e "$FH_DBG"
check "bind it again" sh -c "echo ${dev##*/} >$drv/bind"
check "the ceiling is back" \
	wait_file /sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq '^700000$' 10
# New policies, registered after the device's first snapshot: vCPU3's
# takes the host's class, and the core validates its table (cpuinfo is
# the table's range; issue 27 bug 1: a table written in place showed the
# class's 800..3200 MHz).  On stock, the class the agent sent during the
# suspend cycle.
if [ "$expect" = uclamp ]; then
	c3max=3000000 c3min=1000000 c3tab='1000000 1500000 2000000 2500000 3000000'
else
	c3max=2400000 c3min=1200000 c3tab='1200000 1800000 2400000'
fi
check_output "vCPU3's new policy has the host's class: cpuinfo_max_freq $c3max" \
	"^$c3max\$" cat $C/cpu3/cpufreq/cpuinfo_max_freq
check_output "cpuinfo_min_freq $c3min (the validated table's lowest)" "^$c3min\$" \
	cat $C/cpu3/cpufreq/cpuinfo_min_freq
check_output "its table" "^$c3tab ?\$" \
	cat $C/cpu3/cpufreq/scaling_available_frequencies
check_output "vCPU0 keeps the synthetic range" '^1024000$' \
	cat $C/cpu0/cpufreq/cpuinfo_max_freq
sleep 3
check_output "the cpufreq driver registered once for the bind" '^1$' \
	sh -c "grep -c ' reg: ' $T/trace"
echo 0 >"$T/events/fh/reg/enable"

check "rmmod (device reset)" rmmod virtio_freqhint
check_fails "the policy limit is gone with the driver" \
	test -e /sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq
check "insmod again" fh_insmod
# Tuning is the device's, and GR-16's measurement mode is built only for
# the benchmark (bench/guest): the product driver's parameters are the
# clamp source (GR-2c) and the transport's choice and vsock peer (issue 39).
check_output "the module parameters: clamp_source, transport, vsock_cid" \
	'^clamp_source transport vsock_cid$' \
	sh -c 'ls /sys/module/virtio_freqhint/parameters/ | paste -sd" "'
check_fails "no statistics in sysfs (they are in debugfs)" test -e "$dev/statistics"
check "the agent is connected again" wait_file "$dev/agent_connected" '^1$'
busy 1
check "vCPU1 busy again" wait_vcpu 1 'f["idle"]==0'
sleep 0.5
stop_busy
sleep 0.5

# Churn faster than the window on two vCPUs: at most one buffer per 200 ms,
# each carrying both vCPUs' latest state.  The clock is read before the
# first count and after the last, so [t0, t1] holds every counted send.
uptime_ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }
# The hintq's own interrupt line, where it has one (virtio-pci's MSI-X
# vector "virtioN-hintq"); "-" where its interrupt is shared.
hintq_irqs() {
	awk '/virtio[0-9]+-hintq/ { for (i = 2; $i ~ /^[0-9]+$/; i++) n += $i; f = 1 }
	     END { print f ? n : "-" }' /proc/interrupts
}
# Irq_work self-interrupts, all CPUs (x86's IWI line; "-" elsewhere).
iwi() {
	awk '$1 == "IWI:" { for (i = 2; $i ~ /^[0-9]+$/; i++) n += $i; f = 1 }
	     END { print f ? n : "-" }' /proc/interrupts
}
w0=$(iwi)
t0=$(uptime_ms)
b0=$(cat "$FH_STATS/buffers_sent")
r0=$(cat "$FH_STATS/records_sent")
c0=$(cat "$FH_STATS/hintq_callbacks")
d0=$(cat "$FH_STATS/send_deferred")
i0=$(hintq_irqs)
if [ "$expect" = uclamp ]; then
	busy 1 -m 0
	p1=$fh_pid
	busy 2 -m 0
	p2=$fh_pid
	i=0
	while [ $i -lt 40 ]; do
		uclampset -p "$p1" -m $(((i % 2) * 600))
		uclampset -p "$p2" -m $((((i + 1) % 2) * 600))
		i=$((i + 1))
	done
else
	churn 15 0.1
fi
stop_busy
sleep 0.5
b1=$(cat "$FH_STATS/buffers_sent")
r1=$(cat "$FH_STATS/records_sent")
c1=$(cat "$FH_STATS/hintq_callbacks")
d1=$(cat "$FH_STATS/send_deferred")
i1=$(hintq_irqs)
w1=$(iwi)
t1=$(uptime_ms)
echo "churn: $((b1 - b0)) buffers, $((r1 - r0)) records in $((t1 - t0)) ms"
echo "churn: $((c1 - c0)) hintq callbacks, $((d1 - d0)) sends deferred, hintq interrupts $i0 -> $i1, irq_work interrupts $w0 -> $w1"
check "buffers sent during the churn" test $((b1 - b0)) -ge 2
# The module times its window in jiffies from the jiffy of the last send,
# so two sends can be a jiffy short of 200 ms apart (4 ms at Debian's
# HZ=250), and /proc/uptime counts in 10 ms: allow 190 ms per window.
# Without the window, each of the churn's 30-80 changes could send one.
check "at most one buffer per 200 ms window (+1)" \
	test $((b1 - b0)) -le $(((t1 - t0 + 10) / 190 + 1))
check "buffers batch several vCPUs" test $((r1 - r0)) -gt $((b1 - b0))
# Nothing is lost to the missing hintq interrupts (below): the sender goes
# on sending, a send that found the buffer still the device's resumes on
# its return.  Three busy/idle rounds on vCPU1, each a buffer or two.
bn=$b1
for round in 1 2 3; do
	busy 1
	check "round $round: vCPU1 busy" wait_vcpu 1 'f["idle"]==0'
	stop_busy
	check "round $round: vCPU1 idle" wait_vcpu 1 'f["idle"]==1'
	check "round $round: sent (a buffer more at least)" \
		wait_ge "$FH_STATS/buffers_sent" $((bn + 1))
	bn=$(cat "$FH_STATS/buffers_sent")
done
b2=$(cat "$FH_STATS/buffers_sent")
c2=$(cat "$FH_STATS/hintq_callbacks")
d2=$(cat "$FH_STATS/send_deferred")
i2=$(hintq_irqs)
w2=$(iwi)
echo "churn and rounds: $((b2 - b0)) buffers, $((c2 - c0)) hintq callbacks, $((d2 - d0)) sends deferred, hintq interrupts $i0 -> $i2, irq_work interrupts $w0 -> $w2"
# A used hint buffer is taken back at the next send, without an interrupt;
# only a send that finds no buffer free asks the device for one.  With an
# interrupt per buffer, callbacks would equal buffers.
check "enough buffers to tell (at least 6)" test $((b2 - b0)) -ge 6
check "hintq callbacks at most a quarter of the buffers sent" \
	test $((4 * (c2 - c0))) -le $((b2 - b0))
if [ "$i0" != - ]; then
	check "and so are the hintq vector's interrupts" \
		test $((4 * (i2 - i0))) -le $((b2 - b0))
fi
check "rmmod" rmmod virtio_freqhint
check "no kernel warnings" dmesg_clean
done_testing
