#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Runs inside the test guest (as /test.sh, see tests/harness/mkinitramfs.sh)
# for guest-test.sh: load the module, then keep one task on vCPU 1 asking
# for a floor of 800 (uclampset) and spinning, until the host destroys the
# VM.  Says "FH-GUEST-READY" on the console when the load runs.
. /lib/freqhint/test-lib.sh

check "module loads" insmod /modules/virtio_freqhint.ko
check "device bound" sh -c 'ls /sys/bus/virtio/drivers/virtio_freqhint/ | grep -q virtio'
uclampset -m 800 -M 1024 /bin/busy --cpu 1 --duty 100 &
sleep 1
kill -0 $! || { echo "busy did not start"; exit 1; }
echo "FH-GUEST-READY"
# The host ends this with virsh destroy.
while :; do sleep 10; done
