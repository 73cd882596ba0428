// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues of user space (C's `UVERBS_METHOD_SRQ_CREATE`/`_DESTROY`,
//! `__uverbs_create_xsrq`, `ib_uverbs_create_srq`, `ib_uverbs_create_xsrq`,
//! `ib_uverbs_modify_srq`, `ib_uverbs_query_srq`, `ib_uverbs_destroy_srq`): the SRQ is made in
//! a PD of the file; QPs of the file receive from it; its asynchronous events (limit reached,
//! error) go to an async event file (the one the request named, else the context's first) as
//! its user handle, counted when read; destruction drops those unread and answers the count.
//!
//! Basic SRQs only: XRC SRQs need an XRC domain, which this file cannot have, and tag-matching
//! SRQs are not served (`EOPNOTSUPP`).

use crate::{
    file::event_file::{EventCounts, EventFile},
    file::objects::USrq,
    file::ufile::{Context, Ufile},
    file::uobjects::UObject,
    ioctl::bundle::IoctlBundle,
    ioctl::ids::OBJECT_SRQ,
    uabi::{
        CreateSrq, CreateSrqResp, CreateXsrq, DestroySrq, DestroySrqResp, ModifySrq, QuerySrq,
        QuerySrqResp,
    },
    write::bundle::Bundle,
};
use ib_core::{
    user::udata::Udata,
    verbs::types::{SrqAttr, SrqAttrField, SrqAttrMask},
};
use kernel::{prelude::*, sync::Arc};

/// `UVERBS_METHOD_SRQ_CREATE`'s attributes (`enum uverbs_attrs_create_srq_cmd_attr_ids`).
pub(crate) mod create_attr {
    pub(crate) const HANDLE: u16 = 0;
    pub(crate) const PD_HANDLE: u16 = 1;
    pub(crate) const XRCD_HANDLE: u16 = 2;
    pub(crate) const CQ_HANDLE: u16 = 3;
    pub(crate) const USER_HANDLE: u16 = 4;
    pub(crate) const MAX_WR: u16 = 5;
    pub(crate) const MAX_SGE: u16 = 6;
    pub(crate) const LIMIT: u16 = 7;
    pub(crate) const MAX_NUM_TAGS: u16 = 8;
    pub(crate) const TYPE: u16 = 9;
    pub(crate) const EVENT_FD: u16 = 10;
    pub(crate) const RESP_MAX_WR: u16 = 11;
    pub(crate) const RESP_MAX_SGE: u16 = 12;
    pub(crate) const RESP_SRQ_NUM: u16 = 13;
    pub(crate) const BUF_UMEM: u16 = 14;
}

/// `UVERBS_METHOD_SRQ_DESTROY`'s attributes.
pub(crate) mod destroy_attr {
    pub(crate) const HANDLE: u16 = 0;
    pub(crate) const RESP: u16 = 1;
}

/// `enum ib_uverbs_srq_type`.
mod srqt {
    pub(super) const BASIC: u64 = 0;
    pub(super) const XRC: u64 = 1;
    pub(super) const TM: u64 = 2;
}

/// Makes a basic SRQ in PD `pd` of context `c`: returns the object and its sizes as made.
fn create(
    c: &Context,
    pd: u64,
    user_handle: u64,
    attr: &SrqAttr,
    async_file: Option<Arc<EventFile>>,
    udata: &Udata,
) -> Result<(UObject, SrqAttr)> {
    let counts = EventCounts::new()?;
    let event = crate::file::event_file::async_handler(async_file.clone(), user_handle, &counts)?;
    let pd = c.objects.pd(pd)?;
    let (srq, made) = pd.create_srq(&c.ucontext, attr, udata, event)?;
    let obj = UObject::Srq(USrq {
        srq: Some(srq),
        counts,
        async_file,
    });
    Ok((obj, made))
}

/// `UVERBS_METHOD_SRQ_CREATE`, checked in C's order after the attributes: the sizes and the
/// type, then what the type needs (a CQ for XRC and tag matching, an XRC domain, a tag count;
/// `ENOENT` when absent), then the event file and the driver.
pub(crate) fn create_ioctl(b: &mut IoctlBundle<'_>) -> Result {
    use create_attr as a;
    let attr = SrqAttr {
        max_sge: b.get_u32(a::MAX_SGE)?,
        max_wr: b.get_u32(a::MAX_WR)?,
        srq_limit: b.get_u32(a::LIMIT)?,
    };
    let user_handle = b.get_u64(a::USER_HANDLE)?;
    let ty = b.get_const(a::TYPE, u32::MAX.into())?;
    if matches!(ty, srqt::XRC | srqt::TM) && !b.is_present(a::CQ_HANDLE) {
        return Err(ENOENT);
    }
    match ty {
        // The XRC domain's handle was checked with the attributes: this file has no XRC
        // domain, so one given cannot have passed.
        srqt::XRC => return Err(ENOENT),
        srqt::TM => {
            b.get_u32(a::MAX_NUM_TAGS)?;
            return Err(EOPNOTSUPP);
        }
        srqt::BASIC => {}
        _ => return Err(EINVAL),
    }
    if b.is_present(a::BUF_UMEM) {
        return Err(EOPNOTSUPP);
    }
    let named_async = b.event_file(a::EVENT_FD);
    let pd = b.idr_handle(a::PD_HANDLE)?;
    let driver = b.driver;
    let ufile = b.ufile;
    let made = ufile.with_context(|c| {
        let async_file = named_async.or_else(|| c.default_async_file());
        let (obj, made) = create(c, pd, user_handle, &attr, async_file, &driver)?;
        b.commit_new(&mut c.objects, obj)?;
        Ok(made)
    })?;
    b.copy_to(a::RESP_MAX_WR, &made.max_wr.to_le_bytes())?;
    b.copy_to(a::RESP_MAX_SGE, &made.max_sge.to_le_bytes())
}

/// Destroys SRQ `handle` of this file (`EBUSY` while QPs use it) and returns the count of its
/// events read.
fn destroy(ufile: &Ufile, handle: u64) -> Result<u32> {
    ufile.with_objects(|o| {
        let obj = o.remove(handle, OBJECT_SRQ)?;
        let counts = match &obj {
            UObject::Srq(s) => Some(s.counts.clone()),
            _ => None,
        };
        drop(obj);
        Ok(counts.map_or(0, |c| c.async_events()))
    })
}

/// `UVERBS_METHOD_SRQ_DESTROY`: the handle was checked with the attributes.
pub(crate) fn destroy_ioctl(b: &mut IoctlBundle<'_>) -> Result {
    let handle = b.idr_handle(destroy_attr::HANDLE)?;
    let reported = destroy(b.ufile, handle)?;
    b.copy_to(destroy_attr::RESP, &reported.to_le_bytes())
}

/// The part of CREATE_SRQ and CREATE_XSRQ after their requests were read: the context is
/// needed first, then only basic SRQs are made (an XRC SRQ's domain cannot be found: `EINVAL`,
/// as C's failed lookup; tag-matching SRQs: `EOPNOTSUPP`). Answers `{srq_handle, max_wr, max_sge, srqn}`; the SRQ is destroyed
/// again if the answer cannot be written.
fn create_write(b: &Bundle<'_>, ty: u32, user_handle: u64, pd: u32, attr: &SrqAttr) -> Result {
    let driver = b.driver;
    let (handle, made) = b.ufile.with_context(|c| {
        match u64::from(ty) {
            srqt::BASIC => {}
            srqt::XRC => return Err(EINVAL),
            _ => return Err(EOPNOTSUPP),
        }
        let async_file = c.default_async_file();
        let (obj, made) = create(c, pd.into(), user_handle, attr, async_file, &driver)?;
        let handle = c.objects.insert(obj)?;
        Ok((handle, made))
    })?;
    let mut resp = CreateSrqResp(Default::default());
    (resp.srq_handle, resp.max_wr, resp.max_sge) = (handle, made.max_wr, made.max_sge);
    if let Err(e) = b.respond_as(&resp) {
        let _ = b
            .ufile
            .with_objects(|o| o.remove(handle.into(), OBJECT_SRQ).map(drop));
        return Err(e);
    }
    Ok(())
}

/// CREATE_SRQ (`struct ib_uverbs_create_srq`: response, user_handle, pd_handle, max_wr,
/// max_sge, srq_limit): a basic SRQ.
pub(crate) fn create_srq(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<CreateSrq>()?;
    let attr = SrqAttr {
        max_wr: req.max_wr,
        max_sge: req.max_sge,
        srq_limit: req.srq_limit,
    };
    create_write(b, 0, req.user_handle, req.pd_handle, &attr)
}

/// CREATE_XSRQ (`struct ib_uverbs_create_xsrq`: response, user_handle, srq_type, pd_handle,
/// max_wr, max_sge, srq_limit, max_num_tags, xrcd_handle, cq_handle).
pub(crate) fn create_xsrq(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<CreateXsrq>()?;
    let attr = SrqAttr {
        max_wr: req.max_wr,
        max_sge: req.max_sge,
        srq_limit: req.srq_limit,
    };
    create_write(b, req.srq_type, req.user_handle, req.pd_handle, &attr)
}

/// The fields a modify's `attr_mask` names (C passes the mask to the driver as is; bits it
/// does not know are ignored).
fn mask_of(bits: u32) -> SrqAttrMask {
    let mut m = SrqAttrMask::empty();
    for f in [SrqAttrField::MaxWr, SrqAttrField::Limit] {
        if bits & f as u32 != 0 {
            m |= f;
        }
    }
    m
}

/// MODIFY_SRQ (`struct ib_uverbs_modify_srq`: srq_handle, attr_mask, max_wr, srq_limit): the
/// driver checks the request (mlx5: no resize; a limit below the SRQ's size).
pub(crate) fn modify_srq(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<ModifySrq>()?;
    let attr = SrqAttr {
        max_wr: req.max_wr,
        max_sge: 0,
        srq_limit: req.srq_limit,
    };
    let mask = mask_of(req.attr_mask);
    let driver = b.driver;
    b.ufile.with_objects(|o| {
        o.srq(req.srq_handle.into())?
            .srq()?
            .modify(&attr, mask, &driver)
    })
}

/// QUERY_SRQ (`struct ib_uverbs_query_srq`: response, srq_handle, reserved): answers
/// `{max_wr, max_sge, srq_limit, reserved}`.
pub(crate) fn query_srq(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<QuerySrq>()?;
    let a = b
        .ufile
        .with_objects(|o| o.srq(req.srq_handle.into())?.srq()?.query())?;
    let mut resp = QuerySrqResp(Default::default());
    (resp.max_wr, resp.max_sge, resp.srq_limit) = (a.max_wr, a.max_sge, a.srq_limit);
    b.respond_as(&resp)
}

/// DESTROY_SRQ (`struct ib_uverbs_destroy_srq`: response, srq_handle, reserved): answers the
/// count of events read.
pub(crate) fn destroy_srq(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<DestroySrq>()?;
    let mut resp = DestroySrqResp(Default::default());
    resp.events_reported = destroy(b.ufile, req.srq_handle.into())?;
    b.respond_as(&resp)
}
