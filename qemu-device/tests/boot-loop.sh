#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# boot-loop.sh [--kernel K] [--out DIR] N
#
# Boot the test guest N times with virtio-freqhint-pci, then N times
# without it (TCG, q35, the project's QEMU), and report how many QEMU runs
# crashed in each set.  A crashed run keeps its console log, a gdb
# backtrace of every thread (crash-*.bt) and, for the first crash of each
# set, the core file (console.log.core), under DIR (default: a new directory under $TMPDIR,
# printed at the end).  Exit status 1 if any QEMU run crashed, 2 on a
# usage error.  --kernel as for tests/harness/run-guest.sh (default
# uclamp, the project's test kernel).
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

kernel=uclamp out=''
while [ $# -gt 1 ]; do
	case "$1" in
	--kernel) kernel=${2:?}; shift 2 ;;
	--out) out=${2:?}; shift 2 ;;
	*) break ;;
	esac
done
n=${1:-}
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [--kernel K] [--out DIR] N" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/freqhint-boot-loop.XXXXXX")
mkdir -p "$out"
out=$(cd "$out" && pwd)

qemu=${FREQHINT_QEMU:-$("$here/qemu-device/build-qemu.sh" --print-binary)}
[ "$(cat /proc/sys/kernel/core_pattern)" = core ] ||
	log "warning: core_pattern is '$(cat /proc/sys/kernel/core_pattern)': cores may land elsewhere"

declare -A crashes=([with]=0 [without]=0) other=([with]=0 [without]=0)
for set in with without; do
	for i in $(seq 1 "$n"); do
		dir=$out/$set-$i
		mkdir -p "$dir"
		extra=()
		if [ "$set" = with ]; then
			# No agent listens: the device boots without one, like a
			# VM whose host has no freqhintd.
			extra=(-chardev "socket,id=fh,path=$dir/agent.sock,reconnect-ms=1000"
				-object freqhint-agent,id=fha,chardev=fh
				-device virtio-freqhint-pci,backend=fha)
		fi
		set +e
		(cd "$dir" && "$here/tests/harness/run-guest.sh" --kernel "$kernel" \
			--test "$here/qemu-device/tests/boot-loop-guest.sh" \
			--qemu "$qemu" --smp 2 --mem 256M --timeout 180 --quiet \
			--log "$dir/console.log" \
			--append "freqhint.device=$([ "$set" = with ] && echo yes || echo no)" \
			-- "${extra[@]}") >"$dir/run.log" 2>&1
		rc=$?
		set -e
		# run-guest.sh leaves a crashed QEMU's core and backtrace
		# beside the console log.
		core=$dir/console.log.core
		if [ -e "$core" ] || grep -q 'QEMU exited with status 13[49]' "$dir/run.log"; then
			crashes[$set]=$((crashes[$set] + 1))
			log "$set device, boot $i: QEMU crashed ($(grep -o 'QEMU exited with status [0-9]*' "$dir/run.log" || echo core))"
			[ ! -e "$dir/console.log.bt" ] || mv "$dir/console.log.bt" "$dir/crash-$set-$i.bt"
			# One core per set is enough; the backtraces stay.
			[ "${crashes[$set]}" = 1 ] || rm -f "$core"
		elif [ $rc != 0 ]; then
			other[$set]=$((other[$set] + 1))
			log "$set device, boot $i: failed without a crash (see $dir/run.log)"
		else
			rm -rf "$dir"
		fi
	done
done
echo "boot-loop: $n boots with virtio-freqhint-pci: ${crashes[with]} QEMU crashes, ${other[with]} other failures"
echo "boot-loop: $n boots without it: ${crashes[without]} QEMU crashes, ${other[without]} other failures"
echo "boot-loop: kept in $out"
[ "${crashes[with]}" = 0 ] && [ "${crashes[without]}" = 0 ]
