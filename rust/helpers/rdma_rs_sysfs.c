// SPDX-License-Identifier: GPL-2.0

#include <linux/sysfs.h>

/*
 * Gives a dynamically allocated attribute its lockdep class (a static key here), as C code does
 * with sysfs_attr_init() before creating the file.
 */
__rust_helper void rust_helper_rdma_rs_sysfs_attr_init(struct attribute *attr)
{
	sysfs_attr_init(attr);
}
