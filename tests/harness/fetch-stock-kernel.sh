#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Make a cache entry for Debian's stock kernel (linux-image-amd64 from
# bookworm-backports, built WITHOUT uclamp), the guest for the no-clamp path.
# The image comes from the installed package; nothing is downloaded.
#
#   fetch-stock-kernel.sh                   newest installed 6.12 image
#   fetch-stock-kernel.sh --release REL     another installed release
#   fetch-stock-kernel.sh [...] --print-dir also print the entry dir
#   fetch-stock-kernel.sh --arch arm64 [...]
#                    Debian's arm64 kernel of the same release (the x86 one's
#                    with -arm64 for -amd64; --release names another), and its
#                    headers, fetched with tests/harness/fetch-debs.sh (dpkg
#                    multiarch, apt-get download; nothing is installed)
#
# Entry $FREQHINT_CACHE/stock-kernel/<release>-<image hash>/:
#   bzImage     /boot/vmlinuz-<release> (arm64: Image, the package's vmlinuz)
#   config      /boot/config-<release>
#   release     uname -r of that kernel
#   build       symlink to /usr/src/linux-headers-<release>, so that
#               make -C <dir>/build M=<module dir> modules
#               works as for build-kernel.sh's entry (Debian's headers
#               include an absolute .../-common path: use them in place)
#   modules/    virtio transport modules the kernel does not build in,
#               uncompressed (busybox insmod), plus their dependencies,
#               and load-order: one file name a line, dependencies first.
#               Empty for 6.12, where virtio and virtio_pci are built in.
#               On arm64, virtio_mmio (a module in Debian's arm64 6.12).
# arm64 entries also hold headers/: the headers packages unpacked, their
# absolute /usr/src/...-common include pointed at the entry's copy; `build` points there.
# Their scripts/ and tools/ are the host's linux-kbuild of the same version
# (the arm64 package's are arm64 binaries); .kernelvariables sets ARCH and
# CROSS_COMPILE, so `make -C <dir>/build M=...` cross-compiles as it is.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"
# set -e exits without a word; say where.
trap 'log "error: $0:$LINENO: $BASH_COMMAND failed"' ERR

release=
print=0 arch=x86_64
while [ $# -gt 0 ]; do
	case "$1" in
		--release) release=${2:?}; shift ;;
		--print-dir) print=1 ;;
		--arch) arch=${2:?}; shift ;;
		*) die "usage: $0 [--arch x86_64|arm64] [--release REL] [--print-dir]" ;;
	esac
	shift
done
case "$arch" in
	x86_64 | arm64) ;;
	*) die "--arch x86_64|arm64, not '$arch'" ;;
esac

if [ -z "$release" ]; then
	release=$(find /boot -maxdepth 1 -name 'vmlinuz-6.12.*-amd64' -printf '%f\n' |
		sed 's/^vmlinuz-//' | sort -V | tail -n1)
	[ -n "$release" ] || die "no /boot/vmlinuz-6.12.*-amd64: install linux-image-amd64 from bookworm-backports (scripts/setup.sh packages)"
	[ "$arch" = arm64 ] && release=${release%-amd64}-arm64
fi
# image: the kernel; moddir: its modules; depdir: its modules.dep and
# modules.builtin (the same but for arm64, whose package has no modules.dep).
if [ "$arch" = x86_64 ]; then
	image=/boot/vmlinuz-$release
	moddir=/lib/modules/$release
	depdir=$moddir
	image_name=bzImage
else
	base=${release%-arm64}
	debs=$("$here/tests/harness/fetch-debs.sh" arm64 "linux-image-$release" \
		"linux-headers-$release" "linux-headers-$base-common:all")
	image=$debs/root/boot/vmlinuz-$release
	moddir=$debs/root/lib/modules/$release
	image_name=Image
fi
[ -r "$image" ] || die "$image not found"

key="$release-$(sha256sum "$image" | cut -c1-12)"
entry="$FREQHINT_CACHE/stock-kernel/$key"
[ "$arch" = arm64 ] && depdir=$entry/depmod/lib/modules/$release

# What the guest needs to reach a virtio-pci device.
WANT_MODULES=(virtio virtio_ring virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci)
[ "$arch" = arm64 ] && WANT_MODULES+=(virtio_mmio)

# module_path NAME: modules.dep's path of NAME, or nothing when built in.
module_path() {
	local name=$1
	grep -qE "/${name//_/[_-]}\.ko$" "$depdir/modules.builtin" 2>/dev/null && return 0
	awk -F: -v n="$name" '{ f = $1; sub(".*/", "", f); sub("\\.ko.*$", "", f);
		gsub("-", "_", f); if (f == n) { print $1; exit } }' "$depdir/modules.dep"
}

# add_module PATH: PATH's dependencies first, then PATH itself (once).
declare -A added=()
add_module() {
	local rel=$1 dep
	[ -n "${added[$rel]:-}" ] && return 0
	added[$rel]=1
	for dep in $(awk -F: -v m="$rel" '$1 == m { print $2 }' "$depdir/modules.dep"); do
		add_module "$dep"
	done
	local base
	base=$(basename "$rel")
	case "$base" in
		*.ko.xz) xz -dc "$moddir/$rel" >"$entry/modules/${base%.xz}" ;;
		*.ko.zst) zstd -qdc "$moddir/$rel" >"$entry/modules/${base%.zst}" ;;
		*.ko.gz) gzip -dc "$moddir/$rel" >"$entry/modules/${base%.gz}" ;;
		*.ko) cp "$moddir/$rel" "$entry/modules/$base" ;;
		*) die "unknown module file $rel" ;;
	esac
	basename "$base" | sed -E 's/\.(xz|zst|gz)$//' >>"$entry/modules/load-order"
}

# arm64_tree: modules.dep made by depmod over the package's modules (linked,
# not copied), and the headers made usable where they are unpacked.
arm64_tree() {
	local d=$entry/depmod/lib/modules/$release f
	mkdir -p "$d"
	ln -s "$moddir/kernel" "$d/kernel"
	cp "$moddir"/modules.builtin* "$moddir/modules.order" "$d/"
	depmod -b "$entry/depmod" "$release" || die "depmod failed for $moddir"
	local kbuild=/usr/lib/linux-kbuild-$base
	[ -d "$kbuild/scripts" ] ||
		die "no $kbuild: install linux-headers-amd64 from bookworm-backports (the same kernel version's kbuild)"
	mkdir -p "$entry/headers"
	cp -a "$debs/root/usr/src/linux-headers-$release" "$debs/root/usr/src/linux-headers-$base-common" \
		"$entry/headers/"
	f=$entry/headers/linux-headers-$release
	sed -i "s|^include /usr/src/linux-headers-$base-common/|include $entry/headers/linux-headers-$base-common/|" "$f/Makefile"
	grep -q '^include /usr/src' "$f/Makefile" && die "cannot relocate $f/Makefile"
	ln -sfn "$kbuild/scripts" "$f/scripts"
	ln -sfn "$kbuild/tools" "$f/tools"
	# The common tree links to the kbuild package too.
	find "$entry/headers/linux-headers-$base-common" -maxdepth 1 -type l | while read -r f; do
		case "$(readlink "$f")" in
			*/lib/linux-kbuild-*/*) ln -sfn "$kbuild/$(basename "$(readlink "$f")")" "$f" ;;
		esac
	done
	ln -s "headers/linux-headers-$release" "$entry/build"
}

build_entry() {
	rm -rf "$entry"
	mkdir -p "$entry/modules"
	cp "$image" "$entry/$image_name"
	local config=/boot/config-$release
	[ "$arch" = arm64 ] && config=$debs/root/boot/config-$release
	[ -r "$config" ] && cp "$config" "$entry/config"
	echo "$release" >"$entry/release"
	echo "$arch" >"$entry/arch"
	: >"$entry/modules/load-order"
	if [ "$arch" = arm64 ]; then
		arm64_tree
	elif [ -d "/usr/src/linux-headers-$release" ]; then
		ln -s "/usr/src/linux-headers-$release" "$entry/build"
	else
		log "warning: no /usr/src/linux-headers-$release: modules cannot be built for it"
	fi
	local m p
	for m in "${WANT_MODULES[@]}"; do
		p=$(module_path "$m")
		[ -z "$p" ] && continue
		[ -f "$depdir/modules.dep" ] ||
			die "$m is a module but $depdir/modules.dep is missing"
		add_module "$p"
	done
	touch "$entry/.done"
	log "stock kernel $release: $entry ($(wc -l <"$entry/modules/load-order") modules)"
}

mkdir -p "$FREQHINT_CACHE/stock-kernel"
exec 9>"$FREQHINT_CACHE/stock-kernel/.lock"
flock 9
[ -f "$entry/.done" ] || build_entry
[ "$print" = 1 ] && echo "$entry"
exit 0
