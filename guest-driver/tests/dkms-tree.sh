#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `make dkms-tree` lays a self-contained source tree (with its copies of
# <linux/virtio_freqhint.h> and <linux/freqhint_vsock.h>) that builds the way DKMS builds it, against
# Debian's 6.12 headers.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

kdir=$(find /usr/src -maxdepth 1 -name 'linux-headers-6.12.*-amd64' | sort -V | tail -n1)
[ -n "$kdir" ] || die "no 6.12 headers: run scripts/setup.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

make -s -C "$here/guest-driver" dkms-tree DESTDIR="$work/root"
tree=$(echo "$work"/root/usr/src/virtio_freqhint-*)
[ -f "$tree/dkms.conf" ] || die "no dkms.conf in $tree"
for h in virtio_freqhint.h freqhint_vsock.h; do
	[ -f "$tree/include/linux/$h" ] || die "$h not carried"
	cmp "$tree/include/linux/$h" "$here/spec/include/linux/$h"
done
# What dkms.conf's MAKE[0] runs, with the tree as its build directory; no
# FREQHINT_SPEC_INCLUDE, no ../spec: the tree must stand alone.
mv "$work/root/usr/src" "$work/src"
make -C "$kdir" M="$(echo "$work"/src/virtio_freqhint-*)" modules >"$work/make.log" 2>&1 ||
	{ cat "$work/make.log"; die "dkms-style build failed"; }
ls "$work"/src/virtio_freqhint-*/virtio_freqhint.ko >/dev/null
echo "ok: dkms tree $(basename "$tree") builds against $kdir"
