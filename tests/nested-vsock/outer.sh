#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs as /test.sh in the outer guest of tests/nested-vsock/run.sh: the
# host.  Debian's kernel with vhost_vsock, freqhintd (cpufreq backend on the
# fixture host at /opt/fx: 800 MHz..3.2 GHz, 400 MHz steps) and
# freqhint-vsockd on port 853, then Debian's QEMU (/opt/qemu) starting the
# inner guest with vhost-vsock-pci, guest CID 3.  freqhintd knows that VM
# by its [vm inner] section only: vsock_cid=3, the pidfile QEMU writes, its
# vCPUs placed on fixture CPUs 0 and 2, an operator ceiling of 75 %.
# The inner guest (inner.sh) drives the story over its second serial port
# (tests/harness/step-lib.sh); the checks of the host's side are here.
# With /opt/inner/probe (run.sh --probe) the inner guest only boots, and
# this test reports how long that took.
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=../vsock-guest/vsock-lib.sh
. /opt/fh/vsock-lib.sh

CID=3
FXP=/opt/fx/sys/devices/system/cpu/cpufreq

check "outer: Debian's stock kernel" grep -q 'amd64$' /proc/sys/kernel/osrelease
load_vsock
check "/dev/vhost-vsock exists (vhost_vsock loaded)" test -c /dev/vhost-vsock
check_output "Debian's QEMU runs here" '^QEMU emulator version 7\.2\.[0-9]+ \(Debian ' \
	/opt/qemu/qemu-system-x86_64 -version

# freqhintd and its front end, as on a host without libvirt.
host_prepare
cat >>$W/freqhintd.conf <<EOC
[vm inner]
pidfile=$W/inner.pid
vsock_cid=$CID
cpus=0,2
ceiling=75
EOC
$FH/freqhintd --config $W/freqhintd.conf --backend cpufreq --sysfs-root /opt/fx/sys \
	--proc-root /proc --socket $W/dev.sock --control-socket $W/ctl.sock \
	--state-dir $W/state --libvirt-uri none -v >$W/freqhintd.log 2>&1 &
FH_DAEMON=$!
wait_for "freqhintd drives the fixture's policies" 'cpufreq' ctl status
start_vsockd
floor0=$(cat $FXP/policy2/scaling_min_freq)

# The inner guest.  Its clock: the outer's TSC rate (run-guest.sh's reason).
tsc=$(tr ' ' '\n' </proc/cmdline | grep '^tsc_early_khz=')
ctl_args=
if [ ! -e /opt/inner/probe ]; then
	mkfifo $W/ctl.in $W/ctl.out
	ctl_args="-chardev pipe,id=ctl,path=$W/ctl -serial chardev:ctl"
fi
# (created first, so that the tail below has a file to follow)
: >$W/inner.log
t0=$(date +%s)
# shellcheck disable=SC2086 # $ctl_args: words
/opt/qemu/qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot \
	-machine q35 -accel tcg -cpu qemu64,vendor=GenuineIntel,family=6,model=85 \
	-smp 2 -m 256M -name inner,debug-threads=on -pidfile $W/inner.pid \
	-device vhost-vsock-pci,guest-cid=$CID \
	-kernel /opt/inner/bzImage -initrd /opt/inner/initrd \
	-append "console=ttyS0 panic=-1 rdinit=/init $tsc" \
	-chardev file,id=con,path=$W/inner.log,append=on -serial chardev:con $ctl_args \
	</dev/null >$W/qemu.log 2>&1 &
INNER=$!
# The inner console on this one, as it comes.
tail -n +1 -f $W/inner.log 2>/dev/null | sed 's/^/inner| /' &
TAIL=$!

# within S CMD...: CMD succeeds within S seconds (by the clock).
within() {
	wi_end=$(($(date +%s) + $1))
	shift
	while ! "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt $wi_end ] || return 1
		sleep 1
	done
}
threads() { cat /proc/$INNER/task/*/comm; }
has_thread() { threads | grep -q "$1"; }
check "Debian's QEMU started the inner guest (pidfile)" within 120 test -s $W/inner.pid
check_output "... the pidfile names it" "^$INNER\$" cat $W/inner.pid
check "... its vCPU threads are named (debug-threads)" within 120 has_thread 'CPU 1/TCG'
check "... with a vhost-vsock device: the host kernel's vhost task" \
	within 300 has_thread "^vhost-$INNER\$"

# inner_time WHAT PATTERN: when the inner console showed PATTERN, in outer
# seconds since QEMU started (waits for it, at most until QEMU exits).
inner_time() {
	while ! grep -q "$2" $W/inner.log 2>/dev/null; do
		kill -0 $INNER 2>/dev/null || { echo "NESTED-TIME: $1 never"; return 1; }
		sleep 1
	done
	echo "NESTED-TIME: $1 at $(($(date +%s) - t0)) s"
}

if [ -e /opt/inner/probe ]; then
	inner_time "inner kernel's first line" 'Linux version'
	inner_time "inner /init" 'FREQHINT-INIT: start'
	inner_time "inner poweroff" 'FREQHINT-INIT: poweroff'
	wait $INNER
	check "the inner QEMU exits by itself" test $? = 0
	echo "NESTED-TIME: inner QEMU exited at $(($(date +%s) - t0)) s"
	kill $TAIL
	stop_host
	done_testing
fi

# The story, step by step as the inner guest reaches each (step-lib.sh).
exec 4<>$W/ctl.out 5<>$W/ctl.in
# next_step: the inner guest's next "STEP NAME" ($step); fails when its
# QEMU is gone.
next_step() {
	while :; do
		# shellcheck disable=SC3045 # busybox sh has read -t
		if read -r -t 10 ns_line <&4; then
			case "$ns_line" in
			STEP\ *) step=${ns_line#STEP }; echo "inner step: $step"; return 0 ;;
			esac
		elif ! kill -0 $INNER 2>/dev/null; then
			return 1
		fi
	done
}
# verdict CHECK...: the last check's result to the inner guest.
verdict() {
	v_failed=$fh_failed
	"$@"
	if [ "$fh_failed" = "$v_failed" ]; then echo GO >&5; else echo "NO see the host's log" >&5; fi
}
host_connected() {
	wait_for "VM inner is served over vsock" '"transport" *: *"vsock"' ctl --json vms
	check_output "... as CID 3, the host's vhost-vsock-pci guest-cid" "\"vsock_cid\" *: *$CID" ctl --json vms
	check_output "the front end logged CID 3 from the kernel" "CID $CID: served \\(2 vCPUs" cat $W/vsockd.log
	show_logs
}
# The inner task has its clamp when the step comes; its hint follows
# (waited for: the inner guest runs at a fraction of a TCG guest's pace).
clamp_seen() { test "$(hint_field inner 1 min)" = 1024; }
host_clamp() {
	check "vCPU 1's clamp reached freqhintd (its hint's min is 1024)" \
		within 600 clamp_seen
	clamp_seen || ctl --json vcpus inner | sed 's/^/    | /'
	check "policy2's floor rises to 2.4 GHz (capped by the ceiling)" \
		within 600 grep -q '^2400000$' $FXP/policy2/scaling_min_freq
}
host_idle() {
	check "policy2's floor returns" within 600 grep -q "^$floor0\$" $FXP/policy2/scaling_min_freq
}
seen=
while next_step; do
	seen="$seen $step"
	case "$step" in
	connected) verdict host_connected ;;
	clamp) verdict host_clamp ;;
	idle) verdict host_idle ;;
	end) echo GO >&5; break ;;
	*) echo "NO unknown step" >&5 ;;
	esac
done
check_output "the inner guest went through every step" '^ connected clamp idle end$' echo "$seen"
wait_for "the module gone, VM inner has no connection" '"connected" *: *false' ctl --json vms
wait $INNER
check "the inner QEMU exits by itself" test $? = 0
echo "NESTED-TIME: inner QEMU exited at $(($(date +%s) - t0)) s"
check_output "the inner guest's own checks passed" '^FREQHINT-TEST-RESULT: PASS' cat $W/inner.log
kill $TAIL
# The stream above may stop short of the file's last lines (tail polls it);
# the copy judged on the host is the whole file, printed once the inner QEMU
# has exited.
sed 's/^/inner-log| /' $W/inner.log
show_logs
stop_host
done_testing
