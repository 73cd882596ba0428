// SPDX-License-Identifier: GPL-2.0

//! Memory for consumers' work requests on a C driver's device without a DMA device (rxe, siw:
//! C's `ib_uses_virt_dma`, where a scatter entry's address is a kernel virtual address).

use crate::verbs::ops::DmaMemory;
use core::{alloc::Layout, ptr::NonNull};
use kernel::{
    alloc::{allocator::Kmalloc, flags::__GFP_ZERO, Allocator, NumaNode},
    prelude::*,
};

/// Zeroed kernel memory addressed by its virtual address.
///
/// # Invariants
///
/// `ptr` was allocated by `Kmalloc` with `layout`; the device (a software driver) and the core
/// reach it only through raw copies.
pub(crate) struct VirtBuffer {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: Plain memory, copied in and out by any thread (as a device's DMA memory is).
unsafe impl Send for VirtBuffer {}
// SAFETY: As above.
unsafe impl Sync for VirtBuffer {}

impl VirtBuffer {
    /// `len` zeroed bytes (at least one).
    pub(crate) fn new(len: usize) -> Result<Self> {
        let layout = Layout::from_size_align(len.max(1), 64).map_err(|_| ENOMEM)?;
        let mem = Kmalloc::alloc(layout, GFP_KERNEL | __GFP_ZERO, NumaNode::NO_NODE)?;
        // INVARIANT: Allocated just now with `layout`.
        Ok(Self {
            ptr: mem.cast(),
            layout,
        })
    }
}

impl Drop for VirtBuffer {
    fn drop(&mut self) {
        // SAFETY: Allocated with this layout (type invariant), freed once.
        unsafe { Kmalloc::free(self.ptr, self.layout) };
    }
}

impl DmaMemory for VirtBuffer {
    fn dma_addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    fn len(&self) -> usize {
        self.layout.size()
    }

    fn read(&self, offset: usize, out: &mut [u8]) -> Result {
        let end = offset.checked_add(out.len()).ok_or(EINVAL)?;
        if end > self.len() {
            return Err(EINVAL);
        }
        // SAFETY: The range is within the allocation (checked); the software device may write
        // it concurrently, as hardware would: the copy reads whatever the bytes are.
        unsafe {
            core::ptr::copy_nonoverlapping(
                self.ptr.as_ptr().add(offset),
                out.as_mut_ptr(),
                out.len(),
            )
        };
        Ok(())
    }

    fn write(&self, offset: usize, data: &[u8]) -> Result {
        let end = offset.checked_add(data.len()).ok_or(EINVAL)?;
        if end > self.len() {
            return Err(EINVAL);
        }
        // SAFETY: As above.
        unsafe {
            core::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.as_ptr().add(offset), data.len())
        };
        Ok(())
    }
}
