// SPDX-License-Identifier: GPL-2.0

#include <linux/netdevice.h>
#include <linux/sysfs.h>

/*
 * Gives a dynamically allocated attribute its lockdep class (a static key here), as C code does
 * with sysfs_attr_init() before creating the file.
 */
__rust_helper void rust_helper_rdma_rs_sysfs_attr_init(struct attribute *attr)
{
	sysfs_attr_init(attr);
}

/*
 * The network namespace type of sysfs tags (net-sysfs.c), for classes whose devices belong to a
 * network namespace (C's `.ns_type = &net_ns_type_operations`).
 */
__rust_helper const struct kobj_ns_type_operations *rust_helper_rdma_rs_net_ns_type(void)
{
	return &net_ns_type_operations;
}
