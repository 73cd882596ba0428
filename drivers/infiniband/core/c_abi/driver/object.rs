// SPDX-License-Identifier: GPL-2.0

//! The memory of a C driver's verbs object ([`DriverObject`]): the core allocates it zeroed
//! with the size the driver's ops table names (C's `rdma_zalloc_drv_obj`, `size_ib_pd` ...),
//! the C structure first and the driver's own part after it, and frees it once the driver's
//! destroying op has returned (C's `kfree` after it).

use core::{alloc::Layout, ptr::NonNull};
use kernel::{
    alloc::{allocator::Kmalloc, flags::__GFP_ZERO, Allocator, Flags, NumaNode},
    prelude::*,
};

/// A zeroed allocation of at least a `T`, freed when dropped.
///
/// # Invariants
///
/// `ptr` was allocated by `Kmalloc` with `layout`, which is at least as large as a `T`.
pub(crate) struct DriverObject<T> {
    ptr: NonNull<T>,
    layout: Layout,
}

// SAFETY: The memory is the C driver's object, which C drivers use from any thread.
unsafe impl<T> Send for DriverObject<T> {}
// SAFETY: As above.
unsafe impl<T> Sync for DriverObject<T> {}

impl<T> DriverObject<T> {
    /// `size` zeroed bytes (the driver's object size; at least a `T`), allocated with `flags`.
    pub(crate) fn alloc(size: usize, flags: Flags) -> Result<Self> {
        let size = size.max(size_of::<T>());
        let layout = Layout::from_size_align(size, align_of::<T>().max(8)).map_err(|_| ENOMEM)?;
        let mem = Kmalloc::alloc(layout, flags | __GFP_ZERO, NumaNode::NO_NODE)?;
        // INVARIANT: Allocated just now, with `layout`.
        Ok(Self {
            ptr: mem.cast(),
            layout,
        })
    }

    /// The C structure.
    pub(crate) fn raw(&self) -> *mut T {
        self.ptr.as_ptr()
    }
}

impl<T> Drop for DriverObject<T> {
    fn drop(&mut self) {
        // SAFETY: Allocated with this layout (type invariant), freed once.
        unsafe { Kmalloc::free(self.ptr.cast(), self.layout) };
    }
}
