// SPDX-License-Identifier: GPL-2.0

//! The SA's GUIDInfoRecord (IBA 15.2.5.18, C's `guidinfo_rec_table` in `sa_query.c` and
//! `struct ib_sa_guidinfo_rec`): a block of eight GUIDs of a port (its GUID, then the alias GUIDs
//! an SM assigned), 72 bytes whose fields sit on the wire as C's structure holds them (network
//! order, the same offsets, none reserved).

/// The attribute id (`IB_SA_ATTR_GUID_INFO_REC`).
pub const ATTR_ID: u16 = 0x0030;
/// The attribute's size on the wire.
pub const SIZE: usize = 72;
/// The SA's Delete method (`IB_SA_METHOD_DELETE`), which the record takes besides Get and Set.
pub const METHOD_DELETE: u8 = 0x15;

/// Component mask bits (`IB_SA_GUIDINFO_REC_*`).
pub mod comp {
    /// The port's LID.
    pub const LID: u64 = 1 << 0;
    /// The block's number.
    pub const BLOCK_NUM: u64 = 1 << 1;
}

/// A GUIDInfo record as it travels (C's `struct ib_sa_guidinfo_rec`, byte for byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuidInfoRecord(pub [u8; SIZE]);
