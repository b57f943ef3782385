# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# fake-agent.py beside a guest test (device-test.sh, events-test.sh).
# Sourced after scripts/lib.sh, with $tdir the tests directory.
#   agent_start ARG...      fake-agent.py on its own socket, ARGs its
#                           options and expectations; returns once it
#                           listens
#   "${agent_chardev[@]}"   the QEMU options that connect a device's
#                           backend=fha0 to it
#   agent_finish GUEST_RC   waits for the agent's verdict, prints its log,
#                           and dies if the guest side (GUEST_RC) or the
#                           agent failed
agent_dir=$(mktemp -d)
agent_pid=
agent_cleanup() {
	[ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null
	rm -rf "$agent_dir"
}
trap agent_cleanup EXIT
agent_chardev=(-chardev "socket,id=fh0,path=$agent_dir/fh.sock,reconnect-ms=1000"
	-object freqhint-agent,id=fha0,chardev=fh0)

agent_start() {
	"$PYTHON3" "$tdir/fake-agent.py" --socket "$agent_dir/fh.sock" \
		--ready "$agent_dir/ready" "$@" >"$agent_dir/agent.log" 2>&1 &
	agent_pid=$!
	for _ in $(seq 50); do [ -e "$agent_dir/ready" ] && return; sleep 0.1; done
	cat "$agent_dir/agent.log"
	die "fake agent did not start"
}

agent_finish() {
	local arc=0
	wait "$agent_pid" || arc=$?
	agent_pid=
	sed 's/^/agent: /' "$agent_dir/agent.log"
	[ "$1" = 0 ] || die "guest side failed"
	[ "$arc" = 0 ] || die "agent side failed"
}
