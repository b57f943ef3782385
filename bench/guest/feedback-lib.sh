# SPDX-License-Identifier: GPL-2.0-or-later
#
# The cost of host feedback in guest exits (issue 30), sourced by
# bench/guest/run.sh (the benchmark guest's first boot) and by
# bench/guest/feedback-anchor.sh (the pre-v1 anchor): after
# tests/harness/e2e-lib.sh, with E2E_DIR, E2E_AGENT_PID and the guest's
# QMP socket set up by it.
#
# What is counted: every access of the guest to the device's PCI BAR, as
# QEMU's memory API dispatches it (trace events memory_region_ops_read and
# memory_region_ops_write, regions virtio-pci-{common,isr,device,notify}-
# virtio-freqhint), and the MSI-X table.  Under KVM each of these is an
# exit: the BAR is MMIO that KVM does not handle itself, except a notify
# write, which KVM turns into an ioeventfd signal, still after an exit.
# Under TCG (this machine) there is no ioeventfd, so the notify writes pass
# through the same path and are traced too.  The device's x-stats counters
# do not cover this: they count hint-queue kicks and FEEDBACK snapshots,
# not the guest's configuration, common-configuration or ISR reads, which
# are the pre-v1 layout's whole cost.  Not counted, the same for both
# layouts: the interrupt's own delivery and EOI (APIC virtualization makes
# them exit-free on current hosts).
#
# A host change is a new operator ceiling for the VM in freqhintd's
# configuration, reloaded with SIGHUP: freqhintd sends one GRANTS frame,
# the device relays it (v1: one FEEDBACK snapshot on the event queue;
# pre-v1: its configuration space and a configuration-change interrupt).

# fb_qemu_args: QEMU arguments for e2e_start_guest: the trace log, and the
# device's own event for a GRANTS it took (in both layouts; "changed 1"
# when the guest's view changed): the host changes it relayed.  (QEMU's
# log backend writes trace events only when a -trace option was given at
# start, so this one also makes the runtime switch below work.)
fb_qemu_args() {
	printf '%s\n' -D "$E2E_DIR/qemu-trace.log" -trace enable=virtio_freqhint_grants
}

# fb_trace true|false: the BAR access events on or off, over QMP.
fb_trace() {
	printf '%s\n' '{"execute":"qmp_capabilities"}' \
		"{\"execute\":\"trace-event-set-state\",\"arguments\":{\"name\":\"memory_region_ops_*\",\"enable\":$1}}" |
		socat -t 5 - "UNIX-CONNECT:$E2E_DIR/qmp.sock" | grep -c '"return": {}' | grep -qx 2
}

fb_log_size() { stat -c %s "$E2E_DIR/qemu-trace.log" 2>/dev/null || echo 0; }

# fb_count FROM TO: the log's bytes FROM..TO as "key=value" words: the
# device's BAR accesses by region (reads, writes; notify writes split into
# the hint queue's, 0, and the others), MSI-X table accesses, all of them,
# and the GRANTS the device took that changed the guest's view.
fb_count() {
	tail -c +"$(($1 + 1))" "$E2E_DIR/qemu-trace.log" | head -c "$(($2 - $1))" | awk '
	/memory_region_ops_(read|write)/ {
		n = split($0, q, "\047"); name = q[n - 1]
		rw = ($0 ~ /ops_read/) ? "r" : "w"
		if (name ~ /^msix-(table|pba)$/) { msix++; next }
		if (name !~ /freqhint/) next
		if (name ~ /^virtio-pci-notify/) {
			# The value written is the index of the queue.
			if ($0 ~ / value 0x0 /) hintq++; else other++
			next
		}
		sub(/^virtio-pci-/, "", name); sub(/-virtio-freqhint.*/, "", name)
		k[name "_" rw]++
	}
	/virtio_freqhint_grants.*changed 1/ { grants++ }
	END {
		printf "common_r=%d common_w=%d device_r=%d device_w=%d isr_r=%d ", \
			k["common_r"], k["common_w"], k["device_r"], k["device_w"], k["isr_r"]
		printf "kick_hintq=%d kick_other=%d msix=%d grants=%d ", hintq, other, msix, grants
		# Every exit but the hint queue kicks (the guest reporting its own
		# hints, what figure 1 counts).
		printf "exits=%d\n", k["common_r"] + k["common_w"] + k["device_r"] + k["device_w"] + \
			k["isr_r"] + other + msix
	}'
}

# fb_set_ceiling CONFIG PERCENT: the VM's operator ceiling in freqhintd's
# configuration ([vm $E2E_VM_NAME]), reloaded (SIGHUP).
fb_set_ceiling() {
	sed -i -e '/^ceiling=/d' -e "/^\[vm $E2E_VM_NAME\]\$/a ceiling=$2" "$1"
	kill -HUP "$E2E_AGENT_PID"
}

# fb_feedback_stat: the device's FEEDBACK snapshots so far (v1 x-stats),
# or nothing (pre-v1 has no such counter).
fb_feedback_stat() { qom_stats | jq -r '.feedback // empty' 2>/dev/null || true; }

# fb_measure CONFIG N PERIOD_MS: a quiet window of N periods (no host
# change: the background), then N host changes PERIOD_MS apart (the ceiling
# 90 % and back to 100 %), the trace on for both; prints key=value words:
# quiet_* and change_* counts, changes, snapshots (v1) and per_change: the
# exits of the changes' window minus the quiet window's, over the changes
# the device relayed (change_grants; the changes made if it saw none).
fb_measure() {
	local conf=$1 n=$2 period=$3 o0 o1 o2 s0 s1 i sec quiet change
	sec=$(awk -v p="$period" 'BEGIN { printf "%.3f", p / 1000 }')
	fb_trace true || { echo "error=trace-event-set-state"; return 1; }
	sleep 1
	o0=$(fb_log_size)
	# As long as the changes' window below.
	sleep "$(awk -v n="$n" -v s="$sec" 'BEGIN { print n * s + 1 }')"
	o1=$(fb_log_size)
	s0=$(fb_feedback_stat)
	i=0
	while [ "$i" -lt "$n" ]; do
		fb_set_ceiling "$conf" "$([ $((i % 2)) = 0 ] && echo 90 || echo 100)"
		sleep "$sec"
		i=$((i + 1))
	done
	# The last change's guest work.
	sleep 1
	o2=$(fb_log_size)
	s1=$(fb_feedback_stat)
	fb_trace false || true
	quiet=$(fb_count "$o0" "$o1")
	change=$(fb_count "$o1" "$o2")
	printf 'changes=%s period_ms=%s' "$n" "$period"
	# shellcheck disable=SC2086 # key=value words
	printf ' quiet_%s' $quiet
	# shellcheck disable=SC2086 # key=value words
	printf ' change_%s' $change
	[ -z "$s0" ] || printf ' snapshots=%s' "$((s1 - s0))"
	printf ' per_change=%s\n' "$(awk -v c="${change##*exits=}" -v q="${quiet##*exits=}" -v n="$n" \
		-v g="$(sed -n 's/.*grants=\([0-9]*\).*/\1/p' <<<"$change")" \
		'BEGIN { if (g > 0) n = g; printf "%.2f", (c - q) / n }')"
}

# fb_valid RESULT: fb_measure's words measured something: the device
# relayed at least one change (else freqhintd's reload or the GRANTS went
# wrong, and an exit count per change would mean nothing).
fb_valid() {
	case " $1" in
	*" change_grants=0 "* | *" error="*) return 1 ;;
	*" per_change="*) return 0 ;;
	esac
	return 1
}
