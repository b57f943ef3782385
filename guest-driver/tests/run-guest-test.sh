#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Build virtio_freqhint.ko for a guest kernel and run an in-guest test with
# it (tests/harness/run-guest.sh judges the console).
#
#   run-guest-test.sh [--arch x86_64|arm64] KERNEL EXPECT TEST.sh LOG [-- QEMU ARGS]
#     --arch   the guest's architecture (run-guest.sh --arch): arm64 boots
#              the virt machine with that architecture's kernels and a
#              cross-built module; the in-guest tests ask `uname -m`
#     KERNEL   uclamp | stock (see tests/harness/run-guest.sh)
#     EXPECT   uclamp | nouclamp, passed as freqhint.expect= to the test
# Extra run-guest.sh options may come from $FH_RUN_GUEST_ARGS (e.g. --qemu),
# more kernel command line for the test from $FH_GUEST_APPEND (meson sets it
# per test, so it does not take over FH_RUN_GUEST_ARGS).
# The module binds to virtio-freqhint-pci and does nothing without it: tests
# of its behaviour pass `-- -device virtio-freqhint-pci` (the project's QEMU).
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

arch=x86_64
[ "${1:-}" = --arch ] && { arch=${2:?}; shift 2; }
[ $# -ge 4 ] || die "usage: $0 [--arch x86_64|arm64] KERNEL EXPECT TEST.sh LOG [-- QEMU ARGS]"
kernel=$1 expect=$2 test=$3 log=$4
shift 4
# arm64 under TCG on an x86 host boots and runs slower (no KVM-like shortcuts
# for its system registers, GICv3 emulated).
timeout=400
[ "$arch" = x86_64 ] || timeout=600

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case "$kernel" in
	uclamp)
		kdir=$("$here/tests/harness/build-kernel.sh" --arch "$arch" --print-dir)
		boot=uclamp
		# It has kmemleak: load/unload cycles must not leak.
		extra=(--kmemleak) ;;
	stock)
		kdir=$("$here/tests/harness/fetch-stock-kernel.sh" --arch "$arch" --print-dir)
		boot=stock
		extra=() ;;
	*) die "KERNEL is uclamp or stock" ;;
esac
"$here/guest-driver/tests/build-module.sh" --cached "$(readlink -f "$kdir/build")" \
	"$work/virtio_freqhint.ko" "$work/virtio_freqhint_test.ko" >&2
# The KUnit module exists only for kernels with CONFIG_KUNIT.
mods=(--module "$work/virtio_freqhint.ko")
[ -f "$work/virtio_freqhint_test.ko" ] && mods+=(--module "$work/virtio_freqhint_test.ko")

# shellcheck disable=SC2086
"$here/tests/harness/run-guest.sh" --arch "$arch" --kernel "$boot" "${extra[@]}" ${FH_RUN_GUEST_ARGS:-} \
	--test "$test" "${mods[@]}" \
	--add "$here/guest-driver/tests/fh-lib.sh:/lib/freqhint/fh-lib.sh" \
	--append "freqhint.expect=$expect${FH_GUEST_APPEND:+ $FH_GUEST_APPEND}" \
	--log "$log" --timeout "$timeout" "$@"
