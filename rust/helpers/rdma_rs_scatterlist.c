// SPDX-License-Identifier: GPL-2.0

#include <linux/scatterlist.h>

/* The first page of a scatter list entry (an inline function in C). */
__rust_helper struct page *rust_helper_rdma_rs_sg_page(struct scatterlist *sg)
{
	return sg_page(sg);
}
