#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest, with the benchmark build of the module (FREQHINT_BENCH_ANCHOR=y)
# and a virtio-freqhint-pci device.  reporting_off=1, the anchor of the
# module's cost to the guest (bench/guest/bench-guest.sh guest_cost), keeps
# the device bound and the cpufreq driver registered under schedutil, but
# no clamp source runs, no vCPU's window ends and nothing is sent while
# vCPUs are busy with clamped tasks.  Loaded again without it, the same
# module does all three (so these checks can fail).
. /lib/freqhint/test-lib.sh
. /lib/freqhint/fh-lib.sh

# windows=N of every vCPU, and the buffers sent so far.
activity() {
	echo "$(grep -o 'windows=[0-9]*' "$FH_DBG" | paste -sd' ') sent=$(cat "$FH_STATS/buffers_sent")"
}
# 2 s of clamped and pulsing tasks on vCPUs 1-3.
load() {
	busy 1 -m 800
	pulse 2
	busy 3 -M 200
	sleep 2
	stop_busy
}
clamp_source() { cat /sys/kernel/debug/virtio_freqhint/clamp_source; }

check "insmod virtio_freqhint reporting_off=1" fh_insmod reporting_off=1
check_output "reporting_off is set" '^Y$' cat /sys/module/virtio_freqhint/parameters/reporting_off
check "the device is bound" sh -c 'ls -d /sys/bus/virtio/drivers/virtio_freqhint/virtio*'
check_output "its cpufreq driver is registered" '^virtio-freqhint$' \
	cat /sys/devices/system/cpu/cpufreq/policy1/scaling_driver
check_output "under schedutil" '^schedutil$' \
	cat /sys/devices/system/cpu/cpufreq/policy1/scaling_governor
check_output "no clamp source" '^none$' clamp_source
a0=$(activity)
load
a1=$(activity)
check "no window ended and nothing was sent under load ($a0 -> $a1)" test "$a1" = "$a0"
check "rmmod" rmmod virtio_freqhint

check "insmod virtio_freqhint" fh_insmod
check_output "a clamp source" '^[a-z_]+$' clamp_source
check_fails "not none" grep -qx none /sys/kernel/debug/virtio_freqhint/clamp_source
w0=$(vcpu_field 1 windows) s0=$(cat "$FH_STATS/buffers_sent")
load
w1=$(vcpu_field 1 windows) s1=$(cat "$FH_STATS/buffers_sent")
check "vCPU1's windows end under load ($w0 -> $w1)" test "$w1" -gt "$w0"
check "buffers are sent under load ($s0 -> $s1)" test "$s1" -gt "$s0"
check "rmmod" rmmod virtio_freqhint
check "no kernel warnings" dmesg_clean
done_testing
