// SPDX-License-Identifier: GPL-2.0

//! Queue pairs of user space (C's `mlx5_ib_create_qp` with user data: `process_udata_size`,
//! `check_ucmd_data`, `process_vendor_flags`, `get_qp_uidx`, `create_user_qp`,
//! `_create_user_qp`, `set_user_buf_size`; `mlx5_ib_modify_qp` and `mlx5_ib_destroy_qp` for a
//! user QP). libmlx5 sizes the rings itself and describes them in its request (`struct
//! mlx5_ib_create_qp`): the receive ring first, then the send ring of 64-byte blocks, in one
//! buffer, and a doorbell record; the driver pins both and creates the QP on the UAR page the
//! request names (this driver serves dynamic UARs only). The QP is `qp`'s one QP type, a user
//! QP (`qp::UserQp`): modifies, queries and destruction are `qp`'s; user space posts and polls
//! itself.

use crate::{
    cq::Mlx5Cq,
    qp::wq_size::{RqSize, SendKind, SqSize},
    qp::{create_ctx, destroy_user, st_of, Mlx5Qp, QpEvents, QpFw, UserQp},
    srq::Mlx5Srq,
    user::uabi::{CreateQpReq, CreateQpResp},
    user::ucontext::Mlx5UContext,
    user::umem::{page_offset, UserMemory},
};
use core::mem::offset_of;
use ib_core::{
    user::udata::Udata,
    verbs::types::{NewQp, QpCap, QpInitDriver, QpType},
};
use kernel::{prelude::*, sync::Arc, transmute::AsBytes, uapi};
use mlx5_core::{
    auxdev::{Mlx5Device, Resource, ResourceHandler},
    ifc::verbs::CreateQp,
    ifc::GeneralCaps,
};

/// `sizeof(struct mlx5_ib_create_qp)`.
const REQ_SIZE: usize = size_of::<CreateQpReq>();
/// `offsetof(struct mlx5_ib_create_qp, ece_options)`: shorter requests are `EINVAL`.
const REQ_MIN: usize = offset_of!(uapi::mlx5_ib_create_qp, ece_options);
/// `offsetof(struct mlx5_ib_create_qp, reserved)`: what follows must be zero.
const REQ_LAST: usize = offset_of!(uapi::mlx5_ib_create_qp, reserved);
/// `offsetofend(struct mlx5_ib_create_qp, uidx)`.
const REQ_UIDX_END: usize = offset_of!(uapi::mlx5_ib_create_qp, bfreg_index);

/// `MLX5_QP_FLAG_*`.
mod flag {
    pub(super) const SIGNATURE: u32 = 1 << 0;
    pub(super) const SCATTER_CQE: u32 = 1 << 1;
    pub(super) const BFREG_INDEX: u32 = 1 << 3;
    pub(super) const TYPE_DCT: u32 = 1 << 4;
    pub(super) const TYPE_DCI: u32 = 1 << 5;
    pub(super) const ALLOW_SCATTER_CQE: u32 = 1 << 8;
    pub(super) const UAR_PAGE_INDEX: u32 = 1 << 10;
}

/// `MLX5_IB_DEFAULT_UIDX`: no user index (CQE version 0).
const DEFAULT_UIDX: u32 = 0xff_ffff;
/// `MLX5_IB_INVALID_BFREG`: the answer when the QP uses a UAR page, not a blue-flame register.
const INVALID_BFREG: u32 = 0x8000_0000;
/// log2 of a send WQE basic block (`MLX5_SEND_WQE_BB`).
const SQ_WQE_SHIFT: u32 = 6;
/// The smallest receive WQE: one 16-byte data segment.
const RQ_WQE_SHIFT_MIN: u32 = 4;
/// The largest the context's 3-bit `log_rq_stride` (the shift less 4) can describe.
const RQ_WQE_SHIFT_MAX: u32 = 11;

/// libmlx5's request (`struct mlx5_ib_create_qp`).
struct Request {
    buf_addr: u64,
    db_addr: u64,
    sq_wqe_count: u32,
    rq_wqe_count: u32,
    rq_wqe_shift: u32,
    flags: u32,
    uidx: u32,
    bfreg_index: u32,
}

impl Request {
    fn from_abi(r: &CreateQpReq) -> Self {
        Self {
            buf_addr: r.buf_addr,
            db_addr: r.db_addr,
            sq_wqe_count: r.sq_wqe_count,
            rq_wqe_count: r.rq_wqe_count,
            rq_wqe_shift: r.rq_wqe_shift,
            flags: r.flags,
            uidx: r.uidx,
            bfreg_index: r.bfreg_index,
        }
    }
}

/// C's `process_vendor_flags` for an RC, UC or UD QP of a device without DCI streams,
/// scatter-to-CQE or packet-based credits: the flags it accepts (signature, scatter-to-CQE
/// hints, which are dropped without the capability, and the UAR flags); any other is `EINVAL`.
fn vendor_flags(flags: u32) -> Result<u32> {
    let mut rest = flags;
    let mut taken = 0;
    for f in [
        flag::TYPE_DCI,
        flag::TYPE_DCT,
        flag::SIGNATURE,
        flag::BFREG_INDEX,
        flag::UAR_PAGE_INDEX,
    ] {
        // DCI and DCT are types of their own, which this driver does not make (`EINVAL` below).
        if rest & f != 0 && f != flag::TYPE_DCI && f != flag::TYPE_DCT {
            taken |= f;
            rest &= !f;
        }
    }
    rest &= !(flag::SCATTER_CQE | flag::ALLOW_SCATTER_CQE);
    if rest != 0 {
        return Err(EINVAL);
    }
    Ok(taken)
}

/// C's `get_qp_user_index`: with CQE version 1 the request names a user index of 24 bits; with
/// version 0 it names none (or the default one).
fn user_index(cqe_version: u8, inlen: usize, uidx: u32) -> Result<u32> {
    let has = inlen >= REQ_UIDX_END;
    if has && cqe_version == 0 && uidx == DEFAULT_UIDX {
        return Ok(DEFAULT_UIDX);
    }
    if has != (cqe_version != 0) {
        return Err(EINVAL);
    }
    if cqe_version != 0 {
        if uidx == DEFAULT_UIDX || uidx & !0xff_ffff != 0 {
            return Err(EINVAL);
        }
        return Ok(uidx);
    }
    Ok(DEFAULT_UIDX)
}

/// What a QP's request makes of it.
#[derive(Debug, PartialEq, Eq)]
struct Shape {
    /// The receive queue.
    rqs: RqSize,
    /// The sizes user space is answered.
    cap: QpCap,
    /// The UAR page it rings.
    uar_index: u32,
    /// The length of its rings' buffer (receive ring, then send ring).
    buf_len: usize,
}

/// C's checks of the request's rings and UAR, in its order (`set_rq_size`, the send ring's
/// count, `_create_user_qp`, `set_user_buf_size`), for a QP of `cap` that has a receive queue
/// (`has_rq`: no SRQ, receives asked for) on a device of `log_max` (`log_max_qp_sz`) and
/// `max_wqe_sz_sq`; `flags` as [`vendor_flags`] took them. `EINVAL` for a bad shape, a
/// blue-flame register or a size past C's `int`; `ENOMEM` when no UAR page is named (C
/// allocates one of the context's static registers: there are none).
fn shape(
    req: &Request,
    flags: u32,
    cap: QpCap,
    has_rq: bool,
    log_max: u32,
    max_wqe_sz_sq: u32,
) -> Result<Shape> {
    // C's `set_rq_size` with the request's receive ring.
    let mut cap = cap;
    if cap.max_recv_wr > 1 << log_max {
        return Err(EINVAL);
    }
    let rqs = if has_rq {
        // A receive WQE holds at least one 16-byte data segment, and the context's stride
        // field (`log_rq_stride`, the shift less 4) has 3 bits. C takes any shift up to 32 and
        // masks `shift - 4` into the field, so a shift below 4 tells the device of a ring
        // larger than the memory pinned for it; refused here.
        if !(RQ_WQE_SHIFT_MIN..=RQ_WQE_SHIFT_MAX).contains(&req.rq_wqe_shift) {
            return Err(EINVAL);
        }
        let wqe_size = 1u32.checked_shl(req.rq_wqe_shift).ok_or(EINVAL)?;
        let sig = u32::from(flags & flag::SIGNATURE != 0);
        let max_gs = (wqe_size / 16).checked_sub(sig).ok_or(EINVAL)?;
        RqSize {
            wqe_cnt: req.rq_wqe_count,
            wqe_shift: req.rq_wqe_shift,
            max_gs,
        }
    } else {
        cap.max_recv_wr = 0;
        cap.max_recv_sge = 0;
        RqSize::default()
    };
    if req.rq_wqe_shift != rqs.wqe_shift || req.rq_wqe_count != rqs.wqe_cnt {
        return Err(EINVAL);
    }
    if u64::from(req.sq_wqe_count) > 1u64 << log_max {
        return Err(EINVAL);
    }
    // C's `_create_user_qp`: the UAR page the request names.
    let uar_index = match flags & (flag::UAR_PAGE_INDEX | flag::BFREG_INDEX) {
        flag::UAR_PAGE_INDEX => req.bfreg_index,
        // Blue-flame registers of a context: this context has none (dynamic UARs only).
        flag::BFREG_INDEX => return Err(EINVAL),
        // C allocates one of the context's static registers: there are none.
        0 => return Err(ENOMEM),
        _ => return Err(EINVAL),
    };
    // Sizes in 64 bits, bounded as C's `int` sizes are (`check_shl_overflow` and
    // `check_add_overflow`, qp.c:465, 682-689): no bit can fall off the top.
    let rq_bytes = u64::from(rqs.wqe_cnt) << rqs.wqe_shift.min(31);
    if 64 > max_wqe_sz_sq {
        return Err(EINVAL);
    }
    if req.sq_wqe_count != 0 && !req.sq_wqe_count.is_power_of_two() {
        return Err(EINVAL);
    }
    let sq_bytes = u64::from(req.sq_wqe_count) << SQ_WQE_SHIFT;
    let buf_len = rq_bytes + sq_bytes;
    if buf_len > i32::MAX as u64 {
        return Err(EINVAL);
    }
    Ok(Shape {
        rqs,
        cap,
        uar_index,
        buf_len: buf_len as usize,
    })
}

/// Creates an RC, UC or UD QP of user context `ctx` in PD `pdn` (C's checks in C's order).
/// Returns it and its sizes as user space sees them (what it asked for; no receive queue
/// without one).
pub(crate) fn create<'bound>(
    dev: &'bound Mlx5Device,
    caps: &GeneralCaps,
    ctx: &Mlx5UContext,
    pdn: u32,
    init: &QpInitDriver<'_, Mlx5Cq<'_>, Mlx5Srq<'_>>,
    udata: &Udata,
) -> Result<NewQp<Mlx5Qp<'bound>>> {
    let kind = match init.qp_type {
        QpType::Rc => SendKind::Rc,
        QpType::Uc => SendKind::Uc,
        QpType::Ud => SendKind::Ud,
        // The types C makes besides (XRC, DCT/DCI, raw packet) are not served.
        _ => return Err(EOPNOTSUPP),
    };
    // C's `process_udata_size` and `check_ucmd_data`.
    let inlen = udata.inlen();
    if inlen < REQ_MIN {
        return Err(EINVAL);
    }
    if inlen > REQ_LAST && !udata.in_zero_from(REQ_LAST)? {
        return Err(EINVAL);
    }
    let mut raw = CreateQpReq(Default::default());
    udata.read_in(&mut raw.as_bytes_mut()[..inlen.min(REQ_SIZE)])?;
    let req = Request::from_abi(&raw);
    let flags = vendor_flags(req.flags)?;
    let uidx = user_index(ctx.cqe_version, inlen.min(REQ_SIZE), req.uidx)?;
    let log_max = caps.log_max_qp_sz().min(31) as u32;
    // C's `qp_has_rq`: no receive queue with an SRQ or without receives.
    let has_rq = init.srq.is_none() && init.cap.max_recv_wr != 0;
    let max_wqe_sz_sq = caps.max_wqe_sz_sq() as u32;
    let Shape {
        rqs,
        cap,
        uar_index,
        buf_len,
    } = shape(&req, flags, init.cap, has_rq, log_max, max_wqe_sz_sq)?;
    let buf = if buf_len != 0 {
        let b = UserMemory::pin(dev, req.buf_addr, buf_len, false)?;
        page_offset(req.buf_addr)?;
        Some(b)
    } else {
        None
    };
    let pas = match &buf {
        Some(b) => b.page_list()?,
        None => KVVec::new(),
    };
    let db = UserMemory::pin(dev, req.db_addr, 8, true)?;
    let sqs = SqSize {
        wqe_cnt: req.sq_wqe_count,
        ..SqSize::default()
    };
    let mut input = create_ctx(
        st_of(kind),
        uar_index,
        pdn,
        &sqs,
        &rqs,
        init.send_cq.cqn(),
        init.recv_cq.cqn(),
        db.first_dma(),
        init.srq.map(|s| s.srqn),
    )?;
    // Kernel QPs only: fast registration and the reserved lkey (which addresses all of memory)
    // are never a user QP's.
    input.set_fre(0)?;
    input.set_rlky(0)?;
    if buf.is_some() {
        // In 64-byte units of the first 4 KiB page (`log_page_size` 0, as `create_ctx` set).
        input.set_page_offset((req.buf_addr & 0xfff) / 64)?;
    }
    if caps.cqe_version() == 1 {
        input.set_user_index(uidx.into())?;
    }
    let dbr = db.first_dma();
    let out = match dev.exec_var_large::<CreateQp>(&input, &pas, 0) {
        Ok((out, _)) => out,
        Err(e) => {
            // A timed-out CREATE_QP may have created the QP: its memory stays pinned for ever.
            if e == ETIMEDOUT {
                core::mem::forget(buf);
                core::mem::forget(db);
            }
            return Err(e);
        }
    };
    let qpn = out.qpn() as u32;
    let mut qp = UserQp {
        fw: QpFw::new(
            qpn,
            kind,
            pdn,
            init.send_cq.cqn(),
            init.recv_cq.cqn(),
            has_rq && rqs.wqe_cnt != 0,
            dbr,
        )
        .for_user(),
        rq: rqs,
        events: None,
        buf,
        db: Some(db),
    };
    let handler: Result<Arc<dyn ResourceHandler>> = Arc::new(
        QpEvents {
            qpn,
            notifier: init.events.clone(),
        },
        GFP_KERNEL,
    )
    .map(|h| h as Arc<dyn ResourceHandler>)
    .map_err(Error::from);
    let done = handler
        .and_then(|h| dev.register_resource(Resource::Qp(qpn), h))
        .and_then(|reg| {
            qp.events = Some(reg);
            let mut resp = CreateQpResp(Default::default());
            resp.bfreg_index = INVALID_BFREG;
            udata.respond_as(&resp)
        });
    if let Err(e) = done {
        let _ = destroy_user(dev.commands(), qp);
        return Err(e);
    }
    Ok(NewQp {
        qp: Mlx5Qp::User(qp),
        qp_num: qpn,
        cap,
    })
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_user_qp)]
mod tests {
    use super::*;

    #[test]
    fn vendor_flags_as_c() {
        assert_eq!(vendor_flags(flag::UAR_PAGE_INDEX), Ok(flag::UAR_PAGE_INDEX));
        assert_eq!(vendor_flags(flag::SCATTER_CQE), Ok(0));
        assert_eq!(vendor_flags(flag::TYPE_DCT), Err(EINVAL));
        assert_eq!(vendor_flags(1 << 12), Err(EINVAL));
    }

    /// `uverbs_badinput`'s `qp_req`: a receive ring of 16 x 32 bytes, 64 send blocks, UAR
    /// page 5.
    fn req() -> Request {
        Request {
            buf_addr: 0x7f00_0000_0000,
            db_addr: 0x7f00_0000_4000,
            sq_wqe_count: 64,
            rq_wqe_count: 16,
            rq_wqe_shift: 5,
            flags: flag::UAR_PAGE_INDEX,
            uidx: 1,
            bfreg_index: 5,
        }
    }

    /// Its caps: 64 sends of 1 SGE, 16 receives of 1 SGE.
    fn cap() -> QpCap {
        QpCap {
            max_send_wr: 64,
            max_recv_wr: 16,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        }
    }

    /// [`shape`] on a device of `log_max_qp_sz` 15 and 1 KiB send WQEs.
    fn shaped(r: &Request, cap: QpCap, has_rq: bool) -> Result<Shape> {
        let flags = vendor_flags(r.flags)?;
        shape(r, flags, cap, has_rq, 15, 1024)
    }

    #[test]
    fn rings_and_uar_as_c() {
        // libmlx5's request: its receive ring, its UAR page, 512 + 4096 bytes.
        let good = Shape {
            rqs: RqSize {
                wqe_cnt: 16,
                wqe_shift: 5,
                max_gs: 2,
            },
            cap: cap(),
            uar_index: 5,
            buf_len: 16 * 32 + 64 * 64,
        };
        assert_eq!(shaped(&req(), cap(), true), Ok(good));
        let with = |f: &dyn Fn(&mut Request)| {
            let mut r = req();
            f(&mut r);
            shaped(&r, cap(), true)
        };
        // Signature: one segment less per receive WQE.
        let sig = with(&|r| r.flags |= flag::SIGNATURE);
        assert_eq!(sig.map(|s| s.rqs.max_gs), Ok(1));
        // Receive strides of 16 bytes to 2 KiB only.
        assert_eq!(with(&|r| r.rq_wqe_shift = 4).map(|s| s.rqs.max_gs), Ok(1));
        assert_eq!(
            with(&|r| r.rq_wqe_shift = 11).map(|s| s.buf_len),
            Ok((16 << 11) + 4096)
        );
        for shift in [0, 3, 12, 31, 32, u32::MAX] {
            assert_eq!(with(&|r| r.rq_wqe_shift = shift), Err(EINVAL));
        }
        // With signatures a 16-byte stride has room for no segment (C's 0 too).
        let sig16 = with(&|r| {
            r.flags |= flag::SIGNATURE;
            r.rq_wqe_shift = 4;
        });
        assert_eq!(sig16.map(|s| s.rqs.max_gs), Ok(0));
        // More receives than log_max_qp_sz, more send blocks: EINVAL.
        let many = QpCap {
            max_recv_wr: (1 << 15) + 1,
            ..cap()
        };
        assert_eq!(shaped(&req(), many, true), Err(EINVAL));
        assert_eq!(
            with(&|r| r.sq_wqe_count = 1 << 15).map(|s| s.uar_index),
            Ok(5)
        );
        assert_eq!(with(&|r| r.sq_wqe_count = (1 << 15) + 1), Err(EINVAL));
        // 48 send blocks (not a power of two): EINVAL; none at all is a QP without sends.
        assert_eq!(with(&|r| r.sq_wqe_count = 48), Err(EINVAL));
        assert_eq!(with(&|r| r.sq_wqe_count = 0).map(|s| s.buf_len), Ok(512));
        // No receive queue (an SRQ, or no receives): the request must describe none.
        let norq = QpCap {
            max_recv_wr: 0,
            max_recv_sge: 0,
            ..cap()
        };
        assert_eq!(shaped(&req(), cap(), false), Err(EINVAL));
        let mut r = req();
        (r.rq_wqe_count, r.rq_wqe_shift) = (0, 0);
        let s = shaped(&r, cap(), false).map(|s| (s.cap, s.rqs, s.buf_len));
        assert_eq!(s, Ok((norq, RqSize::default(), 4096)));
        // UAR: a blue-flame register (dynamic UARs only) or both flags: EINVAL; neither:
        // ENOMEM (no static register to allocate).
        assert_eq!(with(&|r| r.flags = flag::BFREG_INDEX), Err(EINVAL));
        let both = flag::BFREG_INDEX | flag::UAR_PAGE_INDEX;
        assert_eq!(with(&|r| r.flags = both), Err(EINVAL));
        assert_eq!(with(&|r| r.flags = 0), Err(ENOMEM));
        // A device whose send WQEs are smaller than a block: EINVAL.
        assert_eq!(
            shape(&req(), flag::UAR_PAGE_INDEX, cap(), true, 15, 63),
            Err(EINVAL)
        );
        // Rings past C's int: EINVAL (2^31 - 1 bytes at most).
        let big = with(&|r| {
            r.rq_wqe_count = 1 << 20;
            r.rq_wqe_shift = 11;
        });
        assert_eq!(big, Err(EINVAL));
        // C's order: the receive ring, the send count, the UAR, then the send count's power.
        let order = with(&|r| {
            r.flags = 0;
            r.sq_wqe_count = 48;
        });
        assert_eq!(order, Err(ENOMEM));
        let order = with(&|r| {
            r.flags = 0;
            r.sq_wqe_count = 1 << 16;
        });
        assert_eq!(order, Err(EINVAL));
        let order = with(&|r| {
            r.flags = 0;
            r.rq_wqe_shift = 3;
        });
        assert_eq!(order, Err(EINVAL));
    }

    #[test]
    fn vendor_flags_each_bit() {
        // Signature, the UAR flags, the scatter-to-CQE hints (dropped): taken.
        let f = flag::SIGNATURE | flag::BFREG_INDEX | flag::UAR_PAGE_INDEX;
        assert_eq!(vendor_flags(f | flag::ALLOW_SCATTER_CQE), Ok(f));
        assert_eq!(vendor_flags(0), Ok(0));
        // DCI, DCT and every bit C does not know (2, 6, 7, 9, 11 on): EINVAL.
        for bit in [2, 4, 5, 6, 7, 9, 11, 12, 13, 20, 31] {
            assert_eq!(vendor_flags(1 << bit), Err(EINVAL));
            assert_eq!(vendor_flags(flag::UAR_PAGE_INDEX | 1 << bit), Err(EINVAL));
        }
        // CQE version 0 requests shorter than uidx: the default index.
        assert_eq!(user_index(0, REQ_UIDX_END - 1, 5), Ok(DEFAULT_UIDX));
        assert_eq!(user_index(1, REQ_UIDX_END - 1, 5), Err(EINVAL));
        assert_eq!(user_index(1, REQ_UIDX_END, 0xff_fffe), Ok(0xff_fffe));
    }

    #[test]
    fn user_index_as_c() {
        assert_eq!(user_index(1, REQ_SIZE, 5), Ok(5));
        assert_eq!(user_index(1, REQ_SIZE, DEFAULT_UIDX), Err(EINVAL));
        assert_eq!(user_index(1, REQ_SIZE, 1 << 24), Err(EINVAL));
        assert_eq!(user_index(0, REQ_SIZE, DEFAULT_UIDX), Ok(DEFAULT_UIDX));
        assert_eq!(user_index(0, REQ_SIZE, 5), Err(EINVAL));
    }
}
