#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Issue 40, "does it deliver?": the outcome of freqhint's limits on a guest,
# five modes side by side in one boot, interleaved round by round so that
# they share the machine's load.  The project's uclamp guest kernel with
# virtio_freqhint.ko under the project's QEMU (TCG, q35, 2 vCPUs) with
# virtio-freqhint-pci; vCPU i placed on fixture CPU 2i (policy0, policy2);
# bench/dvfs-emu/fh-dvfs-emu gives the fixture's policies a frequency and
# runs each vCPU thread at f/f_max of a host CPU.  The guest
# (outcome-guest.sh) runs a foreground request/response task under
# `uclampset -m` and a background batch under `uclampset -M`, both on
# vCPU1, with idle gaps, the same in every mode.  Modes:
#   a  status quo: no hints (freqhintd stopped), the fixture's governor
#      schedutil follows the vCPU threads
#   b  perf-only: freqhintd with [merge] perf_only=true, the guest
#      governor's request as a floor and nothing of its clamps (the
#      information virtual-cpufreq carries)
#   c  freqhint: freqhintd as shipped (clamps, perf as floor)
#   d  performance governor: f_max, freqhintd stopped
#   e  freqhint with the operator's ceiling of 50 % on the VM
#
#   outcome.sh --freqhintd BIN --freqhintctl BIN --emu BIN --out FILE --data DIR
#              [--rounds N] [--mode-seconds S] [--modes "a b c d e"]
#
# Writes key=value lines to FILE (outcome_*; the figures themselves come
# from bench/outcome-figures.sh DIR) and keeps in DIR per mode and round the
# emulator's trace (trace-M-R.tsv) and summary (summary-M-R), the guest's
# requests (req-M-R: release ms, response µs, shared 0/1), its cpufreq
# requests on vCPU1 (freq-M-R: guest seconds, kHz) and the step's
# key=value words (step-M-R), plus run.env (calibration, load).
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"
# shellcheck source-path=SCRIPTDIR source=../../tests/harness/e2e-lib.sh
. "$here/tests/harness/e2e-lib.sh"

freqhintd= freqhintctl= emu= out= data= rounds=2 mode_s=16 modes="a b c d e"
while [ $# -gt 0 ]; do
	case "$1" in
	--freqhintd) freqhintd=${2:?}; shift ;;
	--freqhintctl) freqhintctl=${2:?}; shift ;;
	--emu) emu=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--data) data=${2:?}; shift ;;
	--rounds) rounds=${2:?}; shift ;;
	--mode-seconds) mode_s=${2:?}; shift ;;
	--modes) modes=${2:?}; shift ;;
	*) die "usage: $0 --freqhintd BIN --freqhintctl BIN --emu BIN --out FILE --data DIR [--rounds N] [--mode-seconds S]" ;;
	esac
	shift
done
[ -x "$freqhintd" ] && [ -x "$freqhintctl" ] && [ -x "$emu" ] && [ -n "$out" ] && [ -n "$data" ] ||
	die "--freqhintd, --freqhintctl, --emu, --out and --data are required"
mkdir -p "$data"
rm -f "$data"/trace-* "$data"/summary-* "$data"/req-* "$data"/freq-* "$data"/step-* "$data/run.env"

# The workloads (outcome-guest.sh): issue 40's example, 3 ms of work at
# f_max every 20 ms, in the first 1.4 s of every 2 s cycle; the background
# from 0.6 s to 1.7 s; so per cycle 0.6 s foreground alone, 0.8 s both on
# vCPU1, 0.3 s background alone, 0.3 s idle.
FG_MIN=800 BG_MAX=300 WORK_US=3000 PERIOD_US=20000 CYCLE_MS=2000 FG_ON_MS=1400 BG_FROM_MS=600 BG_TO_MS=1700
CEILING_E=50

E2E_VM_NAME=freqhint-outcome
E2E_SMP=2
result() { printf '%s=%q\n' "$1" "$2" >>"$out"; }
runenv() { printf '%s=%q\n' "$1" "$2" >>"$data/run.env"; }

e2e_init
trap e2e_cleanup EXIT
runenv ceiling_e "$CEILING_E"
runenv rounds "$rounds"
runenv mode_seconds "$mode_s"
runenv modes "$modes"

cat >"$E2E_DIR/env" <<EOF
FG_MIN=$FG_MIN
BG_MAX=$BG_MAX
WORK_US=$WORK_US
PERIOD_US=$PERIOD_US
CYCLE_MS=$CYCLE_MS
FG_ON_MS=$FG_ON_MS
BG_FROM_MS=$BG_FROM_MS
BG_TO_MS=$BG_TO_MS
MODE_S=$mode_s
ROUNDS=$rounds
CAL_MS=1500
MODES="$modes"
EOF
e2e_make_initrd "$here/bench/guest/outcome-guest.sh" \
	"$(e2e_static fh-guest-outcome "$here/bench/guest/fh-guest-outcome.c")" \
	"$E2E_DIR/env:/etc/freqhint-outcome.env"
e2e_make_fixture
for p in 0 2 4 6; do
	for f in min max; do eval "orig_${f}_$p=\$(cat \"\$(pdir $p)/scaling_${f}_freq\")"; done
done

# conf MODE: freqhintd's configuration for a hinted mode.
conf() {
	printf '[daemon]\nbackend=cpufreq\n\n'
	[ "$1" != b ] || printf '[merge]\nperf_only=true\n\n'
	printf '[vm %s]\ncpus=0,2\n' "$E2E_VM_NAME"
	[ "$1" != e ] || printf 'ceiling=%s\n' "$CEILING_E"
}

# The fixture as no agent left it: original limits, governor $1.
fixture_reset() {
	local p
	for p in 0 2 4 6; do
		eval "echo \$orig_min_$p" >"$(pdir "$p")/scaling_min_freq"
		eval "echo \$orig_max_$p" >"$(pdir "$p")/scaling_max_freq"
		echo "$1" >"$(pdir "$p")/scaling_governor"
	done
}

agent_stop() {
	[ -z "$E2E_AGENT_PID" ] || stop_agent TERM
}

# mode_setup MODE: agent and governor of MODE.
mode_setup() {
	agent_stop
	fixture_reset schedutil
	case $1 in
	a) ;;
	d) fixture_reset performance ;;
	b | c | e)
		conf "$1" >"$E2E_DIR/freqhintd.conf"
		e2e_start_agent
		eventually 30 vm_connected || die "mode $1: freqhintd does not see the VM within 30 s"
		;;
	*) die "unknown mode $1" ;;
	esac
}

fixture_reset performance
e2e_start_guest --timeout 1800
# The vCPU threads into the fixture (vCPU i on CPU 2i, as cpus=).
e2e_vcpu_threads_to_fixture
e2e_connect_control

loads=()
while ctl_read line; do
	case $line in
	"R "*) echo "${line#R }" >>"$E2E_DIR/cur-req"; continue ;;
	"F "*) echo "${line#F }" >>"$E2E_DIR/cur-freq"; continue ;;
	"STEP sync "*) ctl_send "GO ${EPOCHREALTIME/./}"; continue ;;
	"STEP end"*) break ;;
	"STEP "*) ;;
	*) continue ;;
	esac
	# shellcheck disable=SC2086 # the line's words
	set -- $line
	name=$2
	shift 2
	log "guest step: $name $*"
	case $name in
	calibrate-start)
		fixture_reset performance
		e2e_emu_start "$emu" "" "$E2E_DIR/calibrate.summary" || die "the emulated DVFS host did not start"
		verdict OK
		;;
	calibrate-done)
		e2e_emu_stop
		for w in "$@"; do runenv "cal_${w%%=*}" "${w#*=}"; done
		verdict OK
		;;
	mode-start)
		m=${1#mode=} r=${2#round=}
		mode_setup "$m"
		: >"$E2E_DIR/cur-req"
		: >"$E2E_DIR/cur-freq"
		loads+=("$(cut -d' ' -f1 /proc/loadavg)")
		runenv "load_${m}_$r" "$(cut -d' ' -f1-3 /proc/loadavg)"
		e2e_emu_start "$emu" "$data/trace-$m-$r.tsv" "$data/summary-$m-$r" ||
			die "the emulated DVFS host did not start"
		verdict OK
		;;
	mode-done)
		e2e_emu_stop
		mv "$E2E_DIR/cur-req" "$data/req-$m-$r"
		mv "$E2E_DIR/cur-freq" "$data/freq-$m-$r"
		printf '%s\n' "$@" >"$data/step-$m-$r"
		agent_stop
		verdict OK
		;;
	*)
		verdict "unknown step $name"
		;;
	esac
done
rc=0
e2e_wait_guest >"$E2E_DIR/guest-summary" 2>&1 || rc=$?
agent_stop
fixture_reset schedutil
runenv workload "fg uclampset -m $FG_MIN, ${WORK_US} us at f_max every ${PERIOD_US} us, on ${FG_ON_MS} of ${CYCLE_MS} ms; bg uclampset -M $BG_MAX, ${BG_FROM_MS}..${BG_TO_MS} ms; both on vCPU1"
result outcome_run_ok "$([ "$rc" = 0 ] && [ "$host_failures" = 0 ] && echo yes || echo no)"
result outcome_loads "${loads[*]}"
[ "$rc" = 0 ] || { tail -n 30 "$E2E_DIR/guest-summary" >&2; exit 1; }
[ "$host_failures" = 0 ]
