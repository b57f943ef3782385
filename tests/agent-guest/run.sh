#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# freqhintd's uclamp backend against a real kernel: boots the project's
# uclamp test kernel (tests/harness/build-kernel.sh)
# under TCG with an
# initramfs carrying freqhintd, freqhintctl, fh-testclient, uclamp-check and
# their shared libraries (the ldd closure, under /opt/fh), and runs
# in-guest.sh there.  This host's kernel has no CONFIG_UCLAMP_TASK.
#
#   run.sh FREQHINTD FREQHINTCTL FH_TESTCLIENT UCLAMP_CHECK [--log FILE]
#
# No virtio-freqhint device is involved (fh-testclient plays it inside the
# guest), so any QEMU will do: $FREQHINT_QEMU, else qemu-system-x86_64 from
# PATH, else run-guest.sh's default (the project's build).
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

[ $# -ge 4 ] || die "usage: $0 FREQHINTD FREQHINTCTL FH_TESTCLIENT UCLAMP_CHECK [--log FILE]"
bins=("$1" "$2" "$3" "$4"); shift 4
log_args=()
[ "${1:-}" = --log ] && log_args=(--log "${2:?}")
for b in "${bins[@]}"; do
	[ -x "$b" ] || die "$b is not an executable"
done

T=$(mktemp -d "${TMPDIR:-/tmp}/fh-agent-guest.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/fh/lib"
for b in "${bins[@]}"; do
	cp "$b" "$T/fh/"
	# Libraries by real file (symlinks would dangle in the guest); the
	# loader itself is already in the image (uclampset needs it too).
	ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' |
		while read -r name path; do
			cp -L "$path" "$T/fh/lib/$name"
		done
done

qemu_args=()
if [ -n "${FREQHINT_QEMU:-}" ]; then
	qemu_args=(--qemu "$FREQHINT_QEMU")
elif command -v qemu-system-x86_64 >/dev/null; then
	qemu_args=(--qemu "$(command -v qemu-system-x86_64)")
fi

kdir=$("$here/tests/harness/build-kernel.sh" --print-dir) || die "building the test kernel failed"
exec "$here/tests/harness/run-guest.sh" --kernel "$kdir" "${qemu_args[@]}" \
	--test "$here/tests/agent-guest/in-guest.sh" --add "$T/fh:/opt/fh" \
	--timeout 400 --mem 1G "${log_args[@]}"
