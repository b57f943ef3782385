#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest: the hintq sender when every buffer is the device's.  The
# module's benchmark build (FH_BENCH_ANCHOR) loaded with
# notify_every_change=1 keeps up to 16 buffers in flight and sends each
# change at once, while the device (rate-window-ms=200) takes buffers once
# per window: a churn of changes uses them all.  Used buffers have no
# interrupt (DRV-23); a send that finds none free must arm one
# (virtqueue_enable_cb_delayed()), and the sender must resume when the
# device returns them.
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=fh-lib.sh
. /lib/freqhint/fh-lib.sh

taskset -p 8 $$ >/dev/null
housekeeping_to 9
check "insmod notify_every_change=1 (the anchor build)" \
	fh_insmod notify_every_change=1
sleep 1
b0=$(cat "$FH_STATS/buffers_sent")
c0=$(cat "$FH_STATS/hintq_callbacks")
d0=$(cat "$FH_STATS/send_deferred")
churn 40 0.05
b1=$(cat "$FH_STATS/buffers_sent")
c1=$(cat "$FH_STATS/hintq_callbacks")
d1=$(cat "$FH_STATS/send_deferred")
echo "churn: $((b1 - b0)) buffers, $((c1 - c0)) hintq callbacks, $((d1 - d0)) sends deferred"
check "sends were deferred: every buffer was the device's" test $((d1 - d0)) -gt 0
check "more buffers went than are in flight (16)" test $((b1 - b0)) -gt 16
check "the hintq callback was armed and came" test $((c1 - c0)) -gt 0
# Nothing is lost: after the churn, vCPU1's busy and idle records go out.
busy 1
check "vCPU1 busy after the churn" wait_vcpu 1 'f["idle"]==0'
stop_busy
check "vCPU1 idle after the churn" wait_vcpu 1 'f["idle"]==1'
check "the sender resumed (2 more buffers)" \
	wait_ge "$FH_STATS/buffers_sent" $((b1 + 2))
check_output "no send errors" '^0$' cat "$FH_STATS/send_errors"
check "rmmod" rmmod virtio_freqhint
check "no kernel warnings" dmesg_clean
done_testing
