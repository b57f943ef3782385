#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Runs inside the systemd guest (run-deploy.sh), as the oneshot unit
# freqhint-deploy-test.service, with systemd as PID 1: installs the freqhint
# package as an operator would, then checks what the Deploy section of the
# README promises.  Prints FREQHINT-CHECK lines, one FREQHINT-TEST-RESULT
# line, and powers the guest off.
#
# /opt/freqhint-test holds: debs/*.deb, test-lib.sh, mkfixture.sh,
# fh-testclient.
set -u
P=/opt/freqhint-test
# shellcheck source=../harness/test-lib.sh
. "$P/test-lib.sh"

FX=/srv/freqhint-fixture
POL=$FX/sys/devices/system/cpu/cpufreq
CONF=/etc/freqhint/freqhintd.conf
U1=11111111-1111-1111-1111-111111111111

# eventually SECONDS CMD...: CMD succeeds within SECONDS (TCG is slow; the
# deadline is generous, the state must be reached).
eventually() {
	local end=$((SECONDS + $1)); shift
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.2
	done
}
file_is() { [ "$(cat "$1" 2>/dev/null)" = "$2" ]; }
owner_mode() { stat -c '%U:%G %a' "$1"; }
# states UNIT...: their systemctl is-active words on one line (exit 0).
states() { echo $(systemctl is-active "$@"); }
as_user() { local u=$1; shift; runuser -u "$u" -- "$@"; }
journal() { journalctl -b -u freqhintd.service --no-pager -o cat; }
# journal_has ERE: the running freqhintd logged a line matching ERE.
journal_has() {
	local pid
	pid=$(systemctl show -p MainPID --value freqhintd.service)
	[ "${pid:-0}" != 0 ] && journalctl -b _PID="$pid" --no-pager -o cat | grep -qE -- "$1"
}
show() { echo "--- $*"; "$@" 2>&1 | sed 's/^/    /'; }

finish() {
	local rc=$?
	if [ "$fh_failed" != 0 ]; then
		show systemctl --no-pager status freqhintd.service freqhintd-device.socket freqhintd-control.socket
		show journal
		[ -f /run/fh-client.out ] && show cat /run/fh-client.out
	fi
	if [ "$rc" = 0 ]; then
		echo "FREQHINT-TEST-RESULT: PASS"
	else
		echo "FREQHINT-TEST-RESULT: FAIL (exit $rc)"
	fi
	echo "FREQHINT-INIT: poweroff"
	# (not `systemctl poweroff`: that asks logind first, and there is no bus)
	systemctl --no-block --job-mode=replace-irreversibly start poweroff.target
}
trap finish EXIT

echo "FREQHINT-INIT: start, kernel $(uname -r), $(nproc) cpus, uptime $(cut -d' ' -f1 /proc/uptime)"
check_output "systemd is PID 1" '^systemd$' cat /proc/1/comm
# (not is-system-running --wait: this unit is part of the boot it waits for)
check_output "multi-user.target reached" '^active$' states multi-user.target
show systemctl --no-pager --failed

# --- install, as the Deploy section says -----------------------------------
check "the freqhint package installs (dpkg -i; its Depends are all present)" \
	dpkg -i "$P"/debs/freqhint_*.deb
check "group freqhint exists (sysusers.d)" getent group freqhint
check "group freqhint-monitor exists (sysusers.d)" getent group freqhint-monitor
check_output "/run/freqhint is root's, 0755 (tmpfiles.d)" '^root:root 755$' owner_mode /run/freqhint
check_output "the postinst started both sockets and the service" '^active active active$' \
	states freqhintd-device.socket freqhintd-control.socket freqhintd.service
check_output "and enabled them for boot" '^enabled enabled enabled$' \
	sh -c 'echo $(systemctl is-enabled freqhintd-device.socket freqhintd-control.socket freqhintd.service)'
check "with the shipped config, the backend is chosen from the host (none here) and logged" \
	eventually 60 journal_has 'backend auto: none'

# --- the fixture host and the documented settings ---------------------------
# This guest has no cpufreq: freqhintd drives a fixture tree shaped like a
# host with 4 policies (tests/agent/mkfixture.sh).  The unit may write only
# /sys/devices/system/cpu (ProtectSystem=strict): a drop-in lets it write
# the fixture, as it would the real files.
check "fixture tree" bash "$P/mkfixture.sh" host "$FX"
echo 1200000 >"$POL/policy0/scaling_min_freq"   # the host's own setting
# The shipped config, with its documented keys switched on.
edit_conf() {
	sed -i -e 's|^#backend=auto$|backend=cpufreq|' \
		-e 's|^#socket_group=freqhint$|socket_group=freqhint|' \
		-e "s|^#sysfs_root=/sys\$|sysfs_root=$FX/sys|" \
		-e "s|^#proc_root=/proc\$|proc_root=$FX/proc|" \
		-e "s|^#cgroup_root=/sys/fs/cgroup\$|cgroup_root=$FX/cgroup|" \
		-e 's|^#poll_interval_ms=1000$|poll_interval_ms=200|' "$CONF" &&
		[ "$(grep -cE '^(backend|socket_group|sysfs_root|proc_root|cgroup_root|poll_interval_ms)=' "$CONF")" = 6 ]
}
check "documented keys set in $CONF (backend, socket_group=freqhint, roots)" edit_conf
check "freqhintd --check-config accepts it" freqhintd --check-config
mkdir -p /etc/systemd/system/freqhintd.service.d
printf '[Service]\nReadWritePaths=%s\n' "$FX" >/etc/systemd/system/freqhintd.service.d/fixture.conf
check "systemctl restart freqhintd (daemon-reload first)" \
	sh -c 'systemctl daemon-reload && systemctl restart freqhintd.service'
check_output "the service runs" '^active$' states freqhintd.service
# (the journal lags: what freqhintd logged may take a moment to show)
check "it took the device socket from systemd" eventually 60 journal_has 'device socket: taken from systemd'
check "it took the control socket from systemd" eventually 60 journal_has 'control socket: taken from systemd'
check "backend cpufreq on the fixture's 4 policies" \
	eventually 60 journal_has 'backend cpufreq; [0-9]+ CPUs, 4 cpufreq policies'

# --- sockets: owner and mode from the socket units --------------------------
check_output "device socket root:freqhint 0660" '^root:freqhint 660$' owner_mode /run/freqhint/device.sock
check_output "control socket root:freqhint-monitor 0660" '^root:freqhint-monitor 660$' \
	owner_mode /run/freqhint/control.sock

# --- freqhintctl as a monitoring user, not root -----------------------------
useradd --system --no-create-home --groups freqhint-monitor fhmon
useradd --system --no-create-home --groups freqhint fhqemu
useradd --system --no-create-home fhnobody
check_output "freqhintctl status as a freqhint-monitor member" '^backend: +cpufreq$' as_user fhmon freqhintctl status
check_fails "freqhintctl status refused for a user in neither group" as_user fhnobody freqhintctl status
check_fails "the device socket refused for a monitor-only user" \
	as_user fhmon "$P/fh-testclient" --socket /run/freqhint/device.sock --name x --uuid $U1 --vcpus 1 --tids 0

# --- metrics endpoint -------------------------------------------------------
check_output "metrics endpoint answers on 127.0.0.1:9484" '^freqhint_build_info\{.*backend="cpufreq".*\} 1$' \
	curl -sf --max-time 20 http://127.0.0.1:9484/metrics

# --- a VM as QEMU's user (group freqhint) moves the fixture limits ----------
bash "$P/mkfixture.sh" thread "$FX" 1201 0 0 /machine.slice
bash "$P/mkfixture.sh" thread "$FX" 1202 6 6 /machine.slice
chown -R fhqemu "$FX/proc"   # the client links its cmdline into the fixture
(
	for t in 1201 1202; do bash "$P/mkfixture.sh" tgid "$FX" $t "$BASHPID"; done
	export FH_PROC_FIXTURE=$FX/proc
	exec setpriv --reuid=fhqemu --regid=fhqemu --init-groups -- \
		"$P/fh-testclient" --socket /run/freqhint/device.sock --name vm-deploy --uuid $U1 \
		--vcpus 2 --tids 1201,1202 --hint 0:1024:1024 --hint 1:0:300
) >/run/fh-client.out 2>&1 &
client=$!
check "the client (as QEMU's user) got past the handshake" eventually 60 grep -q '^ready' /run/fh-client.out
check "policy0's floor rises to 3.2 GHz" eventually 60 file_is "$POL/policy0/scaling_min_freq" 3200000
check "policy6's ceiling drops to 900 MHz" eventually 60 file_is "$POL/policy6/scaling_max_freq" 900000
check_output "freqhintctl vms (monitor user) shows the VM" 'vm-deploy' as_user fhmon freqhintctl vms
check_output "metrics show the VM" '^freqhint_vm_info\{.*vm-deploy' curl -sf --max-time 20 http://127.0.0.1:9484/metrics
check "originals saved before the first write" test -s /var/lib/freqhint/cpufreq-saved.ini

# --- systemctl stop restores the fixture limits -----------------------------
kill "$client"; wait "$client" 2>/dev/null
check "systemctl stop freqhintd" systemctl stop freqhintd.service
check_output "the service is stopped" '^inactive$' states freqhintd.service
check "policy0's floor restored to the host's 1.2 GHz" file_is "$POL/policy0/scaling_min_freq" 1200000
check "policy6's ceiling restored to 3.2 GHz" file_is "$POL/policy6/scaling_max_freq" 3200000
check_fails "no saved file left after a clean stop" test -e /var/lib/freqhint/cpufreq-saved.ini
check_output "the sockets stay, owned by systemd" '^active active$' \
	states freqhintd-device.socket freqhintd-control.socket
check_output "device socket still root:freqhint 0660" '^root:freqhint 660$' owner_mode /run/freqhint/device.sock
# A client on a socket starts the service again (socket activation).  Its
# first answer may take longer than freqhintctl waits (10 s) on a loaded
# TCG guest: that first call only has to connect.
as_user fhmon freqhintctl status >/dev/null 2>&1 &
check "a freqhintctl connection starts the service again" \
	eventually 120 sh -c '[ "$(systemctl is-active freqhintd.service)" = active ]'
ctl_status_cpufreq() { as_user fhmon freqhintctl status 2>&1 | grep -qE '^backend: +cpufreq$'; }
check "and it answers freqhintctl status (monitor user)" eventually 120 ctl_status_cpufreq
wait

done_testing
