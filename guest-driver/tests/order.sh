#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest (one virtio-freqhint-pci): the order of the driver's device
# operations, from kprobe events on the virtio core and virtio-pci:
#  - DRV-8 (issue 27 bug 3): no hintq buffer is added before DRIVER_OK, at
#    probe, at a rebind, and (stock kernel, CONFIG_PM_DEBUG) at restore;
#    eventq buffers may be posted before it;
#  - issue 27 bug 4: on remove and freeze the device is reset before the
#    queues are deleted, and nothing is added to a queue after the reset;
#  - issue 27 bug 5 (stock kernel: CONFIG_PM_DEBUG, S3): a suspend whose
#    CPUs go down and come back before the device's restore (pm_test=core)
#    runs none of the module's device or feedback work between the end of
#    its freeze and its restore (the old CPU-online callback read the reset
#    device's configuration there);
#  - freeze/restore mirror remove/probe (issue 27, shape): between the end
#    of the freeze and the restore nothing of the module runs either: no
#    CPU hotplug callback, no sampler, no clamp source probe, no governor
#    request (the old freeze left the first three running: its CPU
#    callbacks ran as the CPUs went down and came back).  The cpufreq
#    driver stays registered (the core suspends its governors; its
#    per-policy online/offline, which do nothing, may run), and the
#    policies are the module's after the resume.
# Load churns on every vCPU meanwhile, so sends are wanted all the time.
# Run it without F_CPU_ID (meson does): with it, records wait for CPU_IDS,
# which hides the order.  The old order (link up, then DRIVER_OK) fails
# here when a kick lands in that window; with the window widened (a sleep
# between the two) it failed at every probe.
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=fh-lib.sh
. /lib/freqhint/fh-lib.sh

T=/sys/kernel/tracing
[ -d "$T/events" ] || mount -t tracefs nodev "$T"
taskset -p 1 $$ >/dev/null

trace_setup() {
	echo 0 >"$T/tracing_on" &&
		echo global >"$T/trace_clock" &&
		echo 4096 >"$T/buffer_size_kb" &&
		echo >"$T/trace" &&
		echo 'p:fh/status vp_modern_set_status status=%si:u8' >>"$T/kprobe_events" &&
		echo 'p:fh/out virtqueue_add_outbuf' >>"$T/kprobe_events" &&
		echo 'p:fh/in virtqueue_add_inbuf' >>"$T/kprobe_events" &&
		echo 'p:fh/delvqs vp_del_vqs' >>"$T/kprobe_events" &&
		echo 1 >"$T/events/fh/enable" &&
		echo 1 >"$T/tracing_on"
}
check "kprobe events on the device operations" trace_setup

# judge: the trace so far, as one line per event (status=N, out, in,
# delvqs), checked in order.  A session starts at a reset (status 0) or
# the start; within one, "out" needs DRIVER_OK (status bit 4) first, and
# after a reset nothing is added until the next status write.
judge() {
	sed -nE 's/.* (status|out|in|delvqs): \([^)]*\)(.*)/\1\2/p' "$T/trace" |
		awk '
		/^status/ { split($2, kv, "="); s = kv[2] + 0
			if (s == 0) { reset = 1; ok = 0 } else { reset = 0 }
			if (int(s / 4) % 2) ok = 1
			nstatus++; next }
		/^out/ { nout++
			if (!ok) { print "hintq add without DRIVER_OK (event " NR ")"; bad = 1 }
			if (reset) { print "hintq add after a reset (event " NR ")"; bad = 1 }
			next }
		/^in/ { if (reset) { print "eventq add after a reset (event " NR ")"; bad = 1 }
			next }
		/^delvqs/ { ndel++
			if (!reset) { print "queues deleted before the reset (event " NR ")"; bad = 1 }
			next }
		END { printf "%d status writes, %d hintq adds, %d del_vqs\n", nstatus, nout, ndel
			exit bad || !nout }'
}

for c in 0 1 2 3; do pulse "$c"; done
fh_probe
check "vCPU1 reports" wait_vcpu 1 'f["online"]==1' 10
check "records were sent" wait_file "$FH_STATS/records_sent" '^[1-9]'
drv=/sys/bus/virtio/drivers/virtio_freqhint
i=0
while [ $i -lt 5 ]; do
	check "rebind $i: unbind" sh -c "echo ${dev##*/} >$drv/unbind"
	check "rebind $i: bind" sh -c "echo ${dev##*/} >$drv/bind"
	check "rebind $i: records flow" wait_vcpu 1 'f["online"]==1' 10
	sleep 0.3
	i=$((i + 1))
done
if [ -e /sys/power/pm_test ]; then
	check "suspend/resume cycle (pm_test=devices)" pm_suspend_cycle
	n0=$(cat "$FH_STATS/records_sent")
	check "records flow after resume" sh -c \
		"i=0; while [ \$i -lt 100 ]; do [ \$(cat $FH_STATS/records_sent) -gt $n0 ] && exit 0; sleep 0.1; i=\$((i + 1)); done; exit 1"
fi

# What of the module may not run while it is frozen: its work functions
# that reach the device or the host's state (old and new names), its CPU
# hotplug callbacks, its sampler, its clamp sources' probes and the
# governors' requests; and the ends of its freeze and its restore.
frozen_fns="fh_config_fn vfh_apply_fn vfh_event_fn vfh_cpufreq_fn vfh_cpu_online vfh_cpu_offline
vfh_sample vfh_window_timer vfh_window_timer_idle vfh_sched_switch vfh_cpufreq_update_uclamp
vfh_cpufreq_fast_switch vfh_cpufreq_target"
frozen_probes() {
	echo 'r:fh/frozen vfh_freeze' >>"$T/kprobe_events" &&
		echo 'p:fh/restore vfh_restore' >>"$T/kprobe_events" || return 1
	# /proc/kallsyms read once: each read takes 13-17 s under TCG at load
	# ~20, and 14 of them ran past the test's timeout.
	grep '\[virtio_freqhint\]' /proc/kallsyms >/tmp/fh-syms || return 1
	for f in $frozen_fns; do
		grep -q " $f[[:space:]]*\[virtio_freqhint\]" /tmp/fh-syms || continue
		echo "p:fh/work_$f $f" >>"$T/kprobe_events" || return 1
	done
	# The CPU callbacks at least: without them the check proves nothing.
	grep -q 'work_vfh_cpu_online' "$T/kprobe_events" &&
		grep -q 'work_vfh_sample' "$T/kprobe_events" &&
		grep -q 'work_vfh_window_timer' "$T/kprobe_events" &&
		echo 1 >"$T/events/fh/enable"
}
# The probes that fire all the time (context switches, the sampler) off
# again once the cycle is over, so the trace buffer keeps up.
frozen_probes_off() {
	for e in "$T"/events/fh/work_*; do
		echo 0 >"$e/enable" || return 1
	done
}
# frozen_judge: no work_* event between a "frozen" and the next "restore".
frozen_judge() {
	sed -nE 's/.* (frozen|restore|work_[a-z_]*): .*/\1/p' "$T/trace" |
		awk '/^frozen/ { f = 1; n++; next } /^restore/ { f = 0; next }
		f { print $1 " while frozen"; bad = 1 }
		END { printf "%d freeze(s)\n", n; exit bad || !n }'
}
if [ -e /sys/power/pm_test ] && grep -q deep /sys/power/mem_sleep; then
	check "probes on the module's freeze, restore and work" frozen_probes
	check "S3 cycle, CPUs down and up while frozen (pm_test=core)" sh -c \
		'echo core >/sys/power/pm_test && echo 1 >/sys/module/suspend/parameters/pm_test_delay &&
		echo deep >/sys/power/mem_sleep && echo mem >/sys/power/state'
	check "quiet probes off" frozen_probes_off
	check "nothing of the module runs between freeze and restore" frozen_judge
	check "records flow after S3" wait_vcpu 1 'f["online"]==1' 10
	check_output "the policies are the module's after S3" '^virtio-freqhint$' \
		cat /sys/devices/system/cpu/cpufreq/policy1/scaling_driver
fi
check "rmmod (remove)" rmmod virtio_freqhint
stop_busy
echo 0 >"$T/tracing_on"
check_output "the trace lost nothing" '^0$' sh -c \
	"grep -h '^overrun' $T/per_cpu/cpu*/stats | awk '{ s += \$2 } END { print s }'"
check "DRIVER_OK before any hintq add; reset before del_vqs; no add after a reset" judge
check "no kernel warnings" dmesg_clean
done_testing
