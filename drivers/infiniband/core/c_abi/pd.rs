// SPDX-License-Identifier: GPL-2.0

//! Protection domains for C modules: `__ib_alloc_pd` (what C's `ib_alloc_pd` macro calls with
//! the caller's `KBUILD_MODNAME`) and `ib_dealloc_pd_user` (C's `ib_dealloc_pd`), with C's
//! names and signatures (C's `drivers/infiniband/core/verbs.c`). The `struct ib_pd` C code
//! reads (`device`, `local_dma_lkey`, `unsafe_global_rkey`, `flags`, `usecnt`) stands for a
//! [`Pd`] of the core, which does the work: the driver's PD, the internal DMA MR C makes for
//! `IB_PD_UNSAFE_GLOBAL_RKEY` or a device without a local DMA lkey, resource tracking under
//! the caller's name.

use crate::{
    c_abi::{
        face::CFace,
        object::{ptr_or_err, Faced},
        restrack::{track, untrack},
    },
    restrack::KernName,
    verbs::Pd,
};
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicU32, Ordering},
};
use kernel::{
    bindings,
    ffi::{c_char, c_int, c_uint},
    prelude::*,
    sync::Arc,
};

/// The core's part of a PD made for a C module.
pub(crate) struct CPd {
    /// The PD.
    pub(crate) pd: Arc<Pd>,
    /// Who holds the C structure: its maker (until `ib_dealloc_pd`, or for the view of a MAD
    /// port's PD, until its agent goes) and each AH made in it (until `rdma_destroy_ah`, which
    /// reads it); the last [`release`] frees it.
    holds: AtomicU32,
}

impl CPd {
    /// The core's part of a PD C code gets for `pd`, held by its maker.
    pub(crate) fn new(pd: Arc<Pd>) -> Self {
        Self {
            pd,
            holds: AtomicU32::new(1),
        }
    }
}

/// Holds the PD `pd` (an AH made in it).
///
/// # Safety
///
/// `pd` is a live PD object of this core's.
pub(crate) unsafe fn hold(pd: *mut bindings::ib_pd) {
    // SAFETY: The caller's contract.
    unsafe { PdObject::core(pd) }
        .holds
        .fetch_add(1, Ordering::Relaxed);
}

/// Drops a hold of the PD `pd`; the last one frees it.
///
/// # Safety
///
/// `pd` is a live PD object of this core's held by the caller, whose hold is not used again.
pub(crate) unsafe fn release(pd: *mut bindings::ib_pd) {
    // SAFETY: The caller's contract.
    let last = unsafe { PdObject::core(pd) }
        .holds
        .fetch_sub(1, Ordering::AcqRel)
        == 1;
    if last {
        // SAFETY: The last hold went: no one reads the structure any more; freed once.
        unsafe { PdObject::free(pd) };
    }
}

/// A PD as C holds it.
pub(crate) type PdObject = Faced<CPd, bindings::ib_pd>;

/// The core's PD behind `pd`.
///
/// # Safety
///
/// `pd` was returned by [`__ib_alloc_pd`] and not deallocated.
pub(crate) unsafe fn pd_of<'a>(pd: *mut bindings::ib_pd) -> &'a Arc<Pd> {
    // SAFETY: The caller's contract.
    unsafe { &PdObject::core(pd).pd }
}

/// Makes the PD and its C structure.
///
/// # Safety
///
/// As for [`__ib_alloc_pd`].
unsafe fn alloc(
    device: *mut bindings::ib_device,
    flags: c_uint,
    caller: *const c_char,
) -> Result<NonNull<bindings::ib_pd>> {
    // SAFETY: `device` is a face handed to the caller (contract).
    let dev = unsafe { CFace::owner_arc(device) }.ok_or(ENODEV)?;
    // SAFETY: `caller` is the module's name (contract).
    let name = unsafe { KernName::from_c(caller) };
    let pd = if flags & bindings::ib_pd_flags_IB_PD_UNSAFE_GLOBAL_RKEY != 0 {
        Pd::alloc_unsafe_global_rkey(&dev, name)?
    } else {
        Pd::alloc(&dev, name)?
    };
    let (lkey, rkey) = (pd.local_dma_lkey(), pd.unsafe_global_rkey().unwrap_or(0));
    let c = PdObject::alloc(CPd::new(pd))?;
    // SAFETY: `c` is the zeroed structure just allocated, not yet handed out.
    let p = unsafe { &mut *c.as_ptr() };
    p.device = device;
    p.flags = flags;
    p.local_dma_lkey = lkey;
    p.unsafe_global_rkey = rkey;
    // SAFETY: The entry is the new PD's; its device is live (contract).
    unsafe {
        track(
            &raw mut p.res,
            bindings::rdma_restrack_type_RDMA_RESTRACK_PD,
            caller,
        )
    };
    Ok(c)
}

/// C's `__ib_alloc_pd`: a PD on `device` for the module `caller` names; `ERR_PTR(-ENODEV)` for
/// a device no longer registered, `-EOPNOTSUPP` for one without kernel verbs, the driver's
/// errno otherwise. `flags` may hold `IB_PD_UNSAFE_GLOBAL_RKEY` (then `unsafe_global_rkey` is
/// the rkey of a DMA MR any peer may use, and the core warns as C does).
///
/// # Safety
///
/// `device` was handed to the caller by a client's `add` and not yet removed; `caller` is null
/// or a NUL-terminated string that outlives the PD (the module's name).
#[no_mangle]
pub(crate) unsafe extern "C" fn __ib_alloc_pd(
    device: *mut bindings::ib_device,
    flags: c_uint,
    caller: *const c_char,
) -> *mut bindings::ib_pd {
    // SAFETY: The caller's contract.
    ptr_or_err(unsafe { alloc(device, flags, caller) })
}

/// C's `ib_dealloc_pd_user` (C's `ib_dealloc_pd` passes no `udata`): frees the PD; 0. A PD
/// still used by the caller's QPs, AHs or MRs is a bug of the caller in C; here those objects
/// keep the core's PD until they go, and the C structure goes with the last AH made in it.
/// `-EINVAL` for user data (only kernel PDs are made here).
///
/// # Safety
///
/// `pd` was returned by [`__ib_alloc_pd`] and is not used after this call.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_dealloc_pd_user(
    pd: *mut bindings::ib_pd,
    udata: *mut bindings::ib_udata,
) -> c_int {
    if !udata.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: `pd` is a live PD of ours; the maker's hold goes once (contract).
    unsafe {
        untrack(&raw mut (*pd).res);
        release(pd);
    }
    0
}
