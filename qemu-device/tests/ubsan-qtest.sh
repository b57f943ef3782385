#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# ubsan-qtest.sh: build QEMU with the device's files under UBSan and run the
# device qtests on it, x86_64 and aarch64, with UBSAN_OPTIONS=halt_on_error=1
# (and -fno-sanitize-recover): any undefined behaviour in the device stops
# QEMU and fails its qtest.
#
# The variant has a build cache of its own, $FREQHINT_CACHE/qemu-ubsan-device/
# <key>/ (or FREQHINT_QEMU_UBSAN_CACHE/<key>/), keyed by the compiler
# wrapper ubsan-cc.sh; inside it build-qemu.sh keys the tree by the device's
# inputs as usual.  Only the device's files miss the shared ccache.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$top/scripts/lib.sh"

root=${FREQHINT_QEMU_UBSAN_CACHE:-$FREQHINT_CACHE/qemu-ubsan-device}
key=$(cache_key <"$here/ubsan-cc.sh")
mkdir -p "$root"
cache_prune "$root" "$root/$key"
export FREQHINT_QEMU_CACHE=$root/$key
export FREQHINT_QEMU_CONFIGURE_FLAGS="--cc=$here/ubsan-cc.sh"
# The tarball is the same for every cache: take the default cache's copy
# when it has one rather than downloading it again (build-qemu.sh checks
# nothing more of it than the normal build does).
tarball=qemu_10.0.2+ds.orig.tar.xz
mkdir -p "$FREQHINT_QEMU_CACHE"
if [ ! -f "$FREQHINT_QEMU_CACHE/$tarball" ] && [ -f "$FREQHINT_CACHE/qemu/$tarball" ]; then
	cp "$FREQHINT_CACHE/qemu/$tarball" "$FREQHINT_QEMU_CACHE/$tarball"
fi
build=$("$top/qemu-device/build-qemu.sh" --print-build)
touch "$FREQHINT_QEMU_CACHE"

# A variant whose device objects carry no UBSan checks would pass anything.
objs=$(find "$build" -name '*virtio-freqhint.c.o' -path '*hw_virtio*')
[ -n "$objs" ] || die "no virtio-freqhint.c object in $build"
for o in $objs; do
	nm "$o" | grep __ubsan_handle >/dev/null || die "$o is not built with UBSan"
done

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
for arch in x86_64 aarch64; do
	log "device qtests under UBSan, qemu-system-$arch"
	"$here/run-qtest.sh" --arch "$arch" "$build"
done
