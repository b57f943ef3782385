#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Lay the virtio-freqhint device into Debian's QEMU source and build
# qemu-system-x86_64 and qemu-system-aarch64 (one build, targets
# x86_64-softmmu and aarch64-softmmu) plus the qtest binaries.
#
#   build-qemu.sh                  build if anything changed; quiet
#   build-qemu.sh --print-binary   build qemu-system-x86_64 if needed (only
#                                  it), print its path
#   build-qemu.sh --arch arm64 --print-binary
#                                  the same, qemu-system-aarch64
#                                  (--arch x86_64|arm64, default x86_64)
#   build-qemu.sh --arch arm64 --only
#                                  build only the arch's binary (the demo's
#                                  cold start); a later run without --only
#                                  adds the rest to the same build
#   build-qemu.sh --print-build    build if needed, print the build directory
#   build-qemu.sh --lay-only       refresh the source tree, do not build
#   build-qemu.sh --print-dirs     refresh the source tree, print
#                                  PRISTINE=, SOURCE= and BUILD= lines
#   build-qemu.sh --print-configure
#                                  the configure arguments, one a line
#
# Everything heavy lives in $FREQHINT_CACHE/qemu/ (or $FREQHINT_QEMU_CACHE),
# outside the clone:
#   qemu_<ver>+ds.orig.tar.xz   the tarball apt names (sha256 checked)
#   pristine-<ver>/             the tarball unpacked (without roms/), never edited
#   src-<ver>/                  pristine + device files + patches
#   build-<ver>/                configure/ninja output
#   firmware-<ver>/             SeaBIOS + the option ROMs this build made
#   ccache/                     compiler cache ($FREQHINT_CCACHE_DIR overrides,
#                               so several caches can share one)
# FREQHINT_QEMU_CONFIGURE_FLAGS adds configure flags (a sanitizer build:
# --enable-ubsan, in a cache of its own), FREQHINT_QEMU_JOBS limits ninja.
# The source tree is re-laid only when the device's inputs change (key:
# QEMU version + hash of qemu-device/ and spec/include/), and only files whose
# content changed are rewritten, so ninja rebuilds just what depends on them.
#
# Firmware: the Debian "+ds" tarball carries no x86 BIOS blobs.  After each
# build the system's SeaBIOS (package seabios) and the option ROMs built here
# are linked into the build tree's qemu-bundle data directory, where the
# binary looks first when run from its build directory, so it needs no -L.
# firmware-<ver>/ holds the same links for -L.  The aarch64 guests boot with
# -kernel on the virt machine and need no firmware.
#
# Why one build for both targets, not a second build: QEMU compiles its
# target-independent code (most of hw/, the virtio device, block, chardev,
# util) once per build, whatever the number of targets, and a second build
# could not reuse the first one's objects through ccache either (common code
# includes config-poison.h, generated from the target list).  Counted with
# ninja on 10.0.2: qemu-system-x86_64 and qos-test 1672 steps,
# qemu-system-aarch64 alone 1873, all three in one build 2208; so the
# aarch64 target costs 536 more steps, a second build 1873.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$top/scripts/lib.sh"

QEMU_VERSION=10.0.2
QEMU_APT_SPEC=qemu/bookworm-backports
# Both targets by default: the aarch64 qtests run in the default suite, and
# the arm64 guests boot on the same binary; --only and --print-binary build
# the one asked for (the demo's cold start).
TARGETS=(qemu-system-x86_64 qemu-system-aarch64 tests/qtest/qos-test)
TARGET_LIST=x86_64-softmmu,aarch64-softmmu

cache=${FREQHINT_QEMU_CACHE:-$FREQHINT_CACHE/qemu}
tarball=$cache/qemu_$QEMU_VERSION+ds.orig.tar.xz
pristine=$cache/pristine-$QEMU_VERSION
src=$cache/src-$QEMU_VERSION
build=$cache/build-$QEMU_VERSION
firmware=$cache/firmware-$QEMU_VERSION
buildlog=$cache/build-$QEMU_VERSION.log

# Files of qemu-device/ that sit at the same path in QEMU's tree.
TREE_DIRS=(hw backends include tests/qtest docs)

mode=build arch=x86_64 only=0
while [ $# -gt 0 ]; do
	case "$1" in
	--only) only=1 ;;
	--print-binary) mode=print-binary ;;
	--print-build) mode=print-build ;;
	--lay-only) mode=lay ;;
	--print-dirs) mode=dirs ;;
	--print-configure) mode=configure ;;
	--arch) arch=${2:-}; shift ;;
	*) die "usage: $0 [--arch x86_64|arm64] [--only] [--print-binary|--print-build|--lay-only|--print-dirs|--print-configure]" ;;
	esac
	shift
done
case "$arch" in
x86_64) binary=qemu-system-x86_64 ;;
arm64) binary=qemu-system-aarch64 ;;
*) die "--arch x86_64|arm64, not '$arch'" ;;
esac
# A caller that asks for one binary waits for that binary alone.
[ "$only" = 1 ] || [ "$mode" = print-binary ] && TARGETS=("$binary")

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

fetch_tarball() {
	[ -f "$tarball" ] && return 0
	local line uri sha
	# apt prints: 'URI' file size SHA256:hex; take the upstream tarball.
	line=$(apt-get source --print-uris -qq "$QEMU_APT_SPEC" 2>/dev/null |
		grep -F "qemu_$QEMU_VERSION+ds.orig.tar.xz") ||
		die "apt does not name qemu_$QEMU_VERSION+ds.orig.tar.xz (deb-src for bookworm-backports missing? run scripts/setup.sh packages)"
	uri=$(printf '%s\n' "$line" | awk '{ gsub("\x27", "", $1); print $1 }')
	sha=$(printf '%s\n' "$line" | awk '{ sub("SHA256:", "", $4); print $4 }')
	[ ${#sha} = 64 ] || die "no SHA256 in apt's answer: $line"
	log "downloading QEMU $QEMU_VERSION source"
	curl -sSfL --retry 3 -o "$tarball.part" "$uri" || die "download failed: $uri"
	echo "$sha  $tarball.part" | sha256sum -c --quiet - ||
		{ rm -f "$tarball.part"; die "sha256 mismatch for $uri"; }
	mv "$tarball.part" "$tarball"
}

unpack_pristine() {
	[ -f "$pristine/VERSION" ] && return 0
	rm -rf "$pristine.tmp"
	mkdir -p "$pristine.tmp"
	# roms/ holds firmware sources (~500 MB) nothing here builds.
	tar xf "$tarball" -C "$pristine.tmp" --strip-components=1 \
		--exclude="qemu-$QEMU_VERSION/roms/*"
	[ "$(cat "$pristine.tmp/VERSION")" = "$QEMU_VERSION" ] ||
		die "tarball holds QEMU $(cat "$pristine.tmp/VERSION")"
	chmod -R a-w "$pristine.tmp"
	mv "$pristine.tmp" "$pristine"
}

# The device's inputs, one path per line, relative to the repository.
input_files() {
	(cd "$top" &&
		find qemu-device spec/include scripts/lib.sh -type f \
			! -name '*~' ! -name '*.orig' ! -name '*.rej' | LC_ALL=C sort)
}

input_key() {
	local f
	{
		echo "$QEMU_VERSION"
		for f in $(input_files); do
			echo "$f"
			cat "$top/$f"
		done
	} | cache_key
}

# Same rewriting scripts/update-linux-headers.sh applies to uapi headers that
# go to include/standard-headers/.
import_uapi_header() {
	sed -e 's/__u\([0-9][0-9]*\)/uint\1_t/g' \
	    -e 's/__s\([0-9][0-9]*\)/int\1_t/g' \
	    -e 's/__le\([0-9][0-9]*\)/uint\1_t/g' \
	    -e 's/__be\([0-9][0-9]*\)/uint\1_t/g' \
	    -e 's/<linux\/\([^>]*\)>/"standard-headers\/linux\/\1"/' \
	    -e 's/__bitwise//' \
	    -e 's/__attribute__((packed))/QEMU_PACKED/' \
	    "$1" >"$2"
}

# The agent protocol is not a Linux header, so it does not go to
# include/standard-headers/: it becomes a QEMU header in QEMU's style (no
# tabs; qemu/osdep.h already gives stdint.h).
import_agent_header() {
	sed -e '/^#include <stdint.h>$/d' \
	    -e 's/<linux\/\([^>]*\)>/"standard-headers\/linux\/\1"/' \
	    "$1" | expand -t 4 >"$2"
}

# Build the set of files that differ from pristine in $1 (a staging dir).
stage_tree() {
	local stage=$1 d f p
	for d in "${TREE_DIRS[@]}"; do
		[ -d "$here/$d" ] || continue
		(cd "$here" && find "$d" -type f ! -name '*~') | while read -r f; do
			mkdir -p "$stage/$(dirname "$f")"
			cp "$here/$f" "$stage/$f"
		done
	done
	mkdir -p "$stage/include/standard-headers/linux" \
		"$stage/include/system"
	import_uapi_header "$top/spec/include/linux/virtio_freqhint.h" \
		"$stage/include/standard-headers/linux/virtio_freqhint.h"
	import_agent_header "$top/spec/include/freqhint/agent_protocol.h" \
		"$stage/include/system/freqhint-agent.h"

	# Patches: the device hook-up series, build fix-ups for the Debian
	# tarball, then fixes to QEMU itself that the tests need.  Patched
	# files start from their pristine version.
	for p in "$here"/patches/*.patch "$here"/patches/build/*.patch \
		"$here"/patches/fixes/*.patch; do
		[ -f "$p" ] || continue
		for f in $(sed -n 's|^+++ b/||p' "$p"); do
			[ -f "$stage/$f" ] && continue
			mkdir -p "$stage/$(dirname "$f")"
			if [ -f "$pristine/$f" ]; then
				cp "$pristine/$f" "$stage/$f"
				chmod u+w "$stage/$f"
			fi
		done
		patch -s -p1 -F0 --no-backup-if-mismatch -d "$stage" <"$p" ||
			die "patch does not apply to QEMU $QEMU_VERSION: $p"
	done
}

lay_tree() {
	if [ ! -f "$src/VERSION" ]; then
		rm -rf "$src.tmp"
		cp -a "$pristine" "$src.tmp"
		chmod -R u+w "$src.tmp"
		mv "$src.tmp" "$src"
	fi
	local stage f manifest=$cache/laid-files-$QEMU_VERSION
	stage=$(mktemp -d)
	stage_tree "$stage"
	(cd "$stage" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) >"$manifest.new"
	# Rewrite only what changed: ninja then rebuilds only its dependants.
	while read -r f; do
		if ! cmp -s "$stage/$f" "$src/$f"; then
			mkdir -p "$src/$(dirname "$f")"
			cp "$stage/$f" "$src/$f"
		fi
	done <"$manifest.new"
	# Files laid last time but gone now: back to pristine, or removed.
	if [ -f "$manifest" ]; then
		LC_ALL=C comm -23 "$manifest" "$manifest.new" | while read -r f; do
			if [ -f "$pristine/$f" ]; then
				cp "$pristine/$f" "$src/$f"
				chmod u+w "$src/$f"
			else
				rm -f "$src/$f"
			fi
		done
	fi
	mv "$manifest.new" "$manifest"
	rm -rf "$stage"
}

# No debug information: the demo and the tests run QEMU, they never debug
# it, and gcc's -g costs about a fifth of the compile (measured on a sample
# of 64 of the x86 target's translation units spread over their cost: 34.4
# CPU-s with -g, 26.8 without).  FREQHINT_QEMU_CONFIGURE_FLAGS=--enable-debug-info
# puts it back for a debugging session (in a cache of its own).
configure_args() {
	printf '%s\n' \
		--target-list=$TARGET_LIST \
		--python="$PYTHON3" \
		--cc="ccache gcc" \
		--without-default-features \
		--enable-tcg --enable-kvm \
		--enable-fdt=system \
		--disable-download \
		--disable-install-blobs \
		--disable-docs \
		--disable-debug-info \
		--disable-werror
	# Extra configure flags, e.g. --enable-ubsan for a sanitizer build in
	# its own FREQHINT_QEMU_CACHE; part of the configure key.
	if [ -n "${FREQHINT_QEMU_CONFIGURE_FLAGS:-}" ]; then
		printf '%s\n' $FREQHINT_QEMU_CONFIGURE_FLAGS
	fi
}

ccache_env() {
	export CCACHE_DIR=${FREQHINT_CCACHE_DIR:-$cache/ccache}
	export CCACHE_BASEDIR=$cache
	export CCACHE_NOHASHDIR=1
	export CCACHE_MAXSIZE=5G
	export CCACHE_COMPILERCHECK=content
}

run_logged() {
	"$@" >>"$buildlog" 2>&1 || {
		tail -n 40 "$buildlog" >&2
		die "failed: $* (full log: $buildlog)"
	}
}

configure_qemu() {
	local want
	want=$(configure_args | cache_key)
	# A configure run without gcc-multilib left the option ROMs out.
	if [ -f "$build/build.ninja" ] && [ "$(cat "$build/.configured" 2>/dev/null)" = "$want" ] &&
		[ -f "$build/pc-bios/optionrom/config.mak" ]; then
		return 0
	fi
	rm -rf "$build"
	mkdir -p "$build"
	local args
	mapfile -t args < <(configure_args)
	log "configuring QEMU $QEMU_VERSION (log: $buildlog)"
	(cd "$build" && run_logged "$src/configure" "${args[@]}")
	echo "$want" >"$build/.configured"
}

# The binary run from the build tree looks for firmware in
# qemu-bundle/<datadir>; the firmware directory serves -L as well.
link_firmware() {
	local f d datadir
	datadir=$(sed -n 's/^#define CONFIG_QEMU_DATADIR "\(.*\)"$/\1/p' \
		"$build/config-host.h")
	[ -n "$datadir" ] || die "no CONFIG_QEMU_DATADIR in $build/config-host.h"
	for d in "$firmware" "$build/qemu-bundle$datadir"; do
		mkdir -p "$d"
		for f in /usr/share/seabios/*.bin /usr/lib/ipxe/qemu/*.rom \
			"$build"/pc-bios/optionrom/*.bin; do
			[ -e "$f" ] || continue
			ln -sfn "$f" "$d/$(basename "$f")"
		done
	done
	[ -e "$firmware/bios-256k.bin" ] ||
		die "no SeaBIOS (bios-256k.bin): install the seabios package"
}

build_qemu() {
	ccache_env
	configure_qemu
	log "building QEMU $QEMU_VERSION + virtio-freqhint (log: $buildlog)"
	local start=$SECONDS
	run_logged ninja -C "$build" ${FREQHINT_QEMU_JOBS:+-j"$FREQHINT_QEMU_JOBS"} "${TARGETS[@]}"
	# Option ROMs (linuxboot_dma.bin for -kernel, ...) are built by make,
	# not ninja; configure enables them when gcc can target i386.
	[ -f "$build/pc-bios/optionrom/config.mak" ] ||
		die "configure found no i386-capable compiler: install gcc-multilib"
	run_logged make -s -C "$build/pc-bios/optionrom"
	link_firmware
	log "QEMU built in $((SECONDS - start)) s"
}

if [ "$mode" = configure ]; then
	configure_args
	exit 0
fi
fetch_tarball
unpack_pristine
key=$(input_key)
if [ "$(cat "$cache/laid-key-$QEMU_VERSION" 2>/dev/null)" != "$key" ]; then
	lay_tree
	echo "$key" >"$cache/laid-key-$QEMU_VERSION"
fi
[ "$mode" = lay ] && exit 0
if [ "$mode" = dirs ]; then
	printf 'PRISTINE=%s\nSOURCE=%s\nBUILD=%s\n' "$pristine" "$src" "$build"
	exit 0
fi

# One stamp per target: a build of one target (--only) must not vouch for
# another target's binary left by a build of older inputs.
stamp() { echo "$cache/built-key-$QEMU_VERSION-$(basename "$1")"; }
stale=0
for t in "${TARGETS[@]}"; do
	[ "$(cat "$(stamp "$t")" 2>/dev/null)" = "$key" ] && [ -x "$build/$t" ] || stale=1
done
if [ "$stale" = 1 ]; then
	: >"$buildlog"
	for t in "${TARGETS[@]}"; do rm -f "$(stamp "$t")"; done
	build_qemu
	for t in "${TARGETS[@]}"; do echo "$key" >"$(stamp "$t")"; done
fi

case $mode in
print-binary) echo "$build/$binary" ;;
print-build) echo "$build" ;;
esac
