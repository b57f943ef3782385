#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# device-help-test.sh QEMU_BUILD_DIR: the binary lists the device.
set -euo pipefail
build=$1
[ -f "$build" ] && build=$(cat "$build")
out=$("$build/qemu-system-x86_64" -device help)
grep -q '^name "virtio-freqhint-pci", bus PCI' <<<"$out" ||
	{ echo "virtio-freqhint-pci not in -device help" >&2; exit 1; }
props=$("$build/qemu-system-x86_64" -device virtio-freqhint-pci,help)
for p in backend rate-window-ms x-forward-interval-ms perf feedback host-freq cpu-id cur-freq perf-step idle-share; do
	grep -q "^  $p=" <<<"$props" || { echo "no property $p" >&2; exit 1; }
done
# One way to configure it: the chardev belongs to -object freqhint-agent.
! grep -q "^  chardev=" <<<"$props" || { echo "the device still has chardev=" >&2; exit 1; }
# The backends: freqhint-agent (with its chardev) and freqhint-null.
objs=$("$build/qemu-system-x86_64" -object help)
for o in freqhint-agent freqhint-null; do
	grep -qx "  $o" <<<"$objs" || { echo "-object help lacks $o" >&2; exit 1; }
done
"$build/qemu-system-x86_64" -object freqhint-agent,help | grep -q '^  chardev=' ||
	{ echo "freqhint-agent has no chardev property" >&2; exit 1; }
echo "virtio-freqhint-pci listed with its properties, and its backends"
