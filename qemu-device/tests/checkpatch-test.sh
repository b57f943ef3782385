#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# checkpatch-test.sh: the two series make-series.sh produces (the core
# changes in core/, then the device) apply, patch by
# patch, to a clean copy of the QEMU release the project builds (the whole
# pristine tree, not only the files the series touches), gives there exactly
# the files the project builds and tests, and passes QEMU's own
# scripts/checkpatch.pl.  Warnings are allowed only in the standard-headers
# patch, which checkpatch wants self-contained (so without its MAINTAINERS
# entry) and made by update-linux-headers.sh (the freqhint header is not in
# Linux yet).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
eval "$("$here/build-qemu.sh" --print-dirs)"
"$here/make-series.sh" "$tmp/series" >/dev/null

rc=0
# Applies to a clean tree: the pristine release (hard links: only the
# files the series touches are copied), each patch in order with git apply
# outside any repository, so that nothing but the patch text counts.
cp -al "$PRISTINE" "$tmp/qemu"
patches=("$tmp"/series/core/0*.patch "$tmp"/series/0*.patch)
touched=$(sed -n 's|^+++ b/||p' "${patches[@]}" | sort -u)
for f in $touched; do
	[ ! -e "$tmp/qemu/$f" ] || cp --remove-destination "$PRISTINE/$f" "$tmp/qemu/$f"
done
n=0
for p in "${patches[@]}"; do
	case $p in *cover-letter*) continue ;; esac
	if ! out=$(cd "$tmp/qemu" && GIT_DIR=/nonexistent git apply --whitespace=error-all "$p" 2>&1); then
		printf '%s\n' "$out"
		echo "$(basename "$p"): does not apply to a clean QEMU $(cat "$PRISTINE/VERSION")"
		exit 1
	fi
	n=$((n + 1))
done
echo "series: $n patches (core and device) applied to a clean QEMU $(cat "$PRISTINE/VERSION")"
# ... and gives what is built and tested: every file the series touches as
# it is in the laid-out source tree.
for f in $touched; do
	if ! cmp -s "$tmp/qemu/$f" "$SOURCE/$f"; then
		diff -u "$SOURCE/$f" "$tmp/qemu/$f" | sed -n 1,20p
		echo "$f: the series gives another file than the one built and tested"
		rc=1
	fi
done
cmp -s "$PRISTINE/VERSION" "$tmp/qemu/VERSION" || { echo "the pristine tree changed"; exit 1; }

for p in "${patches[@]}"; do
	case $p in *cover-letter*) continue ;; esac
	out=$(cd "$SOURCE" && perl scripts/checkpatch.pl --no-tree "$p" 2>&1) || rc=1
	bad=$(grep -E '^(ERROR|WARNING):' <<<"$out" || true)
	case $p in
	*hw-virtio-add*)
		# The agent protocol header is shared with the (BSD-licensable)
		# agent; the commit message says so, as checkpatch asks.
		bad=$(grep -v -e "Saw acceptable license 'GPL-2.0-or-later OR BSD-3-Clause" <<<"$bad" || true) ;;
	*standard-headers*)
		bad=$(grep -v -e 'imported from Linux, are you using scripts/update-linux-headers.sh' \
			-e 'does MAINTAINERS need updating' <<<"$bad" || true) ;;
	esac
	if [ -n "$bad" ]; then
		printf '%s\n' "$out"
		rc=1
	fi
	echo "${p#"$tmp"/series/}: $(grep '^total:' <<<"$out")"
done
# The test helper outside QEMU's tree wears the same style.
out=$(cd "$SOURCE" && perl scripts/checkpatch.pl --no-tree -f "$here/tests/fh-listener.c" 2>&1) || rc=1
grep -qE '^(ERROR|WARNING):' <<<"$out" && { printf '%s\n' "$out"; rc=1; }
echo "tests/fh-listener.c: $(grep '^total:' <<<"$out")"
exit $rc
