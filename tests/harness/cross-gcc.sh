#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Debian's cross compiler for an architecture (gcc-aarch64-linux-gnu and
# binutils), unpacked from its packages by fetch-debs.sh instead of being
# installed: on Debian 12 gcc-12-aarch64-linux-gnu and gcc-multilib (which
# the project needs for QEMU's x86 option ROMs) conflict, so apt cannot have
# both.  GCC and binutils find their parts relative to their own path, so the
# unpacked tree works where it is.  Prints its bin directory: put it first in
# PATH, then use CROSS_COMPILE=aarch64-linux-gnu-.
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
	"cpp-$triplet" "cpp-12-$triplet" "binutils-$triplet" "${libc[@]}")
bin=$entry/root/usr/bin
[ -x "$bin/$triplet-gcc" ] || die "no $triplet-gcc in $bin"
echo "$bin"
