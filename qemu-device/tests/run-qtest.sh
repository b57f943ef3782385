#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# run-qtest.sh BUILDDIR [FILTER]
#
# Run the virtio-freqhint qtests (libqos node + test in qos-test) of the
# QEMU build in BUILDDIR.  Fails if none are found: a build without the
# device must not pass.
set -euo pipefail

build=$1
# meson passes the file build-qemu.sh --print-build wrote.
[ -f "$build" ] && build=$(cat "$build")
filter=${2:-virtio-freqhint-tests/}
export QTEST_QEMU_BINARY=$build/qemu-system-x86_64
qos=$build/tests/qtest/qos-test
[ -x "$qos" ] && [ -x "$QTEST_QEMU_BINARY" ] || { echo "no QEMU build in $build" >&2; exit 1; }

mapfile -t paths < <("$qos" -l | grep -F -- "$filter")
[ ${#paths[@]} -gt 0 ] || { echo "no virtio-freqhint qtests in $qos" >&2; exit 1; }
args=()
for p in "${paths[@]}"; do args+=(-p "$p"); done
# qos-test prints one TAP plan per path; report plain ok/not ok lines.
out=$("$qos" "${args[@]}" 2>&1) || { printf '%s\n' "$out" | grep -v '^# starting QEMU'; exit 1; }
printf '%s\n' "$out" | grep -E '^(ok|not ok)|buffers in|socket full'
n_ok=$(printf '%s\n' "$out" | grep -c '^ok ' || true)
[ "$n_ok" = "${#paths[@]}" ] || { echo "$n_ok of ${#paths[@]} qtests passed" >&2; exit 1; }
echo "${#paths[@]} qtests passed"
