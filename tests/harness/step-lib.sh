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
#   host_cur_freq KHZ    the host's CPU under vCPU1 runs at KHZ: the guest
#                        sees it (below)

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

# The demo's response times (run-e2e.sh --demo --emu, which sets
# FREQHINT_E2E_DEMO_RESPONSE=1; otherwise both do nothing):
#   demo_response_init   measure vCPU1's speed (loops of fh-guest-outcome per
#                        ms at full speed), once, before the story starts
#   demo_response LABEL PAUSE [CMD ARGS...]
#                        a task on vCPU1 (run under CMD ARGS, e.g.
#                        uclampset -m 800) with a request of 3 ms of work
#                        every 20 ms for 3 s, its response times reported to
#                        the host as step demo-fg label=LABEL; the host
#                        emulates its CPUs' frequencies for those seconds
#                        only.  The story's own task on vCPU1 (PAUSE, or "-")
#                        is stopped meanwhile, so that each measurement has
#                        vCPU1 to itself.
# The host answers these two steps GO whatever it saw (a host without the
# cgroup cpu controller shows the times without emulated frequencies), so
# they are no checks; the one check is that the task's times were measured.
demo_response_init() {
	[ "${FREQHINT_E2E_DEMO_RESPONSE:-0}" = 1 ] || return 0
	demo_cal=$(taskset -c 1 fh-guest-outcome calibrate 500)
	demo_cal=${demo_cal%% *}
	demo_loops=$((${demo_cal#loops_per_ms=} * 3))
}

demo_response() {
	[ "${FREQHINT_E2E_DEMO_RESPONSE:-0}" = 1 ] || return 0
	demo_label=$1 demo_pause=$2
	shift 2
	[ "$demo_pause" = - ] || kill -STOP "$demo_pause"
	step demo-fg-start >/dev/null
	demo_epoch=$(($(fh-guest-outcome now) + 500000000))
	demo_out=$("$@" fh-guest-outcome fg 1 "$demo_epoch" 3 1000 0 1000 20000 "$demo_loops" 0 0 | tail -n 1)
	check "demo: response times measured ($demo_label)" test "${demo_out%% *}" = fg
	# shellcheck disable=SC2086 # key=value words
	step demo-fg label="$demo_label" ${demo_out#fg } >/dev/null
	[ "$demo_pause" = - ] || kill -CONT "$demo_pause"
}

# host_cur_freq KHZ: the host's CPU under vCPU1 now runs at KHZ (the host
# writes it into the fixture policy when it judges the step; freqhintd
# samples it and the device relays it, VIRTIO_FREQHINT_F_CUR_FREQ).  The
# guest's cpuinfo_cur_freq of vCPU1 shows it, and on arm64, where the
# driver is the scheduler's frequency-invariance source, vCPU1's
# arch_freq_scale becomes KHZ of its policy's cpuinfo_max_freq (the
# host's maximum, what the scale is relative to).  vCPU1 must be busy
# then: the scale is written at its ticks.
host_cur_freq() {
	hcf_cpufreq=/sys/devices/system/cpu/cpu1/cpufreq
	check "the host's CPU under vCPU1 runs at $1 kHz" step host-cur-freq vcpu=1 khz="$1"
	check "vCPU1's cpuinfo_cur_freq shows the host's $1 kHz" \
		wait_file "$hcf_cpufreq/cpuinfo_cur_freq" "^$1\$"
	[ "$(uname -m)" = aarch64 ] || return 0
	hcf_max=$(cat "$hcf_cpufreq/cpuinfo_max_freq")
	hcf_scale=$(($1 * 1024 / hcf_max))
	check "vCPU1's arch_freq_scale is $hcf_scale ($1 of $hcf_max kHz)" \
		wait_file /sys/kernel/debug/virtio_freqhint/cur_freq \
		"^cpu1 cur_khz=$1 freq_scale=$hcf_scale "
}

