#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# agent-cur-freq-test.sh QEMU_BUILD_DIR FREQHINTD FREQHINTCTL MKFIXTURE
#
# CUR_FREQ through the real agent (spec/agent-protocol.md 4.4c): a q35 TCG
# machine with two vCPUs connects virtio-freqhint-pci to freqhintd, whose
# cpufreq policies are a fixture tree.  The vCPU threads are real, so each
# runs on one of this host's CPUs, all in the fixture's policy0 or policy2;
# the frequency freqhintd samples from their scaling_cur_freq must reach
# the device (x-stats: each vCPU's cur-khz), and a change of it must
# follow; a second machine with cur-freq=off is offered no CUR_FREQ.  No
# guest runs: what the driver does with it is the guest tests' part.
set -euo pipefail

test_name=agent-cur-freq-test
. "$(dirname "$0")/agent-test-lib.sh"
pol=$tmp/fx/sys/devices/system/cpu/cpufreq
# set_cur KHZ: every policy of the fixture runs at KHZ now.
set_cur() {
	local p
	for p in "$pol"/policy*; do echo "$1" >"$p/scaling_cur_freq"; done
}

start_freqhintd $'[cpufreq]\ncur_freq_interval_ms=20\n'

# start_machine NAME DEVICE_OPTIONS: a q35 machine with two vCPUs; its QMP
# socket is $tmp/qmp-NAME.sock.
start_machine() {
	"$build/qemu-system-x86_64" -machine q35 -accel tcg -smp 2 -m 128 \
		-nodefaults -display none -name "$1" \
		-chardev "socket,id=fh0,path=$tmp/dev.sock,reconnect-ms=1000" \
		-object freqhint-agent,id=fha0,chardev=fh0 \
		-device "virtio-freqhint-pci,id=fh,backend=fha0$2" \
		-qmp "unix:$tmp/qmp-$1.sock,server=on,wait=off" >"$tmp/qemu-$1.log" 2>&1 &
	pids+=($!)
}
stats() {
	printf '%s\n' '{"execute":"qmp_capabilities"}' \
		'{"execute":"qom-get","arguments":{"path":"/machine/peripheral/fh","property":"x-stats"}}' |
		socat -t 5 - "UNIX-CONNECT:$tmp/qmp-$1.sock" | jq -c 'select(has("return")) | .return' | tail -n 1
}
# cur_is NAME KHZ: the device holds KHZ for both vCPUs.
cur_is() { [ "$(stats "$1" | jq -c '[.vcpus[]."cur-khz"]')" = "[$2,$2]" ]; }
vm() { ctl vms | jq -r ".[] | select(.name==\"$1\") | $2"; }
features_is() { [ "$(vm "$1" .features)" = "$2" ]; }

start_machine fh-cur ""
until_ok 60 cur_is fh-cur 1600000 ||
	fail "the fixture's 1.6 GHz did not reach the device: $(stats fh-cur | jq -c '[.vcpus[]."cur-khz"]')"
[ "$(vm fh-cur '.features')" = $((0x2f)) ] || fail "features $(vm fh-cur .features), want 0x2f"
set_cur 2400000
until_ok 30 cur_is fh-cur 2400000 ||
	fail "a change to 2.4 GHz did not reach the device: $(stats fh-cur | jq -c '[.vcpus[]."cur-khz"]')"
frames=$(vm fh-cur .cur_freq_frames)
sleep 0.5
[ "$(vm fh-cur .cur_freq_frames)" = "$frames" ] || fail "CUR_FREQ frames without a change"
# above the class's maximum (a boost): clamped into the class
set_cur 3500000
until_ok 30 cur_is fh-cur 3200000 || fail "3.5 GHz not clamped to 3.2 GHz"
echo "cur-freq: 1.6, 2.4, 3.5 (as 3.2) GHz reached the device in $(vm fh-cur .cur_freq_frames) frames"

start_machine fh-off ",cur-freq=off"
until_ok 60 features_is fh-off $((0x0f)) ||
	fail "cur-freq=off: features $(vm fh-off .features), want 0xf"
set_cur 2000000
until_ok 30 cur_is fh-cur 2000000 || fail "2.0 GHz did not reach fh-cur"
cur_is fh-off 0 || fail "fh-off holds $(stats fh-off | jq -c '[.vcpus[]."cur-khz"]')"
[ "$(vm fh-off .cur_freq_frames)" = 0 ] || fail "CUR_FREQ to a device without the feature"

stop_freqhintd
echo "agent-cur-freq ok"
