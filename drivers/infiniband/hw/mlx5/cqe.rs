// SPDX-License-Identifier: GPL-2.0

//! The 64-byte completion queue entry, decoded from its bytes (C's `mlx5_cqe64` and
//! `mlx5_err_cqe` of `include/linux/mlx5/device.h`), and what `mlx5_ib`'s poll makes of it:
//! ownership (C's `next_cqe_sw`), the completed operation of a requester CQE
//! (`handle_good_req`) and the status of an error CQE (`mlx5_handle_error_cqe`).
//!
//! Decoding reads bytes and big-endian words at fixed offsets (no bit-field accessors): it runs
//! for every completion, in atomic context.

use ib_core::{
    be::{get16, get32},
    verbs::wr::{WcOpcode, WcStatus},
};

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

/// Decodes a 64-byte CQE.
pub(crate) fn decode(b: &[u8; CQE_SIZE]) -> Cqe {
    let sop = get32(b, 0x38);
    let flags_rqpn = get32(b, 0x18);
    Cqe {
        opcode: b[OP_OWN] >> 4,
        owner: b[OP_OWN] & 1 != 0,
        byte_cnt: get32(b, 0x2c),
        imm: get32(b, 0x24),
        qpn: sop & 0xff_ffff,
        send_opcode: (sop >> 24) as u8,
        wqe_counter: get16(b, 0x3c),
        src_qp: flags_rqpn & 0xff_ffff,
        sl: ((flags_rqpn >> 24) & 0xf) as u8,
        slid: get16(b, 0x16),
        ml_path: b[0x11],
        grh: (flags_rqpn >> 28) & 3 != 0,
        syndrome: b[0x37],
        vendor_syndrome: b[0x36],
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
    use crate::wqe::opcode;
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
        let c = decode(&responder_image());
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
        let c = decode(&b);
        assert_eq!((c.grh, c.sl, c.src_qp), (true, 5, 0x1_0203));
        assert!(!decode(&responder_image()).grh);
    }

    #[test]
    fn error_cqe_syndromes_map_as_in_c() {
        let mut b = [0u8; CQE_SIZE];
        b[0x36] = 0x88;
        b[0x37] = 0x13;
        b[OP_OWN] = op::REQ_ERR << 4;
        let c = decode(&b);
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
