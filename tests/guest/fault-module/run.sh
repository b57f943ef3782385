#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Harness self-check: boot the uclamp kernel, load a module that fires a
# WARN() (warn) or leaks memory (leak), and require run-guest.sh to FAIL for
# exactly that reason.  A harness that let these through would pass every
# broken driver.
#
#   run.sh warn|leak WORKDIR [run-guest.sh options...]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
. "$top/scripts/lib.sh"
mode=${1:?usage: $0 warn|leak WORKDIR}
work=${2:?usage: $0 warn|leak WORKDIR}
shift 2
case "$mode" in
	warn) want='FAIL: kernel reported: .*WARNING: CPU: .* fh_fault' extra=() ;;
	leak) want='FAIL: kernel reported: .*(kmemleak: [1-9][0-9]* new suspected|FREQHINT-KMEMLEAK: [1-9][0-9]* leaks)' extra=(--kmemleak) ;;
	*) die "mode must be warn or leak" ;;
esac

mkdir -p "$work"
rm -rf "$work/src"
mkdir "$work/src"
cp "$here/fh_fault.c" "$here/Kbuild" "$work/src/"
kdir=$("$top/tests/harness/build-kernel.sh" --print-dir)/build
make -s -C "$kdir" M="$work/src" modules >"$work/make.log" 2>&1 ||
	{ cat "$work/make.log"; die "building fh_fault.ko failed"; }

set +e
"$top/tests/harness/run-guest.sh" --kernel uclamp --module "$work/src/fh_fault.ko" \
	--test "$here/in-guest.sh" --append "freqhint.fault=$mode" \
	--log "$work/console.log" "${extra[@]}" "$@" 2>"$work/judge.log"
rc=$?
set -e
cat "$work/judge.log" >&2
grep -q 'FREQHINT-TEST-RESULT: PASS' "$work/console.log" ||
	die "the in-guest checks themselves failed: not the failure under test"
[ "$rc" != 0 ] || die "run-guest.sh passed a guest whose kernel complained ($mode)"
grep -qE -- "$want" "$work/judge.log" ||
	die "run-guest.sh failed, but not for the $mode (wanted /$want/)"
log "ok: run-guest.sh caught the $mode"
