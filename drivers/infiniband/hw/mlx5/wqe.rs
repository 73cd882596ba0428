// SPDX-License-Identifier: GPL-2.0

//! Work queue entries as the device reads them: the send WQE of an RC or UD QP (control
//! segment, remote-address or datagram segment, data or inline segment) and the receive WQE
//! (data segments), built as bytes (C's `mlx5_wqe_ctrl_seg`, `mlx5_wqe_raddr_seg`,
//! `mlx5_wqe_datagram_seg`, `mlx5_wqe_data_seg`, `mlx5_wqe_inline_seg` of
//! `include/linux/mlx5/qp.h`, filled as `wr.c` fills them).
//!
//! Plain functions over byte arrays: no allocation, usable in atomic context; the KUnit suite
//! checks their images byte for byte.

use crate::ah::AV_SIZE;
use ib_core::verbs::wr::{send_flags, SendOpcode, SendWr, Sge};
use kernel::prelude::*;

/// Size of a send queue basic block (`MLX5_SEND_WQE_BB`).
pub(crate) const SEND_WQE_BB: usize = 64;

/// Size of a segment unit (the `ds` count is in 16-byte units).
pub(crate) const SEG: usize = 16;

/// Largest send WQE the driver builds: C caps an RC QP's scatter list so that control,
/// remote address and data segments fit in 512 bytes (`get_send_sge`).
pub(crate) const MAX_SEND_WQE: usize = 512;

/// Send opcodes of the control segment (`MLX5_OPCODE_*`).
pub(crate) mod opcode {
    /// RDMA write.
    pub(crate) const RDMA_WRITE: u8 = 0x08;
    /// RDMA write with immediate.
    pub(crate) const RDMA_WRITE_IMM: u8 = 0x09;
    /// Send.
    pub(crate) const SEND: u8 = 0x0a;
    /// Send with immediate.
    pub(crate) const SEND_IMM: u8 = 0x0b;
    /// RDMA read.
    pub(crate) const RDMA_READ: u8 = 0x10;
}

/// `fm_ce_se`: generate a CQE (`MLX5_WQE_CTRL_CQ_UPDATE`).
pub(crate) const CTRL_CQ_UPDATE: u8 = 2 << 2;
/// `fm_ce_se`: solicited event (`MLX5_WQE_CTRL_SOLICITED`).
pub(crate) const CTRL_SOLICITED: u8 = 1 << 1;
/// `fm_ce_se` fence modes (`MLX5_FENCE_MODE_*`).
pub(crate) const FENCE_MODE_FENCE: u8 = 2 << 5;
/// Fence after a small-fence request.
pub(crate) const FENCE_MODE_SMALL_AND_FENCE: u8 = 4 << 5;
/// The byte count flag of an inline segment (`MLX5_INLINE_SEG`).
pub(crate) const INLINE_SEG: u32 = 0x8000_0000;
/// The key of the data segment that ends a short receive scatter list (`MLX5_INVALID_LKEY`).
pub(crate) const INVALID_LKEY: u32 = 0x100;
/// The destination QP flag of a datagram segment (`MLX5_EXTENDED_UD_AV`).
pub(crate) const EXTENDED_UD_AV: u32 = 0x8000_0000;

/// The control segment opcode of a send work request (C's `mlx5_ib_opcode`); `EOPNOTSUPP` for
/// atomics, which C's `mlx5_ib_post_send` refuses on RC QPs ("Atomic operations are not
/// supported yet").
pub(crate) fn mlx5_opcode(op: SendOpcode) -> Result<u8> {
    Ok(match op {
        SendOpcode::RdmaWrite => opcode::RDMA_WRITE,
        SendOpcode::RdmaWriteWithImm => opcode::RDMA_WRITE_IMM,
        SendOpcode::Send => opcode::SEND,
        SendOpcode::SendWithImm => opcode::SEND_IMM,
        SendOpcode::RdmaRead => opcode::RDMA_READ,
        SendOpcode::AtomicCmpAndSwp | SendOpcode::AtomicFetchAndAdd => return Err(EOPNOTSUPP),
    })
}

/// The control segment: WQE index and opcode, QP number and size in 16-byte units, the
/// completion/solicited/fence byte and the immediate data (big-endian, as it goes on the wire).
pub(crate) fn ctrl_seg(idx: u16, opcode: u8, qpn: u32, ds: u8, fm_ce_se: u8, imm: u32) -> [u8; 16] {
    let mut s = [0u8; 16];
    s[0..4].copy_from_slice(&((u32::from(idx) << 8) | u32::from(opcode)).to_be_bytes());
    s[4..8].copy_from_slice(&((qpn << 8) | u32::from(ds)).to_be_bytes());
    s[11] = fm_ce_se;
    s[12..16].copy_from_slice(&imm.to_be_bytes());
    s
}

/// The remote-address segment of an RDMA request.
pub(crate) fn raddr_seg(raddr: u64, rkey: u32) -> [u8; 16] {
    let mut s = [0u8; 16];
    s[0..8].copy_from_slice(&raddr.to_be_bytes());
    s[8..12].copy_from_slice(&rkey.to_be_bytes());
    s
}

/// A data segment (C's `set_data_ptr_seg`).
pub(crate) fn data_seg(sge: &Sge) -> [u8; 16] {
    let mut s = [0u8; 16];
    s[0..4].copy_from_slice(&sge.length.to_be_bytes());
    s[4..8].copy_from_slice(&sge.lkey.to_be_bytes());
    s[8..16].copy_from_slice(&sge.addr.to_be_bytes());
    s
}

/// The data segment ending a receive scatter list shorter than the WQE (zero length, the
/// invalid key).
pub(crate) fn recv_terminator() -> [u8; 16] {
    let mut s = [0u8; 16];
    s[4..8].copy_from_slice(&INVALID_LKEY.to_be_bytes());
    s
}

/// The datagram segment of a UD send (C's `set_datagram_seg`): the AH's address vector with
/// the destination QP (and the extended-AV flag) and the Q_Key of the work request.
pub(crate) fn datagram_seg(av: &[u8; AV_SIZE], remote_qpn: u32, qkey: u32) -> [u8; AV_SIZE] {
    let mut s = *av;
    s[0..4].copy_from_slice(&qkey.to_be_bytes());
    s[8..12].copy_from_slice(&(remote_qpn | EXTENDED_UD_AV).to_be_bytes());
    s
}

/// The header of an inline segment carrying `len` bytes (they follow it; the segment is
/// padded to 16 bytes).
pub(crate) fn inline_header(len: u32) -> [u8; 4] {
    (len | INLINE_SEG).to_be_bytes()
}

/// The fence mode of a send work request after a request that left `next_fence` (C's choice
/// in `mlx5_ib_post_send`: only memory registrations set a next fence, so far always 0).
pub(crate) fn fence(flags: u32, next_fence: u8) -> u8 {
    if flags & send_flags::FENCE != 0 {
        if next_fence != 0 {
            FENCE_MODE_SMALL_AND_FENCE
        } else {
            FENCE_MODE_FENCE
        }
    } else {
        next_fence
    }
}

/// A send WQE built on the stack: its bytes and its size.
pub(crate) struct SendWqe {
    /// The WQE's bytes (only `len` are meaningful).
    pub(crate) bytes: [u8; MAX_SEND_WQE],
    /// Size in bytes (a multiple of 16).
    pub(crate) len: usize,
}

impl SendWqe {
    /// An empty WQE buffer. A QP keeps one and builds every WQE in it ([`build_send_into`]):
    /// only the bytes a WQE uses are written, as C writes its segments straight into the ring,
    /// instead of zeroing and returning a fresh buffer per request.
    pub(crate) fn new() -> Self {
        Self {
            bytes: [0; MAX_SEND_WQE],
            len: 0,
        }
    }

    /// The WQE's size in 16-byte units.
    pub(crate) fn ds(&self) -> u8 {
        (self.len / SEG) as u8
    }

    /// Basic blocks the WQE takes in the ring.
    pub(crate) fn blocks(&self) -> usize {
        self.len.div_ceil(SEND_WQE_BB)
    }

    fn push(&mut self, seg: &[u8]) -> Result {
        let end = self.len.checked_add(seg.len()).ok_or(EINVAL)?;
        self.bytes
            .get_mut(self.len..end)
            .ok_or(EINVAL)?
            .copy_from_slice(seg);
        self.len = end;
        Ok(())
    }

    /// Appends an inline segment with `data` (C's `set_data_inl_seg`): the header with the
    /// byte count, the bytes right after it, padded to 16 bytes. The bytes may run over basic
    /// blocks: the WQE is copied into the ring block by block, wrapping at its end.
    /// `ENOMEM` past `max_inline` bytes, as C.
    fn push_inline(&mut self, data: &[&[u8]], max_inline: usize) -> Result {
        let mut inl = 0usize;
        for d in data {
            inl = inl.checked_add(d.len()).ok_or(ENOMEM)?;
        }
        if inl > max_inline {
            return Err(ENOMEM);
        }
        let start = self.len;
        let total = (inl + 4).next_multiple_of(SEG);
        let end = start.checked_add(total).ok_or(EINVAL)?;
        let seg = self.bytes.get_mut(start..end).ok_or(EINVAL)?;
        // The padding must not carry bytes of an earlier use of the buffer.
        seg.fill(0);
        seg.get_mut(..4)
            .ok_or(EINVAL)?
            .copy_from_slice(&inline_header(inl as u32));
        let mut at = 4;
        for d in data {
            let next = at + d.len();
            seg.get_mut(at..next).ok_or(EINVAL)?.copy_from_slice(d);
            at = next;
        }
        self.len = end;
        Ok(())
    }
}

/// What a QP gives [`build_send`] besides the work request.
#[derive(Clone, Copy)]
pub(crate) struct SendCtx<'a> {
    /// The QP number.
    pub(crate) qpn: u32,
    /// `CTRL_CQ_UPDATE` when the QP signals every request.
    pub(crate) sig_bits: u8,
    /// The request's fence mode.
    pub(crate) fence: u8,
    /// Data segments per request.
    pub(crate) max_gs: usize,
    /// Inline bytes per request.
    pub(crate) max_inline: usize,
    /// UD QPs: the address vector of the request's AH (`None` on RC).
    pub(crate) av: Option<&'a [u8; AV_SIZE]>,
}

/// Builds the send WQE of work request `wr` at ring index `idx` of the QP `ctx` describes.
/// Zero-length SGEs are skipped as in C. `EINVAL` for more SGEs than `max_gs`, a UD request
/// without a destination or a WQE past [`MAX_SEND_WQE`]; `ENOMEM` for more inline bytes than
/// `max_inline` (C's errno). With `INLINE`, the bytes come from `wr.inline_data` and the
/// scatter list is ignored (its addresses are device addresses the CPU cannot copy from).
#[cfg(CONFIG_KUNIT)]
pub(crate) fn build_send(wr: &SendWr<'_>, idx: u16, ctx: &SendCtx<'_>) -> Result<SendWqe> {
    let mut w = SendWqe::new();
    build_send_into(wr, idx, ctx, &mut w)?;
    Ok(w)
}

/// [`build_send`] into `w`, which may hold an earlier WQE: its first `len` bytes are the new
/// WQE's, the rest is stale.
pub(crate) fn build_send_into(
    wr: &SendWr<'_>,
    idx: u16,
    ctx: &SendCtx<'_>,
    w: &mut SendWqe,
) -> Result {
    let inline = wr.send_flags & send_flags::INLINE != 0;
    if !inline && wr.sg_list.len() > ctx.max_gs {
        return Err(EINVAL);
    }
    w.len = SEG;
    let op = mlx5_opcode(wr.opcode)?;
    if let Some(av) = ctx.av {
        let ud = wr.ud.as_ref().ok_or(EINVAL)?;
        w.push(&datagram_seg(av, ud.remote_qpn, ud.remote_qkey))?;
    } else {
        match wr.opcode {
            SendOpcode::RdmaWrite | SendOpcode::RdmaWriteWithImm | SendOpcode::RdmaRead => {
                w.push(&raddr_seg(wr.remote_addr, wr.rkey))?;
            }
            _ => {}
        }
    }
    if inline {
        w.push_inline(wr.inline_data, ctx.max_inline)?;
    } else {
        for sge in wr.sg_list.iter().filter(|s| s.length != 0) {
            w.push(&data_seg(sge))?;
        }
    }
    let imm = match wr.opcode {
        SendOpcode::SendWithImm | SendOpcode::RdmaWriteWithImm => wr.imm_data,
        _ => 0,
    };
    let mut fm_ce_se = ctx.sig_bits | ctx.fence;
    if wr.send_flags & send_flags::SIGNALED != 0 {
        fm_ce_se |= CTRL_CQ_UPDATE;
    }
    if wr.send_flags & send_flags::SOLICITED != 0 {
        fm_ce_se |= CTRL_SOLICITED;
    }
    let ctrl = ctrl_seg(idx, op, ctx.qpn, w.ds(), fm_ce_se, imm);
    w.bytes[..SEG].copy_from_slice(&ctrl);
    Ok(())
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_wqe)]
mod tests {
    use super::*;

    fn rc(qpn: u32, sig_bits: u8, fence: u8, max_gs: usize) -> SendCtx<'static> {
        SendCtx {
            qpn,
            sig_bits,
            fence,
            max_gs,
            max_inline: 0,
            av: None,
        }
    }

    #[test]
    fn control_segment_image() {
        let c = ctrl_seg(
            0x1234,
            opcode::SEND_IMM,
            0xabcdef,
            3,
            CTRL_CQ_UPDATE,
            0x1234,
        );
        assert_eq!(
            c,
            [0x00, 0x12, 0x34, 0x0b, 0xab, 0xcd, 0xef, 0x03, 0, 0, 0, 0x08, 0, 0, 0x12, 0x34]
        );
    }

    #[test]
    fn address_and_data_segments() {
        assert_eq!(
            raddr_seg(0x0102_0304_0506_0708, 0xa0b0c0d0),
            [1, 2, 3, 4, 5, 6, 7, 8, 0xa0, 0xb0, 0xc0, 0xd0, 0, 0, 0, 0]
        );
        let sge = Sge {
            addr: 0x1122_3344_5566_7788,
            length: 4096,
            lkey: 0x0000_0501,
        };
        assert_eq!(
            data_seg(&sge),
            [0, 0, 0x10, 0, 0, 0, 5, 1, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        );
        assert_eq!(
            recv_terminator(),
            [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(inline_header(20), [0x80, 0, 0, 20]);
    }

    #[test]
    fn rdma_write_wqe_and_flags() -> Result {
        let sg = [Sge {
            addr: 0x1000,
            length: 64,
            lkey: 0x42,
        }];
        let wr = SendWr {
            wr_id: 9,
            opcode: SendOpcode::RdmaWrite,
            sg_list: &sg,
            send_flags: send_flags::SIGNALED | send_flags::SOLICITED,
            imm_data: 0x55,
            remote_addr: 0x2000,
            rkey: 0x77,
            ..SendWr::default()
        };
        let w = build_send(&wr, 5, &rc(0x10, 0, 0, 1))?;
        assert_eq!((w.len, w.ds(), w.blocks()), (48, 3, 1));
        // No immediate on a plain write; CQ update and solicited set.
        assert_eq!(
            &w.bytes[..16],
            &[0, 0, 5, 0x08, 0, 0, 0x10, 3, 0, 0, 0, 0x0a, 0, 0, 0, 0]
        );
        assert_eq!(&w.bytes[16..32], &raddr_seg(0x2000, 0x77));
        assert_eq!(&w.bytes[32..48], &data_seg(&sg[0]));
        // Unsignalled send with immediate on a QP signalling everything, fenced.
        let wr = SendWr {
            opcode: SendOpcode::SendWithImm,
            send_flags: send_flags::FENCE,
            ..wr
        };
        let w = build_send(
            &wr,
            0xffff,
            &rc(0x10, CTRL_CQ_UPDATE, fence(wr.send_flags, 0), 1),
        )?;
        assert_eq!(
            &w.bytes[..16],
            &[0, 0xff, 0xff, 0x0b, 0, 0, 0x10, 2, 0, 0, 0, 0x48, 0, 0, 0, 0x55]
        );
        assert_eq!(fence(send_flags::FENCE, 1 << 5), FENCE_MODE_SMALL_AND_FENCE);
        assert_eq!(fence(0, 0), 0);
        Ok(())
    }

    #[test]
    fn too_many_sges_or_atomics_refused() {
        let sg = [Sge::default(); 2];
        let wr = SendWr {
            sg_list: &sg,
            ..SendWr::default()
        };
        assert_eq!(build_send(&wr, 0, &rc(1, 0, 0, 1)).err(), Some(EINVAL));
        // Zero-length SGEs are skipped: the WQE is the control segment alone.
        assert_eq!(
            build_send(&wr, 0, &rc(1, 0, 0, 2)).map(|w| w.len).ok(),
            Some(16)
        );
        // Atomics: EOPNOTSUPP, as C's mlx5_ib on RC QPs.
        let wr = SendWr {
            opcode: SendOpcode::AtomicFetchAndAdd,
            ..SendWr::default()
        };
        assert_eq!(build_send(&wr, 0, &rc(1, 0, 0, 2)).err(), Some(EOPNOTSUPP));
    }

    #[test]
    fn datagram_segment_image() -> Result {
        // An AV with SL 3, LID 0x0102 and a GRH (sgid index 1, flow label 5).
        let mut av = [0u8; AV_SIZE];
        av[12] = 0x03;
        av[14..16].copy_from_slice(&[0x01, 0x02]);
        av[28..32].copy_from_slice(&[0x40, 0x10, 0, 5]);
        av[47] = 0xee;
        let d = datagram_seg(&av, 0x00_0123, 0x1111_1111);
        let mut want = av;
        want[0..4].copy_from_slice(&[0x11, 0x11, 0x11, 0x11]);
        // The destination QP with the extended-AV bit (C's `MLX5_EXTENDED_UD_AV`).
        want[8..12].copy_from_slice(&[0x80, 0x00, 0x01, 0x23]);
        assert_eq!(d, want);
        // A UD send needs its destination.
        let sg = [Sge {
            addr: 0x9000,
            length: 256,
            lkey: 7,
        }];
        let ah_less = SendWr {
            sg_list: &sg,
            send_flags: send_flags::SIGNALED,
            ..SendWr::default()
        };
        let ctx = SendCtx {
            av: Some(&av),
            ..rc(0x42, 0, 0, 4)
        };
        // No destination on a UD QP: EINVAL.
        assert_eq!(build_send(&ah_less, 0, &ctx).err(), Some(EINVAL));
        Ok(())
    }

    #[test]
    fn inline_segment_image_and_limit() -> Result {
        let a = [0xa5u8; 20];
        let b = [0x5au8; 50];
        let parts: [&[u8]; 2] = [&a, &b];
        let sg = [Sge {
            addr: 0xdead_0000,
            length: 4096,
            lkey: 1,
        }];
        let wr = SendWr {
            opcode: SendOpcode::RdmaWrite,
            sg_list: &sg,
            send_flags: send_flags::INLINE,
            remote_addr: 0x1000,
            rkey: 9,
            inline_data: &parts,
            ..SendWr::default()
        };
        let ctx = SendCtx {
            max_inline: 70,
            ..rc(3, 0, 0, 1)
        };
        let w = build_send(&wr, 1, &ctx)?;
        // Control, remote address, then 4 + 70 bytes padded to 80: 112 bytes over two basic
        // blocks (the scatter list is ignored).
        assert_eq!((w.len, w.ds(), w.blocks()), (112, 7, 2));
        assert_eq!(&w.bytes[32..36], &[0x80, 0, 0, 70]);
        assert_eq!(&w.bytes[36..56], &a);
        assert_eq!(&w.bytes[56..106], &b);
        assert_eq!(&w.bytes[106..112], &[0u8; 6]);
        // The second block starts in the inline bytes: a WQE at the last slot of the ring
        // continues at slot 0 with them.
        assert_eq!(&w.bytes[64..106], &b[8..]);
        // One byte more than max_inline: ENOMEM, as C's set_data_inl_seg.
        let ctx = SendCtx {
            max_inline: 69,
            ..ctx
        };
        assert_eq!(build_send(&wr, 1, &ctx).err(), Some(ENOMEM));
        Ok(())
    }
}
