# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=sh
# Helpers for in-guest test scripts (busybox sh).  In the guest:
#   . /lib/freqhint/test-lib.sh
#   check "what is true" CMD [ARG]...    CMD must succeed
#   check_fails "what fails" CMD [ARG]... CMD must fail
#   check_output "what" PATTERN CMD [ARG]... CMD succeeds, its output matches
#                                          the grep -E PATTERN
#   done_testing                          exit 0 iff every check passed
#   wait_cpufreq_policies                 after loading virtio_freqhint: wait
#                                          for its cpufreq policies, if any
#   wait_file FILE PATTERN [SECONDS]      FILE matches PATTERN within SECONDS
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

# wait_cpufreq_policies: virtio_freqhint registers its cpufreq driver after
# probe has returned, once the host's first FEEDBACK has given it frequencies,
# and the core then creates the policies one CPU at a time.  Wait (up to 10 s)
# until every online CPU has its policy, so that a check right after loading
# does not race the registration.  No wait when the bound device negotiated
# neither F_PERF (bit 0) nor F_HOST_FREQ (bit 2), or when another cpufreq
# driver holds the slot.  Returns 0 either way: the checks that follow judge.
wait_cpufreq_policies() {
	for fh_d in /sys/bus/virtio/drivers/virtio_freqhint/virtio*; do
		[ -e "$fh_d/features" ] || continue
		case $(cut -c1-3 "$fh_d/features") in
		1??|??1) ;;
		*) return 0 ;;
		esac
	done
	fh_i=0
	while [ "$fh_i" -lt 100 ]; do
		fh_missing=
		for fh_c in /sys/devices/system/cpu/cpu[0-9]*; do
			# cpu0 of x86 has no "online": it cannot go offline
			[ "$(cat "$fh_c/online" 2>/dev/null || echo 1)" = 1 ] || continue
			[ -e "$fh_c/cpufreq/scaling_governor" ] || fh_missing=1
		done
		[ -z "$fh_missing" ] && return 0
		dmesg | grep -q 'is active: no perf requests' && return 0
		sleep 0.1
		fh_i=$((fh_i + 1))
	done
	return 0
}

# wait_file FILE PATTERN [SECONDS]: poll every 0.1 s until FILE matches the
# grep -E PATTERN.  Prints the file, which check() shows when it fails.
wait_file() {
	fh_i=0
	while [ "$fh_i" -lt "$((${3:-10} * 10))" ]; do
		grep -qE -- "$2" "$1" 2>/dev/null && { cat "$1"; return 0; }
		sleep 0.1
		fh_i=$((fh_i + 1))
	done
	cat "$1"
	return 1
}
