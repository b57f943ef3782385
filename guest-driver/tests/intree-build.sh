#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The driver in tree and built in: guest-driver/ as drivers/virtio/freqhint/
# (sourced from drivers/virtio/Kconfig and Makefile), CONFIG_VIRTIO_FREQHINT=y
# and CONFIG_VIRTIO_FREQHINT_KUNIT_TEST=y, inside the project's x86 uclamp
# kernel (tests/harness/build-kernel.sh), built incrementally on its build
# tree: the directory, then vmlinux.  Checks that Kconfig takes both options
# as they are written, that the directory compiles warning-free (W=1), that
# vmlinux links (no global symbol of the driver collides with the kernel's
# or with the KUnit test's) and that it holds the driver.
#
#   intree-build.sh [--dir-only]   --dir-only: skip the vmlinux link
#
# The shared cache entry is not written: its source and build trees are
# seen through overlays (their changes go to a scratch directory) mounted
# in a mount namespace of this script's own, at the trees' own paths, so
# that every command line Kbuild recorded stays the same and only what the
# two options touch is rebuilt.  Needs root (mount); run by hand, measured
# in README.md.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

if [ "${1:-}" != --in-namespace ]; then
	[ "$(id -u)" = 0 ] || die "needs root (overlay mounts in a private mount namespace)"
	entry=$("$here/tests/harness/build-kernel.sh" --print-dir)
	exec unshare --mount --propagation private "$0" --in-namespace "$entry" "$@"
fi
entry=$2
shift 2
vmlinux=1
[ "${1:-}" = --dir-only ] && vmlinux=0

build=$entry/build
# The path the build tree was made from (its `source` link) and the tree
# of the project's kernel patches applied (build-kernel.sh's -p<hash>, if
# any): the latter seen at the former's path, as when it was built.
srcpath=$(readlink "$build/source")
patched=$(find "$(dirname "$srcpath")" -maxdepth 1 -name "$(basename "$srcpath")-p*" -print -quit)
lower=${patched:-$srcpath}
[ -f "$lower/Makefile" ] || die "no kernel source at $lower"

work=$(mktemp -d "${TMPDIR:-/tmp}/fh-intree.XXXXXX")
cleanup() {
	umount "$build" 2>/dev/null || true
	umount "$srcpath" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work"/{src,build}/{upper,work}
mount -t overlay overlay -o "lowerdir=$lower,upperdir=$work/src/upper,workdir=$work/src/work" "$srcpath"
mount -t overlay overlay -o "lowerdir=$build,upperdir=$work/build/upper,workdir=$work/build/work" "$build"

# The driver's directory as it would be sent: sources, Kbuild, Kconfig and
# the device ABI header (include/, which Kbuild prefers to ../spec).
d=$srcpath/drivers/virtio/freqhint
mkdir -p "$d/include/linux"
cp "$here"/guest-driver/*.c "$here"/guest-driver/*.h "$here"/guest-driver/Kbuild \
	"$here"/guest-driver/Kconfig "$d/"
cp "$here/spec/include/linux/virtio_freqhint.h" "$d/include/linux/"
echo 'source "drivers/virtio/freqhint/Kconfig"' >>"$srcpath/drivers/virtio/Kconfig"
echo 'obj-$(CONFIG_VIRTIO_FREQHINT) += freqhint/' >>"$srcpath/drivers/virtio/Makefile"

# As build-kernel.sh built it (the same CC, so no command line changes).
mk=(make -C "$srcpath" O="$build" -j"$(nproc)")
if command -v ccache >/dev/null; then
	export CCACHE_DIR="$FREQHINT_CACHE/kernel/ccache" CCACHE_BASEDIR="$FREQHINT_CACHE/kernel"
	mk+=(CC="ccache gcc")
fi
"$srcpath/scripts/config" --file "$build/.config" \
	-e VIRTIO_FREQHINT -e VIRTIO_FREQHINT_KUNIT_TEST
"${mk[@]}" -s olddefconfig
for o in VIRTIO_FREQHINT VIRTIO_FREQHINT_KUNIT_TEST; do
	grep -qx "CONFIG_$o=y" "$build/.config" ||
		die "Kconfig did not take $o=y: $(grep "$o[= ]" "$build/.config" || echo absent)"
done
log "Kconfig: VIRTIO_FREQHINT=y, VIRTIO_FREQHINT_KUNIT_TEST=y"

t0=$SECONDS
out=$("${mk[@]}" W=1 drivers/virtio/freqhint/ 2>&1) || { echo "$out"; die "the directory does not compile"; }
if grep -E 'warning:|error:' <<<"$out"; then
	die "the directory compiles with warnings"
fi
[ -f "$build/drivers/virtio/freqhint/built-in.a" ] || die "no built-in.a: the driver was not built in"
log "drivers/virtio/freqhint/ compiled built in, W=1 warning-free, in $((SECONDS - t0)) s"
[ "$vmlinux" = 1 ] || exit 0

t0=$SECONDS
out=$("${mk[@]}" vmlinux 2>&1) || { tail -n 30 <<<"$out"; die "vmlinux does not link"; }
# No "nm | grep -q" under pipefail: nm dies of SIGPIPE when grep stops.
nm "$build/vmlinux" >"$work/nm"
n=$(awk '$3 ~ /^vfh_/' "$work/nm" | wc -l)
[ "$n" -gt 0 ] || die "vmlinux holds no vfh_ symbol"
grep -q ' virtio_freqhint_init$' "$work/nm" || die "vmlinux holds no virtio_freqhint_init"
log "vmlinux linked with the driver built in ($n vfh_ symbols) in $((SECONDS - t0)) s"
