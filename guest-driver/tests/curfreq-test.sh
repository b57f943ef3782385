#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# VIRTIO_FREQHINT_F_CUR_FREQ in a guest: Debian's stock kernel with its
# vsock, virtio transport common and vsock_loopback modules, and
# tests/fake-vsock-host.c (both from tests/vsock-loopback.sh) on CID 1
# port 853 sending CUR_FREQ on request; the guest
# runs tests/curfreq.sh, or the SCRIPT given (events-vsock.sh: one every
# window).  No device: the event handling is the device's.
#
#   curfreq-test.sh [--arch x86_64|arm64] [--script SCRIPT] LOG
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

arch=x86_64
[ "${1:-}" = --arch ] && { arch=${2:?}; shift 2; }
script=curfreq.sh
[ "${1:-}" = --script ] && { script=${2:?}; shift 2; }
[ $# = 1 ] || die "usage: $0 [--arch x86_64|arm64] [--script SCRIPT] LOG"
log=$1
tdir=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

opts=$("$tdir/vsock-loopback.sh" --arch "$arch" "$work")
mapfile -t mods <<<"$opts"
"$tdir/run-guest-test.sh" --arch "$arch" stock nouclamp "$tdir/$script" "$log" "${mods[@]}" \
	--add "$work/fh-fake-vsock-host:/usr/bin/fh-fake-vsock-host"
log "PASS: CUR_FREQ ($arch, $script)"
