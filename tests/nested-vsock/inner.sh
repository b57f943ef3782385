#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs as /test.sh in the inner guest of tests/nested-vsock/run.sh (the
# project's uclamp test kernel under Debian's QEMU, itself in a TCG guest):
# virtio_freqhint transport=vsock over vhost-vsock-pci to the outer guest,
# CID 2.  Each "step" (tests/harness/step-lib.sh, on ttyS1) hands the
# outer guest, the host, its checks: outer.sh.  Timeouts are long: under
# nested TCG this guest runs two orders of magnitude slower than a TCG one.
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=../../guest-driver/tests/fh-lib.sh
. /lib/freqhint/fh-lib.sh
# shellcheck source-path=SCRIPTDIR source=../harness/step-lib.sh
. /lib/freqhint/step-lib.sh

taskset -p 1 $$ >/dev/null
C=/sys/devices/system/cpu
VS=/sys/kernel/debug/virtio_freqhint_vsock
step_open

check "insmod virtio_freqhint transport=vsock" insmod "$FH_KO" transport=vsock
check_output "the link is up to the host (CID 2, port 853)" '^up cid=2 port=853$' \
	wait_file "$VS/state" '^up' 300
check "cpufreq: the host's 3.2 GHz" \
	wait_file $C/cpufreq/policy1/cpuinfo_max_freq '^3200000$' 120
# The operator's 75 % ceiling, granted: 2.4 GHz on both vCPUs.
for c in 0 1; do
	check "cpu$c: scaling_max_freq 2400000 (the host's grant)" \
		wait_file $C/cpufreq/policy$c/scaling_max_freq '^2400000$' 120
done
check_output "granted ceilings in debugfs" '^768 768$' cat "$FH_GRANTS/granted_ceiling"
check "host: served as VM inner over vsock, CID 3" step connected

# Under powersave the guest's own request is its lowest: what moves the
# host is the clamp.  The kernel's clamp hook (cpufreq_uclamp) passes clamps
# from schedutil only (spec/guest-reporting.md GR-2b), so with it schedutil
# stays, and the floor rises by the clamp and the request alike: the host
# checks the clamp in vCPU 1's hint itself.  Here taskset's and uclampset's
# execs take seconds, on vCPU 1 and unclamped (the request alone raises the
# floor meanwhile): the step waits until the task has its clamp
# (/proc/PID/sched, CONFIG_SCHED_DEBUG), so that the host waits for the
# module's report of it, not for uclampset to get there.
dmesg | grep -q 'clamp source cpufreq_uclamp$' ||
	for g in $C/cpufreq/policy*/scaling_governor; do echo powersave >"$g"; done
busy 1 -m 1024
check "the task on vCPU 1 runs under uclamp.min 1024" \
	wait_file /proc/$fh_pid/sched '^uclamp\.min +: +1024$' 600
check "host: uclampset -m 1024 on vCPU 1 reached freqhintd, raised policy2's floor" step clamp
stop_busy
check "host: vCPU 1 idle, policy2's floor returned" step idle

check "rmmod while connected" rmmod virtio_freqhint
check "no kernel warnings" dmesg_clean
step end
done_testing
