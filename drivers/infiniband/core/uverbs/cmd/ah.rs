// SPDX-License-Identifier: GPL-2.0

//! Address handles of user space (C's `ib_uverbs_create_ah` and `ib_uverbs_destroy_ah`): an AH
//! in a PD of the file for the request's address, made by the driver (`create_user_ah`: the
//! software drivers; the core's drivers, whose libraries make AHs in user space, answer
//! `EOPNOTSUPP`), under a new handle.

use crate::{
    file::uobjects::UObject,
    ioctl::ids::OBJECT_AH,
    uabi::{CreateAh, CreateAhResp, DestroyAh},
    write::bundle::Bundle,
};
use ib_core::{
    attrs::Gid,
    verbs::types::{AhAttr, GlobalRoute},
};
use kernel::{prelude::*, uapi};

/// The core's address of the ABI's (`struct ib_uverbs_ah_attr`; the GRH only when it says it
/// is global).
fn ah_attr(a: &uapi::ib_uverbs_ah_attr) -> AhAttr {
    AhAttr {
        dlid: a.dlid,
        sl: a.sl,
        src_path_bits: a.src_path_bits,
        static_rate: a.static_rate,
        port_num: a.port_num,
        grh: (a.is_global != 0).then_some(GlobalRoute {
            dgid: Gid(a.grh.dgid),
            flow_label: a.grh.flow_label,
            sgid_index: a.grh.sgid_index,
            hop_limit: a.grh.hop_limit,
            traffic_class: a.grh.traffic_class,
            roce_dmac: None,
        }),
    }
}

/// CREATE_AH (`struct ib_uverbs_create_ah`: response, user handle, PD handle, the address):
/// the port is checked first (`EINVAL`), then the PD; answers the AH's handle. If the answer
/// cannot be written, the AH is destroyed again.
pub(crate) fn create_ah(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<CreateAh>()?;
    let attr = ah_attr(&req.attr);
    let driver = b.driver;
    b.ufile.with_context(|c| {
        if !c
            .ucontext
            .device()
            .is_valid_port(u32::from(req.attr.port_num))
        {
            return Err(EINVAL);
        }
        let ah = c
            .objects
            .pd(req.pd_handle.into())?
            .create_ah(&c.ucontext, &attr, &driver)?;
        let handle = c.objects.insert(UObject::Ah { _ah: ah })?;
        let mut resp = CreateAhResp(Default::default());
        resp.ah_handle = handle;
        if let Err(e) = b.respond_as(&resp) {
            drop(c.objects.remove(handle.into(), OBJECT_AH));
            return Err(e);
        }
        Ok(())
    })
}

/// DESTROY_AH (`struct ib_uverbs_destroy_ah`: the handle).
pub(crate) fn destroy_ah(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<DestroyAh>()?;
    b.ufile
        .with_objects(|o| o.remove(req.ah_handle.into(), OBJECT_AH).map(drop))
}
