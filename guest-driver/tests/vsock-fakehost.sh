#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest (vsock-fakehost-test.sh): virtio_freqhint with no device reports over
# vsock, here over Debian's vsock_loopback to tests/fake-vsock-host.c on CID 1
# (vsock_cid=1): HELLO, CONFIG, CPU_IDS and FEEDBACK reach cpufreq (host
# kHz, the granted ceiling), records reach the peer at most once per
# window, a connection the peer ends is made again with the whole state
# and without registering cpufreq again, a host that breaks the protocol
# (CONFIG version, a message type it may not send, a frame count above
# the maximum, a short FEEDBACK) is left and reconnected to, a CONFIG with
# other features builds the state again, and unloading works while
# connected, while retrying and with transport=virtio.
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=fh-lib.sh
. /lib/freqhint/fh-lib.sh

taskset -p 1 $$ >/dev/null
C=/sys/devices/system/cpu
VS=/sys/kernel/debug/virtio_freqhint_vsock
P=/tmp/peer.log
peer=

for m in vsock vmw_vsock_virtio_transport_common vsock_loopback; do
	check "insmod $m" insmod "/modules/$m.ko"
done

# start_peer ARGS...: the peer on port 853, logging to a new $P.
start_peer() {
	[ -n "$peer" ] && { kill "$peer"; wait "$peer" 2>/dev/null; }
	: >"$P"
	fh-fake-vsock-host "$@" >"$P" 2>&1 &
	peer=$!
	wait_file "$P" '^LISTENING' 10 >/dev/null
}
# wait_gone PATH: PATH goes away within 10 s.
wait_gone() {
	i=0
	while [ -e "$1" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	! [ -e "$1" ]
}
# vstat NAME: the link's counter NAME.
vstat() { cat "$VS/$1"; }
# count PATTERN: lines of the peer's log matching PATTERN.
count() { grep -cE -- "$1" "$P"; }
# full_state CONN: connection CONN's records name every vCPU index.
full_state() {
	for v in 0 1 2 3; do
		grep -qE "^REC $1 vcpu=$v " "$P" || { cat "$P"; return 1; }
	done
}

start_peer -b version -u 30 -k 120
check "insmod virtio_freqhint vsock_cid=1 (no device: vsock)" insmod "$FH_KO" vsock_cid=1
check_output "HELLO: version 1, every feature, 4 possible CPUs" \
	'^HELLO version=1 features=0x1f num_cpus=4 reserved=zero$' \
	wait_file "$P" '^HELLO' 10
check "a CONFIG of version 2 is refused, the driver reconnects" \
	wait_file "$P" '^CONNECT 2$' 10
check_output "the link is up" '^up cid=1 port=853$' wait_file "$VS/state" '^up' 10
check_output "one protocol error counted" '^1$' vstat protocol_errors
check_output "dmesg says why" 'CONFIG refused: unknown version' dmesg
check "cpufreq registers after the host's snapshot" \
	wait_file $C/cpufreq/policy0/scaling_driver '^virtio-freqhint$' 10
check_output "cpuinfo_max_freq is the host's 3.2 GHz" '^3200000$' \
	cat $C/cpufreq/policy3/cpuinfo_max_freq
check_output "the host's table" '^800000 1600000 2400000 3200000 ?$' \
	cat $C/cpufreq/policy2/scaling_available_frequencies
# The granted 75 % ceiling: 2.4 GHz.
all_limited 2400000
check "connection 2 carries the whole state" wait_file "$P" '^REC 2 vcpu=3 ' 10
check "... every vCPU index" full_state 2
# The user's governor on policy0: a driver registered again would drop it.
check "policy0: the user picks performance" \
	sh -c "echo performance >$C/cpufreq/policy0/scaling_governor"

# Churn: two vCPUs flip between busy and idle windows; the peer sends
# FEEDBACK with a 50 % ceiling after 30 messages and closes after 120.
pulse 1
pulse 2
busy 3
check "a busy vCPU 3 is reported busy" wait_file "$P" '^REC 2 vcpu=3 flags=0x[0-7] ' 20
check "after 30 messages, the new ceiling: 1.6 GHz" \
	wait_file $C/cpufreq/policy1/scaling_max_freq '^1600000$' 30
# Two on connection 2 (seq 1, seq 2), one more if connection 3 began.
check_output "FEEDBACK applied twice or more" '^[2-9]$' cat "$FH_STATS/feedback_applied"
check_output "no FEEDBACK refused" '^0$' cat "$FH_STATS/feedback_invalid"
check "the peer ends connection 2 after 120 messages" \
	wait_file "$P" '^CLOSED 2 ' 60
stop_busy
check "the driver connects again" wait_file "$P" '^CONNECT 3$' 10
check "connection 3 carries the whole state again" \
	wait_file "$P" '^REC 3 vcpu=3 ' 10
check "... every vCPU index" full_state 3
check "the new connection's snapshot (seq 1 again) is taken: 2.4 GHz" \
	wait_file $C/cpufreq/policy1/scaling_max_freq '^2400000$' 10
check_output "policy0 keeps the user's governor (no new registration)" \
	'^performance$' cat $C/cpufreq/policy0/scaling_governor
check_output "no state rebuilt for the same CONFIG" '^0$' vstat rebuilds
# At most one HINTS message per window (10 ms; 3 jiffies at HZ=250): the
# messages of connection 2 over its span, one more for the span's ends.
rate_ok() {
	sed -n 's/^CLOSED 2 frames=\([0-9]*\) span_us=\([0-9]*\) .*/\1 \2/p' "$P" |
		awk '{ print; if ($1 < 100 || $1 > $2 / 10000 + 1) exit 1 }'
}
check_output "connection 2: at most one message per 10 ms window" '^[0-9]+ [0-9]+$' rate_ok
grep '^CLOSED' "$P"

# A host that breaks the protocol is left, and the next connection works.
errs=$(vstat protocol_errors)
for b in type long short silent; do
	start_peer -b "$b"
	check "bad host ($b): refused, then connection 2 is up" \
		wait_file "$P" '^REC 2 vcpu=3 ' 30
	errs=$((errs + 1))
	check_output "bad host ($b): counted" "^$errs\$" vstat protocol_errors
done

check "a host that never sends CONFIG is left (after 10 s)" \
	grep -q '^CLOSED 1 silent$' "$P"

# A host that accepts other features: the state is built again.
start_peer -a 0x1
check "PERF only: connected" wait_file "$P" '^REC 1 vcpu=3 ' 20
check_output "PERF only: the state was built again" '^1$' vstat rebuilds
check "PERF only: cpufreq shows the synthetic range" \
	wait_file $C/cpufreq/policy0/cpuinfo_max_freq '^1024000$' 10

check "rmmod while connected" rmmod virtio_freqhint
check "the peer sees the connection end" wait_file "$P" '^CLOSED 1 ' 10
check_fails "no cpufreq policy left" test -e $C/cpufreq/policy0
check_fails "no debugfs left" test -e "$VS"

# Nothing listens: the driver retries with backoff; unload while it does.
kill "$peer"
wait "$peer" 2>/dev/null
peer=
check "insmod with nothing listening" insmod "$FH_KO" vsock_cid=1
check_output "connects fail and are retried" '^[2-9]|^[1-9][0-9]' \
	sh -c "sleep 2; cat $VS/connect_errors"
check_output "still idle" '^idle ' cat "$VS/state"
check "rmmod while retrying" rmmod virtio_freqhint

check "insmod transport=virtio" insmod "$FH_KO" transport=virtio vsock_cid=1
check_fails "transport=virtio: no vsock link" test -e "$VS"
check "rmmod" rmmod virtio_freqhint
check_fails "transport=bogus is refused" insmod "$FH_KO" transport=bogus

# A device that appears later takes over (transport=auto): the link ends
# for good and the device binds; transport=vsock leaves the device alone.
start_peer
check "insmod, no device yet" insmod "$FH_KO" vsock_cid=1
check "reporting over vsock" wait_file "$P" '^REC 1 vcpu=3 ' 20
echo "FREQHINT-VSOCK: plug"
bound() {
	for d in /sys/bus/virtio/devices/*; do
		[ "$(cat "$d/device" 2>/dev/null)" = 0x0038 ] && [ -e "$d/driver" ] && return 0
	done
	return 1
}
wait_bound() {
	i=0
	while [ $i -lt 300 ]; do
		bound && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
check "a hot-plugged virtio-freqhint device binds" wait_bound
check "the vsock connection ends" wait_file "$P" '^CLOSED 1 ' 10
check "no vsock link left" wait_gone "$VS"
# The driver link is there while the probe runs: its debugfs is the end.
check "the device's debugfs" wait_file "$FH_DBG" '^cpu3 vcpu=' 10
check "rmmod with the device" rmmod virtio_freqhint
check "insmod transport=vsock beside the device" insmod "$FH_KO" transport=vsock vsock_cid=1
check "transport=vsock: connected" wait_file "$P" '^REC 2 vcpu=3 ' 20
check_fails "transport=vsock: the device is left alone" bound
check "rmmod" rmmod virtio_freqhint

check "no kernel warnings" dmesg_clean
done_testing
