// SPDX-License-Identifier: GPL-2.0

//! The SA's MCMemberRecord (IBA 15.2.5.17, C's `mcmember_rec_table` in `sa_query.c` and `struct
//! ib_sa_mcmember_rec`): a port's membership of a multicast group, its fields and place in the
//! 52-byte attribute, and the component mask bits that say which of them a request gives.

use crate::attrs::Gid;
use crate::be::{get16, get32, put16, put32};

/// The attribute id (`IB_SA_ATTR_MC_MEMBER_REC`).
pub const ATTR_ID: u16 = 0x0038;
/// The attribute's size on the wire.
pub const SIZE: usize = 52;

/// Component mask bits (`IB_SA_MCMEMBER_REC_*`).
pub mod comp {
    /// MGID.
    pub const MGID: u64 = 1 << 0;
    /// PortGID.
    pub const PORT_GID: u64 = 1 << 1;
    /// Q_Key.
    pub const QKEY: u64 = 1 << 2;
    /// MLID.
    pub const MLID: u64 = 1 << 3;
    /// MTUSelector.
    pub const MTU_SELECTOR: u64 = 1 << 4;
    /// MTU.
    pub const MTU: u64 = 1 << 5;
    /// TClass.
    pub const TRAFFIC_CLASS: u64 = 1 << 6;
    /// P_Key.
    pub const PKEY: u64 = 1 << 7;
    /// RateSelector.
    pub const RATE_SELECTOR: u64 = 1 << 8;
    /// Rate.
    pub const RATE: u64 = 1 << 9;
    /// PacketLifeTimeSelector.
    pub const PACKET_LIFE_TIME_SELECTOR: u64 = 1 << 10;
    /// PacketLifeTime.
    pub const PACKET_LIFE_TIME: u64 = 1 << 11;
    /// SL.
    pub const SL: u64 = 1 << 12;
    /// FlowLabel.
    pub const FLOW_LABEL: u64 = 1 << 13;
    /// HopLimit.
    pub const HOP_LIMIT: u64 = 1 << 14;
    /// Scope.
    pub const SCOPE: u64 = 1 << 15;
    /// JoinState.
    pub const JOIN_STATE: u64 = 1 << 16;
    /// ProxyJoin.
    pub const PROXY_JOIN: u64 = 1 << 17;
}

/// Selector values (`IB_SA_GT`, `IB_SA_LT`, `IB_SA_EQ`) of the MTU, rate and life time.
pub mod selector {
    /// Greater than the value.
    pub const GT: u8 = 0;
    /// Less than the value.
    pub const LT: u8 = 1;
    /// Exactly the value.
    pub const EQ: u8 = 2;
}

/// A port's membership of a multicast group as the SA describes it (LIDs, Q_Key, P_Key and the
/// flow label in host order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct McMemberRecord {
    /// The group's GID (zero in a create: the SA assigns one).
    pub mgid: Gid,
    /// The member port's GID.
    pub port_gid: Gid,
    /// The group's Q_Key.
    pub qkey: u32,
    /// The group's multicast LID.
    pub mlid: u16,
    /// MTUSelector (2 bits).
    pub mtu_selector: u8,
    /// MTU (`IB_MTU_*` code, 6 bits).
    pub mtu: u8,
    /// TClass.
    pub traffic_class: u8,
    /// The partition key.
    pub pkey: u16,
    /// RateSelector (2 bits).
    pub rate_selector: u8,
    /// Rate (`IB_RATE_*` code, 6 bits).
    pub rate: u8,
    /// PacketLifeTimeSelector (2 bits).
    pub packet_life_time_selector: u8,
    /// PacketLifeTime (6 bits).
    pub packet_life_time: u8,
    /// The service level (4 bits).
    pub sl: u8,
    /// FlowLabel (20 bits).
    pub flow_label: u32,
    /// HopLimit.
    pub hop_limit: u8,
    /// Scope (4 bits).
    pub scope: u8,
    /// JoinState (4 bits: full member, non member, send-only non member, send-only full
    /// member).
    pub join_state: u8,
    /// ProxyJoin.
    pub proxy_join: bool,
}

impl McMemberRecord {
    /// The record in `d` (C's `ib_unpack` of `mcmember_rec_table`).
    pub fn decode(d: &[u8; SIZE]) -> Self {
        let mut mgid = [0u8; 16];
        mgid.copy_from_slice(&d[0..16]);
        let mut port_gid = [0u8; 16];
        port_gid.copy_from_slice(&d[16..32]);
        let w11 = get32(d, 44);
        Self {
            mgid: Gid(mgid),
            port_gid: Gid(port_gid),
            qkey: get32(d, 32),
            mlid: get16(d, 36),
            mtu_selector: d[38] >> 6,
            mtu: d[38] & 0x3f,
            traffic_class: d[39],
            pkey: get16(d, 40),
            rate_selector: d[42] >> 6,
            rate: d[42] & 0x3f,
            packet_life_time_selector: d[43] >> 6,
            packet_life_time: d[43] & 0x3f,
            sl: (w11 >> 28) as u8,
            flow_label: (w11 >> 8) & 0xf_ffff,
            hop_limit: w11 as u8,
            scope: d[48] >> 4,
            join_state: d[48] & 0xf,
            proxy_join: d[49] >> 7 != 0,
        }
    }

    /// The record as the SA reads it (C's `ib_pack`); reserved bits zero.
    pub fn encode(&self, d: &mut [u8; SIZE]) {
        d.fill(0);
        d[0..16].copy_from_slice(&self.mgid.0);
        d[16..32].copy_from_slice(&self.port_gid.0);
        put32(d, 32, self.qkey);
        put16(d, 36, self.mlid);
        d[38] = (self.mtu_selector << 6) | (self.mtu & 0x3f);
        d[39] = self.traffic_class;
        put16(d, 40, self.pkey);
        d[42] = (self.rate_selector << 6) | (self.rate & 0x3f);
        d[43] = (self.packet_life_time_selector << 6) | (self.packet_life_time & 0x3f);
        let w11 = (u32::from(self.sl & 0xf) << 28)
            | ((self.flow_label & 0xf_ffff) << 8)
            | u32::from(self.hop_limit);
        put32(d, 44, w11);
        d[48] = (self.scope << 4) | (self.join_state & 0xf);
        d[49] = u8::from(self.proxy_join) << 7;
    }
}

#[kernel::macros::kunit_tests(rdma_rs_sa_mcmember_record)]
mod tests {
    use super::*;

    #[test]
    fn fields_sit_where_c_s_table_puts_them() {
        let r = McMemberRecord {
            mgid: Gid([0xff; 16]),
            port_gid: Gid([0xfe; 16]),
            qkey: 0x8001_0203,
            mlid: 0xc001,
            mtu_selector: 2,
            mtu: 4,
            traffic_class: 0x11,
            pkey: 0xffff,
            rate_selector: 2,
            rate: 7,
            packet_life_time_selector: 2,
            packet_life_time: 18,
            sl: 0xa,
            flow_label: 0xabcde,
            hop_limit: 0x40,
            scope: 2,
            join_state: 1,
            proxy_join: true,
        };
        let mut d = [0u8; SIZE];
        r.encode(&mut d);
        // Words 8 to 12: Q_Key; MLID, MTU with its selector, TClass; P_Key, rate and life time
        // with their selectors; SL, flow label, hop limit; scope, join state, proxy join.
        assert_eq!(
            &d[32..SIZE],
            &[
                0x80, 0x01, 0x02, 0x03, 0xc0, 0x01, 0x84, 0x11, 0xff, 0xff, 0x87, 0x92, 0xaa, 0xbc,
                0xde, 0x40, 0x21, 0x80, 0, 0
            ]
        );
        assert_eq!(McMemberRecord::decode(&d), r);
    }
}
