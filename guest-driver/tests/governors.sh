#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest, booted with cpufreq.default_governor=G (performance, powersave
# or userspace) and two virtio-freqhint-pci devices.  Those governors set
# the frequency once, while the driver's policies are created, and never
# again: that one request must reach the records (issue 13, bug 2).  The
# second device must be refused with a clear message.
. /lib/freqhint/test-lib.sh
. /lib/freqhint/fh-lib.sh

gov=$(sed -n 's/.*cpufreq\.default_governor=\([a-z]*\).*/\1/p' /proc/cmdline)
check "the command line names a governor ($gov)" test -n "$gov"
taskset -p 8 $$ >/dev/null

check "insmod virtio_freqhint" fh_insmod
check "debugfs vcpus exists" test -r "$FH_DBG"
for c in 0 1 2 3; do
	check_output "policy $c runs $gov" "^$gov\$" \
		cat /sys/devices/system/cpu/cpu$c/cpufreq/scaling_governor
done
max=$(cat /sys/devices/system/cpu/cpu1/cpufreq/cpuinfo_max_freq)
min=$(cat /sys/devices/system/cpu/cpu1/cpufreq/cpuinfo_min_freq)
case "$gov" in
	powersave) want=$((min * 1024 / max)); [ "$want" -ge 1 ] || want=1 ;;
	*) want=1024 ;;
esac
busy 1
check "a busy vCPU1's record carries the $gov request (perf $want)" \
	wait_vcpu 1 "f[\"idle\"]==0 && f[\"perf\"]==$want"
check "and keeps it (no later request replaces it)" \
	steady_vcpu 1 "f[\"perf\"]==$want" 1
stop_busy

n=0
for d in /sys/bus/virtio/devices/*; do
	[ "$(cat "$d/device")" = 0x0038 ] || continue
	n=$((n + 1))
	[ -e "$d/driver" ] && bound=$((${bound:-0} + 1))
done
check "two freqhint devices are present" test "$n" = 2
check "exactly one is bound" test "${bound:-0}" = 1
check_output "the second is refused with a clear message" \
	'second virtio-freqhint device is not supported' dmesg
check "rmmod" rmmod virtio_freqhint
check "no kernel warnings" dmesg_clean
done_testing
