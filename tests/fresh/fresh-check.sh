#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A new machine, checked on every run: a missing install step must fail the
# test command even on a machine that happens to have what was missed (a
# package installed by hand, a file an earlier run left behind).
#
# Builds a bare Debian 12 tree (mmdebstrap minbase from this machine's own
# apt sources, plus git), clones this checkout into it, and there, under
# chroot with nothing of this machine but the kernel and the heavy-build
# cache (bind-mounted, so a warm cache keeps it to minutes):
#   1. runs scripts/setup.sh, as a newcomer would;
#   2. runs tests/fresh/toolchains.sh: every toolchain the tests use is
#      built with and started.
# Run as root.  Tracked changes not yet committed are checked too (git
# stash create); untracked files are not.
#
#   fresh-check.sh [--keep]    --keep leaves the tree for a look
#
# Downloaded packages are kept in $FREQHINT_CACHE/fresh/archives so a
# second run fetches nothing; apt checks each against its signed lists.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

keep=0
[ "${1:-}" = --keep ] && keep=1
[ "$(id -u)" = 0 ] || die "run as root (mmdebstrap, mount, chroot)"
command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (scripts/setup.sh packages)"
sources=/etc/apt/sources.list.d/debian.sources
[ -r "$sources" ] || die "$sources not found: the tree takes this machine's apt sources"

archives=$FREQHINT_CACHE/fresh/archives
mkdir -p "$archives/partial"
root=$(mktemp -d /var/tmp/freqhint-fresh.XXXXXX)
mounts=()
cleanup() {
	local i
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || :; done
	if [ "$keep" = 1 ]; then
		log "tree kept in $root"
	else
		rm -rf --one-file-system "$root"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
bind() {
	mkdir -p "$root$2"
	mount --bind "$1" "$root$2"
	mounts+=("$root$2")
}
t0=$SECONDS
step() { log "fresh: $* (at $((SECONDS - t0)) s)"; }

step "bare bookworm tree in $root"
# minbase is less than any new machine has: what setup.sh forgets, fails.
mmdebstrap --variant=minbase --include=git,ca-certificates --skip=check/empty \
	bookworm "$root" "$sources" >"$root.mmdebstrap.log" 2>&1 ||
	{ tail -20 "$root.mmdebstrap.log"; die "mmdebstrap failed (log: $root.mmdebstrap.log)"; }
rm -f "$root.mmdebstrap.log"
rm -rf "$root/etc/apt/sources.list.d" "$root/etc/apt/sources.list"
mkdir -p "$root/etc/apt/sources.list.d"
cp "$sources" "$root/etc/apt/sources.list.d/"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || :

step "cloning $here"
rev=$(git -C "$here" stash create 2>/dev/null || :)
[ -n "$rev" ] || rev=$(git -C "$here" rev-parse HEAD)
git clone -q --no-checkout "$here" "$root/root/project"
git -C "$root/root/project" fetch -q "$here" "$rev"
git -C "$root/root/project" checkout -q --detach "$rev"

# The tree's root is a mount point, as / is on a machine (private mount
# namespaces and pivot_root need one).
mount --bind "$root" "$root"
mounts+=("$root")
mount --make-private "$root"
bind /proc /proc
bind /sys /sys
bind /dev /dev
mkdir -p "$root/dev/pts"
mount -t devpts -o newinstance devpts "$root/dev/pts" && mounts+=("$root/dev/pts")
mount -t tmpfs tmpfs "$root/run" && mounts+=("$root/run")
chmod 1777 "$root/tmp"
bind "$FREQHINT_CACHE" /var/cache/freqhint
bind "$archives" /var/cache/apt/archives

in_tree() {
	chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		FREQHINT_ARM64="$(arm64_mode)" \
		bash -c 'cd /root/project && exec "$@"' fresh "$@"
}

step "scripts/setup.sh in the tree"
in_tree bash scripts/setup.sh || die "scripts/setup.sh failed on a bare Debian 12 tree"
step "tests/fresh/toolchains.sh in the tree"
in_tree bash tests/fresh/toolchains.sh || die "a toolchain does not work on a bare Debian 12 tree after setup"
step "passed"
