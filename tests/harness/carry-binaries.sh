#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Carry host binaries into a guest tree: each BIN into DIR, the shared
# libraries it links (by real file, as ldd resolves them here) into
# DIR/lib.  The guest runs them with LD_LIBRARY_PATH=<guest path>/lib; the
# loader is already in every initramfs (mkinitramfs.sh).  Used for the ASan
# builds of freqhintd and its tools (libasan among their libraries).
#
#   carry-binaries.sh DIR BIN...
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 DIR BIN..." >&2; exit 2; }
dir=$1
shift
mkdir -p "$dir/lib"
for b in "$@"; do
	cp "$b" "$dir/"
	ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' |
		while read -r name path; do cp -L "$path" "$dir/lib/$name"; done
done
