#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# vCPU identity across hot-plug (issue 13, item 8): a guest with 2 of 4
# vCPUs asks for one more; hotplug-qmp.py adds QEMU's last slot (index 3),
# which Linux numbers 2.  hotplug.sh checks the driver maps it to index 3.
# Needs a device with cpu_id[] and a kernel with ACPI CPU hot-plug
# (Debian's stock kernel).
#
#   hotplug-test.sh KERNEL EXPECT LOG
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

[ $# = 3 ] || die "usage: $0 stock uclamp|nouclamp LOG"
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
# possible_cpus: without it Debian's 6.12 under this QEMU reserved no
# logical CPU for the hot-added one ("ACPI: Unable to map lapic to logical
# cpu number").
"$PYTHON3" "$tdir/hotplug-qmp.py" --qmp "$work/qmp.sock" --log "$log" \
	>"$work/qmp.log" 2>&1 &
helper=$!
grc=0
"$tdir/run-guest-test.sh" "$kernel" "$expect" "$tdir/hotplug.sh" "$log" \
	--smp 2,maxcpus=4 --append possible_cpus=4 -- \
	-qmp "unix:$work/qmp.sock,server=on,wait=off" \
	-device virtio-freqhint-pci || grc=$?
hrc=0
wait "$helper" || hrc=$?
helper=
sed 's/^/qmp: /' "$work/qmp.log"
[ "$grc" = 0 ] || die "guest side failed"
[ "$hrc" = 0 ] || die "hot-plug helper failed"
log "PASS: a hot-added vCPU reports its QEMU index"
