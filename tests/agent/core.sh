#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# freqhintd integration tests for the state file, other writers of the
# cpufreq files, configuration checking, the default backend and real-time
# vCPU threads.  Same harness as integration.sh (its helpers, fixture tree
# and real daemon): the cases are defined here, then integration.sh runs
# the one named.
#
#   core.sh CASE
set -uo pipefail

STATE=cpufreq-saved.ini

# kill_daemon: SIGKILL, as a crash would
kill_daemon() { kill -KILL "$DPID"; wait "$DPID" 2>/dev/null; DPID=; }

# metric NAME_AND_LABELS VALUE: the exposition has that sample
metric_is() {
	local port
	port=$(ctl --json status | jq -r .metrics_port)
	curl -sf "http://127.0.0.1:$port/metrics" | grep -xF "$1 $2" >/dev/null
}

# --- issue 15 item 4: a state file that cannot lie ---------------------------

# After a SIGKILL the policies hold the dead run's floor and cap.  A state
# file that is empty, cut short, garbage or missing a policy must not make
# them the host's originals: every policy goes back to its cpuinfo range.
case_state_corrupt() {
	local v i=0 f=$T/state/$STATE
	for v in empty truncated garbage incomplete; do
		i=$((i + 1))
		fixture; thread 1501 2 2; thread 1502 6 6
		start_daemon cpufreq
		start_vm "$v" "vm-$v" $U1 1501,1502 --hint 0:1024:1024 --hint 1:0:300
		expect_file "$POL/policy2/scaling_min_freq" 3200000
		expect_file "$POL/policy6/scaling_max_freq" 900000
		kill_daemon
		eval "kill \$VM_$v"
		case $v in
		empty) : >"$f" ;;
		truncated) head -c $(($(stat -c %s "$f") / 2)) "$f" >"$f.cut"; mv "$f.cut" "$f" ;;
		garbage) printf '\x00\x01[policy2\nscaling_min_freq=\xff\n' >"$f" ;;
		incomplete) sed -i '/^\[policy6\]/,$d' "$f" ;;    # the last policy is lost
		esac
		start_daemon cpufreq
		expect_file "$POL/policy2/scaling_min_freq" 800000
		expect_file "$POL/policy2/scaling_max_freq" 3200000
		expect_file "$POL/policy6/scaling_max_freq" 3200000
		[ "$(grep -c 'STATE FILE UNUSABLE' "$T/daemon.log")" = $i ] ||
			fail "$v state file: fallback not logged"
		[ -f "$f.rejected" ] || fail "$v state file not moved aside"
		stop_daemon
		# the dead run's values do not come back on a clean stop either
		file_is "$POL/policy2/scaling_min_freq" 800000 || fail "$v: stale floor after stop"
		file_is "$POL/policy6/scaling_max_freq" 3200000 || fail "$v: stale cap after stop"
	done
}

# A state file someone else owns is not trusted; a state directory others
# can write to is not used at all.
case_state_not_ours() {
	local f=$T/state/$STATE
	[ "$(id -u)" = 0 ] || fail "this case needs root (chown)"
	fixture; thread 1601 2 2
	start_daemon cpufreq
	start_vm a vm-a $U1 1601 --hint 0:1024:1024
	expect_file "$POL/policy2/scaling_min_freq" 3200000
	[ "$(stat -c %a "$f")" = 600 ] || fail "state file mode $(stat -c %a "$f"), want 600"
	grep -q '^version=2$' "$f" && grep -q '^checksum=[0-9a-f]\{64\}$' "$f" ||
		fail "state file has no version or checksum: $(cat "$f")"
	kill_daemon; kill "$VM_a"
	chown 65534 "$f"
	start_daemon cpufreq
	expect_file "$POL/policy2/scaling_min_freq" 800000
	grep -q "STATE FILE UNUSABLE.*owned by uid 65534" "$T/daemon.log" || fail "foreign file not refused"
	start_vm b vm-b $U2 1601 --hint 0:1024:1024
	expect_file "$POL/policy2/scaling_min_freq" 3200000
	kill_daemon; kill "$VM_b"
	chmod 0777 "$T/state"
	"$FREQHINTD" --config "$T/freqhintd.conf" --backend cpufreq --sysfs-root "$FX/sys" \
		--proc-root "$FX/proc" --cgroup-root "$FX/cgroup" --socket "$T/dev.sock" \
		--control-socket "$T/ctl.sock" --state-dir "$T/state" >"$T/refused.log" 2>&1
	[ $? = 1 ] || fail "freqhintd started with a world-writable state directory"
	grep -q "state directory: .*writable by group or others" "$T/refused.log" ||
		fail "refusal does not name the directory: $(cat "$T/refused.log")"
	file_is "$POL/policy2/scaling_min_freq" 800000 || fail "stale floor kept with an unusable state dir"
}

# Whatever the source (a decision, the host's values, a restore), what is
# written stays inside cpuinfo_min_freq..cpuinfo_max_freq.
case_cpuinfo_clamp() {
	fixture; thread 1701 4 4
	echo 100 >"$POL/policy4/scaling_min_freq"
	echo 9999999 >"$POL/policy4/scaling_max_freq"
	start_daemon cpufreq
	start_vm a vm-a $U1 1701 --hint 0:512:1024
	expect_file "$POL/policy4/scaling_min_freq" 1600000
	expect_file "$POL/policy4/scaling_max_freq" 3200000
	kill "$VM_a"
	expect_file "$POL/policy4/scaling_min_freq" 800000
	stop_daemon
	file_is "$POL/policy4/scaling_min_freq" 800000 || fail "restored a minimum below cpuinfo_min_freq"
	file_is "$POL/policy4/scaling_max_freq" 3200000 || fail "restored a maximum above cpuinfo_max_freq"
}

# Issue 15 item 5: the uclamp backend checks that a thread is still the VM's
# right before setting its clamps, not only when releasing them.
case_uclamp_owner_at_set() {
	EXTRA_DAEMON='poll_interval_ms=60000' fixture     # no poll re-reads the thread meanwhile
	thread 2301 3 3
	start_daemon uclamp
	live_vm a vm-a $U1 2301 0:none
	expect_jq '.[0].state' no-hint vcpus vm-a
	"$MKFIXTURE" tgid "$FX" 2301 1                     # the tid now names another process's thread
	send a "hint 0:512:1024"
	expect_jq '.[0].state' active vcpus vm-a
	sleep 0.3
	jq_is '.backend_writes_total' 0 status && jq_is '.write_failures_total' 0 status ||
		fail "sched_setattr was tried on a thread that is not the VM's: $(ctl --json status |
			jq -c '{backend_writes_total, write_failures_total}')"
	grep -q 'tid 2301 no longer belongs to process' "$T/daemon.log" || fail "skip not logged"
}

# --- issue 15 item 6: other writers of scaling_min/max_freq ------------------

# Limits the host had at start bound every VM decision.
case_host_limits_bound() {
	fixture; thread 1801 2 2; thread 1802 4 4
	echo 1200000 >"$POL/policy2/scaling_min_freq"   # admin's floor
	echo 2000000 >"$POL/policy4/scaling_max_freq"   # admin's cap
	start_daemon cpufreq
	start_vm a vm-a $U1 1801,1802 --hint 0:0:300 --hint 1:1024:1024
	expect_file "$POL/policy4/scaling_min_freq" 2000000     # the floor stops at the cap
	expect_file "$POL/policy4/scaling_max_freq" 2000000     # never raised above it
	expect_file "$POL/policy2/scaling_max_freq" 1200000     # the cap stops at the floor
	expect_file "$POL/policy2/scaling_min_freq" 1200000     # never lowered below it
	stop_daemon
	file_is "$POL/policy2/scaling_min_freq" 1200000 || fail "admin floor not restored"
	file_is "$POL/policy2/scaling_max_freq" 3200000 || fail "policy2 max not restored"
	file_is "$POL/policy4/scaling_min_freq" 800000 || fail "policy4 min not restored"
	file_is "$POL/policy4/scaling_max_freq" 2000000 || fail "admin cap not restored"
}

# A write by someone else while we run: noticed, logged once, counted, made
# the host's limit, never written over (not even on stop).
case_external_write() {
	fixture; thread 1901 2 2; thread 1902 6 6
	start_daemon cpufreq
	live_vm a vm-a $U1 1901,1902 0:512:1024
	expect_file "$POL/policy2/scaling_min_freq" 1600000
	echo 2000000 >"$POL/policy2/scaling_max_freq"            # e.g. tuned
	eventually grep -q 'policy2: scaling_max_freq changed by another writer' "$T/daemon.log" ||
		fail "external write not noticed"
	expect_jq '.external_writes_total' 1 status
	expect_jq '.[] | select(.cpu==2) | .external_writes' 1 cpus
	eventually metric_is 'freqhint_cpufreq_external_writes_total{policy="2"}' 1 ||
		fail "external write not in metrics"
	send a "hint 0:1024:1024"
	expect_file "$POL/policy2/scaling_min_freq" 2000000     # the floor stops at their cap
	file_is "$POL/policy2/scaling_max_freq" 2000000 || fail "their cap was written over"
	echo 1200000 >"$POL/policy6/scaling_min_freq"            # e.g. cpupower, on an idle policy
	eventually grep -q 'policy6: scaling_min_freq changed by another writer' "$T/daemon.log" ||
		fail "external write on policy6 not noticed"
	send a "hint 1:0:300"
	expect_file "$POL/policy6/scaling_max_freq" 1200000     # the cap stops at their floor
	send a "hint 0:none"
	expect_file "$POL/policy2/scaling_min_freq" 800000      # released: back to the host's
	sleep 0.5
	file_is "$POL/policy2/scaling_max_freq" 2000000 || fail "release wrote over their cap"
	[ "$(grep -c 'changed by another writer' "$T/daemon.log")" = 2 ] ||
		fail "each external write must be logged once: $(grep 'another writer' "$T/daemon.log")"
	stop_daemon
	file_is "$POL/policy2/scaling_max_freq" 2000000 || fail "stop restored over their cap"
	file_is "$POL/policy6/scaling_min_freq" 1200000 || fail "stop restored over their floor"
	file_is "$POL/policy6/scaling_max_freq" 3200000 || fail "policy6 max not restored"
}

# --- issue 15 item 5, issue 17 item 4: configuration ---------------------------

# run_daemon ARGS...: freqhintd on the fixture without --backend, in the
# foreground for at most 10 s; its output in $T/run.log, its status in $RC
run_daemon() {
	timeout 10 "$FREQHINTD" --config "$T/freqhintd.conf" \
		--sysfs-root "$FX/sys" --proc-root "$FX/proc" --cgroup-root "$FX/cgroup" \
		--socket "$T/dev.sock" --control-socket "$T/ctl.sock" --state-dir "$T/state" \
		"$@" >"$T/run.log" 2>&1
	RC=$?
}

# bad_config LINE_TEXT MESSAGE: a config holding LINE_TEXT is refused (exit 2)
# by the daemon and by --check-config, naming file, line, key and value.
bad_config() {
	local line
	EXTRA_DAEMON=$1 fixture
	line=$(grep -nxF "$1" "$T/freqhintd.conf" | cut -d: -f1)
	run_daemon
	[ $RC = 2 ] || fail "'$1': freqhintd exited $RC, want 2: $(cat "$T/run.log")"
	grep -qF "$T/freqhintd.conf:$line: $2" "$T/run.log" ||
		fail "'$1': message does not name file, line $line and key: $(cat "$T/run.log")"
	[ ! -e "$T/dev.sock" ] || fail "'$1': the daemon started"
	run_daemon --check-config
	[ $RC = 2 ] || fail "'$1': --check-config exited $RC, want 2"
	grep -qF "$T/freqhintd.conf:$line: $2" "$T/run.log" || fail "'$1': --check-config message"
}

case_config_strict() {
	bad_config 'check_thread_owner=yes' '[daemon] check_thread_owner: "yes" is not a boolean'
	bad_config 'check_thread_owner=banana' '[daemon] check_thread_owner: "banana" is not a boolean'
	bad_config 'backedn=cpufreq' '[daemon] unknown key "backedn"'
	bad_config 'backend=cpufrq' '[daemon] backend: "cpufrq" is not a backend'
	# a good file: valid, names the backend it selects, starts nothing
	EXTRA_DAEMON='check_thread_owner=false' fixture
	run_daemon --check-config
	[ $RC = 0 ] || fail "--check-config on a valid file exited $RC: $(cat "$T/run.log")"
	grep -q "freqhintd.conf: valid; backend cpufreq (auto: 4 of 4 cpufreq policies" "$T/run.log" ||
		fail "--check-config does not say what it selects: $(cat "$T/run.log")"
	[ ! -e "$T/dev.sock" ] && [ ! -e "$T/ctl.sock" ] && [ ! -e "$T/state" ] ||
		fail "--check-config started something"
	run_daemon --check-config --backend bogus
	[ $RC = 2 ] || fail "--backend bogus: exit $RC, want 2"
}

# start_auto: start_daemon without --backend
start_auto() {
	"$FREQHINTD" --config "$T/freqhintd.conf" \
		--sysfs-root "$FX/sys" --proc-root "$FX/proc" --cgroup-root "$FX/cgroup" \
		--socket "$T/dev.sock" --control-socket "$T/ctl.sock" --state-dir "$T/state" \
		-v >>"$T/daemon.log" 2>&1 &
	DPID=$!
	eventually ctl status >/dev/null || fail "freqhintd does not answer"
}

# No backend configured: the host decides, and says so; none stays selectable.
case_default_backend() {
	fixture; thread 2001 2 2
	start_auto
	expect_jq '.backend' cpufreq status
	grep -q 'backend auto: cpufreq (4 of 4 cpufreq policies under .* have writable limits)' \
		"$T/daemon.log" || fail "choice not logged"
	start_vm a vm-a $U1 2001 --hint 0:512:1024
	expect_file "$POL/policy2/scaling_min_freq" 1600000
	kill "$VM_a"
	stop_daemon; rm -f "$T/ctl.sock"
	rm -r "$POL"                                        # no cpufreq: uclamp if the kernel has it
	start_auto
	expect_jq '.backend' uclamp status
	grep -q 'backend auto: uclamp (no writable cpufreq policy' "$T/daemon.log" || fail "uclamp not logged"
	stop_daemon; rm -f "$T/ctl.sock"
	rm "$FX"/proc/sys/kernel/sched_util_clamp_*         # nor uclamp: none
	start_auto
	expect_jq '.backend' none status
	grep -q 'backend auto: none (no writable cpufreq policy .* and no uclamp' "$T/daemon.log" ||
		fail "none not logged"
	stop_daemon; rm -f "$T/ctl.sock"
	EXTRA_DAEMON='backend=none' fixture                 # the policies are back; none still wins
	start_auto
	expect_jq '.backend' none status
}

# --- issue 16 item 1: real-time vCPU threads (MR-26) --------------------------

# set_policy TID POLICY: field 41 of the fixture's /proc/TID/stat (1 FIFO, 2 RR)
set_policy() {
	local f=$FX/proc/$1/stat line head tail
	line=$(cat "$f"); head=${line%)*}; tail=${line##*)}
	tail=$(echo "$tail" | awk -v p="$2" '{ $39 = p; print }')   # field 3 is the first after ')'
	echo "$head) $tail" >"$f"
}

# An RT vCPU thread whose guest sets no floor has the kernel's RT default
# minimum, as the kernel itself would give it; a guest floor replaces it.
case_rt_vcpu() {
	fixture; thread 2101 2 2; thread 2102 4 4; thread 2103 6 6
	set_policy 2101 1; set_policy 2103 2
	echo 800 >"$FX/proc/sys/kernel/sched_util_clamp_min_rt_default"
	start_daemon cpufreq
	start_vm a vm-a $U1 2101,2102,2103 --hint 0:-:1024 --hint 1:-:1024 --hint 2:100:1024
	expect_jq '.[0].sched_policy' 1 vcpus vm-a
	expect_jq '.[0].effective.min' 800 vcpus vm-a
	expect_jq '.[0].rt_default_min' true vcpus vm-a
	expect_jq '.[1].effective.min' 0 vcpus vm-a             # SCHED_OTHER: no default floor
	expect_jq '.[2].sched_policy' 2 vcpus vm-a
	expect_jq '.[2].effective.min' 100 vcpus vm-a           # the guest's floor is a request
	expect_jq '.[2].rt_default_min' false vcpus vm-a
	expect_file "$POL/policy2/scaling_min_freq" 2800000      # 800 -> 2500 MHz, snapped up
	expect_file "$POL/policy4/scaling_min_freq" 800000
	expect_file "$POL/policy6/scaling_min_freq" 800000
	echo 512 >"$FX/proc/sys/kernel/sched_util_clamp_min_rt_default"   # the sysctl moves
	expect_file "$POL/policy2/scaling_min_freq" 1600000
	echo 300 >"$FX/proc/sys/kernel/sched_util_clamp_min"     # and caps it (uclamp_eff_get)
	expect_jq '.[0].effective.min' 300 vcpus vm-a
}

# MR-26 (issue 29 item 6): the kernel keeps a SCHED_FIFO thread's RT default
# minimum above its maximum -- in a group capped at 74 % (758) with a max
# request of 707 it holds 758/707 -- and telemetry shows exactly that; the
# minimum wins only where a frequency is decided: the CPU, the policy.
case_rt_inverted() {
	fixture
	"$MKFIXTURE" cgroup "$FX" /machine.slice/vm-a.scope 0.00 74.00
	thread 2111 2 2 /machine.slice/vm-a.scope
	set_policy 2111 1
	start_daemon cpufreq
	start_vm a vm-a $U1 2111 --hint 0:-:707
	expect_jq '.[0].effective.min' 758 vcpus vm-a
	expect_jq '.[0].effective.max' 707 vcpus vm-a
	expect_jq '.[0].rt_default_min' true vcpus vm-a
	expect_jq '.[] | select(.cpu==2) | .floor' 758 cpus
	expect_jq '.[] | select(.cpu==2) | .ceiling' 758 cpus
	# 758/758 is 2368750 kHz: the floor snaps up to 2.4 GHz, the ceiling
	# down to 2.0 GHz, and where they cross the ceiling wins (MR-19)
	expect_file "$POL/policy2/scaling_max_freq" 2000000
	expect_file "$POL/policy2/scaling_min_freq" 2000000
}

# --- agent protocol: HOST_FREQ (PA-18) and VCPUS (PA-19) -----------------------

# host_freq_is ID REGEX: the client's last HOST_FREQ line matches
host_freq_is() { grep '^host-freq' "$T/client-$1.out" | tail -1 | grep -E "$2" >/dev/null; }
expect_host_freq() {
	eventually host_freq_is "$1" "$2" ||
		fail "client $1: last HOST_FREQ is '$(grep '^host-freq' "$T/client-$1.out" | tail -1)', want /$2/"
}

case_host_freq_vcpus() {
	local tab='800000,1200000,1600000,2000000,2400000,2800000,3200000'
	fixture; thread 2201 2 2; thread 2202 6 6; thread 2203 0-7 3; thread 2204 4 4; thread 2205 4 4
	echo 400000 >"$POL/policy4/cpuinfo_min_freq"           # a wider class of its own
	start_daemon cpufreq
	LIVE_ARGS="--features perf,grants,host-freq,vcpus" \
		live_vm a vm-a $U1 2201,2202,2203 0:512:1024 1:1024:1024 2:-:1024
	grep -q '^welcome features=0xf ' "$T/client-a.out" || fail "HOST_FREQ/VCPUS not accepted"
	# classes: policies 0+2 (table), 4 (wider range), 6 (no table: 100 MHz steps = 32);
	# vCPU 2 may run anywhere: the widest class
	expect_host_freq a "^host-freq classes=3 0:800000\.\.3200000/128/7:$tab 1:400000\.\.3200000/128/7:$tab 2:800000\.\.3200000/32/0 vcpus=0,2,1$"
	expect_file "$POL/policy6/scaling_min_freq" 3200000
	# hints never cause one
	send a "hint 0:300:1024"; send a "hint 0:700:1024"
	expect_file "$POL/policy2/scaling_min_freq" 2400000
	sleep 0.5
	[ "$(grep -c '^host-freq' "$T/client-a.out")" = 1 ] || fail "HOST_FREQ sent because of hints"
	# the thread's affinity changes: sent again
	sed -i 's/^Cpus_allowed_list:.*/Cpus_allowed_list:\t6/' "$FX/proc/2203/status"
	expect_host_freq a 'vcpus=0,2,2$'
	# hot-unplug of vCPU 1: its hint goes, the connection stays
	send a "vcpus 2201,0,2203"
	expect_host_freq a 'vcpus=0,255,2$'
	expect_file "$POL/policy6/scaling_min_freq" 800000
	expect_jq '.[1].state' no-thread vcpus vm-a
	# hot-plug on CPU 4: a thread of the peer, a new class; hints follow
	"$MKFIXTURE" tgid "$FX" 2204 "$VM_a"
	send a "vcpus 2201,2204,2203"
	expect_host_freq a 'vcpus=0,1,2$'
	expect_jq '.[1].tid' 2204 vcpus vm-a
	send a "hint 1:512:1024"
	expect_file "$POL/policy4/scaling_min_freq" 1600000
	expect_jq '.vm_connections_total' 1 status
	expect_jq '.connected_vms' 1 status
	# without FH_F_VCPUS accepted, VCPUS is a protocol error
	live_vm b vm-b $U2 0 0:-:1024
	send b "vcpus 0"
	eventually grep -q '^close reason=protocol' "$T/client-b.out" || fail "VCPUS without the feature accepted"
	# a thread that is not the peer's closes that connection only
	send a "vcpus 2201,2205,2203"
	eventually grep -q '^close reason=permission' "$T/client-a.out" || fail "foreign thread accepted"
	expect_jq '.rejected.permission' 1 status
	expect_file "$POL/policy4/scaling_min_freq" 800000
}

# --- agent protocol: CUR_FREQ (PA-26) ------------------------------------------

# cur_freq_is ID REGEX: the client's last CUR_FREQ line matches
cur_freq_is() { grep '^cur-freq' "$T/client-$1.out" | tail -1 | grep -E "$2" >/dev/null; }
expect_cur_freq() {
	eventually cur_freq_is "$1" "$2" ||
		fail "client $1: last CUR_FREQ is '$(grep '^cur-freq' "$T/client-$1.out" | tail -1)', want /$2/"
}
cur_freq_count() { grep -c '^cur-freq' "$T/client-$1.out"; }
# no frame while nothing changes
cur_freq_quiet() {
	local n
	n=$(cur_freq_count "$1")
	sleep 0.3
	[ "$(cur_freq_count "$1")" = "$n" ] || fail "client $1: CUR_FREQ sent without a change"
}

case_cur_freq() {
	fixture; thread 2301 2 2; thread 2302 6 6; thread 2303 4 4; thread 2304 2 2
	echo 400000 >"$POL/policy4/cpuinfo_min_freq"           # a class of its own
	cat >>"$T/freqhintd.conf" <<-EOC
	[cpufreq]
	cur_freq_interval_ms=20
	EOC
	start_daemon cpufreq
	LIVE_ARGS="--features perf,grants,host-freq,cur-freq" \
		live_vm a vm-a $U1 2301,2302,2303 0:-:1024
	grep -q '^welcome features=0x27 ' "$T/client-a.out" || fail "CUR_FREQ not accepted"
	# every policy of the fixture runs at 1.6 GHz: one frame after HOST_FREQ, none after
	expect_cur_freq a '^cur-freq khz=1600000,1600000,1600000$'
	grep -q '^bad-' "$T/client-a.out" && fail "a frame the device would refuse: $(grep '^bad-' "$T/client-a.out")"
	[ "$(grep -m1 -n '^host-freq' "$T/client-a.out" | cut -d: -f1)" -lt \
	  "$(grep -m1 -n '^cur-freq' "$T/client-a.out" | cut -d: -f1)" ] || fail "CUR_FREQ before HOST_FREQ"
	cur_freq_quiet a
	[ "$(cur_freq_count a)" = 1 ] || fail "CUR_FREQ frames: $(cur_freq_count a), want 1"
	# the DVFS of policy 2 moves: vCPU 0's value follows, the others stay
	echo 2400000 >"$POL/policy2/scaling_cur_freq"
	expect_cur_freq a '^cur-freq khz=2400000,1600000,1600000$'
	echo 800000 >"$POL/policy6/scaling_cur_freq"
	echo 400000 >"$POL/policy4/scaling_cur_freq"
	expect_cur_freq a '^cur-freq khz=2400000,800000,400000$'
	cur_freq_quiet a
	# unreadable: unknown
	rm "$POL/policy6/scaling_cur_freq"
	expect_cur_freq a '^cur-freq khz=2400000,0,400000$'
	# a guest without the feature, and one offering it without HOST_FREQ, get none
	LIVE_ARGS="--features perf,grants,host-freq" live_vm b vm-b $U2 2304 0:-:1024
	LIVE_ARGS="--features perf,grants,cur-freq" live_vm c vm-c $U3 0 0:-:1024
	grep -q '^welcome features=0x7 ' "$T/client-b.out" || fail "b: $(grep welcome "$T/client-b.out")"
	grep -q '^welcome features=0x3 ' "$T/client-c.out" || fail "c: CUR_FREQ accepted without HOST_FREQ"
	echo 3200000 >"$POL/policy2/scaling_cur_freq"
	expect_cur_freq a '^cur-freq khz=3200000,0,400000$'
	cur_freq_quiet a
	# each frame says something new (two writes may fall in one interval or two)
	[ -z "$(grep '^cur-freq' "$T/client-a.out" | uniq -d)" ] || fail "the same CUR_FREQ twice in a row"
	[ "$(cur_freq_count b)" = 0 ] || fail "CUR_FREQ to a VM without the feature"
	[ "$(cur_freq_count c)" = 0 ] || fail "CUR_FREQ to a VM without HOST_FREQ"
	expect_jq '.[] | select(.name=="vm-a") | .cur_freq_frames' "$(cur_freq_count a)" vms
}

# integration.sh runs the case named in $1 with its helpers.
source "$(dirname "${BASH_SOURCE[0]}")/integration.sh"
