// SPDX-License-Identifier: GPL-2.0

//! The 64-byte completion queue entry, decoded from its bytes (C's `mlx5_cqe64` and
//! `mlx5_err_cqe` of `include/linux/mlx5/device.h`), and what `mlx5_ib`'s poll makes of it:
//! ownership (C's `next_cqe_sw`), the completed operation of a requester CQE
//! (`handle_good_req`) and the status of an error CQE (`mlx5_handle_error_cqe`).
//!
//! The entry is a `#[repr(C)]` layout ([`Cqe64`]); polling reads the ownership byte and then
//! only the fields the completion needs, each with one volatile load in the ring
//! ([`CqeFields`] over a view of the entry, in `cq.rs`), not a copy of the 64 bytes. It runs for
//! every completion, in atomic context.

use ib_core::verbs::wr::{WcOpcode, WcStatus};
use kernel::prelude::*;
use zerocopy_derive::Immutable;

/// Size of a CQE (the driver creates CQs of 64-byte entries only).
pub(crate) const CQE_SIZE: usize = 64;

/// `op_own` of a CQE the device has not written yet (`MLX5_CQE_INVALID << 4`, as C's
/// `init_cq_frag_buf`).
pub(crate) const CQE_INIT_OP_OWN: u8 = 0xf0;

/// Byte offset of `op_own` in a CQE.
pub(crate) const OP_OWN: usize = 0x3f;

/// CQE opcodes (the high nibble of `op_own`, `MLX5_CQE_*`).
pub(crate) mod op {
    /// Requester completion.
    pub(crate) const REQ: u8 = 0;
    /// Responder: RDMA write with immediate.
    pub(crate) const RESP_WR_IMM: u8 = 1;
    /// Responder: send.
    pub(crate) const RESP_SEND: u8 = 2;
    /// Responder: send with immediate.
    pub(crate) const RESP_SEND_IMM: u8 = 3;
    /// Responder: send with invalidate.
    pub(crate) const RESP_SEND_INV: u8 = 4;
    /// The last entry of a resized CQ's old ring.
    pub(crate) const RESIZE_CQ: u8 = 5;
    /// Requester error.
    pub(crate) const REQ_ERR: u8 = 13;
    /// Responder error.
    pub(crate) const RESP_ERR: u8 = 14;
    /// Not written by the device.
    pub(crate) const INVALID: u8 = 15;
}

/// The fields of a CQE the poll path uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Cqe {
    /// CQE opcode (`op_own >> 4`).
    pub(crate) opcode: u8,
    /// Owner bit (`op_own & 1`).
    pub(crate) owner: bool,
    /// Bytes transferred (`byte_cnt`).
    pub(crate) byte_cnt: u32,
    /// Immediate data as a number (`immediate`, big-endian on the wire).
    pub(crate) imm: u32,
    /// The local QP (`sop_drop_qpn & 0xffffff`).
    pub(crate) qpn: u32,
    /// The send opcode of a requester CQE (`sop_drop_qpn >> 24`).
    pub(crate) send_opcode: u8,
    /// The WQE index (`wqe_counter`).
    pub(crate) wqe_counter: u16,
    /// Source QP (`flags_rqpn & 0xffffff`).
    pub(crate) src_qp: u32,
    /// Service level (`flags_rqpn >> 24 & 0xf`).
    pub(crate) sl: u8,
    /// Source LID.
    pub(crate) slid: u16,
    /// The destination LID's path bits (`ml_path`).
    pub(crate) ml_path: u8,
    /// The receive buffer starts with a GRH (C's `IB_WC_GRH`: bits 28-29 of `flags_rqpn`).
    pub(crate) grh: bool,
    /// Error syndrome (`mlx5_err_cqe.syndrome`, byte 0x37).
    pub(crate) syndrome: u8,
    /// Vendor error syndrome (byte 0x36).
    pub(crate) vendor_syndrome: u8,
}

/// A 64-byte CQE as the device writes it (the fields `mlx5_ib` reads of C's `mlx5_cqe64` and
/// `mlx5_err_cqe`); multi-byte fields big-endian.
#[repr(C)]
#[derive(Clone, Copy, FromBytes, IntoBytes, Immutable)]
pub(crate) struct Cqe64 {
    rsvd0: [u8; 0x11],
    /// 0x11.
    pub(crate) ml_path: u8,
    rsvd1: [u8; 4],
    /// 0x16.
    pub(crate) slid: u16,
    /// 0x18.
    pub(crate) flags_rqpn: u32,
    rsvd2: [u8; 8],
    /// 0x24.
    pub(crate) imm: u32,
    rsvd3: u32,
    /// 0x2c.
    pub(crate) byte_cnt: u32,
    rsvd4: [u8; 6],
    /// 0x36.
    pub(crate) vendor_syndrome: u8,
    /// 0x37.
    pub(crate) syndrome: u8,
    /// 0x38.
    pub(crate) sop_drop_qpn: u32,
    /// 0x3c.
    pub(crate) wqe_counter: u16,
    signature: u8,
    /// 0x3f.
    pub(crate) op_own: u8,
}

const _: () = assert!(size_of::<Cqe64>() == CQE_SIZE);

/// The raw fields of a CQE, in host order, read one by one: from the ring in place (`cq.rs`)
/// or from a copy ([`Cqe64`]). What they mean is in the provided methods.
pub(crate) trait CqeFields {
    /// `op_own`.
    fn op_own(&self) -> u8;
    /// `sop_drop_qpn`.
    fn sop_drop_qpn(&self) -> u32;
    /// `wqe_counter`.
    fn wqe_counter(&self) -> u16;
    /// `byte_cnt`.
    fn byte_cnt(&self) -> u32;
    /// `immediate`.
    fn imm(&self) -> u32;
    /// `flags_rqpn`.
    fn flags_rqpn(&self) -> u32;
    /// `slid`.
    fn slid(&self) -> u16;
    /// `ml_path`.
    fn ml_path(&self) -> u8;
    /// The error syndrome and the vendor one.
    fn syndromes(&self) -> (u8, u8);

    /// The local QP (`sop_drop_qpn & 0xffffff`).
    #[inline]
    fn qpn(&self) -> u32 {
        self.sop_drop_qpn() & 0xff_ffff
    }

    /// The send opcode of a requester CQE (`sop_drop_qpn >> 24`).
    #[inline]
    fn send_opcode(&self) -> u8 {
        (self.sop_drop_qpn() >> 24) as u8
    }
}

impl CqeFields for Cqe64 {
    fn op_own(&self) -> u8 {
        self.op_own
    }
    fn sop_drop_qpn(&self) -> u32 {
        u32::from_be(self.sop_drop_qpn)
    }
    fn wqe_counter(&self) -> u16 {
        u16::from_be(self.wqe_counter)
    }
    fn byte_cnt(&self) -> u32 {
        u32::from_be(self.byte_cnt)
    }
    fn imm(&self) -> u32 {
        u32::from_be(self.imm)
    }
    fn flags_rqpn(&self) -> u32 {
        u32::from_be(self.flags_rqpn)
    }
    fn slid(&self) -> u16 {
        u16::from_be(self.slid)
    }
    fn ml_path(&self) -> u8 {
        self.ml_path
    }
    fn syndromes(&self) -> (u8, u8) {
        (self.syndrome, self.vendor_syndrome)
    }
}

/// Source QP, service level and whether the receive buffer starts with a GRH, from
/// `flags_rqpn` (C's `IB_WC_GRH`: bits 28-29).
#[inline]
pub(crate) fn split_flags_rqpn(flags_rqpn: u32) -> (u32, u8, bool) {
    (
        flags_rqpn & 0xff_ffff,
        ((flags_rqpn >> 24) & 0xf) as u8,
        (flags_rqpn >> 28) & 3 != 0,
    )
}

/// Decodes every field of a CQE (CQ cleaning and the KUnit suite; polling reads only what it
/// needs).
pub(crate) fn decode(c: &impl CqeFields) -> Cqe {
    let op_own = c.op_own();
    let (src_qp, sl, grh) = split_flags_rqpn(c.flags_rqpn());
    let (syndrome, vendor_syndrome) = c.syndromes();
    Cqe {
        opcode: op_own >> 4,
        owner: op_own & 1 != 0,
        byte_cnt: c.byte_cnt(),
        imm: c.imm(),
        qpn: c.qpn(),
        send_opcode: c.send_opcode(),
        wqe_counter: c.wqe_counter(),
        src_qp,
        sl,
        slid: c.slid(),
        ml_path: c.ml_path(),
        grh,
        syndrome,
        vendor_syndrome,
    }
}

/// Whether the CQE with `op_own` at consumer index `n` of a CQ of `entries` (a power of two)
/// belongs to software: written (not `INVALID`) and with the owner bit of the pass `n` is in.
pub(crate) fn sw_owned(op_own: u8, n: u32, entries: u32) -> bool {
    op_own >> 4 != op::INVALID && ((op_own & 1 != 0) == (n & entries != 0))
}

/// The operation a requester CQE completed, whether it carried immediate data, and whether its
/// byte count is reported (C's `handle_good_req`; reads report their length).
pub(crate) fn req_opcode(send_opcode: u8) -> (WcOpcode, bool) {
    use crate::qp::wqe::opcode;
    match send_opcode {
        opcode::RDMA_WRITE | opcode::RDMA_WRITE_IMM => (WcOpcode::RdmaWrite, false),
        opcode::RDMA_READ => (WcOpcode::RdmaRead, true),
        _ => (WcOpcode::Send, false),
    }
}

/// The status of an error CQE's syndrome (C's `mlx5_handle_error_cqe`).
pub(crate) fn error_status(syndrome: u8) -> WcStatus {
    match syndrome {
        0x01 => WcStatus::LocLenErr,
        0x02 => WcStatus::LocQpOpErr,
        0x04 => WcStatus::LocProtErr,
        0x05 => WcStatus::WrFlushErr,
        0x06 => WcStatus::MwBindErr,
        0x10 => WcStatus::BadRespErr,
        0x11 => WcStatus::LocAccessErr,
        0x12 => WcStatus::RemInvReqErr,
        0x13 => WcStatus::RemAccessErr,
        0x14 => WcStatus::RemOpErr,
        0x15 => WcStatus::RetryExcErr,
        0x16 => WcStatus::RnrRetryExcErr,
        0x22 => WcStatus::RemAbortErr,
        _ => WcStatus::GeneralErr,
    }
}

/// The receive operation of a responder CQE and whether it carries immediate data (C's
/// `handle_responder`).
pub(crate) fn resp_opcode(opcode: u8) -> (WcOpcode, bool) {
    match opcode {
        op::RESP_WR_IMM => (WcOpcode::RecvRdmaWithImm, true),
        op::RESP_SEND_IMM => (WcOpcode::Recv, true),
        _ => (WcOpcode::Recv, false),
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_cqe)]
mod tests {
    use super::*;

    /// The entry of image `b`.
    fn entry(b: &[u8; CQE_SIZE]) -> Cqe64 {
        zerocopy::transmute!(*b)
    }

    fn responder_image() -> [u8; CQE_SIZE] {
        let mut b = [0u8; CQE_SIZE];
        b[0x16..0x18].copy_from_slice(&0x0007u16.to_be_bytes());
        b[0x18..0x1c].copy_from_slice(&0x0300_0123u32.to_be_bytes());
        b[0x24..0x28].copy_from_slice(&[0, 0, 0x12, 0x34]);
        b[0x2c..0x30].copy_from_slice(&4096u32.to_be_bytes());
        b[0x38..0x3c].copy_from_slice(&0x0a00_0456u32.to_be_bytes());
        b[0x3c..0x3e].copy_from_slice(&0x0102u16.to_be_bytes());
        b[0x11] = 0x05;
        b[OP_OWN] = (op::RESP_SEND_IMM << 4) | 1;
        b
    }

    #[test]
    fn responder_cqe_fields() {
        let c = decode(&entry(&responder_image()));
        assert_eq!(
            c,
            Cqe {
                opcode: op::RESP_SEND_IMM,
                owner: true,
                byte_cnt: 4096,
                imm: 0x1234,
                qpn: 0x456,
                send_opcode: 0x0a,
                wqe_counter: 0x102,
                src_qp: 0x123,
                sl: 3,
                slid: 7,
                ml_path: 5,
                grh: false,
                syndrome: 0,
                vendor_syndrome: 0,
            }
        );
        assert_eq!(resp_opcode(c.opcode), (WcOpcode::Recv, true));
        assert_eq!(resp_opcode(op::RESP_SEND), (WcOpcode::Recv, false));
        assert_eq!(
            resp_opcode(op::RESP_WR_IMM),
            (WcOpcode::RecvRdmaWithImm, true)
        );
    }

    #[test]
    fn grh_flag_of_a_ud_receive() {
        let mut b = responder_image();
        // `flags_rqpn` with the GRH bits (1 << 28), SL 5, source QP 0x10203.
        b[0x18..0x1c].copy_from_slice(&0x1501_0203u32.to_be_bytes());
        let c = decode(&entry(&b));
        assert_eq!((c.grh, c.sl, c.src_qp), (true, 5, 0x1_0203));
        assert!(!decode(&entry(&responder_image())).grh);
    }

    #[test]
    fn error_cqe_syndromes_map_as_in_c() {
        let mut b = [0u8; CQE_SIZE];
        b[0x36] = 0x88;
        b[0x37] = 0x13;
        b[OP_OWN] = op::REQ_ERR << 4;
        let c = decode(&entry(&b));
        assert_eq!((c.opcode, c.owner), (op::REQ_ERR, false));
        assert_eq!((c.syndrome, c.vendor_syndrome), (0x13, 0x88));
        assert_eq!(error_status(c.syndrome), WcStatus::RemAccessErr);
        assert_eq!(error_status(0x01), WcStatus::LocLenErr);
        assert_eq!(error_status(0x05), WcStatus::WrFlushErr);
        assert_eq!(error_status(0x12), WcStatus::RemInvReqErr);
        assert_eq!(error_status(0x22), WcStatus::RemAbortErr);
        assert_eq!(error_status(0x99), WcStatus::GeneralErr);
    }

    #[test]
    fn ownership_follows_the_pass() {
        // A fresh entry is never software's.
        assert!(!sw_owned(CQE_INIT_OP_OWN, 0, 64));
        assert!(!sw_owned(CQE_INIT_OP_OWN, 64, 64));
        // First pass: owner 0; second pass: owner 1.
        assert!(sw_owned(op::REQ << 4, 3, 64));
        assert!(!sw_owned(op::REQ << 4, 67, 64));
        assert!(sw_owned((op::REQ << 4) | 1, 67, 64));
        assert!(!sw_owned((op::REQ << 4) | 1, 3, 64));
    }

    #[test]
    fn requester_opcodes() {
        assert_eq!(req_opcode(0x08), (WcOpcode::RdmaWrite, false));
        assert_eq!(req_opcode(0x09), (WcOpcode::RdmaWrite, false));
        assert_eq!(req_opcode(0x0a), (WcOpcode::Send, false));
        assert_eq!(req_opcode(0x0b), (WcOpcode::Send, false));
        assert_eq!(req_opcode(0x10), (WcOpcode::RdmaRead, true));
    }
}
