#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A real libvirtd for tests, leaving the machine's libvirt alone.
#
#   harness.sh --subreaper PATH (--emulator PATH | --qemu-build FILE) -- CMD [ARG...]
#
# Runs CMD inside a private mount namespace (unshare -m) under a child
# subreaper (fh-subreaper), with tmpfs over /run/libvirt, /var/lib/libvirt,
# /var/log/libvirt and /var/cache/libvirt and a copy of /etc/libvirt whose
# qemu.conf runs QEMU as root without a security driver or cgroups (no
# systemd here; chardev sockets then need no special permissions), and with
# virtlogd and then libvirtd started.  --qemu-build names the file meson's
# qemu-freqhint target writes (the build directory of the project's QEMU).
#
# CMD gets, in its environment:
#   FH_LIBVIRT_URI   qemu:///system (inside the namespace: the private libvirtd)
#   FH_EMULATOR      the QEMU binary for <emulator>
#   FH_HARNESS_DIR   a scratch directory, removed afterwards
#   FH_HARNESS       this file: source it for libvirtd_start/libvirtd_stop
# Everything (QEMU included) is stopped when CMD exits.

FH_LIBVIRT_PRIVATE_DIRS=(/run/libvirt /var/lib/libvirt /var/log/libvirt /var/cache/libvirt)

hlog() { printf '[%s] harness: %s\n' "$(date +%T.%3N)" "$*" >&2; }
hdie() { hlog "error: $*"; exit 1; }

# Start libvirtd in the background (pid file in FH_HARNESS_DIR); wait for its socket.
libvirtd_start() {
	rm -f /run/libvirt/libvirt-sock
	libvirtd --pid-file "$FH_HARNESS_DIR/libvirtd.pid" >>"$FH_HARNESS_DIR/libvirtd.log" 2>&1 &
	local i
	for i in $(seq 300); do
		if [ -S /run/libvirt/libvirt-sock ] && virsh -q -c qemu:///system version >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	tail -20 "$FH_HARNESS_DIR/libvirtd.log" >&2 || true
	hdie "libvirtd did not come up"
}

# Stop libvirtd (QEMU processes keep running, as with a real restart).
libvirtd_stop() {
	local pid i
	pid=$(cat "$FH_HARNESS_DIR/libvirtd.pid" 2>/dev/null) || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

# --- for the tests that source this file ------------------------------------
# They define fail() (what to print on failure), T (their scratch dir) and
# FREQHINTCTL; these helpers use them when called.
log() { printf '[%s] %s\n' "$(date +%T.%3N)" "$*"; }
now_ms() { date +%s%3N; }
# within SECONDS WHAT CMD...: CMD succeeds within SECONDS, else fail; logs
# how long it took (a figure, not a pass/fail line on a busy host).
within() {
	local secs=$1 what=$2 t0
	shift 2
	t0=$(now_ms)
	while ! "$@"; do
		[ $(($(now_ms) - t0)) -lt $((secs * 1000)) ] || fail "$what: not within ${secs}s"
		sleep 0.02
	done
	log "ok: $what ($(($(now_ms) - t0)) ms)"
}
file_is() { [ "$(cat "$1" 2>/dev/null)" = "$2" ]; }
ctl() { "$FREQHINTCTL" --socket "$T/ctl.sock" "$@"; }
# jq_is FILTER WANT CTL-ARGS...: freqhintctl --json CTL-ARGS, filtered, is WANT
jq_is() {
	local filter=$1 want=$2
	shift 2
	[ "$(ctl --json "$@" 2>/dev/null | jq -r "$filter")" = "$want" ]
}

# Sourced by a test: only the functions above, and the test's shell options stay its own.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0
set -euo pipefail

inside() {
	local emulator=$1
	shift
	FH_HARNESS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/fh-libvirt-XXXXXX")
	# Removed on success; a failure keeps it (see the end of this function).
	trap '[ -e "$FH_HARNESS_DIR/.keep" ] || rm -rf "$FH_HARNESS_DIR"' EXIT
	export FH_HARNESS_DIR FH_EMULATOR=$emulator FH_LIBVIRT_URI=qemu:///system
	export FH_HARNESS
	FH_HARNESS=$(readlink -f "$0")

	# Nothing mounted here can leak: the namespace's propagation is private.
	local d
	for d in "${FH_LIBVIRT_PRIVATE_DIRS[@]}"; do
		# An empty mount point is all this leaves behind (/run is a tmpfs anyway).
		[ -d "$d" ] || mkdir -p "$d"
		mount -t tmpfs -o mode=0755 tmpfs "$d"
	done
	cp -a /etc/libvirt "$FH_HARNESS_DIR/etc-libvirt"
	cat >>"$FH_HARNESS_DIR/etc-libvirt/qemu.conf" <<-EOF

		# freqhint test harness (private copy)
		user = "root"
		group = "root"
		dynamic_ownership = 0
		remember_owner = 0
		security_driver = "none"
		cgroup_controllers = [ ]
		stdio_handler = "logd"
	EOF
	mount --bind "$FH_HARNESS_DIR/etc-libvirt" /etc/libvirt

	virtlogd --pid-file "$FH_HARNESS_DIR/virtlogd.pid" >>"$FH_HARNESS_DIR/virtlogd.log" 2>&1 &
	for _ in $(seq 100); do
		[ -S /run/libvirt/virtlogd-sock ] && break
		sleep 0.1
	done
	[ -S /run/libvirt/virtlogd-sock ] || hdie "virtlogd did not come up"
	libvirtd_start
	hlog "libvirtd $(libvirtd --version | awk '{print $NF}') up in a private namespace; scratch $FH_HARNESS_DIR"

	local rc=0
	"$@" || rc=$?

	# Domains first (QEMU), then the daemons; the subreaper catches the rest.
	local dom
	for dom in $(virsh -q -c qemu:///system list --name 2>/dev/null); do
		virsh -q -c qemu:///system destroy "$dom" >/dev/null 2>&1 || true
	done
	libvirtd_stop
	kill -TERM "$(cat "$FH_HARNESS_DIR/virtlogd.pid" 2>/dev/null)" 2>/dev/null || true
	if [ "$rc" != 0 ]; then
		hlog "test failed ($rc); libvirtd log tail:"
		tail -15 "$FH_HARNESS_DIR/libvirtd.log" >&2 || true
		# /var/log/libvirt is this namespace's tmpfs: copy what is there.
		mkdir -p "$FH_HARNESS_DIR/libvirt-qemu-logs"
		for f in /var/log/libvirt/qemu/*.log; do
			[ -f "$f" ] || continue
			hlog "$f:"
			tail -10 "$f" >&2
			cp "$f" "$FH_HARNESS_DIR/libvirt-qemu-logs/"
		done
		touch "$FH_HARNESS_DIR/.keep"
		hlog "full logs kept in $FH_HARNESS_DIR (libvirtd.log, virtlogd.log, libvirt-qemu-logs/, and the test's own files: daemon.log, console.log, ...)"
	elif [ "${FREQHINT_KEEP:-0}" = 1 ]; then
		touch "$FH_HARNESS_DIR/.keep"
		hlog "logs kept in $FH_HARNESS_DIR (FREQHINT_KEEP=1)"
	fi
	return "$rc"
}

main() {
	local subreaper="" emulator="" qemu_build=""
	while [ $# -gt 0 ]; do
		case $1 in
		--subreaper) subreaper=$2; shift 2 ;;
		--emulator) emulator=$2; shift 2 ;;
		--qemu-build) qemu_build=$2; shift 2 ;;
		--inside) shift; inside "$@"; return ;;
		--) shift; break ;;
		*) hdie "unknown argument $1" ;;
		esac
	done
	[ $# -gt 0 ] || hdie "usage: $0 --subreaper PATH (--emulator PATH | --qemu-build FILE) -- CMD [ARG...]"
	[ "$(id -u)" = 0 ] || hdie "needs root (mount namespace, libvirtd)"
	[ -x "$subreaper" ] || hdie "subreaper not found: $subreaper"
	command -v libvirtd >/dev/null || hdie "libvirtd not installed"
	command -v virtlogd >/dev/null || hdie "virtlogd not installed"
	if [ -n "$qemu_build" ]; then
		emulator=$(cat "$qemu_build")/qemu-system-x86_64
	fi
	[ -x "$emulator" ] || hdie "no QEMU binary: '$emulator'"
	exec unshare -m --propagation private "$subreaper" "$0" --inside "$emulator" "$@"
}

main "$@"
