#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Host-agent half of the benchmarks, no VM involved:
#   merge      fh-bench-merge: decode + merge + decide on the pure modules,
#              timed, and instructions per update under callgrind
#   memory     freqhintd (cpufreq backend, fixture tree) with 1000 VMs x 16
#              vCPUs connected by fh-bench-vms: VmHWM/VmRSS, CPU while idle
#   drain      the daemon's CPU per record with its client's speed out of
#              the way: stopped while every socket fills, timed as it reads
#              (250 VMs x 16 vCPUs, --drain-vms; 40 cycles)
#   flood      the same daemon flooded with 16-record HINTS frames: records
#              the daemon takes per second of its own CPU time
#   decide     fh-bench-decide on the same fixture (1000 x 16): the decision
#              pass after one vCPU's hint beside a full recompute, freqhintd's
#              own code without sockets, interleaved in one process
#   economy    freqhintd (cpufreq backend) under fh-bench-vms's mixed load:
#              host writes per 100 hint updates, and beside each size its
#              anchor: the same load with every write window off
#              ([cpufreq] min_write_interval_ms=0, quantum_khz=0), so that
#              every change of the decided limits is written at once
#   write      fh-bench-write: one cpufreq actuation on a fixture file
#
#   agent.sh --build DIR --out FILE [--quick] [--vms N] [--drain-vms N] [--steps LIST]
#
# DIR is a meson build dir where the bench programs, freqhintd and
# freqhintctl are built.  Writes key=value lines to FILE.  --steps: a
# comma-separated subset of merge,memory,flood,drain,decide,economy,write
# (memory includes the idle CPU; flood and drain start their own daemon when
# alone); default all.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"

build= out= quick=0 vms= drain_vms= steps=merge,memory,flood,drain,decide,economy,write
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--quick) quick=1 ;;
	--vms) vms=${2:?}; shift ;;
	--drain-vms) drain_vms=${2:?}; shift ;;
	--steps) steps=${2:?}; shift ;;
	*) die "usage: $0 --build DIR --out FILE [--quick] [--vms N] [--steps merge,memory,flood,drain,decide,economy,write]" ;;
	esac
	shift
done
[ -n "$build" ] && [ -n "$out" ] || die "--build and --out are required"
freqhintd=$build/host-agent/freqhintd
freqhintctl=$build/host-agent/freqhintctl
vmsbin=$build/bench/fh-bench-vms

result() { printf '%s=%q\n' "$1" "$2" >>"$out"; }
# step NAME: whether --steps asks for it
step() { case ",$steps," in *",$1,"*) return 0 ;; esac; return 1; }

T=$(mktemp -d "${TMPDIR:-/tmp}/fh-bench-agent.XXXXXX")
AGENT_WRAP=()
. "$here/bench/daemon-lib.sh"
# 1000 device connections plus the daemon's own files.
ulimit -n 8192

# --- fixture: mkfixture.sh's host, and N vCPU threads cloned from a template
FX=$T/fx
"$here/tests/agent/mkfixture.sh" host "$FX"
# make_threads BASE COUNT: thread BASE+k, pinned to CPU k % 8, in machine.slice.
make_threads() {
	local base=$1 count=$2 c
	for c in 0 1 2 3 4 5 6 7; do
		"$here/tests/agent/mkfixture.sh" thread "$T/tpl$c" 424242 "$c" "$c" /machine.slice/bench.scope
	done
	"$here/tests/agent/mkfixture.sh" cgroup "$FX" /machine.slice/bench.scope 5.00 90.00
	"$PYTHON3" - "$T" "$FX/proc" "$base" "$count" <<-'EOF'
	import os, sys
	t, proc, base, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
	tpl = []
	for c in range(8):
	    d = os.path.join(t, "tpl%d" % c, "proc", "424242")
	    tpl.append({f: open(os.path.join(d, f)).read() for f in os.listdir(d)})
	for k in range(count):
	    tid = base + k
	    d = os.path.join(proc, str(tid))
	    os.makedirs(d, exist_ok=True)
	    for f, text in tpl[k % 8].items():
	        with open(os.path.join(d, f), "w") as fh:
	            fh.write(text.replace("424242", str(tid)))
	EOF
}

# fh-bench-vms connects each VM from a process of its own (PA-20) whose
# cmdline the fixture links; a loaded host forking 1000 of them answers
# HELLOs late, so the handshake may take long.
peers=(--proc-fixture "$FX/proc" --handshake-ms 120000)

write_config() {
	cat >"$T/freqhintd.conf" <<-EOC
	[daemon]
	check_thread_owner=false
	max_connections=2000
	max_vcpus=$((VMS * VCPUS + 1000))
	# the peers are forked before their PINGs are answered
	keepalive_ms=600000
	EOC
}

VMS=1000 VCPUS=16
[ $quick = 1 ] && VMS=100
# A loaded host forks 1000 peer processes slowly (over 900 s at load 17).
[ -n "$vms" ] && VMS=$vms
# The drain: 250 VMs fill their sockets (~42 frames each) in a few seconds
# even on a loaded host, which 1000 peers do not; never more than VMS (the
# fixture's threads).
DRAIN_VMS=${drain_vms:-$([ $quick = 1 ] && echo 50 || echo 250)}
[ "$DRAIN_VMS" -le "$VMS" ] || DRAIN_VMS=$VMS
# Economy's largest load: 64 VMs x 4 vCPUs.
threads=256
{ step memory || step flood || step drain || step decide; } && threads=$((VMS * VCPUS))
log "bench: fixture with $threads vCPU threads"
make_threads 100000 "$threads"

# --- merge: the pure modules
if step merge; then
log "bench: decode + merge + decide (pure modules)"
merge=$("$build/bench/fh-bench-merge" --seconds "$([ $quick = 1 ] && echo 1 || echo 5)")
result merge_line "$merge"
for w in $merge; do result "merge_${w%%=*}" "${w#*=}"; done
merge1=$("$build/bench/fh-bench-merge" --records-per-frame 1 --seconds 2)
for w in $merge1; do result "merge1_${w%%=*}" "${w#*=}"; done
ir() {
	valgrind --tool=callgrind --callgrind-out-file="$T/cg.$1" \
		"$build/bench/fh-bench-merge" --rounds "$1" >/dev/null 2>"$T/cg.$1.err" ||
		die "callgrind failed: $(tail -n3 "$T/cg.$1.err")"
	sed -n 's/^summary: *//p' "$T/cg.$1"
}
ir5=$(ir 5)
ir25=$(ir 25)
result merge_ir_per_update "$(((ir25 - ir5) / (20 * 16000)))"
# Where the instructions go (self cost, whole 25-round run incl. set-up).
callgrind_annotate "$T/cg.25" 2>/dev/null |
	sed -nE 's/^ *[0-9,]+ \( *([0-9.]+)%\) +[^ ]*:([A-Za-z_0-9]+) .*/\2 \1%/p' | awk 'NR <= 8' |
	paste -sd';' | sed 's/;/; /g; s/^/merge_ir_top="/; s/$/"/' >>"$out"
fi

# --- memory, idle CPU and daemon flood with 1000 VMs x 16 vCPUs
if step memory; then
write_config
start_agent cpufreq --metrics-port 0
result mem_baseline_hwm_kb "$(vm_status VmHWM)"
result mem_baseline_anon_kb "$(vm_status RssAnon)"
result mem_baseline_file_kb "$(vm_status RssFile)"
log "bench: connecting $VMS VMs x $VCPUS vCPUs"
"$vmsbin" --socket "$T/device.sock" --vms $VMS --vcpus $VCPUS --tid-base 100000 "${peers[@]}" \
	--mode hold --ready-file "$T/ready" >"$T/hold.out" 2>"$T/hold.err" &
client_pid=$!
eventually 900 test -e "$T/ready" || die "fh-bench-vms did not connect: $(tail -n3 "$T/hold.err")"
eventually 30 test "$(status_field connected_vms)" = $VMS ||
	die "freqhintd has $(status_field connected_vms) VMs, want $VMS"
result mem_connect_s "$(sed -n 's/.*connected in \([0-9.]*\) s/\1/p' "$T/hold.err")"
# Idle with every VM connected.
sleep 2
c0=$(cpu_s)
sleep 10
c1=$(cpu_s)
result mem_idle_cpu_pct "$(echo "$c0 $c1" | awk '{ printf "%.1f", ($2 - $1) * 10 }')"
result mem_vms "$(status_field connected_vms)"
result mem_hwm_kb "$(vm_status VmHWM)"
result mem_rss_kb "$(vm_status VmRSS)"
result mem_anon_kb "$(vm_status RssAnon)"
kill -TERM "$client_pid"
wait "$client_pid" 2>/dev/null || true
client_pid=
eventually 30 test "$(status_field connected_vms)" = 0 || true
fi

if step flood; then
if [ -z "$agent_pid" ]; then
	write_config
	start_agent cpufreq --metrics-port 0
fi
log "bench: flooding freqhintd from $VMS VMs"
# Measured over a steady window of the flood: the peers' connects before it
# and their exits after it are full passes, not the flood.
rm -f "$T/flood-ready"
"$vmsbin" --socket "$T/device.sock" --vms $VMS --vcpus $VCPUS --tid-base 100000 "${peers[@]}" \
	--mode flood --seconds 16 --ready-file "$T/flood-ready" >"$T/flood.out" 2>"$T/flood.err" &
client_pid=$!
eventually 900 test -e "$T/flood-ready" || die "fh-bench-vms did not connect: $(tail -n3 "$T/flood.err")"
sleep 2
f0=$(status_field hints_frames_total) u0=$(status_field updates_total) c0=$(cpu_s) t0=$(date +%s%3N)
sleep 10
f1=$(status_field hints_frames_total) u1=$(status_field updates_total) c1=$(cpu_s) t1=$(date +%s%3N)
wait "$client_pid" || log "flood client: $(tail -n2 "$T/flood.err")"
client_pid=
frames=$((f1 - f0))
cpu=$(echo "$c0 $c1" | awk '{ print $2 - $1 }')
result flood_client "$(cat "$T/flood.out")"
result flood_window_s "$(echo "$t0 $t1" | awk '{ printf "%.1f", ($2 - $1) / 1000 }')"
result flood_records "$((frames * VCPUS))"
result flood_daemon_cpu_s "$cpu"
result flood_passes "$((u1 - u0))"
result flood_records_per_cpu_s "$(echo "$frames $VCPUS $cpu" | awk '{ printf "%.0f", $1 * $2 / $3 }')"
result flood_hwm_kb "$(vm_status VmHWM)"
stop_agent
fi

# The same daemon's own cost per record, whatever the client's speed: it is
# stopped while every socket is filled, then timed (CPU) until it read them.
if step drain; then
write_config
start_agent cpufreq --metrics-port 0
cycles=$([ $quick = 1 ] && echo 10 || echo 40)
log "bench: $DRAIN_VMS VMs filling their sockets while freqhintd is stopped, $cycles times"
"$vmsbin" --socket "$T/device.sock" --vms "$DRAIN_VMS" --vcpus $VCPUS --tid-base 100000 "${peers[@]}" \
	--mode drain --daemon-pid "$(daemon_pid)" --cycles "$cycles" >"$T/drain.out" 2>"$T/drain.err" ||
	die "fh-bench-vms --mode drain: $(tail -n3 "$T/drain.err")"
result drain_client "$(cat "$T/drain.out")"
result drain_vms "$DRAIN_VMS"
result drain_cycles "$cycles"
dr=$(sed -n 's/.*drain_records=\([0-9]*\).*/\1/p' "$T/drain.out")
dc=$(sed -n 's/.*drain_cpu_s=\([0-9.]*\).*/\1/p' "$T/drain.out")
result drain_records "$dr"
result drain_daemon_cpu_s "$dc"
result drain_records_per_cpu_s "$(echo "$dr $dc" | awk '{ printf "%.0f", ($2 > 0 ? $1 / $2 : 0) }')"
stop_agent
fi
# The flood's anchor in the same run: the pure merge loop (step merge).
if step merge && step flood; then
	result flood_vs_merge "$(awk -v f="$(sed -n 's/^flood_records_per_cpu_s=//p' "$out")" \
		-v m="$(sed -n 's/^merge_median_updates_per_s=//p' "$out")" \
		'BEGIN { if (m > 0) printf "%.3f", f / m; else print "?" }')"
fi

# --- one vCPU's hint against a full recompute, 1000 x 16, freqhintd's code
if step decide; then
log "bench: one hint's decision pass against a full recompute ($((VMS * VCPUS)) vCPUs)"
decide=$("$build/bench/fh-bench-decide" --sysfs-root "$FX/sys" --proc-root "$FX/proc" \
	--cgroup-root "$FX/cgroup" --vms $VMS --vcpus $VCPUS --tid-base 100000) ||
	die "fh-bench-decide failed"
result decide_line "$decide"
for w in $decide; do result "decide_${w%%=*}" "${w#*=}"; done
fi

# --- actuation economy: steady mixed load, cpufreq backend
# economy TAG VMS VCPUS SECONDS [CPUFREQ_KEYS]: CPUFREQ_KEYS go into the
# config's [cpufreq] section (one key=value a line).
economy() {
	local tag=$1 vms=$2 vcpus=$3 secs=$4 cpufreq_keys=${5:-} w0 w1 u0 u1
	rm -rf "$T/state"
	write_config
	[ -z "$cpufreq_keys" ] || printf '[cpufreq]\n%s\n' "$cpufreq_keys" >>"$T/freqhintd.conf"
	start_agent cpufreq --metrics-port 0
	"$vmsbin" --socket "$T/device.sock" --vms "$vms" --vcpus "$vcpus" --tid-base 100000 "${peers[@]}" \
		--mode mixed --seconds "$secs" --ready-file "$T/ready.$tag" >"$T/mixed.$tag.out" 2>"$T/mixed.$tag.err" &
	client_pid=$!
	eventually 60 test -e "$T/ready.$tag" || die "mixed client did not connect"
	# Counters from just after the FULL frames are in.
	sleep 0.5
	w0=$(status_field backend_writes_total) u0=$(status_field updates_total)
	wait "$client_pid" || die "mixed client failed: $(tail -n2 "$T/mixed.$tag.err")"
	client_pid=
	w1=$(status_field backend_writes_total) u1=$(status_field updates_total)
	local records
	records=$(sed -n 's/.* records=\([0-9]*\) .*/\1/p' "$T/mixed.$tag.out")
	result "econ_${tag}_records" "$records"
	result "econ_${tag}_seconds" "$secs"
	result "econ_${tag}_writes" "$((w1 - w0))"
	result "econ_${tag}_passes" "$((u1 - u0))"
	result "econ_${tag}_per100" "$(echo "$w1 $w0 $records" | awk '{ printf "%.2f", ($1 - $2) * 100 / $3 }')"
	stop_agent
}
# The anchor: nothing between a decided change and its write -- no per-policy
# write interval, no rounding of table-less policies' limits to a P-state
# step.  (Decision passes stay at most one per 5 ms, which is not a key.)
every_write='min_write_interval_ms=0
quantum_khz=0'
# ratio TAG: the figure over its anchor's, into econ_TAG_vs_anchor
econ_ratio() {
	result "econ_${1}_vs_anchor" "$(awk -v a="$(sed -n "s/^econ_${1}_per100=//p" "$out")" \
		-v b="$(sed -n "s/^econ_${1}_anchor_per100=//p" "$out")" \
		'BEGIN { if (b > 0) printf "%.3f", a / b; else print "?" }')"
}
if step economy; then
log "bench: actuation economy (each size beside its every-change-written anchor)"
secs=$([ $quick = 1 ] && echo 5 || echo 15)
economy small 8 4 "$secs"
economy small_anchor 8 4 "$secs" "$every_write"
econ_ratio small
economy large 64 4 "$secs"
economy large_anchor 64 4 "$secs" "$every_write"
econ_ratio large
# The same small load when every policy has a frequency table (policy6 of
# the fixture has none, like intel_pstate: every floor change is a new kHz).
p6=$FX/sys/devices/system/cpu/cpufreq/policy6
cp "$FX/sys/devices/system/cpu/cpufreq/policy0/scaling_available_frequencies" "$p6/"
economy tables 8 4 "$secs"
rm -f "$p6/scaling_available_frequencies"
fi

# --- one actuation on the fixture
if step write; then
log "bench: one cpufreq write"
w=$("$build/bench/fh-bench-write" "$FX/sys/devices/system/cpu/cpufreq/policy0/scaling_min_freq" 20000)
for x in $w; do result "write_${x%%=*}" "${x#*=}"; done
result write_fs "$(stat -f -c %T "$FX")"
# The same on tmpfs: no block filesystem under the file.
shm=$(mktemp /dev/shm/fh-bench-write.XXXXXX)
echo 800000 >"$shm"
w=$("$build/bench/fh-bench-write" "$shm" 20000)
rm -f "$shm"
for x in $w; do result "write_tmpfs_${x%%=*}" "${x#*=}"; done
fi
