// SPDX-License-Identifier: GPL-2.0

//! Completion queues of user space (C's `UVERBS_METHOD_CQ_CREATE`/`_DESTROY`, `create_cq`,
//! `ib_uverbs_create_cq`, `ib_uverbs_ex_create_cq`, `ib_uverbs_resize_cq`,
//! `ib_uverbs_destroy_cq`): the driver makes
//! the CQ in user memory; its completion events go to the completion channel it was given (the
//! CQ's user handle, 8 bytes), its errors to an async event file (the channel the request named,
//! else the context's first). Events are counted when user space reads them; destroying the
//! CQ drops those not read and answers the counts, which libibverbs waits to have acknowledged.

use crate::{
    file::event_file::{EventCounts, EventFile},
    file::objects::UCq,
    file::ufile::Context,
    file::uobjects::UObject,
    ioctl::bundle::IoctlBundle,
    ioctl::ids::OBJECT_CQ,
    uabi::{
        CreateCq, CreateCqResp, DestroyCq, DestroyCqResp, ExCreateCq, ExCreateCqResp, ResizeCq,
        ResizeCqResp,
    },
    write::bundle::Bundle,
};
use ib_core::{
    user::udata::Udata,
    verbs::types::{
        CompletionHandler, CqInit, USER_CQ_IGNORE_OVERRUN, USER_CQ_TIMESTAMP_COMPLETION,
    },
};
use kernel::{prelude::*, sync::Arc, transmute::AsBytes};

/// `UVERBS_METHOD_CQ_CREATE`'s attributes (`enum uverbs_attrs_create_cq_cmd_attr_ids`).
pub(crate) mod create_attr {
    pub(crate) const HANDLE: u16 = 0;
    pub(crate) const CQE: u16 = 1;
    pub(crate) const USER_HANDLE: u16 = 2;
    pub(crate) const COMP_CHANNEL: u16 = 3;
    pub(crate) const COMP_VECTOR: u16 = 4;
    pub(crate) const FLAGS: u16 = 5;
    pub(crate) const RESP_CQE: u16 = 6;
    pub(crate) const EVENT_FD: u16 = 7;
    pub(crate) const BUFFER_VA: u16 = 8;
    pub(crate) const BUFFER_LENGTH: u16 = 9;
    pub(crate) const BUFFER_FD: u16 = 10;
    pub(crate) const BUFFER_OFFSET: u16 = 11;
    pub(crate) const BUF_UMEM: u16 = 12;
}

/// `UVERBS_METHOD_CQ_DESTROY`'s attributes.
pub(crate) mod destroy_attr {
    pub(crate) const HANDLE: u16 = 0;
    pub(crate) const RESP: u16 = 1;
}

/// What a CQ is made of, from either interface.
struct CreateParams {
    user_handle: u64,
    init: CqInit,
    channel: Option<Arc<EventFile>>,
    async_file: Option<Arc<EventFile>>,
}

/// Makes the CQ in context `c` (the driver checks its part): returns the object and its size.
fn create(c: &Context, p: CreateParams, udata: &Udata) -> Result<(UObject, u32)> {
    let counts = EventCounts::new()?;
    let handle = p.user_handle;
    let completion: Option<CompletionHandler> = match p.channel.clone() {
        Some(ch) => {
            let counts = counts.clone();
            Some(KBox::new(
                move || ch.push_counted(handle, 0, Some(counts.clone())),
                GFP_KERNEL,
            )?)
        }
        None => None,
    };
    let event = crate::file::event_file::async_handler(p.async_file.clone(), handle, &counts)?;
    let cq = c.ucontext.create_cq(&p.init, udata, completion, event)?;
    let cqe = cq.cqe();
    let obj = UObject::Cq(UCq {
        cq: Some(cq),
        counts,
        channel: p.channel,
        async_file: p.async_file,
    });
    Ok((obj, cqe))
}

/// The completion channel of this context behind fd `fd` (C's
/// `ib_uverbs_lookup_comp_file`): `EBADF` for any other file.
fn channel_of(c: &Context, fd: i32) -> Result<Arc<EventFile>> {
    let file = crate::file::event_file::fget(fd)?;
    c.event_file(&file, true).ok_or(EBADF)
}

/// The device's completion vectors (`EIO` once it has gone).
fn comp_vectors(b_ufile: &crate::file::ufile::Ufile) -> Result<u32> {
    let ib = b_ufile.device().ib_device().ok_or(EIO)?;
    Ok(ib.num_comp_vectors())
}

/// `UVERBS_METHOD_CQ_CREATE`, checked in C's order after the attributes: a size of 0 and
/// flags other than timestamps and ignoring overruns are `EINVAL`, so is a vector past the
/// device's; the buffer attributes (a CQ ring given as a buffer, not in the driver's request)
/// are not served (`EOPNOTSUPP`).
pub(crate) fn create_ioctl(b: &mut IoctlBundle<'_>) -> Result {
    use create_attr as a;
    let comp_vector = b.get_u32(a::COMP_VECTOR)?;
    let cqe = b.get_u32(a::CQE)?;
    if cqe == 0 {
        return Err(EINVAL);
    }
    let user_handle = b.get_u64(a::USER_HANDLE)?;
    let flags = b.get_flags32(
        a::FLAGS,
        USER_CQ_TIMESTAMP_COMPLETION | USER_CQ_IGNORE_OVERRUN,
    )?;
    let channel = b.event_file(a::COMP_CHANNEL);
    let named_async = b.event_file(a::EVENT_FD);
    if comp_vector >= comp_vectors(b.ufile)? {
        return Err(EINVAL);
    }
    if [
        a::BUFFER_VA,
        a::BUFFER_LENGTH,
        a::BUFFER_FD,
        a::BUFFER_OFFSET,
        a::BUF_UMEM,
    ]
    .iter()
    .any(|id| b.is_present(*id))
    {
        return Err(EOPNOTSUPP);
    }
    let driver = b.driver;
    let ufile = b.ufile;
    let cqe = ufile.with_context(|c| {
        let async_file = named_async.or_else(|| c.default_async_file());
        let params = CreateParams {
            user_handle,
            init: CqInit {
                cqe,
                comp_vector,
                flags,
            },
            channel,
            async_file,
        };
        let (obj, cqe) = create(c, params, &driver)?;
        b.commit_new(&mut c.objects, obj)?;
        Ok(cqe)
    })?;
    b.copy_to(a::RESP_CQE, &cqe.to_le_bytes())
}

/// Destroys CQ `handle` of this file (`EBUSY` while QPs use it) and returns its counts, read
/// once it is gone (its unread events dropped).
fn destroy(ufile: &crate::file::ufile::Ufile, handle: u64) -> Result<DestroyCqResp> {
    ufile.with_objects(|o| {
        let obj = o.remove(handle, OBJECT_CQ)?;
        let counts = match &obj {
            UObject::Cq(cq) => Some(cq.counts.clone()),
            _ => None,
        };
        drop(obj);
        let mut r = DestroyCqResp(Default::default());
        if let Some(c) = counts {
            (r.comp_events_reported, r.async_events_reported) = (c.comp(), c.async_events());
        }
        Ok(r)
    })
}

/// `UVERBS_METHOD_CQ_DESTROY`: the handle was checked with the attributes.
pub(crate) fn destroy_ioctl(b: &mut IoctlBundle<'_>) -> Result {
    let handle = b.idr_handle(destroy_attr::HANDLE)?;
    let resp = destroy(b.ufile, handle)?;
    b.copy_to(destroy_attr::RESP, resp.as_bytes())
}

/// The part of CREATE_CQ and EX_CREATE_CQ after their requests were read (C's `create_cq`):
/// a vector past the device's and a size of 0 are `EINVAL`, then the context is needed, then
/// the channel (`-1`: none). Answers the handle and the size.
fn create_write(
    b: &Bundle<'_>,
    user_handle: u64,
    init: CqInit,
    comp_channel: i32,
) -> Result<(u32, u32)> {
    if init.comp_vector >= comp_vectors(b.ufile)? {
        return Err(EINVAL);
    }
    if init.cqe == 0 {
        return Err(EINVAL);
    }
    let driver = b.driver;
    b.ufile.with_context(|c| {
        let channel = if comp_channel >= 0 {
            Some(channel_of(c, comp_channel)?)
        } else {
            None
        };
        let params = CreateParams {
            user_handle,
            init,
            channel,
            async_file: c.default_async_file(),
        };
        let (obj, cqe) = create(c, params, &driver)?;
        let handle = c.objects.insert(obj)?;
        Ok((handle, cqe))
    })
}

/// Answers `resp` for CQ `handle`, or destroys it again if the answer cannot be written.
fn respond_or_destroy<T: AsBytes>(b: &Bundle<'_>, handle: u32, resp: &T) -> Result {
    if let Err(e) = b.respond_as(resp) {
        let _ = b
            .ufile
            .with_objects(|o| o.remove(handle.into(), OBJECT_CQ).map(drop));
        return Err(e);
    }
    Ok(())
}

/// CREATE_CQ (`struct ib_uverbs_create_cq`: response, user_handle, cqe, comp_vector,
/// comp_channel, reserved): answers `{cq_handle, cqe}`.
pub(crate) fn create_cq(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<CreateCq>()?;
    let init = CqInit {
        cqe: req.cqe,
        comp_vector: req.comp_vector,
        flags: 0,
    };
    let (handle, cqe) = create_write(b, req.user_handle, init, req.comp_channel)?;
    let mut resp = CreateCqResp(Default::default());
    (resp.cq_handle, resp.cqe) = (handle, cqe);
    respond_or_destroy(b, handle, &resp)
}

/// EX_CREATE_CQ (`struct ib_uverbs_ex_create_cq`: user_handle, cqe, comp_vector, comp_channel,
/// comp_mask, flags, reserved): a comp_mask or reserved word set is `EINVAL`; answers
/// `{cq_handle, cqe, comp_mask, response_length}`.
pub(crate) fn ex_create_cq(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<ExCreateCq>()?;
    if req.comp_mask != 0 || req.reserved != 0 {
        return Err(EINVAL);
    }
    let init = CqInit {
        cqe: req.cqe,
        comp_vector: req.comp_vector,
        flags: req.flags,
    };
    let (handle, cqe) = create_write(b, req.user_handle, init, req.comp_channel)?;
    let mut resp = ExCreateCqResp(Default::default());
    (resp.base.cq_handle, resp.base.cqe) = (handle, cqe);
    resp.response_length = b.response_length(size_of::<ExCreateCqResp>());
    respond_or_destroy(b, handle, &resp)
}

/// DESTROY_CQ (`struct ib_uverbs_destroy_cq`: response, cq_handle, reserved): answers the
/// counts of events read.
pub(crate) fn destroy_cq(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<DestroyCq>()?;
    let resp = destroy(b.ufile, req.cq_handle.into())?;
    b.respond_as(&resp)
}

/// RESIZE_CQ (`struct ib_uverbs_resize_cq`: response, cq_handle, cqe): the driver makes the new
/// ring from its request; answers `{cqe, reserved}` with the size made.
pub(crate) fn resize_cq(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<ResizeCq>()?;
    let driver = b.driver;
    let cqe = b
        .ufile
        .with_objects(|o| o.cq(req.cq_handle.into())?.resize(req.cqe, &driver))?;
    let mut resp = ResizeCqResp(Default::default());
    resp.cqe = cqe;
    b.respond_as(&resp)
}
