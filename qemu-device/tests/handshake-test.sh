#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# handshake-test.sh QEMU_BUILD_DIR FH_LISTENER
#
# A q35 TCG machine with two vCPUs and virtio-freqhint-pci connects to
# fh-listener; the HELLO must carry this VM's name, UUID and pid, and the
# vCPU thread ids QMP query-cpus-fast reports; the device must report the
# agent over qom-get.
set -euo pipefail

build=$1
# meson passes the file build-qemu.sh --print-build wrote.
[ -f "$build" ] && build=$(cat "$build")
qemu=$build/qemu-system-x86_64
listener=$2
uuid=6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9
tmp=$(mktemp -d)
qemu_pid=
listener_pid=
cleanup() {
	[ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null || true
	[ -n "$listener_pid" ] && kill "$listener_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "handshake-test: $*" >&2; exit 1; }

qmp() {
	# One command per connection: capabilities, then the command.
	printf '{"execute":"qmp_capabilities"}\n%s\n' "$1" |
		socat -t 5 - "UNIX-CONNECT:$tmp/qmp.sock" |
		jq -c 'select(has("return")) | .return' | tail -n 1
}

"$listener" "$tmp/agent.sock" >"$tmp/hello.json" 2>"$tmp/listener.err" &
listener_pid=$!
for _ in $(seq 100); do [ -S "$tmp/agent.sock" ] && break; sleep 0.1; done
[ -S "$tmp/agent.sock" ] || fail "listener did not start: $(cat "$tmp/listener.err")"

"$qemu" -machine q35 -accel tcg -smp 2 -m 128 -nodefaults -display none \
	-name fh-handshake -uuid "$uuid" \
	-chardev "socket,id=fh0,path=$tmp/agent.sock,reconnect-ms=1000" \
	-object freqhint-agent,id=fha0,chardev=fh0 \
	-device virtio-freqhint-pci,id=fh,backend=fha0 \
	-qmp "unix:$tmp/qmp.sock,server=on,wait=off" \
	>"$tmp/qemu.log" 2>&1 &
qemu_pid=$!

for _ in $(seq 300); do
	[ -s "$tmp/hello.json" ] && break
	kill -0 "$listener_pid" 2>/dev/null ||
		fail "listener failed: $(cat "$tmp/listener.err")"
	kill -0 "$qemu_pid" 2>/dev/null || fail "QEMU exited: $(cat "$tmp/qemu.log")"
	sleep 0.1
done
[ -s "$tmp/hello.json" ] || fail "no handshake within 30 s"
hello=$(cat "$tmp/hello.json")
echo "HELLO: $hello"

[ "$(jq -r .name <<<"$hello")" = fh-handshake ] || fail "name"
[ "$(jq -r .uuid <<<"$hello")" = "$uuid" ] || fail "uuid"
[ "$(jq -r .qemu_pid <<<"$hello")" = "$qemu_pid" ] || fail "qemu_pid"
[ "$(jq -r .num_vcpus <<<"$hello")" = 2 ] || fail "num_vcpus"
[ "$(jq -r .full_hints_records <<<"$hello")" = 2 ] || fail "full HINTS"

for _ in $(seq 50); do [ -S "$tmp/qmp.sock" ] && break; sleep 0.1; done
cpus=$(qmp '{"execute":"query-cpus-fast"}')
echo "query-cpus-fast: $cpus"
want=$(jq -c '[sort_by(."cpu-index")[] | ."thread-id"]' <<<"$cpus")
got=$(jq -c .vcpu_tids <<<"$hello")
[ "$want" = "$got" ] || fail "thread ids: HELLO $got, QMP $want"
[ "$(jq -c 'unique | length' <<<"$got")" = 2 ] || fail "vCPU thread ids not distinct: $got"

stats=$(qmp '{"execute":"qom-get","arguments":{"path":"/machine/peripheral/fh","property":"x-stats"}}')
echo "stats: $(jq -c 'del(.vcpus)' <<<"$stats")"
[ "$(jq -r '."agent-connected"' <<<"$stats")" = true ] || fail "device reports no agent"
[ "$(jq -r '."agent-connects"' <<<"$stats")" = 1 ] || fail "agent-connects"

qmp '{"execute":"quit"}' >/dev/null || true
wait "$listener_pid" || fail "listener: $(cat "$tmp/listener.err")"
listener_pid=
echo "handshake ok"
