#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Debian's binary packages for a foreign architecture (dpkg multiarch, which
# scripts/setup.sh turns on with `dpkg --add-architecture` over the machine's
# own apt sources), downloaded with `apt-get download` (apt checks each file
# against its signed lists) and unpacked side by side into one cached tree,
# never installed.  Prints the entry directory.
#
#   fetch-debs.sh ARCH PKG...     PKG as apt names it; PKG:all for an
#                                 Architecture: all package
#
# Entry $FREQHINT_CACHE/debs/<ARCH>-<hash of the PKG=VERSION list>/:
#   root/      every PKG unpacked with dpkg-deb -x
#   versions   PKG=VERSION, one a line (the candidates apt's lists name)
# The key is the exact versions, so a new version in apt's lists makes a new
# entry; entries no run has used for two weeks are removed.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"
trap 'log "error: $0:$LINENO: $BASH_COMMAND failed"' ERR

[ $# -ge 2 ] || die "usage: $0 ARCH PKG..."
arch=$1
shift

dcache=$FREQHINT_CACHE/debs
# The same request answered since apt's lists last changed: its entry, without
# asking apt-cache (seconds on a machine with two architectures' lists).
memo=$dcache/.resolved-$(printf '%s\n' "$arch" "$@" | cache_key)
if [ -f "$memo" ] && [ "$memo" -nt /var/lib/apt/lists ]; then
	entry=$(cat "$memo")
	if [ -f "$entry/.done" ]; then
		touch "$entry"
		echo "$entry"
		exit 0
	fi
fi

# The candidate version of each package, from apt's lists (no network).
specs=()
for p in "$@"; do
	case "$p" in
	*:all) specs+=("${p%:all}") ;;
	*) specs+=("$p:$arch") ;;
	esac
done
versions=$(apt-cache policy "${specs[@]}" 2>/dev/null |
	awk '/^[^ ]/ { sub(":$", ""); p = $0 }
	     /^  Candidate:/ && $2 != "(none)" { print p "=" $2 }' | LC_ALL=C sort)
[ "$(grep -c . <<<"$versions")" = $# ] ||
	die "apt has no candidate for some of: ${specs[*]} (got: $(echo $versions); is $arch in dpkg --print-foreign-architectures? run scripts/setup.sh packages)"
entry=$dcache/$arch-$(printf '%s\n' "$arch" "$versions" | cache_key)

if [ ! -f "$entry/.done" ]; then
	mkdir -p "$dcache"
	exec 9>"$dcache/.lock"
	flock 9
	if [ ! -f "$entry/.done" ]; then
		cache_prune "$dcache" "$entry"
		stage=$(mktemp -d "$dcache/.stage.XXXXXX")
		specs=()
		while IFS== read -r p v; do specs+=("$p=$v"); done <<<"$versions"
		log "downloading ${#specs[@]} $arch packages: ${specs[*]}"
		# apt's sandbox user cannot write into a root-owned cache.
		(cd "$stage" && apt-get download -q -o APT::Sandbox::User=root "${specs[@]}" >download.log 2>&1) ||
			{ cat "$stage/download.log" >&2; rm -rf "$stage"; die "apt-get download failed"; }
		for f in "$stage"/*.deb; do
			dpkg-deb -x "$f" "$stage/root"
		done
		rm -f "$stage"/*.deb
		echo "$versions" >"$stage/versions"
		touch "$stage/.done"
		rm -rf "$entry"
		mv "$stage" "$entry"
	fi
fi
touch "$entry"
echo "$entry" >"$memo"
echo "$entry"
