#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The kernel's checkpatch.pl --strict (from the uclamp test kernel's source, see
# tests/harness/build-kernel.sh) over the module's C files, and over
# bench/guest's trivial cpufreq driver, must report
# nothing.  (Older kernels' interfaces are Kbuild-detected FH_COMPAT_*
# branches, not LINUX_VERSION_CODE checks: README.md.)
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

src=$("$here/tests/harness/build-kernel.sh" --print-dir)/build/source
cp=$src/scripts/checkpatch.pl
[ -f "$cp" ] || die "$cp not found: run scripts/setup.sh"
cd "$here/guest-driver"
out=$(perl "$cp" --no-tree -f --terse --strict ./*.c ./*.h \
	../bench/guest/trivial-cpufreq/*.c |
	grep -v ' total: 0 errors, 0 warnings, ' || true)
if [ -n "$out" ]; then
	echo "$out"
	die "checkpatch reported the above"
fi
echo "ok: checkpatch clean"
