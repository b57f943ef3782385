#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Fake sysfs/procfs/cgroupfs trees for freqhintd tests.
#
#   mkfixture.sh host DIR
#       8 CPUs in 4 cpufreq policies (policy0: CPUs 0-1, policy2: 2-3,
#       policy4: 4-5, policy6: 6-7), 800 MHz..3.2 GHz; policies 0-4 have a
#       400 MHz-step frequency table, policy6 has none (like intel_pstate).
#       System clamp defaults 1024/1024, kernel release 6.1.0 (so
#       perf_headroom=auto is 0.8 for uclamp on schedutil).  cgroup
#       machine.slice with the kernel's defaults for a new group:
#       cpu.uclamp.min 0, cpu.uclamp.max max.
#   mkfixture.sh thread DIR TID CPUS_ALLOWED LAST_CPU CGROUP [TGID]
#       /proc/TID/{status,stat,cgroup}; CGROUP is a v2 path ("/machine.slice/x").
#   mkfixture.sh cgroup DIR PATH MIN MAX
#       a cgroup directory with cpu.uclamp.min/max as the kernel prints them.
#   mkfixture.sh tgid DIR TID TGID
#       rewrite the Tgid of a thread (the test client's pid is known late).
set -euo pipefail

usage() { sed -n '4,20p' "$0" >&2; exit 2; }

host() {
	local d=$1 p c
	mkdir -p "$d/sys/devices/system/cpu/cpufreq" "$d/proc/sys/kernel" "$d/cgroup"
	echo 0-7 >"$d/sys/devices/system/cpu/online"
	for p in 0 2 4 6; do
		c=$d/sys/devices/system/cpu/cpufreq/policy$p
		mkdir -p "$c"
		echo "$p $((p + 1))" >"$c/affected_cpus"
		echo "$p $((p + 1))" >"$c/related_cpus"
		echo 800000 >"$c/cpuinfo_min_freq"
		echo 3200000 >"$c/cpuinfo_max_freq"
		echo 800000 >"$c/scaling_min_freq"
		echo 3200000 >"$c/scaling_max_freq"
		echo 1600000 >"$c/scaling_cur_freq"
		echo schedutil >"$c/scaling_governor"
		if [ "$p" != 6 ]; then
			echo "3200000 2800000 2400000 2000000 1600000 1200000 800000 " \
				>"$c/scaling_available_frequencies"
		fi
	done
	echo 1024 >"$d/proc/sys/kernel/sched_util_clamp_min"
	echo 1024 >"$d/proc/sys/kernel/sched_util_clamp_max"
	echo 6.1.0-fixture >"$d/proc/sys/kernel/osrelease"
	cgroup "$d" /machine.slice 0.00 max
}

thread() {
	local d=$1 tid=$2 allowed=$3 last=$4 cg=$5 tgid=${6:-1}
	local t=$d/proc/$tid i stat
	mkdir -p "$t"
	printf 'Name:\tCPU %s/KVM\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%s\nPid:\t%s\nCpus_allowed_list:\t%s\n' \
		"$tid" "$tgid" "$tid" "$allowed" >"$t/status"
	# 52 fields; comm holds a space and a ')' like real vCPU threads can.
	stat="$tid (CPU 0/K)M) S 1 $tgid $tgid 0 -1 4194560"
	for i in $(seq 10 38); do stat+=" 0"; done
	stat+=" $last"
	for i in $(seq 40 52); do stat+=" 0"; done
	echo "$stat" >"$t/stat"
	printf '0::%s\n' "$cg" >"$t/cgroup"
}

tgid() {
	sed -i "s/^Tgid:.*/Tgid:\t$3/" "$1/proc/$2/status"
}

cgroup() {
	local dir=$1/cgroup$2
	mkdir -p "$dir"
	echo "$3" >"$dir/cpu.uclamp.min"
	echo "$4" >"$dir/cpu.uclamp.max"
}

[ $# -ge 2 ] || usage
cmd=$1; shift
case $cmd in
host) [ $# -eq 1 ] || usage; host "$@" ;;
thread) [ $# -ge 5 ] || usage; thread "$@" ;;
tgid) [ $# -eq 3 ] || usage; tgid "$@" ;;
cgroup) [ $# -eq 4 ] || usage; cgroup "$@" ;;
*) usage ;;
esac
