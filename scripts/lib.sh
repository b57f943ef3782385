# SPDX-License-Identifier: GPL-2.0-or-later
# Shared shell helpers for freqhint's scripts.  Source, do not execute.

: "${FREQHINT_CACHE:=/var/cache/freqhint}"
export FREQHINT_CACHE

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Heavy builds are cached outside the clone, one entry per key in
# $FREQHINT_CACHE/<kind>/.  The key hashes a description of everything that
# goes into the entry, so a changed input makes a new entry and an unchanged
# one is never rebuilt.  Users touch an entry each time they take it, and
# cache_prune drops what no tree has used for two weeks.

# cache_key: the key for the description of inputs on stdin.
cache_key() { sha256sum | cut -c1-16; }

# clone_builds: the directory under which this clone's meson builds live.
# Keyed by the clone's path: two clones on one machine never configure one
# build from two sources or overwrite each other's test logs.
clone_builds() {
	local top_=${here:?}
	echo "$FREQHINT_CACHE/build/$(basename "$top_")-$(printf '%s' "$top_" | cache_key)"
}

# The test command's two meson builds, set up by scripts/test.sh and, in a
# bare tree, by tests/fresh/toolchains.sh: gcc with ASan+UBSan and -Werror,
# every heavy option on (plus -Darm64, from arm64_mode); clang with
# libFuzzer (fuzz targets need clang).
MAIN_BUILD_OPTS="-Dqemu=true -Dguest=true -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false"
FUZZ_BUILD_OPTS="-Dfuzzing=true"

# arm64 guests (issue 28): FREQHINT_ARM64 chooses how many run.
#   unset or core  the core set (module build against Debian's arm64
#                  headers, gathering on the uclamp kernel, device round
#                  trips on virtio-pci and virtio-mmio, MPIDR ids, the e2e
#                  story): about 4 more minutes warm
#   all (or 1)     every arm64 variant of the guest tests (~15 min warm)
#   none (or 0)    none: setup.sh neither fetches nor builds arm64 pieces
# setup.sh fetches and builds the arm64 pieces (kernels, packages) unless
# none; test.sh passes the choice to meson's 'arm64' option.  QEMU's
# aarch64 target is not governed by it: setup.sh builds both targets, and
# the device's qtests run on both (only `setup.sh demo` builds one).
arm64_mode() {
	case "${FREQHINT_ARM64:-core}" in
	core) echo core ;;
	all | 1) echo all ;;
	none | 0) echo none ;;
	*) die "FREQHINT_ARM64=$FREQHINT_ARM64: expected none, core or all" ;;
	esac
}
arm64_enabled() {
	local mode
	mode=$(arm64_mode) || exit 1
	[ "$mode" != none ]
}

# cache_prune DIR [KEEP]: remove DIR's entries (and abandoned staging
# directories) untouched for two weeks, never KEEP or a lock file.
cache_prune() {
	[ -d "$1" ] || return 0
	find "$1" -mindepth 1 -maxdepth 1 -mtime +14 ! -path "${2:-}" ! -name .lock \
		-exec rm -rf {} + 2>/dev/null || true
}

# Debian's python3, not whatever a pyenv shim puts first in PATH.
PYTHON3=/usr/bin/python3

# kernel_tree uclamp|stock|bookworm|DIR [ARCH]: the kernel build tree to
# compile out-of-tree modules against (the project's uclamp kernel, Debian's
# backports 6.12 headers, bookworm's 6.1 headers, or DIR as given).  ARCH
# arm64: the arm64 uclamp kernel and Debian's arm64 6.12 headers (the
# fetch-stock-kernel.sh entry); there is no bookworm tree for it.
kernel_tree() {
	local here_=${here:?} arch_=${2:-x86_64}
	if [ "$arch_" != x86_64 ]; then
		case "$1" in
		uclamp) echo "$("$here_/tests/harness/build-kernel.sh" --arch "$arch_" --print-dir)/build" ;;
		stock) echo "$("$here_/tests/harness/fetch-stock-kernel.sh" --arch "$arch_" --print-dir)/build" ;;
		bookworm) ;;
		*) echo "$1" ;;
		esac
		return 0
	fi
	case "$1" in
	uclamp) echo "$("$here_/tests/harness/build-kernel.sh" --print-dir)/build" ;;
	stock | bookworm)
		local glob='6.12.*-amd64'
		[ "$1" = bookworm ] && glob='6.1.*-amd64'
		find /usr/src -maxdepth 1 -name "linux-headers-$glob" -printf '%p\n' | sort -V | tail -n1
		;;
	*) echo "$1" ;;
	esac
}

# guest_helper_end GUEST_RC PIDVAR LOG: the end of a guest test that ran a
# helper beside QEMU (a QMP client that hot-plugs what the guest asks for):
# wait for the helper whose pid the variable named PIDVAR holds and empty
# it (the caller's cleanup kills a helper still set there), show the
# helper's output (LOG) prefixed "qmp: ", and fail if the guest side (its
# exit status GUEST_RC) or the helper failed.
guest_helper_end() {
	local grc_=$1 hrc_=0
	local -n pid_=$2
	wait "$pid_" || hrc_=$?
	pid_=
	sed 's/^/qmp: /' "$3"
	[ "$grc_" = 0 ] || die "guest side failed"
	[ "$hrc_" = 0 ] || die "hot-plug helper failed"
}
