// SPDX-License-Identifier: GPL-2.0

//! A C driver's user context ([`DriverUContext`]): the `struct ib_ucontext` of the driver's size
//! a process gets when it opens the device's uverbs file (C's `ib_alloc_ucontext` and the
//! driver's `alloc_ucontext`, `dealloc_ucontext`), and the core's `udata` as C's `struct
//! ib_udata` for the driver's ops ([`c_udata`]).
//!
//! Not yet: the objects a context makes (CQs, QPs, SRQs, MRs through user memory) and `mmap`.

use crate::{
    c_abi::driver::object::DriverObject,
    user::spec::{DriverMethod, DriverUObject, MethodAttrs},
    user::udata::Udata,
    verbs::ops::{UContextObject, UserCqObject},
    verbs::types::{CqNotifier, UserCqInit},
};
use core::{any::Any, ptr::NonNull};
use kernel::{bindings, mm::virt::VmaNew, prelude::*, sync::Arc, user_mmap::UserMaps};

/// C's `struct ib_udata` of the core's `udata`.
pub(crate) fn c_udata(udata: &Udata) -> bindings::ib_udata {
    let (inbuf, inlen, outbuf, outlen) = udata.parts();
    bindings::ib_udata {
        inbuf: inbuf as *const core::ffi::c_void,
        outbuf: outbuf as *mut core::ffi::c_void,
        inlen,
        outlen,
    }
}

/// A C driver's user context.
///
/// # Invariants
///
/// `uctx` was made by the driver's `alloc_ucontext` on the structure `ib`, which outlives it.
pub(crate) struct DriverUContext {
    ib: NonNull<bindings::ib_device>,
    uctx: DriverObject<bindings::ib_ucontext>,
}

// SAFETY: C drivers' objects are used from any thread; the structure pointer is only read.
unsafe impl Send for DriverUContext {}
// SAFETY: As above.
unsafe impl Sync for DriverUContext {}

impl DriverUContext {
    /// A user context of the C driver's structure `ib`, the driver answering `udata`.
    ///
    /// # Safety
    ///
    /// `ib` is a registered C driver's structure that outlives the context.
    pub(crate) unsafe fn alloc(ib: NonNull<bindings::ib_device>, udata: &Udata) -> Result<Self> {
        // SAFETY: The caller's contract.
        let ops = unsafe { &(*ib.as_ptr()).ops };
        let alloc = ops.alloc_ucontext.ok_or(EOPNOTSUPP)?;
        let uctx = DriverObject::<bindings::ib_ucontext>::alloc(ops.size_ib_ucontext, GFP_KERNEL)?;
        // SAFETY: The zeroed structure just allocated, ours until the driver gets it; C's
        // `ib_alloc_ucontext` sets these.
        unsafe {
            let u = &mut *uctx.raw();
            u.device = ib.as_ptr();
            bindings::xa_init_flags(&raw mut u.mmap_xa, bindings::XA_FLAGS_ALLOC);
        }
        let mut c = c_udata(udata);
        // SAFETY: The driver's op with its own structure's new context and the command's
        // buffers.
        kernel::error::to_result(unsafe { alloc(uctx.raw(), &mut c) })?;
        // INVARIANT: Made above.
        Ok(Self { ib, uctx })
    }
}

impl Drop for DriverUContext {
    fn drop(&mut self) {
        // SAFETY: The structure outlives the context (type invariant).
        if let Some(dealloc) = unsafe { (*self.ib.as_ptr()).ops.dealloc_ucontext } {
            // SAFETY: Made by the driver, freed once, after every object of it.
            unsafe { dealloc(self.uctx.raw()) };
        }
        // SAFETY: The xarray of the context, empty (no entry is ever inserted yet).
        unsafe { bindings::xa_destroy(&raw mut (*self.uctx.raw()).mmap_xa) };
    }
}

impl UContextObject for DriverUContext {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn driver_method(
        &self,
        _m: &DriverMethod,
        _attrs: &dyn MethodAttrs,
    ) -> Result<Option<DriverUObject>> {
        Err(EOPNOTSUPP)
    }

    fn query(&self, _attrs: &dyn MethodAttrs) -> Result {
        Err(EOPNOTSUPP)
    }

    fn mmap(&self, _vma: &VmaNew, _maps: &Arc<UserMaps>) -> Result {
        Err(ENODEV)
    }

    fn create_cq(
        &self,
        _init: &UserCqInit,
        _udata: &Udata,
        _notifier: &CqNotifier,
    ) -> Result<(KBox<dyn UserCqObject>, u32)> {
        Err(EOPNOTSUPP)
    }
}
