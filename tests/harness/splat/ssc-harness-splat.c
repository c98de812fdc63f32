// SPDX-License-Identifier: GPL-2.0
/*
 * A module that misbehaves on purpose when loaded, to prove the VM harness
 * fails a run on a kernel WARN and on an oops. Never load it anywhere else.
 */
#include <linux/module.h>
#include <linux/bug.h>

static char *mode = "warn";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "warn or oops");

static int __init ssc_harness_splat_init(void)
{
	int *volatile p = NULL;

	if (!strcmp(mode, "warn")) {
		WARN(1, "ssc-harness-splat: deliberate warning");
		return 0;
	}
	if (!strcmp(mode, "oops")) {
		pr_info("ssc-harness-splat: deliberate NULL dereference\n");
		return *p;
	}
	return -EINVAL;
}

static void __exit ssc_harness_splat_exit(void)
{
}

module_init(ssc_harness_splat_init);
module_exit(ssc_harness_splat_exit);
MODULE_DESCRIPTION("dm-ssc test harness self-test: deliberate WARN or oops");
MODULE_LICENSE("GPL");
