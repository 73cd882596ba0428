// SPDX-License-Identifier: GPL-2.0

//! Firmware layouts and commands of the kernel verbs objects (for `mlx5_ib`): protection
//! domains (ALLOC_PD/DEALLOC_PD), transport domains of user contexts
//! (ALLOC_TRANSPORT_DOMAIN/DEALLOC_TRANSPORT_DOMAIN), memory keys (CREATE_MKEY/DESTROY_MKEY with the mkey context),
//! completion queues (CREATE_CQ/DESTROY_CQ with the CQ context, MODIFY_CQ to resize), queue pairs (CREATE_QP, the
//! state transitions, QUERY_QP, DESTROY_QP with the QP context) and the receive memory pools
//! C's `mlx5_ib` makes kernel SRQs of (CREATE_RMP/MODIFY_RMP/DESTROY_RMP with the RMP context
//! and its linked-list work queue).
//!
//! Offsets are bits from the start of the command's input or output, as `mlx5_ifc.h` puts them
//! (`tools/dev/ifc_layout.py` prints them). The page lists that follow CREATE_CQ's, MODIFY_CQ's
//! and CREATE_QP's fixed part (`pas`, at byte 0x110) are passed as the command's variable part.

use crate::ifc::{layout, Command, OutHeader};

/// Command opcodes: mlx5_core's, and the RMP commands only `mlx5_ib` issues.
mod op {
    pub(crate) use crate::cmd::status::op::*;
    /// `MLX5_CMD_OP_CREATE_RMP`.
    pub(crate) const CREATE_RMP: u16 = 0x90c;
    /// `MLX5_CMD_OP_MODIFY_RMP`.
    pub(crate) const MODIFY_RMP: u16 = 0x90d;
    /// `MLX5_CMD_OP_DESTROY_RMP`.
    pub(crate) const DESTROY_RMP: u16 = 0x90e;
    /// `MLX5_CMD_OP_QUERY_RMP`.
    pub(crate) const QUERY_RMP: u16 = 0x90f;
    /// `MLX5_CMD_OP_ALLOC_TRANSPORT_DOMAIN`.
    pub(crate) const ALLOC_TRANSPORT_DOMAIN: u16 = 0x816;
    /// `MLX5_CMD_OP_DEALLOC_TRANSPORT_DOMAIN`.
    pub(crate) const DEALLOC_TRANSPORT_DOMAIN: u16 = 0x817;
    /// `MLX5_CMD_OP_ALLOC_Q_COUNTER`.
    pub(crate) const ALLOC_Q_COUNTER: u16 = 0x771;
    /// `MLX5_CMD_OP_DEALLOC_Q_COUNTER`.
    pub(crate) const DEALLOC_Q_COUNTER: u16 = 0x772;
    /// `MLX5_CMD_OP_QUERY_Q_COUNTER`.
    pub(crate) const QUERY_Q_COUNTER: u16 = 0x773;
}

/// `MLX5_SHARED_RESOURCE_UID`: the uid of objects every user context may use.
pub const SHARED_RESOURCE_UID: u64 = 0xffff;

/// `MLX5_RMPC_STATE_RDY`: an RMP that takes messages.
pub const RMPC_STATE_RDY: u64 = 1;

/// `qpc.rq_type` of a QP that receives from an SRQ (`MLX5_SRQ_RQ`).
pub const RQ_TYPE_SRQ: u64 = 1;

/// `MLX5_CQ_OPMOD_RESIZE`: MODIFY_CQ's op_mod for a new size and page list.
pub const CQ_OPMOD_RESIZE: u16 = 1;

/// Bits of MODIFY_CQ's `resize_field_select`: the context fields a resize sets
/// (`MLX5_MODIFY_CQ_MASK_LOG_SIZE`, `_PG_OFFSET`, `_PG_SIZE`).
pub mod cq_resize_select {
    /// `log_cq_size`.
    pub const LOG_SIZE: u64 = 1 << 0;
    /// `page_offset`.
    pub const PG_OFFSET: u64 = 1 << 1;
    /// `log_page_size`.
    pub const PG_SIZE: u64 = 1 << 2;
}

/// Byte offset of the page list (`pas`) in CREATE_CQ's, MODIFY_CQ's and CREATE_QP's input.
pub const PAS_OFFSET: usize = 0x110;

/// `MLX5_MKC_ACCESS_MODE_PA`: the mkey maps physical (bus) addresses one to one.
pub const MKC_ACCESS_MODE_PA: u64 = 0;
/// `MLX5_MKC_ACCESS_MODE_MTT`: the mkey maps through a list of pages (its translation table).
pub const MKC_ACCESS_MODE_MTT: u64 = 1;

/// `MLX5_QP_ST_RC`: the reliable-connected service type in `qpc.st`.
pub const QP_ST_RC: u64 = 0;

/// `MLX5_QP_ST_UC`: the unreliable-connected service type in `qpc.st`.
pub const QP_ST_UC: u64 = 1;
/// `MLX5_QP_ST_UD`: the unreliable-datagram service type in `qpc.st`.
pub const QP_ST_UD: u64 = 2;
/// `MLX5_QP_ST_QP0`: a port's subnet management QP.
pub const QP_ST_QP0: u64 = 7;
/// `MLX5_QP_ST_QP1`: a port's general services QP.
pub const QP_ST_QP1: u64 = 8;

/// `MLX5_QP_PM_MIGRATED` in `qpc.pm_state`.
pub const QP_PM_MIGRATED: u64 = 3;

/// Values of `qpc.state` (`MLX5_QP_STATE_*`), as QUERY_QP reports them.
pub mod qp_state {
    /// Reset.
    pub const RST: u64 = 0;
    /// Initialized.
    pub const INIT: u64 = 1;
    /// Ready to receive.
    pub const RTR: u64 = 2;
    /// Ready to send.
    pub const RTS: u64 = 3;
    /// Send queue error.
    pub const SQER: u64 = 4;
    /// Send queue drained.
    pub const SQD: u64 = 5;
    /// Error.
    pub const ERR: u64 = 6;
}

/// Bits of the modify commands' `opt_param_mask` (`MLX5_QP_OPTPAR_*`).
pub mod optpar {
    /// Alternate path.
    pub const ALT_ADDR_PATH: u32 = 1 << 0;
    /// Remote read enable.
    pub const RRE: u32 = 1 << 1;
    /// Remote atomic enable.
    pub const RAE: u32 = 1 << 2;
    /// Remote write enable.
    pub const RWE: u32 = 1 << 3;
    /// P_Key index.
    pub const PKEY_INDEX: u32 = 1 << 4;
    /// Q_Key.
    pub const Q_KEY: u32 = 1 << 5;
    /// Minimal RNR NAK timer.
    pub const RNR_TIMEOUT: u32 = 1 << 6;
    /// Primary address path.
    pub const PRIMARY_ADDR_PATH: u32 = 1 << 7;
    /// Outstanding reads as initiator.
    pub const SRA_MAX: u32 = 1 << 8;
    /// Outstanding reads as responder.
    pub const RRA_MAX: u32 = 1 << 9;
    /// Path migration state.
    pub const PM_STATE: u32 = 1 << 10;
    /// Retry count.
    pub const RETRY_COUNT: u32 = 1 << 12;
    /// RNR retry count.
    pub const RNR_RETRY: u32 = 1 << 13;
    /// ACK timeout.
    pub const ACK_TIMEOUT: u32 = 1 << 14;
    /// LAG TX port affinity.
    pub const LAG_TX_AFF: u32 = 1 << 15;
    /// Primary port.
    pub const PRI_PORT: u32 = 1 << 16;
}

layout! {
    /// ALLOC_Q_COUNTER's input.
    pub input AllocQCounterIn[16] {
        uid: 0x10, 16;
    }
    /// ALLOC_Q_COUNTER's output: the new set.
    pub output AllocQCounterOut[16] {
        counter_set_id: 0x58, 8;
    }
    /// DEALLOC_Q_COUNTER's input.
    pub input DeallocQCounterIn[16] {
        counter_set_id: 0x58, 8;
    }
    /// QUERY_Q_COUNTER's input.
    pub input QueryQCounterIn[32] {
        other_vport: 0x40, 1;
        vport_number: 0x50, 16;
        /// Zero the set once read.
        clear: 0xc0, 1;
        aggregate: 0xc1, 1;
        counter_set_id: 0xf8, 8;
    }
    /// QUERY_Q_COUNTER's output: 32-bit big-endian counters at the byte offsets of
    /// `query_q_counter_out` (`mlx5_ib`'s tables name them).
    pub output QueryQCounterOut[0x100] {
        rx_write_requests: 0x80, 32;
    }
    /// ALLOC_PD's output.
    pub output AllocPdOut[16] {
        pd: 0x48, 24;
    }
    /// DEALLOC_PD's input.
    pub input DeallocPdIn[16] {
        pd: 0x48, 24;
    }
    /// ALLOC_TRANSPORT_DOMAIN's output.
    pub output AllocTransportDomainOut[16] {
        transport_domain: 0x48, 24;
    }
    /// DEALLOC_TRANSPORT_DOMAIN's input.
    pub input DeallocTransportDomainIn[16] {
        transport_domain: 0x48, 24;
    }
    /// CREATE_MKEY's input with the mkey context (`memory_key_mkey_entry` at byte 0x10).
    pub input CreateMkeyIn[0x110] {
        pg_access: 0x60, 1;
        /// The mkey starts free (not usable until a UMR enables it).
        free: 0x81, 1;
        /// UMR may change the mkey.
        umr_en: 0x90, 1;
        /// Translation entries that follow the context.
        translations_octword_actual_size: 0x300, 32;
        access_mode_4_2: 0x83, 3;
        ma_translation_mode: 0x9a, 2;
        a: 0x91, 1;
        rw: 0x92, 1;
        rr: 0x93, 1;
        lw: 0x94, 1;
        lr: 0x95, 1;
        access_mode_1_0: 0x96, 2;
        qpn: 0xa0, 24;
        mkey_7_0: 0xb8, 8;
        length64: 0xe0, 1;
        pd: 0xe8, 24;
        start_addr: 0x100, 64;
        len: 0x140, 64;
        translations_octword_size: 0x220, 32;
        log_page_size: 0x25a, 6;
    }
    /// CREATE_MKEY's output.
    pub output CreateMkeyOut[16] {
        mkey_index: 0x48, 24;
    }
    /// DESTROY_MKEY's input.
    pub input DestroyMkeyIn[16] {
        mkey_index: 0x48, 24;
    }
    /// CREATE_CQ's input with the CQ context (`cq_context` at byte 0x10); the page list follows.
    pub input CreateCqIn[0x110] {
        cqe_sz: 0x88, 3;
        cc: 0x8b, 1;
        oi: 0x8e, 1;
        cqe_comp_en: 0x91, 1;
        mini_cqe_res_format: 0x92, 2;
        page_offset: 0xd4, 6;
        log_cq_size: 0xe3, 5;
        uar_page: 0xe8, 24;
        cq_period: 0x104, 12;
        cq_max_count: 0x110, 16;
        c_eqn: 0x120, 32;
        log_page_size: 0x143, 5;
        dbr_addr: 0x240, 64;
    }
    /// CREATE_CQ's output.
    pub output CreateCqOut[16] {
        cqn: 0x48, 24;
    }
    /// DESTROY_CQ's input.
    pub input DestroyCqIn[16] {
        cqn: 0x48, 24;
    }
    /// MODIFY_CQ's input as a resize sends it: the CQ context at byte 0x10 as in CREATE_CQ,
    /// which fields count in `resize_field_select`; the new page list follows.
    pub input ModifyCqIn[0x110] {
        op_mod: 0x30, 16;
        cqn: 0x48, 24;
        resize_field_select: 0x60, 32;
        cqe_sz: 0x88, 3;
        page_offset: 0xd4, 6;
        log_cq_size: 0xe3, 5;
        log_page_size: 0x143, 5;
    }
    /// The input of CREATE_QP and of the modify commands that carry a QP context
    /// (RST2INIT_QP, INIT2INIT_QP, INIT2RTR_QP, RTR2RTS_QP, RTS2RTS_QP): the same positions in all of them (`qpn` is
    /// reserved in CREATE_QP). The context is at byte 0x18; CREATE_QP's page list follows.
    pub context QpCtxIn[0x110] {
        qpn: 0x48, 24;
        opt_param_mask: 0x80, 32;
        state: 0xc0, 4;
        st: 0xc8, 8;
        pm_state: 0xd3, 2;
        pd: 0xe8, 24;
        mtu: 0x100, 3;
        log_msg_max: 0x103, 5;
        log_rq_size: 0x109, 4;
        log_rq_stride: 0x10d, 3;
        no_sq: 0x110, 1;
        log_sq_size: 0x111, 4;
        ts_format: 0x118, 2;
        rlky: 0x11b, 1;
        /// The Q counter set the QP counts on (set at RST2INIT).
        counter_set_id: 0x120, 8;
        uar_page: 0x128, 24;
        user_index: 0x148, 24;
        log_page_size: 0x163, 5;
        remote_qpn: 0x168, 24;
        pkey_index: 0x190, 16;
        grh: 0x1a8, 1;
        mlid: 0x1a9, 7;
        rlid: 0x1b0, 16;
        ack_timeout: 0x1c0, 5;
        src_addr_index: 0x1c8, 8;
        stat_rate: 0x1d4, 4;
        hop_limit: 0x1d8, 8;
        tclass: 0x1e4, 8;
        flow_label: 0x1ec, 20;
        rgid_hi: 0x200, 64;
        rgid_lo: 0x240, 64;
        sl: 0x2a4, 4;
        vhca_port_num: 0x2a8, 8;
        log_ack_req_freq: 0x440, 4;
        log_sra_max: 0x448, 3;
        retry_count: 0x44d, 3;
        rnr_retry: 0x450, 3;
        fre: 0x454, 1;
        next_send_psn: 0x488, 24;
        cqn_snd: 0x4a8, 24;
        log_rra_max: 0x548, 3;
        atomic_mode: 0x54c, 4;
        rre: 0x550, 1;
        rwe: 0x551, 1;
        rae: 0x552, 1;
        page_offset: 0x554, 6;
        min_rnr_nak: 0x563, 5;
        next_rcv_psn: 0x568, 24;
        xrcd: 0x588, 24;
        cqn_rcv: 0x5a8, 24;
        dbr_addr: 0x5c0, 64;
        q_key: 0x600, 32;
        rq_type: 0x625, 3;
        srqn_rmpn_xrqn: 0x628, 24;
    }
    /// CREATE_QP's output.
    pub output CreateQpOut[16] {
        qpn: 0x48, 24;
    }
    /// CREATE_RMP's input: the RMP context at byte 0x20, its work queue (`wq`) at byte 0x50;
    /// the page list (at byte 0x110) is the variable part.
    pub input CreateRmpIn[0x110] {
        state: 0x108, 4;
        wq_type: 0x280, 4;
        page_offset: 0x2ab, 5;
        lwm: 0x2b0, 16;
        pd: 0x2c8, 24;
        dbr_addr: 0x300, 64;
        log_wq_stride: 0x38c, 4;
        log_wq_pg_sz: 0x393, 5;
        log_wq_sz: 0x39b, 5;
    }
    /// CREATE_RMP's output.
    pub output CreateRmpOut[16] {
        rmpn: 0x48, 24;
    }
    /// MODIFY_RMP's input: the RMP, its state, the field-select bit of the limit and the
    /// context's limit (`wq.lwm`).
    pub input ModifyRmpIn[0x110] {
        rmp_state: 0x40, 4;
        rmpn: 0x48, 24;
        bitmask_lwm: 0xbf, 1;
        state: 0x108, 4;
        lwm: 0x2b0, 16;
    }
    /// DESTROY_RMP's and QUERY_RMP's input.
    pub input DestroyRmpIn[16] {
        rmpn: 0x48, 24;
    }
    /// QUERY_RMP's output: the RMP context at byte 0x20, as in CREATE_RMP's input (its state
    /// and its work queue's limit).
    pub output QueryRmpOut[0x110] {
        state: 0x108, 4;
        lwm: 0x2b0, 16;
    }
    /// The input of the commands that only name a QP (DESTROY_QP, 2ERR_QP, 2RST_QP, QUERY_QP).
    pub input QpNumIn[16] {
        qpn: 0x48, 24;
    }
    /// The input of ATTACH_TO_MCG and DETACH_FROM_MCG: a UD QP and a multicast GID.
    pub input McgIn[32] {
        qpn: 0x48, 24;
        gid_hi: 0x80, 64;
        gid_lo: 0xc0, 64;
    }
    /// QUERY_QP's output, as far as the driver reads the QP context (at byte 0x18).
    pub output QueryQpOut[0x110] {
        state: 0xc0, 4;
        st: 0xc8, 8;
        pd: 0xe8, 24;
        mtu: 0x100, 3;
        remote_qpn: 0x168, 24;
        pkey_index: 0x190, 16;
        grh: 0x1a8, 1;
        mlid: 0x1a9, 7;
        rlid: 0x1b0, 16;
        ack_timeout: 0x1c0, 5;
        src_addr_index: 0x1c8, 8;
        stat_rate: 0x1d4, 4;
        hop_limit: 0x1d8, 8;
        tclass: 0x1e4, 8;
        flow_label: 0x1ec, 20;
        rgid_hi: 0x200, 64;
        rgid_lo: 0x240, 64;
        sl: 0x2a4, 4;
        vhca_port_num: 0x2a8, 8;
        log_sra_max: 0x448, 3;
        retry_count: 0x44d, 3;
        rnr_retry: 0x450, 3;
        next_send_psn: 0x488, 24;
        log_rra_max: 0x548, 3;
        rre: 0x550, 1;
        rwe: 0x551, 1;
        rae: 0x552, 1;
        min_rnr_nak: 0x563, 5;
        next_rcv_psn: 0x568, 24;
        q_key: 0x600, 32;
    }
}

crate::ifc::commands! {
    /// ALLOC_Q_COUNTER.
    AllocQCounter: ALLOC_Q_COUNTER, AllocQCounterIn => AllocQCounterOut;
    /// DEALLOC_Q_COUNTER.
    DeallocQCounter: DEALLOC_Q_COUNTER, DeallocQCounterIn => OutHeader;
    /// QUERY_Q_COUNTER.
    QueryQCounter: QUERY_Q_COUNTER, QueryQCounterIn => QueryQCounterOut;
    /// ALLOC_PD.
    AllocPd: ALLOC_PD, crate::ifc::PlainIn => AllocPdOut;
    /// DEALLOC_PD.
    DeallocPd: DEALLOC_PD, DeallocPdIn => OutHeader;
    /// ALLOC_TRANSPORT_DOMAIN (each user context has one).
    AllocTransportDomain: ALLOC_TRANSPORT_DOMAIN, crate::ifc::PlainIn => AllocTransportDomainOut;
    /// DEALLOC_TRANSPORT_DOMAIN.
    DeallocTransportDomain: DEALLOC_TRANSPORT_DOMAIN, DeallocTransportDomainIn => OutHeader;
    /// CREATE_MKEY (with no translation entries for a PA mkey).
    CreateMkey: CREATE_MKEY, CreateMkeyIn => CreateMkeyOut;
    /// DESTROY_MKEY.
    DestroyMkey: DESTROY_MKEY, DestroyMkeyIn => OutHeader;
    /// CREATE_CQ (the page list is the variable part).
    CreateCq: CREATE_CQ, CreateCqIn => CreateCqOut;
    /// DESTROY_CQ.
    DestroyCq: DESTROY_CQ, DestroyCqIn => OutHeader;
    /// MODIFY_CQ (a resize's page list is the variable part).
    ModifyCq: MODIFY_CQ, ModifyCqIn => OutHeader;
    /// CREATE_QP (the page list is the variable part).
    CreateQp: CREATE_QP, QpCtxIn => CreateQpOut;
    /// RST2INIT_QP.
    Rst2InitQp: RST2INIT_QP, QpCtxIn => OutHeader;
    /// INIT2INIT_QP.
    Init2InitQp: INIT2INIT_QP, QpCtxIn => OutHeader;
    /// INIT2RTR_QP.
    Init2RtrQp: INIT2RTR_QP, QpCtxIn => OutHeader;
    /// RTR2RTS_QP.
    Rtr2RtsQp: RTR2RTS_QP, QpCtxIn => OutHeader;
    /// RTS2RTS_QP.
    Rts2RtsQp: RTS2RTS_QP, QpCtxIn => OutHeader;
    /// 2ERR_QP.
    QpToErr: QP_2ERR, QpNumIn => OutHeader;
    /// 2RST_QP.
    QpToRst: QP_2RST, QpNumIn => OutHeader;
    /// QUERY_QP (the output's page list is not read).
    QueryQp: QUERY_QP, QpNumIn => QueryQpOut, out_len = 0x1d0;
    /// DESTROY_QP.
    DestroyQp: DESTROY_QP, QpNumIn => OutHeader;
    /// ATTACH_TO_MCG.
    AttachToMcg: ATTACH_TO_MCG, McgIn => OutHeader;
    /// DETACH_FROM_MCG.
    DetachFromMcg: DETACH_FROM_MCG, McgIn => OutHeader;
    /// CREATE_RMP (the page list is the variable part).
    CreateRmp: CREATE_RMP, CreateRmpIn => CreateRmpOut;
    /// MODIFY_RMP.
    ModifyRmp: MODIFY_RMP, ModifyRmpIn => OutHeader;
    /// DESTROY_RMP.
    DestroyRmp: DESTROY_RMP, DestroyRmpIn => OutHeader;
    /// QUERY_RMP (the output's page list is not read).
    QueryRmp: QUERY_RMP, DestroyRmpIn => QueryRmpOut;
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ifc_verbs)]
mod tests {
    use super::*;
    use crate::ifc::get_bits;
    use kernel::prelude::*;

    #[test]
    fn mkey_context_fields_sit_where_mlx5_ifc_puts_them() -> Result {
        let mut m = CreateMkeyIn::new();
        m.set_access_mode_1_0(MKC_ACCESS_MODE_PA)?;
        m.set_length64(1)?;
        m.set_lw(1)?;
        m.set_lr(1)?;
        m.set_rw(1)?;
        m.set_rr(1)?;
        m.set_pd(0x12)?;
        m.set_qpn(0xff_ffff)?;
        m.set_mkey_7_0(0xab)?;
        let b = m.as_bytes();
        // Byte 0x12 of the input holds umr_en, a, rw, rr, lw, lr, access_mode_1_0.
        assert_eq!(b[0x12], 0b0011_1100);
        assert_eq!(&b[0x14..0x18], &[0xff, 0xff, 0xff, 0xab]);
        assert_eq!(&b[0x1c..0x20], &[0x80, 0x00, 0x00, 0x12]);
        Ok(())
    }

    #[test]
    fn cq_and_qp_contexts() -> Result {
        let mut c = CreateCqIn::new();
        c.set_log_cq_size(7)?;
        c.set_uar_page(0x9)?;
        c.set_c_eqn(0x21)?;
        c.set_dbr_addr(0x1122_3344_5566_7788)?;
        let b = c.as_bytes();
        assert_eq!(&b[0x1c..0x20], &[7, 0, 0, 9]);
        assert_eq!(&b[0x24..0x28], &[0, 0, 0, 0x21]);
        assert_eq!(&b[0x48..0x50], &0x1122_3344_5566_7788u64.to_be_bytes());
        let mut m = ModifyCqIn::new();
        m.set_op_mod(CQ_OPMOD_RESIZE.into())?;
        m.set_cqn(0x42)?;
        m.set_resize_field_select(cq_resize_select::LOG_SIZE | cq_resize_select::PG_SIZE)?;
        m.set_log_cq_size(9)?;
        m.set_log_page_size(1)?;
        let b = m.as_bytes();
        assert_eq!(&b[0x04..0x0c], &[0, 0, 0, 1, 0, 0, 0, 0x42]);
        assert_eq!(&b[0x0c..0x10], &[0, 0, 0, 0b101]);
        assert_eq!(b[0x1c], 9);
        assert_eq!(b[0x28], 1);
        let mut q = QpCtxIn::new();
        q.set_st(QP_ST_RC)?;
        q.set_pm_state(QP_PM_MIGRATED)?;
        q.set_log_rq_size(4)?;
        q.set_log_rq_stride(0)?;
        q.set_log_sq_size(6)?;
        q.set_cqn_snd(0x401)?;
        q.set_cqn_rcv(0x402)?;
        q.set_vhca_port_num(1)?;
        q.set_remote_qpn(0x123)?;
        let b = q.as_bytes();
        assert_eq!(&b[0x18..0x1c], &[0x00, 0x00, 0x18, 0x00]);
        // log_rq_size in bits 1..5 of byte 0x21, log_sq_size in bits 1..5 of byte 0x22.
        assert_eq!((b[0x21], b[0x22]), (4 << 3, 6 << 3));
        assert_eq!(&b[0x94..0x98], &[0, 0, 0x04, 0x01]);
        assert_eq!(&b[0xb4..0xb8], &[0, 0, 0x04, 0x02]);
        assert_eq!(b[0x55], 1);
        assert_eq!(get_bits(b, 0x168, 24), 0x123);
        // The widest value refused: log_sq_size is 4 bits.
        assert_eq!(q.set_log_sq_size(16), Err(EINVAL));
        Ok(())
    }

    #[test]
    fn rmp_context_as_mlx5_ifc() -> Result {
        // The RMP's state at byte 0x21, its WQ at byte 0x50: lwm at 0x56, pd at 0x59, the
        // doorbell record at 0x60, the stride and size at 0x71 and 0x73.
        let mut c = CreateRmpIn::new();
        c.set_state(RMPC_STATE_RDY)?;
        c.set_lwm(4)?;
        c.set_pd(0x12)?;
        c.set_dbr_addr(0xabc0)?;
        c.set_log_wq_stride(6)?;
        c.set_log_wq_sz(5)?;
        let b = c.as_bytes();
        assert_eq!(b[0x21], 0x10);
        assert_eq!(&b[0x56..0x58], &[0, 4]);
        assert_eq!(&b[0x58..0x5c], &[0, 0, 0, 0x12]);
        assert_eq!(&b[0x60..0x68], &0xabc0u64.to_be_bytes());
        assert_eq!((b[0x71], b[0x73]), (6, 5));
        let mut m = ModifyRmpIn::new();
        m.set_rmp_state(RMPC_STATE_RDY)?;
        m.set_rmpn(0x33)?;
        m.set_bitmask_lwm(1)?;
        m.set_lwm(2)?;
        let b = m.as_bytes();
        assert_eq!(&b[0x08..0x0c], &[0x10, 0, 0, 0x33]);
        assert_eq!(b[0x17], 1);
        assert_eq!(&b[0x56..0x58], &[0, 2]);
        assert_eq!(
            (CreateRmp::OPCODE, ModifyRmp::OPCODE, DestroyRmp::OPCODE),
            (0x90c, 0x90d, 0x90e)
        );
        Ok(())
    }

    #[test]
    fn verbs_commands_carry_c_opcodes() {
        assert_eq!(AllocPd::OPCODE, 0x800);
        assert_eq!(CreateMkey::OPCODE, 0x200);
        assert_eq!(CreateCq::OPCODE, 0x400);
        assert_eq!(CreateQp::OPCODE, 0x500);
        assert_eq!(QpToErr::OPCODE, 0x507);
        assert_eq!(QpToRst::OPCODE, 0x50a);
        assert_eq!(QueryQp::OPCODE, 0x50b);
        assert_eq!(QueryQp::OUT_LEN, 0x1d0);
        assert_eq!(QpCtxIn::SIZE, PAS_OFFSET);
        assert_eq!(CreateCqIn::SIZE, PAS_OFFSET);
        assert_eq!(ModifyCqIn::SIZE, PAS_OFFSET);
        assert_eq!(ModifyCq::OPCODE, 0x403);
    }
}
