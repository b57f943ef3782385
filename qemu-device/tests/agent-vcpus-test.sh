#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# agent-vcpus-test.sh QEMU_BUILD_DIR FREQHINTD FREQHINTCTL MKFIXTURE
#
# Issue 42 item 5 through the real agent: a TCG machine with one vCPU
# plugged and many possible connects virtio-freqhint-pci to freqhintd --
# q35 with FH_MAX_VCPUS (1024), then virt with GICv3 with 512, that
# machine's maximum.  freqhintd must hold a VM of that many vCPUs
# (vCPU 0 with its thread, the others without), and the operator ceiling
# it sends in GRANTS must reach the device for the last vCPU.
set -euo pipefail

test_name=agent-vcpus-test
. "$(dirname "$0")/agent-test-lib.sh"
# jq_is WANT FILTER CTL_ARGS...: freqhintctl's answer, filtered, is WANT.
jq_is() {
	local want=$1 filter=$2
	shift 2
	[ "$(ctl "$@" | jq -r "$filter")" = "$want" ]
}

start_freqhintd $'[vm fh-max]\nceiling=50\n'

# run_machine ARCH VCPUS MACHINE_OPTIONS...
run_machine() {
	local arch=$1 n=$2 qmp_sock=$tmp/qmp-$1.sock qemu_pid t0=$SECONDS stats
	shift 2
	"$build/qemu-system-$arch" "$@" -accel tcg -smp "1,maxcpus=$n" -m 128 \
		-nodefaults -display none -name fh-max \
		-uuid 0b6a3c1e-9a4f-4f1e-8d2c-5e7f6a8b9c0d \
		-chardev "socket,id=fh0,path=$tmp/dev.sock,reconnect-ms=1000" \
		-object freqhint-agent,id=fha0,chardev=fh0 \
		-device virtio-freqhint-pci,id=fh,backend=fha0 \
		-qmp "unix:$qmp_sock,server=on,wait=off" >"$tmp/qemu-$arch.log" 2>&1 &
	qemu_pid=$!
	pids+=("$qemu_pid")

	until_ok 60 jq_is "$n" length vcpus fh-max ||
		fail "$arch: freqhintd does not hold fh-max with $n vCPUs"
	! jq_is no-thread '.[0].state' vcpus fh-max || fail "$arch: vCPU 0 has no thread"
	jq_is no-thread ".[$((n - 1))].state" vcpus fh-max ||
		fail "$arch: vCPU $((n - 1)) is not plugged but has a thread"
	stats() {
		printf '%s\n' '{"execute":"qmp_capabilities"}' \
			'{"execute":"qom-get","arguments":{"path":"/machine/peripheral/fh","property":"x-stats"}}' |
			socat -t 5 - "UNIX-CONNECT:$qmp_sock" | jq -c 'select(has("return")) | .return' | tail -n 1
	}
	last_ceiling() { [ "$(stats | jq ".vcpus[$((n - 1))].\"granted-ceiling\"")" = 512 ]; }
	until_ok 30 last_ceiling || fail "$arch: the ceiling did not reach vCPU $((n - 1)): $(stats | jq -c 'del(.vcpus)')"
	stats=$(stats)
	[ "$(jq '."num-vcpus"' <<<"$stats")" = "$n" ] || fail "$arch: num-vcpus"
	[ "$(jq '."agent-connected"' <<<"$stats")" = true ] || fail "$arch: no agent"
	echo "$arch: $n vCPUs held by freqhintd, GRANTS relayed, $((SECONDS - t0)) s"
	kill "$qemu_pid"
	wait "$qemu_pid" 2>/dev/null || true
	until_ok 30 jq_is 0 .connected_vms status || fail "$arch: the VM did not leave"
}

run_machine x86_64 1024 -machine q35
if [ -x "$build/qemu-system-aarch64" ]; then
	run_machine aarch64 512 -machine virt,gic-version=3 -cpu max
fi
stop_freqhintd
echo "agent-vcpus ok"
