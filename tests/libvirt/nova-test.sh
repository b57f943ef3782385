#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# nova-test.sh   (run by harness.sh, inside its namespace)
#
# OpenStack: freqhintd maps a domain's Nova flavor (<nova:instance> with
# <nova:flavor name=...>, written by Nova into <metadata>) to floors,
# ceilings and guest hints from [nova-flavor NAME] sections, against a real
# libvirtd and running TCG domains:
#   - a domain with only Nova metadata gets its flavor's settings;
#   - a domain with a freqhint element too: the element wins;
#   - a flavor without a section maps to nothing (defaults);
#   - Nova's metadata changed live (a resize) is followed;
#   - the frequency on a fixture CPU follows the flavor's floor; a flavor
#     with guest-hints=off makes the VM's hints count as none.
# Needs FREQHINTD, FREQHINTCTL, FH_TESTCLIENT, MKFIXTURE (meson sets them).
set -uo pipefail
. "$FH_HARNESS"

for v in FREQHINTD FREQHINTCTL FH_TESTCLIENT MKFIXTURE; do
	[ -x "${!v:-}" ] || { echo "FAIL: \$$v is not an executable"; exit 1; }
done
uri=$FH_LIBVIRT_URI
nova_ns=http://openstack.org/xmlns/libvirt/nova/1.1
T=$FH_HARNESS_DIR
FX=$T/fx
POL=$FX/sys/devices/system/cpu/cpufreq
DPID=
CPIDS=()

fail() {
	log "FAIL: $*"
	echo "--- freqhintctl vms"; ctl --json vms 2>&1 | head -60
	echo "--- freqhintd log"; tail -40 "$T/daemon.log"
	exit 1
}
cleanup() {
	local p
	for p in "${CPIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	if [ -n "$DPID" ]; then kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null || true; fi
	return 0
}
trap cleanup EXIT
vm_is() { jq_is ".[] | select(.name==\"$1\") | $2" "$3" vms; }

# Nova's element as Nova writes it (the parts freqhintd reads and a few around).
nova_md() { # FLAVOR
	printf '%s' "<nova:instance xmlns:nova=\"$nova_ns\">" \
		"<nova:package version=\"27.1.0\"/><nova:name>server-$1</nova:name>" \
		"<nova:creationTime>2026-12-03 10:00:00</nova:creationTime>" \
		"<nova:flavor name=\"$1\"><nova:memory>64</nova:memory><nova:disk>1</nova:disk>" \
		"<nova:swap>0</nova:swap><nova:ephemeral>0</nova:ephemeral><nova:vcpus>1</nova:vcpus></nova:flavor>" \
		"<nova:owner><nova:user uuid=\"0f0e\">demo</nova:user><nova:project uuid=\"0a0b\">demo</nova:project></nova:owner>" \
		"<nova:root type=\"image\" uuid=\"4d3c\"/></nova:instance>"
}
start_domain() { # NAME METADATA-INNER
	printf '%s\n' "<domain type='qemu'>" "<name>$1</name>" "<memory unit='MiB'>64</memory>" \
		"<vcpu placement='static'>1</vcpu>" "<metadata>$2</metadata>" \
		"<os><type arch='x86_64' machine='pc'>hvm</type></os>" "<on_poweroff>destroy</on_poweroff>" \
		"<devices><emulator>$FH_EMULATOR</emulator><memballoon model='none'/></devices>" \
		"</domain>" >"$T/$1.xml"
	virsh -q -c "$uri" define "$T/$1.xml" >/dev/null && virsh -q -c "$uri" start "$1" >/dev/null ||
		fail "domain $1 did not start"
}
# connect NAME TID CPU: a device connection with the domain's UUID (fh-testclient)
connect() {
	local uuid
	uuid=$(virsh -q -c "$uri" domuuid "$1")
	"$MKFIXTURE" thread "$FX" "$2" "$3" "$3" /machine.slice
	(
		"$MKFIXTURE" tgid "$FX" "$2" "$BASHPID"
		exec "$FH_TESTCLIENT" --socket "$T/dev.sock" --name "$1" --uuid "$uuid" --vcpus 1 \
			--tids "$2" --hint 0:0:1024
	) >"$T/client-$1.out" 2>&1 &
	CPIDS+=($!)
	within 10 "$1 is connected" vm_is "$1" .vcpus 1
}

"$MKFIXTURE" host "$FX"
# fh-testclient links $FX/proc/<its pid>/cmdline to its real one (PA-18)
export FH_PROC_FIXTURE=$FX/proc
# fh-testclient stands in for the domains' QEMUs: libvirt's record of their
# processes (PA-22, tested in libvirt-daemon) is not consulted here.
printf '%s\n' '[daemon]' 'poll_interval_ms=100' 'libvirt_state_dir=' \
	'[nova-flavor m1.latency]' 'floor=50' \
	'[nova-flavor m1.batch]' 'ceiling=25' 'guest-hints=off' >"$T/freqhintd.conf"
"$FREQHINTD" --config "$T/freqhintd.conf" --backend cpufreq --libvirt-uri "$uri" --no-metrics \
	--sysfs-root "$FX/sys" --proc-root "$FX/proc" --cgroup-root "$FX/cgroup" \
	--socket "$T/dev.sock" --control-socket "$T/ctl.sock" --state-dir "$T/state" \
	-v >"$T/daemon.log" 2>&1 &
DPID=$!
answers() { ctl status >/dev/null 2>&1; }
within 10 "freqhintd answers" answers
within 10 "freqhintd connected to libvirt" jq_is .libvirt.connected true status

start_domain nova-lat "$(nova_md m1.latency)"
start_domain nova-own "$(nova_md m1.latency)<fh:freqhint xmlns:fh='urn:freqhint:metadata:1'><fh:ceiling>40</fh:ceiling></fh:freqhint>"
start_domain nova-other "$(nova_md m1.unmapped)"
connect nova-lat 901 2
connect nova-own 902 4
connect nova-other 903 6

# the flavor's settings: floor 50% (512)
within 5 "nova-lat: the flavor's floor" vm_is nova-lat .operator.min 512
vm_is nova-lat .operator_source libvirt || fail "nova-lat: source"
within 5 "nova-lat: policy2 held at 50%" file_is "$POL/policy2/scaling_min_freq" 1600000
grep -q 'domain "nova-lat": settings of Nova flavor "m1.latency"' "$T/daemon.log" || fail "not logged"
# the freqhint element wins over the flavor
within 5 "nova-own: its own element" vm_is nova-own .operator.max 410
vm_is nova-own .operator.min 0 || fail "nova-own took the flavor's floor"
# no section for the flavor: nothing from libvirt
vm_is nova-other .operator_source null || fail "nova-other: unmapped flavor gave settings"
vm_is nova-other .operator.max 1024 || fail "nova-other: not the defaults"

# a resize: Nova rewrites its element; followed live (virsh --set takes the
# element without its namespace and declares it with --key's prefix)
virsh -q -c "$uri" metadata nova-other "$nova_ns" --live --key nova \
	--set "$(nova_md m1.batch | sed 's/ xmlns:nova="[^"]*"//; s/nova://g')" >/dev/null ||
	fail "virsh metadata (nova)"
within 2 "nova-other follows its new flavor" vm_is nova-other .operator.max 256
vm_is nova-other .guest_hints false || fail "nova-other: m1.batch turns guest hints off"
# (its guest's hints are ignored: the vCPU holds nothing)
within 2 "nova-other's vCPU no longer active" jq_is '.[0].active' false vcpus nova-other

for d in nova-lat nova-own nova-other; do virsh -q -c "$uri" destroy "$d" >/dev/null; done
within 5 "destroy drops the flavor's settings" vm_is nova-lat .operator_source null

kill -TERM "$DPID"
rc=0
wait "$DPID" || rc=$?
DPID=
[ $rc = 0 ] || fail "freqhintd exited with status $rc"
! grep -qE 'CRITICAL|GLib-WARNING|Sanitizer|runtime error' "$T/daemon.log" || fail "GLib/sanitizer report in the log"
log "PASS"
exit 0
