#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest (curfreq-test.sh --script events-vsock.sh): events-idle.sh's
# case over vsock.  tests/fake-vsock-host.c on CID 1 (vsock_loopback) sends
# a CUR_FREQ every 10 ms; the vsock link receives them on its own thread,
# which counts as idle time on the vCPU it runs on, as the sender does.
# That thread is pinned to the idle vCPU1, the sender and the fake host
# to vCPU0.
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=fh-lib.sh
. /lib/freqhint/fh-lib.sh

taskset -p 1 $$ >/dev/null
housekeeping_to 9
P=/tmp/peer.log

for m in vsock vmw_vsock_virtio_transport_common vsock_loopback; do
	check "insmod $m" insmod "/modules/$m.ko"
done
fh-fake-vsock-host -a 0x1f -e 10 >"$P" 2>&1 &
check "the peer listens" wait_file "$P" '^LISTENING' 10
check "insmod virtio_freqhint vsock_cid=1" insmod "$FH_KO" vsock_cid=1
check "the link is up" wait_file /sys/kernel/debug/virtio_freqhint_vsock/state '^up ' 10
check "CUR_FREQ events arrive" wait_file "$FH_STATS/cur_freq_applied" '^[1-9]' 10

check "the sender is pinned to vCPU0" taskset -p 1 "$(sender_pid)"
check "the link's thread is pinned to vCPU1" \
	taskset -p 2 "$(comm_pid virtio_freqhint_vsock)"
check "vCPU1 idle" wait_vcpu 1 'f["idle"]==1' 10
sleep 1
idle_under_messages 1 "the link's thread"
check_output "none out of class, invalid or stale" '^0 0 0$' \
	sh -c "echo \$(cat $FH_STATS/cur_freq_out_of_class $FH_STATS/cur_freq_invalid $FH_STATS/cur_freq_stale)"

# The thread is freezable (no connect or receive while suspended): no
# PF_NOFREEZE (0x8000) in its flags, the 7th field after the name.  The
# control: the sender's worker is not freezable.
freezable() {
	sed 's/^.*) //' "/proc/$1/stat" | awk '{ exit int($7 / 32768) % 2 }'
}
check "the link's thread is freezable" freezable "$(comm_pid virtio_freqhint_vsock)"
check_fails "(the sender is not)" freezable "$(sender_pid)"
check "a suspend cycle (pm_test=devices) while CUR_FREQ arrives" pm_suspend_cycle
check_fails "every task froze" sh -c "dmesg | grep -i 'freezing.*failed'"
a1=$(cat "$FH_STATS/cur_freq_applied")
check "CUR_FREQ is received and applied after resume" \
	wait_ge "$FH_STATS/cur_freq_applied" $((a1 + 21))
check "rmmod virtio_freqhint" rmmod virtio_freqhint
check "no kernel warnings" dmesg_clean
