#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Runs inside the test guest (as /test.sh, see tests/harness/mkinitramfs.sh).
# Each step changes clamps the way a guest owner would (uclampset), then
# tells the host on the control port (ttyS1) and waits for the host's
# verdict: "GO" when the host saw what the step should cause, "NO <why>"
# otherwise.  The host side is tests/e2e/run-e2e.sh.
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=../harness/step-lib.sh
. /lib/freqhint/step-lib.sh
. /etc/freqhint-e2e.env

step_open

settle() { sleep "${1:-1}"; }

# The story's own shell stays on vCPU0, so vCPUs 1-3 run only what a step
# puts there and the host checks can say "others unchanged" of them.
taskset -p 1 $$ >/dev/null

# With the demo's response times (step-lib.sh), vCPU1's speed measured first.
demo_response_init

step_load_module
settle 2
check "host sees the VM connected" step connected
demo_response none -

# 1. A task on vCPU1 asks for at least 800.  It runs 20% of the time: a
# task that spins 100% makes schedutil ask for full speed anyway, and the
# host honours that perf request as a floor too (merge rule MR-4).
uclampset -m 800 -M 1024 /bin/busy --cpu 1 --duty 20 &
busy=$!
settle
check "floor 800 on vCPU1 reaches vCPU1's host CPU only" step floor vcpu=1 min=800
# The host's frequency, as the host samples it, reaches the guest.
host_cur_freq 2400000
host_cur_freq 1200000
demo_response floor "$busy" uclampset -m 800

# 2. The operator caps the VM at 50%: the floor follows the cap.
check "operator ceiling 50% caps the floor" step operator-ceiling vcpu=1 min=512
demo_response capped "$busy" uclampset -m 800

# 3. The task exits: the vCPU idles, its floor is released.
kill "$busy"; wait "$busy" 2>/dev/null
check "idle vCPU1 releases its floor" step released vcpu=1

# 4. A busy background task capped at 300 on vCPU2.
uclampset -M 300 /bin/busy --cpu 2 &
capped=$!
settle
check "ceiling 300 on vCPU2 reaches its host CPU" step ceiling vcpu=2 max=300

# 5. The agent is killed and restarted under a running guest.
check "restarted agent gets full state back" step agent-restart vcpu=2 max=300
kill "$capped"; wait "$capped" 2>/dev/null

# 6. A flood of clamp changes on vCPU3, ending at 700..1024.
taskset 8 /bin/clampflood 5 700 1024 >/tmp/flood.out &
flood=$!
check "agent answers while the guest floods" step flood-start vcpu=3
# The flood lasts 5 s of guest time; it prints its count once the final
# clamps are set.  Wait for that (with a deadline), not for a guessed time.
i=0
until grep -q 'calls in' /tmp/flood.out 2>/dev/null || [ $i -ge 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
cat /tmp/flood.out
check "clampflood set its final clamps" grep -q 'calls in' /tmp/flood.out
check "flood ends in the right state within the rate bound" step flood vcpu=3 min=700
kill "$flood"; wait "$flood" 2>/dev/null

# 7. Latency samples: alternate a floor on vCPU1, the host timestamps writes.
i=0
while [ $i -lt "${FREQHINT_E2E_SAMPLES:-10}" ]; do
	echo "STEP mark $i" >&3
	read -r _ <&3
	uclampset -m 800 /bin/busy --cpu 1 --duty 20 --seconds 1
	i=$((i + 1))
done
check "latency samples taken" step latency-done

echo "STEP end" >&3
done_testing
