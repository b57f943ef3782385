#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The main job, end to end: a guest under the project's QEMU changes task
# clamps with uclampset; virtio_freqhint.ko reports them through the
# virtio-freqhint-pci device to freqhintd, which sets the (fixture) host's
# cpufreq limits.  After each step a table shows what the guest asked for,
# what the host granted, and the frequency limits written.  Leaves nothing
# running.  Run as root; the first run installs and builds what it needs.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"

bash "$here/scripts/setup.sh"
build=$FREQHINT_CACHE/build/demo
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$here" >/dev/null
fi
meson compile -C "$build" freqhintd freqhintctl >/dev/null

exec "$here/tests/e2e/run-e2e.sh" --demo --samples 5 \
	--freqhintd "$build/host-agent/freqhintd" \
	--freqhintctl "$build/host-agent/freqhintctl"
