#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The shipped systemd units: `systemd-analyze verify` clean, the sockets'
# FileDescriptorName= are the names freqhintd asks for, every SocketGroup=
# is created by the sysusers.d file, and the bounding set allows what the
# documented config needs (CAP_CHOWN for socket_group).
# The vsock front end's units too: its socket's name is the one it asks
# for, its User= is created by sysusers.d, it has no capabilities.
#   check-units.sh SRCDIR BUILT_SERVICE FREQHINTD [BUILT_VSOCKD_SERVICE FREQHINT_VSOCKD]
set -uo pipefail
src=$1 service=$2 freqhintd=$3 vservice=${4:-} vsockd=${5:-}
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v systemd-analyze >/dev/null || fail "systemd-analyze is not installed"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cp "$src/freqhintd-device.socket" "$src/freqhintd-control.socket" "$T/"
# ExecStart= must name an existing binary for verify: the one just built.
sed "s|^ExecStart=[^ ]*|ExecStart=$freqhintd|" "$service" >"$T/freqhintd.service"
out=$(cd "$T" && SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no \
	./freqhintd.service ./freqhintd-device.socket ./freqhintd-control.socket 2>&1)
# (without systemd as PID 1 verify may complain about the machine, never about our files)
echo "$out" | grep -E 'freqhintd|freqhint' && fail "systemd-analyze verify: $out"
grep -qx 'FileDescriptorName=device' "$T/freqhintd-device.socket" || fail "device socket name"
grep -qx 'FileDescriptorName=control' "$T/freqhintd-control.socket" || fail "control socket name"
grep -q 'fh_listen_unix ("device"' "$src/fh-device.c" || fail "fh-device.c asks for another name"
grep -q 'fh_listen_unix ("control"' "$src/fh-control.c" || fail "fh-control.c asks for another name"
for g in $(sed -n 's/^SocketGroup=//p' "$T"/*.socket); do
	grep -qE "^g $g( |$)" "$src/freqhint.sysusers" || fail "sysusers.d does not create group $g"
done
grep -q '^CapabilityBoundingSet=.*CAP_CHOWN' "$T/freqhintd.service" || fail "CAP_CHOWN missing"
grep -q '^Sockets=freqhintd-device.socket freqhintd-control.socket$' "$T/freqhintd.service" ||
	fail "service does not take both sockets"
grep -qE '^ +/run/freqhint/device.sock rw,' "$src/apparmor/libvirt-qemu-freqhint" ||
	fail "AppArmor snippet does not allow the device socket"
sed -n 's/^ListenStream=//p' "$T/freqhintd-device.socket" | grep -qx /run/freqhint/device.sock ||
	fail "device socket path differs from the default"
if [ -n "$vservice" ]; then
	cp "$src/freqhint-vsockd.socket" "$T/"
	sed "s|^ExecStart=[^ ]*|ExecStart=$vsockd|" "$vservice" >"$T/freqhint-vsockd.service"
	out=$(cd "$T" && SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no \
		./freqhint-vsockd.service ./freqhint-vsockd.socket 2>&1)
	echo "$out" | grep -E 'freqhint-vsockd' | grep -v 'freqhintd.service' &&
		fail "systemd-analyze verify: $out"
	grep -qx 'FileDescriptorName=vsock' "$T/freqhint-vsockd.socket" || fail "vsock socket name"
	grep -qx 'ListenStream=vsock::853' "$T/freqhint-vsockd.socket" || fail "vsock port is not 853"
	grep -q 'fh_listen_take_vsock ("vsock"' "$src/freqhint-vsockd.c" || fail "freqhint-vsockd asks for another name"
	u=$(sed -n 's/^User=//p' "$T/freqhint-vsockd.service")
	grep -qE "^u $u " "$src/freqhint.sysusers" || fail "sysusers.d does not create user $u"
	grep -qE "^m $u freqhint$" "$src/freqhint.sysusers" || fail "$u cannot reach the device socket"
	grep -qx 'CapabilityBoundingSet=' "$T/freqhint-vsockd.service" || fail "the front end keeps capabilities"
fi
echo "PASS: units"
