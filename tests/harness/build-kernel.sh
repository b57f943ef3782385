#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build freqhint's test guest kernel: Debian's 6.12 source from
# bookworm-backports, `make tinyconfig` + tests/harness/uclamp.config (uclamp,
# cpufreq/schedutil, virtio-pci, kprobes, serial console) + the arch's own
# fragment (uclamp-x86_64.config: vsock; uclamp-arm64.config), with the kernel
# patches the project carries applied (guest-driver/rfc/*.patch: the RFC
# clamp hook, cpufreq drivers' ->update_uclamp).  Debian's own kernels are built without
# CONFIG_UCLAMP_TASK, so clamps can only be tested for real on this one.
#
#   build-kernel.sh               build if needed (quiet, idempotent)
#   build-kernel.sh --print-dir   build if needed, then print the entry dir
#   build-kernel.sh --rebuild     throw the entry away and build again
#   build-kernel.sh --variant kcsan [...]
#                  the x86 kernel with uclamp-kcsan.config merged after
#                  uclamp.config (the data-race detector), in its own entry;
#                  FREQHINT_KERNEL_VARIANT=kcsan in the environment does the
#                  same, so every test that boots or builds against the
#                  uclamp kernel uses it (opt-in; x86_64 only)
#   build-kernel.sh --arch arm64 [...]
#                  the same kernel for arm64 (QEMU's virt machine),
#                  cross-compiled with Debian's gcc-aarch64-linux-gnu
#                  (tests/harness/cross-gcc.sh: unpacked, not installed) from the
#                  same source: uclamp.config, minus the symbols that
#                  uclamp-arm64.config drops, plus uclamp-arm64.config
#                  (--arch x86_64|arm64, default x86_64)
#
# Cache entry $FREQHINT_CACHE/kernel/<source version>-<hash of fragment and
# patches>/ (arm64: <source version>-arm64-<hash of fragments, patches and
# compiler>/; kcsan: <source version>-kcsan-<hash of both fragments and
# patches>/); a changed patch file (message included) builds a new entry:
#   bzImage        the kernel to boot (arm64: Image)
#   build/         the O= build tree (.config, Module.symvers, vmlinux):
#                  make -C <dir>/build M=<module dir> modules
#   version        the Debian source version it was built from
#   source-method  how the source was obtained (see fetch_source)
#   patches        the patches applied, one file name a line
#   build.log      the full make output
#   modules/load-order  empty: virtio transport is built in (same shape as
#                  fetch-stock-kernel.sh's entry, for mkinitramfs.sh --kernel)
# The unpacked source lives in $FREQHINT_CACHE/kernel/src/ and is shared
# by all entries of the same source version; the patched tree beside it
# (-p<hash of the patches>) shares its unchanged files by hard link; build/
# refers to the tree it was built from.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"
# set -e exits without a word; say where.
trap 'log "error: $0:$LINENO: $BASH_COMMAND failed"' ERR

fragment="$here/tests/harness/uclamp.config"
kcache="$FREQHINT_CACHE/kernel"
pkg=linux/bookworm-backports

mode=build arch=x86_64 variant=${FREQHINT_KERNEL_VARIANT:-}
while [ $# -gt 0 ]; do
	case "$1" in
		--print-dir) mode=print ;;
		--rebuild) mode=rebuild ;;
		--arch) arch=${2:-}; shift ;;
		--variant) variant=${2:-}; shift ;;
		*) die "usage: $0 [--arch x86_64|arm64] [--variant kcsan] [--print-dir|--rebuild]" ;;
	esac
	shift
done
# Per architecture: make's ARCH and compiler, the image to boot.
case "$arch" in
	x86_64) karch=x86 cross='' image=bzImage ;;
	arm64) karch=arm64 cross=aarch64-linux-gnu- image=Image ;;
	*) die "--arch x86_64|arm64, not '$arch'" ;;
esac
case "$variant" in
	"") ;;
	kcsan) [ "$arch" = x86_64 ] || die "--variant kcsan is x86_64 only" ;;
	*) die "--variant kcsan (or FREQHINT_KERNEL_VARIANT=kcsan), not '$variant'" ;;
esac

mkdir -p "$kcache/src"

# The source version comes from apt's lists (deb-src for bookworm-backports,
# which scripts/setup.sh configures); printing URIs needs no network.
uris=$(cd "$kcache/src" && apt-get source -qq --print-uris "$pkg" 2>/dev/null) ||
	die "apt-get source --print-uris $pkg failed: run scripts/setup.sh packages"
dsc=$(awk '$2 ~ /\.dsc$/ { print $2 }' <<<"$uris")
[ -n "$dsc" ] || die "no .dsc for $pkg in apt's lists"
version=${dsc#linux_}
version=${version%.dsc}
upstream=${version%%-*}
# Kernel patches the project carries (the RFC clamp hook, guest-driver/rfc/),
# applied in name order; they are part of every key below.
patches=("$here"/guest-driver/rfc/*.patch)
[ -e "${patches[0]}" ] || patches=()
patch_sum=$(cat /dev/null "${patches[@]}" | sha256sum | cut -c1-12)
if [ -n "$variant" ]; then
	# uclamp.config, then the variant's lines: merged in that order,
	# verified line by line, keyed apart from the default kernel.
	fragment=$(mktemp "${TMPDIR:-/tmp}/uclamp-$variant.XXXXXX.config")
	trap 'rm -f "$fragment"' EXIT
	cat "$here/tests/harness/uclamp.config" "$here/tests/harness/uclamp-x86_64.config" \
		"$here/tests/harness/uclamp-$variant.config" >"$fragment"
	key="$(tr '~+' '__' <<<"$version")-$variant-$(printf '%s\n' "$version" "$variant" | cat - "$fragment" "${patches[@]}" | sha256sum | cut -c1-12)"
elif [ "$arch" = x86_64 ]; then
	# uclamp.config, then x86's own lines (uclamp-x86_64.config: what only
	# the x86 guests' tests use), merged in that order.
	fragment=$(mktemp "${TMPDIR:-/tmp}/uclamp-$arch.XXXXXX.config")
	trap 'rm -f "$fragment"' EXIT
	cat "$here/tests/harness/uclamp.config" "$here/tests/harness/uclamp-x86_64.config" >"$fragment"
	key="$(tr '~+' '__' <<<"$version")-$(printf '%s\n' "$version" | cat - "$fragment" "${patches[@]}" | sha256sum | cut -c1-12)"
else
	# The x86 fragment with the lines for symbols that do not apply here
	# taken out ("# drop: CONFIG_X  why" in the arch's fragment), then the
	# arch's own lines: merged in that order, verified line by line.
	arch_fragment="$here/tests/harness/uclamp-$arch.config"
	# Debian's cross gcc, unpacked, not installed (see cross-gcc.sh).
	PATH="$("$here/tests/harness/cross-gcc.sh" "$arch"):$PATH"
	export PATH
	fragment=$(mktemp "${TMPDIR:-/tmp}/uclamp-$arch.XXXXXX.config")
	trap 'rm -f "$fragment"' EXIT
	drops=$(sed -n 's/^# drop: \(CONFIG_[A-Za-z0-9_]*\).*/\1/p' "$arch_fragment")
	{
		grep -vE "^(# )?($(paste -sd'|' <<<"${drops:-NONE}"))[= ]" "$here/tests/harness/uclamp.config"
		cat "$arch_fragment"
	} >"$fragment"
	key="$(tr '~+' '__' <<<"$version")-$arch-$({ printf '%s\n' "$version" "$arch"
		"${cross}gcc" --version | head -n1; cat "$fragment" "${patches[@]}"; } | sha256sum | cut -c1-12)"
fi
entry="$kcache/$key"
srcdir="$kcache/src/linux-$upstream-$(tr '~+' '__' <<<"$version")"
# The patched tree: hard links to the shared one, patched files replaced.
patched="$srcdir-p$patch_sum"

# A finished entry is read without the lock: a build of another key (another
# tree's fragment) must not hold up every test that only boots this one.
if [ "$mode" != rebuild ] && [ -f "$entry/.done" ] && [ -f "$entry/modules/load-order" ]; then
	[ "$mode" = print ] && echo "$entry"
	exit 0
fi
# setup.sh and a meson test may both ask at once; one builds, the other waits.
exec 9>"$kcache/.lock"
flock 9

# fetch_uri NAME: download one file apt named and check its sha256.
fetch_uri() {
	local name=$1 url sum
	url=$(awk -v n="$name" '$2 == n { gsub("\047", "", $1); print $1 }' <<<"$uris")
	sum=$(awk -v n="$name" '$2 == n { sub("SHA256:", "", $4); print $4 }' <<<"$uris")
	[ -n "$url" ] || return 1
	if [ ! -f "$name" ] || ! echo "$sum  $name" | sha256sum -c --quiet - 2>/dev/null; then
		curl -fsSL -o "$name.part" "$url" || return 1
		echo "$sum  $name.part" | sha256sum -c --quiet - || return 1
		mv "$name.part" "$name"
	fi
}

# Obtain Debian's patched source tree, best way first:
#   apt-source   apt-get source (dpkg-source -x applies debian/patches)
#   dsc          the three files by the URIs apt prints, then dpkg-source -x
#   orig+series  orig tarball + debian tarball, debian/patches/series applied
#                with patch -p1 (when the .dsc cannot be had)
#   orig         the plain upstream tarball (last resort; said in the log)
fetch_source() {
	[ -f "$srcdir/.freqhint-unpacked" ] && return 0
	local dl="$kcache/src/dl-$upstream"
	rm -rf "$srcdir" "$dl"
	mkdir -p "$dl"
	local method=
	if (cd "$dl" && apt-get source -qq --download-only "$pkg" >/dev/null 2>&1); then
		method=apt-source
	elif (cd "$dl" && fetch_uri "$dsc" &&
		fetch_uri "linux_$upstream.orig.tar.xz" &&
		fetch_uri "linux_$version.debian.tar.xz"); then
		method=dsc
	fi
	if [ -n "$method" ] &&
		(cd "$dl" && dpkg-source -q --no-copy -x "$dsc" "$srcdir" >/dev/null 2>&1); then
		:
	else
		rm -rf "$srcdir"
		(cd "$dl" && fetch_uri "linux_$upstream.orig.tar.xz") ||
			die "cannot download the $pkg source"
		mkdir -p "$srcdir"
		tar -C "$srcdir" --strip-components=1 -xJf "$dl/linux_$upstream.orig.tar.xz"
		method=orig
		if (cd "$dl" && fetch_uri "linux_$version.debian.tar.xz"); then
			tar -C "$srcdir" -xJf "$dl/linux_$version.debian.tar.xz"
			local p
			while read -r p _; do
				case "$p" in ""|\#*) continue ;; esac
				patch -s -p1 -d "$srcdir" <"$srcdir/debian/patches/$p" ||
					die "Debian patch $p does not apply"
			done <"$srcdir/debian/patches/series"
			method=orig+series
		else
			log "warning: Debian's patches unavailable; building plain upstream $upstream"
		fi
	fi
	echo "$method" >"$srcdir/.freqhint-unpacked"
	rm -rf "$dl"
}

# patch_source: $patched is $srcdir with the patches applied.  The shared
# tree is never written: it is linked, and each file a patch touches is
# copied first (patch(1) would otherwise write through the link).
patch_source() {
	[ -f "$patched/.freqhint-patched" ] && return 0
	rm -rf "$patched"
	cp -al "$srcdir" "$patched"
	local p f
	for p in "${patches[@]}"; do
		for f in $(sed -n 's|^+++ b/||p' "$p"); do
			[ -e "$patched/$f" ] && cp --remove-destination "$srcdir/$f" "$patched/$f"
		done
		patch -s -p1 -d "$patched" <"$p" || die "$(basename "$p") does not apply"
	done
	printf '%s\n' "${patches[@]##*/}" >"$patched/.freqhint-patched"
}

# Every line of the fragment must be in the final .config verbatim; Kconfig
# silently drops what it cannot satisfy, and a test kernel without, say,
# UCLAMP_TASK_GROUP would make the cgroup tests meaningless.
verify_config() {
	local cfg=$1 line missing=0
	while IFS= read -r line; do
		case "$line" in
			CONFIG_*|"# CONFIG_"*" is not set") ;;
			*) continue ;;
		esac
		if ! grep -qxF -- "$line" "$cfg"; then
			local name got
			name=$(sed -E 's/^(# )?(CONFIG_[A-Za-z0-9_]+).*/\2/' <<<"$line")
			got=$(grep -E "^(# )?${name}[= ]" "$cfg" || echo absent)
			log "config: wanted '$line', got '$got'"
			missing=1
		fi
	done <"$fragment"
	[ "$missing" = 0 ] || die "config fragment not satisfied (see above)"
}

build() {
	fetch_source
	if [ ${#patches[@]} -gt 0 ]; then
		patch_source
		srcdir=$patched
	fi
	local b="$entry/build" t0=$SECONDS
	rm -rf "$entry"
	mkdir -p "$b"
	echo "$version" >"$entry/version"
	cp "$srcdir/.freqhint-unpacked" "$entry/source-method"
	cp "$srcdir/.freqhint-patched" "$entry/patches" 2>/dev/null || : >"$entry/patches"
	log "building guest kernel $version ($(cat "$entry/source-method")) in $entry"
	local mk=(make -C "$srcdir" O="$b" -j"$(nproc)")
	[ "$arch" = x86_64 ] || mk+=(ARCH="$karch" CROSS_COMPILE="$cross")
	# ccache makes a fragment change cheap; it does not change CC's version
	# text, so modules built later with plain gcc still match.
	if command -v ccache >/dev/null; then
		export CCACHE_DIR="$kcache/ccache" CCACHE_BASEDIR="$kcache"
		mk+=(CC="ccache ${cross}gcc")
	fi
	{
		"${mk[@]}" tinyconfig &&
		"$srcdir/scripts/kconfig/merge_config.sh" -m -O "$b" "$b/.config" "$fragment" &&
		"${mk[@]}" olddefconfig
	} >"$entry/build.log" 2>&1 || { tail -n 30 "$entry/build.log"; die "kernel config failed"; }
	verify_config "$b/.config"
	"${mk[@]}" "$image" modules >>"$entry/build.log" 2>&1 ||
		{ tail -n 40 "$entry/build.log"; die "kernel build failed (log: $entry/build.log)"; }
	[ -f "$b/Module.symvers" ] || die "no Module.symvers after make modules"
	cp "$b/arch/$karch/boot/$image" "$entry/$image"
	echo "$arch" >"$entry/arch"
	touch "$entry/.done"
	log "guest kernel ($arch) built in $((SECONDS - t0)) s: $entry/$image"
}

[ "$mode" = rebuild ] && rm -rf "$entry"
[ -f "$entry/.done" ] || build
# Same shape as a fetch-stock-kernel.sh entry: virtio is built in here, so
# the initramfs carries no transport modules.
if [ ! -f "$entry/modules/load-order" ]; then
	mkdir -p "$entry/modules"
	: >"$entry/modules/load-order"
fi
if [ "$mode" = print ]; then
	echo "$entry"
fi
exit 0
