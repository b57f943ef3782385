#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# What a guest needs to talk vsock to itself, for the tests that run
# tests/fake-vsock-host.c in the guest (vsock-fakehost-test.sh,
# curfreq-test.sh): Debian's stock kernel's vsock, virtio transport common
# and vsock_loopback modules (the installed amd64 package's, or the arm64
# package fetch-stock-kernel.sh unpacked), uncompressed into DIR, and
# fh-fake-vsock-host built static for the guest's architecture there.
# Prints run-guest.sh's --module options, one a line, in load order.
#
#   vsock-loopback.sh [--arch x86_64|arm64] DIR
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

arch=x86_64
[ "${1:-}" = --arch ] && { arch=${2:?}; shift 2; }
[ $# = 1 ] || die "usage: $0 [--arch x86_64|arm64] DIR"
dir=$1

kdir=$("$here/tests/harness/fetch-stock-kernel.sh" --arch "$arch" --print-dir)
release=$(cat "$kdir/release")
cc=gcc
moddir=/lib/modules/$release
if [ "$arch" = arm64 ]; then
	# fetch-stock-kernel.sh's request, so its cached entry.
	moddir=$("$here/tests/harness/fetch-debs.sh" arm64 "linux-image-$release" \
		"linux-headers-$release" "linux-headers-${release%-arm64}-common:all")/root/lib/modules/$release
	cc="$("$here/tests/harness/cross-gcc.sh" arm64 --libc)/aarch64-linux-gnu-gcc"
fi
for m in vsock vmw_vsock_virtio_transport_common vsock_loopback; do
	f=$(find "$moddir/kernel/net/vmw_vsock" -name "$m.ko*" | head -n1)
	[ -n "$f" ] || die "$m not found for $release (Debian's linux-image package)"
	case "$f" in
		*.xz) xz -dc "$f" >"$dir/$m.ko" ;;
		*.zst) zstd -qdc "$f" >"$dir/$m.ko" ;;
		*) cp "$f" "$dir/$m.ko" ;;
	esac
	printf -- '--module\n%s\n' "$dir/$m.ko"
done
"$cc" -static -O2 -Wall -Wextra -Werror -Wno-sign-compare -I "$here/spec/include" \
	-o "$dir/fh-fake-vsock-host" "$(dirname "$0")/fake-vsock-host.c"
