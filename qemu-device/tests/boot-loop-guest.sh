#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# In-guest part of boot-loop.sh: the guest got through PCI setup, and the
# device is there exactly when the command line says so.
. /lib/freqhint/test-lib.sh

want=$(sed -n 's/.*freqhint\.device=\([a-z]*\).*/\1/p' /proc/cmdline)
n=$(grep -l 0x107f /sys/bus/pci/devices/*/device 2>/dev/null | wc -l)
if [ "$want" = yes ]; then
	check "virtio-freqhint-pci (1af4:107f) is on the PCI bus" test "$n" = 1
else
	check "no virtio-freqhint-pci on the PCI bus" test "$n" = 0
fi
done_testing
