#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest (curfreq-test.sh): VIRTIO_FREQHINT_F_CUR_FREQ over vsock, to
# tests/fake-vsock-host.c on CID 1 through vsock_loopback: the host's
# current frequency per vCPU becomes cpuinfo_cur_freq (->get); a stale
# seq is dropped, a value outside its class is counted and unknown, a
# short message is dropped, counted and ends the connection, and the next
# connection's seq starts again; a host accepting CUR_FREQ without
# HOST_FREQ is taken as not accepting it (DRV-39).  On arm64 the values
# are the scheduler's frequency-invariance source: arch_freq_scale follows
# them on busy CPUs.
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=fh-lib.sh
. /lib/freqhint/fh-lib.sh

taskset -p 1 $$ >/dev/null
C=/sys/devices/system/cpu/cpufreq
VS=/sys/kernel/debug/virtio_freqhint_vsock
CF=/sys/kernel/debug/virtio_freqhint/cur_freq
P=/tmp/peer.log
F=/tmp/cur.fifo
arm=0
[ "$(uname -m)" = aarch64 ] && arm=1

for m in vsock vmw_vsock_virtio_transport_common vsock_loopback; do
	check "insmod $m" insmod "/modules/$m.ko"
done
mkfifo "$F"
fh-fake-vsock-host -a 0x1f -f "$F" >"$P" 2>&1 &
peer=$!
check "the peer listens" wait_file "$P" '^LISTENING' 10

# send SEQ KHZ...: a CUR_FREQ from the host.
send() { echo "$*" >"$F"; }
# stat NAME: the driver's counter NAME.
stat() { cat "$FH_STATS/$1"; }
# cur CPU KHZ: debugfs shows KHZ as CPU's current frequency within 10 s.
cur() { wait_file "$CF" "^cpu$1 cur_khz=$2 " 10; }
# cpuinfo CPU KHZ: cpuinfo_cur_freq of CPU's policy is KHZ within 10 s.
cpuinfo() { wait_file "$C/policy$1/cpuinfo_cur_freq" "^$2\$" 10; }
# same_as_request CPU: cpuinfo_cur_freq equals scaling_cur_freq (the
# governor's request, which may move between the reads: 5 s to agree).
same_as_request() {
	i=0
	while [ $i -lt 50 ]; do
		a=$(cat "$C/policy$1/cpuinfo_cur_freq")
		b=$(cat "$C/policy$1/scaling_cur_freq")
		[ "$a" = "$b" ] && { echo "$a"; return 0; }
		sleep 0.1
		i=$((i + 1))
	done
	echo "cpuinfo_cur_freq $a, scaling_cur_freq $b"
	return 1
}

check "insmod virtio_freqhint vsock_cid=1" insmod "$FH_KO" vsock_cid=1
check_output "HELLO offers CUR_FREQ (0x10)" '^HELLO version=1 features=0x1f ' \
	wait_file "$P" '^HELLO' 10
check "cpufreq registers after the host's snapshot" \
	wait_file $C/policy0/scaling_driver '^virtio-freqhint$' 10
check "connection 1 carries the whole state" wait_file "$P" '^REC 1 vcpu=3 ' 10
check_output "dmesg: features 0x1f" 'features 0x1f' dmesg
check_output "nothing known yet: cur_khz=0" '^cpu1 cur_khz=0 ' cat "$CF"
# Unknown: the governor's last request, never <unknown> (the core fails
# a policy whose ->get gives 0).
check_output "cpuinfo_cur_freq exists: the request meanwhile" '^[0-9]+$' \
	cat $C/policy1/cpuinfo_cur_freq

send 1 3200000 2400000 1600000 0
check "CUR_FREQ seq 1 sent" wait_file "$P" '^CUR_FREQ 1 seq=1 len=24$' 10
check "cpu1: cur_khz=2400000" cur 1 2400000
check "cpu0: cpuinfo_cur_freq is the host's 3.2 GHz" cpuinfo 0 3200000
check "cpu1: cpuinfo_cur_freq is the host's 2.4 GHz" cpuinfo 1 2400000
check "cpu2: cpuinfo_cur_freq is the host's 1.6 GHz" cpuinfo 2 1600000
check_output "cpu3: unknown (0)" '^cpu3 cur_khz=0 ' cat "$CF"
check_output "one CUR_FREQ applied" '^1$' stat cur_freq_applied

if [ $arm = 1 ]; then
	# The tick writes arch_freq_scale on a CPU that runs: keep them busy.
	for c in 0 1 2 3; do busy $c; done
	check "cpu1: the scheduler took the source (its ticks run it)" \
		wait_file "$CF" '^cpu1 cur_khz=2400000 freq_scale=[0-9]+ fie_ticks=[1-9]' 10
	check "cpu0: arch_freq_scale 1024 (3.2 of 3.2 GHz)" \
		wait_file "$CF" '^cpu0 cur_khz=3200000 freq_scale=1024 ' 10
	check "cpu1: arch_freq_scale 768 (2.4 of 3.2 GHz)" \
		wait_file "$CF" '^cpu1 cur_khz=2400000 freq_scale=768 ' 10
	check "cpu2: arch_freq_scale 512 (1.6 of 3.2 GHz)" \
		wait_file "$CF" '^cpu2 cur_khz=1600000 freq_scale=512 ' 10
	grep . "$CF"
	# cpu1 idle again: its request leaves the 2.4 GHz of a busy CPU.
	stop_busy
fi

send 1 800000 800000 800000 800000
check "a stale CUR_FREQ (seq 1 again) is counted" \
	wait_file "$FH_STATS/cur_freq_stale" '^1$' 10
check_output "... and dropped: cpu1 still 2.4 GHz" '^2400000$' \
	cat $C/policy1/cpuinfo_cur_freq
check_output "... cpu2 still 1.6 GHz" '^cpu2 cur_khz=1600000 ' cat "$CF"

# The class is 800 MHz - 3.2 GHz: 5 GHz and 700 MHz are out of it.
send 2 3200000 5000000 700000 800000
check "out-of-class values are counted" \
	wait_file "$FH_STATS/cur_freq_out_of_class" '^2$' 10
check "cpu1: out of class, unknown" cur 1 0
check "cpu2: out of class, unknown" cur 2 0
check "cpu3: in class, taken" cur 3 800000
check_output "cpu0: taken" '^3200000$' cat $C/policy0/cpuinfo_cur_freq
check "cpu1: cpuinfo_cur_freq is the request again (scaling_cur_freq)" \
	same_as_request 1
check_output "two CUR_FREQ applied" '^2$' stat cur_freq_applied
if [ $arm = 1 ]; then
	busy 3
	check "cpu3: arch_freq_scale 256 (0.8 of 3.2 GHz)" \
		wait_file "$CF" '^cpu3 cur_khz=800000 freq_scale=256 ' 10
fi

errs=$(cat "$VS/protocol_errors")
send 3 1600000 1600000 1600000 1600000 short
check "a short CUR_FREQ is counted invalid" \
	wait_file "$FH_STATS/cur_freq_invalid" '^1$' 10
check_output "dmesg says why" 'CUR_FREQ dropped: CUR_FREQ length' dmesg
check "... and ends the connection; the driver connects again" \
	wait_file "$P" '^CONNECT 2$' 10
check_output "one protocol error" "^$((errs + 1))\$" cat "$VS/protocol_errors"
check "connection 2 carries the whole state" wait_file "$P" '^REC 2 vcpu=3 ' 10
check "what connection 1 said is forgotten" cur 0 0
check_fails "no CPU keeps a value of connection 1" \
	grep -q '^cpu[0-3] cur_khz=[1-9]' "$CF"
send 1 1600000 1600000 1600000 2400000
if [ $arm = 1 ]; then busy 0; fi
check "the new connection's seq 1 is taken" cur 3 2400000
check "cpu0: cpuinfo_cur_freq 1.6 GHz" cpuinfo 0 1600000
check "cpu3: cpuinfo_cur_freq 2.4 GHz" cpuinfo 3 2400000
if [ $arm = 1 ]; then
	check "cpu0: arch_freq_scale 512 again" \
		wait_file "$CF" '^cpu0 cur_khz=1600000 freq_scale=512 ' 10
	check "cpu3: arch_freq_scale 768" \
		wait_file "$CF" '^cpu3 cur_khz=2400000 freq_scale=768 ' 10
	grep . "$CF"
fi
stop_busy

# DRV-39: a host that accepts CUR_FREQ without HOST_FREQ (PERF, FEEDBACK,
# CUR_FREQ): the driver takes it as not accepted.
kill "$peer"
wait "$peer" 2>/dev/null
fh-fake-vsock-host -a 0x13 -f "$F" >"$P" 2>&1 &
peer=$!
check "CUR_FREQ without HOST_FREQ: connected" wait_file "$P" '^REC 1 vcpu=3 ' 20
check "... cpufreq registered again" \
	wait_file $C/policy0/scaling_driver '^virtio-freqhint$' 10
check_fails "... no cur_freq in debugfs" test -e "$CF"
check_fails "... no cpuinfo_cur_freq (no ->get)" test -e $C/policy0/cpuinfo_cur_freq
send 1 1600000 1600000 1600000 1600000
check "... a CUR_FREQ then is invalid" \
	wait_file "$FH_STATS/cur_freq_invalid" '^1$' 10
check_output "... dmesg says why" 'CUR_FREQ without F_CUR_FREQ' dmesg

check "rmmod" rmmod virtio_freqhint
check_fails "no cpufreq policy left" test -e $C/policy0
kill "$peer"
wait "$peer" 2>/dev/null
check "no kernel warnings" dmesg_clean
done_testing
