// SPDX-License-Identifier: GPL-2.0

//! C drivers' hardware counter sets (C's `verbs.c`): `rdma_alloc_hw_stats_struct`, and the
//! core's matching free.

use core::alloc::Layout;
use kernel::{
    alloc::{allocator::Kmalloc, flags::__GFP_ZERO, Allocator, NumaNode},
    bindings,
    ffi::{c_int, c_ulong},
    prelude::*,
};

/// The memory of a counter set of `n` counters (C's `struct_size(stats, value, n)`).
fn layout(n: usize) -> Option<Layout> {
    let size =
        size_of::<bindings::rdma_hw_stats>().checked_add(n.checked_mul(size_of::<u64>())?)?;
    Layout::from_size_align(size, align_of::<bindings::rdma_hw_stats>()).ok()
}

/// The memory of the disabled-counter bitmap of `n` counters.
fn bitmap_layout(n: usize) -> Option<Layout> {
    let words = n.div_ceil(c_ulong::BITS as usize).max(1);
    Layout::array::<c_ulong>(words).ok()
}

/// C's `rdma_alloc_hw_stats_struct`: a zeroed counter set of `num_counters` counters described
/// by `descs` (the driver's static table), fresh for `lifespan` milliseconds; null when memory
/// is short.
///
/// # Safety
///
/// `descs` holds `num_counters` descriptions and outlives the set.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_alloc_hw_stats_struct(
    descs: *const bindings::rdma_stat_desc,
    num_counters: c_int,
    lifespan: c_ulong,
) -> *mut bindings::rdma_hw_stats {
    let Ok(n) = usize::try_from(num_counters) else {
        return core::ptr::null_mut();
    };
    let (Some(l), Some(bl)) = (layout(n), bitmap_layout(n)) else {
        return core::ptr::null_mut();
    };
    let Ok(mem) = Kmalloc::alloc(l, GFP_KERNEL | __GFP_ZERO, NumaNode::NO_NODE) else {
        return core::ptr::null_mut();
    };
    let Ok(bits) = Kmalloc::alloc(bl, GFP_KERNEL | __GFP_ZERO, NumaNode::NO_NODE) else {
        // SAFETY: Allocated above with `l`.
        unsafe { Kmalloc::free(mem.cast(), l) };
        return core::ptr::null_mut();
    };
    let stats = mem.cast::<bindings::rdma_hw_stats>().as_ptr();
    // SAFETY: `stats` is zeroed memory of the right size, ours alone; the mutex is initialised
    // once, with a static class (C's `mutex_init`).
    unsafe {
        (*stats).is_disabled = bits.cast::<c_ulong>().as_ptr();
        (*stats).descs = descs;
        (*stats).num_counters = num_counters;
        (*stats).lifespan =
            bindings::__msecs_to_jiffies(u32::try_from(lifespan).unwrap_or(u32::MAX));
        bindings::__mutex_init(
            &raw mut (*stats).lock,
            c"&stats->lock".as_char_ptr(),
            kernel::static_lock_class!().as_ptr(),
        );
    }
    stats
}

/// Frees a set of [`rdma_alloc_hw_stats_struct`] (C's `rdma_free_hw_stats_struct`).
///
/// # Safety
///
/// `stats` is null or was returned by [`rdma_alloc_hw_stats_struct`], and is freed once.
pub(crate) unsafe fn free_hw_stats(stats: *mut bindings::rdma_hw_stats) {
    if stats.is_null() {
        return;
    }
    // SAFETY: The caller's contract.
    let n = usize::try_from(unsafe { (*stats).num_counters }).unwrap_or(0);
    if let (Some(l), Some(bl)) = (layout(n), bitmap_layout(n)) {
        // SAFETY: Both allocations were made with these layouts (the count did not change).
        unsafe {
            if let Some(bits) = core::ptr::NonNull::new((*stats).is_disabled) {
                Kmalloc::free(bits.cast(), bl);
            }
            Kmalloc::free(core::ptr::NonNull::new_unchecked(stats).cast(), l);
        }
    }
}
