# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=sh
# In-guest helpers for the vsock transport's tests (tests/vsock-guest/run.sh
# carries this file as /opt/fh/vsock-lib.sh).  busybox sh:
#
#   . /lib/freqhint/test-lib.sh; . /opt/fh/vsock-lib.sh
#   load_vsock                 insmod the kernel's vsock modules (loopback)
#   start_host [VCPUS]         freqhintd (backend none, on the guest's own
#                              /proc) and freqhint-vsockd (bound as root,
#                              then uid 65534), with one VM "loop" of VCPUS
#                              vCPU threads (default 2) mapped to CID 1: a
#                              stand-in process whose threads are named
#                              vcpu0..; a guest connecting to CID 1 (the
#                              loopback's local CID) port 853 is served as it
#   host_prepare               the state directory, the front end's user,
#                              $W/freqhintd.conf's [daemon] and [metrics]
#                              (a test appends its [vm] sections)
#   start_vsockd               freqhint-vsockd on that config, bound as
#                              root, then uid 65534; waits until it relays
#   ctl ARGS...                freqhintctl on the host's control socket
#   wait_for WHAT PATTERN CMD...  like check_output, retried for 30 s
#   hint_field VM VCPU FIELD   a field of the vCPU's last hint (freqhintctl
#                              --json vcpus VM): flags, min, max, perf...
#   show_logs                  the daemons' logs on the console (after a failure)
#   stop_host                  both daemons stopped; their logs checked for
#                              sanitizer reports (a check each)
# Logs: $W/freqhintd.log, $W/vsockd.log.
FH=/opt/fh
export LD_LIBRARY_PATH=$FH/lib
export ASAN_OPTIONS=abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1
W=/tmp/fh

load_vsock() {
	while read -r m; do
		check "insmod $m" insmod "$FH/kmod/$m"
	done <"$FH/kmod/load-order"
}

wait_for() {
	wf_what=$1 wf_pat=$2; shift 2
	# by the clock: under TCG on a busy host one try can take seconds
	wf_end=$(($(date +%s) + 30))
	while [ "$(date +%s)" -lt $wf_end ]; do
		if "$@" 2>/dev/null | grep -qE -- "$wf_pat"; then
			check_output "$wf_what" "$wf_pat" "$@"
			return
		fi
		sleep 0.2
	done
	check_output "$wf_what" "$wf_pat" "$@"
}

ctl() { $FH/freqhintctl --socket $W/ctl.sock "$@"; }

# (freqhintctl's JSON has one member a line; "hint" is an object of its own)
hint_field() {
	ctl --json vcpus "$1" | awk -v v="$2" -v f="\"$3\"" '
		$1 == "\"vcpu\"" { n = $3 + 0 }
		$1 == "\"hint\"" { h = 1; next }
		h && /}/ { h = 0 }
		h && n == v && $1 == f { sub(/,$/, "", $3); print $3 }'
}

host_prepare() {
	mkdir -p $W/state
	# the initramfs root comes from a mktemp -d (0700): nobody could not reach /tmp/fh
	chmod 0755 / $W
	# the front end's user
	grep -q '^nobody:' /etc/passwd 2>/dev/null || echo 'nobody:x:65534:65534:nobody:/:/bin/false' >>/etc/passwd
	grep -q '^nogroup:' /etc/group 2>/dev/null || echo 'nogroup:x:65534:' >>/etc/group
	cat >$W/freqhintd.conf <<EOC
[daemon]
poll_interval_ms=100
socket_mode=0666
relay_user=65534
libvirt_state_dir=
[metrics]
enabled=false
EOC
}

start_vsockd() {
	# not dumpable once it is nobody: LeakSanitizer could not read it at exit
	ASAN_OPTIONS=detect_leaks=0 $FH/freqhint-vsockd --config $W/freqhintd.conf \
		--agent-socket $W/dev.sock --user nobody -v >$W/vsockd.log 2>&1 &
	FH_VSOCKD=$!
	wait_for "freqhint-vsockd listens on port 853 as uid 65534" 'relaying to .* as uid 65534' cat $W/vsockd.log
}

start_host() {
	host_prepare
	$FH/fh-vsock-peer --stand-in --vcpu-threads "${1:-2}" --pidfile $W/loop.pid >$W/stand-in.log 2>&1 &
	FH_STANDIN=$!
	i=0; while [ ! -s $W/loop.pid ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	cat >>$W/freqhintd.conf <<EOC
[vm loop]
pidfile=$W/loop.pid
vsock_cid=1
ceiling=75
EOC
	$FH/freqhintd --config $W/freqhintd.conf --backend none --socket $W/dev.sock \
		--control-socket $W/ctl.sock --state-dir $W/state --libvirt-uri none -v >$W/freqhintd.log 2>&1 &
	FH_DAEMON=$!
	wait_for "freqhintd answers" 'none' ctl status
	start_vsockd
}

show_logs() {
	[ "$fh_failed" = 0 ] || [ -n "${FH_LOGS_SHOWN:-}" ] && return
	FH_LOGS_SHOWN=1
	tail -n 40 $W/freqhintd.log | sed 's/^/    freqhintd| /'
	tail -n 40 $W/vsockd.log | sed 's/^/    vsockd| /'
}

stop_host() {
	kill -TERM "$FH_VSOCKD" 2>/dev/null; wait "$FH_VSOCKD"
	check "freqhint-vsockd exits cleanly" test $? = 0
	kill -TERM "$FH_DAEMON" 2>/dev/null; wait "$FH_DAEMON"
	check "freqhintd exits cleanly" test $? = 0
	kill "$FH_STANDIN" 2>/dev/null
	check_fails "no sanitizer report" grep -qE 'AddressSanitizer|LeakSanitizer|runtime error|CRITICAL' \
		$W/freqhintd.log $W/vsockd.log
}
