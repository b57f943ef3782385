#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest (vsock-frontend-test.sh, through tests/vsock-guest/run.sh): the
# module against the real host side over vsock_loopback: freqhint-vsockd
# (bound as root, then uid 65534) relaying to freqhintd with the cpufreq
# backend on the fixture host of tests/agent/mkfixture.sh (/opt/fx: 800 MHz
# to 3.2 GHz, 400 MHz steps on policies 0-4), VM "loop" (CID 1, the
# loopback's own) with four vCPUs placed on fixture CPUs 0, 2, 4, 6 and an
# operator ceiling of 75 %.  The module connects to CID 1 (vsock_cid=1).
# On Debian's stock kernel (no uclamp) the guest's governor requests (perf,
# a floor on the host, MR-4) carry the hints; on the uclamp kernel the
# clamps set with uclampset are checked too.
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=fh-lib.sh
. /lib/freqhint/fh-lib.sh
# shellcheck disable=SC1091
. /opt/fh/vsock-lib.sh

taskset -p 1 $$ >/dev/null
C=/sys/devices/system/cpu
VS=/sys/kernel/debug/virtio_freqhint_vsock
FXP=/opt/fx/sys/devices/system/cpu/cpufreq

load_vsock
start_host 4
# The same VM on the fixture host's cpufreq policies: freqhintd again, with
# the cpufreq backend and a placement (no guest has connected yet).
kill -TERM "$FH_DAEMON"
wait "$FH_DAEMON"
echo 'cpus=0,2,4,6' >>"$W/freqhintd.conf"
$FH/freqhintd --config "$W/freqhintd.conf" --backend cpufreq --sysfs-root /opt/fx/sys \
	--proc-root /proc --socket "$W/dev.sock" --control-socket "$W/ctl.sock" \
	--state-dir "$W/state" --libvirt-uri none -v >>"$W/freqhintd.log" 2>&1 &
FH_DAEMON=$!
wait_for "freqhintd drives the fixture's policies" 'cpufreq' ctl status
# The front end runs as uid 65534 and must reach the device socket: the
# initramfs's / is 0700 (made with mktemp -d), which gave it EACCES.
chmod 0755 /
floor0=$(cat $FXP/policy2/scaling_min_freq)

check "insmod virtio_freqhint vsock_cid=1" insmod "$FH_KO" vsock_cid=1
check_output "the link is up" '^up cid=1 port=853$' wait_file "$VS/state" '^up' 30
show_logs
wait_for "VM loop is served over vsock" '"transport" *: *"vsock"' ctl --json vms
check "cpufreq: the host's 3.2 GHz" \
	wait_file $C/cpufreq/policy1/cpuinfo_max_freq '^3200000$' 10
check_output "cpufreq: the host's table (policy 2's)" '^800000 1200000 1600000 2000000 2400000 2800000 3200000 ?$' \
	cat $C/cpufreq/policy1/scaling_available_frequencies
# The operator's 75 % ceiling, granted: 2.4 GHz.
all_limited 2400000
check_output "granted ceilings in debugfs" '^768 768 768 768$' cat "$FH_GRANTS/granted_ceiling"

# A busy vCPU 1: schedutil asks for the top, the host takes it as a floor
# capped by the ceiling (MR-4), on the policy vCPU 1 is placed on.
use_schedutil
busy 1
wait_for "vCPU 1's perf request reached freqhintd" '"perf" *: *(7[0-9][0-9]|[89][0-9][0-9]|10[0-2][0-9])' \
	ctl --json vcpus loop
check "the fixture's policy2 floor rises to 2.4 GHz" \
	wait_file $FXP/policy2/scaling_min_freq '^2400000$' 30
stop_busy
check "vCPU 1 idle: policy2's floor returns" \
	wait_file $FXP/policy2/scaling_min_freq "^$floor0\$" 30

# The uclamp kernel: a task's clamps travel themselves (a stock kernel
# carries the governor's request only).  The sched_switch probe reads them
# whatever the governor: under powersave the guest's request is its
# lowest, so what moves the host's floor is the clamp.  The kernel's clamp
# hook (cpufreq_uclamp) passes them from schedutil, the governor that
# applies clamps (spec/guest-reporting.md GR-2b), so schedutil stays: the
# floor then rises by the clamp and the request alike (the hint shows the
# clamp), and the ceiling, which no request lowers, by the clamp alone.
if [ -e /proc/sys/kernel/sched_util_clamp_min ]; then
	dmesg | grep -q 'clamp source cpufreq_uclamp$' ||
		for g in $C/cpufreq/policy*/scaling_governor; do echo powersave >"$g"; done
	busy 1 -m 1024
	wait_for "vCPU 1's clamp reached freqhintd (its hint's min is 1024)" '^1024$' \
		hint_field loop 1 min
	check "uclampset -m 1024 on vCPU 1: policy2's floor rises to 2.4 GHz" \
		wait_file $FXP/policy2/scaling_min_freq '^2400000$' 30
	stop_busy
	check "the task gone: policy2's floor returns" \
		wait_file $FXP/policy2/scaling_min_freq "^$floor0\$" 30
	max0=$(cat $FXP/policy2/scaling_max_freq)
	busy 1 -M 300
	check "uclampset -M 300 on vCPU 1: policy2's ceiling below 1.6 GHz" \
		wait_file $FXP/policy2/scaling_max_freq '^([89][0-9]{5}|1[0-5][0-9]{5})$' 30
	stop_busy
	check "the task gone: policy2's ceiling returns" \
		wait_file $FXP/policy2/scaling_max_freq "^$max0\$" 30
	use_schedutil
fi

# The front end restarts: the module reconnects with backoff and sends its
# whole state; the host's view matches the guest's again.
connects=$(cat "$VS/connects")
busy 1
check "policy2 up again" wait_file $FXP/policy2/scaling_min_freq '^2400000$' 30
kill -TERM "$FH_VSOCKD"
wait "$FH_VSOCKD"
check "the module notices" wait_file "$VS/state" '^(idle|hello) ' 10
wait_for "freqhintd: VM loop has no connection" '"connected" *: *false' ctl --json vms
ASAN_OPTIONS=detect_leaks=0 $FH/freqhint-vsockd --config "$W/freqhintd.conf" \
	--agent-socket "$W/dev.sock" --user nobody -v >>"$W/vsockd.log" 2>&1 &
FH_VSOCKD=$!
check_output "the module reconnects" '^up ' wait_file "$VS/state" '^up' 60
check_output "... one more connection" "^$((connects + 1))\$" cat "$VS/connects"
wait_for "VM loop is connected again" '"connected" *: *true' ctl --json vms
check "the busy vCPU's floor is back on policy2" \
	wait_file $FXP/policy2/scaling_min_freq '^2400000$' 30
check_output "the guest's cpufreq still shows the host's limits" '^2400000$' \
	cat $C/cpufreq/policy1/scaling_max_freq
check_output "no state rebuilt for the same CONFIG" '^0$' cat "$VS/rebuilds"
check_output "no protocol error" '^0$' cat "$VS/protocol_errors"
stop_busy
check "idle again: policy2's floor returns" \
	wait_file $FXP/policy2/scaling_min_freq "^$floor0\$" 30

check "rmmod while connected" rmmod virtio_freqhint
wait_for "freqhintd: VM loop has no connection" '"connected" *: *false' ctl --json vms
show_logs
stop_host
check "no kernel warnings" dmesg_clean
done_testing
