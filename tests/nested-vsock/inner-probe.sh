#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The inner guest of run.sh --probe: nothing but the harness's /init, so
# that the outer test times a nested TCG boot alone.
. /lib/freqhint/test-lib.sh
check_output "the inner guest reached /test.sh under nested TCG" . cat /proc/uptime
check "its vsock transport is the virtio one (vhost-vsock-pci)" \
	grep -q virtio_vsock /proc/kallsyms
done_testing
