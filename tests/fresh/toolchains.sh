#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Every toolchain the tests use, built with and started, after
# scripts/setup.sh: run by fresh-check.sh inside a bare Debian 12 tree,
# where nothing but setup.sh put them.  Fails at the first that does not
# work, saying which.
#   - meson configures the main build (gcc, ASan+UBSan, every heavy option)
#     and the fuzz build (clang, libFuzzer);
#   - virtio_freqhint.ko builds against the x86 uclamp kernel, and, when
#     arm64 guests are set up (FREQHINT_ARM64), against the arm64 uclamp
#     kernel with the unpacked cross compiler;
#   - a static guest program links for x86 and arm64;
#   - the project's QEMU binaries start a machine and list the device.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { die "toolchain check: $*"; }
ok() { log "toolchain check: $*: ok"; }

# meson: configuring runs its compiler checks and the QEMU build's
# run_command; both builds as scripts/test.sh sets them up.
# shellcheck disable=SC2086 # the options are words
CC=gcc meson setup "$work/main" "$here" $MAIN_BUILD_OPTS -Darm64="$(arm64_mode)" >"$work/main.log" 2>&1 ||
	{ tail -20 "$work/main.log"; fail "meson setup (gcc, sanitizers) failed"; }
ok "meson, main build"
# shellcheck disable=SC2086
CC=clang meson setup "$work/fuzz" "$here" $FUZZ_BUILD_OPTS >"$work/fuzz.log" 2>&1 ||
	{ tail -20 "$work/fuzz.log"; fail "meson setup (clang, libFuzzer) failed"; }
ok "meson, fuzz build"

# elf_machine FILE: the ELF machine readelf names.
elf_machine() { readelf -h "$1" | sed -n 's/^ *Machine: *//p'; }
# static_ok FILE MACHINE: FILE is a static executable for MACHINE.
static_ok() {
	[ "$(elf_machine "$1")" = "$2" ] || fail "$1 is for '$(elf_machine "$1")', not '$2'"
	! readelf -l "$1" | grep -q 'INTERP' || fail "$1 is not statically linked"
}

# The module, built as the guest tests build it (W=1, warnings fatal).
"$here/guest-driver/tests/build-module.sh" uclamp "$work/x86.ko" >"$work/ko-x86.log" 2>&1 ||
	{ tail -20 "$work/ko-x86.log"; fail "virtio_freqhint.ko does not build for x86"; }
[ "$(elf_machine "$work/x86.ko")" = "Advanced Micro Devices X86-64" ] || fail "x86 module has the wrong machine"
ok "x86 module"

gcc -static -O2 -o "$work/busy-x86" "$here/tests/harness/busy.c" ||
	fail "gcc cannot link a static guest program"
static_ok "$work/busy-x86" "Advanced Micro Devices X86-64"
ok "x86 static guest program"

if arm64_enabled; then
	"$here/guest-driver/tests/build-module.sh" --arch arm64 uclamp "$work/arm64.ko" >"$work/ko-arm64.log" 2>&1 ||
		{ tail -20 "$work/ko-arm64.log"; fail "virtio_freqhint.ko does not build for arm64"; }
	[ "$(elf_machine "$work/arm64.ko")" = AArch64 ] || fail "arm64 module has the wrong machine"
	ok "arm64 module (cross)"
	bin=$("$here/tests/harness/cross-gcc.sh" arm64 --libc) || fail "no arm64 cross compiler"
	"$bin/aarch64-linux-gnu-gcc" -static -O2 -o "$work/busy-arm64" "$here/tests/harness/busy.c" ||
		fail "the arm64 cross compiler cannot link a static guest program"
	static_ok "$work/busy-arm64" AArch64
	ok "arm64 static guest program (cross)"
fi

# QEMU: each binary lists the device and starts a machine, answering QMP.
qemu_starts() {
	local bin=$1 machine=$2 out
	out=$("$bin" -device help 2>&1) || fail "$bin -device help: $(tail -1 <<<"$out")"
	grep -q '"virtio-freqhint-pci"' <<<"$out" || fail "$bin does not list virtio-freqhint-pci"
	out=$(printf '%s\n' '{"execute":"qmp_capabilities"}' '{"execute":"query-status"}' '{"execute":"quit"}' |
		timeout 60 "$bin" $machine -accel tcg -display none -nodefaults -S -qmp stdio 2>&1) ||
		{ printf '%s\n' "$out" | tail -5; fail "$bin did not start a machine"; }
	grep -q '"status": "prelaunch"' <<<"$out" || { printf '%s\n' "$out"; fail "$bin answered no status"; }
}
build=$("$here/qemu-device/build-qemu.sh" --print-build) || fail "no QEMU build"
qemu_starts "$build/qemu-system-x86_64" "-M q35"
ok "qemu-system-x86_64"
qemu_starts "$build/qemu-system-aarch64" "-M virt -cpu max"
ok "qemu-system-aarch64"
