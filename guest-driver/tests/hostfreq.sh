#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest (hostfreq-test.sh): virtio_freqhint with a device whose agent is
# the real freqhintd on the fixture host of tests/agent/mkfixture.sh
# (policies of 800 MHz..3.2 GHz; policies 0, 2 and 4 have a 400 MHz-step
# table, policy 6 none), vCPU i placed on fixture CPU 2i, operator ceiling
# 75 % (768/1024: 2.4 GHz).  Guest tools must show the host's frequencies:
# cpuinfo range, table, cpupower frequency-info, scaling_cur_freq and
# /proc/cpuinfo "cpu MHz" (the governor's request), and cpuinfo_cur_freq,
# which cpupower reads "by call to hardware": the frequency the host's CPU
# runs at, 1.6 GHz in the fixture, whatever the guest's governor asks
# (VIRTIO_FREQHINT_F_CUR_FREQ).
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=fh-lib.sh
. /lib/freqhint/fh-lib.sh

taskset -p 1 $$ >/dev/null
C=/sys/devices/system/cpu
fh_probe

# cpu_mhz CPU: /proc/cpuinfo's "cpu MHz" of CPU.
cpu_mhz() {
	awk -F': *' -v c="$1" '/^processor/ { p = $2 } /^cpu MHz/ && p == c { print $2 }' /proc/cpuinfo
}
# cpuinfo_mhz CPU MHZ: x86's /proc/cpuinfo shows CPU at MHZ (cpufreq's
# current frequency).  arm64's /proc/cpuinfo names no frequency at all, so
# there it must show none: the kHz are in sysfs and cpupower (checked).
cpuinfo_mhz() {
	if [ "$(uname -m)" = aarch64 ]; then
		check_fails "cpu$1: arm64's /proc/cpuinfo shows no cpu MHz" \
			grep -q '^cpu MHz' /proc/cpuinfo
	else
		check_output "cpu$1: /proc/cpuinfo cpu MHz $2" "^$2\$" cpu_mhz "$1"
	fi
}
# all_at GOVERNOR KHZ MHZ: every CPU runs GOVERNOR, and (eventually)
# scaling_cur_freq is KHZ and /proc/cpuinfo says MHZ, while
# cpuinfo_cur_freq and cpupower's current frequency stay the host's.
all_at() {
	for c in 0 1 2 3; do
		check "cpu$c: $1 governor" sh -c "echo $1 >$C/cpu$c/cpufreq/scaling_governor"
		check "cpu$c: scaling_cur_freq $2 under $1" \
			wait_file "$C/cpu$c/cpufreq/scaling_cur_freq" "^$2\$" 10
		cpuinfo_mhz "$c" "$3"
		check "cpu$c: cpuinfo_cur_freq is the host's 1.6 GHz under $1" \
			wait_file "$C/cpu$c/cpufreq/cpuinfo_cur_freq" '^1600000$' 10
		check_output "cpu$c: cpupower: the host's current frequency" \
			"current CPU frequency: 1\.60 GHz \(asserted by call to hardware\)" \
			cpupower -c "$c" frequency-info
	done
}

check "freqhintd is connected" wait_file "$dev/agent_connected" '^1$' 60
check "the host's range reaches the guest" \
	wait_file "$C/cpu0/cpufreq/cpuinfo_max_freq" '^3200000$' 30
check "the operator ceiling (75 %) is the policies' limit" \
	wait_file "$C/cpu0/cpufreq/scaling_max_freq" '^2400000$' 30
table='^800000 1200000 1600000 2000000 2400000 2800000 3200000 ?$'
for c in 0 1 2 3; do
	check_output "cpu$c: cpuinfo_min_freq is the host's 800 MHz" '^800000$' \
		cat "$C/cpu$c/cpufreq/cpuinfo_min_freq"
	check_output "cpu$c: cpuinfo_max_freq is the host's 3.2 GHz" '^3200000$' \
		cat "$C/cpu$c/cpufreq/cpuinfo_max_freq"
	check_output "cpu$c: scaling_max_freq is the 2.4 GHz ceiling" '^2400000$' \
		cat "$C/cpu$c/cpufreq/scaling_max_freq"
	check_output "cpu$c: cpupower: the host's hardware limits" \
		'hardware limits: 800 MHz - 3\.20 GHz' cpupower -c "$c" frequency-info
	check_output "cpu$c: cpupower: the policy is within the granted 800 MHz..2.4 GHz" \
		'frequency should be within 800 MHz and 2\.40 GHz' cpupower -c "$c" frequency-info
	check_output "cpu$c: cpupower: the driver" 'driver: virtio-freqhint' \
		cpupower -c "$c" frequency-info
done
for c in 0 1 2; do
	check_output "cpu$c (host policy $((2 * c))): the host's frequency table" \
		"$table" cat "$C/cpu$c/cpufreq/scaling_available_frequencies"
	check_output "cpu$c: cpupower: the host's frequency steps" \
		'available frequency steps: +800 MHz, 1\.20 GHz, 1\.60 GHz, 2\.00 GHz, 2\.40 GHz, 2\.80 GHz, 3\.20 GHz$' \
		cpupower -c "$c" frequency-info
done
check_fails "cpu3 (host policy 6): no table, as on the host" \
	cat "$C/cpu3/cpufreq/scaling_available_frequencies"
check_fails "cpu3: cpupower shows no frequency steps" sh -c \
	"cpupower -c 3 frequency-info | grep 'available frequency steps'"
cpupower -c 0 frequency-info

# Current frequencies are the governor's requests in the host's range.
all_at performance 2400000 2400.000
if grep -qw powersave "$C/cpu0/cpufreq/scaling_available_governors"; then
	all_at powersave 800000 800.000
else
	echo "powersave governor not built in: skipped"
fi
check "back to schedutil" use_schedutil
busy 1
check "cpu1 busy under schedutil: the ceiling, a host table frequency" \
	wait_file "$C/cpu1/cpufreq/scaling_cur_freq" '^2400000$' 10
cpuinfo_mhz 1 '2400\.000'
stop_busy
check "rmmod" rmmod virtio_freqhint
check "no kernel warnings" dmesg_clean
done_testing
