# SPDX-License-Identifier: GPL-2.0-only
# Helpers for in-guest tests of virtio_freqhint (busybox sh), sourced after
# /lib/freqhint/test-lib.sh.  Carried into the guest as /lib/freqhint/fh-lib.sh.

FH_DBG=/sys/kernel/debug/virtio_freqhint/vcpus
# The driver's counters (debugfs, not ABI): one file each.
FH_STATS=/sys/kernel/debug/virtio_freqhint/statistics
# What the host grants each vCPU index (debugfs): granted_floor, granted_ceiling.
FH_GRANTS=/sys/kernel/debug/virtio_freqhint
FH_KO=/modules/virtio_freqhint.ko
fh_busy_pids=

# fh_probe: the virtio device with ID 56 is present ($dev), and the module
# loads (probing it), and its cpufreq policies are there
# (wait_cpufreq_policies).
fh_probe() {
	dev=
	for fh_d in /sys/bus/virtio/devices/*; do
		[ "$(cat "$fh_d/device")" = 0x0038 ] && dev=$fh_d
	done
	check "a virtio device with ID 56 is present" test -n "$dev"
	check "insmod virtio_freqhint" insmod "$FH_KO"
	wait_cpufreq_policies
}

# fh_insmod [PARAM...]: insmod the module, then wait_cpufreq_policies.
fh_insmod() {
	insmod "$FH_KO" "$@" && wait_cpufreq_policies
}

# churn N SECONDS: N short busy runs of SECONDS each, alternating
# between vCPU1 and vCPU2.
churn() {
	fh_c=0
	while [ "$fh_c" -lt "$1" ]; do
		busy $((1 + fh_c % 2))
		sleep "$2"
		stop_busy
		fh_c=$((fh_c + 1))
	done
}

# wait_ge FILE N: poll every 0.1 s (10 s) until FILE holds a number >= N.
# Prints the file when it gives up, which check() shows.
wait_ge() {
	fh_i=0
	while [ "$fh_i" -lt 100 ]; do
		[ "$(cat "$1")" -ge "$2" ] && return 0
		sleep 0.1
		fh_i=$((fh_i + 1))
	done
	cat "$1"
	return 1
}

# sampler_ns: the module's time in its window timers and irq_works, all
# CPUs (ns); only the build with FREQHINT_OWN_TIME=y counts it.
sampler_ns() {
	tr ' ' '\n' <"$FH_DBG" | sed -n 's/^sampler_ns=//p' | awk '{ n += $1 } END { printf "%.0f\n", n }'
}

# vcpu_line CPU: the module's debugfs line for CPU.
vcpu_line() {
	grep "^cpu$1 " "$FH_DBG"
}

# vcpu_holds CPU COND: COND (awk, over f["min"], f["idle"], ...) holds now.
vcpu_holds() {
	vcpu_line "$1" | awk '{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
	} END { exit !('"$2"') }'
}

# wait_vcpu CPU COND [SECONDS]: poll every 0.1 s until COND holds.  Prints
# the last line read, which check() shows when it fails, and then what ran
# on CPU and what interrupted it over the next 2 s (cpu_runners,
# cpu_irqs): a flaky wait names its cause.
wait_vcpu() {
	fh_i=0
	while [ "$fh_i" -lt "$((${3:-10} * 10))" ]; do
		if vcpu_holds "$1" "$2"; then
			vcpu_line "$1"
			return 0
		fi
		sleep 0.1
		fh_i=$((fh_i + 1))
	done
	vcpu_line "$1"
	cpu_runners "$1"
	cpu_irqs "$1"
	return 1
}

# steady_vcpu CPU COND SECONDS: COND holds at every 0.2 s sample for SECONDS.
steady_vcpu() {
	fh_i=0
	while [ "$fh_i" -lt "$(($3 * 5))" ]; do
		vcpu_holds "$1" "$2" || { vcpu_line "$1"; return 1; }
		sleep 0.2
		fh_i=$((fh_i + 1))
	done
	vcpu_line "$1"
}

# vcpu_field CPU NAME
vcpu_field() {
	vcpu_line "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# housekeeping_to MASK: the guest's unbound kthreads (RCU's, the unbound
# workqueues' workers) onto the CPUs in MASK (hex), as isolcpus would keep
# them, so that a vCPU a check wants idle runs only per-CPU housekeeping
# and the module's own work (its sender, an unbound kthread too, is left
# free).  On the arm64 test kernel under TCG, RCU's grace-period kthread
# ran for seconds on the vCPU such checks watched and held it busy.
housekeeping_to() {
	local d
	[ -w /sys/devices/virtual/workqueue/cpumask ] &&
		echo "$1" >/sys/devices/virtual/workqueue/cpumask 2>/dev/null
	for d in /proc/[0-9]*; do
		case "$(cat "$d/comm" 2>/dev/null)" in
		rcu_*|kworker/u*) taskset -p "$1" "${d#/proc/}" >/dev/null 2>&1 ;;
		esac
	done
}

# comm_pid NAME: the task named NAME.
comm_pid() {
	local d
	for d in /proc/[0-9]*; do
		[ "$(cat "$d/comm" 2>/dev/null)" = "$1" ] || continue
		echo "${d#/proc/}"
		return
	done
}

# sender_pid: the module's sender, its kthread worker (named after the
# module).
sender_pid() {
	comm_pid virtio_freqhint
}

# idle_under_messages CPU WHO: while the host sends a CUR_FREQ every 10 ms,
# handled by the module's thread WHO pinned to the idle vCPU CPU: over
# 3 s at least 60 are applied, WHO's work items there are counted
# (worker_runs grows by at least half of them), and CPU's report reads
# idle in most of 15 samples.  The guest's own per-CPU work (a kworker,
# ~5 of 200 windows) makes a window busy now and then (13 to 15 samples
# idle in 5 runs beside an arm64 guest); counted as busy, the messages
# make most of them so (1 of 15).
idle_under_messages() {
	local c=$1 who=$2 e0 e1 w0 w1 p0 p1 r0 r1 i nidle=0
	e0=$(cat "$FH_STATS/cur_freq_applied")
	p0=$(vcpu_field "$c" publishes) w0=$(vcpu_field "$c" windows)
	r0=$(vcpu_field "$c" worker_runs)
	for i in $(seq 15); do
		vcpu_holds "$c" 'f["idle"]==1' && nidle=$((nidle + 1))
		sleep 0.2
	done
	e1=$(cat "$FH_STATS/cur_freq_applied")
	p1=$(vcpu_field "$c" publishes) w1=$(vcpu_field "$c" windows)
	r1=$(vcpu_field "$c" worker_runs)
	echo "# vCPU$c over 3 s: $((e1 - e0)) CUR_FREQ applied, $((w1 - w0)) windows, $((p1 - p0)) publications, $((r1 - r0)) worker runs"
	check "at least 60 CUR_FREQ applied in 3 s ($((e1 - e0)))" \
		test "$((e1 - e0))" -ge 60
	check "$who's runs on vCPU$c are counted ($((r1 - r0)) >= $((e1 - e0)) / 2)" \
		test "$((r1 - r0))" -ge "$(((e1 - e0) / 2))"
	check "vCPU$c reads idle meanwhile ($nidle of 15 samples, >= 8)" \
		fh_stayed_idle "$c" "$nidle"
}
# fh_stayed_idle CPU N: N of the samples were idle, at least 8; if not,
# what ran on CPU and what interrupted it.
fh_stayed_idle() {
	[ "$2" -ge 8 ] && return 0
	cpu_runners "$1"
	cpu_irqs "$1"
	return 1
}

# task_state PID: where the task is, for a failing check's output: its
# state and the CPU it last ran on (/proc/PID/stat fields 3 and 39, counted
# after the command name, which may hold spaces), its run time and
# switches, and its effective clamps (/proc/PID/sched, CONFIG_SCHED_DEBUG).
task_state() {
	sed 's/^.*) //' "/proc/$1/stat" |
		awk -v p="$1" '{ print "task " p ": state " $1 ", last on cpu" $37 }'
	grep -E '^(se\.sum_exec_runtime|nr_switches|(effective )?uclamp)' "/proc/$1/sched" 2>/dev/null
}

# cpu_runners CPU: for a failing check's output, the tasks that ran on
# CPU over the next second: pid, run time gained (ns) and name, from
# /proc/PID/sched, busiest first.
cpu_runners() {
	fh_rt() {
		for d in /proc/[0-9]*; do
			fh_last=$(sed 's/^.*) //' "$d/stat" 2>/dev/null | awk '{ print $37 }')
			[ "$fh_last" = "$1" ] || continue
			echo "${d#/proc/}" \
				"$(sed -n 's/^se\.sum_exec_runtime *: *//p' "$d/sched" 2>/dev/null)" \
				"$(cat "$d/comm" 2>/dev/null)"
		done
	}
	fh_rt "$1" >/tmp/fh-rt0
	sleep 1
	fh_rt "$1" | awk 'NR == FNR { t[$1] = $2; next }
		($1 in t) && $2 > t[$1] {
			name = $0; sub(/^[^ ]* [^ ]* /, "", name)
			printf "%d %.0f %s\n", $1, ($2 - t[$1]) * 1000000, name
		}' /tmp/fh-rt0 - | sort -k2 -nr | head -8 | sed "s/^/ran on cpu$1: /"
}

# cpu_irqs CPU: for a failing check's output, the interrupts CPU took
# over the next second, by line of /proc/interrupts, most first.
cpu_irqs() {
	fh_irqs() {
		awk -v c=$(($1 + 2)) 'NR == 1 { n = NF; next }
			$c ~ /^[0-9]+$/ {
				d = ""
				for (i = n + 2; i <= NF; i++) d = d " " $i
				print $1, $c, d
			}' /proc/interrupts
	}
	fh_irqs "$1" >/tmp/fh-irq0
	sleep 1
	fh_irqs "$1" | awk 'NR == FNR { t[$1] = $2; next }
		($1 in t) && $2 > t[$1] { d = $2 - t[$1]; $2 = ""; print d, $0 }' \
		/tmp/fh-irq0 - | sort -nr | head -6 | sed "s/^/irqs on cpu$1: /"
}

# task_runs_on CPU PID: within 10 s, PID is seen running on CPU (state R,
# last on CPU) and its run time grows; prints task_state either way.
task_runs_on() {
	fh_i=0
	fh_rt0=$(sed -n 's/^se\.sum_exec_runtime *: *//p' "/proc/$2/sched")
	while [ "$fh_i" -lt 100 ]; do
		sleep 0.1
		fh_i=$((fh_i + 1))
		fh_st=$(sed 's/^.*) //' "/proc/$2/stat" | awk '{ print $1 " " $37 }')
		fh_rt=$(sed -n 's/^se\.sum_exec_runtime *: *//p' "/proc/$2/sched")
		[ "$fh_st" = "R $1" ] &&
			awk -v a="$fh_rt0" -v b="$fh_rt" 'BEGIN { exit !(b > a) }' &&
			{ task_state "$2"; return 0; }
	done
	task_state "$2"
	return 1
}

# busy CPU [UCLAMPSET ARGS...]: start a spinning shell pinned to CPU,
# optionally under uclampset.  Sets $fh_pid.
busy() {
	fh_cpu=$1
	shift
	if [ $# -gt 0 ]; then
		taskset -c "$fh_cpu" uclampset "$@" sh -c 'while :; do :; done' \
			</dev/null >/dev/null 2>&1 &
	else
		taskset -c "$fh_cpu" sh -c 'while :; do :; done' \
			</dev/null >/dev/null 2>&1 &
	fi
	fh_pid=$!
	fh_busy_pids="$fh_busy_pids $fh_pid"
}

# pulse CPU: a task pinned to CPU that alternates a short spin with a
# short sleep, so the vCPU flips between busy and idle windows and
# publishes (and the module sends) all the time.  Shell builtins only (the
# sleep is a read with a timeout on a FIFO nobody writes): no fork/exec
# housekeeping (exits, RCU callbacks) spreads to other vCPUs.
pulse() {
	[ -p /tmp/fh-pulse ] || mkfifo /tmp/fh-pulse
	taskset -c "$1" sh -c 'while :; do
		i=0; while [ $i -lt 200 ]; do i=$((i + 1)); done
		read -t 0.02 x <>/tmp/fh-pulse
	done' </dev/null >/dev/null 2>&1 &
	fh_pid=$!
	fh_busy_pids="$fh_busy_pids $fh_pid"
}

# all_limited KHZ: every policy of CPUs 0-3 has scaling_max_freq KHZ
# (eventually, 10 s), one check each.
all_limited() {
	for c in 0 1 2 3; do
		check "cpu$c: scaling_max_freq $1 (the host's grant)" \
			wait_file "/sys/devices/system/cpu/cpufreq/policy$c/scaling_max_freq" "^$1\$" 10
	done
}

stop_busy() {
	for p in $fh_busy_pids; do kill "$p" 2>/dev/null; done
	for p in $fh_busy_pids; do wait "$p" 2>/dev/null; done
	fh_busy_pids=
}

# The module's cpufreq policies run schedutil (the kernels' default; made
# sure of here, it is what hands the module its request).
use_schedutil() {
	for g in /sys/devices/system/cpu/cpufreq/policy*/scaling_governor; do
		[ -w "$g" ] || return 1
		echo schedutil >"$g" || return 1
	done
}

# Nothing alarming in the kernel log so far.
dmesg_clean() {
	! dmesg | grep -E '\] (WARNING:|BUG:|Oops|Call Trace:|UBSAN:|Unable to handle kernel|Internal error:|Call trace:)'
}

# pm_suspend_cycle: one suspend-to-idle cycle with pm_test=devices (devices
# are suspended and resumed, nothing sleeps); needs CONFIG_PM_DEBUG.
pm_suspend_cycle() {
	echo devices >/sys/power/pm_test &&
		echo 1 >/sys/module/suspend/parameters/pm_test_delay &&
		echo freeze >/sys/power/state
}
