// SPDX-License-Identifier: GPL-2.0

//! Work queue entries as the device reads them: the send WQE of an RC or UD QP (control
//! segment, remote-address or datagram segment, data or inline segment) and the receive WQE
//! (data segments), as typed `#[repr(C)]` segments of 16 bytes (C's `mlx5_wqe_ctrl_seg`,
//! `mlx5_wqe_raddr_seg`, `mlx5_wqe_datagram_seg`, `mlx5_wqe_data_seg`, `mlx5_wqe_inline_seg` of
//! `include/linux/mlx5/qp.h`, filled as `wr.c` fills them). Their fields hold the big-endian
//! image the device reads.
//!
//! A send WQE is written segment by segment into a [`WqeSink`]: the send ring itself (in
//! place, one volatile store per segment, as C writes its segments straight into the ring), or
//! a byte image for the KUnit suite, which checks the images byte for byte. No allocation,
//! usable in atomic context.

use crate::ah::AV_SIZE;
use ib_core::verbs::wr::{send_flags, SendOpcode, SendWr, Sge};
use kernel::prelude::*;
use mlx5_core::auxdev::WqeUnit;
use zerocopy_derive::Immutable;

/// Size of a send queue basic block (`MLX5_SEND_WQE_BB`).
pub(crate) const SEND_WQE_BB: usize = 64;

/// Size of a segment unit (the `ds` count is in 16-byte units).
pub(crate) const SEG: usize = 16;

/// Segment units per basic block.
pub(crate) const UNITS_PER_BB: usize = SEND_WQE_BB / SEG;

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

/// A 16-byte segment of a WQE, stored as one unit with a volatile store: plain old data
/// whose bytes are its image.
pub(crate) trait Seg: WqeUnit + FromBytes {}

/// The control segment (`mlx5_wqe_ctrl_seg`); fields big-endian.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub(crate) struct CtrlSeg {
    opmod_idx_opcode: u32,
    qpn_ds: u32,
    signature: u8,
    rsvd: [u8; 2],
    fm_ce_se: u8,
    imm: u32,
}
impl Seg for CtrlSeg {}
impl WqeUnit for CtrlSeg {}

impl CtrlSeg {
    /// Its first 8 bytes, what the send doorbell carries (in memory order).
    pub(crate) fn first8(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(self.opmod_idx_opcode.as_bytes());
        b[4..].copy_from_slice(self.qpn_ds.as_bytes());
        b
    }
}

/// The remote-address segment (`mlx5_wqe_raddr_seg`); fields big-endian.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub(crate) struct RaddrSeg {
    raddr: u64,
    rkey: u32,
    rsvd: u32,
}
impl Seg for RaddrSeg {}
impl WqeUnit for RaddrSeg {}

/// A data segment (`mlx5_wqe_data_seg`); fields big-endian.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub(crate) struct DataSeg {
    byte_count: u32,
    lkey: u32,
    addr: u64,
}
impl Seg for DataSeg {}
impl WqeUnit for DataSeg {}

/// 16 bytes of a segment longer than one unit or of bytes copied as they are: a part of the
/// datagram segment (the AH's address vector), or of an inline segment.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub(crate) struct Chunk(pub(crate) [u8; SEG]);
impl Seg for Chunk {}
impl WqeUnit for Chunk {}

const _: () = assert!(
    size_of::<CtrlSeg>() == SEG
        && size_of::<RaddrSeg>() == SEG
        && size_of::<DataSeg>() == SEG
        && size_of::<Chunk>() == SEG
);

/// The control segment opcode of a send work request (C's `mlx5_ib_opcode`); `EOPNOTSUPP` for
/// atomics, which C's `mlx5_ib_post_send` refuses on RC QPs ("Atomic operations are not
/// supported yet"), and for the fast-registration opcodes (local invalidation, send with
/// invalidate, registration), which this driver does not make MRs for yet.
pub(crate) fn mlx5_opcode(op: SendOpcode) -> Result<u8> {
    Ok(match op {
        SendOpcode::RdmaWrite => opcode::RDMA_WRITE,
        SendOpcode::RdmaWriteWithImm => opcode::RDMA_WRITE_IMM,
        SendOpcode::Send => opcode::SEND,
        SendOpcode::SendWithImm => opcode::SEND_IMM,
        SendOpcode::RdmaRead => opcode::RDMA_READ,
        SendOpcode::AtomicCmpAndSwp
        | SendOpcode::AtomicFetchAndAdd
        | SendOpcode::LocalInv
        | SendOpcode::SendWithInv
        | SendOpcode::RegMr => return Err(EOPNOTSUPP),
    })
}

/// The control segment: WQE index and opcode, QP number and size in 16-byte units, the
/// completion/solicited/fence byte and the immediate data (big-endian, as it goes on the wire).
#[inline]
pub(crate) fn ctrl_seg(idx: u16, opcode: u8, qpn: u32, ds: u8, fm_ce_se: u8, imm: u32) -> CtrlSeg {
    CtrlSeg {
        opmod_idx_opcode: ((u32::from(idx) << 8) | u32::from(opcode)).to_be(),
        qpn_ds: ((qpn << 8) | u32::from(ds)).to_be(),
        signature: 0,
        rsvd: [0; 2],
        fm_ce_se,
        imm: imm.to_be(),
    }
}

/// The first 8 bytes of a prepared WQE's control segment (`w0`, in memory order as a word) for
/// ring index `idx` of QP `qpn`: the opcode and the size kept, the index and the QP number
/// written (the rest of the segment does not change from post to post).
#[inline(always)]
pub(crate) fn restamp_ctrl(w0: u64, idx: u16, qpn: u32) -> u64 {
    let b = w0.to_le_bytes();
    u64::from_le_bytes(ctrl_seg(idx, b[3], qpn, b[7], 0, 0).first8())
}

/// The remote-address segment of an RDMA request.
#[inline]
pub(crate) fn raddr_seg(raddr: u64, rkey: u32) -> RaddrSeg {
    RaddrSeg {
        raddr: raddr.to_be(),
        rkey: rkey.to_be(),
        rsvd: 0,
    }
}

/// A data segment (C's `set_data_ptr_seg`).
#[inline]
pub(crate) fn data_seg(sge: &Sge) -> DataSeg {
    DataSeg {
        byte_count: sge.length.to_be(),
        lkey: sge.lkey.to_be(),
        addr: sge.addr.to_be(),
    }
}

/// The data segment ending a receive scatter list shorter than the WQE (zero length, the
/// invalid key).
#[inline]
pub(crate) fn recv_terminator() -> DataSeg {
    DataSeg {
        byte_count: 0,
        lkey: INVALID_LKEY.to_be(),
        addr: 0,
    }
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

/// Where the 16-byte units of a send WQE go: the send ring, in place (`qp_rings`), or a byte
/// image ([`SendWqe`], for the KUnit suite).
pub(crate) trait WqeSink {
    /// Stores `seg` as unit `unit` (0: the control segment) of the WQE. `EINVAL` if it cannot.
    fn put<S: Seg>(&mut self, unit: usize, seg: S) -> Result;
}

/// A send WQE built as bytes, for the KUnit suite: its image and its size.
#[cfg(CONFIG_KUNIT)]
pub(crate) struct SendWqe {
    /// The WQE's bytes (only `len` are meaningful).
    pub(crate) bytes: [u8; MAX_SEND_WQE],
    /// Size in bytes (a multiple of 16).
    pub(crate) len: usize,
}

#[cfg(CONFIG_KUNIT)]
impl SendWqe {
    /// The WQE's size in 16-byte units.
    pub(crate) fn ds(&self) -> u8 {
        (self.len / SEG) as u8
    }

    /// Basic blocks the WQE takes in the ring.
    pub(crate) fn blocks(&self) -> usize {
        self.len.div_ceil(SEND_WQE_BB)
    }
}

#[cfg(CONFIG_KUNIT)]
impl WqeSink for SendWqe {
    fn put<S: Seg>(&mut self, unit: usize, seg: S) -> Result {
        self.bytes
            .get_mut(unit * SEG..(unit + 1) * SEG)
            .ok_or(EINVAL)?
            .copy_from_slice(seg.as_bytes());
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

/// A send WQE written: its size in 16-byte units and its control segment.
#[derive(Clone, Copy)]
pub(crate) struct Built {
    /// Size in 16-byte units (C's `ds`).
    pub(crate) units: usize,
    /// The control segment (unit 0).
    pub(crate) ctrl: CtrlSeg,
}

impl Built {
    /// Basic blocks the WQE takes in the ring.
    #[inline]
    pub(crate) fn blocks(&self) -> usize {
        self.units.div_ceil(UNITS_PER_BB)
    }
}

/// Builds the send WQE of work request `wr` at ring index `idx` of the QP `ctx` describes as
/// bytes (the KUnit suite's view of [`build_send_into`]).
#[cfg(CONFIG_KUNIT)]
pub(crate) fn build_send(wr: &SendWr<'_>, idx: u16, ctx: &SendCtx<'_>) -> Result<SendWqe> {
    let mut w = SendWqe {
        bytes: [0; MAX_SEND_WQE],
        len: 0,
    };
    let b = build_send_into(wr, idx, ctx, &mut w)?;
    w.len = b.units * SEG;
    Ok(w)
}

/// Writes the send WQE of work request `wr` at ring index `idx` of the QP `ctx` describes into
/// `sink`, segment by segment, the control segment last. Zero-length SGEs are skipped as in C.
/// Everything is checked before the first segment is written: `EINVAL` for more SGEs than
/// `max_gs`, a UD request without a destination or a WQE past [`MAX_SEND_WQE`]; `ENOMEM` for
/// more inline bytes than `max_inline` (C's errno); `EOPNOTSUPP` for atomics. With `INLINE`,
/// the bytes come from `wr.inline_data` and the scatter list is ignored (its addresses are
/// device addresses the CPU cannot copy from).
#[inline]
pub(crate) fn build_send_into<W: WqeSink>(
    wr: &SendWr<'_>,
    idx: u16,
    ctx: &SendCtx<'_>,
    sink: &mut W,
) -> Result<Built> {
    let inline = wr.send_flags & send_flags::INLINE != 0;
    if !inline && wr.sg_list.len() > ctx.max_gs {
        return Err(EINVAL);
    }
    let op = mlx5_opcode(wr.opcode)?;
    let raddr = ctx.av.is_none()
        && matches!(
            wr.opcode,
            SendOpcode::RdmaWrite | SendOpcode::RdmaWriteWithImm | SendOpcode::RdmaRead
        );
    let ud = match ctx.av {
        Some(av) => Some((av, wr.ud.as_ref().ok_or(EINVAL)?)),
        None => None,
    };
    // The size first: nothing is written for a request refused.
    let mut units = 1 + if ud.is_some() { AV_SIZE / SEG } else { 0 } + usize::from(raddr);
    let mut inl = 0usize;
    if inline {
        for d in wr.inline_data {
            inl = inl.checked_add(d.len()).ok_or(ENOMEM)?;
        }
        if inl > ctx.max_inline {
            return Err(ENOMEM);
        }
        units += (inl + 4).div_ceil(SEG);
    } else {
        units += wr.sg_list.iter().filter(|s| s.length != 0).count();
    }
    if units * SEG > MAX_SEND_WQE {
        return Err(EINVAL);
    }
    let mut at = 1;
    if let Some((av, ud)) = ud {
        let d = datagram_seg(av, ud.remote_qpn, ud.remote_qkey);
        for c in d.chunks_exact(SEG) {
            sink.put(at, Chunk(c.try_into().map_err(|_| EINVAL)?))?;
            at += 1;
        }
    }
    if raddr {
        sink.put(at, raddr_seg(wr.remote_addr, wr.rkey))?;
        at += 1;
    }
    if inline {
        put_inline(sink, at, wr.inline_data, inl)?;
    } else {
        for sge in wr.sg_list.iter().filter(|s| s.length != 0) {
            sink.put(at, data_seg(sge))?;
            at += 1;
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
    let ctrl = ctrl_seg(idx, op, ctx.qpn, units as u8, fm_ce_se, imm);
    sink.put(0, ctrl)?;
    Ok(Built { units, ctrl })
}

/// Writes an inline segment of `inl` bytes from `data` at unit `at` (C's `set_data_inl_seg`):
/// the header with the byte count, the bytes right after it, padded with zeroes to 16 bytes.
/// The units may run over basic blocks (and wrap at the ring's end, the sink's business).
fn put_inline<W: WqeSink>(sink: &mut W, mut at: usize, data: &[&[u8]], inl: usize) -> Result {
    let mut chunk = Chunk::default();
    chunk.0[..4].copy_from_slice(&inline_header(inl as u32));
    let mut fill = 4;
    for d in data {
        let mut rest: &[u8] = d;
        while let Some((part, tail)) = rest.split_at_checked(rest.len().min(SEG - fill)) {
            if part.is_empty() {
                break;
            }
            chunk
                .0
                .get_mut(fill..fill + part.len())
                .ok_or(EINVAL)?
                .copy_from_slice(part);
            fill += part.len();
            rest = tail;
            if fill == SEG {
                sink.put(at, chunk)?;
                at += 1;
                chunk = Chunk::default();
                fill = 0;
            }
        }
    }
    if fill != 0 {
        sink.put(at, chunk)?;
    }
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
            c.as_bytes(),
            [0x00, 0x12, 0x34, 0x0b, 0xab, 0xcd, 0xef, 0x03, 0, 0, 0, 0x08, 0, 0, 0x12, 0x34]
        );
    }

    #[test]
    fn address_and_data_segments() {
        assert_eq!(
            raddr_seg(0x0102_0304_0506_0708, 0xa0b0c0d0).as_bytes(),
            [1, 2, 3, 4, 5, 6, 7, 8, 0xa0, 0xb0, 0xc0, 0xd0, 0, 0, 0, 0]
        );
        let sge = Sge {
            addr: 0x1122_3344_5566_7788,
            length: 4096,
            lkey: 0x0000_0501,
        };
        assert_eq!(
            data_seg(&sge).as_bytes(),
            [0, 0, 0x10, 0, 0, 0, 5, 1, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        );
        assert_eq!(
            recv_terminator().as_bytes(),
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
        assert_eq!(&w.bytes[16..32], raddr_seg(0x2000, 0x77).as_bytes());
        assert_eq!(&w.bytes[32..48], data_seg(&sg[0]).as_bytes());
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
