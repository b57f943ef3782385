#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The host feedback figure's anchor (issue 30): the guest exits per host
# change with another tree of this project, the pre-v1 configuration-space
# layout at its last commit, measured the way bench/guest/run.sh measures
# the current one (bench/guest/feedback-lib.sh, bench-guest.sh with
# FREQHINT_BENCH_FEEDBACK_ONLY=1), but with that tree's QEMU device, guest
# module, freqhintd and harness.  Run once; bench/feedback-anchor.env keeps
# the result, and says how it was made.
#
#   feedback-anchor.sh --tree DIR --freqhintd BIN [--changes N] [--out FILE]
#
# DIR is a checkout of the old commit (git worktree add --detach); BIN its
# freqhintd (meson build of DIR, with freqhintctl beside it).  Its QEMU comes from DIR's build-qemu.sh,
# so set FREQHINT_QEMU_CACHE to a cache of its own: the device differs.
# Prints the key=value words of fb_measure (and writes them to FILE).
set -euo pipefail

bench=$(cd "$(dirname "$0")" && pwd)
tree= freqhintd= changes=20 out=
while [ $# -gt 0 ]; do
	case "$1" in
	--tree) tree=$(cd "${2:?}" && pwd); shift ;;
	--freqhintd) freqhintd=${2:?}; shift ;;
	--changes) changes=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	*) echo "usage: $0 --tree DIR --freqhintd BIN [--changes N] [--out FILE]" >&2; exit 2 ;;
	esac
	shift
done
# freqhintctl (the harness asks it whether the VM is connected) from the
# same build.
freqhintctl=$(dirname "$freqhintd")/freqhintctl
[ -d "$tree/tests/harness" ] && [ -x "$freqhintd" ] && [ -x "$freqhintctl" ] ||
	{ echo "$0: --tree (a checkout) and --freqhintd (its daemon) are required" >&2; exit 2; }

# The old tree's harness, as its own scripts use it ($here is its top).
here=$tree
. "$here/scripts/lib.sh"
# shellcheck source=/dev/null
. "$here/tests/harness/e2e-lib.sh"
# shellcheck source-path=SCRIPTDIR source=feedback-lib.sh
. "$bench/feedback-lib.sh"

E2E_VM_NAME=freqhint-bench
e2e_init
trap e2e_cleanup EXIT
printf 'FREQHINT_BENCH_FEEDBACK_ONLY=1\nFREQHINT_BENCH_FEEDBACK_N=%s\n' "$changes" >"$E2E_DIR/env"
e2e_make_initrd "$bench/bench-guest.sh" "$E2E_DIR/env:/etc/freqhint-bench.env" \
	"$bench/load-lib.sh:/lib/freqhint/bench-load.sh"
e2e_make_fixture
cat >"$E2E_DIR/freqhintd.conf" <<EOC
[daemon]
backend=cpufreq

[vm $E2E_VM_NAME]
cpus=0,2,4,6
EOC
e2e_start_agent
# bench-guest.sh opens a third serial port (the latency's) even when idle.
# shellcheck disable=SC2046 # QEMU arguments, one a line
e2e_start_guest --timeout 300 -- -serial null $(fb_qemu_args)
e2e_connect_control
res=
# (next_step sets name and step_args.)
# shellcheck disable=SC2154
while next_step; do
	set -- "${step_args[@]}"
	case $name in
	connected) step_connected ;;
	feedback)
		res=$(fb_measure "$E2E_DIR/freqhintd.conf" "${1#n=}" 250) || true
		if fb_valid "$res"; then verdict OK; else verdict "host feedback not measured: $res"; fi
		;;
	*) verdict "unknown step $name" ;;
	esac
done
e2e_wait_guest >"$E2E_DIR/guest-summary" 2>&1 || { tail -n 30 "$E2E_DIR/guest-summary" >&2; exit 1; }
[ -n "$res" ] || die "no feedback step"
echo "$res"
[ -z "$out" ] || echo "$res" >"$out"
