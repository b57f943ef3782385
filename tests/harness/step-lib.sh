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
#                        policies (wait_cpufreq_policies)

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
	wait_cpufreq_policies
}
