//! HCA capabilities: what the device can do (maximum) and what the driver chose (current), per
//! capability type, as QUERY_HCA_CAP returns them and SET_HCA_CAP changes them.
//!
//! The values describe a ConnectX-5 with InfiniBand ports and only the features the model
//! implements: every feature bit left at 0 tells the driver to skip that feature.

use super::{output, CmdError, CmdResult, Firmware, FirmwareConfig, Input};
use crate::command::Status;
use crate::ifc::{self, Field};
use log::debug;
use std::collections::BTreeMap;

/// Size of a capability page in QUERY/SET_HCA_CAP.
pub const CAP_SIZE: usize = 4096;
/// Byte offset of the capability in QUERY_HCA_CAP output and SET_HCA_CAP input.
const CAP_OFFSET: usize = 0x10;

/// Capability types.
pub mod kind {
    /// General device capabilities (`cmd_hca_cap`).
    pub const GENERAL: u8 = 0x0;
    /// Second page of general capabilities.
    pub const GENERAL_2: u8 = 0x20;
    /// Atomic operations (`atomic_caps`).
    pub const ATOMIC: u8 = 0x3;
}

/// Fields of the atomic capabilities (`atomic_caps`).
pub mod atomic {
    use crate::ifc::Field;
    /// Which operations: bit 0 compare-and-swap, bit 1 fetch-and-add.
    pub const OPERATIONS: Field = Field::new(0x90, 16);
    /// Operand sizes on RC QPs: bit 3 is 8 bytes.
    pub const SIZE_QP: Field = Field::new(0xb0, 16);
    /// Byte order of 8-byte operands in memory the driver chose: 0 big-endian, 1 host order.
    pub const REQ_8B_ENDIANNESS_MODE: Field = Field::new(0x40, 2);
    /// Whether host order (mode 1) is offered.
    pub const SUPPORTED_8B_ENDIANNESS_MODE_1: Field = Field::new(0x46, 1);
}

/// Fields of the general capabilities (`cmd_hca_cap`).
pub mod general {
    use crate::ifc::Field;
    pub const LOG_MAX_SRQ_SZ: Field = Field::new(0x80, 8);
    pub const LOG_MAX_QP_SZ: Field = Field::new(0x88, 8);
    pub const LOG_MAX_QP: Field = Field::new(0x9b, 5);
    pub const LOG_MAX_SRQ: Field = Field::new(0xab, 5);
    pub const LOG_MAX_CQ_SZ: Field = Field::new(0xc8, 8);
    pub const LOG_MAX_CQ: Field = Field::new(0xdb, 5);
    pub const LOG_MAX_EQ_SZ: Field = Field::new(0xe0, 8);
    pub const LOG_MAX_MKEY: Field = Field::new(0xea, 6);
    pub const LOG_MAX_EQ: Field = Field::new(0xfc, 4);
    pub const MAX_INDIRECTION: Field = Field::new(0x100, 8);
    pub const LOG_MAX_MRW_SZ: Field = Field::new(0x109, 7);
    pub const LOG_MAX_KLM_LIST_SIZE: Field = Field::new(0x11a, 6);
    pub const LOG_MAX_RA_REQ_QP: Field = Field::new(0x14a, 6);
    pub const LOG_MAX_RA_RES_QP: Field = Field::new(0x15a, 6);
    pub const GID_TABLE_SIZE: Field = Field::new(0x170, 16);
    pub const OUT_OF_SEQ_CNT: Field = Field::new(0x180, 1);
    pub const VPORT_COUNTERS: Field = Field::new(0x181, 1);
    pub const RETRANSMISSION_Q_COUNTERS: Field = Field::new(0x182, 1);
    pub const MAX_QP_CNT: Field = Field::new(0x186, 10);
    pub const CC_QUERY_ALLOWED: Field = Field::new(0x161, 1);
    pub const PCAM_REG: Field = Field::new(0x1aa, 1);
    pub const ENHANCED_ERROR_Q_COUNTERS: Field = Field::new(0x1b1, 1);
    pub const IB_VIRT: Field = Field::new(0x1a2, 1);
    pub const MAX_WQE_SZ_SQ: Field = Field::new(0x290, 16);
    pub const MAX_WQE_SZ_RQ: Field = Field::new(0x2b0, 16);
    pub const MAX_WQE_SZ_SQ_DC: Field = Field::new(0x2d0, 16);
    pub const QP_LATENCY_SENSITIVE_DISABLE: Field = Field::new(0x3b2, 1);
    pub const UMR_MODIFY_ENTITY_SIZE_DISABLED: Field = Field::new(0x207, 1);
    pub const PKEY_TABLE_SIZE: Field = Field::new(0x190, 16);
    pub const PORT_TYPE: Field = Field::new(0x1b6, 2);
    pub const NUM_PORTS: Field = Field::new(0x1b8, 8);
    pub const LOG_MAX_MSG: Field = Field::new(0x1c3, 5);
    pub const MAX_TC: Field = Field::new(0x1cc, 4);
    pub const STAT_RATE_SUPPORT: Field = Field::new(0x1e0, 16);
    pub const CQE_VERSION: Field = Field::new(0x1fc, 4);
    pub const CMDIF_CHECKSUM: Field = Field::new(0x210, 2);
    pub const ATOMIC: Field = Field::new(0x21e, 1);
    pub const CQ_RESIZE: Field = Field::new(0x221, 1);
    pub const XRC: Field = Field::new(0x23c, 1);
    pub const UD: Field = Field::new(0x23d, 1);
    pub const UC: Field = Field::new(0x23e, 1);
    pub const RC: Field = Field::new(0x23f, 1);
    pub const UAR_4K: Field = Field::new(0x240, 1);
    pub const LOG_PG_SZ: Field = Field::new(0x258, 8);
    pub const BF: Field = Field::new(0x260, 1);
    pub const DRIVER_VERSION: Field = Field::new(0x261, 1);
    pub const LOG_BF_REG_SIZE: Field = Field::new(0x26b, 5);
    pub const MAX_QP_MCG: Field = Field::new(0x2e7, 25);
    pub const LOG_MAX_MCG: Field = Field::new(0x318, 8);
    pub const LOG_MAX_TRANSPORT_DOMAIN: Field = Field::new(0x323, 5);
    pub const LOG_MAX_PD: Field = Field::new(0x32b, 5);
    pub const LOG_MAX_XRCD: Field = Field::new(0x33b, 5);
    pub const LOG_MAX_UCTX: Field = Field::new(0x463, 5);
    pub const LOG_UAR_PAGE_SZ: Field = Field::new(0x490, 16);
    pub const NUM_OF_UARS_PER_PAGE: Field = Field::new(0x520, 32);
}

/// Capability pages by type: maximum and current.
#[derive(Debug, Clone)]
pub struct Caps {
    max: BTreeMap<u8, Vec<u8>>,
    cur: BTreeMap<u8, Vec<u8>>,
}

impl Caps {
    /// The capabilities of a ConnectX-5 with `config.ports` InfiniBand ports.
    pub fn new(config: &FirmwareConfig) -> Self {
        let mut gen = vec![0u8; CAP_SIZE];
        let mut set = |f: Field, v: u64| ifc::set(&mut gen, f, v);
        use general::*;
        set(LOG_MAX_SRQ_SZ, 15);
        set(LOG_MAX_QP_SZ, 15);
        set(LOG_MAX_QP, 18);
        set(LOG_MAX_SRQ, 23);
        set(LOG_MAX_CQ_SZ, 22);
        set(LOG_MAX_CQ, 24);
        set(LOG_MAX_EQ_SZ, 22);
        set(LOG_MAX_MKEY, 24);
        set(LOG_MAX_EQ, 4);
        set(MAX_INDIRECTION, 4);
        set(LOG_MAX_MRW_SZ, 64);
        set(LOG_MAX_KLM_LIST_SIZE, 16);
        set(LOG_MAX_RA_REQ_QP, 4);
        set(LOG_MAX_RA_RES_QP, 4);
        // Table sizes are encoded: GID 0 -> 8 entries... (see the drivers' tables); 128 P_Keys = 1.
        set(GID_TABLE_SIZE, 0);
        // Q counters (`q_counters.rs`): sets of per-QP event counters, with the retransmission
        // and enhanced error groups a ConnectX-5 has (the C mlx5_ib then shows every Q counter
        // name in hw_counters). No congestion statistics (QUERY_CONG_STATISTICS), no PCAM/PPCNT
        // registers and no vport counters (PMA MADs go to MAD_IFC, see pma.rs).
        set(MAX_QP_CNT, super::q_counters::MAX_SETS);
        set(OUT_OF_SEQ_CNT, 1);
        set(RETRANSMISSION_Q_COUNTERS, 1);
        set(ENHANCED_ERROR_Q_COUNTERS, 1);
        set(CC_QUERY_ALLOWED, 0);
        set(PCAM_REG, 0);
        set(VPORT_COUNTERS, 0);
        // No IB virtualization: ports are queried through MAD_IFC, the way a PF without SR-IOV is.
        set(IB_VIRT, 0);
        set(MAX_WQE_SZ_SQ, 1024);
        set(MAX_WQE_SZ_RQ, 512);
        set(MAX_WQE_SZ_SQ_DC, 1024);
        set(QP_LATENCY_SENSITIVE_DISABLE, 1);
        // Memory registrations carry their page list in CREATE_MKEY rather than in UMR work
        // requests, which the model does not execute.
        set(UMR_MODIFY_ENTITY_SIZE_DISABLED, 1);
        set(PKEY_TABLE_SIZE, 1);
        set(PORT_TYPE, 0); // InfiniBand
        set(NUM_PORTS, u64::from(config.ports));
        set(LOG_MAX_MSG, 30);
        set(MAX_TC, 0);
        set(CQE_VERSION, 1);
        set(XRC, 1);
        set(UD, 1);
        set(UC, 1);
        set(RC, 1);
        set(LOG_PG_SZ, 12);
        // No BlueFlame: without it mlx5_ib skips its write-combining self-test.
        set(BF, 0);
        set(DRIVER_VERSION, 1);
        set(LOG_BF_REG_SIZE, 9);
        set(MAX_QP_MCG, 240_000);
        set(LOG_MAX_MCG, 21);
        set(LOG_MAX_TRANSPORT_DOMAIN, 24);
        set(LOG_MAX_PD, 24);
        set(LOG_MAX_XRCD, 24);
        set(LOG_MAX_UCTX, 0);
        set(LOG_UAR_PAGE_SZ, 0);
        set(NUM_OF_UARS_PER_PAGE, 1);
        // Atomics: 8-byte compare-and-swap and fetch-and-add on RC. Operands in memory are
        // big-endian unless the driver picks host order (little-endian: the model serves x86
        // guests), which the C driver does and needs before it offers atomics.
        set(ATOMIC, 1);
        // MODIFY_CQ resizes CQs (see datapath's completion.rs).
        set(CQ_RESIZE, 1);
        let mut atomic_caps = vec![0u8; CAP_SIZE];
        ifc::set(&mut atomic_caps, atomic::OPERATIONS, 0b11);
        ifc::set(&mut atomic_caps, atomic::SUPPORTED_8B_ENDIANNESS_MODE_1, 1);
        ifc::set(&mut atomic_caps, atomic::SIZE_QP, 1 << 3);
        let max = BTreeMap::from([(kind::GENERAL, gen), (kind::ATOMIC, atomic_caps)]);
        Self {
            cur: max.clone(),
            max,
        }
    }

    /// The current value of field `f` of capability type `ty`.
    pub fn get(&self, ty: u8, f: Field) -> u64 {
        self.cur.get(&ty).map_or(0, |c| ifc::get(c, f))
    }
}

/// QUERY_HCA_CAP: op_mod is `type << 1 | current`.
pub fn query_hca_cap(fw: &mut Firmware, input: &Input) -> CmdResult {
    let ty = (input.op_mod() >> 1) as u8;
    let current = input.op_mod() & 1 == 1;
    let table = if current { &fw.caps.cur } else { &fw.caps.max };
    let cap = table
        .get(&ty)
        .ok_or(CmdError::new(Status::BadParameter, 0x0ca0_0000 | u32::from(ty)))?;
    let mut out = output(CAP_OFFSET + CAP_SIZE);
    out[CAP_OFFSET..].copy_from_slice(cap);
    Ok(out)
}

/// SET_HCA_CAP: the driver writes back the current page with its choices. Values above the
/// maximum of a size field are refused.
pub fn set_hca_cap(fw: &mut Firmware, input: &Input) -> CmdResult {
    let ty = (input.op_mod() >> 1) as u8;
    let Some(max) = fw.caps.max.get(&ty) else {
        return Err(CmdError::new(Status::BadParameter, 0x0ca1_0000 | u32::from(ty)));
    };
    if input.len() < CAP_OFFSET + CAP_SIZE {
        return Err(CmdError::new(Status::BadInputLength, 0x0ca2_0000));
    }
    let new = &input.bytes()[CAP_OFFSET..CAP_OFFSET + CAP_SIZE];
    if ty == kind::GENERAL {
        for f in [general::LOG_MAX_QP, general::PKEY_TABLE_SIZE] {
            if ifc::get(new, f) > ifc::get(max, f) {
                return Err(CmdError::new(Status::BadParameter, 0x0ca3_0000 | f.bit as u32));
            }
        }
        if ifc::get(new, general::CMDIF_CHECKSUM) != 0 {
            debug!("driver asks for command checksums; the model does not check them");
        }
    }
    if ty == kind::ATOMIC {
        // Only the requester endianness mode is settable; the rest of the page is read-only (the
        // C driver sends a page with just that field set).
        let mode = ifc::get(new, atomic::REQ_8B_ENDIANNESS_MODE);
        if mode > ifc::get(max, atomic::SUPPORTED_8B_ENDIANNESS_MODE_1) {
            return Err(CmdError::new(Status::BadParameter, 0x0ca4_0000 | mode as u32));
        }
        if let Some(cur) = fw.caps.cur.get_mut(&ty) {
            ifc::set(cur, atomic::REQ_8B_ENDIANNESS_MODE, mode);
        }
        return Ok(output(16));
    }
    fw.caps.cur.insert(ty, new.to_vec());
    Ok(output(16))
}
