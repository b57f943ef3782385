#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# series-build.sh: every patch of the series make-series.sh writes
# compiles.  A clean QEMU tree (the pristine release plus the build
# fix-ups of patches/build/, which the Debian tarball needs and which are
# not part of the series) is configured once; then each patch is applied
# in turn and qemu-system-x86_64 and qos-test are built, incrementally,
# with the project's ccache.  The tree and the build directory live in
# $FREQHINT_QEMU_CACHE/series/ and start anew on every run (a tree copied
# again from pristine has older mtimes than objects built from patched
# files, so ninja would keep those).
#
# Too slow for the test suite (a cold build first, 1666 ninja steps, and a
# Kconfig change in the device patch that rebuilds every target object):
# run it by hand, nice -n 10.  Prints the time of each step.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
top=$(cd "$here/.." && pwd)
. "$top/scripts/lib.sh"
eval "$("$here/build-qemu.sh" --print-dirs)"
cache=$(dirname "$PRISTINE")
# The same relative path from build to source as build-qemu.sh's, so
# that ccache (CCACHE_BASEDIR) finds the objects that build made.
work=$cache/series
src=$work/$(basename "$SOURCE")
build=$work/$(basename "$BUILD")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$here/make-series.sh" "$tmp/series" >/dev/null

export CCACHE_DIR=${FREQHINT_CCACHE_DIR:-$cache/ccache}
export CCACHE_BASEDIR=$work CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=5G
export CCACHE_COMPILERCHECK=content
jobs=${FREQHINT_QEMU_JOBS:-2}

rm -rf "$src" "$build"
mkdir -p "$work"
cp -a "$PRISTINE" "$src"
chmod -R u+w "$src"
for p in "$here"/patches/build/*.patch; do
	[ -f "$p" ] && patch -s -p1 -d "$src" <"$p"
done
mapfile -t args < <("$here/build-qemu.sh" --print-configure)
mkdir -p "$build"
(cd "$build" && "$src/configure" "${args[@]}" >"$work/configure.log" 2>&1) ||
	die "configure failed: $work/configure.log"
step() {
	local name=$1 start=$SECONDS
	ninja -C "$build" -j"$jobs" qemu-system-x86_64 tests/qtest/qos-test \
		>"$work/ninja.log" 2>&1 ||
		{ tail -n 30 "$work/ninja.log"; die "$name does not compile"; }
	echo "$name: compiles ($((SECONDS - start)) s)"
}
step "clean QEMU $(cat "$PRISTINE/VERSION")"
for p in "$tmp"/series/core/0*.patch "$tmp"/series/0*.patch; do
	case $p in *cover-letter*) continue ;; esac
	(cd "$src" && GIT_DIR=/nonexistent git apply "$p")
	step "${p#"$tmp"/series/}"
done
