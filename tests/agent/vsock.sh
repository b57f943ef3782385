#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The vsock transport's host side (issue 39, spec/vsock-transport.md §5):
# freqhint-vsockd, unprivileged, relaying guests to the real freqhintd on a
# fixture tree; fh-vsock-peer plays the guest (and the hypervisor of hybrid
# vsock: its process is the VM's), fh-testclient --relay-cid plays the
# front end for CIDs (this host has no vsock of its own to test with; the
# in-guest test, tests/vsock-guest/, uses the kernel's).  Same harness as
# integration.sh.
#
#   vsock.sh CASE
set -uo pipefail

LV=libvirt-qemu
RELAY_UID=65534
VPID=

# The front end as a service would run it: started as root, bound, then nobody.
start_vsockd() {
	"$FREQHINT_VSOCKD" --config "$T/freqhintd.conf" --agent-socket "$T/dev.sock" \
		--vsock-port 0 --user nobody --hello-timeout-ms 1000 --write-timeout-ms 500 \
		--penalty-ms "${PENALTY_MS:-100}" --penalty-max-ms 400 -v "$@" >>"$T/client-vsockd.out" 2>&1 &
	VPID=$!
	CLIENTS+=($VPID)
	eventually grep -q 'relaying to' "$T/client-vsockd.out" || fail "freqhint-vsockd did not start"
}
# stats_are FILTER VALUE: the front end's counters (SIGUSR1 logs them)
stats() {
	kill -USR1 "$VPID"; sleep 0.2
	grep 'stats: ' "$T/client-vsockd.out" | tail -n1 | sed 's/.*stats: //'
}
stats_is() { [ "$(stats | jq -r "$1")" = "$2" ]; }
expect_stats() { eventually stats_is "$1" "$2" || fail "front end stats $1 is $(stats | jq -r "$1"), want $2"; }
stop_vsockd() {
	local rc
	kill -TERM "$VPID"; wait "$VPID"; rc=$?; VPID=
	[ $rc = 0 ] || fail "freqhint-vsockd exited with status $rc"
	! grep -qE 'AddressSanitizer|LeakSanitizer|runtime error|CRITICAL|GLib-WARNING' "$T/client-vsockd.out" ||
		fail "sanitizer or GLib report in the front end's log"
}

# process PID: a process in the fixture's proc tree; vcpu_thread PID TID CPU NAME: one of its vCPU threads
process() {
	"$MKFIXTURE" thread "$FX" "$1" 0-7 0 /machine.slice "$1"
	printf 'Uid:\t0\t0\t0\t0\n' >>"$FX/proc/$1/status"
}
vcpu_thread() {
	"$MKFIXTURE" thread "$FX" "$2" "$3" "$3" /machine.slice "$1"
	mkdir -p "$FX/proc/$1/task/$2"
	echo "$4" >"$FX/proc/$1/task/$2/comm"
}

# held_peer ID: a guest whose process exists before it connects (the VM's
# hypervisor, named by a pidfile); `go ID ARGS...` lets it connect.
held_peer() {
	mkfifo "$T/go-$1"
	( read -r args <"$T/go-$1"; eval "exec \"\$FH_VSOCK_PEER\" $args" ) >"$T/client-$1.out" 2>&1 &
	CLIENTS+=($!)
	eval "PEER_$1=$!"
}
go() { local id=$1; shift; echo "$*" >"$T/go-$id"; }

# vsock_fixture: freqhintd trusts uid 65534 as its front end; the front end
# (nobody) can reach the device socket.
vsock_fixture() {
	SOCKET_MODE=0666
	EXTRA_DAEMON="relay_user=$RELAY_UID
libvirt_state_dir=$T/$LV"
	fixture
	mkdir -p -m 0755 "$T/$LV"
	chmod 0755 "$T"
}

# A hybrid-vsock VM (Cloud Hypervisor, Firecracker): the guest on the VM's
# socket <vsock_uds>_853 is served as that VM -- its threads, its placement,
# its grants back as FEEDBACK -- and refused on any other VM's socket.
case_hybrid_served() {
	held_peer a
	sleep 60 & CLIENTS+=($!); local other=$!
	EXTRA_CONF="[vm chv]
pidfile=$T/chv.pid
vsock_uds=$T/chv.vsock
ceiling=75
[vm fc]
pidfile=$T/fc.pid
vsock_uds=$T/fc.vsock"
	vsock_fixture
	process "$PEER_a"; vcpu_thread "$PEER_a" 7001 2 vcpu0; vcpu_thread "$PEER_a" 7002 4 vcpu1
	echo "$PEER_a" >"$T/chv.pid"
	process "$other"; vcpu_thread "$other" 7101 6 "fc_vcpu 0"
	echo "$other" >"$T/fc.pid"
	start_daemon cpufreq
	start_vsockd
	[ -S "$T/chv.vsock_853" ] && [ -S "$T/fc.vsock_853" ] || fail "hybrid sockets not made"
	go a --unix "$T/chv.vsock_853" --vcpus 2 --hint 0:300:1024 --hint 1:-:-:idle
	eventually grep -q '^ready' "$T/client-a.out" || fail "the guest got no CONFIG"
	grep -q '^config features=0x7 num_vcpus=2 window=10' "$T/client-a.out" || fail "CONFIG: $(grep config "$T/client-a.out")"
	expect_jq '.[] | select(.name=="chv") | .transport' hybrid vms
	expect_jq '.[] | select(.name=="chv") | .connected' true vms
	expect_jq '[.[] | select(.vm=="chv") | .tid] | join(",")' 7001,7002 vcpus
	expect_jq '.[] | select(.vm=="chv" and .vcpu==0) | .effective.min' 300 vcpus
	expect_file "$POL/policy2/scaling_min_freq" 1200000
	# the operator's ceiling (75 % = 768) comes back as FEEDBACK
	eventually grep -q 'feedback .*flags=0x1 op=0..768 .*0:0..768/' "$T/client-a.out" ||
		fail "no FEEDBACK with the operator's ceiling: $(grep feedback "$T/client-a.out")"
	# the same guest process on another VM's socket: refused by freqhintd, counted
	"$FH_VSOCK_PEER" --unix "$T/fc.vsock_853" --vcpus 1 --hold 3000 >"$T/client-b.out" 2>&1
	grep -q '^ready' "$T/client-b.out" && fail "a guest was served on another VM's socket"
	expect_jq '.relay_refused_total' 1 status
	eventually grep -q "hybrid socket $T/fc.vsock_853: process [0-9]* connected, the VM's is $other" "$T/daemon.log" ||
		fail "the refusal is not logged"
	# the front end counts it as the agent's refusal, a fault of that socket's peer
	expect_stats '.closed_total["refused-by-agent"]' 1
	grep -q "fc.vsock_853: closed (refused-by-agent): .*refused for 100 ms" "$T/client-vsockd.out" ||
		fail "the refusal is not a fault at the front end"
	expect_jq '[.[] | select(.name=="fc") | .transport] | join(",")' none vms
	# the guest goes: its influence goes
	kill "$PEER_a"
	expect_file "$POL/policy2/scaling_min_freq" 800000
	stop_vsockd
	stop_daemon
}

# CUR_FREQ over the front end (VS-26): a guest that offers
# VIRTIO_FREQHINT_F_CUR_FREQ gets freqhintd's values as CUR_FREQ messages
# with the front end's own seq, after the snapshot with the classes, only
# on change; a guest that does not offer it gets none.
case_cur_freq() {
	held_peer a
	held_peer b
	EXTRA_CONF="[vm chv]
pidfile=$T/chv.pid
vsock_uds=$T/chv.vsock
[vm fc]
pidfile=$T/fc.pid
vsock_uds=$T/fc.vsock
[cpufreq]
cur_freq_interval_ms=20"
	vsock_fixture
	process "$PEER_a"; vcpu_thread "$PEER_a" 7001 2 vcpu0; vcpu_thread "$PEER_a" 7002 6 vcpu1
	echo "$PEER_a" >"$T/chv.pid"
	process "$PEER_b"; vcpu_thread "$PEER_b" 7101 4 "fc_vcpu 0"
	echo "$PEER_b" >"$T/fc.pid"
	start_daemon cpufreq
	start_vsockd
	go a --unix "$T/chv.vsock_853" --vcpus 2 --cur-freq --hint 0:300:1024
	go b --unix "$T/fc.vsock_853" --vcpus 1 --hint 0:300:1024
	eventually grep -q '^ready' "$T/client-a.out" || fail "a: no CONFIG"
	eventually grep -q '^ready' "$T/client-b.out" || fail "b: no CONFIG"
	grep -q '^config features=0x17 ' "$T/client-a.out" || fail "a: $(grep config "$T/client-a.out")"
	grep -q '^config features=0x7 ' "$T/client-b.out" || fail "b: $(grep config "$T/client-b.out")"
	eventually grep -q '^cur-freq seq=1 khz=1600000,1600000$' "$T/client-a.out" ||
		fail "a: no CUR_FREQ: $(grep -v '^feedback' "$T/client-a.out")"
	[ "$(grep -m1 -n '^feedback .*classes=[1-9]' "$T/client-a.out" | cut -d: -f1)" -lt \
	  "$(grep -m1 -n '^cur-freq' "$T/client-a.out" | cut -d: -f1)" ] || fail "CUR_FREQ before the classes"
	echo 2400000 >"$POL/policy2/scaling_cur_freq"
	eventually grep -q '^cur-freq seq=2 khz=2400000,1600000$' "$T/client-a.out" ||
		fail "a: $(grep '^cur-freq' "$T/client-a.out" | tail -1), want 2400000,1600000"
	sleep 0.3
	[ "$(grep -c '^cur-freq' "$T/client-a.out")" = 2 ] || fail "a: CUR_FREQ without a change"
	[ "$(grep -c '^cur-freq' "$T/client-b.out")" = 0 ] || fail "b: CUR_FREQ without the feature"
	grep -q '^bad\|^message type' "$T/client-a.out" && fail "a: $(grep '^bad\|^message type' "$T/client-a.out")"
	expect_jq '.[] | select(.name=="chv") | .cur_freq_frames' 2 vms
	kill "$PEER_a" "$PEER_b"
	stop_vsockd
	stop_daemon
}

# The device's coalescing and rate window (spec §5.3, VS-18): 150 changes
# of one vCPU back to back reach freqhintd as at most one frame per 10 ms
# window (plus the leading edge and the FULL state), and the last one wins.
case_coalesce() {
	local ms frames
	hostile_fixture
	go a --unix /nonexistent --vcpus 1
	local t0 t1
	t0=$(date +%s%N)
	( peer c --vcpus 1 --burst 150 --hold 20000 ) & CLIENTS+=($!)
	eventually grep -q '^burst 150 in' "$T/client-c.out" || fail "the burst was not sent: $(cat "$T/client-c.out")"
	expect_jq '.[0].request.min' 150 vcpus chv
	# an upper bound on the time the relay had: from before the guest started to now
	t1=$(date +%s%N); ms=$(((t1 - t0) / 1000000))
	frames=$(ctl --json vms | jq -r '.[] | select(.name=="chv") | .hints_frames')
	echo "coalesce: 150 changes ($(grep '^burst' "$T/client-c.out")), freqhintd got $frames HINTS frames within $ms ms" >&2
	[ "$frames" -le $((ms / 10 + 3)) ] || fail "$frames frames within $ms ms: more than one per 10 ms window"
	[ "$frames" -lt 150 ] || fail "nothing was coalesced"
	stop_vsockd
	stop_daemon
}

# CIDs, decided by freqhintd from libvirt's own record (<vsock><cid address>):
# a CID no running domain has is refused; only relay_user may relay; a CID
# reused by another domain is not carried over.
domstatus_vsock() {
	local name=$1 uuid=$2 pid=$3 cid=$4 tid=$5
	cat >"$T/$LV/.$name.new" <<-EOX
	<domstatus state='running' reason='booted' pid='$pid'>
	  <vcpus>
	    <vcpu id='0' pid='$tid'/>
	  </vcpus>
	  <domain type='kvm' id='7'>
	    <name>$name</name>
	    <uuid>$uuid</uuid>
	    <devices>
	      <vsock model='virtio'>
	        <cid auto='yes' address='$cid'/>
	        <alias name='vsock0'/>
	      </vsock>
	    </devices>
	  </domain>
	</domstatus>
	EOX
	chmod 0600 "$T/$LV/.$name.new"
	mv "$T/$LV/.$name.new" "$T/$LV/$name.xml"
}
relay() { # relay ID CID [args]: fh-testclient as the front end (uid 65534)
	local id=$1 cid=$2; shift 2
	setpriv --reuid $RELAY_UID --regid $RELAY_UID --clear-groups \
		"$FH_TESTCLIENT" --socket "$T/dev.sock" --relay-cid "$cid" "$@" >"$T/client-$id.out" 2>&1 &
	CLIENTS+=($!)
}
case_relay_cid() {
	vsock_fixture
	process 8100; vcpu_thread 8100 8101 2 "CPU 0/KVM"
	process 8200; vcpu_thread 8200 8201 4 "CPU 0/KVM"
	domstatus_vsock dom-a $U1 8100 5 8101
	start_daemon cpufreq
	relay a 5 --vcpus 1 --hint 0:512:1024 --hold 60
	eventually grep -q '^ready' "$T/client-a.out" || fail "CID 5 was not served"
	expect_jq '.[] | select(.name=="dom-a") | .transport' vsock vms
	expect_jq '.[] | select(.name=="dom-a") | .vsock_cid' 5 vms
	expect_jq '.[0].tid' 8101 vcpus dom-a
	expect_file "$POL/policy2/scaling_min_freq" 1600000
	# a CID that is no running domain's
	relay b 6 --vcpus 1 --hold 2 --expect-close permission
	eventually grep -q 'CID 6 is no running VM' "$T/daemon.log" || fail "CID 6 not refused"
	expect_jq '.relay_refused_total' 1 status
	# relaying is for relay_user only: root here is refused though allowed as a device peer
	"$FH_TESTCLIENT" --socket "$T/dev.sock" --relay-cid 5 --vcpus 1 --hold 2 \
		--expect-close permission >"$T/client-c.out" 2>&1 || fail "a relay HELLO from root was not refused"
	grep -q 'may not relay guests' "$T/daemon.log" || fail "the refusal does not say why"
	# the domain stops and its CID goes to another: the old guest is not carried over
	rm "$T/$LV/dom-a.xml"
	domstatus_vsock dom-b $U2 8200 5 8201
	expect_jq '.relay_unmapped_total' 1 status
	expect_file "$POL/policy2/scaling_min_freq" 800000
	eventually grep -q 'close reason=permission text=its vsock CID or socket no longer belongs' "$T/client-a.out" ||
		fail "the old CID 5 connection stayed"
	relay d 5 --vcpus 1 --hint 0:512:1024 --hold 60
	eventually grep -q '^ready' "$T/client-d.out" || fail "CID 5 of the new domain was not served"
	expect_jq '.[] | select(.name=="dom-b") | .vsock_cid' 5 vms
	expect_file "$POL/policy4/scaling_min_freq" 1600000
	file_is "$POL/policy2/scaling_min_freq" 800000 || fail "the new guest moved the old domain's CPU"
	stop_daemon
}

# The CID as real libvirt records it: `freqhintctl libvirt-xml --vsock` adds
# <vsock> to a domain, libvirt (its test driver) parses it and formats the
# live domain, whose XML is what its QEMU driver's status file holds (given
# here the CID the QEMU driver would allocate); freqhintd reads the CID
# from that and serves the guest of CID 7 as that domain.
case_libvirt_record() {
	command -v virsh >/dev/null || fail "virsh is not installed"
	vsock_fixture
	process 8300; vcpu_thread 8300 8301 6 "CPU 0/KVM"
	cat >"$T/base.xml" <<-EOX
	<domain type="test"><name>dom-v</name><uuid>$U3</uuid><memory>65536</memory><vcpu>1</vcpu>
	<os><type>hvm</type></os><devices></devices></domain>
	EOX
	ctl libvirt-xml --vsock "$T/base.xml" >"$T/dom-v.xml" || fail "freqhintctl libvirt-xml --vsock"
	grep -q '<cid auto="yes"/>' "$T/dom-v.xml" || fail "no <vsock><cid auto='yes'/> added: $(cat "$T/dom-v.xml")"
	ctl libvirt-xml --vsock "$T/dom-v.xml" | cmp -s - "$T/dom-v.xml" || fail "libvirt-xml --vsock is not idempotent"
	# the QEMU driver gives the guest a CID when it starts (auto='yes' address='N')
	{ echo '<node>'; sed 's|<cid auto="yes"/>|<cid auto="yes" address="7"/>|' "$T/dom-v.xml"; echo '</node>'; } >"$T/node.xml"
	timeout 30 virsh -q -c "test://$T/node.xml" dumpxml dom-v >"$T/live.xml" || fail "libvirt refused the domain"
	grep -q "<cid auto='yes' address='7'/>" "$T/live.xml" || fail "libvirt's live XML: $(cat "$T/live.xml")"
	{ echo "<domstatus state='running' reason='booted' pid='8300'>"
	  echo "  <vcpus><vcpu id='0' pid='8301'/></vcpus>"
	  cat "$T/live.xml"; echo '</domstatus>'; } >"$T/$LV/.dom-v.new"
	chmod 0600 "$T/$LV/.dom-v.new"; mv "$T/$LV/.dom-v.new" "$T/$LV/dom-v.xml"
	start_daemon cpufreq
	relay a 7 --vcpus 1 --hint 0:512:1024 --hold 60
	eventually grep -q '^ready' "$T/client-a.out" || fail "CID 7 was not served"
	expect_jq '.[] | select(.name=="dom-v") | .vsock_cid' 7 vms
	expect_jq '.[0].tid' 8301 vcpus dom-v
	expect_file "$POL/policy6/scaling_min_freq" 1600000
	ctl vms | grep -q 'vsock (CID 7)' || fail "freqhintctl vms does not show the transport"
	stop_daemon
}

# One hybrid VM with a guest that misbehaves; each bound ends its
# connection only, is logged and counted, and the VM is served again after.
hostile_fixture() {
	held_peer a
	EXTRA_CONF="[vm chv]
pidfile=$T/chv.pid
vsock_uds=$T/chv.vsock"
	vsock_fixture
	process "$PEER_a"; vcpu_thread "$PEER_a" 7001 2 vcpu0
	echo "$PEER_a" >"$T/chv.pid"
	start_daemon cpufreq
	start_vsockd
}
# peer ID ARGS...: fh-vsock-peer as the VM's process (its pid in the pidfile)
peer() {
	local id=$1; shift
	( echo "$BASHPID" >"$T/chv.pid"; process "$BASHPID"; vcpu_thread "$BASHPID" 7001 2 vcpu0
	  exec "$FH_VSOCK_PEER" --unix "$T/chv.vsock_853" "$@" ) >"$T/client-$id.out" 2>&1
}
served_again() {
	local i
	for i in $(seq 30); do
		peer ok --vcpus 1 --hint 0:300:1024 --hold 300
		grep -q '^ready' "$T/client-ok.out" && return 0
		sleep 0.2
	done
	fail "the VM is not served again after the fault"
}

case_hostile_flood() {
	hostile_fixture
	go a --unix /nonexistent --vcpus 1 # the held process is not needed here
	peer f --vcpus 1 --flood
	grep -q '^flood: .* closed after' "$T/client-f.out" || fail "a flood was not closed: $(cat "$T/client-f.out")"
	expect_stats '.closed_total.rate' 1
	# Which of the three bounds ends it depends on how the front end's reads
	# batch the frames: a read of many frames at once passes 6048 bytes
	# first, frames read one by one pass 200 records (5628 bytes) first.
	grep -qE 'closed \(rate\): more than (216 messages|6048 bytes|200 records) in a second' "$T/client-vsockd.out" ||
		fail "the flood's end is not logged"
	# whole-state messages at the message rate but more records than vCPUs x windows allow
	served_again
	peer g --vcpus 64 --flood-full
	expect_stats '.closed_total.rate' 2
	grep -qE 'closed \(rate\): more than (12800 records|[0-9]+ bytes) in a second' "$T/client-vsockd.out" ||
		fail "the record flood's end is not logged"
	served_again
	stop_vsockd
	stop_daemon
}

case_hostile_malformed() {
	local k i n=0
	hostile_fixture
	go a --unix /nonexistent --vcpus 1
	for k in short big type length reserved early hello-reserved; do
		served_again
		peer m-$k --vcpus 2 --malformed $k || fail "malformed $k: the host did not close: $(cat "$T/client-m-$k.out")"
		n=$((n + 1))
		expect_stats '.closed_total.malformed' $n
	done
	# a record breaking the record rules is dropped, the connection stays (the device's rule)
	served_again
	peer m-record --vcpus 2 --malformed record --hold 1000 || fail "a bad record closed the connection"
	expect_stats '.closed_total.malformed' $n
	# a version the host does not speak
	served_again
	peer m-version --vcpus 1 --version 2 --hold 2000
	grep -q '^ready' "$T/client-m-version.out" && fail "HELLO version 2 was served"
	eventually grep -q 'HELLO version 2' "$T/client-vsockd.out" || fail "the bad version is not logged"
	# faults in a row: the penalty doubles (100, 200, 400 ms here) and stops at its bound
	for i in $(seq 60); do
		peer m-again --vcpus 1 --malformed hello-reserved
		grep -q 'its connections are refused for 400 ms' "$T/client-vsockd.out" && break
		sleep 0.05
	done
	grep -q 'refused for 200 ms' "$T/client-vsockd.out" && grep -q 'refused for 400 ms' "$T/client-vsockd.out" ||
		fail "the penalty does not double"
	grep -q 'refused for 800 ms' "$T/client-vsockd.out" && fail "the penalty passed its bound"
	# within the penalty the peer's connections are refused at once (the fault
	# and the next connection from one process: the penalty is 400 ms now)
	sleep 0.5
	"$FH_VSOCK_PEER" --unix "$T/chv.vsock_853" --vcpus 1 --malformed hello-reserved --reconnect \
		>"$T/client-pen.out" 2>&1
	grep -q '^reconnect refused' "$T/client-pen.out" || fail "a connection within the penalty was taken: $(cat "$T/client-pen.out")"
	expect_stats '.refused_total.penalty > 0' true
	stop_vsockd
	stop_daemon
}

case_hostile_connections() {
	hostile_fixture
	go a --unix /nonexistent --vcpus 1
	# five silent connections: two are taken (CONNS_PER_PEER), three refused; the two time out
	peer s --silent --connections 5 --hold 500
	grep -q '^open 2 of 5$' "$T/client-s.out" || fail "per-peer connections not bounded: $(cat "$T/client-s.out")"
	grep -q '^then open 0 of 5$' "$T/client-s.out" || fail "silent connections not timed out: $(cat "$T/client-s.out")"
	expect_stats '.refused_total["peer-limit"]' 3
	expect_stats '.closed_total.timeout' 2
	grep -q 'closed (timeout): no HELLO within 1000 ms' "$T/client-vsockd.out" || fail "the timeout is not logged"
	served_again
	stop_vsockd
	stop_daemon
}

# A guest that does not read: its FEEDBACK is coalesced (never queued), and
# once the kernel's buffer is full, output unread for the write timeout ends it.
case_hostile_slow() {
	local i
	hostile_fixture
	go a --unix /nonexistent --vcpus 1
	( peer s --vcpus 256 --no-read --hold 20000 ) & CLIENTS+=($!)
	eventually grep -q 'served (256 vCPUs' "$T/client-vsockd.out" || fail "the slow guest was not served"
	for i in $(seq 40); do
		printf '[vm chv]\npidfile=%s\nvsock_uds=%s\nceiling=%d\n' "$T/chv.pid" "$T/chv.vsock" $((20 + i)) \
			>"$T/freqhintd.conf.new"
		sed -n '1,/^\[vm chv\]/p' "$T/freqhintd.conf" | sed '$d' >"$T/conf.head"
		cat "$T/conf.head" "$T/freqhintd.conf.new" >"$T/freqhintd.conf"
		kill -HUP "$DPID"; sleep 0.05
		stats_is '.closed_total["slow-reader"]' 1 && break
	done
	expect_stats '.closed_total["slow-reader"]' 1
	grep -qE 'closed \(slow-reader\): (output unread for 500 ms|the guest does not read its socket)' "$T/client-vsockd.out" ||
		fail "the slow reader's end is not logged"
	stop_vsockd
	stop_daemon
}

# Nothing but its sockets: not root, no capabilities, no new privileges; it
# refuses to run as root; the files freqhintd writes are not its to write.
case_unprivileged() {
	local st
	hostile_fixture
	go a --unix /nonexistent --vcpus 1
	st=/proc/$VPID/status
	[ "$(awk '$1=="Uid:" {print $2 $3 $4 $5}' "$st")" = 65534655346553465534 ] || fail "not running as nobody: $(grep Uid "$st")"
	[ "$(awk '$1=="CapEff:" {print $2}' "$st")" = 0000000000000000 ] || fail "it has capabilities"
	[ "$(awk '$1=="CapPrm:" {print $2}' "$st")" = 0000000000000000 ] || fail "it could regain capabilities"
	[ "$(awk '$1=="NoNewPrivs:" {print $2}' "$st")" = 1 ] || fail "no_new_privs is not set"
	# as that user, the files the agent writes cannot be written
	setpriv --reuid 65534 --regid 65534 --clear-groups sh -c \
		"echo 1 >'$POL/policy2/scaling_min_freq'" 2>/dev/null && fail "nobody can write cpufreq"
	setpriv --reuid 65534 --regid 65534 --clear-groups sh -c \
		"echo 50 >'$FX/cgroup/machine.slice/cpu.uclamp.min'" 2>/dev/null && fail "nobody can write cgroups"
	setpriv --reuid 65534 --regid 65534 --clear-groups sh -c \
		"touch '$T/state/x'" 2>/dev/null && fail "nobody can write the state directory"
	# as root without --user: refused
	printf '[vm other]\npidfile=%s\nvsock_uds=%s\n' "$T/chv.pid" "$T/other.vsock" >"$T/root.conf"
	"$FREQHINT_VSOCKD" --config "$T/root.conf" --agent-socket "$T/dev.sock" --vsock-port 0 \
		>"$T/root.log" 2>&1 </dev/null & local p=$!
	eventually sh -c "! kill -0 $p 2>/dev/null" || fail "the front end runs as root"
	wait $p; [ $? = 1 ] || fail "running as root is not an error"
	grep -q 'does not run as root' "$T/root.log" || fail "the refusal does not say why: $(cat "$T/root.log")"
	stop_vsockd
	stop_daemon
}

# integration.sh runs the case named in $1 with its helpers.
source "$(dirname "${BASH_SOURCE[0]}")/integration.sh"
