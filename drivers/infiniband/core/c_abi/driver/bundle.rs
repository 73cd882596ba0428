// SPDX-License-Identifier: GPL-2.0

//! The user data a C driver's op receives ([`DriverUdata`]): C's `struct ib_udata` inside the
//! header of a `struct uverbs_attr_bundle` whose `context` is the driver's user context.
//!
//! C drivers find their context from the `udata` they are given (`rdma_udata_to_drv_context`,
//! rxe's `rxe_create_mmap_info`: `container_of` to the bundle, then its `context`), and
//! `create_cq` gets the bundle itself. So every op the core calls for a user object gets its
//! `udata` in such a header. No attribute is present in it: a driver asking for one
//! (`uverbs_attr_get`) is answered `-ENOENT`, without reading past the header.

use crate::user::udata::Udata;
use kernel::bindings;

/// A bundle header carrying the core's `udata` to a C driver.
pub(crate) struct DriverUdata {
    hdr: bindings::uverbs_attr_bundle__bindgen_ty_1_uverbs_attr_bundle_hdr,
}

impl DriverUdata {
    /// The core's `udata`, for an op in the user context `context`.
    pub(crate) fn new(udata: &Udata, context: *mut bindings::ib_ucontext) -> Self {
        let (inbuf, inlen, outbuf, outlen) = udata.parts();
        let mut this = Self::empty(context);
        this.hdr.driver_udata = bindings::ib_udata {
            inbuf: inbuf as *const core::ffi::c_void,
            outbuf: outbuf as *mut core::ffi::c_void,
            inlen,
            outlen,
        };
        this
    }

    /// No request and no room for a response, in the user context `context`: what a
    /// destroying op of a user object gets (C passes its destroy command's, which has no driver
    /// data).
    pub(crate) fn empty(context: *mut bindings::ib_ucontext) -> Self {
        // SAFETY: A plain C structure: all zeroes is valid (no buffers, no attribute present).
        let mut hdr: bindings::uverbs_attr_bundle__bindgen_ty_1_uverbs_attr_bundle_hdr =
            unsafe { core::mem::zeroed() };
        hdr.context = context;
        Self { hdr }
    }

    /// The `struct ib_udata` for the driver's op; valid while `self` is neither moved nor
    /// dropped.
    pub(crate) fn udata(&mut self) -> *mut bindings::ib_udata {
        &raw mut self.hdr.driver_udata
    }

    /// The bundle for an op that takes one (`create_cq`); valid as [`Self::udata`].
    pub(crate) fn bundle(&mut self) -> *mut bindings::uverbs_attr_bundle {
        // The header is the bundle's start (C's `struct_group_tagged`); no attribute follows,
        // and none is marked present.
        (&raw mut self.hdr).cast()
    }
}

/// The user data of an op on an object of the user context `uctx`, or none (a null pointer)
/// for a kernel object.
pub(crate) fn for_destroy(uctx: *mut bindings::ib_ucontext) -> Option<DriverUdata> {
    (!uctx.is_null()).then(|| DriverUdata::empty(uctx))
}

/// `udata`'s pointer, or null.
pub(crate) fn udata_ptr(u: &mut Option<DriverUdata>) -> *mut bindings::ib_udata {
    u.as_mut().map_or(core::ptr::null_mut(), |u| u.udata())
}
