#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Same-host live migration end to end, every part real: the uclamp guest
# with virtio_freqhint.ko runs under the project's QEMU (TCG, q35) with
# virtio-freqhint-pci, connected to freqhintd (cpufreq backend on a fixture
# sysfs tree, as in run-e2e.sh).  With a floor set in the guest, a second
# QEMU started with -incoming and connected to the same freqhintd takes the
# running guest over a UNIX socket (QMP migrate); the source is then quit,
# as libvirt does.  The guest runs guest-migrate.sh.
#
#   run-migrate.sh --freqhintd BIN --freqhintctl BIN
#
# What agent protocol §7 guarantees, and what is checked (a file is sampled
# every 20 ms from before the migration starts until after the source quit):
#  - while the source runs, its floor is in force: no sample read before
#    the source stopped is below the floor (PD-1: the destination, waiting
#    for the migration, sends no HELLO and so cannot displace the source);
#  - the floor is withdrawn only from the source's stop (PD-9) until the
#    destination's FULL frame (PD-15) is applied, and is back within
#    FLOOR_BACK_S of the destination starting to run;
#  - once back it stays: no sample below the floor from then on (the
#    source's duplicate close, its reconnections and its exit take nothing
#    from the destination's state, PA-8, PA-17);
#  - nothing stale: the source's connection was closed with
#    FH_CLOSE_DUPLICATE, the agent holds one connection for the VM, from
#    the destination's process, with the destination's vCPU threads and the
#    migrated clamps, and the guest's next change arrives through it.
# The gap (source stop -> floor back) and the downtime are printed.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"
# shellcheck source-path=SCRIPTDIR source=../harness/e2e-lib.sh
. "$here/tests/harness/e2e-lib.sh"

freqhintd= freqhintctl=
while [ $# -gt 0 ]; do
	case "$1" in
	--freqhintd) freqhintd=${2:?}; shift ;;
	--freqhintctl) freqhintctl=${2:?}; shift ;;
	*) die "usage: $0 --freqhintd BIN --freqhintctl BIN" ;;
	esac
	shift
done
[ -x "$freqhintd" ] && [ -x "$freqhintctl" ] || die "--freqhintd and --freqhintctl are required"

# The destination's HELLO needs its connection: when the destination starts
# running it is either connected (HELLO at once) or waiting for its next
# attempt (reconnect-ms, 500 here, after the agent's 5 s handshake timeout
# closed a connection that sent nothing).  Then the handshake, the FULL
# frame and one decision of an AddressSanitizer freqhintd on a busy 2-core
# host: 20 s is a deadline for "eventually", not a latency figure.
FLOOR_BACK_S=20
# The STOP event's timestamp is taken after the stop notifiers ran (QEMU's
# do_vm_stop: vm_state_notify, then the event), and the device withdraws
# its hints in its notifier: the withdrawal may be written just before the
# timestamp.  50 ms covers that notifier chain; the check spans the whole
# precopy phase (seconds) before it.
STOP_MARGIN_US=50000

e2e_init
src_run= dst_run= sampler= qmp_src_fd= qmp_dst_fd= socat_src= socat_dst=
mig_cleanup() {
	local rc=$? pid t
	[ -z "$sampler" ] || kill "$sampler" 2>/dev/null || true
	# run-guest.sh waits for its QEMU in the foreground: stop the QEMUs.
	for t in src dst; do
		pid=$(cat "$E2E_DIR/$t.pid" 2>/dev/null) || continue
		kill "$pid" 2>/dev/null || true
	done
	for pid in $socat_src $socat_dst $src_run $dst_run; do kill "$pid" 2>/dev/null || true; done
	if [ "$rc" != 0 ]; then
		for t in src dst; do
			[ -f "$E2E_DIR/run-guest-$t.out" ] || continue
			tail -n 20 "$E2E_DIR/run-guest-$t.out" | sed "s/^/  $t run-guest| /" >&2
		done
		log "also kept: qmp-src.log, qmp-dst.log (QMP replies and events), samples (policy2 scaling_min_freq: time in us, value)"
	fi
	(exit "$rc")
	e2e_cleanup
}
trap mig_cleanup EXIT

e2e_setup "$here/tests/e2e/guest-migrate.sh" 0

# The guest runs under a QEMU tagged src, then under one tagged dst (see
# e2e_start_guest): each its own control port, QMP and pid file, the same
# VM identity and agent socket, one console log for the guest's whole run.
# Their run-guest.sh processes are src_run and dst_run (mig_cleanup stops
# them, not e2e_cleanup).
qemu_pid() { cat "$E2E_DIR/$1.pid"; }

# disconnect_control: close the control port e2e_connect_control TAG opened.
disconnect_control() {
	local pid=${E2E_CTL_PID:-} in=${E2E_CTL[0]:-} out=${E2E_CTL[1]:-}
	[ -z "$out" ] || eval "exec $out>&-"
	[ -z "$in" ] || eval "exec $in<&-"
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# qmp_open TAG: a QMP session kept open, its replies and events (one JSON
# object a line, each event with its timestamp) in qmp-TAG.log.
qmp_open() {
	local fifo=$E2E_DIR/qmp-$1.in fd
	eventually 60 test -S "$E2E_DIR/qmp-$1.sock" ||
		die "QEMU $1 did not open qmp-$1.sock within 60 s (see run-guest-$1.out)"
	mkfifo "$fifo"
	socat - "UNIX-CONNECT:$E2E_DIR/qmp-$1.sock" <"$fifo" >"$E2E_DIR/qmp-$1.log" 2>&1 &
	eval "socat_$1=$!"
	exec {fd}>"$fifo"
	eval "qmp_$1_fd=$fd"
	qmp "$1" caps '{"execute":"qmp_capabilities"}'
}
# qmp TAG ID JSON: send a command (JSON without "id"), wait for its answer;
# fail if it is an error.
qmp() {
	local fd_var=qmp_$1_fd
	printf '%s\n' "${3%\}},\"id\":\"$2\"}" >&"${!fd_var}"
	eventually 60 grep -q "\"id\": *\"$2\"" "$E2E_DIR/qmp-$1.log" ||
		die "QEMU $1: no answer to $3 within 60 s"
	if grep "\"id\": *\"$2\"" "$E2E_DIR/qmp-$1.log" | grep '"error"' >/dev/null; then
		die "QEMU $1: $3: $(grep "\"id\": *\"$2\"" "$E2E_DIR/qmp-$1.log")"
	fi
}
# event_us TAG EVENT [JQ-FILTER]: the first such event's time in us.
event_us() {
	jq -r --arg e "$2" "select(.event? == \$e) ${3:+| select($3)} |
		.timestamp.seconds * 1000000 + .timestamp.microseconds" \
		"$E2E_DIR/qmp-$1.log" 2>/dev/null | sed -n 1p
}
has_event() { [ -n "$(event_us "$@")" ]; }

FLOOR_KHZ=
floor_held() {
	local v
	v=$(policy_get 2 min) && [ "$v" -ge "$FLOOR_KHZ" ]
}

# The sampler: policy2's scaling_min_freq every 20 ms, timestamped after
# the read (so a sample's time is never before what it saw was written).
# No process is started per sample (a fork on this busy host took up to a
# second): builtins only, and the wait is a read that times out on a FIFO
# nobody writes.  The agent rewrites the file in place: an empty read is
# kept as "-".
sample_floor() {
	local v f fifo=$E2E_DIR/sampler.fifo tick
	f=$(pdir 2)/scaling_min_freq
	mkfifo "$fifo"
	exec {tick}<>"$fifo"
	while :; do
		v=
		read -r v <"$f" || true
		echo "${EPOCHREALTIME/./} ${v:--}"
		read -r -t 0.02 -u "$tick" _ || true
	done
}

# vm_on_destination: the agent holds exactly one VM with our UUID, and it
# is the destination's process.
vm_on_destination() {
	ctl_json vms | jq -e --arg u "$E2E_VM_UUID" --argjson p "$(qemu_pid dst)" \
		'[.[] | select(.uuid == $u)] | length == 1 and .[0].pid == $p'
}
# vcpus_of_destination: every vCPU thread the agent acts on is a thread of
# the destination's process.
vcpus_of_destination() {
	local tids t
	tids=$(ctl_json vcpus | jq -r --arg u "$E2E_VM_UUID" '.[] | select(.uuid == $u) | .tid') || return 1
	[ "$(wc -w <<<"$tids")" = "$E2E_SMP" ] || return 1
	for t in $tids; do
		[ -d "/proc/$(qemu_pid dst)/task/$t" ] || return 1
	done
}

e2e_start_guest --tag src --outgoing
src_run=$E2E_GUEST_PID E2E_GUEST_PID=
src_t0=$(date +%s.%N)
e2e_connect_control src
qmp_open src

# migrate: run the migration and check it; prints nothing, sets why.
migrate() {
	local stop_us resume_us src_pid dst_pid
	why=
	src_pid=$(qemu_pid src)
	sample_floor >"$E2E_DIR/samples" &
	sampler=$!
	e2e_start_guest --tag dst --incoming "unix:$E2E_DIR/migrate.sock" --since "$src_t0"
	dst_run=$E2E_GUEST_PID E2E_GUEST_PID=
	qmp_open dst
	eventually 60 test -S "$E2E_DIR/migrate.sock" || { why="the destination did not listen on migrate.sock within 60 s"; return; }
	# The destination stays connected-without-HELLO meanwhile (PD-1): the
	# source keeps its floor for the whole precopy phase.
	local mig_start_us=${EPOCHREALTIME/./}
	qmp src events '{"execute":"migrate-set-capabilities","arguments":{"capabilities":[{"capability":"events","state":true}]}}'
	qmp src migrate "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"unix:$E2E_DIR/migrate.sock\"}}"
	if ! eventually 300 has_event dst RESUME; then
		why="the destination did not start running within 300 s of migrate; source: $(grep -c MIGRATION "$E2E_DIR/qmp-src.log") MIGRATION events, last $(grep MIGRATION "$E2E_DIR/qmp-src.log" | tail -n1)"
		return
	fi
	resume_us=$(event_us dst RESUME)
	stop_us=$(event_us src STOP)
	[ -n "$stop_us" ] || { why="no STOP event from the source"; return; }
	eventually 30 has_event src MIGRATION '.data.status == "completed"' ||
		{ why="the source did not report the migration completed within 30 s of the destination running"; return; }
	dst_pid=$(qemu_pid dst)
	log "migration: source pid $src_pid stopped, destination pid $dst_pid running $(((resume_us - stop_us) / 1000)) ms later"

	if ! eventually "$FLOOR_BACK_S" floor_held; then
		why="expected policy2 scaling_min_freq >= $FLOOR_KHZ within ${FLOOR_BACK_S} s of the destination running; saw $(policies_summary)"
	elif ! eventually 10 vm_on_destination; then
		why="expected one VM $E2E_VM_UUID in freqhintctl vms, from the destination's pid $dst_pid; saw $(ctl_json vms | jq -c '[.[] | {name, uuid, pid}]')"
	elif ! grep -q "(pid $src_pid): closing (duplicate)" "$E2E_AGENT_LOG"; then
		why="expected freqhintd to close the source's connection (pid $src_pid) with FH_CLOSE_DUPLICATE; its log says: $(grep -E "pid ($src_pid|$dst_pid)" "$E2E_AGENT_LOG" | tail -n 5)"
	elif ! eventually 10 vcpus_of_destination; then
		why="expected the agent's $E2E_SMP vCPU threads to be threads of the destination (pid $dst_pid); saw tids $(ctl_json vcpus | jq -c '[.[].tid]'), destination's $(ls "/proc/$dst_pid/task" | paste -sd,)"
	elif ! eventually 10 vcpu_hint_near 1 800 1024 16; then
		why="expected the migrated clamps 800..1024 on vCPU1 at the agent; saw $(ctl_json vcpus | jq -c '.[1].hint')"
	fi
	[ -z "$why" ] || return

	# The source is quit once the migration completed, as libvirt does.
	# Its exit and its connections (closed as a duplicate, then retried
	# without HELLO: its VM no longer runs) take nothing from the VM.
	qmp src quit '{"execute":"quit"}'
	local rc=0
	wait "$src_run" || rc=$?
	src_run=
	if [ "$rc" != 0 ]; then
		why="the source's run-guest.sh failed (status $rc): $(tail -n 3 "$E2E_DIR/run-guest-src.out" | paste -sd ' ')"
		return
	fi
	if ! holds_for 3 floor_held; then
		why="expected policy2 scaling_min_freq >= $FLOOR_KHZ at every sample for 3 s after the source quit; saw $(policies_summary)"
		return
	fi
	kill "$sampler"
	wait "$sampler" 2>/dev/null || true
	sampler=

	# The samples, against the design's bounds.
	local before below first_below back after_back
	before=$(awk -v s="$mig_start_us" -v t="$((stop_us - STOP_MARGIN_US))" '$1 >= s && $1 < t' "$E2E_DIR/samples" | wc -l)
	below=$(awk -v t="$((stop_us - STOP_MARGIN_US))" -v f="$FLOOR_KHZ" '$1 < t && $2 != "-" && $2 < f' "$E2E_DIR/samples" | sed -n 1,3p | paste -sd ';')
	if [ "$before" -lt 10 ]; then
		why="only $before samples between the migrate command and the source's stop: the precopy phase was not watched"
		return
	fi
	if [ -n "$below" ]; then
		why="policy2 scaling_min_freq below the floor $FLOOR_KHZ while the source still ran (before its STOP at $stop_us us): $below"
		return
	fi
	# Back for good: the first at-floor sample after which none is below.
	back=$(awk -v f="$FLOOR_KHZ" '$2 != "-" && $2 < f { b = "" } $2 != "-" && $2 >= f && b == "" { b = $1 } END { print b }' "$E2E_DIR/samples")
	first_below=$(awk -v f="$FLOOR_KHZ" '$2 != "-" && $2 < f { print $1; exit }' "$E2E_DIR/samples")
	if [ -n "$first_below" ] && [ "$back" -le "$resume_us" ]; then
		# Below the floor, then back before the destination ran: the
		# source gave its floor back without a migration's end.
		why="policy2 dropped below the floor at $first_below us and was back at $back us, before the destination ran ($resume_us us)"
		return
	fi
	after_back=$(awk -v b="$back" -v f="$FLOOR_KHZ" '$1 > b && $2 != "-" && $2 < f' "$E2E_DIR/samples" | wc -l)
	[ "$after_back" = 0 ] || { why="policy2 fell below the floor again after the switchover"; return; }
	log "samples: $(wc -l <"$E2E_DIR/samples") taken, $before during precopy at or above the floor ($FLOOR_KHZ kHz)"
	if [ -n "$first_below" ]; then
		log "floor gap: from $(((first_below - stop_us) / 1000)) ms after the source's STOP to $(((back - stop_us) / 1000)) ms after it ($(((back - resume_us) / 1000)) ms after the destination's RESUME); downtime $(((resume_us - stop_us) / 1000)) ms"
	else
		log "floor gap: none seen at 20 ms sampling (downtime $(((resume_us - stop_us) / 1000)) ms)"
	fi
}

while next_step; do
	case $name in
	connected)
		step_connected
		;;
	floor)
		FLOOR_KHZ=$(snap_up "$(cap_to_khz 800)" 2)
		if ! eventually 10 floor_held; then
			verdict "expected policy2 scaling_min_freq >= $FLOOR_KHZ (vCPU1's floor 800) within 10 s; saw $(policies_summary)"
		elif ! holds_for 2 floor_held; then
			# vCPU1 runs a task all the time: its floor holds at every sample.
			verdict "expected policy2 scaling_min_freq >= $FLOOR_KHZ at every sample for 2 s; saw $(policies_summary)"
		else
			verdict OK
		fi
		;;
	migrate)
		migrate
		# The guest now runs on the destination: its verdict goes there.
		disconnect_control
		e2e_connect_control dst
		if [ -z "$why" ]; then verdict OK; else verdict "$why"; fi
		;;
	released)
		if ! eventually 10 policies_at_original 2 4 6; then
			verdict "expected policies 2, 4, 6 at their original limits within 10 s (vCPU1's task exited on the destination); saw $(policies_summary)"
		elif ! vm_on_destination >/dev/null; then
			verdict "expected the VM still held by the destination's process; saw $(ctl_json vms | jq -c '[.[] | {name, uuid, pid}]')"
		else
			verdict OK
		fi
		;;
	*)
		verdict "unknown step $name"
		;;
	esac
done

guest_rc=0
if [ -n "$dst_run" ]; then
	wait "$dst_run" || guest_rc=$?
	dst_run=
	cat "$E2E_DIR/run-guest-dst.out" >&2
else
	guest_rc=1
	log "the guest never migrated"
fi
grep -E 'FREQHINT-CHECK' "$E2E_CONSOLE" >&2 || true
log "host checks failed: $host_failures; destination's guest run exit status: $guest_rc"
[ "$host_failures" = 0 ] && [ "$guest_rc" = 0 ]
