#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# vCPU identity across hot-plug (issue 13, item 8): QEMU has 4 slots, one
# vCPU per socket; slot 0 and (cold-plugged) slot 3 are present at boot, so
# Linux numbers QEMU's index 3 as CPU 1.  hotplug-qmp.py then hot-adds slot
# 1 (Linux CPU 2) and slot 2 (Linux CPU 3) when hotplug.sh asks, checks
# QEMU's cpu-index and APIC ID of each, and that the device receives CPU 2's
# load under index 1.  Needs a device with F_CPU_ID and a kernel with ACPI
# CPU hot-plug.
#
# Two things make x86 CPU hot-add work in a TCG guest of Linux 6.12:
# - Linux counts QEMU's disabled MADT LAPIC entries (MADT revision 3, no
#   "online capable" bit) as hot-pluggable only when it runs on a detected
#   hypervisor (acpi_is_processor_usable() in arch/x86/kernel/acpi/boot.c);
#   TCG shows none, so every hot-add failed with "ACPI: Unable to map lapic
#   to logical cpu number" ("Allowing 2 present CPUs plus 0 hotplug CPUs"
#   at boot).  The guest is made to detect VMware the way Linux does
#   without a CPUID signature: no hypervisor CPUID bit, "VMware" in the
#   DMI serial number, and the VMware backdoor port answering (QEMU's
#   vmport, on by default on q35).  Linux's VMware support comes with
#   CONFIG_HYPERVISOR_GUEST: Debian's kernel has it, the project's uclamp
#   kernel does not, so this test runs on the stock kernel only.
# - One socket per vCPU: QEMU's default topology for -smp 1,maxcpus=4 is one
#   socket of 4 cores.
#
#   hotplug-test.sh KERNEL EXPECT LOG
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

[ $# = 3 ] || die "usage: $0 stock uclamp|nouclamp LOG"
[ "$1" = stock ] || die "the uclamp kernel has no CONFIG_HYPERVISOR_GUEST: no hot-add under TCG"
kernel=$1 expect=$2 log=$3
tdir=$(dirname "$0")

work=$(mktemp -d)
helper=
cleanup() {
	[ -n "$helper" ] && kill "$helper" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

: >"$log"
"$PYTHON3" "$tdir/hotplug-qmp.py" --qmp "$work/qmp.sock" --log "$log" \
	--device fh >"$work/qmp.log" 2>&1 &
helper=$!
grc=0
# The CPU type is the one run-guest.sh's default -cpu model makes.  Each
# vCPU on its own host thread: QEMU 10.0's single-threaded TCG aborts on
# device_del of a vCPU ("qemu_thread_join: Resource deadlock avoided").
"$tdir/run-guest-test.sh" "$kernel" "$expect" "$tdir/hotplug.sh" "$log" \
	--tcg-thread multi --smp 1,maxcpus=4,sockets=4,cores=1,threads=1 \
	--cpu qemu64,vendor=GenuineIntel,family=6,model=85,hypervisor=off -- \
	-smbios type=1,serial=VMware-freqhint-hotplug \
	-device qemu64-x86_64-cpu,socket-id=3,core-id=0,thread-id=0,id=coldcpu3 \
	-qmp "unix:$work/qmp.sock,server=on,wait=off" \
	-device virtio-freqhint-pci,id=fh,rate-window-ms=1000 || grc=$?
guest_helper_end "$grc" helper "$work/qmp.log"
log "PASS: hot-added vCPUs report their QEMU index"
