#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest: virtio_freqhint with a virtio-freqhint-pci whose optional
# features are turned off on the QEMU side (meson: module-features-*).
# What was negotiated decides what the driver does, never a field's value:
#  - without F_CPU_ID, vCPU indexes are the Linux CPU numbers, and records
#    flow without any CPU_IDS message;
#  - without F_FEEDBACK, there is no host feedback: no agent, operator
#    0..1024, every grant 0..1024, synthetic frequencies;
#  - F_HOST_FREQ is never accepted without F_FEEDBACK;
#  - with neither, the device has no event queue at all;
#  - without PERF and HOST_FREQ nothing needs a cpufreq driver: none is
#    registered.
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=fh-lib.sh
. /lib/freqhint/fh-lib.sh

taskset -p 8 $$ >/dev/null
fh_probe
f=$(cut -c1-4 "$dev/features")
echo "negotiated PERF FEEDBACK HOST_FREQ CPU_ID: $f"
fb=$(echo "$f" | cut -c2) hf=$(echo "$f" | cut -c3) id=$(echo "$f" | cut -c4)
check "HOST_FREQ only with FEEDBACK" test "$hf" = 0 -o "$fb" = 1
busy 1
check "vCPU1 reports" wait_vcpu 1 'f["idle"]==0' 10
check "records were sent" wait_file "$FH_STATS/records_sent" '^[1-9]'
check_output "no CPU without an index" '^0$' cat "$FH_STATS/unmapped_cpus"
stop_busy
if [ "$id" = 0 ]; then
	for c in 0 1 2 3; do
		check_output "cpu$c: index $c (the Linux CPU number, no F_CPU_ID)" \
			"vcpu=$c " vcpu_line "$c"
	done
	check_output "the load message says so" 'vCPU indexes by Linux CPU number' dmesg
fi
if [ "$fb" = 0 ]; then
	check_output "no agent without F_FEEDBACK" '^0$' cat "$dev/agent_connected"
	check_output "operator ceiling 1024" '^1024$' cat "$dev/operator_ceiling"
	check_output "grants 0..1024" '^1024 1024 1024 1024$' cat "$FH_GRANTS/granted_ceiling"
	check_output "no snapshot" '^0$' cat "$FH_STATS/feedback_applied"
	if [ "$(echo "$f" | cut -c1)" = 1 ]; then
		check_output "synthetic frequencies" '^1024000$' \
			cat /sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq
	fi
fi
pf=$(echo "$f" | cut -c1)
if [ "$pf" = 0 ] && [ "$hf" = 0 ]; then
	# Nothing needs a cpufreq driver: the system's one slot stays free.
	check_fails "no cpufreq driver without PERF or HOST_FREQ" \
		test -e /sys/devices/system/cpu/cpufreq/policy0
	check_fails "nor its auxiliary device" \
		test -e /sys/bus/auxiliary/devices/virtio_freqhint.cpufreq.0
else
	check_output "the cpufreq driver is ours" '^virtio-freqhint$' \
		cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_driver
	check "bound to its auxiliary device (Debian's kernel has the bus)" \
		test -e /sys/bus/auxiliary/drivers/virtio_freqhint.cpufreq/virtio_freqhint.cpufreq.0
fi
if [ "$fb" = 0 ] && [ "$id" = 0 ]; then
	check_fails "no event queue (no eventq interrupt)" \
		grep -q 'virtio[0-9]*-eventq' /proc/interrupts
fi
check_output "no event dropped" '^0$' cat "$FH_STATS/events_invalid"
check "rmmod" rmmod virtio_freqhint
check "no kernel warnings" dmesg_clean
done_testing
