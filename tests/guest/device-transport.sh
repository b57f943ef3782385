#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# In-guest, before any freqhint driver exists for the guest: the device the
# host attached is found on the transport the kernel command line names,
# with virtio device ID 56.  (Whether virtio-mmio runs in modern mode only a
# driver can see, when VERSION_1 is negotiated: the module's tests check it.)
#   freqhint.transport=pci    -device virtio-freqhint-pci (PCI 1af4:1078)
#   freqhint.transport=mmio   -device virtio-freqhint-device on a virtio-mmio
#                             transport
. /lib/freqhint/test-lib.sh

transport=$(sed -n 's/.*freqhint\.transport=\([a-z]*\).*/\1/p' /proc/cmdline)
check "the command line names the transport ($transport)" \
	test "$transport" = pci -o "$transport" = mmio

dev=
for d in /sys/bus/virtio/devices/*; do
	[ "$(cat "$d/device" 2>/dev/null)" = 0x0038 ] && dev=$d
done
check "a virtio device with ID 56 (0x0038)" test -n "$dev"
echo "freqhint device: $dev -> $(readlink -f "$dev")"

case "$transport" in
pci)
	check_output "its parent is a PCI function" '/pci[0-9a-f:]+/' readlink -f "$dev"
	check_output "whose IDs are 1af4:1078 (modern-only ID 0x1040 + 56)" \
		'^0x1af4 0x1078$' sh -c "cd $(readlink -f "$dev")/.. && echo \$(cat vendor device)"
	;;
mmio)
	check_output "its parent is a virtio-mmio transport" '\.virtio_mmio/' readlink -f "$dev"
	;;
esac
done_testing
