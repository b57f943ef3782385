#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Debian's cross compiler for an architecture (gcc-aarch64-linux-gnu),
# unpacked from its packages by fetch-debs.sh instead of being installed: on
# Debian 12 gcc-12-aarch64-linux-gnu and gcc-multilib (which the project
# needs for QEMU's x86 option ROMs) conflict, so apt cannot have both.  GCC
# finds its parts relative to its own path, so the unpacked tree works where
# it is.  The cross binutils are not unpacked but installed
# (binutils-aarch64-linux-gnu, by setup.sh): their programs load the
# target's libbfd and libopcodes through the dynamic loader, which knows
# only the system's library directories.  The tree's tool directory points
# at the installed ones, where GCC looks for as and ld; a compile and link
# of an empty program proves the pair works before the path is printed.
# Prints the bin directory: put it first in PATH, then use
# CROSS_COMPILE=aarch64-linux-gnu-.
#
#   cross-gcc.sh arm64 [--libc]
#     --libc   also the target's C library and GCC's own headers and
#              libgcc (libc6-dev-arm64-cross, libgcc-12-dev-arm64-cross),
#              unpacked into the same tree, where GCC looks for them: for
#              static guest programs (tests/e2e).  The kernel and modules
#              need neither, so the plain entry stays smaller.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

case "${1:-}" in
	arm64) triplet=aarch64-linux-gnu debarch=arm64 ;;
	*) die "usage: $0 arm64 [--libc]" ;;
esac
libc=()
[ "${2:-}" = --libc ] && libc=("libgcc-12-dev-$debarch-cross:all" "libc6-dev-$debarch-cross:all"
	"libc6-$debarch-cross:all" "linux-libc-dev-$debarch-cross:all")
entry=$("$here/tests/harness/fetch-debs.sh" amd64 "gcc-$triplet" "gcc-12-$triplet" \
	"cpp-$triplet" "cpp-12-$triplet" "${libc[@]}")
bin=$entry/root/usr/bin
[ -x "$bin/$triplet-gcc" ] || die "no $triplet-gcc in $bin"
[ -x "/usr/bin/$triplet-as" ] ||
	die "no /usr/bin/$triplet-as: install binutils-$triplet (scripts/setup.sh packages)"
# GCC runs as and ld from <tree>/usr/<triplet>/bin, next to the target's
# C library (unpacked there with --libc).
tooldir=$entry/root/usr/$triplet/bin
if [ "$(readlink "$tooldir" 2>/dev/null)" != "/usr/$triplet/bin" ]; then
	mkdir -p "$(dirname "$tooldir")"
	rm -rf "$tooldir"
	ln -sfn "/usr/$triplet/bin" "$tooldir"
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int f(void) { return 0; }' >"$probe/p.c"
"$bin/$triplet-gcc" -c -o "$probe/p.o" "$probe/p.c" 2>"$probe/err" ||
	die "$bin/$triplet-gcc cannot assemble: $(head -3 "$probe/err")"
echo "$bin"
