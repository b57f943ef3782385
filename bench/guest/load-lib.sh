# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=sh
# The bursty load of figure 1 and its request count, in the guest (busybox
# sh, after /lib/freqhint/test-lib.sh), for both transports: bench-guest.sh
# (the device) and vsock-guest.sh (vsock).  Carried as
# /lib/freqhint/bench-load.sh.
#
#   kprobes            kprobes on the driver's cpufreq callbacks, enabled
#   calls              their hits so far: schedutil's requests to the driver,
#                      each one a trap in a trap-per-change design
#   run_load SECS [LOAD]  LOAD (default mixed_load) for SECS seconds, the
#                      changed task's floor moved every 0.25 s; sets
#                      series="0:0,T:CALLS,..." (guest seconds since the
#                      start: requests so far, every second).  A LOAD
#                      starts its tasks with load_task, and run_load waits
#                      for those only (the shell may have other children:
#                      vsock-guest.sh's daemons)

# Tracing: mounted by the caller (tracefs, else debugfs's tracing).
TR=/sys/kernel/tracing

calls() {
	awk '$1 ~ /^fhb_(fast_switch|target)$/ { n += $2 } END { print n + 0 }' "$TR/kprobe_profile"
}

kprobes() {
	check "kprobe on .fast_switch" sh -c "echo 'p:fhbench/fhb_fast_switch vfh_cpufreq_fast_switch' >>$TR/kprobe_events"
	check "kprobe on .target" sh -c "echo 'p:fhbench/fhb_target vfh_cpufreq_target' >>$TR/kprobe_events"
	check "kprobes enabled" sh -c "echo 1 >$TR/events/fhbench/enable"
}

# One task of a load, in the background: CMD [ARG]...
load_task() {
	"$@" &
	load_pids="$load_pids $!"
}

# Eight tasks, mixed periods and clamps; the last one's floor is changed
# every 0.25 s ($changed).
mixed_load() {
	load_task /bin/fh-guest-bench wake 1000 150 "$1"
	load_task uclampset -m 600 /bin/fh-guest-bench wake 3000 900 "$1"
	load_task uclampset -M 300 /bin/fh-guest-bench wake 7000 4000 "$1"
	load_task /bin/fh-guest-bench wake 13000 1500 "$1"
	load_task uclampset -m 900 -M 1024 /bin/fh-guest-bench wake 29000 3000 "$1"
	load_task /bin/fh-guest-bench wake 50000 20000 "$1"
	load_task uclampset -m 200 /bin/fh-guest-bench wake 110000 60000 "$1"
	load_task /bin/fh-guest-bench wake 5000 500 "$1"
	changed=$!
}

run_load() {
	rl_secs=$1
	rl_c0=$(calls)
	rl_t0=$(cut -d' ' -f1 /proc/uptime)
	series=0:0
	changed=
	load_pids=
	"${2:-mixed_load}" "$rl_secs"
	rl_i=0
	while [ $rl_i -lt $((rl_secs * 4)) ]; do
		sleep 0.25
		[ -z "$changed" ] || uclampset -m $(((rl_i * 137) % 1024)) -p "$changed" 2>/dev/null
		rl_i=$((rl_i + 1))
		[ $((rl_i % 4)) = 0 ] &&
			series="$series,$(awk -v a="$rl_t0" '{ printf "%.2f", $1 - a }' /proc/uptime):$(($(calls) - rl_c0))"
	done
	# shellcheck disable=SC2086 # pids, one a word
	wait $load_pids
}
