#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# VIRTIO_FREQHINT_F_CUR_FREQ in a guest: Debian's stock kernel with its
# vsock, virtio transport common and vsock_loopback modules, and
# tests/fake-vsock-host.c (built static here, for the guest's
# architecture) on CID 1 port 853 sending CUR_FREQ on request; the guest
# runs tests/curfreq.sh.  No device: the event handling is the device's.
#
#   curfreq-test.sh [--arch x86_64|arm64] LOG
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

arch=x86_64
[ "${1:-}" = --arch ] && { arch=${2:?}; shift 2; }
[ $# = 1 ] || die "usage: $0 [--arch x86_64|arm64] LOG"
log=$1
tdir=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

kdir=$("$here/tests/harness/fetch-stock-kernel.sh" --arch "$arch" --print-dir)
release=$(cat "$kdir/release")
cc=gcc
moddir=/lib/modules/$release
if [ "$arch" = arm64 ]; then
	# The package's own modules: fetch-stock-kernel.sh's request, so its
	# cached entry.
	moddir=$("$here/tests/harness/fetch-debs.sh" arm64 "linux-image-$release" \
		"linux-headers-$release" "linux-headers-${release%-arm64}-common:all")/root/lib/modules/$release
	cc="$("$here/tests/harness/cross-gcc.sh" arm64 --libc)/aarch64-linux-gnu-gcc"
fi
mods=()
for m in vsock vmw_vsock_virtio_transport_common vsock_loopback; do
	f=$(find "$moddir/kernel/net/vmw_vsock" -name "$m.ko*" | head -n1)
	[ -n "$f" ] || die "$m not found for $release (Debian's linux-image package)"
	case "$f" in
		*.xz) xz -dc "$f" >"$work/$m.ko" ;;
		*.zst) zstd -qdc "$f" >"$work/$m.ko" ;;
		*) cp "$f" "$work/$m.ko" ;;
	esac
	mods+=(--module "$work/$m.ko")
done
"$cc" -static -O2 -Wall -Wextra -Werror -Wno-sign-compare -I "$here/spec/include" \
	-o "$work/fh-fake-vsock-host" "$tdir/fake-vsock-host.c"

"$tdir/run-guest-test.sh" --arch "$arch" stock nouclamp "$tdir/curfreq.sh" "$log" "${mods[@]}" \
	--add "$work/fh-fake-vsock-host:/usr/bin/fh-fake-vsock-host"
log "PASS: CUR_FREQ ($arch)"
