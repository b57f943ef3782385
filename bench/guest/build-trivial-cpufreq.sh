#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Build bench/guest's trivial cpufreq driver (trivial-cpufreq/) against the
# project's uclamp test kernel, warning-free (W=1), in a scratch copy; kept
# in $FREQHINT_CACHE/modules under a key of its sources and the tree, so
# that a rerun gives the same file (and the same initramfs).
#
#   build-trivial-cpufreq.sh OUT.ko
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

out=${1:?usage: $0 OUT.ko}
src=$here/bench/guest/trivial-cpufreq
kdir=$(kernel_tree uclamp)
[ -f "$kdir/Makefile" ] || die "kernel tree for uclamp not found ($kdir): run scripts/setup.sh"
kdir=$(readlink -f "$kdir")

key=$(
	{
		cd "$here" && sha256sum bench/guest/build-trivial-cpufreq.sh "$src"/*
		echo "$kdir"
		for f in .config Module.symvers include/config/kernel.release; do
			if [ -f "$kdir/$f" ]; then sha256sum "$kdir/$f"; fi
		done
		gcc --version | sed -n 1p
	} | cache_key
)
mcache=$FREQHINT_CACHE/modules
entry=$mcache/trivial-$key
if [ -f "$entry/fh_trivial_cpufreq.ko" ]; then
	touch "$entry"
	cp "$entry/fh_trivial_cpufreq.ko" "$out"
	exit 0
fi
mkdir -p "$mcache"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$src"/* "$work/"
if ! nice -n 10 make -C "$kdir" M="$work" W=1 modules >"$work/make.log" 2>&1; then
	cat "$work/make.log"
	die "the trivial cpufreq driver does not build against $kdir"
fi
if grep -E 'warning:|error:' "$work/make.log"; then
	die "the trivial cpufreq driver's build against $kdir printed warnings"
fi
cp "$work/fh_trivial_cpufreq.ko" "$out"
part=$(mktemp -d "$mcache/.part.XXXXXX")
cp "$work/fh_trivial_cpufreq.ko" "$part/"
chmod 755 "$part"
mv -T "$part" "$entry" 2>/dev/null || rm -rf "$part"
