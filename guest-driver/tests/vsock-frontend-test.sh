#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The module against the real host side (issue 39): tests/vsock-guest/run.sh
# boots Debian's stock kernel with its vsock loopback transport and the
# host's binaries (freqhintd, freqhintctl, freqhint-vsockd, fh-vsock-peer);
# the guest runs tests/vsock-frontend.sh with this module, built here, and
# the fixture host of tests/agent/mkfixture.sh at /opt/fx.  The project's
# uclamp kernel has no CONFIG_VSOCKETS, so it cannot run this.
#
#   vsock-frontend-test.sh LOG FREQHINTD FREQHINTCTL FREQHINT_VSOCKD FH_VSOCK_PEER
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

[ $# = 5 ] || die "usage: $0 LOG FREQHINTD FREQHINTCTL FREQHINT_VSOCKD FH_VSOCK_PEER"
log=$1
shift
tdir=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

kdir=$("$here/tests/harness/fetch-stock-kernel.sh" --print-dir)
"$tdir/build-module.sh" --cached "$(readlink -f "$kdir/build")" "$work/virtio_freqhint.ko" >&2
"$here/tests/agent/mkfixture.sh" host "$work/fx"
"$here/tests/vsock-guest/run.sh" --kernel stock --log "$log" --timeout 800 \
	--module "$work/virtio_freqhint.ko" --test "$tdir/vsock-frontend.sh" \
	--add "$tdir/fh-lib.sh:/lib/freqhint/fh-lib.sh" --add "$work/fx:/opt/fx" "$@"
