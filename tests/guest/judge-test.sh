#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# run-guest.sh's console judge on recorded logs (fixtures/): each must pass
# or fail as listed, and fail for the listed reason.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# fixture  expected verdict  reason (grep -E on the judge's stderr)
cases=(
	"pass     PASS  PASS: guest run"
	"fail     FAIL  got: FREQHINT-TEST-RESULT: FAIL"
	"twice    FAIL  got: FREQHINT-TEST-RESULT: FAIL .*;FREQHINT-TEST-RESULT: PASS"
	"hang     FAIL  got: none"
	"warn     FAIL  kernel reported: .*WARNING: CPU: 1"
	"oops     FAIL  kernel reported: .*BUG: kernel NULL pointer"
	"kmemleak FAIL  kernel reported: FREQHINT-KMEMLEAK: 1 leaks"
	"oops-arm64  FAIL  kernel reported: .*Unable to handle kernel NULL pointer"
	"stall-arm64 FAIL  kernel reported: .*Call trace:"
	"kcsan    FAIL  kernel reported: .*BUG: KCSAN: data-race in fh_sample"
	"check-failed FAIL  1 check\\(s\\) failed: FREQHINT-CHECK: FAIL - something else"
)
bad=0
for c in "${cases[@]}"; do
	read -r name want reason <<<"$c"
	err=$("$here/../harness/run-guest.sh" --judge-log "$here/fixtures/$name.log" --quiet 2>&1 >/dev/null)
	rc=$?
	got=PASS
	[ "$rc" = 0 ] || got=FAIL
	if [ "$got" != "$want" ] || ! grep -qE -- "$reason" <<<"$err"; then
		echo "not ok - $name: wanted $want /$reason/, got $got:"
		sed 's/^/    /' <<<"$err"
		bad=1
	else
		echo "ok - $name: $want ($reason)"
	fi
done
exit $bad
