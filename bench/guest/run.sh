#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Guest half of the benchmarks: the project's uclamp guest kernel with
# virtio_freqhint.ko under the project's QEMU (TCG, q35, 4 vCPUs) with
# virtio-freqhint-pci, connected to freqhintd (cpufreq backend, fixture
# sysfs, vCPU i placed on fixture CPU 2i as in tests/e2e).  The guest runs
# bench-guest.sh; this side answers its steps, samples the device's
# counters (qom-get x-stats) and drives the latency benchmark.
#
#   run.sh --freqhintd BIN --freqhintctl BIN --latency BIN --out FILE
#          [--samples N] [--burst-seconds S] [--rate-window MS --burst-only TAG]
#          [--no-windows TAG] [--feedback-changes N] [--arch x86_64|arm64]
#
# --rate-window sets the device's rate-window-ms; --burst-only runs only the
# bursty load (figure 1), its results tagged TAG.  --no-windows runs only
# the latency (figure 4), results latency_TAG_*, with every window that
# can be turned off turned off or to its least: the device's rate window
# 1 ms (rate-window-ms, 0 is refused) and so the driver's window, which
# follows it; the device's forward interval 0 (x-forward-interval-ms);
# freqhintd's per-policy write interval 0 ([cpufreq] min_write_interval_ms).
# What stays: freqhintd's decision passes at least 5 ms apart (a constant;
# a pass starts at once when the last is older, as here between samples)
# and the driver's window-end publication of a running task's own clamp
# change (GR-11: the leading edge only covers tasks starting to run).
# --feedback-changes: the host changes of the feedback step (default 20),
# in the first boot only (bench/guest/feedback-lib.sh), results feedback_*.
# --arch arm64: the guest on QEMU's virt machine (tests/harness/run-guest.sh
# --arch), the first boot only the bursty load in both driver modes and the
# latency (FREQHINT_BENCH_SHORT=1), the latency's port a PCI 16550
# (pci-serial: virt has two UARTs, both taken).
#
# Writes key=value lines to FILE (read by bench/run.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"
# shellcheck source-path=SCRIPTDIR source=../../tests/harness/e2e-lib.sh
. "$here/tests/harness/e2e-lib.sh"
# shellcheck source-path=SCRIPTDIR source=feedback-lib.sh
. "$here/bench/guest/feedback-lib.sh"

freqhintd= freqhintctl= latency= out= samples=200 burst=20 window=10 only= nowin= changes=20
while [ $# -gt 0 ]; do
	case "$1" in
	--freqhintd) freqhintd=${2:?}; shift ;;
	--freqhintctl) freqhintctl=${2:?}; shift ;;
	--latency) latency=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--samples) samples=${2:?}; shift ;;
	--burst-seconds) burst=${2:?}; shift ;;
	--rate-window) window=${2:?}; shift ;;
	--burst-only) only=${2:?}; shift ;;
	--no-windows) nowin=${2:?}; shift ;;
	--feedback-changes) changes=${2:?}; shift ;;
	--arch) E2E_ARCH=${2:?}; shift ;;
	*) die "usage: $0 --freqhintd BIN --freqhintctl BIN --latency BIN --out FILE [--samples N] [--burst-seconds S]" ;;
	esac
	shift
done
[ -x "$freqhintd" ] && [ -x "$freqhintctl" ] && [ -x "$latency" ] && [ -n "$out" ] ||
	die "--freqhintd, --freqhintctl, --latency and --out are required"

E2E_VM_NAME=freqhint-bench
result() { printf '%s=%q\n' "$1" "$2" >>"$out"; }

e2e_init
trap e2e_cleanup EXIT
# Every module this boot loads counts its own CPU time (debugfs sampler_ns,
# read by bench-guest.sh): a build of its own, FREQHINT_OWN_TIME=y
# (guest-driver/Kbuild: FH_OWN_TIME); the product build times nothing.  The
# cost is a clock read per window timer and irq_work, in every state with
# the module alike.
export FREQHINT_OWN_TIME=y

# Guest side: module, the static benchmark binary, the script.
printf 'FREQHINT_BENCH_BURST_S=%s\nFREQHINT_BENCH_COST_N=20000\nFREQHINT_BENCH_FEEDBACK_N=%s\n' \
	"$burst" "$changes" >"$E2E_DIR/env"
# The guest cost's rounds and idle stretch, if set here (a quick check:
# FREQHINT_BENCH_COST_ROUNDS=1 FREQHINT_BENCH_UCLAMP_ROUNDS=1).
for v in FREQHINT_BENCH_COST_ROUNDS FREQHINT_BENCH_UCLAMP_ROUNDS FREQHINT_BENCH_IDLE_S; do
	[ -z "${!v:-}" ] || printf '%s=%s\n' "$v" "${!v}" >>"$E2E_DIR/env"
done
[ -z "$only" ] || printf 'FREQHINT_BENCH_BURST_ONLY=1\nFREQHINT_BENCH_TAG=%s\n' "$only" >>"$E2E_DIR/env"
[ -z "$nowin" ] || printf 'FREQHINT_BENCH_LATENCY_ONLY=1\n' >>"$E2E_DIR/env"
[ "$E2E_ARCH" = x86_64 ] || printf 'FREQHINT_BENCH_SHORT=1\n' >>"$E2E_DIR/env"
# The anchors (notify_every_change, reporting_off) exist only in this build
# of the module.
mkdir -p "$E2E_DIR/anchor"
FREQHINT_BENCH_ANCHOR=y "$here/guest-driver/tests/build-module.sh" --cached --arch "$E2E_ARCH" uclamp \
	"$E2E_DIR/anchor/virtio_freqhint.ko" >/dev/null ||
	die "building the anchor build of virtio_freqhint.ko failed"
# The guest cost's cpufreq driver that drives nothing (x86 boots only: the
# arm64 boot is short and has no guest cost).
trivial=()
if [ "$E2E_ARCH" = x86_64 ]; then
	"$here/bench/guest/build-trivial-cpufreq.sh" "$E2E_DIR/fh_trivial_cpufreq.ko" ||
		die "building bench/guest's trivial cpufreq driver failed"
	trivial=("$E2E_DIR/fh_trivial_cpufreq.ko:/modules/fh_trivial_cpufreq.ko")
fi
e2e_make_initrd "$here/bench/guest/bench-guest.sh" \
	"$(e2e_static fh-guest-bench "$here/bench/guest/fh-guest-bench.c")" \
	"$E2E_DIR/env:/etc/freqhint-bench.env" \
	"$here/bench/guest/load-lib.sh:/lib/freqhint/bench-load.sh" \
	"$E2E_DIR/anchor/virtio_freqhint.ko:/modules/anchor/virtio_freqhint.ko" \
	"${trivial[@]}"

e2e_make_fixture
# The latency figure is about clamps: the guest governor's perf request is
# not taken as a floor, so only the clamp step moves scaling_min_freq.
cat >"$E2E_DIR/freqhintd.conf" <<EOC
[daemon]
backend=cpufreq

[merge]
perf_as_floor=false

[vm $E2E_VM_NAME]
cpus=0,2,4,6
EOC
props=",rate-window-ms=$window"
lat_prefix=latency_
if [ -n "$nowin" ]; then
	printf '\n[cpufreq]\nmin_write_interval_ms=0\n' >>"$E2E_DIR/freqhintd.conf"
	props=",rate-window-ms=1,x-forward-interval-ms=0"
	lat_prefix=latency_${nowin}_
fi
e2e_start_agent

# The latency's port: the third serial port (ttyS2) on q35; on virt a PCI
# 16550 (the guest's ttyS0).
lat_port=(-serial chardev:lat)
# shellcheck disable=SC2054 # one QEMU option value
[ "$E2E_ARCH" = x86_64 ] || lat_port=(-device pci-serial,chardev=lat)
# shellcheck disable=SC2046 # QEMU arguments, one a line
e2e_start_guest --timeout 900 --device-props "$props" -- \
	-chardev "socket,id=lat,path=$E2E_DIR/guest-lat.sock,server=on,wait=off" \
	"${lat_port[@]}" $(fb_qemu_args)
e2e_connect_control
# The vCPU threads, for their host run-queue waits over each burst.
e2e_vcpu_tids

lat_pid=
# The equal-information check: how long freqhintd may take to hold a
# view of the guest's that stood still (the driver's window and the
# device's forward interval are 10 and 5 ms; the rest is TCG and a shared
# host).
FINAL_POLL_S=3
final_guest='?' final_host='?'

# "key=value ..." words of a STEP line into results, with a prefix.
take() {
	local prefix=$1 w
	shift
	for w in "$@"; do
		case $w in *=*) result "$prefix${w%%=*}" "${w#*=}" ;; esac
	done
}

# Every second until killed: "T:N", the device's notifications since the
# x-stats JSON $1 and the seconds since then (the figure-1 time series).
sample_notifications() {
	local b n t
	b=$(jq .notifications <<<"$1")
	t=$(jq .host_ns_after <<<"$1")
	echo "0:0"
	while sleep 1; do
		n=$(qom_stats) || continue
		jq -r --argjson b "$b" --argjson t "$t" \
			'"\(((.host_ns_after - $t) / 1e7 | round) / 100):\(.notifications - $b)"' <<<"$n"
	done
}

pol=$(pdir 2)
while next_step; do
	set -- "${step_args[@]}"
	case $name in
	connected)
		step_connected
		;;
	cost)
		[ -n "$only$nowin" ] || take guest_ "$@"
		verdict OK
		;;
	feedback)
		fb=$(fb_measure "$E2E_DIR/freqhintd.conf" "${1#n=}" 250) || true
		# shellcheck disable=SC2086 # key=value words
		take feedback_ $fb
		if fb_valid "$fb"; then verdict OK; else verdict "host feedback not measured: $fb"; fi
		;;
	guestcost)
		take guestcost_ "$@"
		verdict OK
		;;
	burst-start)
		tag=${1#tag=}
		before=$(qom_stats)
		read -r run0 wait0 < <(e2e_vcpu_schedstat)
		sample_notifications "$before" >"$E2E_DIR/series-$tag" &
		sampler=$!
		verdict OK
		;;
	burst-done)
		kill "$sampler" 2>/dev/null || true
		wait "$sampler" 2>/dev/null || true
		result "device_${tag}_series" "$(paste -sd, "$E2E_DIR/series-$tag")"
		after=$(qom_stats)
		read -r run1 wait1 < <(e2e_vcpu_schedstat)
		# What the guest's clock cannot tell from its own time: the
		# vCPU threads waiting for a host CPU while runnable.
		result "host_${tag}_vcpu_run_ns" $((run1 - run0))
		result "host_${tag}_vcpu_wait_ns" $((wait1 - wait0))
		take "burst_${tag}_" "$@"
		for k in notifications buffers records forwarded coalesced; do
			result "device_${tag}_$k" "$(jq -n --argjson a "$after" --argjson b "$before" "\$a.$k - \$b.$k")"
		done
		result "device_${tag}_host_seconds" "$(jq -n --argjson a "$after" --argjson b "$before" \
			'((($a.host_ns_before + $a.host_ns_after) - ($b.host_ns_before + $b.host_ns_after)) / 2 / 1e9 * 10 | round) / 10')"
		verdict OK
		;;
	final-try)
		# "cpu1 vcpu=1 online=1 idle=0 min=700 max=900 ..." from debugfs:
		# is it what freqhintd holds, within FINAL_POLL_S?  No verdict
		# here: the guest decides from whether its view moved meanwhile
		# (bench-guest.sh), and says so in the step "final".
		gmin= gmax=
		for w in "$@"; do
			case $w in min=*) gmin=${w#min=} ;; max=*) gmax=${w#max=} ;; esac
		done
		final_guest="${gmin:-?}..${gmax:-?}"
		if [ -n "$gmin" ] && [ "$gmin" != - ] &&
			eventually "$FINAL_POLL_S" vcpu_hint_near 1 "$gmin" "$gmax" 1; then
			final_host=$final_guest
			ctl_send "GO match"
		else
			final_host=$(ctl_json vcpus | jq -c '[.[] | select(.vcpu == 1)][0].hint')
			log "final: freqhintd holds $final_host for vCPU1, the guest's view was $final_guest"
			ctl_send "GO differs"
		fi
		;;
	final)
		# match=yes|no tries=N [why=lost|moved|refused]
		tries=${2#tries=}
		if [ "$1" = match=yes ]; then
			result final_match yes
			result final_state "guest vCPU1 $final_guest, freqhintd vCPU1 $final_host (view $tries of at most 20)"
			verdict OK
		else
			result final_match no
			result final_state "guest vCPU1 $final_guest, freqhintd $final_host (${3:-why=?} after $tries views)"
			verdict "freqhintd's vCPU1 hint differs from the guest's (${3:-why=?})"
		fi
		;;
	latency)
		high=$(snap_up "$(cap_to_khz 800)" 2)
		low=$(policy_original 2 min)
		result latency_expected "$low/$high"
		"$latency" --serial "$E2E_DIR/guest-lat.sock" --watch "$pol/scaling_min_freq" \
			--high-khz "$high" --low-khz "$low" --samples "$samples" --rise-only \
			>"$E2E_DIR/latency.out" 2>"$E2E_DIR/latency.err" &
		lat_pid=$!
		verdict OK
		;;
	latency-done)
		rc=0
		wait "$lat_pid" || rc=$?
		lat_pid=
		cat "$E2E_DIR/latency.err" >&2
		summary=$(grep '^summary' "$E2E_DIR/latency.out" || true)
		# shellcheck disable=SC2086 # key=value words
		take "$lat_prefix" $summary
		# Raw samples (ms): command -> write, ack -> write, change -> write.
		result "${lat_prefix}raw" "$(awk '$1 == "sample" && NF == 6 { print $3 }' "$E2E_DIR/latency.out" | paste -sd' ')"
		result "${lat_prefix}raw_ackw" "$(awk '$1 == "sample" && NF == 6 { print $5 }' "$E2E_DIR/latency.out" | paste -sd' ')"
		result "${lat_prefix}raw_clk" "$(awk '$1 == "sample" && NF == 6 { print $6 }' "$E2E_DIR/latency.out" | paste -sd' ')"
		if [ "$rc" = 0 ]; then verdict OK; else verdict "latency run failed ($rc)"; fi
		;;
	*)
		verdict "unknown step $name"
		;;
	esac
done

rc=0
e2e_wait_guest >"$E2E_DIR/guest-summary" 2>&1 || rc=$?
result "guest_run_ok${only:+_$only}${nowin:+_$nowin}" "$([ "$rc" = 0 ] && [ "$host_failures" = 0 ] && echo yes || echo no)"
[ -n "$only$nowin" ] || result agent_backend_writes "$(ctl_json status | jq .backend_writes_total 2>/dev/null || echo '?')"
[ "$rc" = 0 ] || { tail -n 30 "$E2E_DIR/guest-summary" >&2; exit 1; }
[ "$host_failures" = 0 ]
