#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A small Debian 12 (bookworm) root file system with systemd as init, for
# guests that test what runs under systemd (tests/deploy/).  Built with
# mmdebstrap from the apt sources this machine already has (derived from
# /etc/apt/sources.list.d/debian.sources, binary packages only, plus
# bookworm-backports), as a raw ext4 image for a virtio-blk disk.  Boot it
# read-write with QEMU's snapshot=on: the cached image never changes.
#
#   build-rootfs.sh [--print-dir]
#
# Entry $FREQHINT_CACHE/rootfs/<key>/ (key: this script, the package list and
# the derived sources):
#   rootfs.img   raw ext4 image, root of the guest
#   packages     dpkg -l of the image (what the key's package list became)
# Inside: the essential set, systemd, and what the freqhint package needs to
# install without a network (its Depends), curl for the metrics endpoint,
# the GCC sanitizer runtimes for test tools from an ASan build; no apt, no
# getty, an empty /etc/machine-id (mmdebstrap's: a new transient ID each
# boot, no first-boot units).  Entries whose image was not read for two
# weeks are removed.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"
# set -e exits without a word; say where.
trap 'log "error: $0:$LINENO: $BASH_COMMAND failed"' ERR

print=0
case "${1:-}" in
	--print-dir) print=1 ;;
	--customize) ;; # mmdebstrap's hook, below
	"") ;;
	*) die "usage: $0 [--print-dir]" ;;
esac

# The freqhint package's Depends (debian/control, and the libraries its
# binaries link: dpkg in the guest refuses the package if one is missing),
# then what the tests use.  A name with /SUITE comes from that suite.
PACKAGES=(
	systemd adduser
	libglib2.0-0 libjson-glib-1.0-0 libmicrohttpd12 libxml2
	libvirt0/bookworm-backports libvirt-glib-1.0-0
	curl libasan8 libubsan1
)

# sources_text: a deb822 sources file with the binary half of every stanza
# of the machine's debian.sources, plus bookworm-backports on its main URIs.
sources_text() {
	local src=/etc/apt/sources.list.d/debian.sources
	[ -r "$src" ] || die "$src not found: cannot derive the rootfs's apt sources"
	awk '
		/^[A-Za-z-]+:/ { k = $1; sub(":$", "", k); v = $0; sub("^[^:]*:[ \t]*", "", v); f[k] = v; next }
		/^[ \t]*$/ { emit(); next }
		END { emit() }
		function emit() {
			if (f["URIs"] != "" && f["Types"] ~ /(^| )deb( |$)/) {
				printf "Types: deb\nURIs: %s\nSuites: %s\nComponents: %s\n", f["URIs"], f["Suites"], f["Components"]
				if (f["Signed-By"] != "") printf "Signed-By: %s\n", f["Signed-By"]
				printf "\n"
				if (main == "" && f["URIs"] !~ /security/) { main = f["URIs"]; comp = f["Components"]; sig = f["Signed-By"] }
			}
			delete f
		}
		END {
			if (main == "") exit 1
			printf "Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: %s\n", main, comp
			if (sig != "") printf "Signed-By: %s\n", sig
		}
	' "$src" || die "no binary stanza with main URIs in $src"
}

sources=$(sources_text)
key=$(
	{
		sha256sum <"$0"
		printf '%s\n' "${PACKAGES[@]}"
		printf '%s\n' "$sources"
	} | cache_key
)
entry=$FREQHINT_CACHE/rootfs/$key

# customize: runs after the packages are in; $1 is the root directory.
customize() {
	local r=$1
	echo freqhint-guest >"$r/etc/hostname"
	# The test talks on the console itself; gettys would fight it.
	ln -sf /dev/null "$r/etc/systemd/system/getty.target"
	ln -sf /dev/null "$r/etc/systemd/system/serial-getty@.service"
	# Nothing to remount or check: the initramfs mounts the disk read-write.
	: >"$r/etc/fstab"
	# No network, no time sync, no udev rules worth waiting for.
	ln -sf /dev/null "$r/etc/systemd/system/systemd-networkd-wait-online.service"
	ln -sf /dev/null "$r/etc/systemd/system/systemd-timesyncd.service"
}

if [ "${1:-}" = --customize ]; then
	customize "${2:?}"
	exit 0
fi

build_entry() {
	local stage
	rm -rf "$entry"
	stage=$(mktemp -d "$FREQHINT_CACHE/rootfs/.stage.XXXXXX")
	# shellcheck disable=SC2064
	trap "rm -rf '$stage'" EXIT
	printf '%s\n' "$sources" >"$stage/sources"
	log "rootfs: mmdebstrap bookworm (${PACKAGES[*]})"
	local t0=$SECONDS
	# Recommends off (mmdebstrap's default): only what is named and needed.
	mmdebstrap --mode=root --variant=essential --format=directory \
		--include="$(IFS=,; echo "${PACKAGES[*]}")" \
		--customize-hook="$here/tests/harness/build-rootfs.sh --customize \"\$1\"" \
		bookworm "$stage/root" "$stage/sources" >"$stage/mmdebstrap.log" 2>&1 || {
		tail -n 40 "$stage/mmdebstrap.log" >&2
		die "mmdebstrap failed"
	}
	chroot "$stage/root" dpkg-query -W -f='${Package} ${Version}\n' >"$stage/packages"
	# The image: the tree's size with room for the packages the tests
	# install (their writes go to QEMU's snapshot, not here).
	local mb
	mb=$(du -sm "$stage/root" | cut -f1)
	mb=$((mb + mb / 2 + 256))
	rm -f "$stage/rootfs.img"
	mke2fs -q -t ext4 -L freqhint-root -d "$stage/root" "$stage/rootfs.img" "${mb}M" \
		>>"$stage/mmdebstrap.log" 2>&1 || { tail -n 20 "$stage/mmdebstrap.log" >&2; die "mke2fs failed"; }
	rm -rf "$stage/root"
	mkdir -p "$entry"
	mv "$stage/rootfs.img" "$stage/packages" "$entry/"
	touch "$entry/.done"
	log "rootfs: $entry (${mb} MB image, $(wc -l <"$entry/packages") packages, $((SECONDS - t0)) s)"
}

mkdir -p "$FREQHINT_CACHE/rootfs"
exec 9>"$FREQHINT_CACHE/rootfs/.lock"
flock 9
# Images of other keys (an older script or package list) go when unused.
cache_prune "$FREQHINT_CACHE/rootfs" "$entry"
if [ -f "$entry/.done" ]; then
	touch "$entry"
else
	command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (scripts/setup.sh packages)"
	build_entry
fi
[ "$print" = 1 ] && echo "$entry"
exit 0
