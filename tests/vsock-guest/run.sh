#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The vsock transport through a real kernel's AF_VSOCK (issue 39): boots a
# TCG guest with the vsock loopback transport (vsock, vmw_vsock_virtio_
# transport_common, vsock_loopback: modules of Debian's 6.12 kernel, loaded
# from /opt/fh/kmod) and runs a test script there with freqhintd,
# freqhint-vsockd, freqhintctl and fh-vsock-peer under /opt/fh (their
# libraries in /opt/fh/lib).  Reusable: the guest module's tests pass
# --module and a --test script of their own, which sources
# /opt/fh/vsock-lib.sh (load_vsock, start_host, ...; see that file).
#
#   run.sh [--kernel stock|uclamp|DIR] [--module FILE.ko]... [--test SCRIPT]
#          [--add HOST:GUEST]... [--log FILE] [--timeout S]
#          FREQHINTD FREQHINTCTL FREQHINT_VSOCKD FH_VSOCK_PEER [MORE_BINARIES...]
#
#   --kernel  default stock (Debian's 6.12, whose vsock modules come from the
#             host's /lib/modules/<release>, installed with the kernel
#             package); uclamp, the project's x86 test kernel, has them
#             built in (tests/harness/uclamp-x86_64.config).  A kernel
#             without the loopback transport is refused with that reason.
#   --test    default in-guest.sh beside this file (the host side: a client
#             on CID 1, port 853; the unprivileged squat of port 853)
#   --module  carried as /modules/FILE.ko (the test loads it)
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

kernel=stock test_script=$here/tests/vsock-guest/in-guest.sh
guest_args=() log_args=() timeout=400
while [ $# -gt 0 ]; do
	case "$1" in
		--kernel) kernel=${2:?}; shift ;;
		--module|--add) guest_args+=("$1" "${2:?}"); shift ;;
		--test) test_script=${2:?}; shift ;;
		--log) log_args=(--log "${2:?}"); shift ;;
		--timeout) timeout=${2:?}; shift ;;
		-*) die "unknown option $1 (see the comment at the top of $0)" ;;
		*) break ;;
	esac
	shift
done
[ $# -ge 4 ] || die "usage: $0 [options] FREQHINTD FREQHINTCTL FREQHINT_VSOCKD FH_VSOCK_PEER [MORE...]"
for b in "$@"; do
	[ -x "$b" ] || die "$b is not an executable"
done

case "$kernel" in
	stock) kdir=$("$here/tests/harness/fetch-stock-kernel.sh" --print-dir) ||
		die "no stock kernel entry (tests/harness/fetch-stock-kernel.sh)" ;;
	uclamp) kdir=$("$here/tests/harness/build-kernel.sh" --print-dir) ||
		die "building the test kernel failed" ;;
	*) kdir=$kernel ;;
esac
[ -d "$kdir" ] || die "kernel entry $kdir is not a directory"

T=$(mktemp -d "${TMPDIR:-/tmp}/fh-vsock-guest.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/fh/lib" "$T/fh/kmod"

# The kernel's vsock modules, dependencies first, uncompressed (busybox insmod).
if [ -r "$kdir/config" ] && grep -q '^CONFIG_VSOCKETS=m' "$kdir/config"; then
	rel=$(cat "$kdir/release")
	mdir=/lib/modules/$rel/kernel/net/vmw_vsock
	for m in vsock vmw_vsock_virtio_transport_common vsock_loopback; do
		f=$(ls "$mdir/$m.ko"* 2>/dev/null | head -n1)
		[ -n "$f" ] || die "$mdir/$m.ko* not found (the linux-image-$rel package installs them)"
		case "$f" in
			*.xz) xz -dc "$f" >"$T/fh/kmod/$m.ko" ;;
			*.zst) zstd -qdc "$f" >"$T/fh/kmod/$m.ko" ;;
			*) cp "$f" "$T/fh/kmod/$m.ko" ;;
		esac
		echo "$m.ko" >>"$T/fh/kmod/load-order"
	done
elif [ -r "$kdir/build/.config" ] && grep -q '^CONFIG_VSOCKETS=y' "$kdir/build/.config" &&
	grep -q '^CONFIG_VSOCKETS_LOOPBACK=y' "$kdir/build/.config"; then
	: # built in
else
	die "kernel $kdir has no vsock loopback transport (CONFIG_VSOCKETS, CONFIG_VSOCKETS_LOOPBACK)"
fi

"$here/tests/harness/carry-binaries.sh" "$T/fh" "$@"
cp "$here/tests/vsock-guest/vsock-lib.sh" "$T/fh/"

qemu_args=()
if [ -n "${FREQHINT_QEMU:-}" ]; then
	qemu_args=(--qemu "$FREQHINT_QEMU")
elif command -v qemu-system-x86_64 >/dev/null; then
	qemu_args=(--qemu "$(command -v qemu-system-x86_64)")
fi
exec "$here/tests/harness/run-guest.sh" --kernel "$kdir" "${qemu_args[@]}" \
	--test "$test_script" --add "$T/fh:/opt/fh" "${guest_args[@]}" \
	--timeout "$timeout" --mem 1G "${log_args[@]}"
