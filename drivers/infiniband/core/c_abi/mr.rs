// SPDX-License-Identifier: GPL-2.0

//! Memory regions for C modules: the ops table's `get_dma_mr` (C code calls it through
//! `pd->device->ops`, then completes the MR and lists it itself, as C's ib_core does around it)
//! and `ib_dereg_mr_user` (C's `ib_dereg_mr`), with C's names and signatures (C's
//! `drivers/infiniband/core/verbs.c`). The `struct ib_mr` C code reads (`lkey`, `rkey`,
//! `length`, `pd`, `device`) stands for an [`Mr`] of the core.

use crate::{
    c_abi::{
        object::{atomic, ptr_or_err, Faced},
        pd::pd_of,
        restrack::untrack,
    },
    verbs::{types::AccessFlags, Mr},
};
use core::{ptr::NonNull, sync::atomic::Ordering};
use kernel::{bindings, ffi::c_int, prelude::*, sync::Arc};

/// The core's part of an MR made for a C module.
pub(crate) struct CMr {
    /// The MR, kept while C holds the structure.
    _mr: Arc<Mr>,
}

/// An MR as C holds it.
pub(crate) type MrObject = Faced<CMr, bindings::ib_mr>;

/// Makes the DMA MR and its C structure.
///
/// # Safety
///
/// As for [`get_dma_mr`].
unsafe fn dma_mr(pd: *mut bindings::ib_pd, access: c_int) -> Result<NonNull<bindings::ib_mr>> {
    // SAFETY: `pd` is a live PD of ours (contract).
    let mr = Mr::get_dma_mr(
        unsafe { pd_of(pd) },
        AccessFlags::from_ib_bits(access as u32),
    )?;
    let (lkey, rkey, length) = (mr.lkey(), mr.rkey(), mr.length());
    let c = MrObject::alloc(CMr { _mr: mr })?;
    // SAFETY: `c` is the zeroed structure just allocated, not yet handed out.
    let m = unsafe { &mut *c.as_ptr() };
    m.lkey = lkey;
    m.rkey = rkey;
    m.length = length;
    Ok(c)
}

/// The ops table's `get_dma_mr`: an MR of all memory with the `access` rights in `pd`, as a C
/// driver returns it (the caller sets `device`, `pd`, `type`, counts the PD's use and lists
/// it, as C's ib_core does); `ERR_PTR` of the driver's errno.
///
/// # Safety
///
/// C's contract: `pd` was made by `__ib_alloc_pd` and is live.
pub(crate) unsafe extern "C" fn get_dma_mr(
    pd: *mut bindings::ib_pd,
    access: c_int,
) -> *mut bindings::ib_mr {
    // SAFETY: The caller's contract.
    ptr_or_err(unsafe { dma_mr(pd, access) })
}

/// C's `ib_dereg_mr_user` (C's `ib_dereg_mr` passes no `udata`): unlists and deregisters the
/// MR and frees its PD of it; 0, `-EINVAL` for user data.
///
/// # Safety
///
/// `mr` came from [`get_dma_mr`] with `pd` set (C's contract for kernel MRs); it is not used
/// again.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_dereg_mr_user(
    mr: *mut bindings::ib_mr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    if !udata.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: `mr` is live and its PD too (contract); freed once.
    unsafe {
        untrack(&raw mut (*mr).res);
        let pd = (*mr).pd;
        if !pd.is_null() {
            atomic(&raw mut (*pd).usecnt).fetch_sub(1, Ordering::Relaxed);
        }
        MrObject::free(mr);
    }
    0
}
