// SPDX-License-Identifier: GPL-2.0

#include <linux/mm.h>

/*
 * Maps `size` bytes of I/O memory from page frame `pfn` at the start of `vma`, write-combined or
 * uncached (pgprot_* and io_remap_pfn_range are macros or inlines in C).
 */
__rust_helper int rust_helper_rdma_rs_io_remap(struct vm_area_struct *vma, unsigned long pfn,
					       unsigned long size, bool write_combine)
{
	vma->vm_page_prot = write_combine ? pgprot_writecombine(vma->vm_page_prot) :
					    pgprot_noncached(vma->vm_page_prot);
	return io_remap_pfn_range(vma, vma->vm_start, pfn, size, vma->vm_page_prot);
}

/* The VMA's page offset. */
__rust_helper unsigned long rust_helper_rdma_rs_vma_pgoff(struct vm_area_struct *vma)
{
	return vma->vm_pgoff;
}

/* The VMA's private data. */
__rust_helper void *rust_helper_rdma_rs_vma_private(struct vm_area_struct *vma)
{
	return vma->vm_private_data;
}

/* Sets the VMA's operations and private data. */
__rust_helper void rust_helper_rdma_rs_vma_set_ops(struct vm_area_struct *vma,
						   const struct vm_operations_struct *ops,
						   void *private_data)
{
	vma->vm_ops = ops;
	vma->vm_private_data = private_data;
}

/* Clears the VMA's private data. */
__rust_helper void rust_helper_rdma_rs_vma_clear_private(struct vm_area_struct *vma)
{
	vma->vm_private_data = NULL;
}

/* The VMA of a fault. */
__rust_helper struct vm_area_struct *rust_helper_rdma_rs_fault_vma(struct vm_fault *vmf)
{
	return vmf->vma;
}

/*
 * Answers a fault with `page` (NULL: the zero page of the faulting address), taking a reference
 * for the page table.
 */
__rust_helper vm_fault_t rust_helper_rdma_rs_fault_page(struct vm_fault *vmf, struct page *page)
{
	vmf->page = page ? page : ZERO_PAGE(vmf->address);
	get_page(vmf->page);
	return 0;
}

/* Clears the page table entries of the whole of `vma` (an I/O mapping). */
__rust_helper void rust_helper_rdma_rs_zap_vma(struct vm_area_struct *vma)
{
	zap_special_vma_range(vma, vma->vm_start, vma->vm_end - vma->vm_start);
}
