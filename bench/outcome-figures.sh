#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Issue 40's figures from the raw results of bench/guest/outcome.sh:
#
#   outcome-figures.sh DIR
#
# prints key=value lines (outcome_*, read by bench/run.sh), per mode M
# pooled over its rounds:
#   outcome_M_p50_us, _p99_us        foreground response time, every request
#   outcome_M_p99_alone_us, _p99_shared_us
#                                    requests released while the background
#                                    was off / on the same vCPU
#   outcome_M_p50_alone_us, _p50_shared_us
#   outcome_M_requests, _late        requests, and those that started a period late
#   outcome_M_p99_rounds_us,         p99 and late requests of each round on its
#   outcome_M_late_rounds            own, in round order (comma-separated): a
#                                    round whose late requests queued behind
#                                    each other shows apart from the others
#   outcome_M_skipped                slots already past when the foreground got
#                                    going (left out, not requests)
#   outcome_M_energy, _energy_vm     energy of every policy / of the VM's two
#                                    policies (0, 2) within the workload's
#                                    interval (model units × s)
#   outcome_M_work_ms                work done, in ms of a vCPU at f_max
#                                    (the guest's loops over its calibration)
#   outcome_M_epw, _epw_vm           energy per ms of f_max work
#   outcome_M_mean_khz               vCPU1's policy's mean frequency in the interval
#   outcome_M_over_cap               windows of the VM's policies above the
#                                    operator's ceiling (the whole trace)
#   outcome_M_max_khz                highest frequency of the VM's policies
#   outcome_M_identity, _identity_windows, _identity_busy
#                                    DVFS identity: share of the interval's
#                                    windows in which vCPU1's policy's
#                                    frequency is within one table step of
#                                    the one the guest's schedutil last asked
#                                    of the driver (mapped to the host's table);
#                                    _busy: windows where vCPU1 ran at all
# Percentiles are nearest-rank.  The interval is [epoch, epoch + mode
# seconds] of the guest's clock, put on the host's by the round trip of
# least time (its half is the error, outcome_M_sync_err_us: the worst).
set -euo pipefail

dir=${1:?usage: $0 DIR}
[ -r "$dir/run.env" ] || { echo "$0: no $dir/run.env" >&2; exit 2; }
# shellcheck disable=SC1091
. "$dir/run.env"
: "${cal_loops_per_ms:?}" "${cal_gmax:?}" "${mode_seconds:?}" "${ceiling_e:?}" "${modes:?}"

# The VM's policies (vCPU i on CPU 2i) and vCPU1's.
vm_policies="0 2" vcpu1_policy=2

# word KEY FILE: KEY's value among FILE's key=value lines.
word() { sed -n "s/^$1=//p" "$2" | sed -n 1p; }
# num KEY FILE: the same, 0 when absent (older results)
num() { local v; v=$(word "$1" "$2"); echo "${v:-0}"; }

pct() { # FILE P: nearest-rank percentile of FILE's numbers
	sort -g "$1" | awk -v p="$2" '{ v[NR] = $1 } END { if (NR == 0) { print "?"; exit }
		i = int(p * NR); if (i < p * NR) i++; if (i < 1) i = 1; printf "%.0f\n", v[i] }'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for m in $modes; do
	: >"$tmp/all" ; : >"$tmp/alone" ; : >"$tmp/shared"
	requests=0 late=0 skipped=0 loops=0 energy=0 energy_vm=0 over=0 maxk=0 idn=0 idw=0 idbn=0 idbw=0 sync_err=0
	fsum=0 fwin=0 p99_rounds='' late_rounds=''
	for r in $(for f in "$dir"/step-"$m"-*; do [ -e "$f" ] && echo "${f##*-}"; done | sort -n); do
		step=$dir/step-$m-$r
		awk '{ print $2 >>"'"$tmp/all"'"; print $2 >>("'"$tmp"'/" ($3 == 1 ? "shared" : "alone")) }' "$dir/req-$m-$r"
		awk '{ print $2 }' "$dir/req-$m-$r" >"$tmp/round"
		p99_rounds="${p99_rounds:+$p99_rounds,}$(pct "$tmp/round" 0.99)"
		late_rounds="${late_rounds:+$late_rounds,}$(num late "$step")"
		requests=$((requests + $(num requests "$step")))
		late=$((late + $(num late "$step")))
		skipped=$((skipped + $(num skipped "$step")))
		loops=$((loops + $(num fg_loops "$step") + $(num bg_loops "$step")))
		epoch_us=$(($(word epoch_ns "$step") / 1000))
		off=$(word offset_us "$step")
		rtt=$(word rtt_us "$step")
		[ $((rtt / 2)) -le "$sync_err" ] || sync_err=$((rtt / 2))
		# One pass over the trace: energy in the interval, cap, identity.
		read -r e evm o mk n w bn bw fs fw < <(awk -F'\t' -v epoch_us="$epoch_us" -v off="$off" \
			-v secs="$mode_seconds" -v vm=" $vm_policies " -v p1="$vcpu1_policy" \
			-v cap="$(( ${ceiling_e%%.*} * 32000 ))" -v gmax="$cal_gmax" -v freqs="$dir/freq-$m-$r" '
			function idx(k) { k = (k - 800000) / 400000; if (k < 0) k = 0; if (k > 6) k = 6; return k }
			# RELATION_L on the host table: the lowest step at or above
			function up(k,  i) { i = int(idx(k)); if (800000 + 400000 * i < k && i < 6) i++; return i }
			BEGIN { nf = 0
				while ((getline l < freqs) > 0) { split(l, a, " "); fs_[++nf] = a[1]; fk[nf] = a[2] }
				fi = 0 }
			/^# fh-dvfs-emu/ { nh = split($0, h, " ")
				for (i = 1; i <= nh; i++) if (h[i] ~ /^start_realtime_us=/) { sub(/.*=/, "", h[i]); start = h[i] }
				t0 = (epoch_us + off - start) / 1e6; t1 = t0 + secs; next }
			/^#/ { next }
			{ t = $1; p = $2; k = $3
			  if (index(vm, " " p " ")) { if (k > mk) mk = k; if (k > cap) over++ }
			  if (t <= t0) e0[p] = $13
			  if (t <= t1) e1[p] = $13
			  if (p == p1 && t >= t0 && t < t1) {
				fs += k; fw++
				# the guest time of this window, its latest request
				g = (start + t * 1e6 - off) / 1e6
				while (fi < nf && fs_[fi + 1] <= g) fi++
				if (fi > 0) {
					d = idx(k) - up(fk[fi] / gmax * 3200000); if (d < 0) d = -d
					w++; if (d <= 1.0001) n++
					if ($12 > 0) { bw++; if (d <= 1.0001) bn++ }
				}
			  } }
			END { for (p in e1) { de = e1[p] - e0[p]; E += de; if (index(vm, " " p " ")) EV += de }
				printf "%.3f %.3f %d %d %d %d %d %d %.0f %d\n", E, EV, over, mk, n, w, bn, bw, fs, fw }' \
			"$dir/trace-$m-$r.tsv")
		energy=$(awk -v a="$energy" -v b="$e" 'BEGIN { printf "%.3f", a + b }')
		energy_vm=$(awk -v a="$energy_vm" -v b="$evm" 'BEGIN { printf "%.3f", a + b }')
		over=$((over + o)); [ "$mk" -le "$maxk" ] || maxk=$mk
		idn=$((idn + n)) idw=$((idw + w)) idbn=$((idbn + bn)) idbw=$((idbw + bw))
		fsum=$(awk -v a="$fsum" -v b="$fs" 'BEGIN { printf "%.0f", a + b }') fwin=$((fwin + fw))
	done
	[ "$requests" -gt 0 ] || continue
	work=$(awk -v l="$loops" -v c="$cal_loops_per_ms" 'BEGIN { printf "%.1f", l / c }')
	k="outcome_$m"
	echo "${k}_p50_us=$(pct "$tmp/all" 0.5)"
	echo "${k}_p99_us=$(pct "$tmp/all" 0.99)"
	echo "${k}_p50_alone_us=$(pct "$tmp/alone" 0.5)"
	echo "${k}_p99_alone_us=$(pct "$tmp/alone" 0.99)"
	echo "${k}_p99_shared_us=$(pct "$tmp/shared" 0.99)"
	echo "${k}_p50_shared_us=$(pct "$tmp/shared" 0.5)"
	echo "${k}_requests=$requests"
	echo "${k}_late=$late"
	echo "${k}_p99_rounds_us=$p99_rounds"
	echo "${k}_late_rounds=$late_rounds"
	echo "${k}_skipped=$skipped"
	echo "${k}_energy=$energy"
	echo "${k}_energy_vm=$energy_vm"
	echo "${k}_work_ms=$work"
	echo "${k}_epw=$(awk -v e="$energy" -v w="$work" 'BEGIN { printf "%.3f", (w > 0 ? e / w : 0) }')"
	echo "${k}_epw_vm=$(awk -v e="$energy_vm" -v w="$work" 'BEGIN { printf "%.3f", (w > 0 ? e / w : 0) }')"
	echo "${k}_mean_khz=$(awk -v s="$fsum" -v n="$fwin" 'BEGIN { printf "%.0f", (n > 0 ? s / n : 0) }')"
	echo "${k}_over_cap=$over"
	echo "${k}_max_khz=$maxk"
	echo "${k}_identity=$(awk -v n="$idn" -v w="$idw" 'BEGIN { printf "%.3f", (w > 0 ? n / w : 0) }')"
	echo "${k}_identity_windows=$idw"
	echo "${k}_identity_busy=$(awk -v n="$idbn" -v w="$idbw" 'BEGIN { printf "%.3f", (w > 0 ? n / w : 0) }')"
	echo "${k}_sync_err_us=$sync_err"
done
