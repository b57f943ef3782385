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
#
# Entry $FREQHINT_CACHE/stock-kernel/<release>-<image hash>/:
#   bzImage     /boot/vmlinuz-<release>
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
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"
# set -e exits without a word; say where.
trap 'log "error: $0:$LINENO: $BASH_COMMAND failed"' ERR

release=
print=0
while [ $# -gt 0 ]; do
	case "$1" in
		--release) release=${2:?}; shift ;;
		--print-dir) print=1 ;;
		*) die "usage: $0 [--release REL] [--print-dir]" ;;
	esac
	shift
done

if [ -z "$release" ]; then
	release=$(find /boot -maxdepth 1 -name 'vmlinuz-6.12.*-amd64' -printf '%f\n' |
		sed 's/^vmlinuz-//' | sort -V | tail -n1)
	[ -n "$release" ] || die "no /boot/vmlinuz-6.12.*-amd64: install linux-image-amd64 from bookworm-backports (scripts/setup.sh packages)"
fi
image=/boot/vmlinuz-$release
moddir=/lib/modules/$release
[ -r "$image" ] || die "$image not found"

key="$release-$(sha256sum "$image" | cut -c1-12)"
entry="$FREQHINT_CACHE/stock-kernel/$key"

# What the guest needs to reach a virtio-pci device.
WANT_MODULES=(virtio virtio_ring virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci)

# module_path NAME: modules.dep's path of NAME, or nothing when built in.
module_path() {
	local name=$1
	grep -qE "/${name//_/[_-]}\.ko$" "$moddir/modules.builtin" 2>/dev/null && return 0
	awk -F: -v n="$name" '{ f = $1; sub(".*/", "", f); sub("\\.ko.*$", "", f);
		gsub("-", "_", f); if (f == n) { print $1; exit } }' "$moddir/modules.dep"
}

# add_module PATH: PATH's dependencies first, then PATH itself (once).
declare -A added=()
add_module() {
	local rel=$1 dep
	[ -n "${added[$rel]:-}" ] && return 0
	added[$rel]=1
	for dep in $(awk -F: -v m="$rel" '$1 == m { print $2 }' "$moddir/modules.dep"); do
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

build_entry() {
	rm -rf "$entry"
	mkdir -p "$entry/modules"
	cp "$image" "$entry/bzImage"
	[ -r "/boot/config-$release" ] && cp "/boot/config-$release" "$entry/config"
	echo "$release" >"$entry/release"
	: >"$entry/modules/load-order"
	if [ -d "/usr/src/linux-headers-$release" ]; then
		ln -s "/usr/src/linux-headers-$release" "$entry/build"
	else
		log "warning: no /usr/src/linux-headers-$release: modules cannot be built for it"
	fi
	local m p
	for m in "${WANT_MODULES[@]}"; do
		p=$(module_path "$m")
		[ -z "$p" ] && continue
		[ -f "$moddir/modules.dep" ] ||
			die "$m is a module but $moddir/modules.dep is missing"
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
