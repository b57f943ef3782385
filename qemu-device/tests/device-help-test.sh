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
for p in chardev rate-window-ms forward-interval-ms perf feedback host-freq cpu-id perf-step idle-share; do
	grep -q "^  $p=" <<<"$props" || { echo "no property $p" >&2; exit 1; }
done
echo "virtio-freqhint-pci listed with its properties"
