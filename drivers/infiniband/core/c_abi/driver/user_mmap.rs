// SPDX-License-Identifier: GPL-2.0

//! C drivers' mmap entries of user contexts (C's `ib_core_uverbs.c`):
//! `rdma_user_mmap_entry_insert`, `rdma_user_mmap_entry_get`, `rdma_user_mmap_entry_put`,
//! `rdma_user_mmap_entry_remove` (siw's queues are mapped through them).
//!
//! An entry takes as many consecutive page offsets of its context's `mmap_xa` as it has pages,
//! the first free range (user space maps it at the first offset); a mapping of the entry must
//! be shared and of its size. The entry is counted: the driver's insert holds the first
//! reference, each lookup one more; once the driver removed it, no lookup finds it, and when the
//! last reference goes its offsets are freed and the driver's `mmap_free` gets it back.
//!
//! Not as C: the whole insert runs under the array's lock (C's takes the file's mapping mutex
//! and may sleep to allocate: here the array's nodes come from atomic memory); the entries'
//! dma-buf exports are not served (their lock is never used).

use kernel::{
    bindings,
    ffi::{c_int, c_void},
    mm::virt::{flags, VmaRef},
    page::PAGE_SIZE,
    prelude::*,
};

/// The context's array of entries by page offset.
///
/// # Safety
///
/// `ucontext` is a live context of the core's making (its array initialised).
unsafe fn array(ucontext: *mut bindings::ib_ucontext) -> *mut bindings::xarray {
    // SAFETY: The caller's contract.
    unsafe { &raw mut (*ucontext).mmap_xa }
}

/// The first offset from which `npages` consecutive offsets are free, if there is one below
/// 2^32 (C's `u32` offsets).
///
/// # Safety
///
/// `xa` is a live array, locked by the caller.
unsafe fn free_range(xa: *mut bindings::xarray, npages: usize) -> Option<usize> {
    let mut start = 0usize;
    let mut i = 0usize;
    while i < npages {
        if start + npages > 1 << 32 {
            return None;
        }
        // SAFETY: A live array (contract); its lock is held.
        if unsafe { bindings::xa_load(xa, start + i) }.is_null() {
            i += 1;
        } else {
            start += i + 1;
            i = 0;
        }
    }
    (start + npages <= 1 << 32).then_some(start)
}

/// C's `rdma_user_mmap_entry_insert`: gives `entry` (the driver's, embedded in its own) the
/// first free range of page offsets of `ucontext` for `length` bytes, with one reference, the
/// driver's. 0, `-EINVAL` without an entry, `-ENOMEM` when no range is free or the array cannot
/// grow.
///
/// # Safety
///
/// `ucontext` is a live context of a C driver's device (the core made it); `entry` is null or
/// writable and stays until the driver's `mmap_free` got it back.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_user_mmap_entry_insert(
    ucontext: *mut bindings::ib_ucontext,
    entry: *mut bindings::rdma_user_mmap_entry,
    length: usize,
) -> c_int {
    if entry.is_null() || ucontext.is_null() {
        return EINVAL.to_errno();
    }
    let Ok(npages) = u32::try_from(length.div_ceil(PAGE_SIZE)) else {
        return ENOMEM.to_errno();
    };
    // SAFETY: The caller's contract: the entry is the driver's to give, the context live.
    unsafe {
        let e = &mut *entry;
        bindings::refcount_set(&mut e.ref_.refcount, 1);
        crate::c_abi::object::init_list(&mut e.dmabufs);
        e.ucontext = ucontext;
        e.driver_removed = false;
        e.npages = npages as usize;
    }
    // SAFETY: The caller's contract.
    let xa = unsafe { array(ucontext) };
    // SAFETY: A live array; the whole search and insert under its lock, so no other insert
    // takes the range meanwhile.
    unsafe { bindings::xa_lock(xa) };
    // SAFETY: Locked above.
    let Some(start) = (unsafe { free_range(xa, npages as usize) }) else {
        // SAFETY: Locked above.
        unsafe { bindings::xa_unlock(xa) };
        return ENOMEM.to_errno();
    };
    for i in start..start + npages as usize {
        // SAFETY: Locked; an atomic allocation does not drop the lock; `entry` stays until it
        // is erased (contract).
        let r =
            unsafe { bindings::__xa_insert(xa, i, entry.cast::<c_void>(), bindings::GFP_ATOMIC) };
        if r != 0 {
            for j in start..i {
                // SAFETY: Inserted above, under the same lock.
                unsafe { bindings::__xa_erase(xa, j) };
            }
            // SAFETY: Locked above.
            unsafe { bindings::xa_unlock(xa) };
            return ENOMEM.to_errno();
        }
    }
    // SAFETY: The entry is the driver's (contract); under the lock, before any lookup.
    unsafe { (*entry).start_pgoff = start };
    // SAFETY: Locked above.
    unsafe { bindings::xa_unlock(xa) };
    0
}

/// The entry starting at page offset `pgoff` of `ucontext` that the driver has not removed,
/// with a reference for the caller (C's `rdma_user_mmap_entry_get_pgoff`).
///
/// # Safety
///
/// As [`rdma_user_mmap_entry_insert`]'s `ucontext`.
unsafe fn get_pgoff(
    ucontext: *mut bindings::ib_ucontext,
    pgoff: u64,
) -> *mut bindings::rdma_user_mmap_entry {
    if pgoff > u64::from(u32::MAX) {
        return core::ptr::null_mut();
    }
    // SAFETY: The caller's contract.
    let xa = unsafe { array(ucontext) };
    // SAFETY: A live array; an entry found under its lock is not freed before the lock goes
    // (its offsets are erased under it first).
    unsafe {
        bindings::xa_lock(xa);
        let e = bindings::xa_load(xa, pgoff as usize).cast::<bindings::rdma_user_mmap_entry>();
        let got = !e.is_null()
            && (*e).start_pgoff as u64 == pgoff
            && !(*e).driver_removed
            && bindings::rdma_rs_refcount_inc_not_zero(&mut (*e).ref_.refcount);
        bindings::xa_unlock(xa);
        if got {
            e
        } else {
            core::ptr::null_mut()
        }
    }
}

/// C's `rdma_user_mmap_entry_get`: the entry a driver's `mmap` maps into `vma` (a shared
/// mapping at the entry's first offset, of its size), with a reference for the caller; null for
/// none.
///
/// # Safety
///
/// As [`rdma_user_mmap_entry_insert`]'s `ucontext`; `vma` is the area being mapped, its mm
/// locked.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_user_mmap_entry_get(
    ucontext: *mut bindings::ib_ucontext,
    vma: *mut bindings::vm_area_struct,
) -> *mut bindings::rdma_user_mmap_entry {
    // SAFETY: The area being mapped, its mm locked (contract).
    let area = unsafe { VmaRef::from_raw(vma) };
    if area.flags() & flags::SHARED == 0 {
        return core::ptr::null_mut();
    }
    // SAFETY: As above.
    let pgoff = unsafe { (*vma).vm_pgoff } as u64;
    // SAFETY: The caller's contract.
    let e = unsafe { get_pgoff(ucontext, pgoff) };
    if e.is_null() {
        return e;
    }
    // SAFETY: Held by the lookup.
    if unsafe { (*e).npages } * PAGE_SIZE != area.end() - area.start() {
        // SAFETY: The lookup's reference, given back.
        unsafe { rdma_user_mmap_entry_put(e) };
        return core::ptr::null_mut();
    }
    e
}

/// C's `rdma_user_mmap_entry_put`: drops a reference; the last frees the entry's offsets and
/// gives it back to the driver (`mmap_free`).
///
/// # Safety
///
/// `entry` was inserted by [`rdma_user_mmap_entry_insert`] and the caller holds a reference.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_user_mmap_entry_put(
    entry: *mut bindings::rdma_user_mmap_entry,
) {
    // SAFETY: A held reference (contract).
    if !unsafe { bindings::refcount_dec_and_test(&mut (*entry).ref_.refcount) } {
        return;
    }
    // SAFETY: The last reference: the entry is ours until the driver gets it back; its context
    // is live (a context's entries go before it).
    unsafe {
        let ucontext = (*entry).ucontext;
        let xa = array(ucontext);
        bindings::xa_lock(xa);
        for i in 0..(*entry).npages {
            bindings::__xa_erase(xa, (*entry).start_pgoff + i);
        }
        bindings::xa_unlock(xa);
        if let Some(free) = (*(*ucontext).device).ops.mmap_free {
            free(entry);
        }
    }
}

/// C's `rdma_user_mmap_entry_remove`: the driver is done with the entry (no lookup finds it
/// from now on) and drops its reference. Nothing for null.
///
/// # Safety
///
/// `entry` is null, or was inserted by [`rdma_user_mmap_entry_insert`] and its driver's
/// reference is still held (given up here).
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_user_mmap_entry_remove(
    entry: *mut bindings::rdma_user_mmap_entry,
) {
    if entry.is_null() {
        return;
    }
    // SAFETY: Inserted, the driver's reference held (contract); the flag is written under the
    // array's lock, which lookups read it under.
    unsafe {
        let xa = array((*entry).ucontext);
        bindings::xa_lock(xa);
        (*entry).driver_removed = true;
        bindings::xa_unlock(xa);
        rdma_user_mmap_entry_put(entry);
    }
}
