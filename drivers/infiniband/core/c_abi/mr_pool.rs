// SPDX-License-Identifier: GPL-2.0

//! Pools of fast-registration MRs on a QP (C's `drivers/infiniband/core/mr_pool.c`):
//! `ib_mr_pool_init`, `ib_mr_pool_get`, `ib_mr_pool_put`, `ib_mr_pool_destroy` with C's names
//! and signatures. The pool is C's: a list of the QP's (`qp->rdma_mrs`, `qp->sig_mrs`) through
//! each MR's `qp_entry`, under `qp->mr_lock`, with `qp->mrs_used` counting the MRs out; the
//! MRs are made by [`ib_alloc_mr`] and freed by `ib_dereg_mr_user`.

use crate::c_abi::{
    mr::{ib_alloc_mr, ib_dereg_mr_user},
    object::{list_add, list_add_tail, list_del, list_first, CSpinGuard},
};
use kernel::{bindings, ffi::c_int};

/// The MR whose `qp_entry` is `entry`.
fn mr_of_entry(entry: *mut bindings::list_head) -> *mut bindings::ib_mr {
    // SAFETY: Only the address is computed: the entries of an MR pool are MRs' `qp_entry`.
    unsafe { kernel::container_of!(entry, bindings::ib_mr, __bindgen_anon_1.qp_entry) }
}

/// C's `ib_mr_pool_get`: takes an MR from the pool `list` of `qp`, counted in `qp->mrs_used`;
/// null when the pool is empty.
///
/// # Safety
///
/// C's contract: `qp` is a live QP made here, `list` one of its pools.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_mr_pool_get(
    qp: *mut bindings::ib_qp,
    list: *mut bindings::list_head,
) -> *mut bindings::ib_mr {
    // SAFETY: The QP's lock, initialised at its creation (`c_abi/qp.rs`).
    let _g = unsafe { CSpinGuard::lock(&raw mut (*qp).mr_lock) };
    // SAFETY: The pool is the QP's, under its lock.
    match unsafe { list_first(list) } {
        Some(entry) => {
            // SAFETY: As above.
            unsafe {
                list_del(entry);
                (*qp).mrs_used += 1;
            }
            mr_of_entry(entry)
        }
        None => core::ptr::null_mut(),
    }
}

/// C's `ib_mr_pool_put`: gives `mr` back to the pool `list` of `qp`.
///
/// # Safety
///
/// C's contract: `mr` came from [`ib_mr_pool_get`] on `qp` and `list`.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_mr_pool_put(
    qp: *mut bindings::ib_qp,
    list: *mut bindings::list_head,
    mr: *mut bindings::ib_mr,
) {
    // SAFETY: As for `ib_mr_pool_get`.
    let _g = unsafe { CSpinGuard::lock(&raw mut (*qp).mr_lock) };
    // SAFETY: The MR is out of the pool (contract); the pool is the QP's, under its lock.
    unsafe {
        list_add(&raw mut (*mr).__bindgen_anon_1.qp_entry, list);
        (*qp).mrs_used -= 1;
    }
}

/// C's `ib_mr_pool_init`: `nr` fast-registration MRs of `type_` for up to `max_num_sg` pages
/// each, made in `qp`'s PD and put in the pool `list`; 0, or the first failure's errno with
/// the pool emptied. Integrity MRs (`max_num_meta_sg`) are not made here (`-EINVAL`, as
/// [`ib_alloc_mr`] answers for them).
///
/// # Safety
///
/// C's contract: `qp` is a live QP made here, `list` one of its pools.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_mr_pool_init(
    qp: *mut bindings::ib_qp,
    list: *mut bindings::list_head,
    nr: c_int,
    type_: bindings::ib_mr_type,
    max_num_sg: u32,
    _max_num_meta_sg: u32,
) -> c_int {
    for _ in 0..nr {
        // SAFETY: The QP's PD is live while the QP is (contract).
        let mr = unsafe { ib_alloc_mr((*qp).pd, type_, max_num_sg) };
        if let Err(e) = kernel::error::from_err_ptr(mr) {
            // SAFETY: As above.
            unsafe { ib_mr_pool_destroy(qp, list) };
            return e.to_errno();
        }
        // SAFETY: As for `ib_mr_pool_get`; the MR is new and on no list.
        let _g = unsafe { CSpinGuard::lock(&raw mut (*qp).mr_lock) };
        // SAFETY: As above.
        unsafe { list_add_tail(&raw mut (*mr).__bindgen_anon_1.qp_entry, list) };
    }
    0
}

/// C's `ib_mr_pool_destroy`: deregisters every MR in the pool `list` of `qp` (those taken out
/// are the caller's to give back first).
///
/// # Safety
///
/// C's contract: `qp` is a live QP made here, `list` one of its pools.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_mr_pool_destroy(
    qp: *mut bindings::ib_qp,
    list: *mut bindings::list_head,
) {
    loop {
        let mr = {
            // SAFETY: As for `ib_mr_pool_get`.
            let _g = unsafe { CSpinGuard::lock(&raw mut (*qp).mr_lock) };
            // SAFETY: The pool is the QP's, under its lock.
            match unsafe { list_first(list) } {
                Some(entry) => {
                    // SAFETY: As above.
                    unsafe { list_del(entry) };
                    mr_of_entry(entry)
                }
                None => return,
            }
        };
        // SAFETY: An MR of the pool, made by `ib_alloc_mr`, now off the list; deregistered
        // outside the lock, as C does.
        unsafe { ib_dereg_mr_user(mr, core::ptr::null_mut()) };
    }
}
