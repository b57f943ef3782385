#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs as /test.sh (tests/vsock-guest/run.sh): the host side of the vsock
# transport on a real kernel's AF_VSOCK, over the loopback transport.
#  - an unprivileged process cannot listen on port 853 (VS-2), though it
#    can on port 10853;
#  - freqhint-vsockd binds 853 as root and drops to uid 65534;
#  - a guest (fh-vsock-peer) connecting to CID 1 port 853 is served as the
#    VM whose CID is 1: its hints reach freqhintd, the operator's ceiling
#    comes back as FEEDBACK; the front end saw CID 1 from the kernel.
. /lib/freqhint/test-lib.sh
. /opt/fh/vsock-lib.sh

load_vsock
# (LeakSanitizer cannot read a process that gave up root: not dumpable)
check_output "nobody cannot listen on vsock port 853" 'bind 853 as uid 65534: Permission denied' \
	env ASAN_OPTIONS=detect_leaks=0 $FH/fh-vsock-peer --bind-port 853 --as-uid 65534
check_output "nobody can listen on vsock port 10853" 'bind 10853 as uid 65534: listening' \
	env ASAN_OPTIONS=detect_leaks=0 $FH/fh-vsock-peer --bind-port 10853 --as-uid 65534
start_host 2
check_output "port 853 is the front end's: even root cannot take it now" 'bind 853 as uid 0: Address already in use' \
	$FH/fh-vsock-peer --bind-port 853
$FH/fh-vsock-peer --vsock 1 --vcpus 2 --hint 0:300:900 --hint 1:-:-:idle --hold 60000 >$W/peer.log 2>&1 &
P=$!
wait_for "the guest gets CONFIG" '^config features=0x7 num_vcpus=2 window=10' cat $W/peer.log
show_logs
wait_for "served as VM loop over vsock, CID 1" '"transport" *: *"vsock"' ctl --json vms
check_output "its CID is the kernel's" '"vsock_cid" *: *1' ctl --json vms
wait_for "vCPU 0's request reached freqhintd" '"min" *: *300' ctl --json vcpus loop
wait_for "the operator's ceiling came back as FEEDBACK" 'feedback .*flags=0x1 op=0..768' cat $W/peer.log
check_output "the front end logged CID 1" 'CID 1: served \(2 vCPUs' cat $W/vsockd.log
show_logs
kill $P; wait $P
wait_for "the guest gone, the VM has no connection" '"connected" *: *false' ctl --json vms
stop_host
done_testing
