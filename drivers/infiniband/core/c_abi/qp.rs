// SPDX-License-Identifier: GPL-2.0

//! Queue pairs for C modules: `ib_create_qp_kernel` (what C's `ib_create_qp` calls with the
//! caller's `KBUILD_MODNAME`), `ib_modify_qp`, `ib_query_qp` and `ib_destroy_qp_user` (C's
//! `ib_destroy_qp`), with C's names and signatures (C's `drivers/infiniband/core/verbs.c`).
//! The `struct ib_qp` C code reads (`device`, `pd`, the CQs, `qp_num`, `qp_type`, `port`,
//! `qp_context`) stands for a [`Qp`] of the core, which checks transitions and attributes as
//! C's `ib_modify_qp_is_ok` and drives the driver; the QP's asynchronous events reach the
//! consumer's `event_handler(event, qp_context)`, as C's `__ib_qp_event_handler` passes them
//! on. Posting goes through the device's ops table (`c_abi/data_path.rs`).

use crate::{
    attrs::Gid,
    c_abi::{
        ah::{ah_attr_from_c, ah_attr_to_c},
        cq::cq_of,
        driver::qp_relay,
        object::{atomic, init_list, new_event, ptr_or_err, relay_events, Faced},
        pd::pd_of,
        rdma_rw,
        restrack::{track, untrack},
        srq::srq_of,
    },
    device::events::EventType,
    restrack::KernName,
    verbs::{
        qp_transition_ok,
        types::{AccessFlags, QpAttr, QpAttrField, QpAttrMask, QpCap, QpState, QpType},
        Qp, QpInit,
    },
};
use core::{
    ptr::{self, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{
    bindings,
    ffi::{c_char, c_int},
    prelude::*,
    sync::Arc,
};

/// The core's part of a QP made for a C module.
pub(crate) struct CQp {
    /// The QP.
    pub(crate) qp: Arc<Qp>,
    /// The C structure, for the event handler (null once it is being freed).
    this: Arc<AtomicPtr<bindings::ib_qp>>,
    /// Whether every send is signalled (C's `sq_sig_type`, which queries report).
    sq_sig_all: bool,
}

/// A QP as C holds it.
pub(crate) type QpObject = Faced<CQp, bindings::ib_qp>;

/// The core's QP behind `qp`.
///
/// # Safety
///
/// `qp` was returned by [`ib_create_qp_kernel`] and not destroyed.
pub(crate) unsafe fn qp_of<'a>(qp: *mut bindings::ib_qp) -> &'a Arc<Qp> {
    // SAFETY: The caller's contract.
    unsafe { &QpObject::core(qp).qp }
}

/// The transport types a C module may ask for here.
fn qp_type_from_c(t: bindings::ib_qp_type) -> Result<QpType> {
    Ok(match t {
        bindings::ib_qp_type_IB_QPT_SMI => QpType::Smi,
        bindings::ib_qp_type_IB_QPT_GSI => QpType::Gsi,
        bindings::ib_qp_type_IB_QPT_RC => QpType::Rc,
        bindings::ib_qp_type_IB_QPT_UC => QpType::Uc,
        bindings::ib_qp_type_IB_QPT_UD => QpType::Ud,
        _ => return Err(EOPNOTSUPP),
    })
}

/// C's `struct ib_qp_cap` of `cap` (no RDMA contexts).
pub(crate) fn cap_to_c(cap: &QpCap) -> bindings::ib_qp_cap {
    bindings::ib_qp_cap {
        max_send_wr: cap.max_send_wr,
        max_recv_wr: cap.max_recv_wr,
        max_send_sge: cap.max_send_sge,
        max_recv_sge: cap.max_recv_sge,
        max_inline_data: cap.max_inline_data,
        max_rdma_ctxs: 0,
    }
}

/// Raises `e` on the QP `q`: the consumer's `event_handler(event, qp_context)` (C's
/// `registered_event_handler`), as C's `__ib_qp_event_handler` passes it on.
///
/// # Safety
///
/// `q` is a live QP made here.
unsafe fn raise(q: *mut bindings::ib_qp, e: EventType) {
    // SAFETY: `q` is live (contract).
    unsafe {
        if let Some(f) = (*q).registered_event_handler {
            let mut ev = new_event((*q).device, e);
            ev.element.qp = q;
            f(&mut ev, (*q).qp_context);
        }
    }
}

/// Makes the QP and its C structure.
///
/// # Safety
///
/// As for [`ib_create_qp_kernel`].
unsafe fn create(
    pd: *mut bindings::ib_pd,
    init: *mut bindings::ib_qp_init_attr,
    caller: *const c_char,
) -> Result<NonNull<bindings::ib_qp>> {
    // SAFETY: `init` is readable and writable (contract).
    let a = unsafe { &mut *init };
    let qp_type = qp_type_from_c(a.qp_type)?;
    // What this core does not make for C modules yet: QPs of an XRC domain, creation flags
    // (integrity among them) and RSS tables.
    if !a.xrcd.is_null() || !a.rwq_ind_tbl.is_null() || a.create_flags != 0 {
        return Err(EOPNOTSUPP);
    }
    if a.cap.max_rdma_ctxs != 0 {
        // The RDMA read/write API's contexts need room in the send queue (C's
        // `rdma_rw_init_qp`); the caller passes its port.
        // SAFETY: `pd` is live and so is its registered device (contract).
        unsafe { rdma_rw::init_qp((*pd).device, a) };
    }
    if a.send_cq.is_null() || a.recv_cq.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: The CQs and the PD are live objects of ours (contract).
    let (send_cq, recv_cq, core_pd) = unsafe { (cq_of(a.send_cq), cq_of(a.recv_cq), pd_of(pd)) };
    // SAFETY: `caller` is the module's name (contract).
    let name = unsafe { KernName::from_c(caller) };
    // SAFETY: An SRQ, if any, is a live SRQ of ours (contract).
    let srq = (!a.srq.is_null()).then(|| unsafe { srq_of(a.srq) }.clone());
    let this = Arc::new(AtomicPtr::new(ptr::null_mut()), GFP_KERNEL)?;
    let sq_sig_all = a.sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_ALL_WR;
    let qp = Qp::create(
        core_pd,
        QpInit {
            qp_type,
            send_cq: send_cq.cq.clone(),
            recv_cq: recv_cq.cq.clone(),
            cap: QpCap {
                max_send_wr: a.cap.max_send_wr,
                max_recv_wr: a.cap.max_recv_wr,
                max_send_sge: a.cap.max_send_sge,
                max_recv_sge: a.cap.max_recv_sge,
                max_inline_data: a.cap.max_inline_data,
            },
            sq_sig_all,
            kern_name: name,
            srq,
            event_handler: Some(relay_events(&this, raise)?),
            port_num: a.port_num,
        },
    )?;
    let (qpn, cap) = (qp.qp_num(), qp.cap());
    let handle = this.clone();
    let c = QpObject::alloc(CQp {
        qp,
        this: handle,
        sq_sig_all,
    })?;
    let q = c.as_ptr();
    // On failure from here, `undo` frees what was made.
    let undo = |e: Error| {
        send_cq.remove_qp(qpn);
        recv_cq.remove_qp(qpn);
        // SAFETY: `q` was allocated above and not handed out.
        unsafe { QpObject::free(q) };
        e
    };
    send_cq.add_qp(qpn, q).map_err(undo)?;
    recv_cq.add_qp(qpn, q).map_err(undo)?;
    // SAFETY: `q` is the zeroed structure just allocated, not yet handed out; the PD and CQs are
    // live (contract).
    unsafe {
        let p = &mut *q;
        p.device = (*pd).device;
        p.pd = pd;
        p.send_cq = a.send_cq;
        p.recv_cq = a.recv_cq;
        p.srq = a.srq;
        p.real_qp = q;
        p.qp_type = a.qp_type;
        p.qp_num = qpn;
        p.port = a.port_num;
        p.qp_context = a.qp_context;
        p.registered_event_handler = a.event_handler;
        bindings::__spin_lock_init(
            &raw mut p.mr_lock,
            c"&qp->mr_lock".as_char_ptr(),
            kernel::static_lock_class!().as_ptr(),
        );
        p.max_write_sge = cap.max_send_sge;
        p.max_read_sge = cap.max_send_sge.min((*(*pd).device).attrs.max_sge_rd);
        init_list(&mut p.rdma_mrs);
        init_list(&mut p.sig_mrs);
        init_list(&mut p.xrcd_list);
        init_list(&mut p.open_list);
        bindings::init_completion(&mut p.srq_completion);
        bindings::xa_init_flags(&mut p.comp_cntrs, 0);
        atomic(&raw mut (*pd).usecnt).fetch_add(1, Ordering::Relaxed);
        atomic(&raw mut (*a.send_cq).usecnt).fetch_add(1, Ordering::Relaxed);
        atomic(&raw mut (*a.recv_cq).usecnt).fetch_add(1, Ordering::Relaxed);
        if !a.srq.is_null() {
            atomic(&raw mut (*a.srq).usecnt).fetch_add(1, Ordering::Relaxed);
        }
        // Listed under its number, once that is set.
        track(
            &raw mut p.res,
            bindings::rdma_restrack_type_RDMA_RESTRACK_QP,
            caller,
        );
    }
    // C's `ib_create_qp` reports the sizes the driver made (the contexts asked for stay).
    a.cap = bindings::ib_qp_cap {
        max_rdma_ctxs: a.cap.max_rdma_ctxs,
        ..cap_to_c(&cap)
    };
    this.store(q, Ordering::Release);
    if a.cap.max_rdma_ctxs != 0 {
        // SAFETY: `q` is the QP just made, not handed out yet.
        let r = unsafe { rdma_rw::init_mrs(q, a) };
        if r != 0 {
            // SAFETY: As above; destroyed once, here.
            unsafe { ib_destroy_qp_user(q, ptr::null_mut()) };
            return Err(Error::from_errno(r));
        }
    }
    Ok(c)
}

/// C's `ib_create_qp_kernel`: a QP in `pd` as `qp_init_attr` asks, for the module `caller`
/// names; `qp_init_attr->cap` then holds the sizes the driver made. `ERR_PTR(-EOPNOTSUPP)` for
/// what is not made for C modules yet (XRC, RSS, creation flags, `max_rdma_ctxs`, raw
/// QP types), `-EINVAL` for sizes past the device's or a missing CQ, the driver's errno
/// otherwise. A QP on an SRQ (`srq`) receives from it.
///
/// # Safety
///
/// `pd` was returned by `__ib_alloc_pd` and its CQs by `__ib_create_cq`, none destroyed;
/// `qp_init_attr` is readable and writable; `caller` is null or the module's name; the event
/// handler may be called with `qp_context` until the QP is destroyed.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_create_qp_kernel(
    pd: *mut bindings::ib_pd,
    qp_init_attr: *mut bindings::ib_qp_init_attr,
    caller: *const c_char,
) -> *mut bindings::ib_qp {
    // SAFETY: The caller's contract.
    ptr_or_err(unsafe { create(pd, qp_init_attr, caller) })
}

/// The core's attributes of C's `attr` for the fields `mask` names.
pub(crate) fn attr_from_c(a: &bindings::ib_qp_attr, mask: QpAttrMask) -> Result<QpAttr> {
    let path = if mask.contains(QpAttrField::Av) {
        Some(ah_attr_from_c(&a.ah_attr)?)
    } else {
        None
    };
    let state = |s: bindings::ib_qp_state| QpState::from_raw(s).ok_or(EINVAL);
    Ok(QpAttr {
        qp_state: if mask.contains(QpAttrField::State) {
            state(a.qp_state)?
        } else {
            QpState::Reset
        },
        qp_access_flags: AccessFlags::from_ib_bits(a.qp_access_flags as u32),
        pkey_index: a.pkey_index,
        // Read only when named: C callers leave the other fields as they were (IPoIB sets its
        // Q_Key with a `kmalloc`ed attribute whose port is whatever the memory held).
        port_num: if mask.contains(QpAttrField::Port) {
            u8::try_from(a.port_num).map_err(|_| EINVAL)?
        } else {
            0
        },
        qkey: a.qkey,
        dlid: path.map_or(0, |p| p.dlid),
        sl: path.map_or(0, |p| p.sl),
        src_path_bits: path.map_or(0, |p| p.src_path_bits),
        static_rate: path.map_or(0, |p| p.static_rate),
        grh: path.and_then(|p| p.grh),
        path_mtu: a.path_mtu as u8,
        timeout: a.timeout,
        retry_cnt: a.retry_cnt,
        rnr_retry: a.rnr_retry,
        // C masks PSNs to their 24 bits (with a warning) on InfiniBand ports.
        rq_psn: a.rq_psn & 0xff_ffff,
        max_rd_atomic: a.max_rd_atomic,
        min_rnr_timer: a.min_rnr_timer,
        sq_psn: a.sq_psn & 0xff_ffff,
        max_dest_rd_atomic: a.max_dest_rd_atomic,
        dest_qp_num: a.dest_qp_num,
    })
}

/// C's `struct ib_qp_attr` of the core's attributes `a` (the capabilities left as they are).
pub(crate) fn attr_to_c(a: &QpAttr, out: &mut bindings::ib_qp_attr) {
    out.qp_state = a.qp_state as u32;
    out.cur_qp_state = a.qp_state as u32;
    out.path_mtu = a.path_mtu.into();
    out.qkey = a.qkey;
    out.rq_psn = a.rq_psn;
    out.sq_psn = a.sq_psn;
    out.dest_qp_num = a.dest_qp_num;
    out.qp_access_flags = u32::from(a.qp_access_flags) as c_int;
    ah_attr_to_c(
        &crate::verbs::types::AhAttr {
            dlid: a.dlid,
            sl: a.sl,
            src_path_bits: a.src_path_bits,
            static_rate: a.static_rate,
            port_num: a.port_num,
            grh: a.grh,
        },
        &mut out.ah_attr,
    );
    out.pkey_index = a.pkey_index;
    out.max_rd_atomic = a.max_rd_atomic;
    out.max_dest_rd_atomic = a.max_dest_rd_atomic;
    out.min_rnr_timer = a.min_rnr_timer;
    out.port_num = a.port_num.into();
    out.timeout = a.timeout;
    out.retry_cnt = a.retry_cnt;
    out.rnr_retry = a.rnr_retry;
}

/// C's `ib_modify_qp`: applies the attributes `qp_attr_mask` names; 0, `-EINVAL` for a
/// transition or attribute C's `ib_modify_qp_is_ok` refuses, a port the device does not have
/// or an address that is not InfiniBand, `-EOPNOTSUPP` for fields this core does not carry
/// (alternate paths, path migration, SQD notification, capabilities, rate limits), the
/// driver's errno otherwise. On success with `IB_QP_PORT`, `qp->port` is the new port.
///
/// # Safety
///
/// `qp` was returned by [`ib_create_qp_kernel`] and not destroyed; `qp_attr` is readable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_modify_qp(
    qp: *mut bindings::ib_qp,
    qp_attr: *mut bindings::ib_qp_attr,
    qp_attr_mask: c_int,
) -> c_int {
    // SAFETY: `qp` is live (contract).
    if unsafe { qp_relay::is_driver_qp(qp) } {
        // SAFETY: A driver's own live QP (checked), `qp_attr` readable (contract).
        return unsafe { qp_relay::modify(qp, qp_attr, qp_attr_mask) };
    }
    // SAFETY: `qp` is live (contract).
    let core = unsafe { qp_of(qp) };
    let bits = qp_attr_mask as u32;
    let Some(mask) = QpAttrMask::from_ib_bits(bits) else {
        // Fields this core does not carry: refused, after the transition check C's driver makes
        // first (a transition that is wrong anyway stays `-EINVAL`, as on C).
        // SAFETY: `qp_attr` is readable (contract).
        let next = unsafe { (*qp_attr).qp_state };
        let carried = QpAttrMask::from_ib_bits(bits & QpAttrMask::all_bits()).unwrap_or_default();
        let next = if carried.contains(QpAttrField::State) {
            QpState::from_raw(next)
        } else {
            Some(core.state())
        };
        let ok = next.is_some_and(|n| qp_transition_ok(core.state(), n, core.qp_type(), carried));
        return if ok { EOPNOTSUPP } else { EINVAL }.to_errno();
    };
    // SAFETY: `qp_attr` is readable (contract).
    let attr = match attr_from_c(unsafe { &*qp_attr }, mask) {
        Ok(a) => a,
        Err(e) => return e.to_errno(),
    };
    match core.modify(&attr, mask) {
        Ok(()) => {
            if mask.contains(QpAttrField::Port) {
                // SAFETY: `qp` is live (contract); C's `qp->port` is written by modifies only.
                unsafe { (*qp).port = attr.port_num.into() };
            }
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// C's `ib_query_qp`: the QP's attributes from the driver into `qp_attr` (all of them, as
/// C's mlx5 fills them whatever `qp_attr_mask` says) and what it was created with into
/// `qp_init_attr`; 0 or the driver's errno.
///
/// # Safety
///
/// `qp` was returned by [`ib_create_qp_kernel`] and not destroyed; `qp_attr` and
/// `qp_init_attr` are writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_query_qp(
    qp: *mut bindings::ib_qp,
    qp_attr: *mut bindings::ib_qp_attr,
    _qp_attr_mask: c_int,
    qp_init_attr: *mut bindings::ib_qp_init_attr,
) -> c_int {
    // SAFETY: `qp` is live (contract).
    let core = unsafe { QpObject::core(qp) };
    let a = match core.qp.query() {
        Ok(a) => a,
        Err(e) => return e.to_errno(),
    };
    let cap = cap_to_c(&core.qp.cap());
    // SAFETY: The outputs are writable and `qp` is live (contract).
    let (out, init, q) = unsafe { (&mut *qp_attr, &mut *qp_init_attr, &*qp) };
    attr_to_c(&a, out);
    out.cap = cap;
    init.qp_type = q.qp_type;
    init.send_cq = q.send_cq;
    init.recv_cq = q.recv_cq;
    init.srq = q.srq;
    init.qp_context = q.qp_context;
    init.cap = cap;
    init.create_flags = 0;
    init.sq_sig_type = if core.sq_sig_all {
        bindings::ib_sig_type_IB_SIGNAL_ALL_WR
    } else {
        bindings::ib_sig_type_IB_SIGNAL_REQ_WR
    };
    0
}

/// C's `ib_destroy_qp_user` (C's `ib_destroy_qp` passes no `udata`): destroys the QP; 0,
/// `-EINVAL` for user data. Once it returns, the QP's event handler is not called any more
/// and its PD and CQs are free of it.
///
/// # Safety
///
/// `qp` was returned by [`ib_create_qp_kernel`]; it is not used again.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_destroy_qp_user(
    qp: *mut bindings::ib_qp,
    udata: *mut bindings::ib_udata,
) -> c_int {
    if !udata.is_null() {
        return EINVAL.to_errno();
    }
    // C refuses while the QP is attached to a multicast group (its use count).
    // SAFETY: `qp` is live (contract).
    if unsafe { atomic(&raw mut (*qp).usecnt) }.load(Ordering::Relaxed) != 0 {
        return EBUSY.to_errno();
    }
    // SAFETY: `qp` is live (contract).
    if unsafe { (*qp).mrs_used } > 0 {
        // MRs of its pools still out (C warns too, and goes on).
        pr_warn!("ib_destroy_qp of a QP whose pool MRs are still in use\n");
    }
    // SAFETY: As above: its pools' MRs are freed before it (C's `rdma_rw_cleanup_mrs`).
    unsafe { rdma_rw::cleanup_mrs(qp) };
    // SAFETY: `qp` is live (contract), and so are its PD and CQs, which it keeps in use.
    unsafe {
        let core = QpObject::core(qp);
        untrack(&raw mut (*qp).res);
        core.this.store(ptr::null_mut(), Ordering::Release);
        let q = &*qp;
        cq_of(q.send_cq).remove_qp(q.qp_num);
        cq_of(q.recv_cq).remove_qp(q.qp_num);
        atomic(&raw mut (*q.send_cq).usecnt).fetch_sub(1, Ordering::Relaxed);
        atomic(&raw mut (*q.recv_cq).usecnt).fetch_sub(1, Ordering::Relaxed);
        atomic(&raw mut (*q.pd).usecnt).fetch_sub(1, Ordering::Relaxed);
        if !q.srq.is_null() {
            atomic(&raw mut (*q.srq).usecnt).fetch_sub(1, Ordering::Relaxed);
        }
        // The QP's counters (always empty here): the xarray's memory.
        bindings::xa_destroy(&raw mut (*qp).comp_cntrs);
    }
    // SAFETY: Freed once (contract); dropping the core's QP destroys the driver's.
    unsafe { QpObject::free(qp) };
    0
}

/// C's `ib_drain_qp`: moves the QP to the error state and returns once every work request
/// posted before has completed and been handed to its `ib_cqe`'s `done` (both CQs must come
/// from `ib_alloc_cq`, as in C); for a QP on an SRQ, once the driver raised
/// `IB_EVENT_QP_LAST_WQE_REACHED` and the receive CQ was polled. What goes wrong is logged, as
/// C warns.
///
/// # Safety
///
/// `qp` was returned by [`ib_create_qp_kernel`] and not destroyed; process context.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_drain_qp(qp: *mut bindings::ib_qp) {
    // SAFETY: `qp` is live (contract).
    if let Err(e) = unsafe { qp_of(qp) }.drain_qp() {
        pr_warn!("failed to drain QP: {e:?}\n");
    }
}

// The table's numbers are C's (checked here, where the bindings are).
const _: () = {
    use crate::verbs::qp_transitions::{attr::*, qp_type::*, state::*};
    use bindings as b;
    let same = [
        (RESET, b::ib_qp_state_IB_QPS_RESET),
        (INIT, b::ib_qp_state_IB_QPS_INIT),
        (RTR, b::ib_qp_state_IB_QPS_RTR),
        (RTS, b::ib_qp_state_IB_QPS_RTS),
        (SQD, b::ib_qp_state_IB_QPS_SQD),
        (SQE, b::ib_qp_state_IB_QPS_SQE),
        (ERR, b::ib_qp_state_IB_QPS_ERR),
        (SMI, b::ib_qp_type_IB_QPT_SMI),
        (GSI, b::ib_qp_type_IB_QPT_GSI),
        (RC, b::ib_qp_type_IB_QPT_RC),
        (UC, b::ib_qp_type_IB_QPT_UC),
        (UD, b::ib_qp_type_IB_QPT_UD),
        (RAW_PACKET, b::ib_qp_type_IB_QPT_RAW_PACKET),
        (XRC_INI, b::ib_qp_type_IB_QPT_XRC_INI),
        (XRC_TGT, b::ib_qp_type_IB_QPT_XRC_TGT),
        (MAX, b::ib_qp_type_IB_QPT_MAX),
        (STATE, b::ib_qp_attr_mask_IB_QP_STATE),
        (CUR_STATE, b::ib_qp_attr_mask_IB_QP_CUR_STATE),
        (
            EN_SQD_ASYNC_NOTIFY,
            b::ib_qp_attr_mask_IB_QP_EN_SQD_ASYNC_NOTIFY,
        ),
        (ACCESS_FLAGS, b::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS),
        (PKEY_INDEX, b::ib_qp_attr_mask_IB_QP_PKEY_INDEX),
        (PORT, b::ib_qp_attr_mask_IB_QP_PORT),
        (QKEY, b::ib_qp_attr_mask_IB_QP_QKEY),
        (AV, b::ib_qp_attr_mask_IB_QP_AV),
        (PATH_MTU, b::ib_qp_attr_mask_IB_QP_PATH_MTU),
        (TIMEOUT, b::ib_qp_attr_mask_IB_QP_TIMEOUT),
        (RETRY_CNT, b::ib_qp_attr_mask_IB_QP_RETRY_CNT),
        (RNR_RETRY, b::ib_qp_attr_mask_IB_QP_RNR_RETRY),
        (RQ_PSN, b::ib_qp_attr_mask_IB_QP_RQ_PSN),
        (MAX_QP_RD_ATOMIC, b::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC),
        (ALT_PATH, b::ib_qp_attr_mask_IB_QP_ALT_PATH),
        (MIN_RNR_TIMER, b::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER),
        (SQ_PSN, b::ib_qp_attr_mask_IB_QP_SQ_PSN),
        (
            MAX_DEST_RD_ATOMIC,
            b::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC,
        ),
        (PATH_MIG_STATE, b::ib_qp_attr_mask_IB_QP_PATH_MIG_STATE),
        (DEST_QPN, b::ib_qp_attr_mask_IB_QP_DEST_QPN),
        (RATE_LIMIT, b::ib_qp_attr_mask_IB_QP_RATE_LIMIT),
    ];
    let mut i = 0;
    while i < same.len() {
        assert!(same[i].0 == same[i].1);
        i += 1;
    }
};

/// C's `ib_modify_qp_is_ok`: whether a `type_` QP may move from `cur_state` to `next_state`
/// with the attributes `mask` names (the core's one table, `verbs::qp_transitions`; drivers
/// call it from their `modify_qp`). A state or type out of C's ranges is refused (C indexes
/// its table with them unchecked).
#[no_mangle]
pub(crate) extern "C" fn ib_modify_qp_is_ok(
    cur_state: bindings::ib_qp_state,
    next_state: bindings::ib_qp_state,
    type_: bindings::ib_qp_type,
    mask: bindings::ib_qp_attr_mask,
) -> bool {
    crate::verbs::qp_transitions::modify_qp_is_ok(cur_state, next_state, type_, mask)
}

/// C's `ib_attach_mcast`: attaches the UD QP `qp` to the multicast group `gid` with LID `lid`
/// (the QP then counts one more use, and cannot be destroyed until detached); `-EOPNOTSUPP`
/// for a driver without multicast, `-EINVAL` for a GID that is not multicast, a QP that is not
/// UD or a LID outside the multicast range, the driver's errno otherwise.
///
/// # Safety
///
/// `qp` was returned by [`ib_create_qp_kernel`] and not destroyed; `gid` is readable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_attach_mcast(
    qp: *mut bindings::ib_qp,
    gid: *mut bindings::ib_gid,
    lid: u16,
) -> c_int {
    // SAFETY: The caller's contract.
    unsafe { mcast(qp, gid, lid, Qp::attach_mcast, 1) }
}

/// C's `ib_detach_mcast`: detaches `qp` from the multicast group `gid` (one use less); errors
/// as [`ib_attach_mcast`].
///
/// # Safety
///
/// As for [`ib_attach_mcast`].
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_detach_mcast(
    qp: *mut bindings::ib_qp,
    gid: *mut bindings::ib_gid,
    lid: u16,
) -> c_int {
    // SAFETY: The caller's contract.
    unsafe { mcast(qp, gid, lid, Qp::detach_mcast, -1) }
}

/// An attach or detach (`op`) of `qp` to the group `gid`; on success the QP's use count moves
/// by `uses`.
///
/// # Safety
///
/// As for [`ib_attach_mcast`].
unsafe fn mcast(
    qp: *mut bindings::ib_qp,
    gid: *mut bindings::ib_gid,
    lid: u16,
    op: fn(&Qp, &Gid, u16) -> Result,
    uses: i32,
) -> c_int {
    // SAFETY: `qp` is live, `gid` readable (contract); every bit pattern is a GID's raw bytes.
    let (core, g) = unsafe { (qp_of(qp), Gid((*gid).raw)) };
    match op(core, &g, lid) {
        Ok(()) => {
            // SAFETY: `qp` is live (contract).
            unsafe { atomic(&raw mut (*qp).usecnt) }.fetch_add(uses, Ordering::Relaxed);
            0
        }
        Err(e) => e.to_errno(),
    }
}

#[kernel::macros::kunit_tests(rdma_rs_ib_c_qp_attr)]
mod tests {
    use super::*;

    /// An attribute as a `kmalloc` that reused freed memory leaves it: every byte the slab's
    /// free poison.
    fn poisoned() -> bindings::ib_qp_attr {
        let mut a = core::mem::MaybeUninit::<bindings::ib_qp_attr>::uninit();
        // SAFETY: Every field of the C structure is an integer, an enum read as an integer, or
        // a union of such: any bit pattern is valid.
        unsafe {
            core::ptr::write_bytes(a.as_mut_ptr(), 0x6b, 1);
            a.assume_init()
        }
    }

    #[test]
    fn only_the_named_fields_are_read() {
        let mut a = poisoned();
        a.qkey = 0x1234_5678;
        let mask = QpAttrMask::from_ib_bits(bindings::ib_qp_attr_mask_IB_QP_QKEY);
        assert!(mask.is_some());
        let Some(mask) = mask else { return };
        let r = attr_from_c(&a, mask);
        assert!(r.is_ok());
        assert_eq!(r.map(|r| r.qkey).unwrap_or(0), 0x1234_5678);
    }

    #[test]
    fn a_named_port_out_of_range_is_refused() {
        let mut a = poisoned();
        a.port_num = 0x6b6b;
        let mask = QpAttrMask::from_ib_bits(bindings::ib_qp_attr_mask_IB_QP_PORT);
        assert!(mask.is_some());
        let Some(mask) = mask else { return };
        assert!(attr_from_c(&a, mask).is_err());
    }
}
