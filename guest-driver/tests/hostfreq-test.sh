#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The host's real frequencies in the guest (issue 13, item 5): freqhintd
# (cpufreq backend) on the fixture host of tests/agent/mkfixture.sh, the
# project's QEMU with virtio-freqhint-pci connected to it, and a guest that
# runs hostfreq.sh (cpupower frequency-info, scaling_cur_freq, /proc/cpuinfo
# against the fixture's ranges and tables).
#
#   hostfreq-test.sh [--arch x86_64|arm64] KERNEL EXPECT LOG FREQHINTD
#                                                   (as run-guest-test.sh)
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

arch=(--arch x86_64)
[ "${1:-}" = --arch ] && { arch=(--arch "${2:?}"); shift 2; }
[ $# = 4 ] || die "usage: $0 [--arch x86_64|arm64] uclamp|stock uclamp|nouclamp LOG FREQHINTD"
kernel=$1 expect=$2 log=$3 freqhintd=$4
tdir=$(dirname "$0")
[ -x "$freqhintd" ] || die "freqhintd $freqhintd not found"

name=freqhint-hostfreq uuid=3f1c0c52-8d1e-4a57-9a43-5b7e2d6c1f02
work=$(mktemp -d)
agent_pid=
cleanup() {
	if [ -n "$agent_pid" ]; then
		kill "$agent_pid" 2>/dev/null
		wait "$agent_pid" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT

"$here/tests/agent/mkfixture.sh" host "$work/fx"
# This host has 2 CPUs: the VM's section places vCPU i on fixture CPU 2i,
# one per policy (as tests/e2e does).
cat >"$work/freqhintd.conf" <<EOC
[daemon]
backend=cpufreq

[vm $name]
ceiling=75
cpus=0,2,4,6
EOC
"$freqhintd" --foreground --verbose --config "$work/freqhintd.conf" \
	--backend cpufreq --sysfs-root "$work/fx/sys" --proc-root /proc \
	--cgroup-root /sys/fs/cgroup --socket "$work/device.sock" \
	--control-socket "$work/control.sock" --state-dir "$work/state" \
	--libvirt-uri none --no-metrics >"$work/freqhintd.log" 2>&1 &
agent_pid=$!
for _ in $(seq 300); do [ -S "$work/control.sock" ] && break; sleep 0.1; done
[ -S "$work/control.sock" ] || { cat "$work/freqhintd.log"; die "freqhintd did not start"; }

grc=0
"$tdir/run-guest-test.sh" "${arch[@]}" "$kernel" "$expect" "$tdir/hostfreq.sh" "$log" -- \
	-name "$name" -uuid "$uuid" \
	-chardev "socket,id=fh0,path=$work/device.sock,reconnect-ms=500" \
	-object freqhint-agent,id=fha0,chardev=fh0 \
	-device virtio-freqhint-pci,id=fh,backend=fha0 || grc=$?
if [ "$grc" != 0 ]; then
	tail -n 40 "$work/freqhintd.log" | sed 's/^/freqhintd: /'
	die "guest side failed"
fi
log "PASS: the guest shows the host's frequencies"
