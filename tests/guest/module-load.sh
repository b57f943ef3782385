#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# In-guest: an out-of-tree module built against this kernel's tree (the
# header check, carried with --module) loads and unloads cleanly.
. /lib/freqhint/test-lib.sh
check "insmod header_check.ko" insmod /modules/header_check.ko
check_output "it is listed" '^header_check ' cat /proc/modules
check "rmmod header_check" rmmod header_check
check_fails "and gone" grep -q '^header_check ' /proc/modules
done_testing
