// SPDX-License-Identifier: GPL-2.0

//! The data-path write() commands a driver may ask for (C's `ib_uverbs_post_send` and
//! `ib_uverbs_req_notify_cq`, enabled by the driver's `uverbs_cmd_mask`): the software devices'
//! libraries (rxe, siw) write their queues in user space, then ask the kernel to start the send
//! queue (POST_SEND, usually without requests) and to arm a CQ's event (REQ_NOTIFY_CQ).
//!
//! Not as C: user address handles are not served (CREATE_AH is refused), so no handle names one
//! and a UD request is answered as C answers an unknown handle (`EINVAL`); SEND_WITH_INV, which
//! the core's work requests do not carry, is `EINVAL` too.

use crate::{
    uabi::{PostSendResp, ReqNotifyCq},
    write::bundle::Bundle,
};
use ib_core::{
    verbs::types::QpType,
    verbs::wr::{SendOpcode, SendWr, Sge},
};
use kernel::prelude::*;

/// `sizeof(struct ib_uverbs_post_send)`: response, qp_handle, wr_count, sge_count, wqe_size.
const POST_SEND_LEN: usize = 24;
/// `sizeof(struct ib_uverbs_send_wr)`.
const SEND_WR_LEN: usize = 56;
/// `sizeof(struct ib_uverbs_sge)`.
const SGE_LEN: usize = 16;
/// `IB_WR_SEND_WITH_INV`.
const WR_SEND_WITH_INV: u32 = 9;

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut v = [0u8; 4];
    v.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(v)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

/// The core's opcode of a user request's (`IB_UVERBS_WR_*`, C's numbers).
fn opcode(op: u32) -> Result<SendOpcode> {
    Ok(match op {
        0 => SendOpcode::RdmaWrite,
        1 => SendOpcode::RdmaWriteWithImm,
        2 => SendOpcode::Send,
        3 => SendOpcode::SendWithImm,
        4 => SendOpcode::RdmaRead,
        5 => SendOpcode::AtomicCmpAndSwp,
        6 => SendOpcode::AtomicFetchAndAdd,
        _ => return Err(EINVAL),
    })
}

/// One user request (`struct ib_uverbs_send_wr`, the first [`SEND_WR_LEN`] bytes of `w`) as
/// the core's, its scatter list `sges`; `ud` for a UD QP.
fn send_wr<'a>(w: &[u8], sges: &'a [Sge], ud: bool) -> Result<SendWr<'a>> {
    let op = u32_at(w, 12);
    if ud {
        // Only sends go on a UD QP (C checks this first); the AH handle then names nothing.
        return Err(EINVAL);
    }
    if op == WR_SEND_WITH_INV {
        return Err(EINVAL);
    }
    let opcode = opcode(op)?;
    let mut wr = SendWr {
        wr_id: u64_at(w, 0),
        opcode,
        sg_list: sges,
        send_flags: u32_at(w, 16),
        ..Default::default()
    };
    if matches!(
        opcode,
        SendOpcode::SendWithImm | SendOpcode::RdmaWriteWithImm
    ) {
        // The immediate data travels in network order in the ABI and as a number in the core.
        wr.imm_data = u32::from_be(u32_at(w, 20));
    }
    match opcode {
        SendOpcode::RdmaWrite | SendOpcode::RdmaWriteWithImm | SendOpcode::RdmaRead => {
            wr.remote_addr = u64_at(w, 24);
            wr.rkey = u32_at(w, 32);
        }
        SendOpcode::AtomicCmpAndSwp | SendOpcode::AtomicFetchAndAdd => {
            wr.remote_addr = u64_at(w, 24);
            wr.compare_add = u64_at(w, 32);
            wr.swap = u64_at(w, 40);
            wr.rkey = u32_at(w, 48);
        }
        _ => {}
    }
    Ok(wr)
}

/// POST_SEND (`struct ib_uverbs_post_send`, then `wr_count` requests of `wqe_size` bytes, then
/// `sge_count` scatter entries): the request's parts are checked as C's `uverbs_req_iter`
/// (`ENOSPC` when they do not fit, `EOPNOTSUPP` for non-zero bytes after them), then each
/// request; the QP's driver gets them (none, from rxe's and siw's libraries: it reads its
/// queue). Answers `bad_wr`: 0, or how many requests up to the first not posted.
pub(crate) fn post_send(b: &mut Bundle<'_>) -> Result {
    let mut head = [0u8; POST_SEND_LEN];
    if b.ucore.inlen() < POST_SEND_LEN {
        return Err(ENOSPC);
    }
    b.ucore.read_in_at(0, &mut head)?;
    let (handle, wr_count, sge_count, wqe_size) = (
        u32_at(&head, 8),
        u32_at(&head, 12),
        u32_at(&head, 16),
        u32_at(&head, 20),
    );
    let rest = b.ucore.inlen() - POST_SEND_LEN;
    let wqes_len = (wqe_size as usize).saturating_mul(wr_count as usize);
    if wqes_len > rest {
        return Err(ENOSPC);
    }
    let sgls_len = (sge_count as usize).saturating_mul(SGE_LEN);
    if sgls_len > rest - wqes_len {
        return Err(ENOSPC);
    }
    let sgls_at = POST_SEND_LEN + wqes_len;
    if !b.ucore.in_zero_from(sgls_at + sgls_len)? {
        return Err(EOPNOTSUPP);
    }
    if (wqe_size as usize) < SEND_WR_LEN {
        return Err(EINVAL);
    }
    let ucore = b.ucore;
    let mut resp = PostSendResp(Default::default());
    let posted = b.ufile.with_objects(|o| {
        let qp = o.qp(handle.into())?.qp()?;
        let ud = qp.qp_type() == QpType::Ud;
        // Every request's scatter entries, in order (`ib_uverbs_sge` is `ib_sge`'s layout).
        let mut sges = KVec::with_capacity(sge_count as usize, GFP_KERNEL)?;
        let mut wqes = KVec::with_capacity(wr_count as usize, GFP_KERNEL)?;
        let mut w = [0u8; SEND_WR_LEN];
        let mut used = 0usize;
        for i in 0..wr_count as usize {
            ucore.read_in_at(POST_SEND_LEN + i * wqe_size as usize, &mut w)?;
            let num_sge = u32_at(&w, 8) as usize;
            if used + num_sge > sge_count as usize {
                return Err(EINVAL);
            }
            for j in used..used + num_sge {
                let mut s = [0u8; SGE_LEN];
                ucore.read_in_at(sgls_at + j * SGE_LEN, &mut s)?;
                sges.push(
                    Sge {
                        addr: u64_at(&s, 0),
                        length: u32_at(&s, 8),
                        lkey: u32_at(&s, 12),
                    },
                    GFP_KERNEL,
                )?;
            }
            wqes.push((w, used, num_sge), GFP_KERNEL)?;
            used += num_sge;
        }
        let mut wrs = KVec::with_capacity(wqes.len(), GFP_KERNEL)?;
        for (w, at, n) in wqes.iter() {
            wrs.push(send_wr(w, &sges[*at..*at + *n], ud)?, GFP_KERNEL)?;
        }
        Ok(qp.post_send(&wrs))
    })?;
    let r = match posted {
        Ok(()) => Ok(()),
        Err(e) => {
            resp.bad_wr = e.first_bad as u32 + 1;
            Err(e.err)
        }
    };
    b.respond_as(&resp)?;
    r
}

/// REQ_NOTIFY_CQ (`struct ib_uverbs_req_notify_cq`: cq_handle, solicited_only): arms the CQ's
/// event. The driver's answer is not returned (C ignores it).
pub(crate) fn req_notify_cq(b: &mut Bundle<'_>) -> Result {
    let req = b.request_as::<ReqNotifyCq>()?;
    b.ufile.with_objects(|o| {
        let cq = o.cq(req.cq_handle.into())?;
        let _ = cq.req_notify(req.solicited_only != 0);
        Ok(())
    })
}
