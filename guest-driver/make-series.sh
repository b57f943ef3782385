#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# make-series.sh [OUTDIR]
#
# Write the driver as a git format-patch series against Linux, for LKML
# (default OUTDIR: ./virtio-freqhint-linux-series).  What only the
# out-of-tree module needs is not in it: the branches for older kernels
# (FH_COMPAT_*), the benchmark's anchor (FH_BENCH_ANCHOR) and own-time
# accounting (FH_OWN_TIME), the by-name sched_switch probe and the
# gatherer's part that serves it (FH_CLAMP_SWITCH, clamp_switch.c) and the
# Kbuild lines for KBUILD_EXTMOD and the spec's include directory.  The
# kernel's own scripts/unifdef removes the #if branches, so every line
# that remains is the module's, unchanged.
#
# Base: the files the series edits, from the Debian 6.12 tree the
# project's test kernel is built from (tests/harness/build-kernel.sh), so
# the series applies there with git am.
# OUTDIR/core/: the RFC clamp hook the driver uses (guest-driver/rfc/),
# the base the series is posted on (Based-on: in the cover letter).
# OUTDIR/:
#   1/2 virtio: add a driver for the frequency hint device
#   2/2 virtio: freqhint: add KUnit tests
#
# The author is a named placeholder (guest-driver/rfc/ uses the same);
# the MAINTAINERS entry (guest-driver/MAINTAINERS) names it too.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$top/scripts/lib.sh"

out=$(realpath -m "${1:-virtio-freqhint-linux-series}")
kdir=$("$top/tests/harness/build-kernel.sh" --print-dir)
patched=$(readlink -f "$kdir/build/source")
pristine=${patched%-p*}
[ -f "$pristine/MAINTAINERS" ] || die "$pristine: not a kernel tree"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repo=$work/linux
mkdir -p "$repo"
cd "$repo"
export GIT_AUTHOR_NAME="Freqhint Placeholder" GIT_AUTHOR_EMAIL="placeholder@freqhint.invalid"
export GIT_COMMITTER_NAME=$GIT_AUTHOR_NAME GIT_COMMITTER_EMAIL=$GIT_AUTHOR_EMAIL
export GIT_AUTHOR_DATE="2026-12-07 00:00:00 +0000" GIT_COMMITTER_DATE="2026-12-07 00:00:00 +0000"

# The kernel's unifdef, built from its source (no package needed).
gcc -O2 -o "$work/unifdef" "$pristine/scripts/unifdef.c" 2>/dev/null ||
	die "cannot build $pristine/scripts/unifdef.c"
# Out of tree only: undefined in tree.  The clamp hook: always there.
defs=(-UFH_BENCH_ANCHOR -UFH_OWN_TIME -UFH_CLAMP_SWITCH -UFH_COMPAT_EXIT_INT
      -UFH_COMPAT_FIND_VQS_NAMES -UFH_COMPAT_FREQ_REF -UFH_COMPAT_NO_AUXILIARY_BUS
      -UFH_COMPAT_NO_SCALE_FREQ_VIRT
      -DFH_HAVE_UPDATE_UCLAMP)

# strip SRC DST: SRC without the out-of-tree branches.  unifdef exits 1
# when it changed something, 2 on an error.
strip() {
	mkdir -p "$(dirname "$2")"
	"$work/unifdef" "${defs[@]}" -o "$2" "$1" || [ $? = 1 ] ||
		die "unifdef failed on $1"
}

# The in-tree Makefile: Kbuild's object lists, the ones the driver is made
# of in every build (the rest of Kbuild configures the out-of-tree build
# and the sources it alone has).
intree_makefile() {
	echo "# SPDX-License-Identifier: GPL-2.0-only"
	awk '/^(obj-|virtio_freqhint-y)/ && !/clamp_switch|KUNIT_TEST/ { keep = 1 }
	     keep { print } keep && !/\\$/ { keep = 0 }' "$here/Kbuild"
}

files_base=(MAINTAINERS drivers/virtio/Kconfig drivers/virtio/Makefile
	    include/uapi/linux/virtio_ids.h)
for p in "$here"/rfc/*.patch; do
	mapfile -t -O ${#files_base[@]} files_base < <(sed -n 's|^+++ b/||p' "$p")
done
git init -q
for f in "${files_base[@]}"; do
	mkdir -p "$(dirname "$f")"
	cp "$pristine/$f" "$f"
	chmod u+w "$f"
done
git add -A
git commit -q -m "Linux $(make -s -C "$pristine" kernelversion 2>/dev/null) (files touched by the series)"
base=$(git rev-parse HEAD)

# The clamp hook, as posted (its own message and author).
git am -q "$here"/rfc/*.patch
core=$(git rev-parse HEAD)

# 1/2: the driver, with its interface in include/uapi.
d=drivers/virtio/freqhint
strip "$top/spec/include/linux/virtio_freqhint.h" include/uapi/linux/virtio_freqhint.h
strip "$top/spec/include/linux/freqhint_vsock.h" include/uapi/linux/freqhint_vsock.h
# The ID's fallback definition (until the TC reserves it) and the comment
# that explains it go: the ID goes where every device's is.
"$work/unifdef" -DVIRTIO_ID_FREQHINT=56 -o "$work/h" \
	include/uapi/linux/virtio_freqhint.h || [ $? = 1 ]
awk '/^\/\*$/ { hold = $0; getline; if ($0 ~ /Experimental, pending/) { skip = 1; next } print hold }
     skip && /\*\// { skip = 0; next } !skip' "$work/h" |
	cat -s >include/uapi/linux/virtio_freqhint.h
id_line=$(grep -n '^#define VIRTIO_ID_' include/uapi/linux/virtio_ids.h | tail -n1 | cut -d: -f1)
sed -i "${id_line}a #define VIRTIO_ID_FREQHINT\t\t56 /* virtio frequency hint */" \
	include/uapi/linux/virtio_ids.h
for f in "$here"/*.c "$here"/*.h; do
	case $(basename "$f") in
	virtio_freqhint_test.c|clamp_switch.c) continue ;;
	esac
	strip "$f" "$d/$(basename "$f")"
done
cp "$here/Kconfig" "$d/Kconfig"
intree_makefile >"$d/Makefile"
mkdir -p Documentation/ABI/testing
cp "$here"/Documentation/ABI/testing/* Documentation/ABI/testing/
sed -i 's|^endif # VIRTIO_MENU|source "drivers/virtio/freqhint/Kconfig"\n\n&|' drivers/virtio/Kconfig
grep -q 'freqhint/Kconfig' drivers/virtio/Kconfig || die "drivers/virtio/Kconfig: no place for the source line"
echo 'obj-$(CONFIG_VIRTIO_FREQHINT) += freqhint/' >>drivers/virtio/Makefile
# MAINTAINERS: the entry in its alphabetical place among the VIRTIO ones.
awk -v entry="$here/MAINTAINERS" '
	BEGIN { while ((getline l < entry) > 0) if (l !~ /^#/) e = e l "\n"; split(e, t, "\n"); name = t[1] }
	!done && seen && prev == "" && /^[A-Z0-9][A-Z0-9 ,()\/.-]+$/ && $0 > name { printf "%s\n", e; done = 1 }
	/^VIRTIO / { seen = 1 }
	{ print; prev = $0 }
	END { if (!done) exit 1 }' MAINTAINERS >"$work/MAINTAINERS" ||
	die "MAINTAINERS: no place for the entry"
cp "$work/MAINTAINERS" MAINTAINERS
git add -A
git commit -q -s -F - <<'MSG'
virtio: add a driver for the frequency hint device

A guest kernel knows which tasks matter, through utilization clamps
(sched_setattr(), cgroup cpu.uclamp.min/max), but the host sees only vCPU
threads, so that knowledge is lost at the VM boundary.  The frequency
hint device carries it across: per vCPU, the run queue's clamp aggregate
(uclamp.min and uclamp.max, as the scheduler aggregates them), the
performance the guest's cpufreq governor requests, and whether the vCPU
is idle.  A host that sets the frequency of the physical CPUs its vCPU
threads run on uses them the way the guest's own scheduler would on a
physical CPU.  The host answers on an event queue with the range it
grants each vCPU, the operator's bounds for the VM, the host's frequency
classes and the frequency its CPUs run each vCPU at.

This driver reports those values at most once per the device's rate
window and registers a cpufreq driver that presents the host's
frequencies and applies the host's grants to the guest's policies.  The
cpufreq driver binds to an auxiliary device the virtio driver adds only
when the device offers a perf value or the host's frequencies, so the
system's one cpufreq slot stays free otherwise, and the cpufreq half can
be unbound and bound again on its own.  It does not write arch_topology's
capacity_freq_ref: it registers with the host's range, after the
device's first snapshot.  The
clamps come from the cpufreq core's ->update_uclamp callback (the RFC
this series is based on).  Without uclamp, busy and idle come from each
CPU's idle time at the window's close, and nothing of the driver runs on
a context switch.  nohz_full CPUs take no timer of the driver's: their
windows close on a housekeeping CPU.

Where the device does not exist, the driver reports over a vsock stream
connection to the host (transport=vsock) with the same messages:
freqhint_vsock.h defines the framing and the two handshake messages that
stand in for feature negotiation and the configuration space.

The device ID is experimental, pending a reservation by the virtio TC.
MSG

# 2/2: the KUnit tests.
strip "$here/virtio_freqhint_test.c" "$d/virtio_freqhint_test.c"
echo 'obj-$(CONFIG_VIRTIO_FREQHINT_KUNIT_TEST) += virtio_freqhint_test.o' >>"$d/Makefile"
git add -A
git commit -q -s -F - <<'MSG'
virtio: freqhint: add KUnit tests

The driver's pure logic: the window and its idle rule, the publish and
consume protocol between the scheduler-context gatherer and the sender,
the checks of the device's configuration and event messages (taken from
a private copy, so a device that rewrites a buffer meanwhile changes
nothing), kHz to capacity and back, and the records the driver builds.
MSG

rm -rf "$out"
mkdir -p "$out/core"
git format-patch -q --base="$base" -o "$out/core" "$base..$core"
git format-patch -q --cover-letter --base="$core" -o "$out" "$core..HEAD"
echo "$out"
