#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make-series.sh [OUTDIR]
#
# Write the device as a git format-patch series against QEMU's tree, for
# upstream review (default OUTDIR: ./virtio-freqhint-series).  The scratch
# repository holds only the QEMU files the series touches, taken from the
# pristine tarball, so every "index" line names the same blobs as in a full
# QEMU checkout and the series applies there with git am.
#
#   1/3 standard-headers: import the virtio-freqhint header
#   2/3 hw/virtio: add the virtio-freqhint device   (+ patches/0001-*)
#   3/3 tests/qtest: add virtio-freqhint tests      (+ patches/0002-*)
#
# The build fix-ups in patches/build/ are for Debian's tarball and are not
# part of the series.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=$(realpath -m "${1:-virtio-freqhint-series}")
eval "$("$here/build-qemu.sh" --print-dirs)"

repo=$(mktemp -d)
trap 'rm -rf "$repo"' EXIT
export GIT_AUTHOR_NAME=${GIT_AUTHOR_NAME:-freqhint}
export GIT_AUTHOR_EMAIL=${GIT_AUTHOR_EMAIL:-freqhint@localhost}
export GIT_COMMITTER_NAME=$GIT_AUTHOR_NAME
export GIT_COMMITTER_EMAIL=$GIT_AUTHOR_EMAIL
git() { command git -C "$repo" -c commit.gpgsign=false "$@"; }

device_files=(
	hw/virtio/virtio-freqhint.c
	hw/virtio/virtio-freqhint-agent.c
	hw/virtio/virtio-freqhint-pci.c
	include/hw/virtio/virtio-freqhint.h
	include/hw/virtio/virtio-freqhint-agent.h
	docs/interop/virtio-freqhint-agent.rst
)
header_files=(
	include/standard-headers/linux/virtio_freqhint.h
)
test_files=(
	tests/qtest/libqos/virtio-freqhint.c
	tests/qtest/libqos/virtio-freqhint.h
	tests/qtest/virtio-freqhint-test.c
)

# Base: the pristine versions of every existing file the patches edit.
git init -q
for p in "$here"/patches/*.patch; do
	for f in $(sed -n 's|^+++ b/||p' "$p"); do
		mkdir -p "$repo/$(dirname "$f")"
		cp "$PRISTINE/$f" "$repo/$f"
		chmod u+w "$repo/$f"
	done
done
git add -A
git commit -q -m "QEMU $(cat "$PRISTINE/VERSION") (files touched by the series)"
base=$(git rev-parse HEAD)

add_files() {
	local f
	for f in "$@"; do
		mkdir -p "$repo/$(dirname "$f")"
		cp "$SOURCE/$f" "$repo/$f"
	done
}

add_files "${header_files[@]}"
git add -A
git commit -q -s -F - <<'MSG'
standard-headers: import the virtio-freqhint header

linux/virtio_freqhint.h is the device's guest interface, imported the way
scripts/update-linux-headers.sh imports uapi headers.  It is not in Linux
yet: virtio device ID 56 is experimental, pending a reservation by the
virtio TC.
MSG

add_files "${device_files[@]}"
git apply "$here"/patches/0001-*.patch
git add -A
git commit -q -s -F - <<'MSG'
hw/virtio: add the virtio-freqhint device

The guest reports, per vCPU, the utilization clamps and performance
request of what it runs.  The device validates every buffer (structural
errors go through virtio_error(), bad records are refused one by one),
keeps the latest record per vCPU and forwards changes, coalesced and rate
bounded, to a host agent over a socket chardev (any other chardev is
refused at realize).  What the agent grants reaches the driver as FEEDBACK
snapshots on an event queue: one snapshot of the whole host state per
change, on the leading edge, at most one per rate window, and with no
buffer posted only the latest state waits.  The rate and forward bounds
hold through device resets and a driver breaking the device: a reset is
forwarded only if some vCPU held a hint, through the forward interval.

The device speaks to the agent only while the VM runs: HELLO waits for a
paused or incoming VM to run, a VM that stops withdraws its hints and
sends them again when it runs, and a vCPU hot-plug is reported with a
VCPUS message.  Output never blocks the main loop and nothing stale is
queued: a frame the socket takes in part is finished from a G_IO_OUT
watch, and a refused one is regenerated from the current state when the
socket drains.  The agent protocol is documented in
docs/interop/virtio-freqhint-agent.rst; its header,
include/hw/virtio/virtio-freqhint-agent.h, is shared with the agent
(hence GPL-2.0-or-later OR BSD-3-Clause: the agent links it into a
BSD-licensable daemon).

The 16-byte configuration space is fixed for the device's lifetime.  The
event queue's first buffer after DRIVER_OK carries each possible vCPU's
64-bit firmware id (CPUArchId.arch_id: the APIC ID on x86, the MPIDR
affinity on arm), so the guest maps its CPUs to the device's vCPU
indexes.  Migration carries guest state only and fails if the
guest-visible constants differ; host state is re-derived on the
destination, and the driver hears of it after load.

  -chardev socket,id=fh0,path=/run/freqhint/device.sock,reconnect-ms=1000
  -device virtio-freqhint-pci,chardev=fh0

Properties: chardev, rate-window-ms (default 10), x-forward-interval-ms
(default 5), perf, feedback, host-freq, cpu-id, perf-step, idle-share.
Telemetry: qom-get <dev> x-stats (experimental).
The device is modern-only on every transport (validate_features refuses a
driver without VIRTIO_F_VERSION_1); the PCI proxy has no transitional
device ID.
MSG

add_files "${test_files[@]}"
git apply "$here"/patches/0002-*.patch
git add -A
git commit -q -s -F - <<'MSG'
tests/qtest: add virtio-freqhint tests

A libqos node for virtio-freqhint-pci and qtests that play both the guest
driver and the host agent: a batch through the virtqueue checked byte for
byte on the agent socket, coalescing, CPU_IDS and FEEDBACK snapshots on
the event queue (one per change, the rate bound, pending without a
buffer, short buffers), x-query-virtio-status, refused features, reset
loops, migration of guest state only, agent reconnect with full resend, stop/run and migration, vCPU
hot-plug, a socket that stops taking frames, the keepalive timeout, the
rate bound, and hostile buffers and records, none of which may reach the
agent.
MSG

rm -rf "$out"
mkdir -p "$out"
git format-patch -q --cover-letter -o "$out" "$base"
ls "$out"
