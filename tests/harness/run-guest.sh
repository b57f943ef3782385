#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Boot a test guest under QEMU (TCG, q35) with an initramfs from
# mkinitramfs.sh and judge the run from its serial console.
#
#     --arch x86_64|arm64  default x86_64.  arm64: the virt machine
#                     (gic-version=3, -cpu max, multi-threaded TCG),
#                     qemu-system-aarch64 from build-qemu.sh --arch arm64,
#                     the arm64 kernels (build-kernel.sh/fetch-stock-kernel.sh
#                     --arch arm64) and initramfs, console on the PL011
#                     (ttyAMA0), virtio-mmio transports in modern mode
#                     (-global virtio-mmio.force-legacy=false) so that
#                     -device virtio-freqhint-device lands on one of them
#
#   run-guest.sh --kernel K (--initrd IMG | --test SCRIPT [--module KO]...
#                [--add HOST:GUEST]...) [options] [-- QEMU ARGS...]
#     --kernel K      uclamp (build-kernel.sh's kernel), stock (Debian's, see
#                     fetch-stock-kernel.sh), a cache entry dir, or a bzImage
#                     (arm64: an Image)
#     --initrd IMG    boot IMG as is; otherwise one is made by mkinitramfs.sh
#                     from --test/--module/--add (and K's transport modules)
#     --smp N         vCPUs (default 4)       --mem SIZE   (default 512M)
#     --tcg-thread single|multi  TCG's threading (default: multi, except
#                     single for an x86_64 kernel that patches its text
#                     live, below).  single runs every vCPU on one host
#                     thread: a guest with many more vCPUs than host cores
#                     then boots in bounded time instead of stalling
#     --cpu MODEL     default qemu64,vendor=GenuineIntel,family=6,model=85:
#                     a model with constant_tsc, without which the guest's
#                     cpufreq core refuses fast frequency switching
#                     (arm64: max)
#     --timeout S     kill QEMU after S seconds (default 300; three times
#                     that on the KCSAN kernel, FREQHINT_KERNEL_VARIANT=kcsan)
#     --qemu BIN      QEMU binary; else $FREQHINT_QEMU (x86_64 only); else
#                     qemu-device/build-qemu.sh --print-binary (the project's
#                     QEMU, built if needed); else qemu-system-x86_64 in PATH
#                     (arm64: --qemu, else build-qemu.sh --arch arm64)
#     --append ARGS   more kernel command line (repeatable)
#     --tsc-khz N|auto|none  tell the guest its TSC rate (tsc_early_khz=).
#                     Under TCG the guest reads the host's TSC, and the
#                     guest's own calibration against the PIT fails on a busy
#                     host (95 MHz measured: a guest clock 27x fast).  auto
#                     (default) takes the host kernel's calibration (x86_64
#                     only: arm64 has the architected timer)
#     --kmemleak      have /init scan for leaks after the test (uclamp kernel)
#     --log FILE      console log (default: a new file under $TMPDIR)
#     --quiet         print the console log only when the run fails
#     --judge-log FILE  boot nothing: judge an existing console log (tests)
#   Live migration (one guest, two QEMUs, one console log):
#     --incoming URI  start QEMU with -incoming URI: the guest arrives by
#                     migration; the console log is appended to, not
#                     truncated, so it holds the guest's whole run
#     --since T       the guest's first QEMU started at T (date +%s.%N):
#                     the guest clock check counts from then (--incoming)
#     --outgoing      the guest migrates away: this run passes when QEMU
#                     exits 0 (quit after the migration) and the console
#                     shows nothing alarming; the verdict and the poweroff
#                     are the destination's to show
#   Everything after `--` goes to QEMU as is (e.g. -chardev/-device).
#
# Exit status 0 only if the console shows "FREQHINT-TEST-RESULT: PASS", /init
# reached poweroff, QEMU exited by itself within the timeout, and the kernel
# logged nothing alarming: a printk line starting with WARNING:, BUG:, Oops,
# Call Trace:, Kernel panic, UBSAN: or kmemleak findings (a KCSAN data race
# report is a "BUG: KCSAN:" line), and arm64's own
# words for the same (its faults print "Unable to handle kernel ..." and
# "Internal error: Oops", never "BUG:" or a line starting "Oops"; its stack
# dumps "Call trace:").  The line prefix matters: "RETBleed: WARNING: ..."
# is a mitigation notice, not a WARN().  The last line on stderr says how long the run took.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"
# set -e exits without a word; say where.
trap 'log "error: $0:$LINENO: $BASH_COMMAND failed"' ERR

kernel='' initrd='' log='' qemu='' append='' judge=''
incoming='' outgoing=0 since=''
smp=4 mem=512M timeout=300 quiet=0 kmemleak=0 tsc_khz=auto
cpu='' arch=x86_64 tcg_thread=''
mk_args=() qemu_extra=()
while [ $# -gt 0 ]; do
	case "$1" in
		--arch) arch=${2:?}; shift ;;
		--kernel) kernel=${2:?}; shift ;;
		--initrd) initrd=${2:?}; shift ;;
		--test|--module|--add) mk_args+=("$1" "${2:?}"); shift ;;
		--smp) smp=${2:?}; shift ;;
		--tcg-thread) tcg_thread=${2:?}; shift ;;
		--mem) mem=${2:?}; shift ;;
		--cpu) cpu=${2:?}; shift ;;
		--timeout) timeout=${2:?}; shift ;;
		--qemu) qemu=${2:?}; shift ;;
		--append) append="${append:+$append }${2:?}"; shift ;;
		--tsc-khz) tsc_khz=${2:?}; shift ;;
		--kmemleak) kmemleak=1 ;;
		--log) log=${2:?}; shift ;;
		--quiet) quiet=1 ;;
		--judge-log) judge=${2:?}; shift ;;
		--incoming) incoming=${2:?}; shift ;;
		--outgoing) outgoing=1 ;;
		--since) since=${2:?}; shift ;;
		--) shift; qemu_extra=("$@"); break ;;
		*) die "unknown argument $1 (see the comment at the top of $0)" ;;
	esac
	shift
done
# What differs per architecture: the machine, the CPU model, the console,
# the kernel image's name in a cache entry, the QEMU binary.
case "$arch" in
	x86_64)
		: "${cpu:=qemu64,vendor=GenuineIntel,family=6,model=85}"
		machine=(-machine q35)
		console=ttyS0 image_name=bzImage qemu_name=qemu-system-x86_64
		qemu=${qemu:-${FREQHINT_QEMU:-}} ;;
	arm64)
		: "${cpu:=max}"
		machine=(-machine virt,gic-version=3 -global virtio-mmio.force-legacy=false)
		console=ttyAMA0 image_name=Image qemu_name=qemu-system-aarch64
		tsc_khz=none ;;
	*) die "--arch x86_64|arm64, not '$arch'" ;;
esac
# host_tsc_khz: the host kernel's TSC rate in kHz, or nothing.
host_tsc_khz() {
	local k
	k=$(dmesg 2>/dev/null | sed -n \
		-e 's/.*tsc: Refined TSC clocksource calibration: \([0-9]*\)\.\([0-9]\{3\}\) MHz.*/\1\2/p' \
		-e 's/.*tsc: Detected \([0-9]*\)\.\([0-9]\{3\}\) MHz processor.*/\1\2/p' | tail -n1)
	# A long-running host may have lost those lines; a VM host with a
	# known TSC rate reports it as "cpu MHz".
	if [ -z "$k" ] && grep -qw tsc_known_freq /proc/cpuinfo; then
		k=$(awk -F': ' '/^cpu MHz/ { printf "%d\n", $2 * 1000; exit }' /proc/cpuinfo)
	fi
	echo "$k"
}

boot() {
	[ -n "$kernel" ] || die "--kernel uclamp|stock|DIR|bzImage is required"

	# The kernel: a cache entry (bzImage + transport modules) or a bare image.
	kdir=
	case "$kernel" in
		uclamp) kdir=$("$here/tests/harness/build-kernel.sh" --arch "$arch" --print-dir) ;;
		stock) kdir=$("$here/tests/harness/fetch-stock-kernel.sh" --arch "$arch" --print-dir) ;;
		*) if [ -d "$kernel" ]; then kdir=$kernel; fi ;;
	esac
	# FREQHINT_KERNEL_VARIANT=kcsan (build-kernel.sh): every access of the
	# kernel and the module instrumented, and a watchpoint delays one in
	# a few thousand by up to 80 us; the guest runs several times slower.
	if [ "$kernel" = uclamp ] && [ "${FREQHINT_KERNEL_VARIANT:-}" = kcsan ]; then
		timeout=$((timeout * 3))
	fi
	if [ -n "$kdir" ]; then
		bzimage=$kdir/$image_name
	else
		bzimage=$kernel
	fi
	[ -r "$bzimage" ] || die "kernel image $bzimage not found"
	# x86 Linux with jump labels patches its own text while its other CPUs
	# run (text_poke_bp(): an int3 first, then the new bytes), and QEMU
	# 10.0's multi-threaded TCG does not always keep up: Debian's kernel
	# took "Oops: int3" at sched_clock_cpu+0x9 right after "sched_clock:
	# Marking stable", and once a #DB in kmem_cache_alloc with a pointer
	# for EFLAGS (each seen once in the suite's runs of December 2026).
	# One host thread for all vCPUs rules such a race out.  The project's
	# uclamp kernel has no jump labels; arm64 swaps a branch for a NOP in
	# one aligned word, with no int3 stage.
	if [ -z "$tcg_thread" ] && [ "$arch" = x86_64 ] && [ -n "$kdir" ] &&
		grep -qsx 'CONFIG_JUMP_LABEL=y' "$kdir/build/.config"; then
		tcg_thread=single
	fi
	machine+=(-accel "tcg,thread=${tcg_thread:-multi}")

	if [ -z "$initrd" ]; then
		[ ${#mk_args[@]} -gt 0 ] || die "--initrd IMG or --test SCRIPT is required"
		initrd=$("$here/tests/harness/mkinitramfs.sh" --arch "$arch" ${kdir:+--kernel "$kdir"} "${mk_args[@]}")
	fi
	[ -r "$initrd" ] || die "initramfs $initrd not found"

	if [ -z "$qemu" ]; then
		if [ -x "$here/qemu-device/build-qemu.sh" ]; then
			qemu=$("$here/qemu-device/build-qemu.sh" --arch "$arch" --print-binary) ||
				die "building the project's QEMU failed (or pass --qemu BIN)"
		else
			qemu=$(command -v "$qemu_name") || die "no $qemu_name"
		fi
	fi
	[ -x "$qemu" ] || die "QEMU binary $qemu not found"

	[ -n "$log" ] || log=$(mktemp "${TMPDIR:-/tmp}/freqhint-guest.XXXXXX.log")
	# A migration's destination continues its source's console log.
	[ -n "$incoming" ] || : >"$log"

	cmdline="console=$console panic=-1 rdinit=/init"
	[ "$kmemleak" = 1 ] && cmdline+=" freqhint.kmemleak=1"
	case "$tsc_khz" in
		none) ;;
		auto)
			tsc_khz=$(host_tsc_khz)
			if [ -n "$tsc_khz" ]; then
				cmdline+=" tsc_early_khz=$tsc_khz"
			else
				log "warning: host TSC rate unknown; the guest calibrates it itself"
			fi ;;
		*) cmdline+=" tsc_early_khz=$tsc_khz" ;;
	esac
	[ -n "$append" ] && cmdline+=" $append"

	# Multi-threaded TCG (QEMU's default): tests need each vCPU on its
	# own host thread.  QEMU 10.0.2 segfaulted here in about 1 of 100
	# boots on a busy host (a vCPU used its cached memory dispatch after
	# RCU freed it); the project's QEMU carries the fix
	# (qemu-device/patches/fixes/), and qemu-device/tests/boot-loop.sh
	# counts crashes.
	qemu_cmd=(
		"$qemu" -nodefaults -no-user-config -display none -no-reboot
		"${machine[@]}" -cpu "$cpu" -smp "$smp" -m "$mem"
		-chardev "file,id=con,path=$log,append=on" -serial chardev:con
		-kernel "$bzimage" -initrd "$initrd" -append "$cmdline"
		"${qemu_extra[@]}"
	)
	[ -z "$incoming" ] || qemu_cmd+=(-incoming "$incoming")

	# Core dumps on, so that a crash seen once in CI can be read (with
	# core_pattern "core" the file lands in this directory).
	stamp=$(mktemp "${TMPDIR:-/tmp}/freqhint-qemu-start.XXXXXX")
	t0=$(date +%s.%N)
	run_t0=${since:-$t0}
	set +e
	(ulimit -c unlimited 2>/dev/null; exec timeout -k 5 "$timeout" "${qemu_cmd[@]}" </dev/null)
	qrc=$?
	set -e
	elapsed=$(echo "$(date +%s.%N) - $t0" | bc)
	# The guest's age: since its first QEMU started (a migrated guest).
	guest_elapsed=$(echo "$(date +%s.%N) - $run_t0" | bc)
	report_crash
	rm -f "$stamp"
}

# report_crash: after a QEMU crash, print the crashing thread's backtrace
# (every thread's goes to $log.bt) so that a rare crash seen once in CI
# can still be diagnosed.
report_crash() {
	local core
	case $qrc in 134|139) ;; *) return 0 ;; esac
	core=$(find . -maxdepth 1 -name 'core*' -type f -newer "$stamp" -print -quit 2>/dev/null)
	if [ -z "$core" ] || ! command -v gdb >/dev/null; then
		log "QEMU crashed (status $qrc); no core file to read (core_pattern: $(cat /proc/sys/kernel/core_pattern))"
		return 0
	fi
	gdb -batch -q -ex bt -ex 'thread apply all bt' "$qemu" "$core" >"$log.bt" 2>&1 || true
	log "QEMU crashed (status $qrc); backtrace of the crashing thread (all threads: $log.bt):"
	sed -n '/^#[0-9]/p' "$log.bt" | sed -n 1,30p >&2
	# Keep the newest core only (each is the size of guest RAM).
	mv -f "$core" "$log.core"
}

if [ -n "$judge" ]; then
	[ -r "$judge" ] || die "$judge not found"
	log=$judge qrc=0 elapsed=0 guest_elapsed=0
else
	boot
fi

# Judge the console.
fail=()
case $qrc in
	0) ;;
	124|137) fail+=("timeout after ${timeout}s") ;;
	*) fail+=("QEMU exited with status $qrc") ;;
esac
results=$(tr -d '\r' <"$log" | grep '^FREQHINT-TEST-RESULT:' || true)
# Exactly one verdict, and it is PASS (a test echoing its own would show).
# A guest that migrated away ends on its destination, which shows both.
if [ "$outgoing" = 0 ]; then
	[ "$results" = "FREQHINT-TEST-RESULT: PASS" ] ||
		fail+=("wanted one FREQHINT-TEST-RESULT: PASS line, got: $(echo "${results:-none}" | paste -sd ';')")
	grep -q "FREQHINT-INIT: poweroff" "$log" || fail+=("/init did not reach poweroff")
fi
# A failed check fails the run, whether or not the test ended with
# done_testing (a script that forgot it exits 0 after a failed check).
failed=$(tr -d '\r' <"$log" | grep -c '^FREQHINT-CHECK: FAIL' || true)
[ "$failed" = 0 ] || fail+=("$failed check(s) failed: $(tr -d '\r' <"$log" | grep -m1 '^FREQHINT-CHECK: FAIL')")
alarm=$(tr -d '\r' <"$log" |
	grep -E '\] (WARNING:|BUG:|Oops|Call Trace:|Kernel panic|UBSAN:|kmemleak: [0-9]+ new suspected|Unable to handle kernel|Internal error:|Call trace:)|^FREQHINT-KMEMLEAK: [0-9]+ leaks' |
	sed -n 1,5p || true)
# No "| head" under pipefail: a writer still writing when head exits dies of
# SIGPIPE, and the whole line fails at random (it did, under load).
[ -z "$alarm" ] || fail+=("kernel reported: ${alarm%%$'\n'*}")
# A guest clock far ahead of the wall clock means a miscalibrated TSC: every
# timer, rate window and sleep in the test would be wrong.
last_ts=$(sed -n 's/^\[ *\([0-9]*\)\.[0-9]*\].*/\1/p' "$log" | tail -n1)
if [ -n "$judge" ]; then
	:
elif [ "$outgoing" = 1 ]; then
	:  # the destination checks the guest's whole run
elif [ -n "$last_ts" ] && [ "$(echo "$last_ts > $guest_elapsed * 1.5 + 5" | bc)" = 1 ]; then
	fail+=("guest clock ran fast: ${last_ts}s of guest time in ${guest_elapsed}s (TSC miscalibrated)")
fi

if [ ${#fail[@]} -gt 0 ] || [ "$quiet" = 0 ]; then
	tr -d '\r' <"$log"
fi
init_up=$(sed -n 's/.*FREQHINT-INIT: start.*uptime \([0-9.]*\).*/\1/p;T;q' "$log")
summary="guest run took ${elapsed}s wall (${init_up:-?}s guest uptime at /init), console log $log"
if [ ${#fail[@]} -gt 0 ]; then
	for f in "${fail[@]}"; do log "FAIL: $f"; done
	log "$summary"
	exit 1
fi
log "PASS: $summary"
exit 0
