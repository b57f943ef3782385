#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A host whose frequency changes every rate window: fake-agent.py sends a
# frequency class for vCPU2 once vCPU1 reported idle, then a CUR_FREQ
# every 10 ms, which the device relays at most once per rate window
# (10 ms, its default).  The guest runs events-idle.sh: the driver's work
# on those events must not make the idle vCPU it runs on look busy.
#
#   events-test.sh KERNEL EXPECT LOG   (as run-guest-test.sh)
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

[ $# = 3 ] || die "usage: $0 uclamp|stock uclamp|nouclamp LOG"
kernel=$1 expect=$2 log=$3
tdir=$(dirname "$0")

. "$tdir/fake-agent-lib.sh"

agent_start --timeout 900 --cur-freq-every 0.01 \
	--host-freq 1:idle:2:800000:3200000:128:1000000,2000000,3000000 1:idle
grc=0
"$tdir/run-guest-test.sh" "$kernel" "$expect" "$tdir/events-idle.sh" "$log" -- \
	"${agent_chardev[@]}" -device virtio-freqhint-pci,backend=fha0 || grc=$?
agent_finish "$grc"
log "PASS: an idle vCPU stays idle under the host's events"
