#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Every global symbol the modules define carries the driver's prefix,
# vfh_ (or virtio_freqhint_), so that nothing collides with the rest of the
# kernel when the driver is built in (issue 27): nm on virtio_freqhint.ko
# and, where the tree has KUnit, virtio_freqhint_test.ko.  File-local
# functions are static, with the same prefix.
#
#   symbols.sh [uclamp|stock|bookworm|DIR]   (default uclamp: both modules)
#
# Not counted: what the module loader and modpost put in every module
# (__this_module, init_module, cleanup_module, the device table alias
# __mod_*, the linker's __start_/__stop_ section bounds).
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$here/guest-driver/tests/build-module.sh" --cached "${1:-uclamp}" \
	"$work/virtio_freqhint.ko" "$work/virtio_freqhint_test.ko" >&2

bad=0
for ko in "$work"/*.ko; do
	all=$(nm -g --defined-only "$ko" | awk '{ print $3 }')
	[ -n "$all" ] || die "nm found no global symbol in ${ko##*/}"
	rogue=$(grep -vE '^(vfh_|virtio_freqhint_)' <<<"$all" |
		grep -vxE '__this_module|init_module|cleanup_module|__mod_.*|__(start|stop)_[a-z_]+' || true)
	n=$(wc -l <<<"$all")
	if [ -n "$rogue" ]; then
		echo "not ok - ${ko##*/}: $(wc -l <<<"$rogue") of $n global symbols without the vfh_ prefix:"
		sed 's/^/    /' <<<"$rogue"
		bad=1
	else
		echo "ok - ${ko##*/}: $n global symbols, each vfh_ or the module loader's"
	fi
done
exit $bad
