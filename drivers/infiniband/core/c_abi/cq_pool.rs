// SPDX-License-Identifier: GPL-2.0

//! The device's shared CQ pool (C's `drivers/infiniband/core/cq.c`): `ib_cq_pool_get` and
//! `ib_cq_pool_put` with C's names and signatures. The pool is C's, in the device structure
//! (`cq_pools[poll_ctx]` under `cq_pools_lock`, set up when the structure is made, `c_abi/face.rs`):
//! CQs from [`__ib_alloc_cq`], marked `shared`, `cqe_used` counting the entries handed out, one
//! per completion vector (as many as the device has vectors, up to the online CPUs) made
//! whenever no CQ of the vector has room. They are freed when the device is unregistered,
//! after every client is removed ([`cleanup`], C's `ib_cq_pool_cleanup`).

use crate::c_abi::{
    cq::{__ib_alloc_cq, ib_free_cq},
    object::{atomic, err_ptr, list_add_tail, list_del, list_first, CSpinGuard},
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{bindings, ffi::c_int, prelude::*};

/// The smallest CQ the pool makes (C's `IB_MAX_SHARED_CQ_SZ`).
const MAX_SHARED_CQ_SZ: u32 = 4096;

/// The pool lists (C's `IB_POLL_LAST_POOL_TYPE` + 1: the contexts a pool may have).
const POOLS: usize = bindings::ib_poll_context_IB_POLL_LAST_POOL_TYPE as usize + 1;

/// The vector the last `ib_cq_pool_get` without a hint chose (C's `default_comp_vector`).
static DEFAULT_COMP_VECTOR: AtomicU32 = AtomicU32::new(0);

/// The CQ whose `pool_entry` is `entry`.
fn cq_of_entry(entry: *mut bindings::list_head) -> *mut bindings::ib_cq {
    // SAFETY: Only the address is computed: a pool's entries are CQs' `pool_entry`.
    unsafe { kernel::container_of!(entry, bindings::ib_cq, pool_entry) }
}

/// The vectors the pool spreads CQs over on `ib`.
///
/// # Safety
///
/// `ib` is a live device structure.
unsafe fn vectors(ib: *mut bindings::ib_device) -> u32 {
    // SAFETY: The caller's contract.
    let n = u32::try_from(unsafe { (*ib).num_comp_vectors }).unwrap_or(1);
    // SAFETY: The kernel's count of online CPUs, an `atomic_t` only read atomically (C's
    // `num_online_cpus`).
    let cpus = unsafe { atomic(&raw mut bindings::__num_online_cpus) }.load(Ordering::Relaxed);
    n.min(u32::try_from(cpus).unwrap_or(1)).max(1)
}

/// Makes the device's CQs of `poll_ctx` with at least `nr_cqe` entries, one per vector, and
/// adds them to the pool (C's `ib_alloc_cqs`).
///
/// # Safety
///
/// `ib` is a registered device structure whose pool is set up.
unsafe fn grow(
    ib: *mut bindings::ib_device,
    nr_cqe: u32,
    poll_ctx: bindings::ib_poll_context,
) -> Result {
    // SAFETY: The caller's contract.
    let max_cqe = unsafe { (*ib).attrs.max_cqe };
    let nr_cqes = max_cqe.min(nr_cqe.max(MAX_SHARED_CQ_SZ));
    let size = c_int::try_from(nr_cqes).map_err(|_| EINVAL)?;
    let mut made = KVec::new();
    // SAFETY: As above.
    for i in 0..unsafe { vectors(ib) } {
        // SAFETY: A registered device; the pool's CQs complete no work request of their own.
        let cq = unsafe {
            __ib_alloc_cq(
                ib,
                core::ptr::null_mut(),
                size,
                i as c_int,
                poll_ctx,
                c"ib_core".as_char_ptr(),
            )
        };
        let failed = kernel::error::from_err_ptr(cq).err();
        let pushed = match failed {
            None => made.push(cq, GFP_KERNEL).map_err(|_| {
                // SAFETY: The CQ just made, not shared yet.
                unsafe { ib_free_cq(cq) };
                ENOMEM
            }),
            Some(e) => Err(e),
        };
        if let Err(e) = pushed {
            for &cq in made.iter() {
                // SAFETY: CQs made above, not in the pool.
                unsafe { ib_free_cq(cq) };
            }
            return Err(e);
        }
    }
    // SAFETY: As above.
    let _g = unsafe { CSpinGuard::lock(&raw mut (*ib).cq_pools_lock) };
    for &cq in made.iter() {
        // SAFETY: The pool of a live structure, under its lock; the CQs are new.
        unsafe {
            (*cq).set_shared(1);
            list_add_tail(
                &raw mut (*cq).pool_entry,
                &raw mut (*ib).cq_pools[poll_ctx as usize],
            );
        }
    }
    Ok(())
}

/// Finds a CQ of the pool on `vector` with room for `nr_cqe` more entries and counts them on
/// it.
///
/// # Safety
///
/// `ib` is a live device structure whose pool is set up.
unsafe fn claim(
    ib: *mut bindings::ib_device,
    nr_cqe: u32,
    vector: u32,
    poll_ctx: bindings::ib_poll_context,
) -> Option<*mut bindings::ib_cq> {
    // SAFETY: The caller's contract.
    let _g = unsafe { CSpinGuard::lock(&raw mut (*ib).cq_pools_lock) };
    // SAFETY: The pool of a live structure, under its lock.
    let head = unsafe { &raw mut (*ib).cq_pools[poll_ctx as usize] };
    // SAFETY: As above.
    let mut at = unsafe { (*head).next };
    while at != head {
        let cq = cq_of_entry(at);
        // SAFETY: A CQ of the pool, live while listed; its count is under the lock.
        unsafe {
            let room = u32::try_from((*cq).cqe).unwrap_or(0);
            if (*cq).comp_vector == vector && (*cq).cqe_used.saturating_add(nr_cqe) <= room {
                (*cq).cqe_used += nr_cqe;
                return Some(cq);
            }
            at = (*at).next;
        }
    }
    None
}

/// C's `ib_cq_pool_get`: the least used CQ of `dev`'s pool for `poll_ctx` on the vector
/// `comp_vector_hint` names (modulo the pool's vectors; a negative hint takes the next vector
/// in turn) with room for `nr_cqe` entries, which are counted on it; new CQs are made when none
/// has room. `ERR_PTR(-EINVAL)` for `IB_POLL_DIRECT` or an unknown context, the CQ's errno when
/// one cannot be made.
///
/// # Safety
///
/// C's contract: `dev` was handed to the caller by a client's `add` and not yet removed; the
/// CQ is given back with [`ib_cq_pool_put`] with the same `nr_cqe`.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_cq_pool_get(
    dev: *mut bindings::ib_device,
    nr_cqe: u32,
    comp_vector_hint: c_int,
    poll_ctx: bindings::ib_poll_context,
) -> *mut bindings::ib_cq {
    if poll_ctx as usize >= POOLS || poll_ctx == bindings::ib_poll_context_IB_POLL_DIRECT {
        return err_ptr(EINVAL);
    }
    // SAFETY: `dev` is live (contract).
    let n = unsafe { vectors(dev) };
    let hint = match u32::try_from(comp_vector_hint) {
        Ok(h) => h,
        Err(_) => {
            let h = (DEFAULT_COMP_VECTOR.load(Ordering::Relaxed) + 1) % n;
            DEFAULT_COMP_VECTOR.store(h, Ordering::Relaxed);
            h
        }
    };
    let vector = hint % n;
    loop {
        // SAFETY: `dev` is live and its pool set up when it was made.
        if let Some(cq) = unsafe { claim(dev, nr_cqe, vector, poll_ctx) } {
            return cq;
        }
        // SAFETY: As above; the device is registered (contract).
        if let Err(e) = unsafe { grow(dev, nr_cqe, poll_ctx) } {
            return err_ptr(e);
        }
    }
}

/// C's `ib_cq_pool_put`: gives back the `nr_cqe` entries taken on `cq` by [`ib_cq_pool_get`]
/// (more than were taken is refused with a warning, as C).
///
/// # Safety
///
/// C's contract: `cq` came from [`ib_cq_pool_get`] and its device is live.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_cq_pool_put(cq: *mut bindings::ib_cq, nr_cqe: u32) {
    // SAFETY: `cq` and its device are live (contract).
    let ib = unsafe { (*cq).device };
    // SAFETY: As above.
    let _g = unsafe { CSpinGuard::lock(&raw mut (*ib).cq_pools_lock) };
    // SAFETY: The count is under the pool's lock.
    unsafe {
        if nr_cqe > (*cq).cqe_used {
            pr_warn!("ib_cq_pool_put of more entries than were taken\n");
            return;
        }
        (*cq).cqe_used -= nr_cqe;
    }
}

/// Frees the pool's CQs of the device structure `ib` (C's `ib_cq_pool_cleanup`), once every
/// client is removed from the device; a CQ still counted as used is warned about.
///
/// # Safety
///
/// `ib` is a live device structure whose pool is set up, its clients all removed.
pub(crate) unsafe fn cleanup(ib: *mut bindings::ib_device) {
    for ctx in 0..POOLS {
        loop {
            let cq = {
                // SAFETY: The caller's contract.
                let _g = unsafe { CSpinGuard::lock(&raw mut (*ib).cq_pools_lock) };
                // SAFETY: The pool of a live structure, under its lock.
                match unsafe { list_first(&raw mut (*ib).cq_pools[ctx]) } {
                    Some(entry) => {
                        // SAFETY: As above.
                        unsafe { list_del(entry) };
                        cq_of_entry(entry)
                    }
                    None => break,
                }
            };
            // SAFETY: A pool CQ, off the list: no `ib_cq_pool_get` finds it any more.
            unsafe {
                if (*cq).cqe_used != 0 {
                    pr_warn!("a shared CQ is freed with entries still used\n");
                }
                (*cq).set_shared(0);
                ib_free_cq(cq);
            }
        }
    }
}
