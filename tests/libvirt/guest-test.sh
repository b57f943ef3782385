#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# guest-test.sh SOURCE-ROOT   (run by harness.sh, inside its namespace)
#
# Every part real, started by libvirt: the project's uclamp guest kernel with
# virtio_freqhint.ko (tests/harness), a domain made with `freqhintctl
# libvirt-xml`, the project's QEMU, and freqhintd (cpufreq backend) on a
# fixture sysfs tree with the real /proc and cgroup tree.  The guest runs
# guest-hold.sh: a task on vCPU 1 under `uclampset -m 800` spinning.  The
# host's two CPUs are both in fixture policy0, wherever the vCPU runs.
#   - the guest's floor reaches policy0;
#   - `virsh metadata --live` lowering the ceiling to 50% caps policy0
#     (the floor with it: MR-11); raising it restores;
#   - `virsh destroy` drops the VM from `freqhintctl vms` and releases its
#     floor (policy0 back to its original limits).
# Needs FREQHINTD, FREQHINTCTL, MKFIXTURE (meson sets them).
set -uo pipefail
. "$FH_HARNESS"

src=$1
for v in FREQHINTD FREQHINTCTL MKFIXTURE; do
	[ -x "${!v:-}" ] || { echo "FAIL: \$$v is not an executable"; exit 1; }
done
"$FREQHINTD" --help | grep -- --libvirt-uri >/dev/null ||
	{ echo "FAIL: freqhintd is built without the libvirt watcher (no --libvirt-uri)"; exit 1; }

uri=$FH_LIBVIRT_URI
ns=urn:freqhint:metadata:1
dom=fh-guest-vm
T=$FH_HARNESS_DIR
FX=$T/fx
POL0=$FX/sys/devices/system/cpu/cpufreq/policy0
DPID=

fail() {
	log "FAIL: $*"
	echo "--- freqhintctl vms / vcpus $dom / cpus"
	ctl vms 2>&1 | head -20
	ctl vcpus "$dom" 2>&1 | head -20
	echo "--- policy0: $(cat "$POL0/scaling_min_freq" "$POL0/scaling_max_freq" | tr '\n' ' ')"
	echo "--- guest console"; tail -30 "$T/console.log" 2>/dev/null
	echo "--- freqhintd log (tail; the harness keeps the whole scratch dir on failure)"; tail -30 "$T/daemon.log"
	exit 1
}
cleanup() {
	if [ -n "$DPID" ]; then kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null || true; fi
	return 0
}
trap cleanup EXIT

# Live changes get $LIVE seconds: freqhintd does not poll libvirt metadata,
# so a change seen at all came through the live event; the time is logged.
LIVE=10
khz() { cat "$POL0/scaling_$1_freq"; }
# Both files at once: freqhintd writes a pair in an order that keeps
# min <= max (MR-20), so one file alone can be seen before the other.
limits_are() { [ "$(khz min)" = "$1" ] && [ "$(khz max)" = "$2" ]; }
is() { [ "$(khz "$1")" = "$2" ]; }
at_least() { [ "$(khz "$1")" -ge "$2" ]; }
listed() { [ "$(ctl --json vms 2>/dev/null | jq "[.[] | select(.name==\"$dom\")] | length")" = "$1" ]; }
ready() { grep -q FH-GUEST-READY "$T/console.log" 2>/dev/null; }
set_md() {
	virsh -q -c "$uri" metadata "$dom" "$ns" --live --key fh --set "$1" >/dev/null ||
		fail "virsh metadata $1"
}

# --- guest image (cached by the scripts themselves) ----------------------------
kdir=$("$src/tests/harness/build-kernel.sh" --print-dir) || fail "no guest kernel"
"$src/guest-driver/tests/build-module.sh" --cached uclamp "$T/virtio_freqhint.ko" >/dev/null ||
	fail "module build"
cc -static -O2 -Wall -o "$T/busy" "$src/tests/harness/busy.c" || fail "busy build"
initrd=$("$src/tests/harness/mkinitramfs.sh" --test "$src/tests/libvirt/guest-hold.sh" \
	--kernel "$kdir" --module "$T/virtio_freqhint.ko" --add "$T/busy:/bin/busy") ||
	fail "initramfs"

# --- freqhintd: fixture sysfs, the real threads ---------------------------------
"$MKFIXTURE" host "$FX"
# require_libvirt: QEMU is accepted only as the process libvirt's own
# record (/run/libvirt/qemu/NAME.xml) names for the domain (PA-22).
printf '[daemon]\npoll_interval_ms=100\nrequire_libvirt=true\n' >"$T/freqhintd.conf"
"$FREQHINTD" --config "$T/freqhintd.conf" --backend cpufreq --libvirt-uri "$uri" --no-metrics \
	--sysfs-root "$FX/sys" --proc-root /proc --cgroup-root /sys/fs/cgroup \
	--socket "$T/dev.sock" --control-socket "$T/ctl.sock" --state-dir "$T/state" \
	-v >"$T/daemon.log" 2>&1 &
DPID=$!
answers() { ctl status >/dev/null 2>&1; }
within 10 "freqhintd answers" answers

# --- the domain ------------------------------------------------------------------
cat >"$T/base.xml" <<-EOF
	<domain type='qemu'>
	  <name>$dom</name>
	  <memory unit='MiB'>512</memory>
	  <vcpu placement='static'>2</vcpu>
	  <os>
	    <type arch='x86_64' machine='q35'>hvm</type>
	    <kernel>$kdir/bzImage</kernel>
	    <initrd>$initrd</initrd>
	    <cmdline>console=ttyS0 panic=-1 rdinit=/init tsc_early_khz=2600000</cmdline>
	  </os>
	  <features><acpi/></features>
	  <on_poweroff>destroy</on_poweroff>
	  <on_crash>destroy</on_crash>
	  <devices>
	    <emulator>$FH_EMULATOR</emulator>
	    <serial type='file'><source path='$T/console.log'/></serial>
	    <memballoon model='none'/>
	  </devices>
	</domain>
EOF
ctl libvirt-xml --device-socket "$T/dev.sock" "$T/base.xml" >"$T/dom.xml" || fail "libvirt-xml"
virsh -q -c "$uri" define "$T/dom.xml" >/dev/null || fail "virsh define"
virsh -q -c "$uri" start "$dom" >/dev/null || fail "virsh start"
log "guest booting"
within 20 "the VM is in freqhintctl vms" listed 1
within 120 "the guest's load runs" ready
within 30 "the guest's floor reaches policy0" at_least min 2800000
vcpu1_min() { [ "$(ctl --json vcpus "$dom" 2>/dev/null | jq '.[1].request.min')" -ge 800 ]; }
within $LIVE "vCPU 1 requests at least 800 (uclampset -m 800)" vcpu1_min

# Live ceiling: 50% caps the vCPU's request, floor included (MR-11).
set_md '<freqhint><ceiling>50</ceiling></freqhint>'
within $LIVE "ceiling 50% caps policy0, the floor with it: 1600000..1600000" limits_are 1600000 1600000
set_md '<freqhint><ceiling>max</ceiling></freqhint>'
within $LIVE "raising the ceiling restores" is max 3200000
within $LIVE "the floor is back" at_least min 2800000

virsh -q -c "$uri" destroy "$dom" >/dev/null
within $LIVE "virsh destroy drops the VM from freqhintctl vms" listed 0
within $LIVE "policy0 back at its original limits 800000..3200000" limits_are 800000 3200000

kill -TERM "$DPID"
rc=0
wait "$DPID" || rc=$?
DPID=
[ $rc = 0 ] || fail "freqhintd exited with status $rc"
! grep -qE 'CRITICAL|GLib-WARNING|Sanitizer|runtime error' "$T/daemon.log" || fail "GLib/sanitizer report"
log "PASS"
exit 0
