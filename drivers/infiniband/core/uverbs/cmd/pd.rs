// SPDX-License-Identifier: GPL-2.0

//! Protection domains (C's `ib_uverbs_alloc_pd`, `ib_uverbs_dealloc_pd` and the PD object's
//! DESTROY method): a PD per request, under a new handle, with the driver's answer (mlx5: the
//! PD number) in the driver data.

use crate::{
    file::uobjects::UObject,
    ioctl::bundle::IoctlBundle,
    ioctl::ids::OBJECT_PD,
    uabi::{AllocPd, AllocPdResp, DeallocPd},
    write::bundle::Bundle,
};
use kernel::prelude::*;

/// ALLOC_PD: the PD's handle answers (`struct ib_uverbs_alloc_pd_resp`). If the answer cannot
/// be written, the PD is destroyed again.
pub(crate) fn alloc_pd(b: &mut Bundle<'_>) -> Result {
    b.request_as::<AllocPd>()?;
    let driver = b.driver;
    b.ufile.with_context(|c| {
        let pd = c.ucontext.alloc_pd(&driver)?;
        let handle = c.objects.insert(UObject::Pd(pd))?;
        let mut resp = AllocPdResp(Default::default());
        resp.pd_handle = handle;
        if let Err(e) = b.respond_as(&resp) {
            drop(c.objects.remove(handle.into(), OBJECT_PD));
            return Err(e);
        }
        Ok(())
    })
}

/// DEALLOC_PD (`struct ib_uverbs_dealloc_pd`: the handle).
pub(crate) fn dealloc_pd(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<DeallocPd>()?;
    b.ufile
        .with_objects(|o| o.remove(req.pd_handle.into(), OBJECT_PD).map(drop))
}

/// The PD object's DESTROY method: the handle was checked with the attributes.
pub(crate) fn destroy_pd(b: &mut IoctlBundle<'_>) -> Result {
    let handle = b.idr_handle(crate::ioctl::ids::pd_destroy::HANDLE)?;
    b.ufile
        .with_objects(|o| o.remove(handle, OBJECT_PD).map(drop))
}
