# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# What bench/agent.sh and bench/scale.sh both do with freqhintd: start it on
# a fixture tree, wait for it, read its status and /proc figures, stop it,
# and clean up.  Sourced after scripts/lib.sh; the caller sets
#   T          the run's temporary directory (fixture in $T/fx)
#   freqhintd, freqhintctl
#   AGENT_WRAP an array run in front of freqhintd (heaptrack), may be empty
# and its own client_pid while a load client runs.

agent_pid= client_pid=
bench_cleanup() {
	[ -n "$client_pid" ] && kill "$client_pid" 2>/dev/null
	[ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null
	wait 2>/dev/null
	[ "${FREQHINT_KEEP:-0}" = 1 ] || rm -rf "$T"
}
trap bench_cleanup EXIT

# eventually SECONDS CMD...
eventually() {
	local deadline=$(($(date +%s) + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.2
	done
}

# start_agent BACKEND [freqhintd options...]: on $T/fx with $T/freqhintd.conf.
start_agent() {
	local backend=$1
	shift
	rm -f "$T/control.sock" "$T/device.sock"
	"${AGENT_WRAP[@]}" "$freqhintd" --foreground --config "$T/freqhintd.conf" --backend "$backend" \
		--sysfs-root "$T/fx/sys" --proc-root "$T/fx/proc" --cgroup-root "$T/fx/cgroup" \
		--socket "$T/device.sock" --control-socket "$T/control.sock" \
		--state-dir "$T/state" "$@" >>"$T/freqhintd.log" 2>&1 &
	agent_pid=$!
	eventually 60 test -S "$T/control.sock" ||
		die "freqhintd did not start: $(tail -n3 "$T/freqhintd.log")"
}

# The daemon's pid: under a wrapper (heaptrack), its child.
daemon_pid() {
	if [ ${#AGENT_WRAP[@]} -gt 0 ]; then
		pgrep -P "$agent_pid" -x freqhintd | head -n1
	else
		echo "$agent_pid"
	fi
}

stop_agent() {
	local d
	d=$(daemon_pid)
	[ -n "$d" ] && kill -TERM "$d" 2>/dev/null
	wait "$agent_pid" 2>/dev/null || true
	agent_pid=
}

status() { "$freqhintctl" --socket "$T/control.sock" --json status; }
status_field() { status | jq -r ".$1"; }
# vm_status FIELD: from /proc/PID/status, in kB
vm_status() { grep "^$1:" "/proc/$(daemon_pid)/status" | awk '{ print $2 }'; }
# CPU seconds (user + system) the daemon used so far.
cpu_s() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13) / hz }' \
		"/proc/$(daemon_pid)/stat"
}
