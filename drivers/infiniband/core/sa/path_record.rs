// SPDX-License-Identifier: GPL-2.0

//! The SA's PathRecord (IBA 15.2.5.16, C's `path_rec_table` in `sa_query.c` and `struct
//! sa_path_rec` for InfiniBand): its fields, their place in the 64-byte attribute, and the
//! component mask bits that say which of them a query gives.

use crate::attrs::Gid;
use crate::be::{get16, get32, get64, put16, put32, put64};

/// The attribute id (`IB_SA_ATTR_PATH_REC`).
pub const ATTR_ID: u16 = 0x0035;
/// The attribute's size on the wire.
pub const SIZE: usize = 64;

/// Component mask bits (`IB_SA_PATH_REC_*`): which fields of a query's record count.
pub mod comp {
    /// ServiceID (two bits: the 56-bit ID and its top byte).
    pub const SERVICE_ID: u64 = 0b11;
    /// DGID.
    pub const DGID: u64 = 1 << 2;
    /// SGID.
    pub const SGID: u64 = 1 << 3;
    /// DLID.
    pub const DLID: u64 = 1 << 4;
    /// SLID.
    pub const SLID: u64 = 1 << 5;
    /// RawTraffic.
    pub const RAW_TRAFFIC: u64 = 1 << 6;
    /// FlowLabel.
    pub const FLOW_LABEL: u64 = 1 << 8;
    /// HopLimit.
    pub const HOP_LIMIT: u64 = 1 << 9;
    /// TClass.
    pub const TRAFFIC_CLASS: u64 = 1 << 10;
    /// Reversible.
    pub const REVERSIBLE: u64 = 1 << 11;
    /// NumbPath.
    pub const NUMB_PATH: u64 = 1 << 12;
    /// P_Key.
    pub const PKEY: u64 = 1 << 13;
    /// QoSClass.
    pub const QOS_CLASS: u64 = 1 << 14;
    /// SL.
    pub const SL: u64 = 1 << 15;
    /// MTUSelector.
    pub const MTU_SELECTOR: u64 = 1 << 16;
    /// MTU.
    pub const MTU: u64 = 1 << 17;
    /// RateSelector.
    pub const RATE_SELECTOR: u64 = 1 << 18;
    /// Rate.
    pub const RATE: u64 = 1 << 19;
    /// PacketLifeTimeSelector.
    pub const PACKET_LIFE_TIME_SELECTOR: u64 = 1 << 20;
    /// PacketLifeTime.
    pub const PACKET_LIFE_TIME: u64 = 1 << 21;
    /// Preference.
    pub const PREFERENCE: u64 = 1 << 22;
}

/// A path between two ports, as the SA describes it (C's `sa_path_rec` of type IB; LIDs in
/// host order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathRecord {
    /// ServiceID.
    pub service_id: u64,
    /// The destination port's GID.
    pub dgid: Gid,
    /// The source port's GID.
    pub sgid: Gid,
    /// The destination LID.
    pub dlid: u16,
    /// The source LID.
    pub slid: u16,
    /// Raw (non-IBA) traffic.
    pub raw_traffic: bool,
    /// FlowLabel (20 bits).
    pub flow_label: u32,
    /// HopLimit.
    pub hop_limit: u8,
    /// TClass.
    pub traffic_class: u8,
    /// The path is good both ways.
    pub reversible: bool,
    /// How many paths to return at most (7 bits).
    pub numb_path: u8,
    /// The partition key.
    pub pkey: u16,
    /// QoSClass (12 bits).
    pub qos_class: u16,
    /// The service level (4 bits).
    pub sl: u8,
    /// MTUSelector (2 bits).
    pub mtu_selector: u8,
    /// MTU (`IB_MTU_*` code, 6 bits).
    pub mtu: u8,
    /// RateSelector (2 bits).
    pub rate_selector: u8,
    /// Rate (`IB_RATE_*` code, 6 bits).
    pub rate: u8,
    /// PacketLifeTimeSelector (2 bits).
    pub packet_life_time_selector: u8,
    /// PacketLifeTime (6 bits).
    pub packet_life_time: u8,
    /// Preference.
    pub preference: u8,
}

impl PathRecord {
    /// The record in `d` (at least [`SIZE`] bytes; C's `ib_unpack` of `path_rec_table`).
    pub fn decode(d: &[u8; SIZE]) -> Self {
        let mut dgid = [0u8; 16];
        dgid.copy_from_slice(&d[8..24]);
        let mut sgid = [0u8; 16];
        sgid.copy_from_slice(&d[24..40]);
        let w11 = get32(d, 44);
        let w13 = get32(d, 52);
        Self {
            service_id: get64(d, 0),
            dgid: Gid(dgid),
            sgid: Gid(sgid),
            dlid: get16(d, 40),
            slid: get16(d, 42),
            raw_traffic: w11 >> 31 != 0,
            flow_label: (w11 >> 8) & 0xf_ffff,
            hop_limit: w11 as u8,
            traffic_class: d[48],
            reversible: d[49] >> 7 != 0,
            numb_path: d[49] & 0x7f,
            pkey: get16(d, 50),
            qos_class: (w13 >> 20) as u16,
            sl: ((w13 >> 16) & 0xf) as u8,
            mtu_selector: d[54] >> 6,
            mtu: d[54] & 0x3f,
            rate_selector: d[55] >> 6,
            rate: d[55] & 0x3f,
            packet_life_time_selector: d[56] >> 6,
            packet_life_time: d[56] & 0x3f,
            preference: d[57],
        }
    }

    /// The record as the SA reads it (C's `ib_pack`); reserved bits zero.
    pub fn encode(&self, d: &mut [u8; SIZE]) {
        d.fill(0);
        put64(d, 0, self.service_id);
        d[8..24].copy_from_slice(&self.dgid.0);
        d[24..40].copy_from_slice(&self.sgid.0);
        put16(d, 40, self.dlid);
        put16(d, 42, self.slid);
        let w11 = (u32::from(self.raw_traffic) << 31)
            | ((self.flow_label & 0xf_ffff) << 8)
            | u32::from(self.hop_limit);
        put32(d, 44, w11);
        d[48] = self.traffic_class;
        d[49] = (u8::from(self.reversible) << 7) | (self.numb_path & 0x7f);
        put16(d, 50, self.pkey);
        put16(
            d,
            52,
            ((self.qos_class & 0xfff) << 4) | u16::from(self.sl & 0xf),
        );
        d[54] = (self.mtu_selector << 6) | (self.mtu & 0x3f);
        d[55] = (self.rate_selector << 6) | (self.rate & 0x3f);
        d[56] = (self.packet_life_time_selector << 6) | (self.packet_life_time & 0x3f);
        d[57] = self.preference;
    }
}

#[kernel::macros::kunit_tests(rdma_rs_sa_path_record)]
mod tests {
    use super::*;

    #[test]
    fn fields_sit_where_c_s_table_puts_them() {
        let r = PathRecord {
            service_id: 0x1122_3344_5566_7788,
            dgid: Gid([0xfe; 16]),
            sgid: Gid([0x80; 16]),
            dlid: 0x0102,
            slid: 0x0304,
            raw_traffic: true,
            flow_label: 0xabcde,
            hop_limit: 0x40,
            traffic_class: 0x11,
            reversible: true,
            numb_path: 0x7f,
            pkey: 0xffff,
            qos_class: 0x123,
            sl: 0x5,
            mtu_selector: 2,
            mtu: 5,
            rate_selector: 2,
            rate: 16,
            packet_life_time_selector: 2,
            packet_life_time: 18,
            preference: 3,
        };
        let mut d = [0u8; SIZE];
        r.encode(&mut d);
        // Word 11: raw traffic (bit 0), 3 reserved bits, the flow label, the hop limit.
        assert_eq!(
            &d[40..48],
            &[0x01, 0x02, 0x03, 0x04, 0x8a, 0xbc, 0xde, 0x40]
        );
        // Word 12: TClass, reversible and NumbPath, P_Key; word 13: QoSClass, SL, MTU and rate
        // with their selectors; word 14: life time and preference.
        assert_eq!(
            &d[48..58],
            &[0x11, 0xff, 0xff, 0xff, 0x12, 0x35, 0x85, 0x90, 0x92, 0x03]
        );
        assert_eq!(&d[58..64], &[0; 6]);
        assert_eq!(PathRecord::decode(&d), r);
    }
}
