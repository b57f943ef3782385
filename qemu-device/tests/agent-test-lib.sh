# SPDX-License-Identifier: GPL-2.0-or-later
#
# Sourced by the tests that run QEMU against the real freqhintd
# (agent-vcpus-test.sh, agent-cur-freq-test.sh), with their arguments
# QEMU_BUILD_DIR FREQHINTD FREQHINTCTL MKFIXTURE and $test_name set:
# a temporary directory, a fixture host, freqhintd on it, and helpers.

build=$1
# meson passes the file build-qemu.sh --print-build wrote.
[ -f "$build" ] && build=$(cat "$build")
freqhintd=$2
freqhintctl=$3
mkfixture=$4
tmp=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "$test_name: $*" >&2
	tail -n 20 "$tmp"/*.log >&2 2>/dev/null || true
	exit 1
}
# until_ok SECONDS CMD...: CMD succeeds within SECONDS.
until_ok() {
	local end=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.2
	done
}
ctl() { "$freqhintctl" --socket "$tmp/ctl.sock" --json "$@"; }

# start_freqhintd CONFIG_TEXT: freqhintd (backend none, real /proc) on a
# fixture host in $tmp/fx with that configuration, answering.
start_freqhintd() {
	"$mkfixture" host "$tmp/fx"
	printf '%s' "$1" >"$tmp/freqhintd.conf"
	"$freqhintd" --foreground --config "$tmp/freqhintd.conf" --backend none \
		--sysfs-root "$tmp/fx/sys" --proc-root /proc --cgroup-root /sys/fs/cgroup \
		--socket "$tmp/dev.sock" --control-socket "$tmp/ctl.sock" \
		--state-dir "$tmp/state" --libvirt-uri none --no-metrics \
		>"$tmp/freqhintd.log" 2>&1 &
	pids+=($!)
	until_ok 30 ctl status || fail "freqhintd does not answer"
}

# stop_freqhintd: a clean exit without sanitizer reports.
stop_freqhintd() {
	kill -TERM "${pids[0]}"
	wait "${pids[0]}" || fail "freqhintd exited with status $?"
	! grep -qE 'AddressSanitizer|runtime error|CRITICAL' "$tmp/freqhintd.log" ||
		fail "sanitizer report in freqhintd's log"
}
