// SPDX-License-Identifier: GPL-2.0

//! A C driver's user context ([`DriverUContext`]): the `struct ib_ucontext` of the driver's size
//! a process gets when it opens the device's uverbs file (C's `ib_alloc_ucontext` and the
//! driver's `alloc_ucontext`, `dealloc_ucontext`), its `mmap` (the driver's own, as C's
//! `ib_uverbs_mmap` calls it, with the context's mmap entries, `user_mmap.rs`) and the CQs made
//! in it.
//!
//! Not yet: driver methods.

use crate::{
    c_abi::driver::{bundle::DriverUdata, cq::DriverCq, object::DriverObject},
    user::spec::{DriverMethod, DriverUObject, MethodAttrs},
    user::udata::Udata,
    verbs::ops::{CqObject, UContextObject},
    verbs::types::{CqInit, CqNotifier},
};
use core::{any::Any, ptr::NonNull};
use kernel::{bindings, mm::virt::VmaNew, prelude::*, sync::Arc, user_mmap::UserMaps};

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
        // C's `ib_alloc_ucontext` names the new context in the command's bundle.
        let mut c = DriverUdata::new(udata, uctx.raw());
        // SAFETY: The driver's op with its own structure's new context and the command's
        // buffers.
        kernel::error::to_result(unsafe { alloc(uctx.raw(), c.udata()) })?;
        // INVARIANT: Made above.
        Ok(Self { ib, uctx })
    }

    /// The C driver's context behind `ctx` (the core passes only contexts of the device the
    /// call is for: `EINVAL` if it broke that rule).
    pub(crate) fn of(ctx: &dyn UContextObject) -> Result<&Self> {
        ctx.as_any().downcast_ref::<Self>().ok_or(EINVAL)
    }

    /// The C structure.
    pub(crate) fn raw(&self) -> *mut bindings::ib_ucontext {
        self.uctx.raw()
    }
}

impl Drop for DriverUContext {
    fn drop(&mut self) {
        // SAFETY: The structure outlives the context (type invariant).
        if let Some(dealloc) = unsafe { (*self.ib.as_ptr()).ops.dealloc_ucontext } {
            // SAFETY: Made by the driver, freed once, after every object of it.
            unsafe { dealloc(self.uctx.raw()) };
        }
        // SAFETY: The xarray of the context, freed once, after the driver (which removes its
        // mmap entries with the objects they belong to).
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

    fn mmap(&self, vma: &VmaNew, _maps: &Arc<UserMaps>) -> Result {
        // SAFETY: The structure outlives the context (type invariant).
        let mmap = unsafe { (*self.ib.as_ptr()).ops.mmap }.ok_or(ENODEV)?;
        // SAFETY: The driver's op on its context with the area being set up (C's
        // `ib_uverbs_mmap`). What it maps (rxe: its queues' vmalloc memory) it keeps alive for
        // the mapping's life itself, so the core has nothing to take away on disassociation.
        kernel::error::to_result(unsafe { mmap(self.uctx.raw(), vma.as_ptr()) })
    }

    fn create_cq(
        &self,
        init: &CqInit,
        udata: &Udata,
        notifier: &CqNotifier,
    ) -> Result<KBox<dyn CqObject>> {
        // SAFETY: The structure outlives the context and its CQs; the context is live and
        // outlives its CQs (the core destroys a context's objects before it).
        let cq = unsafe { DriverCq::create_user(self.ib, self.uctx.raw(), init, udata, notifier)? };
        Ok(KBox::new(cq, GFP_KERNEL)?)
    }
}
