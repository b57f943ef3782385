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
# OUTDIR/core/: the change to QEMU itself the device series is based on
# (Based-on: in its cover letter), a patch of its own:
#   virtio: validate every driver that sets FEATURES_OK (patches/0001-*)
# OUTDIR/: the device:
#   1/5 standard-headers: import the virtio-freqhint header
#   2/5 hw/virtio: the device and its null backend        (+ patches/0002-*)
#   3/5 backends: the freqhint-agent backend               (+ patches/0003-*)
#   4/5 tests/qtest: virtio-freqhint tests                 (+ patches/0004-*)
#   5/5 docs: the device page and the agent protocol       (+ patches/0005-*)
#
# The build fix-ups in patches/build/ are for Debian's tarball, and the
# fix in patches/fixes/ is for QEMU 10.0.2 only (upstream fixed that bug
# its own way in 10.1.0 and 10.0.4): neither is part of either series.
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

core_patch=$here/patches/0001-virtio-validate-features-on-every-FEATURES_OK.patch
header_files=(
	include/standard-headers/linux/virtio_freqhint.h
)
# The device, its PCI proxy, the backend class with the null backend, and
# the agent protocol header (the device checks records with its rules).
device_files=(
	hw/virtio/virtio-freqhint.c
	hw/virtio/virtio-freqhint-pci.c
	backends/freqhint.c
	include/hw/virtio/virtio-freqhint.h
	include/system/freqhint.h
	include/system/freqhint-agent.h
)
agent_files=(
	backends/freqhint-agent.c
)
test_files=(
	tests/qtest/libqos/virtio-freqhint.c
	tests/qtest/libqos/virtio-freqhint.h
	tests/qtest/virtio-freqhint-test.c
)
doc_files=(
	docs/system/devices/virtio-freqhint.rst
	docs/interop/virtio-freqhint-agent.rst
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

# commit FILES... -- PATCH: the files as built here, the hook-up patch
# (edits to existing QEMU files), the message on stdin.
commit() {
	local files=() p
	while [ "$1" != -- ]; do files+=("$1"); shift; done
	shift
	add_files "${files[@]}"
	for p in "$@"; do git apply "$p"; done
	git add -A
	git commit -q -s -F -
}

# core_commit PATCH: a change to QEMU itself; its message is the patch's
# own (Subject to the "---" line), without a Signed-off-by (commit -s).
core_commit() {
	git apply "$1"
	git add -A
	sed -n '/^Subject: /,/^---$/p' "$1" | sed -e '$d' |
		sed -e '1s/^Subject: \[PATCH[^]]*\] //' -e '/^Signed-off-by:/d' |
		git commit -q -s -F -
}
core_commit "$core_patch"
core=$(git rev-parse HEAD)

commit "${header_files[@]}" -- <<'MSG'
standard-headers: import the virtio-freqhint header

linux/virtio_freqhint.h is the device's guest interface, imported the way
scripts/update-linux-headers.sh imports uapi headers.  It is not in Linux
yet: virtio device ID 56 is experimental, pending a reservation by the
virtio TC.
MSG

commit "${device_files[@]}" -- "$here"/patches/0002-*.patch <<'MSG'
hw/virtio: add the virtio-freqhint device and its null backend

The guest reports, per vCPU, the utilization clamps and performance
request of what it runs.  The device validates every buffer (structural
errors go through virtio_error(), bad records are refused one by one),
keeps the latest record per vCPU and forwards changes, coalesced and rate
bounded, to a backend.  What the host grants reaches the driver as
FEEDBACK snapshots on an event queue: one snapshot of the whole host
state per change, on the leading edge, at most one per rate window, and
with no buffer posted only the latest state waits.  The rate and forward
bounds hold through device resets and a driver breaking the device: a
reset is forwarded only if some vCPU held a hint, through the forward
interval.

The backend is a QOM object linked with backend=, the way virtio-rng
links its rng backend, and lives in backends/ with them
(include/system/freqhint.h): an abstract freqhint-backend class (hints out,
VM run state, feedback in) and freqhint-null, which acts on nothing and
grants the no-agent defaults.  A device given no backend makes a
freqhint-null.

The 16-byte configuration space is fixed for the device's lifetime.  The
event queue's first buffer after DRIVER_OK carries each possible vCPU's
64-bit firmware id (CPUArchId.arch_id: the APIC ID on x86, the MPIDR
affinity on arm), so the guest maps its CPUs to the device's vCPU
indexes.  Migration carries guest state only and fails if the
guest-visible constants differ; host state is re-derived on the
destination, and the driver hears of it after load.

The agent protocol header, include/system/freqhint-agent.h,
comes with the device, which checks records by its rules.  It is shared
with the agent, hence GPL-2.0-or-later OR BSD-3-Clause: the agent links
it into a BSD-licensable daemon.

Properties: backend, rate-window-ms (default 10), perf,
feedback, host-freq, cpu-id, perf-step, idle-share; host tuning
x-forward-interval-ms (default 5).  Telemetry: qom-get <dev> x-stats
(experimental).  The device is modern-only on every transport
(validate_features refuses a driver without VIRTIO_F_VERSION_1); the
PCI proxy has no transitional device ID.  VIRTIO_RING_F_EVENT_IDX is not
offered, and event_idx=on is refused: the rate bound relies on
VRING_USED_F_NO_NOTIFY.
MSG

commit "${agent_files[@]}" -- "$here"/patches/0003-*.patch <<'MSG'
backends: add the freqhint-agent backend

  -chardev socket,id=fh0,path=/run/freqhint/device.sock,reconnect-ms=1000
  -object freqhint-agent,id=agent0,chardev=fh0
  -device virtio-freqhint-pci,backend=agent0

freqhint-agent speaks the protocol of include/system/freqhint-agent.h to
a host agent over a socket chardev.  Like rng-egd it is created after
the chardevs and claims its chardev when complete, so object-add fails
at once for a chardev that does not exist or is not a plain socket (with
pipe, file or pty a disconnect is a no-op, a mux would interleave
bytes); object-del is refused while a device uses the backend.  It speaks only while the VM runs: HELLO waits
for a paused or incoming VM to run, and carries the vCPU thread ids and
the VM's identity, which the agent checks against the process that
connected to it; a vCPU hot-plug is reported with a VCPUS message.
Output never blocks the main loop and nothing stale is queued: a frame
the socket takes in part is finished from a G_IO_OUT watch, and a refused
one is regenerated from the device's current state when the socket
drains.  The agent is trusted no more than the guest: a frame that
breaks the protocol closes the connection.

MSG

commit "${test_files[@]}" -- "$here"/patches/0004-*.patch <<'MSG'
tests/qtest: add virtio-freqhint tests

A libqos node for virtio-freqhint-pci and qtests that play both the guest
driver and the host agent: a batch through the virtqueue checked byte for
byte on the agent socket, coalescing, indirect descriptors, CPU_IDS and
FEEDBACK snapshots on the event queue (one per change, the rate bound,
pending without a buffer, short buffers), x-query-virtio-status, refused
features and event_idx, the backend objects (freqhint-agent by
backend=, freqhint-null, one device per backend), device_del, reset
loops, migration of guest state only, agent reconnect with full resend,
stop/run, vCPU hot-plug, a socket that stops taking frames, the
keepalive timeout, the rate bound, and hostile buffers and records, none
of which may reach the agent (the event-buffer reentrancy guard, the
record budget per window, the backend object's life cycle included).
They are built where the device is and the host has POSIX sockets, and
run wherever qos-test finds the node: x86_64/pc, i386/pc (untested
here) and aarch64/virt.  The x86-only cases (vCPU hot-plug, APIC ID
layouts, ACPI hot-unplug) are registered on x86 only; on aarch64's virt
machine the devices a test adds with device_add go to a PCIe root port,
and CPU_IDS is checked to carry the MPIDR affinity (vCPU 16 of 17 with
GICv3 is 0x100).  One more case, max-vcpus, is a plain qtest beside
them, since the x86 graph's pc machine stops at 255 vCPUs: q35 with
1024 possible vCPUs (virt with GICv3 and 512 on aarch64), the agent link
carrying a HELLO, a FULL HINTS and GRANTS of that many entries.  Nothing
waits on the wall clock but the keepalive case (a real-time timer,
100 ms); the 50 cases take about 15 s on x86_64.
MSG

commit "${doc_files[@]}" -- "$here"/patches/0005-*.patch <<'MSG'
docs: document virtio-freqhint and its agent protocol

For users, a page in the system manual: what the device is, its
backends and properties, an example with freqhint-agent, and what
migrates.  For the people who write agents, the protocol between
freqhint-agent and the host agent in the interop manual: framing, the
handshake, what HELLO carries and why, hints, grants, host frequencies,
keepalive and close reasons.
MSG

rm -rf "$out"
mkdir -p "$out/core"
git format-patch -q --subject-prefix="PATCH" -o "$out/core" "$base..$core"
git format-patch -q --cover-letter --subject-prefix="RFC PATCH" \
	-o "$out" "$core"
# The cover letter's subject and text (the subject on the first line of
# cover-letter.txt) in place of git's placeholders.
fill_cover() {
	local cover=$1 blurb=$2 subject
	subject=$(head -n1 "$blurb")
	awk -v subject="$subject" -v blurb="$blurb" '
	/\*\*\* SUBJECT HERE \*\*\*/ { sub(/\*\*\* SUBJECT HERE \*\*\*/, subject) }
	/^\*\*\* BLURB HERE \*\*\*$/ {
		while ((getline line < blurb) > 0)
			if (n++) print line
		next
	}
	{ print }' "$cover" >"$cover.new"
	mv "$cover.new" "$cover"
	! grep -q '\*\*\* .* HERE \*\*\*' "$cover" || { echo "make-series.sh: placeholders left in $cover" >&2; exit 1; }
}
fill_cover "$out/0000-cover-letter.patch" "$here/cover-letter.txt"
ls "$out" "$out/core"
