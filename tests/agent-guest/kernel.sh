#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The uclamp test kernel plus agent.config (AF_UNIX for freqhintd), built by
# tests/guest/build-kernel.sh itself: it runs from a shadow tree whose
# tests/guest/uclamp.config is the shared fragment followed by ours, so the
# entry is cached separately ($FREQHINT_CACHE/kernel/<version>-<hash>/),
# shares the unpacked source and ccache, and every line is verified the same
# way.  Once the shared fragment carries these lines, this adds nothing.
#
#   kernel.sh       build if needed, print the entry dir
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

shadow=$(mktemp -d "${TMPDIR:-/tmp}/fh-agent-kernel.XXXXXX")
trap 'rm -rf "$shadow"' EXIT
mkdir -p "$shadow/scripts" "$shadow/tests/guest"
ln -s "$here/scripts/lib.sh" "$shadow/scripts/lib.sh"
ln -s "$here/tests/guest/build-kernel.sh" "$shadow/tests/guest/build-kernel.sh"
cat "$here/tests/guest/uclamp.config" "$here/tests/agent-guest/agent.config" \
	>"$shadow/tests/guest/uclamp.config"
"$shadow/tests/guest/build-kernel.sh" --print-dir
