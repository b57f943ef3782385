#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest, no virtio-freqhint device: the module binds nothing and so does
# nothing; then the KUnit tests (virtio_freqhint_test.ko: window, bucket,
# hysteresis, publish/consume protocol) run and must all pass.
. /lib/freqhint/test-lib.sh
. /lib/freqhint/fh-lib.sh

check "insmod virtio_freqhint without a device" insmod "$FH_KO"
check_output "the module is loaded" '^virtio_freqhint ' cat /proc/modules
check_fails "no cpufreq driver registered" \
	test -e /sys/devices/system/cpu/cpu0/cpufreq/scaling_driver
check_fails "no debugfs state" test -e /sys/kernel/debug/virtio_freqhint
check_fails "no sampler or probe message" sh -c 'dmesg | grep -q "clamp source"'
check "rmmod" rmmod virtio_freqhint

# The tests call virtio_freqhint's functions (exported for KUnit only).
check "insmod virtio_freqhint again, for the tests" insmod "$FH_KO"
check "insmod the KUnit tests" insmod /modules/virtio_freqhint_test.ko
dmesg | sed -n '/Subtest: virtio_freqhint/,/ok [0-9]* virtio_freqhint$/p'
check_output "the virtio_freqhint suite passed" '^ok [0-9]+ virtio_freqhint$' \
	sh -c 'dmesg | sed "s/^\[[ 0-9.]*\] *//"'
check_fails "no test case failed" sh -c 'dmesg | grep -q "not ok"'
check_output "the publish/consume stress ran rounds without a stale read" \
	'[0-9]+ rounds, 0 stale' dmesg
check "no kernel warnings" dmesg_clean
done_testing
