// SPDX-License-Identifier: GPL-2.0

//! Work queue sizing of a kernel RC or UD QP, as C's `set_rq_size`, `calc_send_wqe` and
//! `calc_sq_size` compute it: the receive WQE stride and count, the send WQE size in basic
//! blocks, how many requests, SGEs and inline bytes fit, and the errno past a device cap.

use crate::qp::wqe::{MAX_SEND_WQE, SEG, SEND_WQE_BB};
use ib_core::verbs::types::QpCap;
use kernel::prelude::*;

/// The device caps the sizing checks (from the HCA's general capabilities).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// `log_max_qp_sz`: largest WQE count, as a power of two.
    pub(crate) log_max_qp_sz: u32,
    /// `max_wqe_sz_sq`: largest send WQE in bytes.
    pub(crate) max_wqe_sz_sq: u32,
    /// `max_wqe_sz_rq`: largest receive WQE in bytes.
    pub(crate) max_wqe_sz_rq: u32,
}

/// The receive queue's shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RqSize {
    /// WQEs in the ring (a power of two; 0 without a receive queue).
    pub(crate) wqe_cnt: u32,
    /// log2 of the WQE stride in bytes.
    pub(crate) wqe_shift: u32,
    /// Data segments per WQE.
    pub(crate) max_gs: u32,
}

/// The send queue's shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SqSize {
    /// Basic blocks in the ring (a power of two; 0 without a send queue).
    pub(crate) wqe_cnt: u32,
    /// Data segments per request.
    pub(crate) max_gs: u32,
    /// Requests that may be outstanding.
    pub(crate) max_post: u32,
    /// Inline bytes per request.
    pub(crate) max_inline: u32,
    /// Bytes of the ring.
    pub(crate) bytes: u32,
}

/// Send WQE overhead of an RC QP (C's `sq_overhead`): the control segment and the larger of
/// atomic + remote address and UMR control + mkey + inline UMR threshold.
const RC_SQ_OVERHEAD: u32 = 16 + 116;
/// Send WQE overhead of a UC QP: the control segment and the larger of a remote-address
/// segment and a UMR's control and mkey segments (C's `sq_overhead`).
const UC_SQ_OVERHEAD: u32 = 16 + 112;
/// Send WQE overhead of a UD QP: the control and datagram segments.
const UD_SQ_OVERHEAD: u32 = 16 + 48;

/// The transport a send queue is sized for (C's `sq_overhead` and `get_send_sge` differ).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SendKind {
    /// Reliable connected.
    Rc,
    /// Unreliable connected (user QPs only: kernel UC QPs are not made).
    Uc,
    /// Unreliable datagram.
    Ud,
}

impl SendKind {
    /// C's `sq_overhead`.
    pub(crate) fn overhead(self) -> u32 {
        match self {
            SendKind::Rc => RC_SQ_OVERHEAD,
            SendKind::Uc => UC_SQ_OVERHEAD,
            SendKind::Ud => UD_SQ_OVERHEAD,
        }
    }
}
/// `sizeof(struct mlx5_wqe_inline_seg)`.
const INLINE_SEG_HDR: u32 = 4;

/// The receive queue of a QP with `cap` (C's `set_rq_size` for a kernel QP without a WQE
/// signature). `EINVAL` for more WRs than `log_max_qp_sz` allows or a WQE past
/// `max_wqe_sz_rq`.
pub(crate) fn rq_size(cap: &QpCap, limits: &Limits) -> Result<RqSize> {
    if u64::from(cap.max_recv_wr) > 1u64 << limits.log_max_qp_sz.min(32) {
        return Err(EINVAL);
    }
    // C rounds 0 up as 1 would be (a QP without receive SGEs gets a 16-byte stride).
    let wqe_size = (cap.max_recv_sge.max(1))
        .checked_mul(SEG as u32)
        .and_then(|s| s.checked_next_power_of_two())
        .ok_or(EINVAL)?;
    let wq_size = cap
        .max_recv_wr
        .max(1)
        .checked_next_power_of_two()
        .and_then(|n| n.checked_mul(wqe_size))
        .ok_or(EINVAL)?
        .max(SEND_WQE_BB as u32);
    if wqe_size > limits.max_wqe_sz_rq {
        return Err(EINVAL);
    }
    let wqe_shift = wqe_size.trailing_zeros();
    Ok(RqSize {
        wqe_cnt: wq_size.checked_div(wqe_size).ok_or(EINVAL)?,
        wqe_shift,
        max_gs: (1 << wqe_shift) / SEG as u32,
    })
}

/// The send WQE size of a `kind` QP with `cap` (C's `calc_send_wqe`).
pub(crate) fn send_wqe_size(cap: &QpCap, kind: SendKind) -> Result<u32> {
    let overhead = kind.overhead();
    let inl = if cap.max_inline_data != 0 {
        overhead
            .checked_add(INLINE_SEG_HDR)
            .and_then(|s| s.checked_add(cap.max_inline_data))
            .ok_or(EINVAL)?
    } else {
        0
    };
    let size = cap
        .max_send_sge
        .checked_mul(SEG as u32)
        .and_then(|s| s.checked_add(overhead))
        .ok_or(EINVAL)?;
    inl.max(size)
        .checked_next_multiple_of(SEND_WQE_BB as u32)
        .ok_or(EINVAL)
}

/// The send queue of a `kind` QP with `cap` (C's `calc_sq_size`): all zero without send WRs.
/// `EINVAL` for a WQE past `max_wqe_sz_sq`, `ENOMEM` for a ring past `log_max_qp_sz` or fewer
/// SGEs than asked. This driver builds a WQE in [`MAX_SEND_WQE`] bytes: a UD or inline QP
/// whose WQE would be larger is refused with `EINVAL`, and the inline bytes are bounded by it
/// (RC scatter lists are bounded by it in C already).
pub(crate) fn sq_size(cap: &QpCap, limits: &Limits, kind: SendKind) -> Result<SqSize> {
    if cap.max_send_wr == 0 {
        return Ok(SqSize::default());
    }
    let overhead = kind.overhead();
    let wqe_size = send_wqe_size(cap, kind)?;
    if wqe_size > limits.max_wqe_sz_sq {
        return Err(EINVAL);
    }
    let built = wqe_size.min(MAX_SEND_WQE as u32);
    if built < wqe_size && (kind == SendKind::Ud || cap.max_inline_data != 0) {
        return Err(EINVAL);
    }
    // `wqe_size` is at least the overhead rounded up to a basic block.
    let max_inline = built.saturating_sub(overhead + INLINE_SEG_HDR);
    let wq_size = cap
        .max_send_wr
        .checked_mul(wqe_size)
        .and_then(|s| s.checked_next_power_of_two())
        .ok_or(ENOMEM)?;
    let wqe_cnt = wq_size / SEND_WQE_BB as u32;
    if u64::from(wqe_cnt) > 1u64 << limits.log_max_qp_sz.min(32) {
        return Err(ENOMEM);
    }
    // C's `get_send_sge`, including its operator precedence in the second bound.
    let first = match kind {
        SendKind::Rc => wqe_size.min(512).saturating_sub(16 + 16) / SEG as u32,
        SendKind::Uc | SendKind::Ud => wqe_size.saturating_sub(overhead) / SEG as u32,
    };
    let max_gs = first.min(wqe_size.saturating_sub(overhead / SEG as u32));
    if max_gs < cap.max_send_sge {
        return Err(ENOMEM);
    }
    Ok(SqSize {
        wqe_cnt,
        max_gs,
        max_post: wq_size.checked_div(wqe_size).ok_or(EINVAL)?,
        max_inline,
        bytes: wq_size,
    })
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_wq_size)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        log_max_qp_sz: 15,
        max_wqe_sz_sq: 1024,
        max_wqe_sz_rq: 1024,
    };

    fn cap(send_wr: u32, recv_wr: u32, send_sge: u32, recv_sge: u32, inline: u32) -> QpCap {
        QpCap {
            max_send_wr: send_wr,
            max_recv_wr: recv_wr,
            max_send_sge: send_sge,
            max_recv_sge: recv_sge,
            max_inline_data: inline,
        }
    }

    #[test]
    fn uc_send_queues_as_c_sizes_them() -> Result {
        // C's UC overhead: the control segment and a UMR's control and mkey segments (128).
        assert_eq!(SendKind::Uc.overhead(), 128);
        // One SGE: 128 + 16 bytes round to 192; 200 inline bytes: 128 + 4 + 200 to 384.
        assert_eq!(send_wqe_size(&cap(1, 1, 1, 1, 0), SendKind::Uc)?, 192);
        assert_eq!(send_wqe_size(&cap(1, 1, 1, 1, 200), SendKind::Uc)?, 384);
        // The SGEs of a 192-byte WQE: (192 - 128) / 16, as C's `get_send_sge` for UC.
        let sq = sq_size(&cap(16, 1, 1, 1, 0), &LIMITS, SendKind::Uc)?;
        assert_eq!((sq.max_gs, sq.wqe_cnt), (4, 64));
        Ok(())
    }

    #[test]
    fn the_sample_clients_qp() -> Result {
        // 16 send WRs with one SGE: 132 + 16 bytes round to 192, 16 * 192 to 4096 bytes.
        let c = cap(16, 16, 1, 1, 0);
        assert_eq!(send_wqe_size(&c, SendKind::Rc)?, 192);
        let sq = sq_size(&c, &LIMITS, SendKind::Rc)?;
        assert_eq!(
            sq,
            SqSize {
                wqe_cnt: 64,
                max_gs: 10,
                max_post: 21,
                max_inline: 56,
                bytes: 4096,
            }
        );
        let rq = rq_size(&c, &LIMITS)?;
        assert_eq!(
            rq,
            RqSize {
                wqe_cnt: 16,
                wqe_shift: 4,
                max_gs: 1,
            }
        );
        Ok(())
    }

    #[test]
    fn rounding_and_inline() -> Result {
        // Three receive SGEs take a 64-byte stride; a single WR still fills a basic block.
        let rq = rq_size(&cap(1, 1, 1, 3, 0), &LIMITS)?;
        assert_eq!((rq.wqe_cnt, rq.wqe_shift, rq.max_gs), (1, 6, 4));
        let rq = rq_size(&cap(1, 5, 1, 1, 0), &LIMITS)?;
        assert_eq!((rq.wqe_cnt, rq.wqe_shift), (8, 4));
        // Inline data decides the WQE when it is larger than the scatter list.
        assert_eq!(send_wqe_size(&cap(1, 1, 1, 1, 200), SendKind::Rc)?, 384);
        let sq = sq_size(&cap(3, 1, 1, 1, 200), &LIMITS, SendKind::Rc)?;
        assert_eq!(
            (sq.max_inline, sq.bytes, sq.wqe_cnt, sq.max_post),
            (248, 2048, 32, 5)
        );
        // No send WRs: no send queue.
        assert_eq!(
            sq_size(&cap(0, 1, 1, 1, 0), &LIMITS, SendKind::Rc)?,
            SqSize::default()
        );
        Ok(())
    }

    #[test]
    fn ud_sizing_as_c() -> Result {
        // The sample's UD QP: 16 WRs of one SGE; 64 + 16 bytes round to 128.
        let c = cap(16, 16, 1, 1, 0);
        assert_eq!(send_wqe_size(&c, SendKind::Ud)?, 128);
        assert_eq!(
            sq_size(&c, &LIMITS, SendKind::Ud)?,
            SqSize {
                wqe_cnt: 32,
                max_gs: 4,
                max_post: 16,
                max_inline: 60,
                bytes: 2048,
            }
        );
        // Inline data past the scatter list: 64 + 4 + 100 round to 192.
        let sq = sq_size(&cap(2, 1, 1, 1, 100), &LIMITS, SendKind::Ud)?;
        assert_eq!((sq.max_inline, sq.max_gs, sq.bytes), (124, 8, 512));
        Ok(())
    }

    #[test]
    fn caps_give_cs_errnos() {
        let small = Limits {
            log_max_qp_sz: 6,
            max_wqe_sz_sq: 256,
            max_wqe_sz_rq: 32,
        };
        // Too many receive WRs, or a receive WQE too large: EINVAL.
        assert_eq!(rq_size(&cap(1, 65, 1, 1, 0), &small).err(), Some(EINVAL));
        assert_eq!(rq_size(&cap(1, 1, 1, 3, 0), &small).err(), Some(EINVAL));
        // A send WQE too large: EINVAL; a ring too long: ENOMEM.
        assert_eq!(
            sq_size(&cap(1, 1, 16, 1, 0), &small, SendKind::Rc).err(),
            Some(EINVAL)
        );
        assert_eq!(
            sq_size(&cap(64, 1, 1, 1, 0), &small, SendKind::Rc).err(),
            Some(ENOMEM)
        );
        // 30 SGEs fit a 512-byte bound only up to (512 - 32) / 16 = 30.
        assert!(sq_size(&cap(1, 1, 30, 1, 0), &LIMITS, SendKind::Rc).is_ok());
        assert_eq!(
            sq_size(&cap(1, 1, 31, 1, 0), &LIMITS, SendKind::Rc).err(),
            Some(ENOMEM)
        );
    }
}
