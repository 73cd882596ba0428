// SPDX-License-Identifier: GPL-2.0

//! Work queue entries as the device reads them: the send WQE of an RC QP (control segment,
//! remote-address segment, data or inline segment) and the receive WQE (data segments), built
//! as bytes (C's `mlx5_wqe_ctrl_seg`, `mlx5_wqe_raddr_seg`, `mlx5_wqe_data_seg`,
//! `mlx5_wqe_inline_seg` of `include/linux/mlx5/qp.h`, filled as `wr.c` fills them).
//!
//! Plain functions over byte arrays: no allocation, usable in atomic context; the KUnit suite
//! checks their images byte for byte.

use ib_core::wr::{send_flags, SendOpcode, SendWr, Sge};
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
}

/// Builds the send WQE of RC work request `wr` at ring index `idx` of QP `qpn`:
/// `sig_bits` is the QP's `CTRL_CQ_UPDATE` when it signals every request, `fence` the
/// request's fence mode. Zero-length SGEs are skipped as in C. `EINVAL` for more SGEs than
/// `max_gs` or a WQE past [`MAX_SEND_WQE`]; inline data is refused with `EINVAL` (the
/// scatter list gives device addresses, which the CPU cannot copy from).
pub(crate) fn build_send(
    wr: &SendWr<'_>,
    idx: u16,
    qpn: u32,
    sig_bits: u8,
    fence: u8,
    max_gs: usize,
) -> Result<SendWqe> {
    if wr.sg_list.len() > max_gs || wr.send_flags & send_flags::INLINE != 0 {
        return Err(EINVAL);
    }
    let mut w = SendWqe {
        bytes: [0; MAX_SEND_WQE],
        len: SEG,
    };
    let op = mlx5_opcode(wr.opcode)?;
    match wr.opcode {
        SendOpcode::RdmaWrite | SendOpcode::RdmaWriteWithImm | SendOpcode::RdmaRead => {
            w.push(&raddr_seg(wr.remote_addr, wr.rkey))?;
        }
        _ => {}
    }
    for sge in wr.sg_list.iter().filter(|s| s.length != 0) {
        w.push(&data_seg(sge))?;
    }
    let imm = match wr.opcode {
        SendOpcode::SendWithImm | SendOpcode::RdmaWriteWithImm => wr.imm_data,
        _ => 0,
    };
    let mut fm_ce_se = sig_bits | fence;
    if wr.send_flags & send_flags::SIGNALED != 0 {
        fm_ce_se |= CTRL_CQ_UPDATE;
    }
    if wr.send_flags & send_flags::SOLICITED != 0 {
        fm_ce_se |= CTRL_SOLICITED;
    }
    let ctrl = ctrl_seg(idx, op, qpn, w.ds(), fm_ce_se, imm);
    w.bytes[..SEG].copy_from_slice(&ctrl);
    Ok(w)
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_wqe)]
mod tests {
    use super::*;

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
        let w = build_send(&wr, 5, 0x10, 0, 0, 1)?;
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
            0x10,
            CTRL_CQ_UPDATE,
            fence(wr.send_flags, 0),
            1,
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
    fn too_many_sges_or_inline_refused() {
        let sg = [Sge::default(); 2];
        let wr = SendWr {
            sg_list: &sg,
            ..SendWr::default()
        };
        assert_eq!(build_send(&wr, 0, 1, 0, 0, 1).err(), Some(EINVAL));
        // Zero-length SGEs are skipped: the WQE is the control segment alone.
        assert_eq!(build_send(&wr, 0, 1, 0, 0, 2).map(|w| w.len).ok(), Some(16));
        let wr = SendWr {
            send_flags: send_flags::INLINE,
            ..wr
        };
        assert_eq!(build_send(&wr, 0, 1, 0, 0, 2).err(), Some(EINVAL));
        // Atomics: EOPNOTSUPP, as C's mlx5_ib on RC QPs.
        let wr = SendWr {
            opcode: SendOpcode::AtomicFetchAndAdd,
            ..SendWr::default()
        };
        assert_eq!(build_send(&wr, 0, 1, 0, 0, 2).err(), Some(EOPNOTSUPP));
    }
}
