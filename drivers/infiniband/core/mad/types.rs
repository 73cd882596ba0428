// SPDX-License-Identifier: GPL-2.0

//! The vocabulary of management datagrams that drivers and the MAD layer share (C's
//! `ib_mad.h`, `ib_smi.h`, `ib_pma.h`): sizes, the common header's fields, classes, methods,
//! statuses, and what a driver's `process_mad` gets and answers. Fields are read and written
//! with the big-endian accessors of `be.rs` (re-exported here).

pub use crate::be::{get16, get32, get64, put16, put32, put64};

/// A MAD's size on an InfiniBand port (`IB_MGMT_MAD_SIZE`).
pub const MAD_SIZE: usize = 256;
/// The common MAD header (`IB_MGMT_MAD_HDR`).
pub const MAD_HDR_SIZE: usize = 24;
/// The GRH area at the head of every datagram receive buffer.
pub const GRH_SIZE: usize = 40;

/// A whole MAD, as it travels.
pub type Mad = [u8; MAD_SIZE];

/// Management classes (`IB_MGMT_CLASS_*`).
pub mod class {
    /// Subnet management, LID-routed.
    pub const SUBN_LID_ROUTED: u8 = 0x01;
    /// Subnet administration.
    pub const SUBN_ADM: u8 = 0x03;
    /// Performance management.
    pub const PERF_MGMT: u8 = 0x04;
    /// Baseboard management.
    pub const BM: u8 = 0x05;
    /// Device management.
    pub const DEVICE_MGMT: u8 = 0x06;
    /// Communication management.
    pub const CM: u8 = 0x07;
    /// Device administration.
    pub const DEVICE_ADM: u8 = 0x10;
    /// Boot management.
    pub const BOOT_MGMT: u8 = 0x11;
    /// BIS.
    pub const BIS: u8 = 0x12;
    /// Congestion management.
    pub const CONG_MGMT: u8 = 0x21;
    /// The first and last vendor class of the range that carries an OUI.
    pub const VENDOR_RANGE2_START: u8 = 0x30;
    /// See [`VENDOR_RANGE2_START`].
    pub const VENDOR_RANGE2_END: u8 = 0x4f;
    /// Subnet management, directed route.
    pub const SUBN_DIRECTED_ROUTE: u8 = 0x81;
}

/// Methods (`IB_MGMT_METHOD_*`); bit 7 marks a response.
pub mod method {
    /// Get.
    pub const GET: u8 = 0x01;
    /// Set.
    pub const SET: u8 = 0x02;
    /// Send.
    pub const SEND: u8 = 0x03;
    /// Trap.
    pub const TRAP: u8 = 0x05;
    /// TrapRepress.
    pub const TRAP_REPRESS: u8 = 0x07;
    /// The response bit.
    pub const RESP: u8 = 0x80;
    /// GetResp.
    pub const GET_RESP: u8 = 0x81;
    /// The SA's GetTable (`IB_MGMT_METHOD_GET_TABLE`).
    pub const GET_TABLE: u8 = 0x12;
}

/// MAD statuses (`IB_MGMT_MAD_STATUS_*`).
pub mod status {
    /// The method or attribute is not supported.
    pub const UNSUPPORTED_METHOD_ATTRIB: u16 = 0x000c;
    /// Directed route: the response is on its way back (`IB_SMP_DIRECTION`).
    pub const SMP_DIRECTION: u16 = 0x8000;
}

/// Offsets of the common header's fields in a MAD (all big-endian).
pub mod hdr {
    /// Base version (1).
    pub const BASE_VERSION: usize = 0;
    /// Management class.
    pub const MGMT_CLASS: usize = 1;
    /// Class version.
    pub const CLASS_VERSION: usize = 2;
    /// Method.
    pub const METHOD: usize = 3;
    /// Status (16 bits).
    pub const STATUS: usize = 4;
    /// Directed route SMPs: hop pointer.
    pub const HOP_PTR: usize = 6;
    /// Directed route SMPs: hop count.
    pub const HOP_CNT: usize = 7;
    /// Transaction id (64 bits).
    pub const TID: usize = 8;
    /// Attribute id (16 bits).
    pub const ATTR_ID: usize = 16;
    /// Attribute modifier (32 bits).
    pub const ATTR_MOD: usize = 20;
}

/// What `process_mad` did (`IB_MAD_RESULT_*` bits).
pub mod result {
    /// The driver failed.
    pub const FAILURE: u32 = 0;
    /// The driver handled the MAD.
    pub const SUCCESS: u32 = 1 << 0;
    /// `out` holds a reply to send.
    pub const REPLY: u32 = 1 << 1;
    /// Nothing else is to be done with the MAD.
    pub const CONSUMED: u32 = 1 << 2;
}

/// `process_mad` flags (`IB_MAD_IGNORE_*`).
pub mod flags {
    /// Do not check the M_Key.
    pub const IGNORE_MKEY: u32 = 1;
    /// Do not check the B_Key.
    pub const IGNORE_BKEY: u32 = 2;
}

/// The completion of a received MAD, as `process_mad` gets it (C's `in_wc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MadWc {
    /// The sender's LID.
    pub slid: u16,
    /// The sending QP.
    pub src_qp: u32,
    /// The sender's service level.
    pub sl: u8,
    /// The P_Key index it came in on.
    pub pkey_index: u16,
    /// The destination LID's path bits.
    pub dlid_path_bits: u8,
}
