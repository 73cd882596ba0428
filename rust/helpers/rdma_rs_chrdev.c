// SPDX-License-Identifier: GPL-2.0

#include <linux/cdev.h>
#include <linux/fs.h>

/* The character device an inode opens (in a union of `struct inode`). */
__rust_helper struct cdev *rust_helper_rdma_rs_inode_cdev(struct inode *inode)
{
	return inode->i_cdev;
}
