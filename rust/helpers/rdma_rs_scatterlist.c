// SPDX-License-Identifier: GPL-2.0

#include <linux/dma-mapping.h>
#include <linux/scatterlist.h>

/* The first page of a scatter list entry (an inline function in C). */
__rust_helper struct page *rust_helper_rdma_rs_sg_page(struct scatterlist *sg)
{
	return sg_page(sg);
}

/* The kernel address of a scatter list entry's data (an inline function in C). */
__rust_helper void *rust_helper_rdma_rs_sg_virt(struct scatterlist *sg)
{
	return sg_virt(sg);
}

/* Sets an entry's DMA address and length (macros in C, the length's field depending on
 * CONFIG_NEED_SG_DMA_LENGTH). */
__rust_helper void rust_helper_rdma_rs_sg_set_dma(struct scatterlist *sg, dma_addr_t addr,
						  unsigned int len)
{
	sg_dma_address(sg) = addr;
	sg_dma_len(sg) = len;
}

/* The largest segment a device's DMA mappings take (an inline function in C). */
__rust_helper unsigned int rust_helper_rdma_rs_dma_max_seg_size(struct device *dev)
{
	return dma_get_max_seg_size(dev);
}

/* Points an entry at a kernel buffer (an inline function in C). */
__rust_helper void rust_helper_rdma_rs_sg_set_buf(struct scatterlist *sg, const void *buf,
						  unsigned int buflen)
{
	sg_set_buf(sg, buf, buflen);
}
