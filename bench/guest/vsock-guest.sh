#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Runs inside the vsock benchmark's guest (bench/guest/vsock.sh, through
# tests/vsock-guest/run.sh): figure 1's bursty load with the module on the
# vsock transport.  freqhintd (cpufreq backend on the fixture host at
# /opt/fx, vCPU i placed on fixture CPU 2i, the guest's perf request not a
# floor: the device boot's settings) and freqhint-vsockd run in this guest;
# the module reaches them over vsock_loopback (CID 1).  Counted over the
# load: schedutil's requests to the driver (kprobes, as on the device), the
# HINTS frames the module sent (debugfs: each one a send on the vsock
# socket, where the device path has a virtqueue notification), every frame
# it sent, and the HINTS frames freqhintd received from the front end.
# The counts go to the console as one line:
#   FREQHINT-BENCH-VSOCK: calls=N frames=N frames_out=N records=N agent_frames=N guest_seconds=S series=...
. /lib/freqhint/test-lib.sh
# shellcheck disable=SC1091
. /opt/fh/vsock-lib.sh
# shellcheck source-path=SCRIPTDIR source=load-lib.sh
. /lib/freqhint/bench-load.sh
. /etc/freqhint-bench.env

VS=/sys/kernel/debug/virtio_freqhint_vsock
FH_STATS=/sys/kernel/debug/virtio_freqhint/statistics
# The host's daemons on vCPU0 (started from this shell, pinned there
# meanwhile): on the device boot the host side is outside the guest; here
# it takes as little of the load's vCPUs as it can.
mask=$(taskset -p $$)
mask=${mask##* }
taskset -p 1 $$ >/dev/null

# The kernel's vsock modules, where it does not build them in.
[ ! -r "$FH/kmod/load-order" ] || load_vsock
start_host 4
kill -TERM "$FH_DAEMON"
wait "$FH_DAEMON"
sed -i '/^ceiling=/d' "$W/freqhintd.conf"
printf 'cpus=0,2,4,6\n[merge]\nperf_as_floor=false\n' >>"$W/freqhintd.conf"
$FH/freqhintd --config "$W/freqhintd.conf" --backend cpufreq --sysfs-root /opt/fx/sys \
	--proc-root /proc --socket "$W/dev.sock" --control-socket "$W/ctl.sock" \
	--state-dir "$W/state" --libvirt-uri none >>"$W/freqhintd.log" 2>&1 &
FH_DAEMON=$!
wait_for "freqhintd drives the fixture's policies" 'cpufreq' ctl status
chmod 0755 /

check "insmod virtio_freqhint transport=vsock vsock_cid=1" \
	insmod /modules/virtio_freqhint.ko transport=vsock vsock_cid=1
wait_for "the link is up" '^up cid=1 port=853$' cat "$VS/state"
wait_for "VM loop is served over vsock" '"transport" *: *"vsock"' ctl --json vms
wait_for "the module drives cpufreq with the host's table" '^virtio-freqhint$' \
	cat /sys/devices/system/cpu/cpufreq/policy3/scaling_driver
TR=/sys/kernel/tracing
mount -t tracefs nodev "$TR" 2>/dev/null || TR=/sys/kernel/debug/tracing
check "tracefs" test -w "$TR/kprobe_events"
echo 0 >"$TR/tracing_on"
kprobes
for g in /sys/devices/system/cpu/cpufreq/policy*/scaling_governor; do
	echo schedutil >"$g"
done
check "schedutil governs" grep -q schedutil /sys/devices/system/cpu/cpufreq/policy0/scaling_governor
sleep 2

agent_frames() { ctl --json status | sed -n 's/.*"hints_frames_total" *: *\([0-9]*\).*/\1/p'; }
c0=$(calls) b0=$(cat "$FH_STATS/buffers_sent") r0=$(cat "$FH_STATS/records_sent")
f0=$(cat "$VS/frames_out") a0=$(agent_frames)
t0=$(cut -d' ' -f1 /proc/uptime)
# The load's tasks may run on every vCPU, as on the device boot.
taskset -p "$mask" $$ >/dev/null
echo "the bursty load, ${FREQHINT_BENCH_BURST_S:-20} s"
run_load "${FREQHINT_BENCH_BURST_S:-20}"
echo "the load ended"
taskset -p 1 $$ >/dev/null
t1=$(cut -d' ' -f1 /proc/uptime)
c1=$(calls) b1=$(cat "$FH_STATS/buffers_sent") r1=$(cat "$FH_STATS/records_sent")
f1=$(cat "$VS/frames_out") a1=$(agent_frames)
check "the load made requests" test $((c1 - c0)) -gt 0
check "the module sent HINTS" test $((b1 - b0)) -gt 0
check "freqhintd received HINTS" test "$((${a1:-0} - ${a0:-0}))" -gt 0
check_output "the link stayed up" '^up ' cat "$VS/state"
check_output "one connection all along" '^1$' cat "$VS/connects"
echo "FREQHINT-BENCH-VSOCK: calls=$((c1 - c0)) frames=$((b1 - b0)) frames_out=$((f1 - f0))" \
	"records=$((r1 - r0)) agent_frames=$((${a1:-0} - ${a0:-0}))" \
	"guest_seconds=$(echo "$t1 $t0" | awk '{ printf "%.1f", $1 - $2 }') series=$series"

check "rmmod" rmmod virtio_freqhint
show_logs
stop_host
done_testing
