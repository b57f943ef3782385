#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Build virtio_freqhint.ko against a kernel tree, warning-free (W=1), in a
# scratch copy (Kbuild writes next to the sources).
#
#   build-module.sh [--cached] [--arch x86_64|arm64] uclamp|stock|bookworm|DIR
#                   [OUT.ko [OUT_TEST.ko]]
#     --cached   take the modules from $FREQHINT_CACHE/modules/<key> when
#                these sources were built against this tree before (the
#                key hashes the module and spec/include sources, this
#                script, the tree's .config, Module.symvers and release,
#                and the compiler), else build and keep them there.  For
#                tests that boot the module: a build costs 10-20 s and,
#                since Kbuild's output is not byte-reproducible from a
#                scratch directory, a new initramfs each time.  The
#                compile tests build without it.
#     uclamp     the project's test kernel (tests/harness/build-kernel.sh)
#     stock      Debian's backports 6.12 headers, /usr/src/linux-headers-6.12.*-amd64
#     bookworm   Debian's bookworm 6.1 headers, /usr/src/linux-headers-6.1.*-amd64
#     DIR        any prepared tree
#     --arch arm64  uclamp and stock name the arm64 trees (build-kernel.sh
#                and fetch-stock-kernel.sh --arch arm64; no bookworm).  A
#                tree configured for arm64 (CONFIG_ARM64 in its .config,
#                whichever way it was named) is cross-compiled with Debian's
#                gcc-aarch64-linux-gnu (tests/harness/cross-gcc.sh).
# OUT_TEST.ko receives the KUnit module virtio_freqhint_test.ko, built only
# against kernels with CONFIG_KUNIT (the uclamp test kernel); it is not
# written otherwise.
# Fails when the tree is missing (scripts/setup.sh provides all three), when
# the build fails, or when it prints a warning.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

cached=0 arch=x86_64
[ "${1:-}" = --cached ] && { cached=1; shift; }
[ "${1:-}" = --arch ] && { arch=${2:?}; shift 2; }
case "${1:-}" in
	"") die "usage: $0 [--cached] [--arch x86_64|arm64] uclamp|stock|bookworm|DIR [OUT.ko [OUT_TEST.ko]]" ;;
	*) kdir=$(kernel_tree "$1" "$arch") ;;
esac
[ -n "$kdir" ] && [ -f "$kdir/Makefile" ] ||
	die "kernel tree for '$1' ($arch) not found (${kdir:-no match}): run scripts/setup.sh"
kdir=$(readlink -f "$kdir")
src=$here/guest-driver

# A foreign tree: its ARCH and Debian's cross compiler, first in PATH (the
# stock headers' Makefile sets ARCH and CROSS_COMPILE itself; the uclamp
# kernel's O= tree does not).
mk=(make -C "$kdir")
cc=${CC:-gcc}
if grep -q '^CONFIG_ARM64=y' "$kdir/.config" 2>/dev/null; then
	PATH=$("$here/tests/harness/cross-gcc.sh" arm64):$PATH
	mk+=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
	cc=aarch64-linux-gnu-gcc
fi

# put_outputs DIR: copy the modules built in DIR to where they were asked for.
put_outputs() {
	[ -n "${out_ko:-}" ] && cp "$1/virtio_freqhint.ko" "$out_ko"
	if [ -n "${out_test_ko:-}" ] && [ -f "$1/virtio_freqhint_test.ko" ]; then
		cp "$1/virtio_freqhint_test.ko" "$out_test_ko"
	fi
	return 0
}
out_ko=${2:-} out_test_ko=${3:-}

entry=
if [ "$cached" = 1 ]; then
	key=$(
		{
			cd "$here" && sha256sum guest-driver/tests/build-module.sh \
				guest-driver/*.c guest-driver/*.h guest-driver/Kbuild guest-driver/Makefile
			find spec/include -type f -print0 | sort -z | xargs -0 sha256sum
			echo "$kdir"
			# bench/guest's anchor build (Kbuild: FH_BENCH_ANCHOR).
			echo "anchor=${FREQHINT_BENCH_ANCHOR:-}"
			# ...and its own-time accounting (Kbuild: FH_OWN_TIME).
			echo "own_time=${FREQHINT_OWN_TIME:-}"
			for f in .config Module.symvers include/config/kernel.release; do
				if [ -f "$kdir/$f" ]; then sha256sum "$kdir/$f"; fi
			done
			"$cc" --version | sed -n 1p
		} | cache_key
	)
	mcache=$FREQHINT_CACHE/modules
	entry=$mcache/$key
	if [ -f "$entry/virtio_freqhint.ko" ]; then
		touch "$entry"
		put_outputs "$entry"
		echo "ok: virtio_freqhint.ko for $kdir from the cache ($entry)"
		exit 0
	fi
	mkdir -p "$mcache"
	cache_prune "$mcache"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$src"/*.c "$src"/*.h "$src/Kbuild" "$src/Makefile" "$work/"

if ! nice -n 10 "${mk[@]}" M="$work" W=1 FREQHINT_SPEC_INCLUDE="$here/spec/include" \
	modules >"$work/make.log" 2>&1; then
	cat "$work/make.log"
	die "build failed against $kdir"
fi
[ -f "$work/virtio_freqhint.ko" ] || { cat "$work/make.log"; die "no virtio_freqhint.ko"; }
if grep -E 'warning:|error:' "$work/make.log"; then
	die "the build against $kdir printed warnings"
fi
put_outputs "$work"
if [ -n "$entry" ]; then
	# Published whole or not at all: a concurrent build of the same key
	# either wins the rename or finds the entry there and drops its own.
	part=$(mktemp -d "$mcache/.part.XXXXXX")
	cp "$work"/*.ko "$part/"
	chmod 755 "$part"
	mv -T "$part" "$entry" 2>/dev/null || rm -rf "$part"
fi
echo "ok: virtio_freqhint.ko builds warning-free against $kdir ($(modinfo -F vermagic "$work/virtio_freqhint.ko"))"
