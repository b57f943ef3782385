#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# End to end, every part real: the project's uclamp guest kernel with
# virtio_freqhint.ko under the project's QEMU (TCG, q35, 4 vCPUs) with
# virtio-freqhint-pci, connected to freqhintd running the cpufreq backend on
# a fixture sysfs tree laid out like a 4-policy host.  The guest runs
# guest-story.sh; each of its steps is checked here, on the files freqhintd
# writes and on `freqhintctl --json`.
#
#   run-e2e.sh --freqhintd BIN --freqhintctl BIN [--demo] [--samples N]
#
# This host has 2 CPUs, so the 4 vCPU threads cannot be pinned to distinct
# host CPUs: the VM's [vm] section in the agent config places vCPU i on
# fixture CPU 2i (one per policy) instead.  Real /proc and the real cgroup
# tree are used for the vCPU threads (this host kernel has no uclamp, so the
# host chain is unrestricted, as MR-8 says for missing files).
#
# Prints latency figures (guest step -> host write) and ends with the
# guest's verdict; exit status 0 only if every step passed on both sides.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"
. "$here/tests/e2e/e2e-lib.sh"

freqhintd= freqhintctl= demo=0 samples=10
while [ $# -gt 0 ]; do
	case "$1" in
	--freqhintd) freqhintd=${2:?}; shift ;;
	--freqhintctl) freqhintctl=${2:?}; shift ;;
	--demo) demo=1 ;;
	--samples) samples=${2:?}; shift ;;
	*) die "usage: $0 --freqhintd BIN --freqhintctl BIN [--demo] [--samples N]" ;;
	esac
	shift
done
[ -x "$freqhintd" ] && [ -x "$freqhintctl" ] || die "--freqhintd and --freqhintctl are required"

e2e_init
trap e2e_cleanup EXIT

e2e_prepare_guest "$here/tests/e2e/guest-story.sh" "$samples"
e2e_make_fixture
e2e_write_config 100
e2e_start_agent
e2e_start_guest
e2e_connect_control

latencies=()
host_failures=0

# verdict OK|message: answer the guest and count our own failures.
verdict() {
	[ "$demo" = 0 ] || e2e_show_table "$name"
	if [ "$1" = OK ]; then
		ctl_send GO
	else
		host_failures=$((host_failures + 1))
		log "host check failed: $1"
		ctl_send "NO $1"
	fi
}

while ctl_read line; do
	set -- $line
	[ "${1:-}" = STEP ] || continue
	name=$2
	log "guest step: ${line#STEP }"
	case $name in
	connected)
		if eventually 20 vm_connected; then verdict OK; else verdict "VM not in freqhintctl vms"; fi
		;;
	floor)
		want=$(snap_up "$(cap_to_khz 800)" 2)
		if eventually 10 policy_is 2 min "$want" && policies_at_original 4 6; then
			verdict OK
		else
			verdict "policy2 min $(policy_get 2 min), want $want; $(policies_summary)"
		fi
		;;
	operator-ceiling)
		# Operator config changes: stop the agent cleanly (it must restore
		# every file), start it with the VM capped at 50%.
		stop_agent TERM
		if ! policies_at_original 0 2 4 6; then
			verdict "SIGTERM left limits behind: $(policies_summary)"
			continue
		fi
		e2e_write_config 50
		e2e_start_agent
		want=$(snap_up "$(cap_to_khz 512)" 2)
		if eventually 20 policy_is 2 min "$want" && policy_is 2 max "$want"; then
			verdict OK
		else
			verdict "policy2 min/max $(policy_get 2 min)/$(policy_get 2 max), want $want"
		fi
		;;
	released)
		if eventually 10 policies_at_original 2 4 6; then verdict OK; else verdict "floor kept: $(policies_summary)"; fi
		;;
	ceiling)
		want=$(snap_down "$(cap_to_khz 300)" 4)
		if eventually 10 policy_is 4 max "$want" && eventually 5 policies_at_original 2 6; then
			verdict OK
		else
			verdict "policy4 max $(policy_get 4 max), want $want; $(policies_summary)"
		fi
		;;
	agent-restart)
		stop_agent KILL
		e2e_start_agent
		want=$(snap_down "$(cap_to_khz 300)" 4)
		if eventually 20 policy_is 4 max "$want" && policies_at_original 2 &&
			eventually 5 vm_connected && eventually 5 files_match_decisions; then
			verdict OK
		else
			verdict "after restart: $(policies_summary)"
		fi
		;;
	flood-start)
		before=$(qom_stats)
		slow=$(agent_response_ms 8)
		if [ "$slow" -lt 1000 ]; then verdict OK; else verdict "freqhintctl took ${slow} ms during the flood"; fi
		;;
	flood)
		# The final state: the guest's last clamps (700..1024) are what the
		# device holds and what the agent merged for vCPU3 — within the
		# driver's hysteresis (16/1024 by default, spec GR rules): a value
		# closer than that to the last one sent is not sent again.
		after=$(qom_stats)
		log "device stats before flood: $before"
		log "device stats after flood: $after"
		if ! flood_within_bound "$before" "$after" >/dev/null; then
			verdict "device handled more notifications than its rate bound: $after"
		elif ! jq -e '(.vcpus[3]["clamp-min"] - 700 | fabs) < 16 and .vcpus[3]["clamp-max"] == 1024' <<<"$after" >/dev/null; then
			verdict "device's vCPU3 state is not the final 700(±16)..1024: $after"
		elif ! eventually 10 vcpu_hint_near 3 700 1024 16; then
			verdict "agent's vCPU3 hint is not 700(±16)..1024: $(ctl_json vcpus | jq -c '.[3].hint')"
		else
			verdict OK
		fi
		;;
	mark)
		eventually 10 policy_is 2 min "$(policy_original 2 min)" || true
		t0=$(date +%s%N)
		ctl_send GO
		raised=$(snap_up "$(cap_to_khz 512)" 2)  # 800 capped by the operator's 50%
		if eventually 10 policy_is 2 min "$raised"; then
			t1=$(date +%s%N)
			latencies+=($(((t1 - t0) / 1000000)))
		fi
		;;
	latency-done)
		if [ ${#latencies[@]} -gt 0 ]; then verdict OK; else verdict "no latency sample"; fi
		;;
	end)
		break
		;;
	*)
		verdict "unknown step $name"
		;;
	esac
done

guest_rc=0
e2e_wait_guest || guest_rc=$?
report_latency "${latencies[@]}"
log "host checks failed: $host_failures; guest run exit status: $guest_rc"
[ "$host_failures" = 0 ] && [ "$guest_rc" = 0 ]
