// SPDX-License-Identifier: GPL-2.0

//! The SA's ServiceRecord (IBA 15.2.5.14, C's `service_rec_table` in `sa_query.c` and `struct
//! sa_service_rec`): a service a port offers, 176 bytes whose fields sit on the wire as C's
//! structure holds them (network order, the same offsets), two reserved bytes zeroed when packed.

/// The attribute id (`IB_SA_ATTR_SERVICE_REC`).
pub const ATTR_ID: u16 = 0x0031;
/// The attribute's size on the wire (`IB_SERVICE_REC_SZ`).
pub const SIZE: usize = 176;
/// Where the reserved bytes after the P_Key sit.
pub const RESERVED: core::ops::Range<usize> = 26..28;

/// A service record as it travels (C's `struct sa_service_rec`, byte for byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceRecord(pub [u8; SIZE]);

impl ServiceRecord {
    /// The record at `d`, its reserved bytes left zero (C's `ib_sa_unpack_service` writes only
    /// the fields).
    pub fn decode(d: &[u8; SIZE]) -> Self {
        let mut r = *d;
        r[RESERVED].fill(0);
        Self(r)
    }

    /// The record as the SA reads it, reserved bytes zero (C's `ib_sa_pack_service`).
    pub fn encode(&self, d: &mut [u8; SIZE]) {
        *d = self.0;
        d[RESERVED].fill(0);
    }

    /// The ServiceID.
    pub fn id(&self) -> u64 {
        crate::be::get64(&self.0, 0)
    }
}

impl Default for ServiceRecord {
    fn default() -> Self {
        Self([0; SIZE])
    }
}
