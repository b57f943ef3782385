#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Build virtio_freqhint.ko against a kernel tree, warning-free (W=1), in a
# scratch copy (Kbuild writes next to the sources).
#
#   build-module.sh uclamp|stock|bookworm|DIR [OUT.ko [OUT_TEST.ko]]
#     uclamp     the project's test kernel (tests/harness/build-kernel.sh)
#     stock      Debian's backports 6.12 headers, /usr/src/linux-headers-6.12.*-amd64
#     bookworm   Debian's bookworm 6.1 headers, /usr/src/linux-headers-6.1.*-amd64
#     DIR        any prepared tree
# OUT_TEST.ko receives the KUnit module virtio_freqhint_test.ko, built only
# against kernels with CONFIG_KUNIT (the uclamp test kernel); it is not
# written otherwise.
# Fails when the tree is missing (scripts/setup.sh provides all three), when
# the build fails, or when it prints a warning.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

case "${1:-}" in
	"") die "usage: $0 uclamp|stock|bookworm|DIR [OUT.ko]" ;;
	*) kdir=$(kernel_tree "$1") ;;
esac
[ -n "$kdir" ] && [ -f "$kdir/Makefile" ] ||
	die "kernel tree for '$1' not found (${kdir:-no match}): run scripts/setup.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=$here/guest-driver
cp "$src"/*.c "$src"/*.h "$src/Kbuild" "$src/Makefile" "$work/"

if ! make -C "$kdir" M="$work" W=1 FREQHINT_SPEC_INCLUDE="$here/spec/include" \
	modules >"$work/make.log" 2>&1; then
	cat "$work/make.log"
	die "build failed against $kdir"
fi
[ -f "$work/virtio_freqhint.ko" ] || { cat "$work/make.log"; die "no virtio_freqhint.ko"; }
if grep -E 'warning:|error:' "$work/make.log"; then
	die "the build against $kdir printed warnings"
fi
[ -n "${2:-}" ] && cp "$work/virtio_freqhint.ko" "$2"
if [ -n "${3:-}" ] && [ -f "$work/virtio_freqhint_test.ko" ]; then
	cp "$work/virtio_freqhint_test.ko" "$3"
fi
echo "ok: virtio_freqhint.ko builds warning-free against $kdir ($(modinfo -F vermagic "$work/virtio_freqhint.ko"))"
