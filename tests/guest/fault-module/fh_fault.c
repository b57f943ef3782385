// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A module that misbehaves on purpose, so the guest test harness can prove
 * it notices: mode=warn fires a WARN() at load, mode=leak loses a
 * kmalloc'd buffer (kmemleak must report it).  Test use only.
 */
#include <linux/bug.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

static char *mode = "none";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "none, warn or leak");

static void *fh_fault_lost;

static int __init fh_fault_init(void)
{
	if (!strcmp(mode, "warn")) {
		WARN(1, "fh_fault: warning on purpose\n");
	} else if (!strcmp(mode, "leak")) {
		fh_fault_lost = kmalloc(128, GFP_KERNEL);
		if (!fh_fault_lost)
			return -ENOMEM;
		memset(fh_fault_lost, 0x5a, 128);
		/* Forget it: the only reference goes away with the module. */
		fh_fault_lost = NULL;
	} else if (strcmp(mode, "none")) {
		return -EINVAL;
	}
	return 0;
}

static void __exit fh_fault_exit(void)
{
}

module_init(fh_fault_init);
module_exit(fh_fault_exit);
MODULE_DESCRIPTION("freqhint test harness self-check: faults on purpose");
MODULE_LICENSE("GPL");
