#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Figure 1 on the vsock transport (issue 39): the device boot's bursty load
# (bench-load.sh's mixed_load) in a guest whose module reports over vsock,
# to freqhint-vsockd and freqhintd running in that guest and reached
# through the kernel's vsock loopback, as the module-vsock-frontend tests
# do (tests/vsock-guest/run.sh).  The project's uclamp kernel (vsock built
# in), 4 vCPUs, TCG; the guest runs bench/guest/vsock-guest.sh.  No
# virtio-freqhint device: any QEMU will do ($FREQHINT_QEMU, else
# qemu-system-x86_64 in PATH).
#
#   vsock.sh --freqhintd BIN --freqhintctl BIN --vsockd BIN --peer BIN --out FILE
#            [--burst-seconds S]
#
# --peer is tests/agent/fh-vsock-peer (the stand-in VM process whose threads
# are the VM's vCPUs).  Appends key=value lines to FILE (read by
# bench/run.sh): vsock_calls (schedutil's requests), vsock_frames (HINTS
# frames the module sent), vsock_frames_out (every frame it sent),
# vsock_records, vsock_agent_frames (HINTS frames freqhintd received from
# the front end), vsock_guest_seconds, vsock_series, vsock_run_ok.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

freqhintd= freqhintctl= vsockd= peer= out= burst=20
while [ $# -gt 0 ]; do
	case "$1" in
	--freqhintd) freqhintd=${2:?}; shift ;;
	--freqhintctl) freqhintctl=${2:?}; shift ;;
	--vsockd) vsockd=${2:?}; shift ;;
	--peer) peer=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--burst-seconds) burst=${2:?}; shift ;;
	*) die "usage: $0 --freqhintd BIN --freqhintctl BIN --vsockd BIN --peer BIN --out FILE [--burst-seconds S]" ;;
	esac
	shift
done
[ -x "$freqhintd" ] && [ -x "$freqhintctl" ] && [ -x "$vsockd" ] && [ -x "$peer" ] && [ -n "$out" ] ||
	die "--freqhintd, --freqhintctl, --vsockd, --peer and --out are required"

work=$(mktemp -d "${TMPDIR:-/tmp}/fh-bench-vsock.XXXXXX")
trap 'rm -rf "$work"' EXIT
result() { printf '%s=%q\n' "$1" "$2" >>"$out"; }

"$here/guest-driver/tests/build-module.sh" --cached uclamp \
	"$work/virtio_freqhint.ko" >/dev/null || die "building virtio_freqhint.ko failed"
cc -static -O2 -Wall -Werror -o "$work/fh-guest-bench" "$here/bench/guest/fh-guest-bench.c" ||
	die "cannot build fh-guest-bench"
"$here/tests/agent/mkfixture.sh" host "$work/fx"
printf 'FREQHINT_BENCH_BURST_S=%s\n' "$burst" >"$work/env"

rc=0
"$here/tests/vsock-guest/run.sh" --kernel uclamp --log "$work/console.log" \
	--timeout $((burst * 30 + 600)) --module "$work/virtio_freqhint.ko" \
	--test "$here/bench/guest/vsock-guest.sh" \
	--add "$here/bench/guest/load-lib.sh:/lib/freqhint/bench-load.sh" \
	--add "$work/fh-guest-bench:/bin/fh-guest-bench" --add "$work/env:/etc/freqhint-bench.env" \
	--add "$work/fx:/opt/fx" "$freqhintd" "$freqhintctl" "$vsockd" "$peer" >"$work/run.out" 2>&1 || rc=$?

line=$(sed -n 's/\r$//; s/^.*FREQHINT-BENCH-VSOCK: //p' "$work/console.log" | tail -n1)
for w in $line; do
	case $w in *=*) result "vsock_${w%%=*}" "${w#*=}" ;; esac
done
result vsock_run_ok "$([ "$rc" = 0 ] && [ -n "$line" ] && echo yes || echo no)"
if [ "$rc" != 0 ] || [ -z "$line" ]; then
	grep -E 'FREQHINT-(CHECK: FAIL|INIT|TEST-RESULT)' "$work/console.log" >&2 || :
	tail -n 20 "$work/run.out" >&2
	exit 1
fi
