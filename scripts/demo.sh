#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The main job, end to end: a guest under the project's QEMU runs
# virtio_freqhint.ko, which reports through the virtio-freqhint-pci device
# to freqhintd, which sets the (fixture) host's cpufreq limits.  After each
# step a table shows what the guest asked for, what the host granted, and
# the frequency limits written.  Leaves nothing running.  Run as root; the
# first run installs and builds what it needs.
#
#   demo.sh [--arch x86_64|arm64]
#     --arch arm64  the guests are arm64 on QEMU's virt machine (the same
#                   agent and host), both stages: Debian's arm64 kernel,
#                   then the uclamp kernel cross-built; setup builds and
#                   fetches the arm64 pieces (cached afterwards)
#
# Two stages, each a guest story with its own checks:
#   1. Debian's stock 6.12 kernel in the guest (tests/e2e/guest-stock-story.sh).
#      Like every Debian kernel it has no CONFIG_UCLAMP_TASK, so nothing in
#      the guest can set a clamp; what a stock distribution guest gets all
#      the same: its governor's performance requests and its vCPUs'
#      idleness reach the host as floors (and their release), the host's
#      frequencies appear in the guest's cpufreq, the operator's 50 %
#      ceiling holds on the host and shows in the guest.
#   2. the project's uclamp kernel (tests/e2e/guest-story.sh): uclampset's
#      floors and ceilings through to the host's limits, the operator's
#      cap, an agent restart, a flood of clamp changes, latency.
# Stage 1 exists for the first run on a new machine.  Stage 2's kernel is
# built from Debian's source (about 21 CPU-minutes cold) and QEMU too
# (about 13): on 2 cores that is more than the 15 minutes a newcomer should
# wait for a first table.  Stage 1 needs only QEMU and the stock kernel
# Debian ships, so the uclamp kernel builds in the background at the lowest
# priority (filling what QEMU's build and the first story leave idle), and
# stage 2 starts once it is there.  Warm, the stages run one after the other.
# Setup is `setup.sh demo --stage ...`: only the packages, QEMU target and
# kernels the demo boots, not what only the tests need.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"

arch=x86_64
case "${1:-}" in
"") ;;
--arch) arch=${2:?usage: $0 [--arch x86_64|arm64]} ;;
*) die "usage: $0 [--arch x86_64|arm64]" ;;
esac
case "$arch" in
x86_64 | arm64) ;;
*) die "--arch x86_64|arm64, not '$arch'" ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/freqhint-demo.XXXXXX")
kpid=
cleanup() {
	# A demo that stops early leaves no kernel build behind: it runs in a
	# session of its own, so the whole of it goes.
	[ -z "$kpid" ] || kill -- -"$kpid" 2>/dev/null || :
	rm -rf "$work"
}
trap cleanup EXIT

# One apt run before anything runs beside it (two would contend for dpkg's
# lock); the uclamp stage's package check then finds everything it needs,
# and only the stock stage installs more (Debian's kernel, beside QEMU's
# build: setup.sh's STOCK_BPO_PKGS).
bash "$here/scripts/setup.sh" demo --arch "$arch" --stage packages
setsid -w nice -n 19 bash "$here/scripts/setup.sh" demo --arch "$arch" --stage uclamp \
	>"$work/uclamp-setup.log" 2>&1 </dev/null &
kpid=$!
log "the uclamp kernel for stage 2 is set up in the background (log: $work/uclamp-setup.log)"

build=$(clone_builds)/demo
# The agent builds beside the stock stage's setup; its output is shown
# only if it fails.  ninja is given the files, not meson compile the
# target names: meson looks names up in the build's last configuration
# before it reconfigures, so a build configured before a target existed
# fails ("target not found"), while ninja regenerates first.
build_agent() {
	if [ ! -f "$build/build.ninja" ]; then
		meson setup "$build" "$here" || return
	fi
	ninja -C "$build" host-agent/freqhintd host-agent/freqhintctl bench/dvfs-emu/fh-dvfs-emu
}
build_agent >"$work/agent-build.log" 2>&1 &
agent_pid=$!
bash "$here/scripts/setup.sh" demo --arch "$arch" --stage stock
if ! wait "$agent_pid"; then
	tail -n 40 "$work/agent-build.log" >&2
	die "building freqhintd failed"
fi

# banner TEXT...: a stage's title, set apart from the tables.
banner() {
	printf '\n%s\n' "################################################################"
	printf '# %s\n' "$@"
	printf '%s\n\n' "################################################################"
}

# run_stage N KERNEL: one story; its checks' counts go to stage_run[N] and
# stage_failed[N] (a guest that ended before its count: 1 run, 1 failed),
# its exit status to stage_rc[N].
stage_run=() stage_failed=() stage_rc=()
run_stage() {
	local n=$1 kernel=$2 out=$work/stage$1.out rc counts run failed
	set +e
	"$here/tests/e2e/run-e2e.sh" --demo --emu "$build/bench/dvfs-emu/fh-dvfs-emu" --samples 5 \
		--arch "$arch" --kernel "$kernel" \
		--freqhintd "$build/host-agent/freqhintd" \
		--freqhintctl "$build/host-agent/freqhintctl" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	set -e
	counts=$(tr -d '\r' <"$out" | sed -n 's/^FREQHINT-CHECKS: \([0-9]*\) run, \([0-9]*\) failed$/\1 \2/p' | tail -n 1)
	if [ -z "$counts" ]; then
		log "stage $n: the guest ended before it counted its checks"
		counts="1 1"
	fi
	read -r run failed <<<"$counts"
	stage_run[n]=$run stage_failed[n]=$failed stage_rc[n]=$rc
}

banner "Stage 1 of 2: Debian's stock 6.12 kernel in the guest (no uclamp)" \
	"What a stock distribution guest gets with the module alone: its" \
	"governor's requests and idleness become host floors, the host's" \
	"frequencies show in its cpufreq, the operator's 50 % ceiling holds." \
	"It runs first because it needs no kernel build: on a first run the" \
	"project's uclamp kernel for stage 2 is still building meanwhile."
run_stage 1 stock

if kill -0 "$kpid" 2>/dev/null; then
	log "stage 2 waits for the uclamp kernel's build (log: $work/uclamp-setup.log)"
fi
if ! wait "$kpid"; then
	kpid=
	tail -n 30 "$work/uclamp-setup.log" >&2
	die "setting up the uclamp kernel failed (stage 1: ${stage_run[1]} checks, ${stage_failed[1]} failed)"
fi
kpid=

banner "Stage 2 of 2: the project's uclamp kernel in the guest" \
	"Guest tasks' clamps (uclampset) through the device and freqhintd to" \
	"the host's frequency limits: floors, the operator's cap, ceilings, an" \
	"agent restart, a flood of clamp changes, latency."
run_stage 2 uclamp

banner "Demo totals"
total_run=0 total_failed=0 rc=0
for n in 1 2; do
	what="Debian's stock kernel"
	[ "$n" = 1 ] || what="the uclamp kernel"
	printf 'stage %s (%s): %s checks, %s passed, %s failed\n' "$n" "$what" \
		"${stage_run[$n]}" $((stage_run[n] - stage_failed[n])) "${stage_failed[$n]}"
	total_run=$((total_run + stage_run[n]))
	total_failed=$((total_failed + stage_failed[n]))
	[ "${stage_rc[$n]}" = 0 ] && [ "${stage_failed[$n]}" = 0 ] || rc=1
done
printf 'both stages: %s checks, %s passed, %s failed\n' "$total_run" \
	$((total_run - total_failed)) "$total_failed"
exit "$rc"
