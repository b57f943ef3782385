#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# In-guest smoke test of the test infrastructure and of the kernel's clamp
# support.  The kernel command line says what to expect:
#   freqhint.expect=uclamp     the project's kernel: clamps work
#   freqhint.expect=nouclamp   Debian's stock kernel: clamps are refused
. /lib/freqhint/test-lib.sh

expect=$(sed -n 's/.*freqhint\.expect=\([a-z]*\).*/\1/p' /proc/cmdline)
check "the command line says what to expect ($expect)" \
	test "$expect" = uclamp -o "$expect" = nouclamp

check_output "4 CPUs online" '^4$' nproc
if [ "$(uname -m)" = x86_64 ]; then
	check "the vCPUs have constant_tsc (fast frequency switching)" \
		grep -qw constant_tsc /proc/cpuinfo
fi
check "cgroup2 is mounted" grep -q ' /sys/fs/cgroup cgroup2 ' /proc/mounts
check "the cpu controller is enabled for children" \
	grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control
check "a child cgroup can be made" mkdir /sys/fs/cgroup/smoke
check "cpu3 goes offline" sh -c 'echo 0 > /sys/devices/system/cpu/cpu3/online'
check_output "3 CPUs online then" '^3$' nproc
check "cpu3 comes back" sh -c 'echo 1 > /sys/devices/system/cpu/cpu3/online'
check_output "uclampset runs (its libraries are there)" 'uclampset' uclampset --version

if [ "$expect" = uclamp ]; then
	check_output "/proc/self/sched shows uclamp" '^uclamp' cat /proc/self/sched
	check "uclampset -m 300 -M 600 on this shell" uclampset -m 300 -M 600 -p $$
	check_output "the shell's requested clamps read back" \
		'uclamp\.min.*: *300$' cat /proc/$$/sched
	check_output "and its max" 'uclamp\.max.*: *600$' cat /proc/$$/sched
	check_output "effective clamps of a child" 'effective uclamp\.min.*: *300$' \
		cat /proc/self/sched
	check "the child group has cpu.uclamp.min" test -f /sys/fs/cgroup/smoke/cpu.uclamp.min
	check "and cpu.uclamp.max" test -f /sys/fs/cgroup/smoke/cpu.uclamp.max
	check "cpu.uclamp.max takes 50" sh -c 'echo 50 > /sys/fs/cgroup/smoke/cpu.uclamp.max'
	check_output "and reads it back" '^50\.00$' cat /sys/fs/cgroup/smoke/cpu.uclamp.max
	check "this shell joins the group" sh -c "echo $$ > /sys/fs/cgroup/smoke/cgroup.procs"
	check_output "the group caps a child's effective max at 512" \
		'effective uclamp\.max.*: *512$' cat /proc/self/sched
	echo $$ >/sys/fs/cgroup/cgroup.procs
else
	check_output "uclampset is refused with EOPNOTSUPP" 'Operation not supported' \
		sh -c "uclampset -m 300 -M 600 -p $$; test \$? != 0"
	check_fails "no cpu.uclamp.* in a child group" \
		sh -c 'ls /sys/fs/cgroup/smoke/ | grep -q uclamp'
fi
rmdir /sys/fs/cgroup/smoke
done_testing
