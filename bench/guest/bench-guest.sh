#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Runs inside the benchmark guest (as /test.sh, see tests/harness/mkinitramfs.sh);
# the host side is bench/guest/run.sh.  Steps are reported on the control
# port (ttyS1) as "STEP <name> key=value..." and wait for the host's "GO".
#
# FREQHINT_BENCH_BURST_ONLY=1 (in /etc/freqhint-bench.env): only the first
# burst, tagged FREQHINT_BENCH_TAG.  FREQHINT_BENCH_LATENCY_ONLY=1: only
# the latency.  FREQHINT_BENCH_FEEDBACK_ONLY=1: only the host feedback
# (the pre-v1 anchor's boot, bench/guest/feedback-anchor.sh: nothing after
# the module's load that an older module may lack).  FREQHINT_BENCH_SHORT=1
# (the arm64 boot): the bursty load in both driver modes, the equal
# information check and the latency only.
#
#   cost       N sched_setattr() calls changing this task's clamps (guest floor)
#   burst      a bursty mixed load; counts schedutil's calls into the driver's
#              cpufreq callbacks (kprobes: .fast_switch and .target — each
#              one a trap in a trap-per-change design) and what the driver sent;
#              again with the anchor build of the module (built by run.sh
#              with FREQHINT_BENCH_ANCHOR=y, /modules/anchor/) loaded with
#              notify_every_change=1; and a load at a high request rate
#              (schedutil's rate limit 0, tags fast and fastevery)
#   feedback   idle, while the host makes FREQHINT_BENCH_FEEDBACK_N changes
#              of the VM's operator ceiling and counts this guest's exits
#              (bench/guest/feedback-lib.sh)
#   final      a steady clamped task on vCPU1: the host's state must match
#              (final-try per view of the guest, then the guest's decision)
#   guestcost  ping-pong, hackbench-like load and idle CPU time: no cpufreq
#              driver, a trivial one, the module with reporting off, the
#              module; then uclamp accounting on, without and with the
#              module; interleaved in this boot, before any clamp is set
#   latency    the responder for bench/fh-bench-latency.c on ttyS2
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=../../tests/harness/step-lib.sh
. /lib/freqhint/step-lib.sh
# shellcheck source-path=SCRIPTDIR source=load-lib.sh
. /lib/freqhint/bench-load.sh
. /etc/freqhint-bench.env

step_open
# The latency's port: ttyS2 on q35; on arm64's virt a PCI 16550, ttyS0.
LAT_TTY=/dev/ttyS2
[ "$(uname -m)" = aarch64 ] && LAT_TTY=/dev/ttyS0
stty -F "$LAT_TTY" raw -echo || exit 1

FH_STATS=/sys/kernel/debug/virtio_freqhint/statistics
stat_of() { cat "$FH_STATS/$1"; }
# The module's own CPU time off the scheduler's path, in ns so far: its
# window timers and irq_works (per CPU, debugfs vcpus; run.sh builds the
# module with FREQHINT_OWN_TIME=y, without it there is no sampler_ns) and
# its sender thread, of which statistics/notify_ns is the time in the
# device's notification (same build).
sampler_ns() {
	tr ' ' '\n' </sys/kernel/debug/virtio_freqhint/vcpus |
		sed -n 's/^sampler_ns=//p' | awk '{ n += $1 } END { printf "%.0f\n", n }'
}

step_load_module
grep -q ' sampler_ns=' /sys/kernel/debug/virtio_freqhint/vcpus || {
	echo "FAIL: no sampler_ns: the module was built without FREQHINT_OWN_TIME=y"
	exit 1
}
# Host feedback: the guest idle (this shell waits for the verdict), the host
# changing what it grants.
feedback() {
	sleep 2
	check "host feedback measured" step feedback n="${FREQHINT_BENCH_FEEDBACK_N:-20}"
}
if [ "${FREQHINT_BENCH_FEEDBACK_ONLY:-0}" = 1 ]; then
	check "host sees the VM" step connected
	feedback
	echo "STEP end" >&3
	done_testing
fi
mount -t tracefs nodev "$TR" 2>/dev/null || TR=/sys/kernel/debug/tracing
check "tracefs" test -w "$TR/kprobe_events"
echo 0 >"$TR/tracing_on"
kprobes
check "schedutil governs" grep -q schedutil /sys/devices/system/cpu/cpufreq/policy0/scaling_governor
sleep 2
check "host sees the VM" step connected

# 4. Latency: the host drives the responder on ttyS2 (clock exchanges,
# then clamp changes, then clock exchanges).
latency() {
	check "latency start" step latency
	check "latency responder" /bin/fh-guest-bench step "$LAT_TTY" 1
	check "latency done" step latency-done
}
if [ "${FREQHINT_BENCH_LATENCY_ONLY:-0}" = 1 ]; then
	latency
	echo "STEP end" >&3
	done_testing
fi
short=${FREQHINT_BENCH_SHORT:-0}
[ "${FREQHINT_BENCH_BURST_ONLY:-0}" = 1 ] || [ "$short" = 1 ] || feedback

# 1. Bursty load: tasks waking at mixed periods, some clamped, one whose
# clamps are changed while it runs.  Run with the driver's default
# (coalescing) mode, then (tag every) with the anchor build loaded with
# notify_every_change=1: the anchor, one notification per change of a vCPU's report, each
# governor request included (guest-driver/README.md).  Every second the
# requests so far are noted ("series=T:CALLS,..." in guest seconds since
# the start); the host samples the device's notifications alike.
burst() {
	tag=$1 load=${2:-mixed_load} secs=${FREQHINT_BENCH_BURST_S:-20}
	c0=$(calls) b0=$(stat_of buffers_sent) r0=$(stat_of records_sent)
	s0=$(sampler_ns) n0=$(stat_of sender_ns) k0=$(stat_of notify_ns)
	check "burst $tag start" step burst-start tag=$tag
	t0=$(cut -d' ' -f1 /proc/uptime)
	run_load "$secs" "$load"
	t1=$(cut -d' ' -f1 /proc/uptime)
	c1=$(calls) b1=$(stat_of buffers_sent) r1=$(stat_of records_sent)
	s1=$(sampler_ns) n1=$(stat_of sender_ns) k1=$(stat_of notify_ns)
	check "burst $tag done" step burst-done tag=$tag calls=$((c1 - c0)) buffers=$((b1 - b0)) \
		records=$((r1 - r0)) guest_seconds=$(echo "$t1 $t0" | awk '{ printf "%.1f", $1 - $2 }') \
		sampler_ns=$((s1 - s0)) sender_ns=$((n1 - n0)) notify_ns=$((k1 - k0)) \
		vcpus="$(nproc)" series="$series"
}

# The bursty load of figure 1 is bench-load.sh's mixed_load.

# A high request rate (issue 30): schedutil's rate limit at 0 on every
# policy, and on each vCPU a spinning task capped at 0 (uclampset -M 0)
# beside a short task with a floor of 1024 waking every 2 ms.  The run
# queue is never idle, so its clamps follow the short task: 1024 while it
# is queued, 0 when only the capped one runs, and schedutil asks for a new
# frequency at each of the two edges (up to 1000 requests/s per vCPU).  An
# unclamped companion, or none, leaves the frequency at the top: uclamp
# keeps an idle run queue's last max (uclamp_idle_value()), and the
# previous design of this load made 3-4 requests/s.
fast_load() {
	for f in /sys/devices/system/cpu/cpufreq/policy*/schedutil/rate_limit_us; do
		echo 0 >"$f"
	done
	c=0
	while [ $c -lt "$(nproc)" ]; do
		load_task taskset -c $c uclampset -m 1024 /bin/fh-guest-bench wake 2000 300 "$1"
		load_task taskset -c $c uclampset -M 0 /bin/fh-guest-bench wake 1000 1000 "$1"
		c=$((c + 1))
	done
}

# Unload the module; the kprobes on its functions go first.
module_off() {
	echo 0 >"$TR/events/fhbench/enable"
	echo '-:fhbench/fhb_fast_switch' >>"$TR/kprobe_events"
	echo '-:fhbench/fhb_target' >>"$TR/kprobe_events"
	check "module unloads" rmmod virtio_freqhint
}

# Load it ($STEP_KO, with PARAM=VALUE...) and put the kprobes back.
module_on() {
	step_load_module "$@"
	kprobes
}

reload() {
	module_off
	module_on "$@"
	sleep 2
}

# The guest's cost of the module (issues 30 and 41), each part apart, in
# this boot.  What is loaded in each state:
#   off      no cpufreq driver at all
#   trivial  bench/guest/trivial-cpufreq: a cpufreq driver that only
#            records schedutil's requests (schedutil's own cost)
#   quiet    the anchor build with reporting_off=1: bound, the cpufreq
#            driver registered, nothing gathered or sent
#   on       the product module
# Rounds interleave the four states, each round's order rotated by one so
# that each state takes each place in turn (after which load or unload):
# 4 rounds (FREQHINT_BENCH_COST_ROUNDS) take every place once.
# The scheduler's uclamp accounting (sched_uclamp_used) is off until a
# task first sets a clamp and then stays on until reboot, so these rounds
# run before anything in this boot sets one; then this shell sets one
# (uclampset -m 0) and rounds of off and on (uoff, uon) follow, their
# order flipped each round.  Per run: a pipe ping-pong between two tasks
# pinned to vCPU3 (ns per round trip) and a hackbench-like load on every
# vCPU (ms); in off and on of the first rounds also the guest's busy CPU
# time while idle for FREQHINT_BENCH_IDLE_S seconds (/proc/stat
# user+nice+system+irq+softirq, in USER_HZ ticks summed over the vCPUs),
# with the module also its own time over that idle stretch (ns, samplers
# and sender).  No kprobes meanwhile: they would trap on every request.
TRIVIAL_KO=/modules/fh_trivial_cpufreq.ko
busy_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
own_ns() { echo $(($(sampler_ns) + $(stat_of sender_ns))); }
# "cpuN ... windows=W ..." of every vCPU, the windows words only.
windows_now() { grep -o 'windows=[0-9]*' /sys/kernel/debug/virtio_freqhint/vcpus | paste -sd' '; }
cost_run() {
	state=$1 tag=${2:-$1}
	[ "$state" = quiet ] && quiet0="$(windows_now) sent=$(stat_of buffers_sent)"
	pp=$(/bin/fh-guest-bench pingpong 3 "${FREQHINT_BENCH_PP_N:-5000}") || return 1
	hb=$(/bin/fh-guest-bench hackbench 4 "${FREQHINT_BENCH_HB_LOOPS:-20}") || return 1
	[ "$state" = quiet ] && quiet1="$(windows_now) sent=$(stat_of buffers_sent)"
	pp=${pp%% *} hb=${hb%% *}
	echo "${pp#*=}" >>"/tmp/cost-pp-$tag"
	echo "${hb#*=}" >>"/tmp/cost-hb-$tag"
	[ "$tag" = on ] || [ "$tag" = off ] || return 0
	[ "$tag" = on ] && o0=$(own_ns)
	b0=$(busy_ticks)
	sleep "${FREQHINT_BENCH_IDLE_S:-5}"
	b1=$(busy_ticks)
	[ "$tag" = on ] && echo $(($(own_ns) - o0)) >>/tmp/cost-own-idle
	echo $((b1 - b0)) >>"/tmp/cost-idle-$tag"
}
# Every online CPU has a policy governed by schedutil (up to 10 s).
wait_schedutil() {
	i=0
	while [ $i -lt 100 ]; do
		missing=
		for c in /sys/devices/system/cpu/cpu[0-9]*; do
			[ "$(cat "$c/online" 2>/dev/null || echo 1)" = 1 ] || continue
			grep -qx schedutil "$c/cpufreq/scaling_governor" 2>/dev/null || missing=1
		done
		[ -z "$missing" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
cost_cur=on
# Leave state $cost_cur for $1.
cost_state() {
	[ "$1" = "$cost_cur" ] && return 0
	case $cost_cur in
	trivial) check "trivial cpufreq driver unloads" rmmod fh_trivial_cpufreq ;;
	quiet | on) check "module unloads" rmmod virtio_freqhint ;;
	esac
	case $1 in
	trivial)
		check "trivial cpufreq driver loads" insmod "$TRIVIAL_KO"
		check "trivial cpufreq driver under schedutil" wait_schedutil
		;;
	quiet)
		STEP_KO=/modules/anchor/virtio_freqhint.ko
		step_load_module reporting_off=1
		STEP_KO=
		check "reporting_off: schedutil governs" wait_schedutil
		;;
	on)
		step_load_module
		check "schedutil governs" wait_schedutil
		;;
	esac
	cost_cur=$1
	sleep 1
}
# "a,b,c" of a cost file.
cost_list() { paste -sd, "/tmp/cost-$1"; }
# The product module's last word on clamps at load: "reported once one is
# set" while sched_uclamp_used is off, "reported" once it is on.
clamps_said() { dmesg | sed -n 's/.*virtio_freqhint.*: clamps \(.*\), perf .*/\1/p' | tail -n 1; }
guest_cost() {
	echo 0 >"$TR/events/fhbench/enable"
	echo '-:fhbench/fhb_fast_switch' >>"$TR/kprobe_events"
	echo '-:fhbench/fhb_target' >>"$TR/kprobe_events"
	check "uclamp accounting off before the first rounds" \
		test "$(clamps_said)" = "reported once one is set"
	r=0
	while [ $r -lt "${FREQHINT_BENCH_COST_ROUNDS:-4}" ]; do
		set -- off trivial quiet on
		i=0
		while [ $i -lt $((r % 4)) ]; do
			s1=$1
			shift
			set -- "$@" "$s1"
			i=$((i + 1))
		done
		for s in "$@"; do
			cost_state "$s"
			check "cost round $r: $s" cost_run "$s"
			# The anchor runs nothing of what is measured against it.
			[ "$s" != quiet ] || check "reporting_off: no window ran, nothing sent ($quiet1)" \
				test "$quiet1" = "$quiet0"
		done
		r=$((r + 1))
	done
	cost_state on
	check "uclamp accounting still off after them" \
		test "$(clamps_said)" = "reported once one is set"
	check "a clamp turns uclamp accounting on" uclampset -m 0 -p $$
	r=0
	while [ $r -lt "${FREQHINT_BENCH_UCLAMP_ROUNDS:-4}" ]; do
		if [ $((r % 2)) = 0 ]; then set -- on off; else set -- off on; fi
		for s in "$@"; do
			cost_state "$s"
			check "cost round $r with uclamp accounting: $s" cost_run "$s" "u$s"
		done
		r=$((r + 1))
	done
	cost_state on
	check "uclamp accounting on after the clamp" test "$(clamps_said)" = reported
	kprobes
	check "guest cost measured" step guestcost pp_on="$(cost_list pp-on)" \
		pp_off="$(cost_list pp-off)" hb_on="$(cost_list hb-on)" hb_off="$(cost_list hb-off)" \
		pp_trivial="$(cost_list pp-trivial)" hb_trivial="$(cost_list hb-trivial)" \
		pp_quiet="$(cost_list pp-quiet)" hb_quiet="$(cost_list hb-quiet)" \
		pp_uon="$(cost_list pp-uon)" pp_uoff="$(cost_list pp-uoff)" \
		hb_uon="$(cost_list hb-uon)" hb_uoff="$(cost_list hb-uoff)" \
		idle_on="$(cost_list idle-on)" idle_off="$(cost_list idle-off)" own_idle_ns="$(cost_list own-idle)" idle_seconds="${FREQHINT_BENCH_IDLE_S:-5}" vcpus="$(nproc)"
}

# Before anything in this boot sets a clamp (the cost step below does).
[ "$short" = 1 ] || [ "${FREQHINT_BENCH_BURST_ONLY:-0}" = 1 ] || guest_cost

# 6. The cost of one clamp change, and of one cpufreq limit change through
# sysfs, in this guest (vCPU3's policy; restored afterwards).
# (Not in the other boots: their results would not be kept.)
if [ "$short" != 1 ] && [ "${FREQHINT_BENCH_BURST_ONLY:-0}" != 1 ]; then
out=$(/bin/fh-guest-bench cost "${FREQHINT_BENCH_COST_N:-20000}")
echo "cost: $out"
pol3=/sys/devices/system/cpu/cpufreq/policy3
out2=$(/bin/fh-guest-bench sysfs $pol3/scaling_max_freq 5000 \
	"$(cat $pol3/cpuinfo_max_freq)" "$(($(cat $pol3/cpuinfo_max_freq) / 2))")
echo "sysfs: $out2"
check "cost measured" step cost $out $out2
fi

burst "${FREQHINT_BENCH_TAG:-default}"
if [ "${FREQHINT_BENCH_BURST_ONLY:-0}" = 1 ]; then
	echo "STEP end" >&3
	done_testing
fi
[ "$short" = 1 ] || burst fast fast_load
# The anchor is not part of the product driver: only a build with
# FREQHINT_BENCH_ANCHOR=y has the parameter.
STEP_KO=/modules/anchor/virtio_freqhint.ko
reload notify_every_change=1
check "notify_every_change set" grep -qx Y /sys/module/virtio_freqhint/parameters/notify_every_change
burst every
[ "$short" = 1 ] || burst fastevery fast_load
STEP_KO=
reload
check "the product driver has no notify_every_change" \
	test ! -e /sys/module/virtio_freqhint/parameters/notify_every_change
check "the product driver has no reporting_off" \
	test ! -e /sys/module/virtio_freqhint/parameters/reporting_off
sleep 1

# Equal information: after the load, one steady clamped task on vCPU1; the
# host must hold what the guest reports.  The guest's report is a window's
# aggregate (GR-6): whatever else ran on vCPU1 for 5 % of a window's clamped
# time (housekeeping; a task running while the host descheduled the vCPU
# thread is charged all that time) raises its max to 1024 for that window,
# and the host follows each such change.  One view is then no target: the
# host may never hold a one-window state it read.  So the guest sends its
# view, the host looks for it for 3 s (run.sh: FINAL_POLL_S), and the guest reads its view
# again.  A match passes.  A miss while the guest published nothing in
# between fails: its latest report stood still for the whole poll, far
# beyond the driver's window and the device's forward interval, so the
# host must hold it (a lost last record).  A miss while it published is a
# moved target: sent again, at most FINAL_TRIES times, then it fails as
# undecided.  This shell and its readers stay on vCPU0 meanwhile, so the
# observer does not change what it observes; the steady task outlives the
# check and is stopped after it.
FINAL_TRIES=20
# "publishes=N" of a debugfs line.
publishes_of() {
	for w in $1; do
		case $w in publishes=*) echo "${w#publishes=}" ;; esac
	done
}
vcpu1_view() { grep '^cpu1 ' /sys/kernel/debug/virtio_freqhint/vcpus; }
# Sets match (yes/no), try and why (lost, moved).
final() {
	try=1 match=no why=
	while :; do
		line=$(vcpu1_view)
		echo "guest view: $line"
		step final-try "$line" || { why=refused; return; }
		after=$(vcpu1_view)
		case $verdict in
		"GO match"*) match=yes; return ;;
		esac
		if [ "$(publishes_of "$after")" = "$(publishes_of "$line")" ]; then
			why=lost
			return
		fi
		echo "guest view moved meanwhile: $after"
		if [ $try -ge $FINAL_TRIES ]; then
			why=moved
			return
		fi
		try=$((try + 1))
	done
}
mask=$(taskset -p $$)
taskset -p 1 $$ >/dev/null
taskset 2 uclampset -m 700 -M 900 /bin/fh-guest-bench wake 10000 5000 600 &
steady=$!
sleep 2
final
check "host matches the guest" step final match=$match tries=$try ${why:+why=$why}
kill "$steady"
wait "$steady" 2>/dev/null
taskset -p "${mask##* }" $$ >/dev/null
sleep 1

latency

echo "STEP end" >&3
done_testing
