#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# End to end through the project's QEMU device: a guest runs device.sh with
# virtio-freqhint-pci, whose chardev connects to fake-agent.py, which checks
# the records that arrive.  Both sides must pass.
#
#   device-test.sh [--arch x86_64|arm64] [--packed] [--mmio] KERNEL EXPECT LOG
#                  (KERNEL EXPECT LOG as run-guest-test.sh)
#     --packed   the device with packed=on: both queues on the packed ring
#                (VIRTIO_F_RING_PACKED), which QEMU's qtest driver cannot
#                drive; the guest checks that it was negotiated
#     --mmio     the device on virtio-mmio (virtio-freqhint-device; arm64's
#                virt machine has the transport) instead of virtio-pci
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

arch=(--arch x86_64)
[ "${1:-}" = --arch ] && { arch=(--arch "${2:?}"); shift 2; }
packed=
[ "${1:-}" = --packed ] && { packed=,packed=on; export FH_GUEST_APPEND=freqhint.packed=1; shift; }
device=virtio-freqhint-pci
if [ "${1:-}" = --mmio ]; then
	device=virtio-freqhint-device
	export FH_GUEST_APPEND="${FH_GUEST_APPEND:+$FH_GUEST_APPEND }freqhint.transport=mmio"
	shift
fi
[ $# = 3 ] || die "usage: $0 [--arch x86_64|arm64] [--packed] [--mmio] uclamp|stock uclamp|nouclamp LOG"
kernel=$1 expect=$2 log=$3
tdir=$(dirname "$0")

. "$tdir/fake-agent-lib.sh"

# vCPU3 gets a class once it went offline; on the stock kernel, where
# device.sh runs a suspend cycle, another while the guest is frozen (the
# device's reset), which the restored driver must not apply by creating
# policies while cpufreq is suspended.
hf=(--host-freq 3:nohint:3:800000:3200000:128:1000000,1500000,2000000,2500000,3000000)
if [ "$expect" = uclamp ]; then
	seen=(1:min=800 1:perf\<=700 1:idle 3:nohint reset 1:busy)
else
	seen=(1:noclamp 1:perf\<=700 1:idle 3:nohint reset 1:busy)
	hf+=(--host-freq reset:3:1200000:2400000:128:1200000,1800000,2400000)
fi
agent_start --ceiling 700 --grant-ceiling 2:500 --timeout 900 \
	"${hf[@]}" "${seen[@]}"

grc=0
"$tdir/run-guest-test.sh" "${arch[@]}" "$kernel" "$expect" "$tdir/device.sh" "$log" -- \
	"${agent_chardev[@]}" \
	-device "$device,backend=fha0,rate-window-ms=200$packed" || grc=$?
agent_finish "$grc"
log "PASS: records reached the agent"
