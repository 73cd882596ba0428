// SPDX-License-Identifier: GPL-2.0

//! The header user space puts before every MAD it writes and finds before every MAD it reads
//! (`struct ib_user_mad_hdr`, 64 bytes, or `ib_user_mad_hdr_old`, 56 bytes, without the P_Key
//! index).

use ib_core::be::get32;

/// The old header's size (before `IB_USER_MAD_ENABLE_PKEY`).
pub(crate) const HDR_OLD: usize = 56;
/// The header's size with the P_Key index.
pub(crate) const HDR_NEW: usize = 64;
/// The common MAD header and the RMPP header (`IB_MGMT_RMPP_HDR`): what write() needs at least.
pub(crate) const RMPP_HDR: usize = 36;

/// The user header's fields (host-endian integers where the ABI has host order, network
/// order ones converted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct UmadHdr {
    pub(crate) id: u32,
    pub(crate) status: u32,
    pub(crate) timeout_ms: u32,
    pub(crate) retries: u32,
    pub(crate) length: u32,
    pub(crate) qpn: u32,
    pub(crate) qkey: u32,
    pub(crate) lid: u16,
    pub(crate) sl: u8,
    pub(crate) path_bits: u8,
    pub(crate) grh_present: u8,
    pub(crate) gid_index: u8,
    pub(crate) hop_limit: u8,
    pub(crate) traffic_class: u8,
    pub(crate) gid: [u8; 16],
    pub(crate) flow_label: u32,
    pub(crate) pkey_index: u16,
}

fn ne32(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl UmadHdr {
    /// Decodes a header of `b` (at least [`HDR_OLD`] bytes; the P_Key index only if `b` is a
    /// new header).
    pub(crate) fn decode(b: &[u8; HDR_NEW], new: bool) -> Self {
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&b[36..52]);
        Self {
            id: ne32(b, 0),
            status: ne32(b, 4),
            timeout_ms: ne32(b, 8),
            retries: ne32(b, 12),
            length: ne32(b, 16),
            qpn: get32(b, 20),
            qkey: get32(b, 24),
            lid: u16::from_be_bytes([b[28], b[29]]),
            sl: b[30],
            path_bits: b[31],
            grh_present: b[32],
            gid_index: b[33],
            hop_limit: b[34],
            traffic_class: b[35],
            gid,
            flow_label: get32(b, 52),
            pkey_index: if new {
                u16::from_ne_bytes([b[56], b[57]])
            } else {
                0
            },
        }
    }

    /// The header as user space reads it (the first [`HDR_OLD`] or [`HDR_NEW`] bytes).
    pub(crate) fn encode(&self) -> [u8; HDR_NEW] {
        let mut b = [0u8; HDR_NEW];
        b[0..4].copy_from_slice(&self.id.to_ne_bytes());
        b[4..8].copy_from_slice(&self.status.to_ne_bytes());
        b[8..12].copy_from_slice(&self.timeout_ms.to_ne_bytes());
        b[12..16].copy_from_slice(&self.retries.to_ne_bytes());
        b[16..20].copy_from_slice(&self.length.to_ne_bytes());
        b[20..24].copy_from_slice(&self.qpn.to_be_bytes());
        b[24..28].copy_from_slice(&self.qkey.to_be_bytes());
        b[28..30].copy_from_slice(&self.lid.to_be_bytes());
        b[30] = self.sl;
        b[31] = self.path_bits;
        b[32] = self.grh_present;
        b[33] = self.gid_index;
        b[34] = self.hop_limit;
        b[35] = self.traffic_class;
        b[36..52].copy_from_slice(&self.gid);
        b[52..56].copy_from_slice(&self.flow_label.to_be_bytes());
        b[56..58].copy_from_slice(&self.pkey_index.to_ne_bytes());
        b
    }
}

#[kernel::macros::kunit_tests(rdma_rs_ib_umad_hdr)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_in_the_abis_byte_order() {
        let h = UmadHdr {
            id: 3,
            status: 110,
            timeout_ms: 1000,
            retries: 2,
            length: 320,
            qpn: 1,
            qkey: 0x8001_0000,
            lid: 6,
            sl: 1,
            path_bits: 2,
            grh_present: 1,
            gid_index: 0,
            hop_limit: 64,
            traffic_class: 7,
            gid: [0xfe; 16],
            flow_label: 0x12345,
            pkey_index: 5,
        };
        let b = h.encode();
        assert_eq!(&b[20..24], &[0, 0, 0, 1]);
        assert_eq!(&b[28..30], &[0, 6]);
        assert_eq!(UmadHdr::decode(&b, true), h);
        let old = UmadHdr::decode(&b, false);
        assert_eq!(old.pkey_index, 0);
    }
}
