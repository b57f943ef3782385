#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# stock-test.sh   (run by harness.sh with --emulator /usr/bin/qemu-system-x86_64,
# inside its namespace)
#
# Issue 38: a domain on the distribution's own QEMU -- no freqhint device, no
# connection to freqhintd, no guest driver -- is capped by its operator
# ceiling from libvirt's records alone (merge rules MR-27 to MR-29).  The
# guest is a 512-byte boot sector that spins (`jmp $`), so its one vCPU
# thread is busy under TCG; it is pinned to host CPU 1, which is in the
# fixture's policy0.  freqhintd reads the real /proc and libvirt's real
# status files (/run/libvirt/qemu), writes fixture sysfs:
#   - <ceiling>25</ceiling> in the domain's metadata caps policy0;
#   - a live `virsh metadata` moves the cap; a floor is granted while the
#     vCPU thread is busy and released while the domain is paused;
#   - a libvirtd restart and a freqhintd restart keep the cap;
#   - `virsh destroy` releases it;
#   - a Nova instance on stock QEMU is capped by its flavor's mapping (LM-13).
# Needs FREQHINTD, FREQHINTCTL, MKFIXTURE (meson sets them).
set -uo pipefail
. "$FH_HARNESS"

for v in FREQHINTD FREQHINTCTL MKFIXTURE; do
	[ -x "${!v:-}" ] || { echo "FAIL: \$$v is not an executable"; exit 1; }
done
"$FREQHINTD" --help | grep -- --libvirt-uri >/dev/null ||
	{ echo "FAIL: freqhintd is built without the libvirt watcher (no --libvirt-uri)"; exit 1; }
! "$FH_EMULATOR" -device help 2>/dev/null | grep -q '"virtio-freqhint-pci"' ||
	{ echo "FAIL: $FH_EMULATOR has the freqhint device: this test is about a stock QEMU"; exit 1; }

ns=urn:freqhint:metadata:1
T=$FH_HARNESS_DIR
FX=$T/fx
POL=$FX/sys/devices/system/cpu/cpufreq
LIVE=20
# the freqhintd running now, stopped with the test
DPID=
trap '[ -z "$DPID" ] || { kill "$DPID"; wait "$DPID"; } 2>/dev/null' EXIT

fail() {
	log "FAIL: $*"
	echo "--- policy0 now: $(cat "$POL/policy0/scaling_min_freq" "$POL/policy0/scaling_max_freq" 2>&1 | tr '\n' ' ')"
	echo "--- freqhintctl vms / vcpus"
	ctl --json vms 2>&1 | head -40
	ctl --json vcpus 2>&1 | head -60
	echo "--- freqhintd log (tail)"; tail -40 "$T/daemon.log"
	exit 1
}
set_md() {
	virsh -q -c "$FH_LIBVIRT_URI" metadata fh-stock "$ns" --live --key fh --set "$1" >/dev/null ||
		fail "virsh metadata $1"
}
limits_are() { file_is "$POL/policy0/scaling_min_freq" "$1" && file_is "$POL/policy0/scaling_max_freq" "$2"; }

start_freqhintd() {
	"$FREQHINTD" --config "$T/freqhintd.conf" --backend cpufreq --libvirt-uri "$FH_LIBVIRT_URI" --no-metrics \
		--sysfs-root "$FX/sys" --proc-root /proc --cgroup-root "$FX/cgroup" \
		--socket "$T/dev.sock" --control-socket "$T/ctl.sock" --state-dir "$T/state" \
		-v >>"$T/daemon.log" 2>&1 &
	DPID=$!
	within 10 "freqhintd answers" answers
}
answers() { ctl status >/dev/null 2>&1; }
stop_freqhintd() {
	local rc=0
	kill -TERM "$DPID"
	wait "$DPID" || rc=$?
	DPID=
	[ $rc = 0 ] || fail "freqhintd exited with status $rc"
}

# A boot sector that spins: jmp $ (EB FE), the 0x55AA signature at 510.
printf '\xeb\xfe' >"$T/spin.img"
truncate -s 510 "$T/spin.img"
printf '\x55\xaa' >>"$T/spin.img"
truncate -s 1M "$T/spin.img"

"$MKFIXTURE" host "$FX"
# an OpenStack flavor mapped to a ceiling (LM-13), for the domain at the end
printf '[daemon]\npoll_interval_ms=200\n[nova-flavor m1.eco]\nceiling=50\n' >"$T/freqhintd.conf"
start_freqhintd

cat >"$T/stock.xml" <<EOF
<domain type='qemu'>
  <name>fh-stock</name>
  <memory unit='MiB'>32</memory>
  <vcpu placement='static'>1</vcpu>
  <cputune><vcpupin vcpu='0' cpuset='1'/></cputune>
  <metadata><fh:freqhint xmlns:fh='$ns'><fh:ceiling>25</fh:ceiling></fh:freqhint></metadata>
  <os><type arch='x86_64' machine='pc'>hvm</type><boot dev='hd'/></os>
  <on_poweroff>destroy</on_poweroff>
  <devices>
    <emulator>$FH_EMULATOR</emulator>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw'/>
      <source file='$T/spin.img'/>
      <target dev='hda' bus='ide'/>
    </disk>
    <memballoon model='none'/>
  </devices>
</domain>
EOF
virsh -q -c "$FH_LIBVIRT_URI" define "$T/stock.xml" >/dev/null && virsh -q -c "$FH_LIBVIRT_URI" start fh-stock >/dev/null ||
	fail "the stock domain did not start"
uuid=$(virsh -q -c "$FH_LIBVIRT_URI" domuuid fh-stock)
qpid=$(cat /run/libvirt/qemu/fh-stock.pid)
# libvirt's own record of the vCPU thread (query-cpus-fast), what freqhintd must count
vtid=$(sed -n "s/.*<vcpu id='0' pid='\([0-9]*\)'.*/\1/p" /run/libvirt/qemu/fh-stock.xml | head -1)
[ -n "$vtid" ] || fail "libvirt's status file records no vCPU thread"
log "fh-stock: QEMU $qpid, vCPU 0 thread $vtid"

within $LIVE "the stock domain is known from libvirt" \
	jq_is ".[] | select(.uuid==\"$uuid\") | [.state_source, .host_record, .pid] | join(\",\")" "host,libvirt,$qpid" vms
jq_is '.[0].tid' "$vtid" vcpus fh-stock || fail "the vCPU thread is not libvirt's"
jq_is '.[0].cpu' 1 vcpus fh-stock || fail "the vCPU is not placed on CPU 1 (vcpupin)"
within $LIVE "<ceiling>25</ceiling> caps policy0" file_is "$POL/policy0/scaling_max_freq" 800000
jq_is '.[] | select(.cpu==1) | .policy_cap_vm.name' fh-stock cpus || fail "the cap's holder is not named"
jq_is '.connected_vms' 0 status || fail "a connection appeared"

set_md '<freqhint><ceiling>50</ceiling></freqhint>'
within $LIVE "a live virsh metadata moves the cap" file_is "$POL/policy0/scaling_max_freq" 1600000

# MR-29: the spinning vCPU thread is busy: the floor is granted; paused, it is not
set_md '<freqhint><floor>50</floor><ceiling>75</ceiling></freqhint>'
within $LIVE "the busy vCPU gets its floor" limits_are 1600000 2400000
jq_is '.[0].activity_source' host vcpus fh-stock || fail "the activity is not the host's view"
virsh -q -c "$FH_LIBVIRT_URI" suspend fh-stock >/dev/null || fail "virsh suspend"
within $LIVE "paused, the floor is released and the ceiling holds" limits_are 800000 2400000
virsh -q -c "$FH_LIBVIRT_URI" resume fh-stock >/dev/null || fail "virsh resume"
within $LIVE "running again, the floor is back" limits_are 1600000 2400000
set_md '<freqhint><ceiling>25</ceiling></freqhint>'
within $LIVE "ceiling 25 again" limits_are 800000 800000

# libvirtd restart: its records stay, the cap with them; events flow again after
libvirtd_stop
sleep 1
file_is "$POL/policy0/scaling_max_freq" 800000 || fail "libvirtd going away released the cap"
libvirtd_start
reconnected() { [ "$(grep -c 'libvirt: connected to' "$T/daemon.log")" -ge 2 ]; }
within 20 "freqhintd reconnects to libvirtd" reconnected
file_is "$POL/policy0/scaling_max_freq" 800000 || fail "the libvirtd restart released the cap"
set_md '<freqhint><ceiling>50</ceiling></freqhint>'
within $LIVE "after the libvirtd restart the cap still follows metadata" \
	file_is "$POL/policy0/scaling_max_freq" 1600000
set_md '<freqhint><ceiling>25</ceiling></freqhint>'
within $LIVE "ceiling 25" file_is "$POL/policy0/scaling_max_freq" 800000

# freqhintd restart: its exit restores the host's limits, its start finds the domain again
stop_freqhintd
file_is "$POL/policy0/scaling_max_freq" 3200000 || fail "freqhintd's exit left the cap"
start_freqhintd
within $LIVE "after a freqhintd restart the cap is back" file_is "$POL/policy0/scaling_max_freq" 800000

virsh -q -c "$FH_LIBVIRT_URI" destroy fh-stock >/dev/null || fail "virsh destroy"
within $LIVE "virsh destroy releases the cap" file_is "$POL/policy0/scaling_max_freq" 3200000
within $LIVE "and the domain leaves freqhintctl vms" jq_is 'length' 0 vms

# A Nova instance on stock QEMU: its flavor's mapping caps it, no element of ours in the domain
sed -e 's/fh-stock/fh-nova/' \
	-e "s|<metadata>.*</metadata>|<metadata><nova:instance xmlns:nova='http://openstack.org/xmlns/libvirt/nova/1.1'><nova:flavor name='m1.eco'/></nova:instance></metadata>|" \
	"$T/stock.xml" >"$T/nova.xml"
virsh -q -c "$FH_LIBVIRT_URI" create "$T/nova.xml" >/dev/null || fail "the Nova domain did not start"
within $LIVE "a stock Nova instance is capped by its flavor" file_is "$POL/policy0/scaling_max_freq" 1600000
jq_is '.[0] | [.name, .state_source, .operator.max] | join(",")' "fh-nova,host,512" vms ||
	fail "the Nova domain's state: $(ctl --json vms | jq -c '.[0] | [.name, .state_source, .operator]')"
virsh -q -c "$FH_LIBVIRT_URI" destroy fh-nova >/dev/null || fail "virsh destroy fh-nova"
within $LIVE "destroyed, released" file_is "$POL/policy0/scaling_max_freq" 3200000

stop_freqhintd
! grep -qE 'CRITICAL|GLib-WARNING|Sanitizer|runtime error' "$T/daemon.log" || fail "GLib/sanitizer report in the log"
log "PASS"
exit 0
