#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Runs inside the test guest (as /test.sh) for tests/e2e/run-migrate.sh:
# a floor set with uclampset, a live migration to a second QEMU while it
# holds, then a change made on the destination.  Each step is reported on
# the control port (ttyS1) and waits for the host's verdict, as in
# guest-story.sh.  The migration happens while the guest waits for the
# "migrate" verdict, which comes through the destination's ttyS1.
. /lib/freqhint/test-lib.sh
# shellcheck source-path=SCRIPTDIR source=../harness/step-lib.sh
. /lib/freqhint/step-lib.sh

step_open

# The shell stays on vCPU0; vCPUs 1-3 run only what a step puts there.
taskset -p 1 $$ >/dev/null

step_load_module
sleep 2
check "host sees the VM connected" step connected

# A task that runs all the time on vCPU1 with a floor of 800: every window
# of vCPU1 carries the floor (a duty cycle would let a late wake-up on a
# busy host make a window idle, and the floor with it: GR-7).
uclampset -m 800 -M 1024 /bin/busy --cpu 1 &
busy=$!
sleep 1
check "floor 800 on vCPU1 reaches its host CPU" step floor vcpu=1 min=800
check "the floor stays in force through a live migration" step migrate vcpu=1 min=800

# On the destination: the guest's changes reach the host through the
# destination's connection.
kill "$busy"; wait "$busy" 2>/dev/null
check "idle vCPU1 releases its floor after the migration" step released vcpu=1

echo "STEP end" >&3
done_testing
