# SPDX-License-Identifier: GPL-2.0-or-later
# Host side of the end-to-end tests and the demo: fixture, agent, guest,
# control channel, and the checks run-e2e.sh makes.  Source after
# scripts/lib.sh; needs $freqhintd and $freqhintctl set.

E2E_VM_NAME=freqhint-e2e
E2E_VM_UUID=6a1c2e8e-5b2f-4d53-9d0e-2f3c1a7b9e01
E2E_SMP=4

e2e_init() {
	E2E_DIR=$(mktemp -d "${TMPDIR:-/tmp}/freqhint-e2e.XXXXXX")
	E2E_FX=$E2E_DIR/fx
	E2E_AGENT_PID= E2E_GUEST_PID= E2E_CTL_FD=
	E2E_AGENT_LOG=$E2E_DIR/freqhintd.log
	E2E_CONSOLE=$E2E_DIR/console.log
	log "e2e work dir: $E2E_DIR"
}

e2e_cleanup() {
	local rc=$?
	[ -n "$E2E_GUEST_PID" ] && kill "$E2E_GUEST_PID" 2>/dev/null
	[ -n "$E2E_AGENT_PID" ] && kill "$E2E_AGENT_PID" 2>/dev/null
	wait 2>/dev/null
	if [ "$rc" != 0 ]; then
		log "failed; freqhintd log and console tail follow"
		tail -n 40 "$E2E_AGENT_LOG" 2>/dev/null | sed 's/^/  agent| /' >&2
		tail -n 60 "$E2E_CONSOLE" 2>/dev/null | sed 's/^/  guest| /' >&2
	fi
	[ "${FREQHINT_KEEP:-0}" = 1 ] || rm -rf "$E2E_DIR"
	return "$rc"
}

# e2e_prepare_guest STORY SAMPLES: module, workloads and the initramfs.
e2e_prepare_guest() {
	local story=$1 samples=$2
	E2E_KO=$E2E_DIR/virtio_freqhint.ko
	"$here/guest-driver/tests/build-module.sh" uclamp "$E2E_KO" >/dev/null
	local w
	for w in busy clampflood; do
		cc -static -O2 -Wall -Werror -o "$E2E_DIR/$w" "$here/tests/e2e/$w.c" ||
			die "cannot build $w"
	done
	echo "FREQHINT_E2E_SAMPLES=$samples" >"$E2E_DIR/env"
	E2E_INITRD=$("$here/tests/guest/mkinitramfs.sh" --test "$story" \
		--kernel "$("$here/tests/guest/build-kernel.sh" --print-dir)" \
		--module "$E2E_KO" --add "$E2E_DIR/busy:/bin/busy" \
		--add "$E2E_DIR/clampflood:/bin/clampflood" \
		--add "$E2E_DIR/env:/etc/freqhint-e2e.env")
}

e2e_make_fixture() {
	"$here/tests/agent/mkfixture.sh" host "$E2E_FX"
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
	eventually 10 test -S "$E2E_DIR/control.sock" || die "freqhintd did not start"
}

# stop_agent TERM|KILL
stop_agent() {
	kill -"$1" "$E2E_AGENT_PID"
	wait "$E2E_AGENT_PID" 2>/dev/null || true
	E2E_AGENT_PID=
	rm -f "$E2E_DIR/control.sock"
}

e2e_start_guest() {
	"$here/tests/guest/run-guest.sh" --kernel uclamp --initrd "$E2E_INITRD" \
		--smp "$E2E_SMP" --timeout 900 --log "$E2E_CONSOLE" --quiet -- \
		-name "$E2E_VM_NAME" -uuid "$E2E_VM_UUID" \
		-chardev "socket,id=fh0,path=$E2E_DIR/device.sock,reconnect-ms=500" \
		-device virtio-freqhint-pci,id=fh,chardev=fh0 \
		-chardev "socket,id=ctl,path=$E2E_DIR/guest-ctl.sock,server=on,wait=off" \
		-serial chardev:ctl \
		-qmp "unix:$E2E_DIR/qmp.sock,server=on,wait=off" \
		>"$E2E_DIR/run-guest.out" 2>&1 &
	E2E_GUEST_PID=$!
}

e2e_wait_guest() {
	local rc=0
	wait "$E2E_GUEST_PID" || rc=$?
	E2E_GUEST_PID=
	cat "$E2E_DIR/run-guest.out" >&2
	grep -E 'FREQHINT-CHECK|clampflood' "$E2E_CONSOLE" >&2 || true
	return "$rc"
}

# The guest's second serial port: one line per step each way.
e2e_connect_control() {
	eventually 60 test -S "$E2E_DIR/guest-ctl.sock" || die "QEMU did not start"
	coproc E2E_CTL { socat - "UNIX-CONNECT:$E2E_DIR/guest-ctl.sock"; }
}

ctl_read() {
	local l
	IFS= read -r -t 600 l <&"${E2E_CTL[0]}" || return 1
	printf -v "$1" '%s' "${l%$'\r'}"
}

ctl_send() { printf '%s\n' "$*" >&"${E2E_CTL[1]}"; }

# eventually SECONDS CMD...: poll CMD every 50 ms until it succeeds.
eventually() {
	local deadline=$(($(date +%s%N) + $1 * 1000000000))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s%N)" -lt "$deadline" ] || return 1
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
policy_get() { cat "$(pdir "$1")/scaling_$2_freq"; }
policy_is() { [ "$(policy_get "$1" "$2")" = "$3" ]; }
policy_original() {
	if [ "$2" = min ]; then cat "$(pdir "$1")/cpuinfo_min_freq"; else cat "$(pdir "$1")/cpuinfo_max_freq"; fi
}
policies_at_original() {
	local p
	for p in "$@"; do
		policy_is "$p" min "$(policy_original "$p" min)" || return 1
		policy_is "$p" max "$(policy_original "$p" max)" || return 1
	done
}
# Every policy file holds what freqhintd now decides, or the original limits
# where no active vCPU holds the policy: nothing stale from an earlier run.
files_match_decisions() {
	local cpus p active lo hi
	cpus=$(ctl_json cpus) || return 1
	for p in 0 2 4 6; do
		read -r active lo hi < <(jq -r --argjson c "$p" \
			'.[] | select(.cpu == $c) | "\(.policy_active) \(.min_freq_khz) \(.max_freq_khz)"' <<<"$cpus")
		# An active policy whose decision equals its original limits has
		# nothing written (null): the files must then hold the originals.
		if [ "$active" = true ] && [ "$lo" != null ]; then
			policy_is "$p" min "$lo" && policy_is "$p" max "$hi" || return 1
		else
			policies_at_original "$p" || return 1
		fi
	done
}

policies_summary() {
	local p out=
	for p in 0 2 4 6; do out+="policy$p $(policy_get $p min)..$(policy_get $p max) "; done
	echo "$out"
}

# Capacity to kHz as schedutil maps it (spec/merge-rules.md): cap * max / 1024.
cap_to_khz() { echo $(($1 * $(policy_original 0 max) / 1024)); }
# Snap to a policy's frequency table: floors up, ceilings down.
snap_up() {
	tr ' ' '\n' <"$(pdir "$2")/scaling_available_frequencies" | grep . | sort -n |
		awk -v f="$1" '$1 >= f { print; exit }'
}
snap_down() {
	tr ' ' '\n' <"$(pdir "$2")/scaling_available_frequencies" | grep . | sort -n |
		awk -v f="$1" '$1 <= f { v = $1 } END { print v }'
}

qom_stats() {
	printf '%s\n' '{"execute":"qmp_capabilities"}' \
		'{"execute":"qom-get","arguments":{"path":"/machine/peripheral/fh","property":"x-stats"}}' |
		socat -t 2 - "UNIX-CONNECT:$E2E_DIR/qmp.sock" |
		jq -c --arg t "$(date +%s%N)" 'select(.return.notifications? != null) | .return + {host_ns: ($t | tonumber)}'
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

# The device's rate bound (spec/virtio-freqhint.md, rate window): guest
# notifications it handled between two samples <= elapsed / window + 1.
E2E_RATE_WINDOW_MS=10
flood_within_bound() {
	jq -n -e --argjson b "$1" --argjson a "$2" --argjson w "$E2E_RATE_WINDOW_MS" \
		'($a.notifications - $b.notifications) <= (($a.host_ns - $b.host_ns) / 1e6 / $w + 1)'
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
