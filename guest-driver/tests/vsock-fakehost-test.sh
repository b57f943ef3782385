#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The module's vsock transport in a guest (issue 39), before and beside the
# real front end: Debian's stock kernel with its vsock, virtio transport
# common and vsock_loopback modules, and tests/fake-vsock-host.c (built static
# here) on CID 1 port 853; the guest runs tests/vsock-fakehost.sh.  The project's
# uclamp kernel has no CONFIG_VSOCKETS, so it cannot run this.
#
#   vsock-fakehost-test.sh LOG
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

[ $# = 1 ] || die "usage: $0 LOG"
log=$1
tdir=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

kdir=$("$here/tests/harness/fetch-stock-kernel.sh" --print-dir)
release=$(cat "$kdir/release")
mods=()
for m in vsock vmw_vsock_virtio_transport_common vsock_loopback; do
	f=$(find "/lib/modules/$release/kernel/net/vmw_vsock" -name "$m.ko*" | head -n1)
	[ -n "$f" ] || die "$m not found for $release (Debian's linux-image package)"
	case "$f" in
		*.xz) xz -dc "$f" >"$work/$m.ko" ;;
		*.zst) zstd -qdc "$f" >"$work/$m.ko" ;;
		*) cp "$f" "$work/$m.ko" ;;
	esac
	mods+=(--module "$work/$m.ko")
done
gcc -static -O2 -Wall -Wextra -Werror -Wno-sign-compare -I "$here/spec/include" \
	-o "$work/fh-fake-vsock-host" "$tdir/fake-vsock-host.c"

"$tdir/run-guest-test.sh" stock nouclamp "$tdir/vsock-fakehost.sh" "$log" "${mods[@]}" \
	--add "$work/fh-fake-vsock-host:/usr/bin/fh-fake-vsock-host"
