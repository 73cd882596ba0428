// SPDX-License-Identifier: GPL-2.0

//! Memory regions for C modules: the ops table's `get_dma_mr` (C code calls it through
//! `pd->device->ops`, then completes the MR and lists it itself, as C's ib_core does around it),
//! fast-registration MRs (`ib_alloc_mr`, `ib_map_mr_sg`; the registration itself is a
//! `IB_WR_REG_MR` work request, `c_abi/wr.rs`), the integrity calls a device without
//! signature MRs refuses (`ib_map_mr_sg_pi`, `ib_check_mr_status`) and `ib_dereg_mr_user`
//! (C's `ib_dereg_mr`), with C's names and signatures (C's `drivers/infiniband/core/verbs.c`).
//! The `struct ib_mr` C code reads (`lkey`, `rkey`, `iova`, `length`, `page_size`, `pd`,
//! `device`, `need_inval`) stands for an [`Mr`] of the core; the keys a consumer updates in
//! it (`ib_update_fast_reg_key`) reach the driver in the registration's `key`.

use crate::{
    c_abi::{
        object::{atomic, ptr_or_err, Faced},
        pd::pd_of,
        restrack::{track, untrack},
    },
    verbs::{types::AccessFlags, Mr},
};
use core::{ptr::NonNull, sync::atomic::Ordering};
use kernel::{bindings, ffi::c_int, prelude::*, sync::Arc};

/// The core's part of an MR made for a C module.
pub(crate) struct CMr {
    /// The MR, kept while C holds the structure.
    mr: Arc<Mr>,
}

/// An MR as C holds it.
pub(crate) type MrObject = Faced<CMr, bindings::ib_mr>;

/// The core's MR of the C structure `mr`.
///
/// # Safety
///
/// `mr` was made here (`get_dma_mr`, [`ib_alloc_mr`]) and is not deregistered during `'a`.
pub(crate) unsafe fn mr_of<'a>(mr: *mut bindings::ib_mr) -> &'a Mr {
    // SAFETY: The caller's contract.
    unsafe { &MrObject::core(mr).mr }
}

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
    let c = MrObject::alloc(CMr { mr })?;
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

/// Makes the fast-registration MR and its C structure, completed and listed as C's
/// `ib_alloc_mr` does.
///
/// # Safety
///
/// As for [`ib_alloc_mr`].
unsafe fn alloc_mr(
    pd: *mut bindings::ib_pd,
    mr_type: bindings::ib_mr_type,
    max_num_sg: u32,
) -> Result<NonNull<bindings::ib_mr>> {
    match mr_type {
        bindings::ib_mr_type_IB_MR_TYPE_MEM_REG => {}
        // Signature MRs are made by `ib_alloc_mr_integrity` (C warns and refuses them here);
        // SG_GAPS MRs need a driver that has them, which no device here has.
        bindings::ib_mr_type_IB_MR_TYPE_INTEGRITY => return Err(EINVAL),
        _ => return Err(EOPNOTSUPP),
    }
    // SAFETY: `pd` is a live PD of ours (contract).
    let mr = Mr::alloc_fast_reg(unsafe { pd_of(pd) }, max_num_sg)?;
    let (lkey, rkey) = (mr.lkey(), mr.rkey());
    let c = MrObject::alloc(CMr { mr })?;
    // SAFETY: `c` is the zeroed structure just allocated, not yet handed out; `pd` is live.
    unsafe {
        let m = &mut *c.as_ptr();
        m.lkey = lkey;
        m.rkey = rkey;
        m.device = (*pd).device;
        m.pd = pd;
        m.type_ = mr_type;
        m.need_inval = false;
        atomic(&raw mut (*pd).usecnt).fetch_add(1, Ordering::Relaxed);
        track(
            &raw mut m.res,
            bindings::rdma_restrack_type_RDMA_RESTRACK_MR,
            (*pd).res.kern_name,
        );
    }
    Ok(c)
}

/// C's `ib_alloc_mr`: a fast-registration MR of `pd` for up to `max_num_sg` pages, listed in
/// the device's resources under the PD's creator; `ERR_PTR(-EOPNOTSUPP)` when the device has
/// none (or for an MR type other than `IB_MR_TYPE_MEM_REG`), `-EINVAL` for an integrity MR,
/// the driver's errno otherwise.
///
/// # Safety
///
/// C's contract: `pd` was made by `__ib_alloc_pd` and is live.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_alloc_mr(
    pd: *mut bindings::ib_pd,
    mr_type: bindings::ib_mr_type,
    max_num_sg: u32,
) -> *mut bindings::ib_mr {
    // SAFETY: The caller's contract.
    ptr_or_err(unsafe { alloc_mr(pd, mr_type, max_num_sg) })
}

/// C's `ib_map_mr_sg`: maps the largest prefix of the DMA-mapped `sg` (`sg_nents` entries, from
/// byte `*sg_offset` of the first when given) into the MR's page list in pages of `page_size`
/// bytes, and sets the MR's `iova`, `length` and `page_size`; the number of entries mapped, or
/// `-EOPNOTSUPP` when the MR's driver has no fast registration.
///
/// # Safety
///
/// C's contract: `mr` came from [`ib_alloc_mr`] and is live; `sg` is a scatter list mapped for
/// the MR's device with at least `sg_nents` entries; `sg_offset` is null or writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_map_mr_sg(
    mr: *mut bindings::ib_mr,
    sg: *mut bindings::scatterlist,
    sg_nents: c_int,
    sg_offset: *mut u32,
    page_size: u32,
) -> c_int {
    let Ok(nents) = u32::try_from(sg_nents) else {
        return EINVAL.to_errno();
    };
    // SAFETY: `mr` is a live MR of ours and `sg`, `sg_offset` are as the contract says.
    match unsafe { mr_of(mr).map_sg(sg, nents, sg_offset, page_size) } {
        Ok(m) => {
            // SAFETY: `mr` is live (contract); C code reads these after the call.
            unsafe {
                (*mr).page_size = page_size;
                (*mr).iova = m.iova;
                (*mr).length = m.length;
            }
            m.count as c_int
        }
        Err(e) => e.to_errno(),
    }
}

/// C's `ib_map_mr_sg_pi`: maps data and protection scatter lists into a signature MR, which no
/// device of this core makes (`ib_alloc_mr_integrity` is not offered): `-EOPNOTSUPP`, as C
/// returns for a device without `map_mr_sg_pi`.
///
/// # Safety
///
/// C's contract: `mr` is a live MR; nothing is read.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_map_mr_sg_pi(
    _mr: *mut bindings::ib_mr,
    _data_sg: *mut bindings::scatterlist,
    _data_sg_nents: c_int,
    _data_sg_offset: *mut u32,
    _meta_sg: *mut bindings::scatterlist,
    _meta_sg_nents: c_int,
    _meta_sg_offset: *mut u32,
    _page_size: u32,
) -> c_int {
    EOPNOTSUPP.to_errno()
}

/// C's `ib_check_mr_status`: a signature MR's integrity errors, which no device of this core
/// reports (no driver here has `check_mr_status`): `-EOPNOTSUPP`, as C returns then.
///
/// # Safety
///
/// C's contract: `mr` is a live MR; nothing is read or written.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_check_mr_status(
    _mr: *mut bindings::ib_mr,
    _check_mask: u32,
    _mr_status: *mut bindings::ib_mr_status,
) -> c_int {
    EOPNOTSUPP.to_errno()
}
