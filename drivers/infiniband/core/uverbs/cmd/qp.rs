// SPDX-License-Identifier: GPL-2.0

//! Queue pairs of user space (C's `UVERBS_METHOD_QP_CREATE`/`_DESTROY`, `modify_qp`,
//! `ib_uverbs_modify_qp`, `ib_uverbs_ex_modify_qp`, `ib_uverbs_query_qp`,
//! `ib_uverbs_destroy_qp`): the QP is made in a PD of the file with two of its CQs; its
//! asynchronous events go to an async event file (the one the request named, else the
//! context's first) as its user handle, counted when read; destruction drops those unread and
//! answers the count.
//!
//! Not served (C serves them on devices that have them): XRC, raw packet and driver QP types,
//! indirection tables, creation flags other than signalling every send, alternate
//! paths, path migration and SQD notifications in modifies (`EOPNOTSUPP`).

use crate::{
    file::event_file::{EventCounts, EventFile},
    file::objects::UQp,
    file::ufile::{Context, Ufile},
    file::uobjects::UObject,
    ioctl::bundle::IoctlBundle,
    ioctl::ids::OBJECT_QP,
    uabi::{
        DestroyQp, DestroyQpResp, ExModifyQp, ExModifyQpResp, ModifyQp, QpCapAbi, QueryQp,
        QueryQpResp,
    },
    write::bundle::Bundle,
};
use ib_core::{
    attrs::Gid,
    user::ucontext::{UserQp, UserQpInit},
    verbs::types::{
        AccessFlags, GlobalRoute, QpAttr, QpAttrField as F, QpAttrMask, QpCap, QpState, QpType,
    },
};
use kernel::{prelude::*, sync::Arc, transmute::AsBytes, uapi};

/// `UVERBS_METHOD_QP_CREATE`'s attributes (`enum uverbs_attrs_create_qp_cmd_attr_ids`).
pub(crate) mod create_attr {
    pub(crate) const HANDLE: u16 = 0;
    pub(crate) const XRCD_HANDLE: u16 = 1;
    pub(crate) const PD_HANDLE: u16 = 2;
    pub(crate) const SRQ_HANDLE: u16 = 3;
    pub(crate) const SEND_CQ_HANDLE: u16 = 4;
    pub(crate) const RECV_CQ_HANDLE: u16 = 5;
    pub(crate) const IND_TABLE_HANDLE: u16 = 6;
    pub(crate) const USER_HANDLE: u16 = 7;
    pub(crate) const CAP: u16 = 8;
    pub(crate) const TYPE: u16 = 9;
    pub(crate) const FLAGS: u16 = 10;
    pub(crate) const SOURCE_QPN: u16 = 11;
    pub(crate) const EVENT_FD: u16 = 12;
    pub(crate) const RESP_CAP: u16 = 13;
    pub(crate) const RESP_QP_NUM: u16 = 14;
    pub(crate) const BUF_UMEM: u16 = 15;
    pub(crate) const RQ_BUF_UMEM: u16 = 16;
    pub(crate) const SQ_BUF_UMEM: u16 = 17;
}

/// `UVERBS_METHOD_QP_DESTROY`'s attributes.
pub(crate) mod destroy_attr {
    pub(crate) const HANDLE: u16 = 0;
    pub(crate) const RESP: u16 = 1;
}

/// `enum ib_uverbs_qp_type` values.
mod qpt {
    pub(super) const RC: u64 = 2;
    pub(super) const UC: u64 = 3;
    pub(super) const UD: u64 = 4;
    pub(super) const RAW_PACKET: u64 = 8;
    pub(super) const XRC_INI: u64 = 9;
    pub(super) const XRC_TGT: u64 = 10;
    pub(super) const DRIVER: u64 = 0xff;
}

/// `enum ib_uverbs_qp_create_flags`.
mod create_flag {
    pub(super) const BLOCK_MULTICAST_LOOPBACK: u32 = 1 << 1;
    pub(super) const SCATTER_FCS: u32 = 1 << 8;
    pub(super) const CVLAN_STRIPPING: u32 = 1 << 9;
    pub(super) const PCI_WRITE_END_PADDING: u32 = 1 << 11;
    pub(super) const SQ_SIG_ALL: u32 = 1 << 12;
}

impl UQp {
    pub(crate) fn qp(&self) -> Result<&UserQp> {
        self.qp.as_ref().ok_or(EINVAL)
    }
}

/// `struct ib_uverbs_qp_cap` as a [`QpCap`].
fn cap_from(c: &uapi::ib_uverbs_qp_cap) -> QpCap {
    QpCap {
        max_send_wr: c.max_send_wr,
        max_recv_wr: c.max_recv_wr,
        max_send_sge: c.max_send_sge,
        max_recv_sge: c.max_recv_sge,
        max_inline_data: c.max_inline_data,
    }
}

/// A [`QpCap`] as `struct ib_uverbs_qp_cap`.
fn cap_abi(c: &QpCap) -> QpCapAbi {
    QpCapAbi(uapi::ib_uverbs_qp_cap {
        max_send_wr: c.max_send_wr,
        max_recv_wr: c.max_recv_wr,
        max_send_sge: c.max_send_sge,
        max_recv_sge: c.max_recv_sge,
        max_inline_data: c.max_inline_data,
    })
}

/// `UVERBS_METHOD_QP_CREATE`, checked in C's order after the attributes.
pub(crate) fn create_ioctl(b: &mut IoctlBundle<'_>) -> Result {
    use create_attr as a;
    let mut cap_raw = QpCapAbi(Default::default());
    b.copy_from_or_zero(a::CAP, cap_raw.as_bytes_mut())?;
    let cap = cap_from(&cap_raw);
    let user_handle = b.get_u64(a::USER_HANDLE)?;
    let ty = b.get_const(a::TYPE, u32::MAX.into())?;
    let qp_type = match ty {
        qpt::XRC_TGT => {
            if [
                a::RECV_CQ_HANDLE,
                a::SEND_CQ_HANDLE,
                a::PD_HANDLE,
                a::IND_TABLE_HANDLE,
            ]
            .iter()
            .any(|id| b.is_present(*id))
            {
                return Err(EINVAL);
            }
            // C needs the XRC domain's handle; this file has no XRC domains.
            return Err(if b.is_present(a::XRCD_HANDLE) {
                EOPNOTSUPP
            } else {
                ENOENT
            });
        }
        qpt::RC | qpt::UC | qpt::UD | qpt::RAW_PACKET | qpt::XRC_INI | qpt::DRIVER => {
            if b.is_present(a::XRCD_HANDLE) || (b.is_present(a::SRQ_HANDLE) && ty == qpt::XRC_INI) {
                return Err(EINVAL);
            }
            if !b.is_present(a::PD_HANDLE) || !b.is_present(a::SEND_CQ_HANDLE) {
                return Err(ENOENT);
            }
            if ty != qpt::XRC_INI && !b.is_present(a::RECV_CQ_HANDLE) {
                return Err(ENOENT);
            }
            match ty {
                qpt::RC => QpType::Rc,
                qpt::UC => QpType::Uc,
                qpt::UD => QpType::Ud,
                _ => return Err(EOPNOTSUPP),
            }
        }
        _ => return Err(EINVAL),
    };
    let flags = b.get_flags32(
        a::FLAGS,
        create_flag::BLOCK_MULTICAST_LOOPBACK
            | create_flag::SCATTER_FCS
            | create_flag::CVLAN_STRIPPING
            | create_flag::PCI_WRITE_END_PADDING
            | create_flag::SQ_SIG_ALL,
    )?;
    // C's `check_creation_flags`.
    let other = flags & !create_flag::SQ_SIG_ALL;
    if other != 0 {
        if qp_type != QpType::Ud {
            return Err(EINVAL);
        }
        if other & (create_flag::SCATTER_FCS | create_flag::CVLAN_STRIPPING) != 0 {
            return Err(EINVAL);
        }
        return Err(EOPNOTSUPP);
    }
    if b.is_present(a::SOURCE_QPN)
        || b.is_present(a::IND_TABLE_HANDLE)
        || [a::BUF_UMEM, a::RQ_BUF_UMEM, a::SQ_BUF_UMEM]
            .iter()
            .any(|id| b.is_present(*id))
    {
        return Err(EOPNOTSUPP);
    }
    let named_async = b.event_file(a::EVENT_FD);
    let pd = b.idr_handle(a::PD_HANDLE)?;
    let send_cq = b.idr_handle(a::SEND_CQ_HANDLE)?;
    let recv_cq = b.idr_handle(a::RECV_CQ_HANDLE)?;
    // A basic SRQ (the only kind a file here has) for any of these types (C: `EINVAL` only for
    // an XRC SRQ or an XRC target QP).
    let srq = b
        .is_present(a::SRQ_HANDLE)
        .then(|| b.idr_handle(a::SRQ_HANDLE))
        .transpose()?;
    let sq_sig_all = flags & create_flag::SQ_SIG_ALL != 0;
    let driver = b.driver;
    let ufile = b.ufile;
    let (qp_num, cap) = ufile.with_context(|c| {
        let async_file = named_async.or_else(|| c.default_async_file());
        let p = CreateParams {
            qp_type,
            cap,
            sq_sig_all,
            user_handle,
            pd,
            send_cq,
            recv_cq,
            srq,
            async_file,
        };
        let (obj, qp_num, cap) = create(c, p, &driver)?;
        b.commit_new(&mut c.objects, obj)?;
        Ok((qp_num, cap))
    })?;
    b.copy_to_struct_or_zero(a::RESP_CAP, cap_abi(&cap).as_bytes())?;
    b.copy_to(a::RESP_QP_NUM, &qp_num.to_le_bytes())
}

/// What a QP is made of.
struct CreateParams {
    qp_type: QpType,
    cap: QpCap,
    sq_sig_all: bool,
    user_handle: u64,
    pd: u64,
    send_cq: u64,
    recv_cq: u64,
    srq: Option<u64>,
    async_file: Option<Arc<EventFile>>,
}

/// Makes the QP in context `c`: returns the object, its number and its sizes.
fn create(
    c: &Context,
    p: CreateParams,
    udata: &ib_core::user::udata::Udata,
) -> Result<(UObject, u32, QpCap)> {
    let counts = EventCounts::new()?;
    let handle = p.user_handle;
    let event = crate::file::event_file::async_handler(p.async_file.clone(), handle, &counts)?;
    let pd = c.objects.pd(p.pd)?;
    let send_cq = c.objects.cq(p.send_cq)?;
    let recv_cq = c.objects.cq(p.recv_cq)?;
    let srq = match p.srq {
        Some(h) => Some(c.objects.srq(h)?.srq()?),
        None => None,
    };
    let init = UserQpInit {
        qp_type: p.qp_type,
        send_cq,
        recv_cq,
        cap: p.cap,
        sq_sig_all: p.sq_sig_all,
        srq,
    };
    let qp = pd.create_qp(&c.ucontext, &init, udata, event)?;
    let (qp_num, cap) = (qp.qp_num(), qp.cap());
    let obj = UObject::Qp(UQp {
        qp: Some(qp),
        counts,
        async_file: p.async_file,
        sq_sig_all: p.sq_sig_all,
    });
    Ok((obj, qp_num, cap))
}

/// Destroys QP `handle` of this file and returns the count of its events read.
fn destroy(ufile: &Ufile, handle: u64) -> Result<u32> {
    ufile.with_objects(|o| {
        let obj = o.remove(handle, OBJECT_QP)?;
        let counts = match &obj {
            UObject::Qp(q) => Some(q.counts.clone()),
            _ => None,
        };
        drop(obj);
        Ok(counts.map_or(0, |c| c.async_events()))
    })
}

/// `UVERBS_METHOD_QP_DESTROY`: the handle was checked with the attributes.
pub(crate) fn destroy_ioctl(b: &mut IoctlBundle<'_>) -> Result {
    let handle = b.idr_handle(destroy_attr::HANDLE)?;
    let reported = destroy(b.ufile, handle)?;
    b.copy_to(destroy_attr::RESP, &reported.to_le_bytes())
}

/// DESTROY_QP (`struct ib_uverbs_destroy_qp`: response, qp_handle, reserved): answers the count
/// of events read.
pub(crate) fn destroy_qp(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<DestroyQp>()?;
    let mut resp = DestroyQpResp(Default::default());
    resp.events_reported = destroy(b.ufile, req.qp_handle.into())?;
    b.respond_as(&resp)
}

/// `IB_QP_*` bits a modify may carry (`IB_QP_ATTR_STANDARD_BITS`: bits 0..20).
const STANDARD_BITS: u32 = (1 << 21) - 1;
/// `IB_QP_RATE_LIMIT`.
const RATE_LIMIT: u32 = 1 << 25;
/// `IB_QP_CUR_STATE`.
const CUR_STATE: u32 = 1 << 1;
/// `IB_QP_SET_QKEY`: a privileged Q_Key.
const SET_QKEY: u32 = 0x8000_0000;

/// `IB_QPS_ERR`, the last state.
const QPS_ERR: u8 = 6;

/// C's `modify_qp` for `req`: the QP looked up, the ports checked, the states' range, then the
/// attributes the mask names.
fn modify(b: &Bundle<'_>, req: &uapi::ib_uverbs_modify_qp) -> Result {
    let handle = req.qp_handle;
    let mut mask = req.attr_mask;
    let port_num = req.port_num;
    let dest = &req.dest;
    let dest_port = dest.port_num;
    let qp_state = req.qp_state;
    let cur_qp_state = req.cur_qp_state;
    b.ufile.with_objects(|o| {
        let q = o.qp(handle.into())?;
        let qp = q.qp()?;
        let dev = b.ufile.device().ib_device().ok_or(EIO)?;
        if mask & F::Port as u32 != 0 && !dev.is_valid_port(port_num.into()) {
            return Err(EINVAL);
        }
        let mut port = port_num;
        if mask & F::Av as u32 != 0 {
            if !dev.is_valid_port(dest_port.into()) {
                return Err(EINVAL);
            }
            if mask & F::State as u32 != 0 && qp_state == QpState::Rtr as u8 {
                // INIT to RTR: the path's port is the one RST to INIT set.
                if u32::from(dest_port) != qp.port() {
                    return Err(EINVAL);
                }
            } else if mask & F::Port as u32 != 0 {
                if port_num != dest_port {
                    return Err(EINVAL);
                }
            } else {
                // SQD to SQD: a new path moves the QP to its port.
                mask |= F::Port as u32;
                port = dest_port;
            }
        }
        if (mask & CUR_STATE != 0 && cur_qp_state > QPS_ERR)
            || (mask & F::State as u32 != 0 && qp_state > QPS_ERR)
        {
            return Err(EINVAL);
        }
        if mask & F::Qkey as u32 != 0
            && req.qkey & SET_QKEY != 0
            && !ib_core::verbs::controlled_qkey::may_use()
        {
            return Err(EPERM);
        }
        let attr = QpAttr {
            qp_state: if mask & F::State as u32 != 0 {
                QpState::from_raw(qp_state.into()).ok_or(EINVAL)?
            } else {
                QpState::Reset
            },
            qp_access_flags: AccessFlags::from_ib_bits(req.qp_access_flags),
            pkey_index: req.pkey_index,
            port_num: port,
            qkey: req.qkey,
            dlid: dest.dlid,
            path_mtu: req.path_mtu,
            timeout: req.timeout,
            retry_cnt: req.retry_cnt,
            rnr_retry: req.rnr_retry,
            rq_psn: req.rq_psn & 0xff_ffff,
            max_rd_atomic: req.max_rd_atomic,
            min_rnr_timer: req.min_rnr_timer,
            sq_psn: req.sq_psn & 0xff_ffff,
            max_dest_rd_atomic: req.max_dest_rd_atomic,
            dest_qp_num: req.dest_qp_num,
            // C's `copy_ah_attr_from_uverbs` (read only with `IB_QP_AV`).
            sl: dest.sl,
            src_path_bits: dest.src_path_bits,
            static_rate: dest.static_rate,
            grh: if mask & F::Av as u32 != 0 && dest.is_global != 0 {
                Some(GlobalRoute {
                    dgid: Gid(dest.dgid),
                    flow_label: dest.flow_label,
                    sgid_index: dest.sgid_index,
                    hop_limit: dest.hop_limit,
                    traffic_class: dest.traffic_class,
                    roce_dmac: None,
                })
            } else {
                None
            },
        };
        // What this core cannot carry to the driver (alternate paths, path migration, SQD
        // notification, capabilities, rate limits) is refused.
        let m = QpAttrMask::from_ib_bits(mask).ok_or(EOPNOTSUPP)?;
        qp.modify(&attr, m, &b.driver)
    })
}

/// MODIFY_QP (`struct ib_uverbs_modify_qp`): a mask beyond the standard bits is `EOPNOTSUPP`.
pub(crate) fn modify_qp(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<ModifyQp>()?;
    if req.attr_mask & !STANDARD_BITS != 0 {
        return Err(EOPNOTSUPP);
    }
    modify(b, &req)
}

/// EX_MODIFY_QP (`struct ib_uverbs_ex_modify_qp`: the legacy request, rate_limit, reserved):
/// answers `{comp_mask, response_length}`.
pub(crate) fn ex_modify_qp(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<ExModifyQp>()?;
    if req.base.attr_mask & !(STANDARD_BITS | RATE_LIMIT) != 0 {
        return Err(EOPNOTSUPP);
    }
    let mut resp = ExModifyQpResp(Default::default());
    resp.response_length = b.response_length(size_of::<ExModifyQpResp>());
    modify(b, &req.base)?;
    b.respond_as(&resp)
}

/// QUERY_QP (`struct ib_uverbs_query_qp`: response, qp_handle, attr_mask): the attributes the
/// driver reports and the sizes made (`struct ib_uverbs_query_qp_resp`, 128 bytes).
pub(crate) fn query_qp(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<QueryQp>()?;
    let (a, cap, sig_all, qp_type) = b.ufile.with_objects(|o| {
        let q = o.qp(req.qp_handle.into())?;
        let qp = q.qp()?;
        let (a, cap) = qp.query()?;
        Ok((a, cap, q.sq_sig_all, qp.qp_type()))
    })?;
    let dev = b.ufile.device().ib_device().ok_or(EIO)?;
    let mut r = QueryQpResp(Default::default());
    // The primary path (`struct ib_uverbs_qp_dest`) of a connected QP on a valid port: its LID
    // and port (the other path fields are not kept yet).
    if matches!(qp_type, QpType::Rc | QpType::Uc) && dev.is_valid_port(a.port_num.into()) {
        // C's `copy_ah_attr_to_uverbs`.
        let d = &mut r.dest;
        if let Some(g) = &a.grh {
            d.dgid = g.dgid.0;
            d.flow_label = g.flow_label;
            d.sgid_index = g.sgid_index;
            d.hop_limit = g.hop_limit;
            d.traffic_class = g.traffic_class;
            d.is_global = 1;
        }
        d.dlid = a.dlid;
        d.sl = a.sl;
        d.src_path_bits = a.src_path_bits;
        d.static_rate = a.static_rate;
        d.port_num = a.port_num;
    }
    r.max_send_wr = cap.max_send_wr;
    r.max_recv_wr = cap.max_recv_wr;
    r.max_send_sge = cap.max_send_sge;
    r.max_recv_sge = cap.max_recv_sge;
    r.max_inline_data = cap.max_inline_data;
    r.qkey = a.qkey;
    r.rq_psn = a.rq_psn;
    r.sq_psn = a.sq_psn;
    r.dest_qp_num = a.dest_qp_num;
    r.qp_access_flags = u32::from(a.qp_access_flags);
    r.pkey_index = a.pkey_index;
    r.qp_state = a.qp_state as u8;
    r.cur_qp_state = a.qp_state as u8;
    r.path_mtu = a.path_mtu;
    // Path migration state: migrated (C's `IB_MIG_MIGRATED`, 0).
    r.max_rd_atomic = a.max_rd_atomic;
    r.max_dest_rd_atomic = a.max_dest_rd_atomic;
    r.min_rnr_timer = a.min_rnr_timer;
    r.port_num = a.port_num;
    r.timeout = a.timeout;
    r.retry_cnt = a.retry_cnt;
    r.rnr_retry = a.rnr_retry;
    r.sq_sig_all = u8::from(sig_all);
    b.respond_as(&r)
}
