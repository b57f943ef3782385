#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The module's vsock transport in a guest (issue 39), before and beside the
# real front end: Debian's stock kernel with its vsock, virtio transport
# common and vsock_loopback modules, and tests/fake-vsock-host.c (built static
# here) on CID 1 port 853; the guest runs tests/vsock-fakehost.sh.  The project's
# uclamp kernel has no CONFIG_VSOCKETS, so it cannot run this.
#
#   vsock-fakehost-test.sh LOG
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib.sh"

[ $# = 1 ] || die "usage: $0 LOG"
log=$1
tdir=$(dirname "$0")
work=$(mktemp -d)
helper=
cleanup() {
	if [ -n "$helper" ]; then kill "$helper" 2>/dev/null || :; fi
	rm -rf "$work"
}
trap cleanup EXIT

opts=$("$tdir/vsock-loopback.sh" "$work")
mapfile -t mods <<<"$opts"

# When the guest says so, a virtio-freqhint device is hot-plugged (the
# project's QEMU): the module must let it take over from vsock.
: >"$log"
"$PYTHON3" - "$work/qmp.sock" "$log" >"$work/qmp.log" 2>&1 <<'EOP' &
import json, socket, sys, time
sock, log = sys.argv[1], sys.argv[2]
end = time.time() + 600
while time.time() < end:
    with open(log, errors="replace") as f:
        if any("FREQHINT-VSOCK: plug" in l for l in f):
            break
    time.sleep(0.2)
else:
    sys.exit("no plug request")
s = socket.socket(socket.AF_UNIX)
s.connect(sock)
f = s.makefile("rw")
f.readline()
for cmd in ({"execute": "qmp_capabilities"},
            {"execute": "device_add", "arguments": {
                "driver": "virtio-freqhint-pci", "id": "fh", "bus": "rp1"}}):
    f.write(json.dumps(cmd) + "\n")
    f.flush()
    while True:
        r = json.loads(f.readline())
        if "error" in r:
            sys.exit("%s: %s" % (cmd["execute"], r["error"]))
        if "return" in r:
            break
print("device_add done")
EOP
helper=$!
grc=0
"$tdir/run-guest-test.sh" stock nouclamp "$tdir/vsock-fakehost.sh" "$log" "${mods[@]}" \
	--add "$work/fh-fake-vsock-host:/usr/bin/fh-fake-vsock-host" -- \
	-device pcie-root-port,id=rp1,chassis=1 \
	-qmp "unix:$work/qmp.sock,server=on,wait=off" || grc=$?
guest_helper_end "$grc" helper "$work/qmp.log"
log "PASS: the vsock transport"
