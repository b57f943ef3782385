#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build the header-check module (tests/guest/header-check/) against a kernel
# tree, proving <linux/virtio_freqhint.h> compiles in kernel context there.
#
#   check.sh uclamp     the project's test kernel (build-kernel.sh's build/)
#   check.sh stock      Debian's backports 6.12 headers, /usr/src/linux-headers-6.12.*-amd64
#   check.sh bookworm   Debian's bookworm 6.1 headers, /usr/src/linux-headers-6.1.*-amd64
#   check.sh DIR        any prepared tree (make -C DIR M=... modules works)
#   check.sh K OUT.ko   also keep the module as OUT.ko (run-guest tests load it)
# Fails when the tree is missing: scripts/setup.sh provides all three.
set -euo pipefail

here=$(cd "$(dirname "$0")/../../.." && pwd)
. "$here/scripts/lib.sh"
# set -e exits without a word; say where.
trap 'log "error: $0:$LINENO: $BASH_COMMAND failed"' ERR

case "${1:-}" in
	"") die "usage: $0 uclamp|stock|bookworm|DIR" ;;
	*) kdir=$(kernel_tree "$1") ;;
esac
if [ -z "$kdir" ] || [ ! -f "$kdir/Makefile" ]; then
	die "kernel tree for '$1' not found (${kdir:-no match}): run scripts/setup.sh"
fi

# Kbuild writes next to the sources: build in a scratch copy.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/tests/guest/header-check/header_check.c" "$here/tests/guest/header-check/Kbuild" "$work/"

if ! make -s -C "$kdir" M="$work" FREQHINT_SPEC_INCLUDE="$here/spec/include" modules \
	>"$work/make.log" 2>&1; then
	cat "$work/make.log"
	die "header check failed against $kdir"
fi
[ -f "$work/header_check.ko" ] || { cat "$work/make.log"; die "no header_check.ko"; }
grep -v '^ *$' "$work/make.log" || true
[ -n "${2:-}" ] && cp "$work/header_check.ko" "$2"
echo "ok: <linux/virtio_freqhint.h> builds in kernel context against $kdir ($(modinfo -F vermagic "$work/header_check.ko"))"
