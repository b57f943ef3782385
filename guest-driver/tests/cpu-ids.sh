#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest (one virtio-freqhint-pci, F_CPU_ID): every online CPU maps to the
# device's vCPU index through its firmware id (DRV-10), also CPUs whose
# firmware id is not their Linux number.
#
# arm64 (virt): the firmware id is the MPIDR affinity, which QEMU builds as
# Aff0 = index % 16, Aff1 = index / 16 (GICv3 target lists), so with more
# than 16 vCPUs CPU16's MPIDR is 0x100.  Linux numbers the CPUs in device
# tree order, which is QEMU's index order, so every CPU must show vcpu=N:
# a driver that took the Linux number for the firmware id (16 is not in the
# device's list), truncated the MPIDR, or read it on another CPU than the
# one it maps leaves a CPU unmapped (vcpu=-1) or mapped to another index.
# The kernel's own boot lines ("Booted secondary processor 0x...") show
# the MPIDRs, so the test checks it has a CPU with Aff1 set.
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=fh-lib.sh
. /lib/freqhint/fh-lib.sh

ncpu=$(grep -c '^processor' /proc/cpuinfo)
echo "# $(uname -m), $ncpu CPUs"
fh_probe
check_output "CPU_ID negotiated: vCPU indexes by firmware id" \
	'vCPU indexes by firmware id' dmesg
check_output "the device counts every vCPU" "^$ncpu\$" cat /sys/kernel/debug/virtio_freqhint/num_vcpus

if [ "$(uname -m)" = aarch64 ]; then
	dmesg | grep 'Booted secondary processor' | sed 's/^\[[ 0-9.]*\] */# /'
	check_output "a CPU whose MPIDR has Aff1 set (0x100: the 17th vCPU)" \
		'CPU16: Booted secondary processor 0x0000000100 ' dmesg
fi

# all_mapped: every online CPU's debugfs line says vcpu=N for cpuN.
all_mapped() {
	ok=0
	for c in $(seq 0 $((ncpu - 1))); do
		v=$(vcpu_field "$c" vcpu)
		[ "$v" = "$c" ] || { echo "cpu$c: vcpu=$v"; ok=1; }
	done
	return $ok
}
check "every CPU maps to its QEMU vCPU index (cpuN: vcpu=N)" all_mapped

# A CPU that goes down and comes back reads its id again, on itself.
last=$((ncpu - 1))
taskset -p 1 $$ >/dev/null
check "cpu$last offline" sh -c "echo 0 >/sys/devices/system/cpu/cpu$last/online"
check "cpu$last online" sh -c "echo 1 >/sys/devices/system/cpu/cpu$last/online"
check "cpu$last maps to vCPU $last again" wait_vcpu "$last" "f[\"vcpu\"]==$last && f[\"online\"]==1"
check "every CPU still maps to its index" all_mapped

busy "$last"
check "a task on cpu$last is seen there" wait_vcpu "$last" 'f["idle"]==0'
stop_busy
check "rmmod" rmmod virtio_freqhint
check "no kernel warnings" dmesg_clean
done_testing
