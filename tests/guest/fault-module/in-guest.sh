#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# In-guest: load fh_fault.ko in the mode the command line names
# (freqhint.fault=warn|leak) and unload it.  The checks pass; the kernel's
# complaint is what run-guest.sh must catch.
. /lib/freqhint/test-lib.sh
fault=$(sed -n 's/.*freqhint\.fault=\([a-z]*\).*/\1/p' /proc/cmdline)
check "insmod fh_fault.ko mode=$fault" insmod /modules/fh_fault.ko mode="$fault"
check "rmmod fh_fault" rmmod fh_fault
done_testing
