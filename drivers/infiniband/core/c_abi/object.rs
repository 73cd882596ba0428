// SPDX-License-Identifier: GPL-2.0

//! A verbs object as C modules hold it ([`Faced`]): the core's part first, then the C structure
//! (`struct ib_pd`, `ib_cq`, `ib_qp`, `ib_ah`) in one allocation, as docs/c-abi.md's decision 1
//! lays objects out. C code gets the structure's address and reads its fields through
//! `include/rdma/*.h`'s inline functions; the core finds its part from that address.

use crate::device::events::{EventHandler, EventType};
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicI32, AtomicPtr, Ordering},
};
use kernel::{alloc::Flags, bindings, prelude::*, sync::Arc, types::Opaque};

/// The core's part `K` of an object and the C structure `C` handed to C code.
#[repr(C)]
pub(crate) struct Faced<K, C> {
    core: K,
    c: Opaque<C>,
}

impl<K, C> Faced<K, C> {
    /// Allocates the object with `core` and a zeroed C structure, and returns the structure's
    /// address: the caller fills it before C code sees it, and gives it back with
    /// [`Faced::free`] once C code is done with it.
    pub(crate) fn alloc(core: K) -> Result<NonNull<C>> {
        Self::alloc_with(core, GFP_KERNEL)
    }

    /// As [`Faced::alloc`], with the memory allocated with `flags` (`GFP_ATOMIC` for a caller
    /// that cannot sleep).
    pub(crate) fn alloc_with(core: K, flags: Flags) -> Result<NonNull<C>> {
        let b = KBox::new(
            Self {
                core,
                c: Opaque::zeroed(),
            },
            flags,
        )?;
        let raw = KBox::into_raw(b);
        // SAFETY: `raw` is valid; only a field's address is taken.
        let c = unsafe { (*raw).c.get() };
        // SAFETY: A field of a live allocation is not null.
        Ok(unsafe { NonNull::new_unchecked(c) })
    }

    /// The allocation whose C structure is `c`.
    ///
    /// # Safety
    ///
    /// `c` was returned by [`Faced::alloc`] of this `K` and `C` (only the address is computed).
    unsafe fn of(c: *mut C) -> *mut Self {
        // SAFETY: `c` is the `c` field of a `Faced<K, C>` (contract).
        unsafe { kernel::container_of!(c.cast::<Opaque<C>>(), Self, c) }
    }

    /// The core's part of the object whose C structure is `c`.
    ///
    /// # Safety
    ///
    /// `c` was returned by [`Faced::alloc`] of this `K` and `C` and is not freed before the
    /// returned reference goes (C's contract: a C module uses an object until it destroys it).
    pub(crate) unsafe fn core<'a>(c: *mut C) -> &'a K {
        // SAFETY: The caller's contract: the allocation is live for `'a`.
        unsafe { &(*Self::of(c)).core }
    }

    /// Frees the object whose C structure is `c`, dropping the core's part.
    ///
    /// # Safety
    ///
    /// `c` was returned by [`Faced::alloc`] of this `K` and `C`, is freed once, and no reference
    /// from [`Faced::core`] outlives this call.
    pub(crate) unsafe fn free(c: *mut C) {
        // SAFETY: The allocation was made by `KBox::into_raw` and is freed once (contract); it
        // never moved, so the address C code held was its own to the end.
        drop(unsafe { KBox::from_raw(Self::of(c)) });
    }
}

/// The allocation flags for a C caller's `gfp_t`: `GFP_KERNEL` when it may sleep
/// (`__GFP_DIRECT_RECLAIM`), `GFP_ATOMIC` otherwise (ib_cm's `GFP_ATOMIC` under its spinlocks).
pub(crate) fn alloc_flags(gfp: bindings::gfp_t) -> Flags {
    if gfp & bindings::__GFP_DIRECT_RECLAIM != 0 {
        GFP_KERNEL
    } else {
        GFP_ATOMIC
    }
}

/// C's `ERR_PTR(err)`: the pointer a C function returns for an error.
pub(crate) fn err_ptr<T>(err: Error) -> *mut T {
    // The errno (negative, at least -MAX_ERRNO) as an address, as C encodes it.
    core::ptr::without_provenance_mut(err.to_errno() as isize as usize)
}

/// The C pointer of `r`, or C's `ERR_PTR` of its error.
pub(crate) fn ptr_or_err<T>(r: Result<NonNull<T>>) -> *mut T {
    match r {
        Ok(p) => p.as_ptr(),
        Err(e) => err_ptr(e),
    }
}

/// C's `atomic_t` as an atomic.
///
/// # Safety
///
/// `a` points to a live `atomic_t` that C code only reaches with atomic operations.
pub(crate) unsafe fn atomic<'a>(a: *mut bindings::atomic_t) -> &'a AtomicI32 {
    // SAFETY: `atomic_t` is an `int` accessed atomically (contract); the field is aligned.
    unsafe { AtomicI32::from_ptr((&raw mut (*a).counter).cast()) }
}

/// The `struct ib_event` of `event` on `device`, for a C handler (the caller names the object).
pub(crate) fn new_event(device: *mut bindings::ib_device, event: EventType) -> bindings::ib_event {
    // SAFETY: `ib_event` is a plain structure: all zeroes is valid.
    let mut ev: bindings::ib_event = unsafe { core::mem::zeroed() };
    ev.device = device;
    ev.event = event as bindings::ib_event_type;
    ev
}

/// The handler of a core object's asynchronous events that raises them on the object's C
/// structure, `raise(c, event)`, while `this` names it (it is cleared before the structure is
/// freed; the handler then does nothing).
pub(crate) fn relay_events<C: 'static>(
    this: &Arc<AtomicPtr<C>>,
    raise: unsafe fn(*mut C, EventType),
) -> Result<EventHandler> {
    let this = this.clone();
    Ok(KBox::new(
        move |e: EventType| {
            let c = this.load(Ordering::Acquire);
            if !c.is_null() {
                // SAFETY: A non-null `this` is the live C structure: it is cleared before the
                // structure is freed, and the core's object (whose events call this) is
                // destroyed first.
                unsafe { raise(c, e) };
            }
        },
        GFP_KERNEL,
    )?)
}

/// `l` made an empty list, as C's `INIT_LIST_HEAD` (list heads of C structures the core fills).
pub(crate) fn init_list(l: &mut bindings::list_head) {
    let p: *mut bindings::list_head = l;
    l.next = p;
    l.prev = p;
}

/// Links `new` into a C list between `prev` and `next` (C's `__list_add`).
///
/// # Safety
///
/// `prev` and `next` are adjacent entries of a live list the caller holds the lock of; `new`
/// is on no list.
unsafe fn list_insert(
    new: *mut bindings::list_head,
    prev: *mut bindings::list_head,
    next: *mut bindings::list_head,
) {
    // SAFETY: The caller's contract.
    unsafe {
        (*next).prev = new;
        (*new).next = next;
        (*new).prev = prev;
        (*prev).next = new;
    }
}

/// Adds `new` at the front of the C list `head` (C's `list_add`).
///
/// # Safety
///
/// As for [`list_insert`], `head` being the list.
pub(crate) unsafe fn list_add(new: *mut bindings::list_head, head: *mut bindings::list_head) {
    // SAFETY: The caller's contract.
    unsafe { list_insert(new, head, (*head).next) }
}

/// Adds `new` at the back of the C list `head` (C's `list_add_tail`).
///
/// # Safety
///
/// As for [`list_insert`], `head` being the list.
pub(crate) unsafe fn list_add_tail(new: *mut bindings::list_head, head: *mut bindings::list_head) {
    // SAFETY: The caller's contract.
    unsafe { list_insert(new, (*head).prev, head) }
}

/// Unlinks `entry` from its C list and makes it an empty list (C's `list_del_init`).
///
/// # Safety
///
/// `entry` is on a live list the caller holds the lock of.
pub(crate) unsafe fn list_del(entry: *mut bindings::list_head) {
    // SAFETY: The caller's contract.
    unsafe {
        (*(*entry).prev).next = (*entry).next;
        (*(*entry).next).prev = (*entry).prev;
        (*entry).next = entry;
        (*entry).prev = entry;
    }
}

/// The first entry of the C list `head`, none when it is empty.
///
/// # Safety
///
/// `head` is a live list the caller holds the lock of.
pub(crate) unsafe fn list_first(
    head: *mut bindings::list_head,
) -> Option<*mut bindings::list_head> {
    // SAFETY: The caller's contract.
    let first = unsafe { (*head).next };
    (first != head).then_some(first)
}

/// A C `spinlock_t` of a C structure the core fills, held with interrupts saved (C's
/// `spin_lock_irqsave`) until dropped.
pub(crate) struct CSpinGuard {
    lock: *mut bindings::spinlock_t,
    flags: kernel::ffi::c_ulong,
}

impl CSpinGuard {
    /// Takes `lock`.
    ///
    /// # Safety
    ///
    /// `lock` is an initialised spinlock that outlives the guard.
    pub(crate) unsafe fn lock(lock: *mut bindings::spinlock_t) -> Self {
        // SAFETY: The caller's contract.
        let flags = unsafe { bindings::rdma_rs_spin_lock_irqsave(lock) };
        Self { lock, flags }
    }
}

impl Drop for CSpinGuard {
    fn drop(&mut self) {
        // SAFETY: Taken by `lock` with these flags; the lock outlives the guard (contract).
        unsafe { bindings::rdma_rs_spin_unlock_irqrestore(self.lock, self.flags) }
    }
}
