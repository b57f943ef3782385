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
#                   agent and host); setup builds and fetches the arm64
#                   pieces (cached afterwards)
# Setup is `setup.sh demo`: only the packages, QEMU target and kernel the
# demo boots, so a new machine sees its first table without waiting for
# what only the tests need.
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
x86_64 | arm64) ;;
*) die "--arch x86_64|arm64, not '$arch'" ;;
esac

bash "$here/scripts/setup.sh" demo --arch "$arch"
build=$(clone_builds)/demo
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$here" >/dev/null
fi
meson compile -C "$build" freqhintd freqhintctl fh-dvfs-emu >/dev/null

exec "$here/tests/e2e/run-e2e.sh" --demo --emu "$build/bench/dvfs-emu/fh-dvfs-emu" --samples 5 --arch "$arch" \
	--freqhintd "$build/host-agent/freqhintd" \
	--freqhintctl "$build/host-agent/freqhintctl"
