#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# run-qtest.sh [--arch x86_64|aarch64] BUILDDIR [FILTER]
#
# Run the virtio-freqhint qtests (libqos node + test in qos-test) of the
# QEMU build in BUILDDIR on qemu-system-ARCH (default x86_64: the pc
# machine; aarch64: virt).  Fails if none are found: a build without the
# device must not pass.
set -euo pipefail

arch=x86_64
if [ "${1:-}" = --arch ]; then
	arch=$2
	shift 2
fi
case "$arch" in
x86_64 | aarch64) ;;
*) echo "--arch x86_64|aarch64, not '$arch'" >&2; exit 1 ;;
esac
build=$1
# meson passes the file build-qemu.sh --print-build wrote.
[ -f "$build" ] && build=$(cat "$build")
filter=${2:-virtio-freqhint-tests/}
export QTEST_QEMU_BINARY=$build/qemu-system-$arch
qos=$build/tests/qtest/qos-test
[ -x "$qos" ] && [ -x "$QTEST_QEMU_BINARY" ] || { echo "no QEMU build in $build" >&2; exit 1; }

mapfile -t paths < <("$qos" -l | grep -F -- "$filter")
[ ${#paths[@]} -gt 0 ] || { echo "no virtio-freqhint qtests in $qos" >&2; exit 1; }
args=()
for p in "${paths[@]}"; do args+=(-p "$p"); done
# qos-test prints one TAP plan per path; report plain ok/not ok lines.
out=$("$qos" "${args[@]}" 2>&1) || { printf '%s\n' "$out" | grep -v '^# starting QEMU'; exit 1; }
printf '%s\n' "$out" | grep -E '^(ok|not ok)|buffers in|socket full'
# A sanitizer's report fails the run even where it let QEMU go on.
if printf '%s\n' "$out" | grep -E 'runtime error:|ERROR: [A-Za-z]*Sanitizer'; then
	echo "sanitizer report in the qtests' output" >&2
	exit 1
fi
n_ok=$(printf '%s\n' "$out" | grep -c '^ok ' || true)
[ "$n_ok" = "${#paths[@]}" ] || { echo "$n_ok of ${#paths[@]} qtests passed" >&2; exit 1; }
echo "${#paths[@]} qtests passed"
