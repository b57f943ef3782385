#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest (hotplug-test.sh): 2 of 4 vCPUs present; QEMU hot-adds its slot
# 3, which Linux numbers 2.  The driver must map each CPU to the device's
# index through cpu_id[] (the APIC ID), not its Linux number.
. /lib/freqhint/test-lib.sh
. /lib/freqhint/fh-lib.sh

dev=
for d in /sys/bus/virtio/devices/*; do
	[ "$(cat "$d/device")" = 0x003f ] && dev=$d
done
check "a virtio device with ID 63 is present" test -n "$dev"
check "insmod virtio_freqhint" insmod "$FH_KO"
check "vCPU0 is index 0" vcpu_holds 0 'f["vcpu"]==0'
check "vCPU1 is index 1" vcpu_holds 1 'f["vcpu"]==1'
check_fails "no Linux CPU 2 yet" test -e /sys/devices/system/cpu/cpu2

echo "FREQHINT-HOTPLUG: add"
i=0
while [ $i -lt 300 ] && ! [ -e /sys/devices/system/cpu/cpu2/online ]; do
	sleep 0.1
	i=$((i + 1))
done
check "QEMU's slot 3 arrives as Linux CPU 2" test -e /sys/devices/system/cpu/cpu2/online
check "online it" sh -c 'echo 1 >/sys/devices/system/cpu/cpu2/online'
check_output "its APIC ID is 3" '^3$' sh -c \
	"awk '/^processor/ { p = \$3 } /^apicid/ && p == 2 { print \$3 }' /proc/cpuinfo"
check "Linux CPU 2 reports as the device's index 3" \
	wait_vcpu 2 'f["vcpu"]==3 && f["online"]==1' 10
busy 2
check "and its load is seen" wait_vcpu 2 'f["idle"]==0'
stop_busy
check_output "no CPU left without an index" '^0$' cat "$dev/statistics/unmapped_cpus"
check "rmmod" rmmod virtio_freqhint
check "no kernel warnings" dmesg_clean
done_testing
