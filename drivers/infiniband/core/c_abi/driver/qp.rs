// SPDX-License-Identifier: GPL-2.0

//! A C driver's queue pair as the core's QP object ([`DriverQp`]): the `struct ib_qp` of the
//! driver's size filled as C's `create_qp` fills it, the driver's `create_qp`, `modify_qp`,
//! `query_qp`, `destroy_qp`, and the core's work requests posted as C's chains of
//! `ib_send_wr` (with their RDMA, atomic and UD containers) and `ib_recv_wr`, in runs, from the
//! stack: nothing is allocated on the data path.
//!
//! A user QP (made in a user context; the driver maps its queues into the process) is the same
//! object with the context's user data passed to the driver's ops; a POST_SEND without
//! requests starts the driver's send queue (C's `ib_uverbs_post_send`).

use crate::{
    c_abi::{
        driver::{
            bundle::{self, DriverUdata},
            cq::DriverCq,
            object::DriverObject,
            qp_relay::event,
            sgid::SgidHold,
        },
        object::init_list,
        qp::{attr_from_c, attr_to_c},
    },
    device::events::EventNotifier,
    user::udata::Udata,
    verbs::ops::{CqObject, QpObject, SrqObject},
    verbs::prepared::{PreparedImage, PreparedSend},
    verbs::types::{QpAttr, QpAttrField, QpAttrMask, QpCap, QpInitDriver},
    verbs::wr::{PostError, RecvWr, SendOpcode, SendWr, Sge},
};
use core::{ffi::c_void, ptr::NonNull};
use kernel::{bindings, ffi::c_int, new_mutex, prelude::*, sync::Mutex};

/// A C driver's QP.
///
/// # Invariants
///
/// `qp` was made by the driver's `create_qp` on the structure `ib`, which outlives it; its
/// `qp_context` points to `events`, boxed, which lives as long as the QP. `uctx` is null for a
/// kernel QP, or the driver's user context the QP was made in, which outlives it.
pub(crate) struct DriverQp {
    ib: NonNull<bindings::ib_device>,
    uctx: *mut bindings::ib_ucontext,
    _events: KBox<EventNotifier>,
    qp: DriverObject<bindings::ib_qp>,
    cap: QpCap,
    /// The source GID entry of the QP's path, held while it is the QP's.
    av_sgid: Pin<KBox<Mutex<Option<SgidHold>>>>,
}

// SAFETY: C drivers' objects are used from any thread (their ops are called in any context the
// core calls them in); the structure pointer is only read.
unsafe impl Send for DriverQp {}
// SAFETY: As above.
unsafe impl Sync for DriverQp {}

/// What a send run holds per work request: the base request in one of C's containers.
#[repr(C)]
union SendSlot {
    base: bindings::ib_send_wr,
    rdma: bindings::ib_rdma_wr,
    atomic: bindings::ib_atomic_wr,
    ud: bindings::ib_ud_wr,
    reg: bindings::ib_reg_wr,
}

/// Work requests per driver call.
const RUN: usize = 8;

/// The scatter list of C's work request for `sges` (the core's `Sge` is `ib_sge`).
fn sg_list(sges: &[Sge]) -> *mut bindings::ib_sge {
    const _: () = assert!(size_of::<Sge>() == size_of::<bindings::ib_sge>());
    sges.as_ptr().cast_mut().cast()
}

/// C's opcode of the core's.
fn opcode_to_c(op: SendOpcode) -> bindings::ib_wr_opcode {
    match op {
        SendOpcode::RdmaWrite => bindings::ib_wr_opcode_IB_WR_RDMA_WRITE,
        SendOpcode::RdmaWriteWithImm => bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM,
        SendOpcode::Send => bindings::ib_wr_opcode_IB_WR_SEND,
        SendOpcode::SendWithImm => bindings::ib_wr_opcode_IB_WR_SEND_WITH_IMM,
        SendOpcode::RdmaRead => bindings::ib_wr_opcode_IB_WR_RDMA_READ,
        SendOpcode::AtomicCmpAndSwp => bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP,
        SendOpcode::AtomicFetchAndAdd => bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD,
        SendOpcode::LocalInv => bindings::ib_wr_opcode_IB_WR_LOCAL_INV,
        SendOpcode::SendWithInv => bindings::ib_wr_opcode_IB_WR_SEND_WITH_INV,
        SendOpcode::RegMr => bindings::ib_wr_opcode_IB_WR_REG_MR,
    }
}

/// Fills `slot` with C's form of `wr`, its scatter list `sges` (the request's own, or its
/// inline data's).
fn fill_send(slot: &mut SendSlot, wr: &SendWr<'_>, sges: *mut bindings::ib_sge, num: usize) {
    // SAFETY: Plain C structures: all zeroes is valid.
    *slot = unsafe { core::mem::zeroed() };
    // SAFETY: Every container starts with the base request; the union's fields are plain.
    let base = unsafe { &mut slot.base };
    base.__bindgen_anon_1.wr_id = wr.wr_id;
    base.sg_list = sges;
    base.num_sge = num as c_int;
    base.opcode = opcode_to_c(wr.opcode);
    base.send_flags = wr.send_flags as c_int;
    base.ex.imm_data = wr.imm_data.to_be();
    match wr.opcode {
        SendOpcode::RdmaWrite | SendOpcode::RdmaWriteWithImm | SendOpcode::RdmaRead => {
            // SAFETY: As above.
            let r = unsafe { &mut slot.rdma };
            r.remote_addr = wr.remote_addr;
            r.rkey = wr.rkey;
        }
        SendOpcode::AtomicCmpAndSwp | SendOpcode::AtomicFetchAndAdd => {
            // SAFETY: As above.
            let a = unsafe { &mut slot.atomic };
            a.remote_addr = wr.remote_addr;
            a.rkey = wr.rkey;
            a.compare_add = wr.compare_add;
            a.swap = wr.swap;
        }
        SendOpcode::LocalInv | SendOpcode::SendWithInv => {
            base.ex.invalidate_rkey = wr.invalidate_rkey;
        }
        SendOpcode::RegMr => {
            if let Some(r) = &wr.reg {
                // SAFETY: As above.
                let g = unsafe { &mut slot.reg };
                // The MR is the driver's (the core checked it is of the QP's device): its
                // state is its C structure (`DriverMr`).
                g.mr = r.mr.driver().state().cast_mut().cast();
                g.key = r.key;
                g.access = u32::from(r.access) as c_int;
            }
        }
        _ => {}
    }
    if let Some(ud) = &wr.ud {
        // SAFETY: As above.
        let u = unsafe { &mut slot.ud };
        // The AH is the driver's (the core checked it is of the QP's device): its state is
        // its C structure (`DriverAh`).
        u.ah = ud.ah.driver().state().cast_mut().cast();
        u.remote_qpn = ud.remote_qpn;
        u.remote_qkey = ud.remote_qkey;
    }
}

impl DriverQp {
    /// A QP of the C driver's structure `ib` in the PD `pd` as `init` asks, with its CQs as the
    /// driver's `send_cq` and `recv_cq`, raising its events to `init.events`.
    ///
    /// # Safety
    ///
    /// `ib` is a registered C driver's structure that outlives the QP; `pd` is a live PD of it.
    pub(crate) unsafe fn create(
        ib: NonNull<bindings::ib_device>,
        pd: *mut bindings::ib_pd,
        init: &QpInitDriver<'_, dyn CqObject, dyn SrqObject>,
        send_cq: &DriverCq,
        recv_cq: &DriverCq,
    ) -> Result<Self> {
        // SAFETY: The caller's contract; a kernel QP has no context.
        unsafe { Self::make(ib, pd, core::ptr::null_mut(), init, send_cq, recv_cq, None) }
    }

    /// A user QP of the C driver's structure `ib` in the PD `pd` of its user context `uctx`, as
    /// `init` asks, the driver answering `udata` (C's `ib_create_qp_user`).
    ///
    /// # Safety
    ///
    /// As [`Self::create`]; `uctx` is a live context of `ib` that outlives the QP.
    pub(crate) unsafe fn create_user(
        ib: NonNull<bindings::ib_device>,
        pd: *mut bindings::ib_pd,
        uctx: *mut bindings::ib_ucontext,
        init: &QpInitDriver<'_, dyn CqObject, dyn SrqObject>,
        send_cq: &DriverCq,
        recv_cq: &DriverCq,
        udata: &Udata,
    ) -> Result<Self> {
        let mut u = DriverUdata::new(udata, uctx);
        // SAFETY: The caller's contract.
        unsafe { Self::make(ib, pd, uctx, init, send_cq, recv_cq, Some(&mut u)) }
    }

    /// The driver's `create_qp`, with `u` for a user QP.
    ///
    /// # Safety
    ///
    /// As [`Self::create_user`] (`uctx` null for a kernel QP).
    unsafe fn make(
        ib: NonNull<bindings::ib_device>,
        pd: *mut bindings::ib_pd,
        uctx: *mut bindings::ib_ucontext,
        init: &QpInitDriver<'_, dyn CqObject, dyn SrqObject>,
        send_cq: &DriverCq,
        recv_cq: &DriverCq,
        u: Option<&mut DriverUdata>,
    ) -> Result<Self> {
        let (qp_type, port, cap, sq_sig_all, events) = (
            init.qp_type,
            init.port,
            init.cap,
            init.sq_sig_all,
            init.events,
        );
        // SAFETY: The caller's contract.
        let ops = unsafe { &(*ib.as_ptr()).ops };
        let create = ops.create_qp.ok_or(EOPNOTSUPP)?;
        let qp = DriverObject::<bindings::ib_qp>::alloc(ops.size_ib_qp, GFP_KERNEL)?;
        let events = KBox::new(events.clone(), GFP_KERNEL)?;
        let ctx: *mut c_void = core::ptr::from_ref::<EventNotifier>(&events)
            .cast_mut()
            .cast();
        let q = qp.raw();
        // SAFETY: `q` is the zeroed structure just allocated, ours until the driver gets it;
        // C's `create_qp` fills these before the driver's op.
        unsafe {
            let p = &mut *q;
            p.device = ib.as_ptr();
            p.pd = pd;
            p.real_qp = q;
            p.qp_type = qp_type as bindings::ib_qp_type;
            p.send_cq = send_cq.raw();
            p.recv_cq = recv_cq.raw();
            p.port = port;
            p.event_handler = Some(event);
            p.qp_context = ctx;
            // C's restrack marks a user object (siw tells user QPs from kernel ones by it).
            p.res.user = !uctx.is_null();
            init_list(&mut p.rdma_mrs);
            init_list(&mut p.sig_mrs);
            init_list(&mut p.xrcd_list);
            init_list(&mut p.open_list);
            bindings::init_completion(&mut p.srq_completion);
            bindings::xa_init_flags(&mut p.comp_cntrs, 0);
        }
        // SAFETY: A plain C structure: all zeroes is valid.
        let mut c_init: bindings::ib_qp_init_attr = unsafe { core::mem::zeroed() };
        c_init.event_handler = Some(event);
        c_init.qp_context = ctx;
        c_init.send_cq = send_cq.raw();
        c_init.recv_cq = recv_cq.raw();
        c_init.cap = crate::c_abi::qp::cap_to_c(&cap);
        c_init.sq_sig_type = if sq_sig_all {
            bindings::ib_sig_type_IB_SIGNAL_ALL_WR
        } else {
            bindings::ib_sig_type_IB_SIGNAL_REQ_WR
        };
        c_init.qp_type = qp_type as bindings::ib_qp_type;
        c_init.port_num = port;
        let udata = u.map_or(core::ptr::null_mut(), |u| u.udata());
        // SAFETY: The driver's op with its own structure's new QP (C's `create_qp`).
        kernel::error::to_result(unsafe { create(q, &mut c_init, udata) })?;
        let cap = QpCap {
            max_send_wr: c_init.cap.max_send_wr,
            max_recv_wr: c_init.cap.max_recv_wr,
            max_send_sge: c_init.cap.max_send_sge,
            max_recv_sge: c_init.cap.max_recv_sge,
            max_inline_data: c_init.cap.max_inline_data,
        };
        // INVARIANT: Made above; the context is the boxed notifier kept with it.
        Ok(Self {
            ib,
            uctx,
            _events: events,
            qp,
            cap,
            av_sgid: KBox::pin_init(
                new_mutex!(None, "ib_core::c_abi::driver::DriverQp::av_sgid"),
                GFP_KERNEL,
            )?,
        })
    }

    /// The QP number the driver gave it.
    pub(crate) fn qp_num(&self) -> u32 {
        // SAFETY: The QP is live; the driver set its number at creation.
        unsafe { (*self.qp.raw()).qp_num }
    }

    /// The queue sizes the driver made.
    pub(crate) fn made_cap(&self) -> QpCap {
        self.cap
    }

    fn ops(&self) -> &bindings::ib_device_ops {
        // SAFETY: The structure outlives the QP (type invariant).
        unsafe { &(*self.ib.as_ptr()).ops }
    }

    /// The driver's `modify_qp` with `attr` and `mask`, and `u` for a user QP.
    fn modify_with(&self, attr: &QpAttr, mask: QpAttrMask, u: Option<&mut DriverUdata>) -> Result {
        let modify = self.ops().modify_qp.ok_or(EOPNOTSUPP)?;
        // SAFETY: A plain C structure: all zeroes is valid.
        let mut a: bindings::ib_qp_attr = unsafe { core::mem::zeroed() };
        attr_to_c(attr, &mut a);
        let port = if mask.contains(QpAttrField::Port) {
            attr.port_num.into()
        } else {
            // SAFETY: The QP is live.
            unsafe { (*self.qp.raw()).port }
        };
        // C's `rdma_fill_sgid_attr` for a path: its source GID entry, held while the path is
        // the QP's.
        let sgid = match (&attr.grh, mask.contains(QpAttrField::Av)) {
            (Some(g), true) => {
                // SAFETY: The structure is registered while its QPs live (type invariant).
                Some(unsafe { SgidHold::get(self.ib.as_ptr(), port, g.sgid_index)? })
            }
            _ => None,
        };
        a.ah_attr.grh.sgid_attr = sgid.as_ref().map_or(core::ptr::null(), |s| s.raw());
        let udata = u.map_or(core::ptr::null_mut(), |u| u.udata());
        // SAFETY: The driver's op on its live QP.
        kernel::error::to_result(unsafe {
            modify(self.qp.raw(), &mut a, u32::from(mask) as c_int, udata)
        })?;
        if mask.contains(QpAttrField::Port) {
            // SAFETY: The QP is live; C's `qp->port` follows a modify that sets it.
            unsafe { (*self.qp.raw()).port = attr.port_num.into() };
        }
        if sgid.is_some() {
            // The new path's entry replaces the old one's (C's `qp->av_sgid_attr`).
            *self.av_sgid.lock() = sgid;
        }
        Ok(())
    }

    /// The driver's `query_qp`: every attribute, and the queue sizes.
    fn query_all(&self) -> Result<(QpAttr, QpCap)> {
        let query = self.ops().query_qp.ok_or(EOPNOTSUPP)?;
        // SAFETY: Plain C structures: all zeroes is valid.
        let (mut a, mut init): (bindings::ib_qp_attr, bindings::ib_qp_init_attr) =
            unsafe { (core::mem::zeroed(), core::mem::zeroed()) };
        let all = QpAttrMask::from_ib_bits(QpAttrMask::all_bits()).unwrap_or_default();
        // SAFETY: The driver's op on its live QP.
        kernel::error::to_result(unsafe {
            query(self.qp.raw(), &mut a, u32::from(all) as c_int, &mut init)
        })?;
        let c = init.cap;
        let cap = QpCap {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
        };
        Ok((attr_from_c(&a, all)?, cap))
    }

    /// Posts `slots[..n]` linked as one chain; the index of the first one not posted on error.
    fn post_run(&self, slots: &mut [SendSlot], at: usize) -> Result<(), PostError> {
        let post = self.ops().post_send.ok_or(PostError {
            first_bad: at,
            err: EOPNOTSUPP,
        })?;
        let n = slots.len();
        let base = slots.as_mut_ptr();
        for i in 0..n {
            // SAFETY: `i` and `i + 1` are within the run; only the base requests' links are
            // written.
            unsafe {
                (*base.add(i)).base.next = if i + 1 < n {
                    &raw mut (*base.add(i + 1)).base
                } else {
                    core::ptr::null_mut()
                };
            }
        }
        let mut bad: *const bindings::ib_send_wr = core::ptr::null();
        // SAFETY: The driver's op on its live QP with a chain of valid requests on our stack,
        // which it reads before returning.
        let r = unsafe { post(self.qp.raw(), &raw const (*base).base, &mut bad) };
        if r == 0 {
            return Ok(());
        }
        let failed = (0..n)
            // SAFETY: Only the addresses of the run's entries are compared.
            .find(|&i| unsafe { core::ptr::eq(&raw const (*base.add(i)).base, bad) })
            .unwrap_or(0);
        Err(PostError {
            first_bad: at + failed,
            err: Error::from_errno(r),
        })
    }
}

impl DriverQp {
    /// A user QP's POST_SEND with no request: the driver's op with an empty list reads the
    /// requests from the queue its library wrote.
    fn start_user_sends(&self) -> Result<(), PostError> {
        let post = self.ops().post_send.ok_or(PostError::from(EOPNOTSUPP))?;
        let mut bad: *const bindings::ib_send_wr = core::ptr::null();
        // SAFETY: The driver's op on its live QP with an empty list: a user QP's driver reads
        // the requests from the queue its library wrote (C's POST_SEND with no request).
        let r = unsafe { post(self.qp.raw(), core::ptr::null(), &mut bad) };
        if r != 0 {
            return Err(PostError {
                first_bad: 0,
                err: Error::from_errno(r),
            });
        }
        Ok(())
    }
}

impl Drop for DriverQp {
    fn drop(&mut self) {
        if let Some(destroy) = self.ops().destroy_qp {
            let mut u = bundle::for_destroy(self.uctx);
            // SAFETY: The QP was made by the driver and is destroyed once, after its last use.
            let r = unsafe { destroy(self.qp.raw(), bundle::udata_ptr(&mut u)) };
            if r != 0 {
                pr_warn!("destroy_qp of a C driver failed: {}\n", r);
            }
        }
    }
}

/// Inline data segments a request may have (each posted alone with its own list).
const MAX_INLINE_SGE: usize = 16;

impl QpObject for DriverQp {
    fn modify(&self, attr: &QpAttr, mask: QpAttrMask, udata: Option<&Udata>) -> Result {
        match udata {
            Some(udata) => {
                let mut u = DriverUdata::new(udata, self.uctx);
                self.modify_with(attr, mask, Some(&mut u))
            }
            None => self.modify_with(attr, mask, None),
        }
    }

    fn query(&self) -> Result<QpAttr> {
        Ok(self.query_all()?.0)
    }

    unsafe fn post_send(&self, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        if wrs.is_empty() && !self.uctx.is_null() {
            return self.start_user_sends();
        }
        let mut at = 0;
        while at < wrs.len() {
            // A request with inline data goes alone, with its segments as a scatter list of
            // kernel addresses (C's inline sends).
            if !wrs[at].inline_data.is_empty() {
                let wr = &wrs[at];
                if wr.inline_data.len() > MAX_INLINE_SGE {
                    return Err(PostError {
                        first_bad: at,
                        err: EINVAL,
                    });
                }
                let mut sges = [bindings::ib_sge::default(); MAX_INLINE_SGE];
                for (s, d) in sges.iter_mut().zip(wr.inline_data) {
                    s.addr = d.as_ptr() as u64;
                    s.length = d.len() as u32;
                }
                // SAFETY: A plain C union: all zeroes is valid.
                let mut slot: [SendSlot; 1] = unsafe { core::mem::zeroed() };
                fill_send(&mut slot[0], wr, sges.as_mut_ptr(), wr.inline_data.len());
                self.post_run(&mut slot, at)?;
                at += 1;
                continue;
            }
            // SAFETY: A plain C union: all zeroes is valid.
            let mut slots: [SendSlot; RUN] = unsafe { core::mem::zeroed() };
            let mut n = 0;
            while n < RUN && at + n < wrs.len() && wrs[at + n].inline_data.is_empty() {
                let wr = &wrs[at + n];
                fill_send(&mut slots[n], wr, sg_list(wr.sg_list), wr.sg_list.len());
                n += 1;
            }
            self.post_run(&mut slots[..n], at)?;
            at += n;
        }
        Ok(())
    }

    fn prepare_send(&self, _wr: &SendWr<'_>) -> Result<PreparedImage> {
        Err(EOPNOTSUPP)
    }

    fn post_prepared(&self, _wrs: &[PreparedSend]) -> Result<(), PostError> {
        Err(EOPNOTSUPP.into())
    }

    fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        let post = self.ops().post_recv.ok_or(PostError::from(EOPNOTSUPP))?;
        let mut at = 0;
        while at < wrs.len() {
            // SAFETY: Plain C structures: all zeroes is valid.
            let mut run: [bindings::ib_recv_wr; RUN] = unsafe { core::mem::zeroed() };
            let n = (wrs.len() - at).min(RUN);
            let base = run.as_mut_ptr();
            for (i, wr) in wrs[at..at + n].iter().enumerate() {
                // SAFETY: `i` and `i + 1` are within the run.
                unsafe {
                    let r = &mut *base.add(i);
                    r.__bindgen_anon_1.wr_id = wr.wr_id;
                    r.sg_list = sg_list(wr.sg_list);
                    r.num_sge = wr.sg_list.len() as c_int;
                    r.next = if i + 1 < n {
                        base.add(i + 1)
                    } else {
                        core::ptr::null_mut()
                    };
                }
            }
            let mut bad: *const bindings::ib_recv_wr = core::ptr::null();
            // SAFETY: The driver's op on its live QP with a chain on our stack.
            let r = unsafe { post(self.qp.raw(), base, &mut bad) };
            if r != 0 {
                let failed = (0..n)
                    // SAFETY: Only addresses within the run are compared.
                    .find(|&i| core::ptr::eq(unsafe { base.add(i) }, bad))
                    .unwrap_or(0);
                return Err(PostError {
                    first_bad: at + failed,
                    err: Error::from_errno(r),
                });
            }
            at += n;
        }
        Ok(())
    }

    /// A user QP's as the driver's query reports them (C's `ib_query_qp` cap); a kernel QP's
    /// as made.
    fn cap(&self) -> Option<QpCap> {
        if self.uctx.is_null() {
            Some(self.cap)
        } else {
            self.query_all().ok().map(|(_, cap)| cap)
        }
    }

    /// One call of the driver's `query_qp` for both (a kernel QP's sizes as made, as `cap`).
    fn query_with_cap(&self) -> Result<(QpAttr, Option<QpCap>)> {
        let (attr, queried) = self.query_all()?;
        let cap = if self.uctx.is_null() {
            self.cap
        } else {
            queried
        };
        Ok((attr, Some(cap)))
    }

    fn has_mcast(&self) -> bool {
        false
    }

    fn attach_mcast(&self, _gid: &crate::attrs::Gid, _lid: u16) -> Result {
        Err(EOPNOTSUPP)
    }

    fn detach_mcast(&self, _gid: &crate::attrs::Gid, _lid: u16) -> Result {
        Err(EOPNOTSUPP)
    }
}
