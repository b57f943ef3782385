#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest (uclamp kernel, one virtio-freqhint-pci): the module allocates
# memory only while it is probed (and its cpufreq driver registers, once,
# right after the device's first snapshot), never afterwards, so never in scheduler
# context (the sched_switch probe, the hrtimer sampler, irq_work, the
# cpufreq fast_switch/target callbacks, CPU hotplug callbacks) nor in its
# sender.  The kmem trace events (kmalloc, kmem_cache_alloc,
# mm_page_alloc, percpu_alloc_percpu) record every allocation with a
# kernel stack (sym-offset on: stack entries then carry their module's
# name); an allocation whose call_site or stack names a function of
# [virtio_freqhint] after the probe fails the test.  The probe's own
# allocations must be found (the detector sees the module), and the trace
# buffers must lose nothing (overrun and dropped events 0), or the absence
# proves nothing.  Not counted: a debugfs reader's open (fh_*_open:
# single_open() allocates the reader's seq_file buffer, in the reader's
# process context).  A kernel built with sibling calls (the default) shows
# no module frame there; the KCSAN kernel keeps it.  Nor the cpufreq
# driver's one registration (the work vfh_cpufreq_fn, through the
# auxiliary bus or not), which may still be creating policies when the
# marker is written.
. /lib/freqhint/test-lib.sh
. /lib/freqhint/fh-lib.sh

T=/sys/kernel/tracing
[ -d "$T/events" ] || mount -t tracefs nodev "$T"
check "tracefs with the kmem events" test -d "$T/events/kmem/kmalloc"
taskset -p 1 $$ >/dev/null
# vCPU1 must read idle once its load stops: the unbound kthreads (RCU's,
# the unbound workers; the module's sender below) stay off it.
housekeeping_to 9

events="kmem/kmalloc kmem/kmem_cache_alloc kmem/mm_page_alloc percpu/percpu_alloc_percpu"
# Not overwriting: a full buffer drops the newest events, so the marker
# and the probe's allocations stay, and the dropped count says how many
# were lost.
trace_setup() {
	echo 0 >"$T/tracing_on" &&
		echo global >"$T/trace_clock" &&
		echo 16384 >"$T/buffer_size_kb" &&
		echo 0 >"$T/options/overwrite" &&
		echo >"$T/trace" &&
		for e in $events; do
			echo 1 >"$T/events/$e/enable" || return 1
		done &&
		echo 1 >"$T/options/stacktrace" &&
		echo 1 >"$T/options/sym-offset" &&
		echo 1 >"$T/tracing_on"
}
check "trace every allocation with its stack" trace_setup

check "insmod virtio_freqhint (probes the device)" insmod "$FH_KO"
check "debugfs vcpus exists" test -r "$FH_DBG"
# The cpufreq driver registers once, after the device's first snapshot
# that carries the host's frequencies (its policies are allocated then):
# part of bringing the device up.  policy0 appearing does not mean the
# other CPUs' policies are done, so the registration's allocations
# (the work vfh_cpufreq_fn, run once: main.c) are the probe's wherever the
# marker falls.
check "the cpufreq policies exist" \
	sh -c 'i=0; while [ $i -lt 50 ]; do [ -e /sys/devices/system/cpu/cpufreq/policy0 ] && exit 0; sleep 0.1; i=$((i + 1)); done; exit 1'
echo "freqhint: probed" >"$T/trace_marker"
# The sender, an unbound kthread, runs where it is woken, an idle vCPU
# first, while vCPU0's polling keeps it sending.  A window in which only
# it ran reads idle, but in one where a per-CPU kworker ran too, its
# switches and any host wait inside its runs count as busy (spec GR-7):
# on a loaded host, about 0.1 ms a send becomes milliseconds.  Once
# vCPU1 stayed at busy=30 (idle share 20) for the whole wait.  Whether
# its runs count as idle is module-gather's to check; here it is
# housekeeping.
check "the sender kept to vCPU0" taskset -p 1 "$(sender_pid)"

# Everything the module does after probe: clamps changing under load, the
# leading edge, windows closing, idle/busy transitions, governors (the
# fast_switch and target paths), a CPU going offline and coming back.
check "use schedutil" use_schedutil
busy 1 -m 0
p1=$fh_pid
busy 2 -m 0
p2=$fh_pid
pulse 3
i=0
while [ $i -lt 20 ]; do
	uclampset -p "$p1" -m $(((i % 2) * 600))
	uclampset -p "$p2" -M $((1024 - (i % 2) * 700))
	i=$((i + 1))
done
check "vCPU1 busy and reported" wait_vcpu 1 'f["idle"]==0'
stop_busy
check "vCPU1 idle again" wait_vcpu 1 'f["idle"]==1' 10
for g in performance schedutil; do
	for c in 0 1 2 3; do
		echo $g >/sys/devices/system/cpu/cpu$c/cpufreq/scaling_governor
	done
	busy 2
	sleep 0.5
	stop_busy
done
check "vCPU3 offline" sh -c 'echo 0 >/sys/devices/system/cpu/cpu3/online'
sleep 0.3
check "vCPU3 online" sh -c 'echo 1 >/sys/devices/system/cpu/cpu3/online'
busy 3 -m 512
check "vCPU3 reports again" wait_vcpu 3 'f["online"]==1 && f["idle"]==0' 10
stop_busy
sleep 0.5
echo 0 >"$T/tracing_on"

# lost_events: the per-CPU buffers' overrun and dropped-event counts.
lost_events() {
	cat "$T"/per_cpu/cpu*/stats | awk '/^(overrun|dropped events):/ { n += $NF } END { print n + 0 }'
}
check_output "the trace lost no event" '^0$' lost_events
# The trace split at the marker: allocations naming the module before it
# (the probe's) and after it.  An allocation is its event line and the
# stack after it ("<stack trace>", then one "=>" line a frame); it is the
# module's if any of those names the module, and excused if its stack
# passes through a debugfs open or the cpufreq registration's work.
cat "$T/trace" >/tmp/alloc.trace
awk '
	function done_one() {
		if (mod && !excused) {
			if (marker)
				n_after++
			else
				n_before++
		}
		mod = 0
		excused = 0
	}
	/: freqhint: probed$/ { done_one(); marker++; next }
	/<stack trace>$/ { next }
	!/^ => / { done_one() }
	/=> (fh_[a-z_]*_open|vfh_cpufreq_fn)\+/ { excused = 1 }
	/\[virtio_freqhint\]/ { mod = 1 }
	END { done_one(); printf "marker %d before %d after %d\n", marker, n_before, n_after >"/tmp/alloc.count" }
' /tmp/alloc.trace
cat /tmp/alloc.count
echo "the probe's, first lines:"
grep -m 8 '\[virtio_freqhint\]' /tmp/alloc.trace
check_output "the marker is in the trace, once" '^marker 1 ' cat /tmp/alloc.count
check_output "the detector sees the probe's allocations" ' before [1-9]' cat /tmp/alloc.count
check_output "no allocation by the module after probe" ' after 0$' cat /tmp/alloc.count
if ! grep -q ' after 0$' /tmp/alloc.count; then
	# Which functions of the module, how often, and the first stacks.
	awk 'f && /\[virtio_freqhint\]/ { sub(/.*(=> |call_site=)/, ""); sub(/\+.*/, ""); n[$0]++ }
		/: freqhint: probed$/ { f = 1 }
		END { for (k in n) print "after probe: " n[k] " x " k }' /tmp/alloc.trace
	awk 'f || /: freqhint: probed$/ { f = 1; print }' /tmp/alloc.trace |
		grep -B14 -A1 '\[virtio_freqhint\]' | head -n 60
fi
echo "trace: $(grep -c ': kmalloc:' /tmp/alloc.trace) kmalloc, $(grep -c ': kmem_cache_alloc:' /tmp/alloc.trace) kmem_cache_alloc, $(grep -c ': mm_page_alloc:' /tmp/alloc.trace) mm_page_alloc events"
check "rmmod" rmmod virtio_freqhint
check "no kernel warnings" dmesg_clean
done_testing
