#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The module against the real host side (issue 39): tests/vsock-guest/run.sh
# boots a kernel with the vsock loopback transport (Debian's stock 6.12,
# modules; the project's uclamp kernel, built in) and the host's binaries
# (freqhintd, freqhintctl, freqhint-vsockd, fh-vsock-peer); the guest runs
# tests/vsock-frontend.sh with this module, built here for that kernel, and
# the fixture host of tests/agent/mkfixture.sh at /opt/fx.  On the uclamp
# kernel the guest's clamps themselves travel too (uclampset).
#
#   vsock-frontend-test.sh stock|uclamp LOG FREQHINTD FREQHINTCTL FREQHINT_VSOCKD FH_VSOCK_PEER
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

[ $# = 6 ] || die "usage: $0 stock|uclamp LOG FREQHINTD FREQHINTCTL FREQHINT_VSOCKD FH_VSOCK_PEER"
kernel=$1 log=$2
shift 2
tdir=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

case "$kernel" in
	stock) kdir=$("$here/tests/harness/fetch-stock-kernel.sh" --print-dir) ;;
	uclamp) kdir=$("$here/tests/harness/build-kernel.sh" --print-dir) ;;
	*) die "kernel stock or uclamp, not '$kernel'" ;;
esac
"$tdir/build-module.sh" --cached "$(readlink -f "$kdir/build")" "$work/virtio_freqhint.ko" >&2
"$here/tests/agent/mkfixture.sh" host "$work/fx"
"$here/tests/vsock-guest/run.sh" --kernel "$kernel" --log "$log" --timeout 800 \
	--module "$work/virtio_freqhint.ko" --test "$tdir/vsock-frontend.sh" \
	--add "$tdir/fh-lib.sh:/lib/freqhint/fh-lib.sh" --add "$work/fx:/opt/fx" "$@"
