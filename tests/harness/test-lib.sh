# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=sh
# Helpers for in-guest test scripts (busybox sh).  In the guest:
#   . /lib/freqhint/test-lib.sh
#   check "what is true" CMD [ARG]...    CMD must succeed
#   check_fails "what fails" CMD [ARG]... CMD must fail
#   check_output "what" PATTERN CMD [ARG]... CMD succeeds, its output matches
#                                          the grep -E PATTERN
#   done_testing                          exit 0 iff every check passed
# Each check prints "FREQHINT-CHECK: ok|FAIL - what" on the console; a
# failing one also prints the command's output.

fh_failed=0
fh_count=0

fh_report() {
	fh_count=$((fh_count + 1))
	if [ "$1" = 0 ]; then
		echo "FREQHINT-CHECK: ok - $2"
	else
		echo "FREQHINT-CHECK: FAIL - $2"
		[ -s /tmp/.fh_out ] && sed 's/^/    | /' /tmp/.fh_out
		fh_failed=$((fh_failed + 1))
	fi
}

check() {
	fh_what=$1; shift
	if "$@" >/tmp/.fh_out 2>&1; then fh_report 0 "$fh_what"; else fh_report 1 "$fh_what"; fi
}

check_fails() {
	fh_what=$1; shift
	if "$@" >/tmp/.fh_out 2>&1; then fh_report 1 "$fh_what"; else fh_report 0 "$fh_what"; fi
}

check_output() {
	fh_what=$1 fh_pat=$2; shift 2
	if "$@" >/tmp/.fh_out 2>&1 && grep -qE -- "$fh_pat" /tmp/.fh_out; then
		fh_report 0 "$fh_what"
	else
		echo "    (wanted /$fh_pat/)" >>/tmp/.fh_out
		fh_report 1 "$fh_what"
	fi
}

done_testing() {
	echo "FREQHINT-CHECKS: $fh_count run, $fh_failed failed"
	[ "$fh_failed" = 0 ] && [ "$fh_count" -gt 0 ]
	exit $?
}
