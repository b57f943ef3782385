#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# daemon-test.sh   (run by harness.sh, inside its namespace)
#
# freqhintd following libvirt live, on fixture sysfs (tests/agent/mkfixture.sh):
#   A. a domain whose XML came from `freqhintctl libvirt-xml FILE`, on the
#      project's QEMU with the device: it connects to freqhintd, shows in
#      `freqhintctl vms` with its operator settings from libvirt, and
#      `virsh destroy` drops it from the list;
#   B. the frequency: a device connection carrying the domain's UUID
#      (fh-testclient, so the vCPU is active without a guest driver) on a
#      fixture CPU; `virsh metadata --live` lowering the ceiling moves
#      scaling_max_freq (through the live event), raising it restores, an invalid
#      value is logged with the domain's name and ignored (defaults apply),
#      a libvirtd restart is survived, and `virsh destroy` drops the
#      domain's settings.
# Needs FREQHINTD, FREQHINTCTL, FH_TESTCLIENT, MKFIXTURE (meson sets them).
set -uo pipefail
. "$FH_HARNESS"

for v in FREQHINTD FREQHINTCTL FH_TESTCLIENT MKFIXTURE; do
	[ -x "${!v:-}" ] || { echo "FAIL: \$$v is not an executable"; exit 1; }
done
"$FREQHINTD" --help | grep -- --libvirt-uri >/dev/null ||
	{ echo "FAIL: freqhintd is built without the libvirt watcher (no --libvirt-uri)"; exit 1; }
"$FH_EMULATOR" -device help 2>/dev/null | grep '"virtio-freqhint-pci"' >/dev/null ||
	{ echo "FAIL: $FH_EMULATOR has no virtio-freqhint-pci"; exit 1; }

uri=$FH_LIBVIRT_URI
ns=urn:freqhint:metadata:1
T=$FH_HARNESS_DIR
FX=$T/fx
POL=$FX/sys/devices/system/cpu/cpufreq
DPID=
CPID=

fail() {
	log "FAIL: $*"
	echo "--- policy2 now: $(cat "$POL/policy2/scaling_min_freq" "$POL/policy2/scaling_max_freq" 2>&1 | tr '\n' ' ')"
	echo "--- freqhintctl vms / vcpus fh-e2e-vm"
	ctl --json vms 2>&1 | head -40
	ctl --json vcpus fh-e2e-vm 2>&1 | head -60
	echo "--- freqhintd log (tail; the harness keeps the whole scratch dir on failure)"; tail -40 "$T/daemon.log"
	[ -f "$T/client.out" ] && { echo "--- client"; cat "$T/client.out"; }
	exit 1
}
cleanup() {
	if [ -n "$CPID" ]; then kill "$CPID" 2>/dev/null || true; fi
	if [ -n "$DPID" ]; then kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null || true; fi
	return 0
}
trap cleanup EXIT

# Live changes (within, from harness.sh) get $LIVE seconds: freqhintd does not poll libvirt metadata,
# so a change seen at all came through the live event; how fast is logged
# ("ok: ... (N ms)"), and is a figure, not a pass/fail line on a busy host.
LIVE=10
set_md() {
	virsh -q -c "$uri" metadata "$1" "$ns" --live --key fh --set "$2" >/dev/null ||
		fail "virsh metadata $1 $2"
}

domain_xml() { # NAME [EXTRA-METADATA]
	cat <<-EOF
		<domain type='qemu'>
		  <name>$1</name>
		  <memory unit='MiB'>64</memory>
		  <vcpu placement='static'>2</vcpu>
		  ${2:-}
		  <os><type arch='x86_64' machine='pc'>hvm</type></os>
		  <on_poweroff>destroy</on_poweroff>
		  <devices>
		    <emulator>$FH_EMULATOR</emulator>
		    <memballoon model='none'/>
		  </devices>
		</domain>
	EOF
}

# --- freqhintd on a fixture tree, following the private libvirtd ------------
"$MKFIXTURE" host "$FX"
"$MKFIXTURE" thread "$FX" 801 2 2 /machine.slice
# freqhintd takes a peer's identity from <proc-root>/<pid>/cmdline (PA-18):
# fh-testclient links its own into the fixture (FH_PROC_FIXTURE), QEMU's is
# linked below once libvirt has started it.
export FH_PROC_FIXTURE=$FX/proc
# libvirt's record of its domains' processes (PA-22) is read from a copy
# the test controls: the real status file of fh-dev-vm is copied there (A);
# fh-testclient stands in for fh-e2e-vm's QEMU, which libvirt's record would
# refuse, so that domain's record is left out (B).
mkdir -m 0755 "$T/lv"
printf '[daemon]\npoll_interval_ms=100\nlibvirt_state_dir=%s\n' "$T/lv" >"$T/freqhintd.conf"
"$FREQHINTD" --config "$T/freqhintd.conf" --backend cpufreq --libvirt-uri "$uri" --no-metrics \
	--sysfs-root "$FX/sys" --proc-root "$FX/proc" --cgroup-root "$FX/cgroup" \
	--socket "$T/dev.sock" --control-socket "$T/ctl.sock" --state-dir "$T/state" \
	-v >"$T/daemon.log" 2>&1 &
DPID=$!
answers() { ctl status >/dev/null 2>&1; }
within 10 "freqhintd answers" answers
within 10 "freqhintd connected to libvirt" grep -q 'libvirt: connected to' "$T/daemon.log"

# --- A. the real device, XML from freqhintctl libvirt-xml ----------------------
domain_xml fh-dev-vm >"$T/dev-vm.xml"
ctl libvirt-xml --device-socket "$T/dev.sock" "$T/dev-vm.xml" >"$T/dev-vm-fh.xml" ||
	fail "freqhintctl libvirt-xml FILE"
# Idempotent: a second pass changes nothing.
ctl libvirt-xml --device-socket "$T/dev.sock" "$T/dev-vm-fh.xml" | cmp -s - "$T/dev-vm-fh.xml" ||
	fail "libvirt-xml is not idempotent"
virsh -q -c "$uri" define "$T/dev-vm-fh.xml" >/dev/null || fail "virsh define rejected the XML"
# The inserted pieces survive libvirt's own parsing.
ctl libvirt-xml fh-dev-vm --libvirt-uri "$uri" | cmp -s - <(virsh -q -c "$uri" dumpxml --inactive fh-dev-vm | ctl libvirt-xml -) ||
	fail "libvirt-xml DOMAIN and libvirt-xml - disagree"
virsh -q -c "$uri" dumpxml --inactive fh-dev-vm | grep 'virtio-freqhint-pci,backend=freqhint0-agent' >/dev/null ||
	fail "libvirt dropped the device arguments"
virsh -q -c "$uri" start fh-dev-vm >/dev/null || fail "the device domain did not start"
dev_uuid=$(virsh -q -c "$uri" domuuid fh-dev-vm)
# QEMU in the fixture /proc: the process (its identity, PA-18) and its
# threads (vCPU thread ids are checked at HELLO, PA-7) link to the real
# ones.  QEMU reconnects every second until freqhintd accepts it.
qpid=$(cat "/run/libvirt/qemu/fh-dev-vm.pid") || fail "no pid file for fh-dev-vm"
link_qemu() {
	local t
	for t in "$qpid" $(ls "/proc/$qpid/task"); do
		[ -e "$FX/proc/$t" ] || ln -s "/proc/$t" "$FX/proc/$t"
	done
}
dev_listed() {
	link_qemu
	jq_is ".[] | select(.uuid==\"$dev_uuid\") | .name" fh-dev-vm vms
}
within 20 "the device's VM is listed" dev_listed
# PA-22 on libvirt's real record: a process that is not fh-dev-vm's QEMU,
# its argv rewritten to fh-dev-vm's -name/-uuid, is refused; the name, the
# UUID and the pid come from the status file libvirt wrote.
cp "/run/libvirt/qemu/fh-dev-vm.xml" "$T/lv/.new" && mv "$T/lv/.new" "$T/lv/fh-dev-vm.xml" ||
	fail "no libvirt status file for fh-dev-vm"
timeout 20 "$FH_TESTCLIENT" --socket "$T/dev.sock" --name fh-dev-vm --uuid "$dev_uuid" --vcpus 1 \
	--hint 0:1024:1024 --expect-close permission >"$T/client-impostor.out" 2>&1 ||
	fail "an impostor of fh-dev-vm was not refused: $(cat "$T/client-impostor.out")"
grep -q "identity: HELLO claims libvirt domain \"fh-dev-vm\" ($dev_uuid), whose process is $qpid, not" \
	"$T/daemon.log" || fail "the refusal does not name libvirt's record of fh-dev-vm (pid $qpid)"
jq_is ".[] | select(.uuid==\"$dev_uuid\") | .pid" "$qpid" vms || fail "fh-dev-vm's QEMU was disturbed"
within $LIVE "its settings come from libvirt" jq_is ".[] | select(.name==\"fh-dev-vm\") | .operator_source" libvirt vms
set_md fh-dev-vm '<freqhint><ceiling>40</ceiling></freqhint>'
within $LIVE "its ceiling follows virsh metadata" jq_is ".[] | select(.name==\"fh-dev-vm\") | .operator.max" 410 vms
virsh -q -c "$uri" destroy fh-dev-vm >/dev/null
within $LIVE "virsh destroy drops it from freqhintctl vms" jq_is "[.[] | select(.name==\"fh-dev-vm\")] | length" 0 vms

# --- B. the frequency on a fixture CPU -----------------------------------------
domain_xml fh-e2e-vm "<metadata><fh:freqhint xmlns:fh='$ns'><fh:ceiling>50</fh:ceiling></fh:freqhint></metadata>" \
	>"$T/e2e-vm.xml"
virsh -q -c "$uri" define "$T/e2e-vm.xml" >/dev/null && virsh -q -c "$uri" start fh-e2e-vm >/dev/null ||
	fail "the fixture domain did not start"
uuid=$(virsh -q -c "$uri" domuuid fh-e2e-vm)
(
	"$MKFIXTURE" tgid "$FX" 801 "$BASHPID"
	exec "$FH_TESTCLIENT" --socket "$T/dev.sock" --name fh-e2e-vm --uuid "$uuid" --vcpus 1 \
		--tids 801 --hint 0:1024:1024
) >"$T/client.out" 2>&1 &
CPID=$!
within 10 "the vCPU is active" jq_is '.[0].active' true vcpus fh-e2e-vm
within $LIVE "ceiling 50% from libvirt applies" file_is "$POL/policy2/scaling_max_freq" 1600000
jq_is ".[] | select(.name==\"fh-e2e-vm\") | .operator_source" libvirt vms || fail "operator source"

# LM-10: a device with the domain's name but another (non-nil) UUID is a
# QEMU outside libvirt: no libvirt settings by name.  The nil UUID is
# matched by name.
other=0badc0de-0000-4000-8000-000000000001
nil=00000000-0000-0000-0000-000000000000
for u in $other $nil; do
	"$FH_TESTCLIENT" --socket "$T/dev.sock" --name fh-e2e-vm --uuid $u --vcpus 1 --hold 30 \
		>"$T/client-$u.out" 2>&1 &
	echo $! >"$T/client-$u.pid"
done
within 10 "the two look-alikes connect" jq_is '[.[] | select(.name=="fh-e2e-vm")] | length' 3 vms
jq_is ".[] | select(.uuid==\"$other\") | .operator_source" null vms ||
	fail "a non-libvirt UUID got the domain's settings by name"
jq_is ".[] | select(.uuid==\"$other\") | .operator.max" 1024 vms || fail "look-alike's ceiling"
jq_is ".[] | select(.uuid==\"$nil\") | .operator_source" libvirt vms ||
	fail "the nil UUID was not matched by name"
jq_is ".[] | select(.uuid==\"$nil\") | .operator.max" 512 vms || fail "nil UUID's ceiling"
for u in $other $nil; do kill "$(cat "$T/client-$u.pid")"; done
within $LIVE "the look-alikes are gone" jq_is '[.[] | select(.name=="fh-e2e-vm")] | length' 1 vms

set_md fh-e2e-vm '<freqhint><ceiling>25</ceiling></freqhint>'
within $LIVE "lowering the ceiling to 25% moves scaling_max_freq" file_is "$POL/policy2/scaling_max_freq" 800000
set_md fh-e2e-vm '<freqhint><ceiling>max</ceiling></freqhint>'
# Both files: a raised ceiling is written before the floor it lets through.
limits_are() { file_is "$POL/policy2/scaling_min_freq" "$1" && file_is "$POL/policy2/scaling_max_freq" "$2"; }
within $LIVE "raising it back restores, the guest's floor with it" limits_are 3200000 3200000

# Per-vCPU override (LM-5): vCPU 0 gets its own ceiling, and its grant says so.
set_md fh-e2e-vm '<freqhint><ceiling>50</ceiling><vcpu id="0" ceiling="25"/></freqhint>'
within $LIVE "a per-vCPU ceiling applies to its vCPU" file_is "$POL/policy2/scaling_max_freq" 800000
granted() { grep -q "$1" "$T/client.out"; }
within $LIVE "the vCPU is granted its own range" granted '^grants operator=0..512 0:0..256$'
# Guest hints off (LM-9): the vCPU holds nothing; the CPU gets its own limits back.
set_md fh-e2e-vm '<freqhint><guest-hints>off</guest-hints></freqhint>'
within $LIVE "guest-hints off releases the floor" file_is "$POL/policy2/scaling_min_freq" 800000
jq_is '.[0].active' false vcpus fh-e2e-vm || fail "vCPU still active with guest hints off"
set_md fh-e2e-vm '<freqhint><guest-hints>on</guest-hints></freqhint>'
within $LIVE "guest-hints on: the floor is back" file_is "$POL/policy2/scaling_min_freq" 3200000

set_md fh-e2e-vm '<freqhint><ceiling>25</ceiling></freqhint>'
within $LIVE "ceiling 25% again" file_is "$POL/policy2/scaling_max_freq" 800000
set_md fh-e2e-vm '<freqhint><ceiling>800</ceiling></freqhint>'
within $LIVE "an invalid value is ignored: the defaults apply" file_is "$POL/policy2/scaling_max_freq" 3200000
grep -q "domain \"fh-e2e-vm\" ($uuid): freqhint metadata ignored, defaults apply: .*percent" "$T/daemon.log" ||
	fail "the invalid value is not logged with the domain's name"

libvirtd_stop
within 20 "freqhintd notices libvirtd is gone" grep -q 'libvirt: connection to .* closed' "$T/daemon.log"
jq_is '.[0].active' true vcpus fh-e2e-vm || fail "the VM was disturbed by libvirtd going away"
libvirtd_start
reconnected() { [ "$(grep -c 'libvirt: connected to' "$T/daemon.log")" -ge 2 ]; }
within 10 "freqhintd reconnects" reconnected
set_md fh-e2e-vm '<freqhint><ceiling>50</ceiling></freqhint>'
within $LIVE "events flow after the reconnect" file_is "$POL/policy2/scaling_max_freq" 1600000

virsh -q -c "$uri" destroy fh-e2e-vm >/dev/null
within $LIVE "virsh destroy drops the domain's settings" \
	jq_is ".[] | select(.name==\"fh-e2e-vm\") | .operator_source" null vms
within $LIVE "the ceiling is released" file_is "$POL/policy2/scaling_max_freq" 3200000

kill -TERM "$DPID"
rc=0
wait "$DPID" || rc=$?
DPID=
[ $rc = 0 ] || fail "freqhintd exited with status $rc"
! grep -qE 'CRITICAL|GLib-WARNING|Sanitizer|runtime error' "$T/daemon.log" || fail "GLib/sanitizer report in the log"
log "PASS"
exit 0
