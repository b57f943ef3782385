#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# watcher-test.sh WATCH-PROGRAM   (run by harness.sh, inside its namespace)
#
# The libvirt watcher against a real libvirtd and a TCG domain (no OS needed:
# metadata, lifecycle and pinning are libvirt's business):
#   - a running domain's metadata is read when the watcher starts;
#   - `virsh metadata --live` lowering the ceiling is seen (live event; the
#     time taken is logged), raising it back too;
#   - an invalid value (capacity units) is reported with the domain's name and
#     ignored (the VM is back to the defaults);
#   - vcpupin is followed;
#   - libvirtd restarted mid-test is reconnected, and events flow again;
#   - a watcher started while libvirtd is down connects when it comes up;
#   - `virsh destroy` makes the domain gone; a new start is seen.
set -euo pipefail
. "$FH_HARNESS"

watch_prog=$1
uri=$FH_LIBVIRT_URI
ns=urn:freqhint:metadata:1
dom=fh-watch-vm
out=$FH_HARNESS_DIR/watch.out
err=$FH_HARNESS_DIR/watch.err
out2=$FH_HARNESS_DIR/watch2.out
pids=()

fail() {
	log "FAIL: $*"
	log "watcher stdout:"; cat "$out" || true
	log "watcher stderr:"; tail -20 "$err" || true
	exit 1
}
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; return 0; }
trap cleanup EXIT

# Live changes get $LIVE seconds: the watcher does not poll metadata, so a
# change seen at all came through the live event; expect logs the time.
LIVE=10
lines() { wc -l <"$1"; }

# expect FILE FROM-LINE REGEX SECONDS: a line after FROM-LINE matches, in time.
expect() {
	local file=$1 from=$2 re=$3 secs=$4 t0 deadline
	t0=$(now_ms)
	deadline=$((t0 + secs * 1000))
	while :; do
		if tail -n +$((from + 1)) "$file" | grep -E -- "$re" >/dev/null; then
			log "ok: /$re/ after $(($(now_ms) - t0)) ms"
			return 0
		fi
		[ "$(now_ms)" -lt "$deadline" ] || fail "no line /$re/ within ${secs}s"
		sleep 0.02
	done
}

set_md() {
	virsh -q -c "$uri" metadata "$dom" "$ns" --live --key fh --set "$1" >/dev/null
}

domain_xml() {
	cat <<-EOF
		<domain type='qemu'>
		  <name>$dom</name>
		  <memory unit='MiB'>64</memory>
		  <vcpu placement='static'>2</vcpu>
		  <metadata>
		    <fh:freqhint xmlns:fh='$ns'>
		      <fh:floor>10</fh:floor>
		      <fh:ceiling>80</fh:ceiling>
		    </fh:freqhint>
		  </metadata>
		  <os><type arch='x86_64' machine='pc'>hvm</type></os>
		  <on_poweroff>destroy</on_poweroff>
		  <devices>
		    <emulator>$FH_EMULATOR</emulator>
		    <memballoon model='none'/>
		  </devices>
		</domain>
	EOF
}

log "emulator: $FH_EMULATOR"
domain_xml >"$FH_HARNESS_DIR/dom.xml"
virsh -q -c "$uri" define "$FH_HARNESS_DIR/dom.xml" >/dev/null
virsh -q -c "$uri" start "$dom" >/dev/null
uuid=$(virsh -q -c "$uri" domuuid "$dom")
log "domain $dom ($uuid) running"

# 1. Start: the running domain is listed and its metadata read.
: >"$out"
"$watch_prog" "$uri" >"$out" 2>"$err" &
pids+=($!)
expect "$out" 0 '^connected$' 10
expect "$out" 0 "^limits $dom $uuid floor=10.00 ceiling=80.00 guest-hints=on overrides=0 op=102/819$" 10
expect "$out" 0 "^placement $dom 0:cpu=-?[0-9]+,pinned=-1 1:cpu=-?[0-9]+,pinned=-1$" 10

# 2. Lowering the ceiling live is seen.
m=$(lines "$out")
set_md '<freqhint><ceiling>25.5</ceiling><vcpu id="1" ceiling="20"/></freqhint>'
expect "$out" "$m" "^limits $dom $uuid floor=0.00 ceiling=25.50 guest-hints=on overrides=1 op=0/261$" $LIVE

# 3. Raising it back restores.
m=$(lines "$out")
set_md '<freqhint><floor>10</floor><ceiling>max</ceiling></freqhint>'
expect "$out" "$m" "^limits $dom $uuid floor=10.00 ceiling=max guest-hints=on overrides=0 op=102/1024$" $LIVE

# 4. An invalid value (capacity units) is reported with the domain name and ignored.
m=$(lines "$out")
set_md '<freqhint><ceiling>800</ceiling></freqhint>'
expect "$out" "$m" "^limits $dom $uuid invalid: .*800.*percent" $LIVE
grep -q "domain \"$dom\" ($uuid): freqhint metadata ignored, defaults apply: .*percent" "$err" ||
	fail "the warning does not name the domain"
# A valid value afterwards is taken again.
m=$(lines "$out")
set_md '<freqhint><ceiling>50</ceiling><guest-hints>off</guest-hints></freqhint>'
expect "$out" "$m" "^limits $dom $uuid floor=0.00 ceiling=50.00 guest-hints=off overrides=0 op=0/512$" $LIVE

# 5. Metadata of other namespaces does not disturb.  libvirt delivers one
# connection's events in order, so a change of ours made afterwards is a
# marker: when its line is there, any reaction to the other one would be too.
m=$(lines "$out")
virsh -q -c "$uri" metadata "$dom" urn:example:other --live --key o --set '<o:x/>' >/dev/null
set_md '<freqhint><ceiling>50</ceiling><guest-hints>off</guest-hints><vcpu id="1" ceiling="20"/></freqhint>'
expect "$out" "$m" "^limits $dom $uuid floor=0.00 ceiling=50.00 guest-hints=off overrides=1 op=0/512$" $LIVE
[ "$(lines "$out")" = $((m + 1)) ] || fail "reacted to another namespace: $(tail -n +$((m + 1)) "$out")"

# 6. vcpupin is followed (tunable event).
m=$(lines "$out")
virsh -q -c "$uri" vcpupin "$dom" 1 0 --live >/dev/null
expect "$out" "$m" "^placement $dom 0:cpu=-?[0-9]+,pinned=-1 1:cpu=-?[0-9]+,pinned=0$" $LIVE

# 7. libvirtd restarted mid-test: the watcher reconnects and events flow again.
m=$(lines "$out")
libvirtd_stop
expect "$out" "$m" '^disconnected$' 20
# A second watcher started while libvirtd is down keeps waiting.
"$watch_prog" "$uri" >"$out2" 2>"$FH_HARNESS_DIR/watch2.err" &
pids+=($!)
sleep 1
kill -0 "${pids[1]}" || fail "a watcher without libvirtd exited"
grep -q '^connected$' "$out2" && fail "second watcher claims a connection without libvirtd"
libvirtd_start
expect "$out" "$m" '^connected$' 10
expect "$out2" 0 '^connected$' 10
expect "$out2" 0 "^limits $dom $uuid floor=0.00 ceiling=50.00 guest-hints=off" $LIVE
m=$(lines "$out")
set_md '<freqhint><ceiling>30</ceiling></freqhint>'
expect "$out" "$m" "^limits $dom $uuid floor=0.00 ceiling=30.00 guest-hints=on overrides=0 op=0/307$" $LIVE
# The domain survived the restart: no "gone" for it.
grep -q "^gone $dom" "$out" && fail "domain reported gone across a libvirtd restart"

# 8. Destroy: gone (both watchers); a new start is seen with its live metadata reset.
m=$(lines "$out")
virsh -q -c "$uri" destroy "$dom" >/dev/null
expect "$out" "$m" "^gone $dom $uuid$" $LIVE
expect "$out2" 0 "^gone $dom $uuid$" $LIVE
m=$(lines "$out")
virsh -q -c "$uri" start "$dom" >/dev/null
expect "$out" "$m" "^limits $dom $uuid floor=10.00 ceiling=80.00 guest-hints=on overrides=0 op=102/819$" $LIVE

# 9. Domain stopped while libvirtd is down: gone after the reconnect.
m=$(lines "$out")
libvirtd_stop
expect "$out" "$m" '^disconnected$' 20
qpid=$(cat "/run/libvirt/qemu/$dom.pid")
kill -TERM "$qpid"
for _ in $(seq 100); do kill -0 "$qpid" 2>/dev/null || break; sleep 0.1; done
libvirtd_start
expect "$out" "$m" "^gone $dom $uuid$" 10

# Both watchers stop cleanly on SIGTERM, without sanitizer or GLib reports.
for i in 0 1; do
	kill -TERM "${pids[$i]}"
	wait "${pids[$i]}" || fail "watcher $i exited with status $?"
done
pids=()
! grep -qE 'CRITICAL|GLib-WARNING|Sanitizer|runtime error' "$err" "$FH_HARNESS_DIR/watch2.err" ||
	fail "GLib/sanitizer report from a watcher"
log "PASS"
exit 0
