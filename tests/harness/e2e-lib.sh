# SPDX-License-Identifier: GPL-2.0-or-later
# Host side of the end-to-end tests and the demo: fixture, agent, guest,
# control channel, and the checks run-e2e.sh makes.  Source after
# scripts/lib.sh; needs $freqhintd and $freqhintctl set.

E2E_VM_NAME=freqhint-e2e
E2E_VM_UUID=6a1c2e8e-5b2f-4d53-9d0e-2f3c1a7b9e01
E2E_SMP=4
# The guest's architecture: x86_64 (q35) or arm64 (virt), run-guest.sh --arch.
: "${E2E_ARCH:=x86_64}"
# The guest's kernel: uclamp (the project's, built by build-kernel.sh) or
# stock (Debian's 6.12, fetch-stock-kernel.sh: no CONFIG_UCLAMP_TASK).
: "${E2E_KERNEL:=uclamp}"

e2e_init() {
	E2E_DIR=$(mktemp -d "${TMPDIR:-/tmp}/freqhint-e2e.XXXXXX")
	E2E_FX=$E2E_DIR/fx
	E2E_AGENT_PID= E2E_GUEST_PID= E2E_CTL_FD= E2E_EMU_PID=
	E2E_AGENT_LOG=$E2E_DIR/freqhintd.log
	E2E_CONSOLE=$E2E_DIR/console.log
	host_failures=0
	log "e2e work dir: $E2E_DIR"
}

e2e_cleanup() {
	local rc=$?
	# the emulated DVFS host first: it puts the vCPU threads back in their cgroups
	[ -n "${E2E_EMU_PID:-}" ] && kill -TERM "$E2E_EMU_PID" 2>/dev/null
	[ -n "$E2E_GUEST_PID" ] && kill "$E2E_GUEST_PID" 2>/dev/null
	[ -n "$E2E_AGENT_PID" ] && kill "$E2E_AGENT_PID" 2>/dev/null
	wait 2>/dev/null
	if [ "$rc" != 0 ]; then
		log "failed; freqhintd log and console tail follow"
		tail -n 40 "$E2E_AGENT_LOG" 2>/dev/null | sed 's/^/  agent| /' >&2
		tail -n 60 "$E2E_CONSOLE" 2>/dev/null | sed 's/^/  guest| /' >&2
		# A failure keeps everything it needs to be understood.
		log "full logs kept in $E2E_DIR: freqhintd.log (agent), console.log (guest console), run-guest.out (QEMU and the console judge), fx/ (the fixture sysfs tree)"
	elif [ "${FREQHINT_KEEP:-0}" = 1 ]; then
		log "logs kept in $E2E_DIR (FREQHINT_KEEP=1)"
	else
		rm -rf "$E2E_DIR"
	fi
	return "$rc"
}

# e2e_static NAME SRC.c: a static guest program, built into the work dir;
# prints "PATH:/bin/NAME" for e2e_make_initrd.  arm64: Debian's cross
# compiler with its C library (cross-gcc.sh --libc).
e2e_static() {
	local cc=(cc)
	if [ "$E2E_ARCH" = arm64 ]; then
		cc=("$("$here/tests/harness/cross-gcc.sh" arm64 --libc)/aarch64-linux-gnu-gcc") ||
			die "no arm64 cross compiler"
	fi
	"${cc[@]}" -static -O2 -Wall -Werror -o "$E2E_DIR/$1" "$2" >&2 || die "cannot build $2"
	echo "$E2E_DIR/$1:/bin/$1"
}

# e2e_kernel_dir: the cache entry of E2E_KERNEL for E2E_ARCH.
e2e_kernel_dir() {
	case "$E2E_KERNEL" in
	uclamp) "$here/tests/harness/build-kernel.sh" --arch "$E2E_ARCH" --print-dir ;;
	stock) "$here/tests/harness/fetch-stock-kernel.sh" --arch "$E2E_ARCH" --print-dir ;;
	*) die "E2E_KERNEL=$E2E_KERNEL: expected uclamp or stock" ;;
	esac
}

# e2e_make_initrd SCRIPT [HOST:GUEST]...: virtio_freqhint.ko for E2E_KERNEL,
# and the initramfs running SCRIPT as /test.sh with the files
# given and the in-guest step helpers (step-lib.sh); sets E2E_INITRD.  Also resolves the project's QEMU (E2E_QEMU),
# built now if its inputs changed: a build must not run inside the
# deadline for QEMU's sockets to appear.
e2e_make_initrd() {
	local script=$1 a adds=(--add "$here/tests/harness/step-lib.sh:/lib/freqhint/step-lib.sh")
	shift
	for a in "$@"; do adds+=(--add "$a"); done
	E2E_KO=$E2E_DIR/virtio_freqhint.ko
	"$here/guest-driver/tests/build-module.sh" --cached --arch "$E2E_ARCH" "$E2E_KERNEL" "$E2E_KO" >/dev/null ||
		die "building virtio_freqhint.ko failed"
	E2E_INITRD=$("$here/tests/harness/mkinitramfs.sh" --arch "$E2E_ARCH" --test "$script" \
		--kernel "$(e2e_kernel_dir)" \
		--module "$E2E_KO" "${adds[@]}") || die "making the initramfs failed"
	if [ "$E2E_ARCH" = x86_64 ] && [ -n "${FREQHINT_QEMU:-}" ]; then
		E2E_QEMU=$FREQHINT_QEMU
	else
		E2E_QEMU=$("$here/qemu-device/build-qemu.sh" --arch "$E2E_ARCH" --print-binary) ||
			die "building the project's QEMU failed"
	fi
}

# e2e_prepare_guest STORY SAMPLES: the story's guest (workloads, settings;
# E2E_DEMO_RESPONSE=1: the demo's response times, fh-guest-outcome).
e2e_prepare_guest() {
	printf 'FREQHINT_E2E_SAMPLES=%s\nFREQHINT_E2E_DEMO_RESPONSE=%s\n' "$2" "${E2E_DEMO_RESPONSE:-0}" >"$E2E_DIR/env"
	e2e_make_initrd "$1" \
		"$(e2e_static busy "$here/tests/harness/busy.c")" \
		"$(e2e_static fh-guest-outcome "$here/bench/guest/fh-guest-outcome.c")" \
		"$(e2e_static clampflood "$here/tests/e2e/clampflood.c")" \
		"$E2E_DIR/env:/etc/freqhint-e2e.env"
}

e2e_make_fixture() {
	"$here/tests/agent/mkfixture.sh" host "$E2E_FX"
}

# e2e_setup STORY SAMPLES: the guest that runs STORY (e2e_prepare_guest),
# the fixture host, and freqhintd on it with the VM uncapped; the guest is
# started apart.
e2e_setup() {
	e2e_prepare_guest "$1" "$2"
	e2e_make_fixture
	e2e_write_config 100
	e2e_start_agent
}

# e2e_write_config CEILING_PERCENT
e2e_write_config() {
	cat >"$E2E_DIR/freqhintd.conf" <<-EOC
	[daemon]
	backend=cpufreq

	[vm $E2E_VM_NAME]
	ceiling=$1
	cpus=0,2,4,6
	EOC
}

e2e_start_agent() {
	"$freqhintd" --foreground --verbose --config "$E2E_DIR/freqhintd.conf" \
		--backend cpufreq --sysfs-root "$E2E_FX/sys" --proc-root /proc \
		--cgroup-root /sys/fs/cgroup --socket "$E2E_DIR/device.sock" \
		--control-socket "$E2E_DIR/control.sock" --state-dir "$E2E_DIR/state" \
		--libvirt-uri none --no-metrics >>"$E2E_AGENT_LOG" 2>&1 &
	E2E_AGENT_PID=$!
	eventually 30 test -S "$E2E_DIR/control.sock" ||
		die "freqhintd did not open $E2E_DIR/control.sock within 30 s (log: $E2E_AGENT_LOG)"
}

# stop_agent TERM|KILL
stop_agent() {
	kill -"$1" "$E2E_AGENT_PID"
	wait "$E2E_AGENT_PID" 2>/dev/null || true
	E2E_AGENT_PID=
	rm -f "$E2E_DIR/control.sock"
}

# e2e_start_guest [--tag TAG] [--timeout S] [--device-props ,K=V...]
#                 [--outgoing | --incoming URI --since T] [-- QEMU ARGS]: boot
# E2E_INITRD with the device on $E2E_DIR/device.sock, the control port on
# the second serial port (ttyS1; arm64: ttyAMA1, the virt machine's second
# PL011, there when -serial is given twice) ($E2E_DIR/guest-ctl.sock) and QMP on $E2E_DIR/qmp.sock; QEMU ARGS
# come after those (a further -serial is ttyS2).  The guest's console goes
# to $E2E_CONSOLE, run-guest.sh's output to $E2E_DIR/run-guest.out.
# A TAG names one of the QEMUs that run the same guest (a migration's
# source and destination): its sockets are guest-ctl-TAG.sock and
# qmp-TAG.sock, its output run-guest-TAG.out, its pid in TAG.pid.
# --outgoing, --incoming and --since go to run-guest.sh.
e2e_start_guest() {
	local timeout=900 props='' tag='' run=() qemu=() extra=()
	while [ $# -gt 0 ]; do
		case $1 in
		--tag) tag=$2; shift 2 ;;
		--timeout) timeout=$2; shift 2 ;;
		--device-props) props=$2; shift 2 ;;
		--outgoing) run+=("$1"); shift ;;
		--incoming | --since) run+=("$1" "$2"); shift 2 ;;
		--) shift; extra=("$@"); break ;;
		*) die "e2e_start_guest: unknown argument $1" ;;
		esac
	done
	[ -z "$tag" ] || qemu=(-pidfile "$E2E_DIR/$tag.pid")
	# Multi-threaded TCG whatever the kernel: the agent places and the
	# emulated DVFS host slows each vCPU by its own host thread, as QEMU
	# reports them (query-cpus-fast, the device's vCPU list).
	"$here/tests/harness/run-guest.sh" --arch "$E2E_ARCH" --kernel "$E2E_KERNEL" --initrd "$E2E_INITRD" \
		--qemu "$E2E_QEMU" --smp "$E2E_SMP" --timeout "$timeout" --log "$E2E_CONSOLE" --quiet \
		--tcg-thread multi \
		"${run[@]}" -- \
		-name "$E2E_VM_NAME" -uuid "$E2E_VM_UUID" "${qemu[@]}" \
		-chardev "socket,id=fh0,path=$E2E_DIR/device.sock,reconnect-ms=500" \
		-object freqhint-agent,id=fha0,chardev=fh0 \
		-device "virtio-freqhint-pci,id=fh,backend=fha0$props" \
		-chardev "socket,id=ctl,path=$E2E_DIR/guest-ctl${tag:+-$tag}.sock,server=on,wait=off" \
		-serial chardev:ctl \
		-qmp "unix:$E2E_DIR/qmp${tag:+-$tag}.sock,server=on,wait=off" \
		"${extra[@]}" \
		>"$E2E_DIR/run-guest${tag:+-$tag}.out" 2>&1 &
	E2E_GUEST_PID=$!
}

# e2e_vcpu_tids: the running guest's vCPU threads as QEMU reports them
# (QMP query-cpus-fast), vCPU 0 first; sets E2E_VCPU_TIDS.
e2e_vcpu_tids() {
	local cpus i tid
	E2E_VCPU_TIDS=()
	eventually 60 test -S "$E2E_DIR/qmp.sock" || die "QEMU did not open $E2E_DIR/qmp.sock within 60 s"
	cpus=$(printf '%s\n' '{"execute":"qmp_capabilities"}' '{"execute":"query-cpus-fast"}' |
		socat -t 5 - "UNIX-CONNECT:$E2E_DIR/qmp.sock" | jq -c 'select(.return | type == "array") | .return')
	for i in $(seq 0 $((E2E_SMP - 1))); do
		tid=$(jq -r --argjson i "$i" '.[] | select(."cpu-index" == $i) | ."thread-id"' <<<"$cpus")
		[ -n "$tid" ] || die "no thread for vCPU $i in QMP's answer: $cpus"
		E2E_VCPU_TIDS+=("$tid")
	done
}

# e2e_vcpu_threads_to_fixture: the running guest's vCPU threads
# (e2e_vcpu_tids) into the fixture's /proc, vCPU i pinned to fixture CPU
# 2i as the agent's cpus= places it, for the emulated DVFS host
# (bench/dvfs-emu/fh-dvfs-emu, issue 40).
e2e_vcpu_threads_to_fixture() {
	local i tgid
	e2e_vcpu_tids
	for i in "${!E2E_VCPU_TIDS[@]}"; do
		tgid=$(awk '$1 == "Tgid:" { print $2 }' "/proc/${E2E_VCPU_TIDS[$i]}/status")
		"$here/tests/agent/mkfixture.sh" thread "$E2E_FX" "${E2E_VCPU_TIDS[$i]}" $((2 * i)) $((2 * i)) \
			/machine.slice "$tgid"
	done
}

# e2e_vcpu_schedstat: the host scheduler's account of the vCPU threads
# (e2e_vcpu_tids), summed: "RUN_NS WAIT_NS", the time they ran and the time
# they waited runnable on a run queue (/proc/TID/schedstat).
e2e_vcpu_schedstat() {
	local tid
	for tid in "${E2E_VCPU_TIDS[@]}"; do cat "/proc/$tid/schedstat"; done |
		awk '{ run += $1; wait += $2 } END { printf "%.0f %.0f\n", run, wait }'
}

# e2e_emu_start EMU TRACE|"" SUMMARY: the emulated DVFS host on the
# fixture and the vCPU threads of e2e_vcpu_threads_to_fixture (its log in
# $E2E_DIR/emu.log; fails if it did not start); e2e_emu_stop ends it
# (SIGTERM: it restores the threads).
e2e_emu_start() {
	local args=() tid
	for tid in "${E2E_VCPU_TIDS[@]}"; do args+=(--thread "$tid"); done
	[ -z "$2" ] || args+=(--trace "$2")
	"$1" --sysfs-root "$E2E_FX/sys" --proc-root "$E2E_FX/proc" "${args[@]}" >"$3" 2>>"$E2E_DIR/emu.log" &
	E2E_EMU_PID=$!
	sleep 0.2
	kill -0 "$E2E_EMU_PID" 2>/dev/null && return
	wait "$E2E_EMU_PID" 2>/dev/null || true
	E2E_EMU_PID=
	log "fh-dvfs-emu did not start: $(tail -n 1 "$E2E_DIR/emu.log")"
	return 1
}
e2e_emu_stop() {
	[ -n "$E2E_EMU_PID" ] || return 0
	kill -TERM "$E2E_EMU_PID"
	wait "$E2E_EMU_PID" || log "fh-dvfs-emu exited $? (see $E2E_DIR/emu.log)"
	E2E_EMU_PID=
}

e2e_wait_guest() {
	local rc=0
	wait "$E2E_GUEST_PID" || rc=$?
	E2E_GUEST_PID=
	cat "$E2E_DIR/run-guest.out" >&2
	grep -E 'FREQHINT-CHECK|clampflood' "$E2E_CONSOLE" >&2 || true
	return "$rc"
}

# e2e_connect_control [TAG]: the guest's second serial port (of QEMU TAG,
# see e2e_start_guest): one line per step each way.  One at a time.
e2e_connect_control() {
	local sock=$E2E_DIR/guest-ctl${1:+-$1}.sock
	eventually 60 test -S "$sock" ||
		die "QEMU${1:+ $1} did not open $sock within 60 s (see $E2E_DIR/run-guest${1:+-$1}.out)"
	coproc E2E_CTL { exec socat - "UNIX-CONNECT:$sock"; }
}

ctl_read() {
	local l
	IFS= read -r -t 600 l <&"${E2E_CTL[0]}" || return 1
	printf -v "$1" '%s' "${l%$'\r'}"
}

ctl_send() { printf '%s\n' "$*" >&"${E2E_CTL[1]}"; }

# next_step: wait for the guest's next "STEP NAME ARGS..." line (other
# lines are skipped) and log it; sets name and step_args.  Fails at the
# guest's "STEP end" and when the control port ends.
next_step() {
	local line
	while ctl_read line; do
		# shellcheck disable=SC2086 # the line's words
		set -- $line
		[ "${1:-}" = STEP ] || continue
		name=$2
		# shellcheck disable=SC2034 # for the caller
		step_args=("${@:3}")
		log "guest step: ${line#STEP }"
		[ "$name" != end ]
		return
	done
	return 1
}

# verdict OK|MESSAGE: answer the guest's step $name.  A MESSAGE says what
# was expected and what was seen: the step fails, and counts in
# host_failures.  With E2E_DEMO=1 the host's state is shown first.
verdict() {
	[ "${E2E_DEMO:-0}" = 0 ] || e2e_show_table "$name"
	if [ "$1" = OK ]; then
		ctl_send GO
	else
		host_failures=$((host_failures + 1))
		log "host check failed at step '$name': $1"
		ctl_send "NO $1"
	fi
}

# The guest's "connected" step: freqhintd holds the VM.
step_connected() {
	if eventually 20 vm_connected; then
		verdict OK
	else
		verdict "expected VM $E2E_VM_UUID in freqhintctl vms within 20 s; saw $(ctl_json vms 2>&1 | jq -c '[.[] | {name, uuid}]' 2>&1)"
	fi
}

# Checks on a running guest come in two kinds, as the design guarantees
# them: "eventually holds" (a state the system reaches and stays in long
# enough to be seen) and "holds for every sample" (an invariant).  Nothing
# here samples once what a guest's timing can change.

# eventually SECONDS CMD...: poll CMD every 50 ms until it succeeds; fail
# after SECONDS.
eventually() {
	local deadline=$(($(date +%s%N) + $1 * 1000000000))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s%N)" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# each_policy_eventually SECONDS CMD [ARG...]: "eventually CMD ARG... P" for
# each policy P of the fixture; E2E_FAILED_POLICY names the first that did not.
each_policy_eventually() {
	local secs=$1 p
	shift
	for p in 0 2 4 6; do
		E2E_FAILED_POLICY=$p
		eventually "$secs" "$@" "$p" || return 1
	done
	E2E_FAILED_POLICY=
}

# holds_for SECONDS CMD...: CMD succeeds on every sample (every 50 ms) for
# SECONDS; fails at the first sample where it does not.
holds_for() {
	local deadline=$(($(date +%s%N) + $1 * 1000000000))
	shift
	while [ "$(date +%s%N)" -lt "$deadline" ]; do
		"$@" >/dev/null 2>&1 || return 1
		sleep 0.05
	done
}

ctl_json() { "$freqhintctl" --socket "$E2E_DIR/control.sock" --json "$@"; }

vm_connected() {
	ctl_json vms | jq -e --arg u "$E2E_VM_UUID" \
		'[.. | objects | select(.uuid? == $u)] | length > 0'
}

# vcpu_hint_near VCPU MIN MAX TOL: freqhintd holds the guest's request
# MIN (within TOL)..MAX for VCPU.
vcpu_hint_near() {
	ctl_json vcpus | jq -e --argjson i "$1" --argjson lo "$2" --argjson hi "$3" --argjson t "$4" \
		'[.[] | select(.vcpu == $i)][0].hint | ((.min - $lo) | fabs) < $t and .max == $hi'
}

pdir() { echo "$E2E_FX/sys/devices/system/cpu/cpufreq/policy$1"; }
# The fixture's limit files are regular files, which freqhintd writes as it
# writes sysfs: open(O_TRUNC) then write(2).  Unlike a sysfs attribute, such
# a file reads empty in between (a tight loop here saw that in most reads),
# so an empty read is retried: it is never a value the agent wrote.
policy_get() {
	local v i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		v=$(<"$(pdir "$1")/scaling_$2_freq") || return 1
		[ -n "$v" ] && { echo "$v"; return 0; }
	done
	return 1
}
policy_is() { [ "$(policy_get "$1" "$2")" = "$3" ]; }
policy_original() {
	if [ "$2" = min ]; then cat "$(pdir "$1")/cpuinfo_min_freq"; else cat "$(pdir "$1")/cpuinfo_max_freq"; fi
}
policies_at_original() {
	local p
	for p in "$@"; do
		policy_limits_are "$p" "$(policy_original "$p" min)" "$(policy_original "$p" max)" || return 1
	done
}
# policy_limits_are P MIN MAX: both files, read together.
policy_limits_are() {
	local lo hi
	read -r lo hi < <(policy_pair "$1")
	[ "$lo" = "$2" ] && [ "$hi" = "$3" ]
}
policy_pair() { echo "$(policy_get "$1" min) $(policy_get "$1" max)"; }

# policies_released_under_cap KHZ P...: each policy P hosts a vCPU of a VM
# the operator capped at KHZ (unsnapped) and no floor: scaling_min_freq at
# its original, scaling_max_freq at the cap snapped down to its table (or
# the original, if that is lower).  The cap holds whatever the guest
# reports, an idle vCPU included (MR-27); only the floor follows the guest.
policies_released_under_cap() {
	local cap=$1 p want lo hi
	shift
	for p in "$@"; do
		want=$(snap_down "$cap" "$p")
		[ "$want" -le "$(policy_original "$p" max)" ] || want=$(policy_original "$p" max)
		read -r lo hi < <(policy_pair "$p")
		[ "$lo" = "$(policy_original "$p" min)" ] && [ "$hi" = "$want" ] || return 1
	done
}

# within_operator_ceiling KHZ P...: each policy P hosts a vCPU of a VM the
# operator capped at KHZ: its maximum is never above KHZ, whatever the guest
# reports (MR-27), and its minimum is its original (no active vCPU) or no
# higher than KHZ (MR-11: an active vCPU's floor is capped too).
within_operator_ceiling() {
	local cap=$1 p
	shift
	for p in "$@"; do
		policy_at_original_or_capped "$p" "$cap" || return 1
	done
}
# Checked file by file: the agent writes scaling_min_freq and
# scaling_max_freq one after the other, so a reader can see one file at its
# new value and the other at its old one (original -> 1.6..1.6 GHz reads
# 1.6..3.2 GHz in between).  So each file is judged alone: the minimum at
# its original or within the cap, the maximum within the cap.
policy_at_original_or_capped() {
	local lo hi
	read -r lo hi < <(policy_pair "$1")
	{ [ "$lo" = "$(policy_original "$1" min)" ] || [ "$lo" -le "$2" ]; } &&
		[ "$hi" -le "$2" ]
}

# policy_matches_agent P: what freqhintctl reports as policy P's limits
# ("frequency limits written") is what its files hold.  The agent writes
# whenever a quiet vCPU wakes or idles, so the files are read before and
# after freqhintctl answers, and only an unchanged pair is compared.
policy_matches_agent() {
	local p=$1 cpus before after lo hi
	before=$(policy_pair "$p")
	cpus=$(ctl_json cpus) || return 1
	after=$(policy_pair "$p")
	[ "$before" = "$after" ] || return 1
	read -r lo hi < <(jq -r --argjson c "$p" \
		'.[] | select(.cpu == $c) | "\(.min_freq_khz) \(.max_freq_khz)"' <<<"$cpus")
	[ "$after" = "$lo $hi" ]
}
# What policy_matches_agent compares, for a failure message.
agent_limits_summary() {
	ctl_json cpus 2>/dev/null | jq -r '[.[] | select(.cpu == (0, 2, 4, 6)) |
		"cpu\(.cpu) active=\(.policy_active) \(.min_freq_khz)..\(.max_freq_khz)"] | join(", ")'
}

policies_summary() {
	local p out=
	for p in 0 2 4 6; do out+="policy$p $(policy_get $p min)..$(policy_get $p max) "; done
	echo "$out"
}

# Capacity to kHz as schedutil maps it (spec/merge-rules.md): cap * max / 1024.
cap_to_khz() { echo $(($1 * $(policy_original 0 max) / 1024)); }
# Snap to a policy's frequency table: floors up, ceilings down.  A policy
# without a table (a continuous range) takes the value as it is.
snap_up() {
	[ -e "$(pdir "$2")/scaling_available_frequencies" ] || { echo "$1"; return; }
	tr ' ' '\n' <"$(pdir "$2")/scaling_available_frequencies" | grep . | sort -n |
		awk -v f="$1" '$1 + 0 >= f + 0 { print; exit }'
}
snap_down() {
	[ -e "$(pdir "$2")/scaling_available_frequencies" ] || { echo "$1"; return; }
	tr ' ' '\n' <"$(pdir "$2")/scaling_available_frequencies" | grep . | sort -n |
		awk -v f="$1" '$1 + 0 <= f + 0 { v = $1 } END { print v }'
}

# qom_stats: the device's stats, with host_ns_before/host_ns_after taken
# just before the question and just after the answer.
qom_stats() {
	local t0 out
	t0=$(date +%s%N)
	out=$(printf '%s\n' '{"execute":"qmp_capabilities"}' \
		'{"execute":"qom-get","arguments":{"path":"/machine/peripheral/fh","property":"x-stats"}}' |
		socat -t 5 - "UNIX-CONNECT:$E2E_DIR/qmp.sock") || return 1
	jq -c --argjson t0 "$t0" --argjson t1 "$(date +%s%N)" \
		'select(.return.notifications? != null) | .return + {host_ns_before: $t0, host_ns_after: $t1}' <<<"$out"
}

# device_vcpu_near VCPU MIN MAX TOL: the device holds MIN (within TOL)..MAX
# as VCPU's latest record.
device_vcpu_near() {
	qom_stats | jq -e --argjson i "$1" --argjson lo "$2" --argjson hi "$3" --argjson t "$4" \
		'((.vcpus[$i]["clamp-min"] - $lo) | fabs) < $t and .vcpus[$i]["clamp-max"] == $hi'
}

# device_cur_khz VCPU KHZ: the device holds KHZ as VCPU's host frequency
# (the agent's latest CUR_FREQ).
device_cur_khz() {
	qom_stats | jq -e --argjson i "$1" --argjson k "$2" '.vcpus[$i]["cur-khz"] == $k' >/dev/null
}

# The slowest of N freqhintctl answers, in ms.
agent_response_ms() {
	local i t0 t1 worst=0
	for i in $(seq "$1"); do
		t0=$(date +%s%N)
		ctl_json status >/dev/null || { echo 99999; return; }
		t1=$(date +%s%N)
		[ $(((t1 - t0) / 1000000)) -le "$worst" ] || worst=$(((t1 - t0) / 1000000))
		sleep 0.3
	done
	echo "$worst"
}

# The device's rate bound (spec/virtio-freqhint.md 6.4, rate window): guest
# notifications it handled between two samples <= elapsed / window + 1.
# The elapsed time is taken from before the first question to after the
# second answer, so a slow answer can only widen the bound, never narrow it.
E2E_RATE_WINDOW_MS=10
flood_within_bound() {
	jq -n -e --argjson b "$1" --argjson a "$2" --argjson w "$E2E_RATE_WINDOW_MS" \
		'($a.notifications - $b.notifications) <= (($a.host_ns_after - $b.host_ns_before) / 1e6 / $w + 1)'
}

report_latency() {
	[ $# -gt 0 ] || { log "latency: no samples"; return; }
	local sorted n
	sorted=($(printf '%s\n' "$@" | sort -n))
	n=${#sorted[@]}
	echo "latency guest step -> host write: n=$n p50=${sorted[$((n / 2))]} ms p99=${sorted[$(((n * 99 + 99) / 100 - 1))]} ms (includes uclampset start-up in the TCG guest)"
}

# What the host decided after a step, for the demo: per vCPU the guest's
# request and the host's effective clamp, per policy the limits written.
e2e_show_table() {
	local what=${1:-}
	printf '\n=== after step "%s" ===\n' "$what"
	"$freqhintctl" --socket "$E2E_DIR/control.sock" vcpus 2>/dev/null ||
		echo "(freqhintd is restarting)"
	printf '\n%-9s %-12s %-12s %s\n' POLICY MIN_KHZ MAX_KHZ "(host CPUs; fixture sysfs)"
	local p
	for p in 0 2 4 6; do
		printf 'policy%-3s %-12s %-12s %s\n' "$p" "$(policy_get $p min)" "$(policy_get $p max)" \
			"$(cat "$(pdir $p)/affected_cpus")"
	done
}
