#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# In-guest stress: module load/unload and vCPU hotplug, repeated while tasks
# change clamps, so a leak, a use-after-free or a stuck notification shows
# up as a kernel warning or a kmemleak report (run-guest.sh fails on both;
# the uclamp kernel runs with --kmemleak).  Works with or without a device.
. /lib/freqhint/test-lib.sh
. /lib/freqhint/fh-lib.sh

cycles=${FH_CYCLES:-10}
taskset -p 8 $$ >/dev/null
if uclampset -m 0 -p $$ >/dev/null 2>&1; then clamp="-m 600 -M 900"; else clamp=; fi

i=0
while [ $i -lt "$cycles" ]; do
	check "cycle $i: insmod" insmod "$FH_KO"
	busy 1 $clamp
	busy 2
	check "cycle $i: vCPU1 reports" wait_vcpu 1 'f["idle"]==0' 10
	check "cycle $i: vCPU2 offline" sh -c 'echo 0 >/sys/devices/system/cpu/cpu2/online'
	check "cycle $i: vCPU2 online" sh -c 'echo 1 >/sys/devices/system/cpu/cpu2/online'
	check "cycle $i: rmmod with busy vCPUs" rmmod virtio_freqhint
	stop_busy
	check "cycle $i: vCPU1 offline without the module" \
		sh -c 'echo 0 >/sys/devices/system/cpu/cpu1/online'
	check "cycle $i: insmod with vCPU1 offline" insmod "$FH_KO"
	check "cycle $i: vCPU1 online under the module" \
		sh -c 'echo 1 >/sys/devices/system/cpu/cpu1/online'
	check "cycle $i: rmmod" rmmod virtio_freqhint
	i=$((i + 1))
done
check "no kernel warnings after $cycles cycles" dmesg_clean
done_testing
