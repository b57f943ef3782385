#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build the Debian packages from this tree with the standard tooling
# (dpkg-buildpackage, debhelper + meson) and check them with lintian:
#   freqhint        freqhintd, freqhintctl, units, config, man pages, schema,
#                   sysusers/tmpfiles, AppArmor snippet, monitoring files
#   freqhint-dkms   the guest module's source for DKMS
#   freqhint-qemu   the project's QEMU under /usr/lib/freqhint/qemu
#                   (qemu-device/build-qemu.sh's cached build)
#
#   scripts/build-packages.sh [--no-qemu] [OUTDIR]
#
# OUTDIR defaults to $FREQHINT_CACHE/packages.  The build runs on a copy of
# the tree (the files git knows, committed or not), so nothing is written
# next to the clone.  Exit status non-zero if a build or lintian fails.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/lib.sh"

profiles=
if [ "${1:-}" = --no-qemu ]; then profiles=pkg.freqhint.noqemu; shift; fi
out=${1:-$FREQHINT_CACHE/packages}
for t in dpkg-buildpackage dh lintian dh_dkms; do
	command -v "$t" >/dev/null || die "$t is not installed (scripts/setup.sh installs it)"
done

version=$(cd "$here" && dpkg-parsechangelog -SVersion)
work=$(mktemp -d "${TMPDIR:-/tmp}/fh-pkg.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/freqhint-$version
mkdir -p "$src" "$out"
if git -C "$here" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$here" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 tar --no-recursion -cf - 2>/dev/null) | tar -xf - -C "$src"
else
	tar -C "$here" --exclude=.git -cf - . | tar -xf - -C "$src"
fi

log "dpkg-buildpackage in $src${profiles:+ (profile $profiles)}"
(cd "$src" && dpkg-buildpackage -b -us -uc ${profiles:+-P$profiles}) >"$work/build.log" 2>&1 || {
	tail -n 60 "$work/build.log" >&2
	die "dpkg-buildpackage failed"
}
changes=$(ls "$work"/freqhint_*.changes)
log "lintian $(basename "$changes")"
lintian --fail-on error,warning \
	"$changes" || die "lintian found errors or warnings (overrides: debian/*.lintian-overrides)"
cp "$work"/*.deb "$out"/
log "packages in $out:"
ls -1 "$out"/*.deb >&2
