#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Operator-facing behaviour of freqhintd and freqhintctl (issue 17): the
# CLI's exit codes, messages and tables, the libvirt connection state, the
# metrics a dashboard joins on, the listen address, socket activation.
# The real daemon on a fixture tree, with integration.sh's helpers.
#
#   operators.sh CASE      run one case (meson runs one test per case)
#   operators.sh --list    list the cases
set -uo pipefail
# Non-ASCII VM names on command lines and in tables.
export LC_ALL=C.UTF-8
here=$(cd "$(dirname "$0")" && pwd)
FH_IT_LIBRARY=1 . "$here/integration.sh"

# start_daemon_with BACKEND ARGS...: start_daemon plus extra freqhintd options.
start_daemon_with() {
	local backend=$1; shift
	"$FREQHINTD" --config "$T/freqhintd.conf" --backend "$backend" \
		--sysfs-root "$FX/sys" --proc-root "$FX/proc" --cgroup-root "$FX/cgroup" \
		--socket "$T/dev.sock" --control-socket "$T/ctl.sock" --state-dir "$T/state" \
		-v "$@" >>"$T/daemon.log" 2>&1 &
	DPID=$!
	eventually test -S "$T/ctl.sock" || fail "freqhintd did not start"
	eventually ctl status >/dev/null || fail "freqhintd does not answer"
}

# run_ctl WANT_RC ARGS...: freqhintctl's exit status is WANT_RC; its stderr in $T/err.
run_ctl() {
	local want=$1 rc; shift
	"$FREQHINTCTL" "$@" >"$T/out" 2>"$T/err"; rc=$?
	[ "$rc" = "$want" ] || fail "freqhintctl $* exited $rc, want $want: $(cat "$T/err")"
}

metrics() {
	local port
	port=$(ctl --json status | jq -r .metrics_port)
	curl -sf "http://127.0.0.1:$port/metrics"
}

hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }

# metrics_has REGEX: a line of /metrics matches (grep -E, whole line).
metrics_has() { metrics | grep -xE "$1" >/dev/null; }

# Display column where FIELD starts on each line of FILE that contains it.
columns_of() {
	python3 - "$1" "$2" <<-'EOP'
	import sys, unicodedata
	def width(s):
	    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)
	for line in open(sys.argv[1], encoding="utf-8"):
	    i = line.find(sys.argv[2])
	    if i >= 0:
	        print(width(line[:i]))
	EOP
}

# --- cases -----------------------------------------------------------------

case_cli_version() {
	local v
	v=$("$FREQHINTD" --version | awk '{print $2}')
	[ -n "$v" ] || fail "freqhintd --version printed nothing"
	run_ctl 0 --version
	[ "$(cat "$T/out")" = "freqhintctl $v" ] || fail "freqhintctl --version: '$(cat "$T/out")'"
}

case_cli_errors() {
	fixture; thread 101 0 0
	start_daemon none
	start_vm a vm-a $U1 101 --hint 0:300:600
	# unreachable: exit 3 and the path tried is named
	run_ctl 3 --socket "$T/nope.sock" status
	grep -qF "$T/nope.sock" "$T/err" || fail "error does not name the socket: $(cat "$T/err")"
	# usage: exit 2 for an unknown command (named), extra arguments, unknown options
	run_ctl 2 --socket "$T/ctl.sock" frobnicate
	grep -q 'unknown command "frobnicate"' "$T/err" || fail "unknown command not named: $(cat "$T/err")"
	run_ctl 2 --socket "$T/ctl.sock" vms extra
	grep -q 'vms takes no argument' "$T/err" || fail "extra argument: $(cat "$T/err")"
	run_ctl 2 --socket "$T/ctl.sock" vcpus vm-a extra
	run_ctl 2 --socket "$T/ctl.sock" --no-such-option status
	# the daemon's error: exit 1, its message shown
	run_ctl 1 --socket "$T/ctl.sock" vcpus no-such-vm
	grep -q 'no connected VM "no-such-vm"' "$T/err" || fail "daemon error: $(cat "$T/err")"
	run_ctl 0 --socket "$T/ctl.sock" vcpus vm-a
	# the help text promises these codes
	"$FREQHINTCTL" --help | grep '2 bad usage, 3 freqhintd unreachable' >/dev/null || fail "help lacks exit codes"
	# --timeout: a daemon that accepts but does not answer (stopped) is
	# unreachable after the limit, not after the default 10 s; 0 waits
	run_ctl 2 --timeout -1 --socket "$T/ctl.sock" status
	grep -q -- '--timeout must be 0 (no limit) or a number of seconds, not -1' "$T/err" ||
		fail "negative timeout: $(cat "$T/err")"
	local t0 rc secs
	kill -STOP "$DPID"
	t0=$SECONDS
	"$FREQHINTCTL" --timeout 1 --socket "$T/ctl.sock" status >"$T/out" 2>"$T/err"; rc=$?
	secs=$((SECONDS - t0))
	kill -CONT "$DPID"
	[ $rc = 3 ] || fail "a stopped daemon: exit $rc, want 3: $(cat "$T/err")"
	grep -q 'timed out' "$T/err" || fail "no timeout named: $(cat "$T/err")"
	# (at least the limit; well under the default 10 s however busy the host)
	[ $secs -lt 9 ] || fail "--timeout 1 returned after $secs s"
	kill -STOP "$DPID"
	"$FREQHINTCTL" --timeout 0 --socket "$T/ctl.sock" status >"$T/out" 2>"$T/err" &
	local ctl_pid=$!
	sleep 2
	kill -0 $ctl_pid 2>/dev/null || { kill -CONT "$DPID"; fail "--timeout 0 gave up: $(cat "$T/err")"; }
	kill -CONT "$DPID"
	wait $ctl_pid || fail "--timeout 0: exit $?: $(cat "$T/err")"
	grep -q '^backend:' "$T/out" || fail "--timeout 0: no status after the daemon went on: $(cat "$T/out")"
}

case_cli_tables() {
	local n
	EXTRA_CONF=$'[vm vm-é]\nfloor=50\nceiling=max'
	fixture; thread 201 0 0; thread 202 2 2; thread 203 4 4
	start_daemon none
	# (the test client runs in the C locale: names go in as bytes)
	start_vm a x $U1 201 --name-hex "$(hex "vm-é")" --hint 0:300:600
	start_vm b x $U2 202,203 --name-hex "$(hex "虚拟机-1")" --hint 0:0:1024 --hint 1:1024:1024
	expect_jq 'length' 2 vms
	ctl vms >"$T/vms.txt"; cat "$T/vms.txt" >&2
	# one display column per field, whatever the script of the names
	for f in UUID PID SOURCE GUEST-HINTS; do
		case $f in
		UUID) n=$(columns_of "$T/vms.txt" "$U1"; columns_of "$T/vms.txt" "$U2"; columns_of "$T/vms.txt" UUID) ;;
		*) n=$(columns_of "$T/vms.txt" "$f") ;;
		esac
		[ "$(echo "$n" | sort -u | wc -l)" = 1 ] || fail "column $f not aligned: $n"
	done
	# SOURCE and guest hints; operator range in percent, like the config and cgroup files
	grep -E '^vm-é .* 50\.00\.\.max +config +on ' "$T/vms.txt" || fail "vm-é row: config source, 50..max"
	grep -E '^虚拟机-1 .* 0\.00\.\.max +default +on ' "$T/vms.txt" || fail "second row: default source"
	ctl vcpus >"$T/vcpus.txt"; cat "$T/vcpus.txt" >&2
	head -1 "$T/vcpus.txt" | grep 'REQUEST(%)' >/dev/null || fail "vcpus header names no unit"
	grep -qE '^vm-é +0 .* 29\.30\.\.58\.59 ' "$T/vcpus.txt" || fail "request not in percent"
	grep -qE '^vm-é +0 .* 29\.30\.\.58\.59 +50\.00\.\.max +50\.00\.\.58\.59 ' "$T/vcpus.txt" ||
		fail "granted/effective not 50..max / 50..58.59 percent"
	[ "$(columns_of "$T/vcpus.txt" " active " | sort -u | wc -l)" = 1 ] || fail "vcpus STATE not aligned"
	ctl cpus >"$T/cpus.txt"; cat "$T/cpus.txt" >&2
	head -1 "$T/cpus.txt" | grep 'FLOOR(%).*MIN(kHz)' >/dev/null || fail "cpus header names no units"
	grep -qE '^ +4 +4 +max +max ' "$T/cpus.txt" || fail "cpu 4 row: max/max"
	grep -qF '虚拟机-1/1' "$T/cpus.txt" || fail "holder not named"
	# JSON keeps capacity units (documented)
	expect_jq '.[0].request.min' 300 vcpus vm-é
	expect_jq '[.[] | .guest_hints] | all' true vms
	expect_jq '[.[] | .operator_source // "none"] | sort | join(",")' config,none vms
}

case_libvirt_state() {
	fixture
	# the test driver: an in-process libvirt, always there
	start_daemon_with none --libvirt-uri test:///default
	expect_jq '.libvirt.connected' true status
	expect_jq '.libvirt.uri' test:///default status
	ctl status | grep '^libvirt: *test:///default, connected$' >/dev/null || fail "status: $(ctl status)"
	eventually metrics_has 'freqhint_libvirt_connected\{uri="test:///default"\} 1' ||
		fail "metrics lack libvirt connected 1"
	stop_daemon
	# a libvirt that is not there: retrying, 0
	rm -f "$T/ctl.sock"
	start_daemon_with none --libvirt-uri "qemu+unix:///system?socket=$T/no-libvirt.sock"
	expect_jq '.libvirt.connected' false status
	ctl status | grep '^libvirt: .*, not connected (retrying)$' >/dev/null || fail "status: $(ctl status)"
	eventually metrics_has 'freqhint_libvirt_connected\{.*\} 0' ||
		fail "metrics lack libvirt connected 0"
	stop_daemon
	rm -f "$T/ctl.sock"
	start_daemon_with none --libvirt-uri none
	expect_jq '.libvirt' null status
	ctl status | grep '^libvirt: *not followed$' >/dev/null || fail "status: $(ctl status)"
	! metrics | grep freqhint_libvirt_connected >/dev/null || fail "libvirt metric without libvirt"
}

# Everything a dashboard joins on (item 6), checked by promtool and by value.
case_metrics_join() {
	EXTRA_CONF=$'[vm vm-a]\nfloor=25\nceiling=75'
	fixture; thread 601 2 2; thread 602 0-7 5
	start_daemon_with cpufreq --libvirt-uri none
	start_vm a vm-a $U1 601,602 --hint 0:512:1024 --hint 1:100:200
	"$FH_TESTCLIENT" --socket "$T/dev.sock" --malformed too-big >/dev/null 2>&1
	expect_file "$POL/policy2/scaling_min_freq" 1600000
	eventually metrics_has 'freqhint_device_connections_rejected_total\{reason="too-big"\} 1' ||
		fail "rejection counter"
	metrics >"$T/metrics.txt" || fail "GET /metrics failed"
	promtool check metrics <"$T/metrics.txt" || fail "promtool check metrics failed"
	local v want
	v=$("$FREQHINTD" --version | awk '{print $2}')
	for want in \
		"freqhint_build_info{version=\"$v\",backend=\"cpufreq\"} 1" \
		"freqhint_vm_operator_floor_ratio{domain=\"vm-a\",uuid=\"$U1\"} 0.25" \
		"freqhint_vm_operator_ceiling_ratio{domain=\"vm-a\",uuid=\"$U1\"} 0.75" \
		"freqhint_vm_info{domain=\"vm-a\",uuid=\"$U1\",source=\"config\",guest_hints=\"on\"} 1" \
		"freqhint_vcpu_info{domain=\"vm-a\",uuid=\"$U1\",vcpu=\"0\",cpu=\"2\",placement=\"pinned\"} 1" \
		"freqhint_vcpu_info{domain=\"vm-a\",uuid=\"$U1\",vcpu=\"1\",cpu=\"5\",placement=\"last-cpu\"} 1" \
		"freqhint_vcpu_granted_min_ratio{domain=\"vm-a\",uuid=\"$U1\",vcpu=\"0\"} 0.25" \
		"freqhint_vcpu_granted_max_ratio{domain=\"vm-a\",uuid=\"$U1\",vcpu=\"0\"} 0.75" \
		"freqhint_vcpu_effective_clamp_min_ratio{domain=\"vm-a\",uuid=\"$U1\",vcpu=\"0\"} 0.5" \
		"freqhint_vcpu_effective_clamp_max_ratio{domain=\"vm-a\",uuid=\"$U1\",vcpu=\"1\"} 0.25" \
		"freqhint_cpu_scaling_frequency_min_hertz{cpu=\"2\"} 1600000000" \
		"freqhint_cpufreq_external_writes_total{policy=\"2\"} 0"; do
		grep -qxF "$want" "$T/metrics.txt" || fail "metrics lack: $want"
	done
	# node_exporter word order: no *_min_frequency_* / *_max_frequency_* names
	! grep -qE '^freqhint_[a-z_]*_(min|max)_frequency' "$T/metrics.txt" || fail "old metric names"
	# every family says what it counts
	! grep -E '^# HELP [a-z_]+ *$' "$T/metrics.txt" || fail "a family without help text"
	# libvirt not followed: no connection metric
	! grep -q freqhint_libvirt_connected "$T/metrics.txt" || fail "libvirt metric without libvirt"
}

# Every freqhintd metric the shipped rules and dashboard use exists, with the
# labels they join on (recording rules' names, with colons, are not metrics).
case_monitoring_names() {
	local mon=$here/../../host-agent/monitoring name
	fixture; thread 701 2 2
	start_daemon_with cpufreq --libvirt-uri "qemu+unix:///system?socket=$T/no-libvirt.sock"
	start_vm a vm-a $U1 701 --hint 0:512:1024
	eventually metrics_has 'freqhint_vcpu_info\{.*\} 1' || fail "no vCPU info"
	metrics >"$T/metrics.txt"
	grep -ohP '(?<![:\w])freqhint_[a-z_]+(?![:\w])' "$mon/freqhint-rules.yml" \
		"$mon/grafana/freqhint-dashboard.json" | sort -u >"$T/used"
	[ "$(wc -l <"$T/used")" -ge 10 ] || fail "too few names found: $(cat "$T/used")"
	while read -r name; do
		grep -q "^# TYPE $name " "$T/metrics.txt" || fail "$name is used by host-agent/monitoring but not exported"
	done <"$T/used"
	grep -q '^freqhint_vcpu_info{domain="vm-a",uuid="[^"]*",vcpu="0",cpu="2",' "$T/metrics.txt" ||
		fail "freqhint_vcpu_info lacks the labels the rules join on"
}

# start_activated ORDER [NAMES]: freqhintd under systemd-socket-activate,
# which binds the sockets (mode 0660, group nogroup) and execs freqhintd
# at the first connection -- a freqhintctl that connected before freqhintd
# existed.  ORDER "dc": device socket first; "cd": control first.
start_activated() {
	local order=$1 names=${2:-} l=()
	case $order in
	dc) l=(-l "$T/dev.sock" -l "$T/ctl.sock") ;;
	cd) l=(-l "$T/ctl.sock" -l "$T/dev.sock") ;;
	esac
	[ -z "$names" ] || l+=(--fdname="$names")
	(
		umask 0117
		exec setpriv --regid="$(getent group nogroup | cut -d: -f3)" --clear-groups \
			systemd-socket-activate "${l[@]}" "$FREQHINTD" --config "$T/freqhintd.conf" \
			--backend cpufreq --libvirt-uri none \
			--sysfs-root "$FX/sys" --proc-root "$FX/proc" --cgroup-root "$FX/cgroup" \
			--socket "$T/dev.sock" --control-socket "$T/ctl.sock" --state-dir "$T/state" -v
	) >>"$T/daemon.log" 2>&1 &
	DPID=$!
	eventually test -S "$T/dev.sock" -a -S "$T/ctl.sock" || fail "systemd-socket-activate did not listen"
	# (what SocketMode= does; systemd-socket-activate has no option for it)
	chmod 0660 "$T/dev.sock" "$T/ctl.sock"
	# connects to systemd-socket-activate's socket; answered by the freqhintd it starts
	ctl --json status >"$T/first.json" 2>"$T/first.err" || fail "first client: $(cat "$T/first.err")"
	jq -e '.backend == "cpufreq"' "$T/first.json" >/dev/null || fail "first answer: $(cat "$T/first.json")"
}

# Item 2: sockets made by systemd (mode, group) are taken as they are, by
# name or by path; members of a socket's group may connect (monitoring users
# on the control socket without joining QEMU's group); the paths stay when
# freqhintd stops.  Without LISTEN_FDS it still makes its own.
case_socket_activation() {
	local nog
	command -v systemd-socket-activate >/dev/null || fail "systemd-socket-activate is not installed"
	nog=$(getent group nogroup | cut -d: -f3)
	[ -n "$nog" ] || fail "this test needs the group nogroup"
	# what freqhintd would do itself: 0600, group root -- not what systemd made
	EXTRA_DAEMON=$'socket_mode=0600\nsocket_group=root'
	fixture; thread 801 2 2
	chmod 0755 "$T"
	for run in "dc device:control" "cd"; do
		set -- $run
		rm -f "$T/dev.sock" "$T/ctl.sock"
		start_activated "$@"
		grep -q 'device socket: taken from systemd' "$T/daemon.log" || fail "device socket not taken ($run)"
		grep -q 'control socket: taken from systemd' "$T/daemon.log" || fail "control socket not taken ($run)"
		! grep -q 'has no use for' "$T/daemon.log" || fail "a passed socket left unused ($run)"
		[ "$(stat -c '%a %g' "$T/dev.sock")" = "660 $nog" ] ||
			fail "device socket is $(stat -c '%a %g' "$T/dev.sock") after start ($run)"
		[ "$(stat -c '%a %g' "$T/ctl.sock")" = "660 $nog" ] ||
			fail "control socket is $(stat -c '%a %g' "$T/ctl.sock") after start ($run)"
		start_vm a vm-a $U1 801 --hint 0:512:1024
		expect_file "$POL/policy2/scaling_min_freq" 1600000
		# a monitoring user: not root, not allowed_uids, member of the socket's group
		setpriv --reuid=65534 --regid=65534 --clear-groups "$FREQHINTCTL" --socket "$T/ctl.sock" \
			vms >"$T/mon.out" 2>&1 || fail "group member (primary) refused: $(cat "$T/mon.out")"
		grep -q '^vm-a ' "$T/mon.out" || fail "monitoring user's vms: $(cat "$T/mon.out")"
		setpriv --reuid=65534 --regid=12345 --groups="$nog" "$FREQHINTCTL" --socket "$T/ctl.sock" \
			status >"$T/mon.out" 2>&1 || fail "group member (supplementary) refused: $(cat "$T/mon.out")"
		setpriv --reuid=65534 --regid=12345 --clear-groups "$FREQHINTCTL" --socket "$T/ctl.sock" \
			status >"$T/mon.out" 2>&1
		# (the file mode keeps it out before freqhintd is asked: connect fails, exit 3)
		[ $? = 3 ] || fail "a non-member reached the control socket: $(cat "$T/mon.out")"
		kill "$VM_a"; CLIENTS=()
		expect_file "$POL/policy2/scaling_min_freq" 800000
		stop_daemon
		test -S "$T/dev.sock" && test -S "$T/ctl.sock" || fail "a socket unit's path was removed ($run)"
		: >"$T/daemon.log"
	done
	# by hand: its own sockets, as configured, removed on exit
	rm -f "$T/dev.sock" "$T/ctl.sock"
	start_daemon none
	[ "$(stat -c '%a %G' "$T/dev.sock")" = "600 root" ] || fail "own socket is $(stat -c '%a %G' "$T/dev.sock")"
	! grep -q 'taken from systemd' "$T/daemon.log" || fail "took a socket nobody passed"
	stop_daemon
	[ ! -e "$T/dev.sock" ] || fail "own socket left behind"
	start_daemon none
}

# [metrics] address: an IPv6 literal (bracketed or not) is served there only.
case_metrics_ipv6() {
	local port
	EXTRA_CONF='address=[::1]'
	fixture
	start_daemon_with none --libvirt-uri none
	port=$(ctl --json status | jq -r .metrics_port)
	expect_jq '.metrics_address' '[::1]' status
	curl -sfg "http://[::1]:$port/metrics" | grep '^freqhint_build_info' >/dev/null || fail "no metrics on [::1]"
	! curl -sf -m 5 "http://127.0.0.1:$port/metrics" >/dev/null || fail "served on IPv4 too"
	stop_daemon; rm -f "$T/ctl.sock"
	# a name is not an address: refused at start, exit 1, message names it
	sed -i 's/^address=.*/address=localhost/' "$T/freqhintd.conf"
	"$FREQHINTD" --config "$T/freqhintd.conf" --backend none --libvirt-uri none \
		--sysfs-root "$FX/sys" --proc-root "$FX/proc" --cgroup-root "$FX/cgroup" \
		--socket "$T/dev.sock" --control-socket "$T/ctl.sock" --state-dir "$T/state" \
		>"$T/bad.log" 2>&1 && fail "freqhintd started with address=localhost"
	grep -q 'metrics address "localhost" is not an IPv4 or IPv6 address' "$T/bad.log" ||
		fail "message: $(cat "$T/bad.log")"
}

if [ "${1:-}" = --list ]; then declare -F | sed -n 's/^declare -f case_//p'; exit 0; fi
[ $# = 1 ] && declare -F "case_$1" >/dev/null || { echo "usage: $0 CASE|--list" >&2; exit 2; }
check_tools
command -v python3 >/dev/null || { echo "FAIL: python3 is not installed" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/fh-op.XXXXXX")
FX=$T/fx
POL=$FX/sys/devices/system/cpu/cpufreq
"case_$1"
stop_daemon
echo "PASS: $1"
