#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# make-series.sh's series for LKML: it is written, holds nothing that only
# the out-of-tree module needs (the FH_COMPAT_* branches for older
# kernels, the benchmark's anchor, the by-name sched_switch probe, Kbuild's
# out-of-tree lines), each patch is checkpatch --strict clean, and the
# driver and its KUnit tests as the series adds them build warning-free
# (W=1) against the project's uclamp kernel, which carries the clamp hook
# the series is based on, and binds its cpufreq half through the auxiliary
# bus.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

kdir=$("$here/tests/harness/build-kernel.sh" --print-dir)
cp=$(readlink -f "$kdir/build/source")/scripts/checkpatch.pl
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$here/guest-driver/make-series.sh" "$work/series" >/dev/null
mapfile -t patches < <(ls "$work"/series/0*.patch | grep -v cover-letter)
[ ${#patches[@]} = 2 ] || die "wanted 2 patches, got ${#patches[@]}"
grep -q '^base-commit: ' "$work"/series/0000-cover-letter.patch ||
	die "the cover letter names no base commit"

# What only the out-of-tree module has, in added lines or file names.
# The project's spec labels (GR-4, DRV-40, ...) mean nothing to a reader
# of the kernel's tree either.
left=$(grep -nE '^\+.*(FH_HAVE_|FH_COMPAT_|FH_BENCH_ANCHOR|FH_OWN_TIME|own_ns|sampler_ns|FH_CLAMP_SWITCH|vfh_gather_switch|LINUX_VERSION_CODE|KBUILD_EXTMOD|FREQHINT_SPEC_INCLUDE|clamp_switch|notify_every_change|\b(GR|DRV|DEV|MR|PA|PD|VS)-[0-9]+)|^\+\+\+ .*clamp_switch' \
	"${patches[@]}" || true)
[ -z "$left" ] || { echo "$left"; die "the series holds out-of-tree lines (above)"; }

for p in "${patches[@]}"; do
	ignore=()
	# The KUnit patch adds a file under the directory the first patch's
	# MAINTAINERS entry already covers.
	grep -q '^ MAINTAINERS ' "$p" || ignore=(--ignore FILE_PATH_CHANGES)
	out=$(perl "$cp" --strict --terse --no-tree "${ignore[@]}" "$p" |
		grep -v ' total: 0 errors, 0 warnings, ' || true)
	[ -z "$out" ] || { echo "$out"; die "checkpatch: $(basename "$p")"; }
	echo "ok: $(basename "$p") checkpatch --strict clean"
done

# The new files alone (the edits to existing ones need the whole tree),
# built as the kernel would in tree.  The device ID's hunk goes to
# <linux/virtio_ids.h>, which the built kernel has without it.
mkdir "$work/tree"
(cd "$work/tree" && git init -q &&
	for p in "${patches[@]}"; do
		git apply --include='drivers/virtio/freqhint/*' \
			--include='include/uapi/linux/*freqhint*' "$p"
	done)
d=$work/tree/drivers/virtio/freqhint
[ -f "$d/Makefile" ] && [ -f "$d/virtio_freqhint_test.c" ] || die "the series adds no driver directory"
log=$work/build.log
# The driver selects AUXILIARY_BUS, which the uclamp kernel was built
# without (nothing in its configuration selects it): in tree the select
# builds the bus, here modpost finds the bus's symbols missing.  Those,
# and only those, are let through as warnings.
aux_missing=
grep -q '^CONFIG_AUXILIARY_BUS=y' "$kdir/build/.config" || aux_missing=1
make -C "$kdir/build" M="$d" W=1 \
	CONFIG_VIRTIO_FREQHINT=m CONFIG_VIRTIO_FREQHINT_KUNIT_TEST=m \
	KCFLAGS="-I$work/tree/include/uapi -DVIRTIO_ID_FREQHINT=56" \
	${aux_missing:+KBUILD_MODPOST_WARN=1} \
	modules >"$log" 2>&1 || { cat "$log"; die "the series' driver does not build"; }
if grep -E 'warning:|error:' "$log"; then
	die "the series' driver builds with warnings (above)"
fi
if grep 'modpost: ' "$log" |
	grep -vE 'modpost: "_*auxiliary_[a-z_]+" \[.*/virtio_freqhint\.ko\] undefined!$'; then
	die "modpost: more than the auxiliary bus's symbols (above)"
fi
[ -z "$aux_missing" ] || grep -q 'modpost: "auxiliary_device_init"' "$log" ||
	die "the series' driver does not use the auxiliary bus"
[ -f "$d/virtio_freqhint.ko" ] && [ -f "$d/virtio_freqhint_test.ko" ] ||
	die "no virtio_freqhint.ko or virtio_freqhint_test.ko"
# The hook is the series' clamp source: the driver sets ->update_uclamp.
grep -q 'update_uclamp' "$d/cpufreq.c" || die "the series' cpufreq driver has no ->update_uclamp"
echo "ok: the series' driver and KUnit tests build warning-free (W=1) against $(basename "$kdir")"
