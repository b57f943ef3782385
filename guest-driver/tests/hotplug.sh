#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest (hotplug-test.sh): QEMU has 4 vCPU slots, one per socket (APIC
# ID = QEMU index); slots 0 and 3 are present at boot, so Linux numbers
# QEMU's index 3 as CPU 1.  The host then hot-adds slot 1 (Linux CPU 2) and,
# once the device saw that CPU's load under index 1, slot 2 (Linux CPU 3).
# The driver must map each CPU to the device's index through the device's
# CPU_IDS message (the APIC ID), not its Linux number.  Then (issue 27 bug
# 6) the host unplugs slot 2 while Linux CPU 3 is busy: the device must end
# up with "no hint" for index 2, although the eject clears the CPU's APIC
# ID and present bit before the sender runs.  The host checks that from
# the device's x-stats (hotplug-qmp.py's exit status); it cannot add the
# slot back as an answer (QEMU's TCG has no context for a re-plugged vCPU
# and aborts), so the guest gives it 10 s.
. /lib/freqhint/test-lib.sh
. /lib/freqhint/fh-lib.sh

dev=
for d in /sys/bus/virtio/devices/*; do
	[ "$(cat "$d/device")" = 0x0038 ] && dev=$d
done
check "a virtio device with ID 56 is present" test -n "$dev"
taskset -p 1 $$ >/dev/null

# apicid CPU: the APIC ID Linux gives CPU.
apicid() {
	awk -v c="$1" '/^processor/ { p = $3 } /^apicid/ && p == c { print $3 }' /proc/cpuinfo
}
# wait_cpu CPU: its sysfs directory appears (hot-added) within 120 s.
wait_cpu() {
	i=0
	while [ $i -lt 1200 ] && ! [ -e "/sys/devices/system/cpu/cpu$1/online" ]; do
		sleep 0.1
		i=$((i + 1))
	done
	test -e "/sys/devices/system/cpu/cpu$1/online"
}

check_output "two CPUs at boot" '^0-1$' cat /sys/devices/system/cpu/online
check_output "Linux CPU 1 has APIC ID 3 (QEMU's slot 3)" '^3$' apicid 1
check "insmod virtio_freqhint" fh_insmod
check_output "the device has 4 vCPU indexes" '^4$' cat /sys/kernel/debug/virtio_freqhint/num_vcpus
check "Linux CPU 0 reports as index 0" wait_vcpu 0 'f["vcpu"]==0'
check "Linux CPU 1 reports as index 3" wait_vcpu 1 'f["vcpu"]==3'
check_fails "no Linux CPU 2 yet" test -e /sys/devices/system/cpu/cpu2

echo "FREQHINT-HOTPLUG: add 1"
check "QEMU's slot 1 arrives as Linux CPU 2" wait_cpu 2
check "online it" sh -c 'echo 1 >/sys/devices/system/cpu/cpu2/online'
check_output "its APIC ID is 1" '^1$' apicid 2
check "Linux CPU 2 reports as the device's index 1" \
	wait_vcpu 2 'f["vcpu"]==1 && f["online"]==1' 10
busy 2
check "and its load is seen" wait_vcpu 2 'f["idle"]==0'
# The host checks that the device holds a busy record for index 1 (and
# none for index 2), then hot-adds slot 2: CPU 3 appearing is its answer.
echo "FREQHINT-HOTPLUG: busy 1"
check "the device saw index 1 busy (the host then added slot 2 as Linux CPU 3)" \
	wait_cpu 3
stop_busy
check "online it" sh -c 'echo 1 >/sys/devices/system/cpu/cpu3/online'
check_output "its APIC ID is 2" '^2$' apicid 3
check "Linux CPU 3 reports as the device's index 2" \
	wait_vcpu 3 'f["vcpu"]==2 && f["online"]==1' 10
check_output "no CPU left without an index" '^0$' cat "$FH_STATS/unmapped_cpus"

# wait_gone CPU: its sysfs directory goes (hot-removed) within 120 s.
wait_gone() {
	i=0
	while [ $i -lt 1200 ] && [ -e "/sys/devices/system/cpu/cpu$1" ]; do
		sleep 0.1
		i=$((i + 1))
	done
	! test -e "/sys/devices/system/cpu/cpu$1"
}
busy 3
check "Linux CPU 3 (index 2) busy" wait_vcpu 3 'f["idle"]==0' 10
# A send now (Linux CPU 1 leaves idle) opens a 1 s rate window (the device's
# rate-window-ms here): the unplugged CPU's "no hint" record then waits
# for its end, well after the eject has cleared the CPU's APIC ID.
busy 1
echo "FREQHINT-HOTPLUG: remove 2"
check "the host ejects QEMU's slot 2: Linux CPU 3 goes" wait_gone 3
stop_busy
sleep 10
check_output "no CPU left without an index" '^0$' cat "$FH_STATS/unmapped_cpus"
check "rmmod" rmmod virtio_freqhint
check "no kernel warnings" dmesg_clean
done_testing
