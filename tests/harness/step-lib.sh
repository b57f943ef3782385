# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=sh
# In-guest side of a run driven step by step from the host (tests/e2e,
# bench/guest; the host side is tests/harness/e2e-lib.sh), sourced after
# /lib/freqhint/test-lib.sh.  e2e_make_initrd carries it as
# /lib/freqhint/step-lib.sh.
#   step_open            the control port (the second serial port: ttyS1,
#                        arm64 ttyAMA1), raw, as fd 3
#   step NAME [K=V]...   report "STEP NAME K=V..." on it and wait for the
#                        host's verdict: "GO" passes, "NO <why>" fails
#   step_load_module [PARAM=VALUE]...
#                        checks: virtio_freqhint.ko ($STEP_KO, default
#                        /modules/virtio_freqhint.ko) loads (with those
#                        module parameters) and binds to the device ($dev:
#                        its sysfs directory), then waits for its cpufreq
#                        policies (step_wait_cpufreq)

step_open() {
	step_tty=/dev/ttyS1
	[ "$(uname -m)" = aarch64 ] && step_tty=/dev/ttyAMA1
	stty -F "$step_tty" raw -echo || exit 1
	exec 3<>"$step_tty"
}

step() {
	echo "STEP $*" >&3
	read -r verdict <&3
	echo "host: $verdict"
	case "$verdict" in
	GO*) return 0 ;;
	*) return 1 ;;
	esac
}

step_load_module() {
	check "module loads${1:+ ($*)}" insmod "${STEP_KO:-/modules/virtio_freqhint.ko}" "$@"
	dev=
	for step_d in /sys/bus/virtio/drivers/virtio_freqhint/virtio*; do
		[ -e "$step_d" ] && { dev=$step_d; break; }
	done
	check "device bound" test -n "$dev"
	step_wait_cpufreq
}

# step_wait_cpufreq: the driver registers its cpufreq policies after probe
# returns, once the host's first FEEDBACK has given it frequencies, and the
# core creates them one CPU at a time: wait (up to 10 s) until every online
# CPU has its policy, so that a check right after loading does not race the
# registration.  Returns 0 either way: the checks that follow judge.
step_wait_cpufreq() {
	step_i=0
	while [ "$step_i" -lt 100 ]; do
		step_missing=
		for step_c in /sys/devices/system/cpu/cpu[0-9]*; do
			# cpu0 of x86 has no "online": it cannot go offline
			[ "$(cat "$step_c/online" 2>/dev/null || echo 1)" = 1 ] || continue
			[ -e "$step_c/cpufreq/scaling_governor" ] || step_missing=1
		done
		[ -z "$step_missing" ] && return 0
		sleep 0.1
		step_i=$((step_i + 1))
	done
	return 0
}
