// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues for C modules: `ib_create_srq_user` (C's `ib_create_srq`),
//! `ib_modify_srq` and `ib_destroy_srq_user` (C's `ib_destroy_srq`), with C's names and
//! signatures (C's `drivers/infiniband/core/verbs.c`), and the ops table's `post_srq_recv`. The
//! `struct ib_srq` C code reads (`device`, `pd`, `srq_context`, `usecnt`) stands for an
//! [`Srq`] of the core; its events (`IB_EVENT_SRQ_LIMIT_REACHED`, `IB_EVENT_SRQ_ERR`) reach
//! the consumer's `event_handler(event, srq_context)`.

use crate::{
    c_abi::{
        object::{atomic, new_event, ptr_or_err, relay_events, Faced},
        pd::pd_of,
        restrack::{self, rdma_restrack_new, rdma_restrack_parent_name, untrack},
    },
    device::events::EventType,
    verbs::{
        types::{SrqAttr, SrqAttrField, SrqAttrMask},
        Srq,
    },
};
use core::{
    ptr::{self, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{bindings, ffi::c_int, prelude::*, sync::Arc};

/// The core's part of an SRQ made for a C module.
pub(crate) struct CSrq {
    /// The SRQ.
    pub(crate) srq: Arc<Srq>,
    /// The C structure, for the event handler (null once it is being freed).
    this: Arc<AtomicPtr<bindings::ib_srq>>,
}

/// An SRQ as C holds it.
pub(crate) type SrqObject = Faced<CSrq, bindings::ib_srq>;

/// The core's SRQ behind `srq`.
///
/// # Safety
///
/// `srq` was returned by [`ib_create_srq_user`] and not destroyed.
pub(crate) unsafe fn srq_of<'a>(srq: *mut bindings::ib_srq) -> &'a Arc<Srq> {
    // SAFETY: The caller's contract.
    unsafe { &SrqObject::core(srq).srq }
}

/// Raises `e` on the SRQ `s`: the consumer's `event_handler(event, srq_context)`.
///
/// # Safety
///
/// `s` is a live SRQ made here.
unsafe fn raise(s: *mut bindings::ib_srq, e: EventType) {
    // SAFETY: `s` is live (contract).
    unsafe {
        if let Some(f) = (*s).event_handler {
            let mut ev = new_event((*s).device, e);
            ev.element.srq = s;
            f(&mut ev, (*s).srq_context);
        }
    }
}

/// Makes the SRQ and its C structure.
///
/// # Safety
///
/// As for [`ib_create_srq_user`].
unsafe fn create(
    pd: *mut bindings::ib_pd,
    init: *mut bindings::ib_srq_init_attr,
) -> Result<NonNull<bindings::ib_srq>> {
    // SAFETY: `init` is readable and writable (contract).
    let a = unsafe { &mut *init };
    // XRC and tag-matching SRQs are not made for C modules.
    if a.srq_type != bindings::ib_srq_type_IB_SRQT_BASIC {
        return Err(EOPNOTSUPP);
    }
    let this = Arc::new(AtomicPtr::new(ptr::null_mut()), GFP_KERNEL)?;
    let attr = SrqAttr {
        max_wr: a.attr.max_wr,
        max_sge: a.attr.max_sge,
        srq_limit: a.attr.srq_limit,
    };
    // SAFETY: `pd` is a live PD of ours (contract).
    let srq = Srq::create(
        unsafe { pd_of(pd) },
        &attr,
        Some(relay_events(&this, raise)?),
    )?;
    // C's driver reports the sizes it made.
    let made = srq.query().unwrap_or(attr);
    let handle = this.clone();
    let c = SrqObject::alloc(CSrq { srq, this: handle })?;
    let s = c.as_ptr();
    // SAFETY: `s` is the zeroed structure just allocated, not yet handed out; `pd` is live.
    unsafe {
        let p = &mut *s;
        p.device = (*pd).device;
        p.pd = pd;
        p.event_handler = a.event_handler;
        p.srq_context = a.srq_context;
        p.srq_type = a.srq_type;
        atomic(&raw mut (*pd).usecnt).fetch_add(1, Ordering::Relaxed);
        rdma_restrack_new(
            &raw mut p.res,
            bindings::rdma_restrack_type_RDMA_RESTRACK_SRQ,
        );
        rdma_restrack_parent_name(&raw mut p.res, &raw const (*pd).res);
        restrack::add(&raw mut p.res);
    }
    a.attr.max_wr = made.max_wr;
    a.attr.max_sge = made.max_sge;
    this.store(s, Ordering::Release);
    Ok(c)
}

/// C's `ib_create_srq_user`: a basic SRQ in `pd` as `srq_init_attr` asks (its `attr` then holds
/// the sizes the driver made); `ERR_PTR(-EOPNOTSUPP)` for XRC and tag-matching SRQs or user
/// objects, `-EINVAL` for sizes past the device's, the driver's errno otherwise.
///
/// # Safety
///
/// `pd` was returned by `__ib_alloc_pd` and not deallocated; `srq_init_attr` is readable and
/// writable; the event handler may be called with `srq_context` until the SRQ is destroyed.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_create_srq_user(
    pd: *mut bindings::ib_pd,
    srq_init_attr: *mut bindings::ib_srq_init_attr,
    uobject: *mut bindings::ib_usrq_object,
    udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_srq {
    if !uobject.is_null() || !udata.is_null() {
        return crate::c_abi::object::err_ptr(EOPNOTSUPP);
    }
    // SAFETY: The caller's contract.
    ptr_or_err(unsafe { create(pd, srq_init_attr) })
}

/// C's `ib_modify_srq`: resizes the SRQ (`IB_SRQ_MAX_WR`) or arms its limit (`IB_SRQ_LIMIT`);
/// 0, `-EINVAL` for other mask bits, the driver's errno otherwise.
///
/// # Safety
///
/// `srq` was returned by [`ib_create_srq_user`] and not destroyed; `srq_attr` is readable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_modify_srq(
    srq: *mut bindings::ib_srq,
    srq_attr: *mut bindings::ib_srq_attr,
    srq_attr_mask: bindings::ib_srq_attr_mask,
) -> c_int {
    let mut mask = SrqAttrMask::empty();
    for f in [SrqAttrField::MaxWr, SrqAttrField::Limit] {
        if srq_attr_mask & f as u32 != 0 {
            mask |= f;
        }
    }
    if srq_attr_mask & !SrqAttrMask::all_bits() != 0 {
        return EINVAL.to_errno();
    }
    // SAFETY: `srq_attr` is readable (contract).
    let a = unsafe { &*srq_attr };
    let attr = SrqAttr {
        max_wr: a.max_wr,
        max_sge: a.max_sge,
        srq_limit: a.srq_limit,
    };
    // SAFETY: `srq` is live (contract).
    match unsafe { srq_of(srq) }.modify(&attr, mask) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// C's `ib_destroy_srq_user` (C's `ib_destroy_srq` passes no `udata`): destroys the SRQ; 0,
/// `-EBUSY` while a QP receives from it (C's `usecnt`), `-EINVAL` for user data.
///
/// # Safety
///
/// `srq` was returned by [`ib_create_srq_user`]; on success it is not used again.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_destroy_srq_user(
    srq: *mut bindings::ib_srq,
    udata: *mut bindings::ib_udata,
) -> c_int {
    if !udata.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: `srq` is live (contract), and so is its PD.
    unsafe {
        if atomic(&raw mut (*srq).usecnt).load(Ordering::Relaxed) != 0 {
            return EBUSY.to_errno();
        }
        untrack(&raw mut (*srq).res);
        SrqObject::core(srq)
            .this
            .store(ptr::null_mut(), Ordering::Release);
        atomic(&raw mut (*(*srq).pd).usecnt).fetch_sub(1, Ordering::Relaxed);
        SrqObject::free(srq);
    }
    0
}

/// The ops table's `create_srq`, there for what C's inline `ib_create_srq` reads of it: that the
/// device has SRQs (it calls `ib_create_srq_user` only when the entry is set). The driver's
/// entry is called by C's ib_core alone, with an `ib_srq` it allocated for the driver; this
/// core makes SRQs itself ([`ib_create_srq_user`]) and never calls it, so a C module calling
/// it directly is refused.
///
/// # Safety
///
/// Any arguments: none is read.
pub(crate) unsafe extern "C" fn create_srq(
    _srq: *mut bindings::ib_srq,
    _init: *mut bindings::ib_srq_init_attr,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    EOPNOTSUPP.to_errno()
}
