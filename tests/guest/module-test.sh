#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The out-of-tree module path end to end, as the guest driver will use it:
# build the header-check module against KERNEL's tree, boot KERNEL with it
# carried in the initramfs, load and unload it (module-load.sh).
#
#   module-test.sh uclamp|stock WORKDIR [run-guest.sh options...]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
kernel=${1:?usage: $0 uclamp|stock WORKDIR}
work=${2:?usage: $0 uclamp|stock WORKDIR}
shift 2
mkdir -p "$work"
"$here/header-check/check.sh" "$kernel" "$work/header_check.ko"
exec "$here/../harness/run-guest.sh" --kernel "$kernel" --module "$work/header_check.ko" \
	--test "$here/module-load.sh" --log "$work/console.log" "$@"
