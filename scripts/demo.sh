#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The main job, end to end: a guest under the project's QEMU changes task
# clamps with uclampset; virtio_freqhint.ko reports them through the
# virtio-freqhint-pci device to freqhintd, which sets the (fixture) host's
# cpufreq limits.  After each step a table shows what the guest asked for,
# what the host granted, and the frequency limits written.  Leaves nothing
# running.  Run as root; the first run installs and builds what it needs.
#
#   demo.sh [--arch x86_64|arm64]
#     --arch arm64  the guest is arm64 on QEMU's virt machine (the same
#                   agent and host); sets FREQHINT_ARM64=1, so setup builds
#                   and fetches the arm64 pieces (cached afterwards)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"

arch=x86_64
case "${1:-}" in
"") ;;
--arch) arch=${2:?usage: $0 [--arch x86_64|arm64]} ;;
*) die "usage: $0 [--arch x86_64|arm64]" ;;
esac
case "$arch" in
x86_64) ;;
arm64) export FREQHINT_ARM64=1 ;;
*) die "--arch x86_64|arm64, not '$arch'" ;;
esac

bash "$here/scripts/setup.sh"
build=$FREQHINT_CACHE/build/demo
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$here" >/dev/null
fi
meson compile -C "$build" freqhintd freqhintctl >/dev/null

exec "$here/tests/e2e/run-e2e.sh" --demo --samples 5 --arch "$arch" \
	--freqhintd "$build/host-agent/freqhintd" \
	--freqhintctl "$build/host-agent/freqhintctl"
