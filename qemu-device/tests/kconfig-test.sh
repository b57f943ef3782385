#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# kconfig-test.sh [SOURCE]: the device is built exactly for the targets
# whose boards select VIRTIO_FREQHINT_SUPPORTED (x86 PC, Arm virt: the
# machines where CPU_IDS carries the firmware id the guest knows), and for
# no other (pseries with threads gave every vCPU CPU_ID_NONE; DEV-25 does
# not define ids on ppc64 or LoongArch).  It runs QEMU's own minikconf on
# every softmmu target of the laid source tree (default: build-qemu.sh's),
# with the arguments meson gives it, without building anything.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -gt 0 ]; then
	src=$1
else
	eval "$("$here/build-qemu.sh" --print-dirs)"
	src=$SOURCE
fi
want="aarch64-softmmu arm-softmmu i386-softmmu x86_64-softmmu"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

got=
for dir in "$src"/configs/devices/*-softmmu; do
	t=$(basename "$dir")
	mak=$src/configs/targets/$t.mak
	arch=$(sed -n 's/^TARGET_ARCH=//p' "$mak")
	be=$(sed -n 's/^TARGET_BIG_ENDIAN=//p' "$mak")
	python3 "$src/scripts/minikconf.py" --defconfig "$tmp/$t.mak" "$tmp/$t.d" \
		"$dir/default.mak" "$src/Kconfig" \
		CONFIG_FDT=y CONFIG_LINUX=y CONFIG_TCG=y CONFIG_KVM=n \
		"CONFIG_${arch^^}=y" "CONFIG_TARGET_BIG_ENDIAN=${be:-n}" >"$tmp/$t.out" ||
		{ echo "minikconf failed for $t" >&2; exit 1; }
	if grep -qx 'CONFIG_VIRTIO_FREQHINT=y' "$tmp/$t.out"; then
		got="$got $t"
	fi
done
got=${got# }
echo "virtio-freqhint is built for: $got"
if [ "$got" != "$want" ]; then
	echo "expected exactly: $want" >&2
	exit 1
fi
