//! M_Key protection of a port's subnet management agent (IBA 14.2.4) and the trap it sends when
//! an SMP fails it (Trap 256, "Bad M_Key", IBA 14.2.5.1).
//!
//! An SM protects a port by setting its PortInfo.M_Key and M_KeyProtectBits. An SMP that came
//! from the fabric (MAD_IFC without the "ignore M_Key" modifier: the driver passes one for MADs
//! with a work completion) and does not carry the port's M_Key is then checked: with protection
//! 0 a Get passes and a Set fails; with 1 a Get passes with the M_Key read as 0; with 2 or 3
//! everything fails. A failed SMP is not answered: MAD_IFC fails, which both drivers take as
//! "drop the MAD" (`IB_MAD_RESULT_FAILURE`); the port counts an M_Key violation and sends Trap
//! 256 to its SM. A zero M_Key protects nothing.
//!
//! Not modelled: the M_Key lease period (protection never lapses), and the trap's repetition
//! until a TrapRepress (it is sent once; a TrapRepress is accepted and ends nothing). The MAD
//! carries no source LID into MAD_IFC, so the trap names the requester only for directed-route
//! SMPs (their DrSLID); a LID-routed one is reported with LID 0.

use super::datapath::{self, packet::Body, Packet};
use super::port::{
    attr, mad as off, Port, CLASS_SMP_DIRECTED, CLASS_SMP_LID_ROUTED, MAD_SIZE, METHOD_SET, METHOD_TRAP,
};
use super::Firmware;
use crate::guest_memory::GuestMemory;
use log::info;

/// Trap 256: Bad M_Key.
pub const TRAP_BAD_M_KEY: u16 = 256;

/// What the M_Key check made of an SMP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Answered as usual.
    Pass,
    /// A Get answered with PortInfo's M_Key read as 0 (protection 1).
    PassHidden,
    /// Not answered: a violation.
    Fail,
}

/// The port's M_Key.
fn port_m_key(p: &Port) -> u64 {
    u64::from_be_bytes(p.info[0..8].try_into().unwrap_or_default())
}

/// The port's M_KeyProtectBits.
fn protect_bits(p: &Port) -> u8 {
    p.info[34] >> 6
}

/// The M_Key check of SMP `m` at port `p` (IBA 14.2.4.1).
pub fn check(p: &Port, m: &[u8; MAD_SIZE]) -> Check {
    let key = port_m_key(p);
    let carried = u64::from_be_bytes(m[off::M_KEY..off::M_KEY + 8].try_into().unwrap_or_default());
    if key == 0 || carried == key {
        return Check::Pass;
    }
    let set = m[off::METHOD] == METHOD_SET;
    match protect_bits(p) {
        0 if !set => Check::Pass,
        1 if !set => Check::PassHidden,
        _ => Check::Fail,
    }
}

/// Hides the M_Key in a PortInfo answer `m` (protection 1).
pub fn hide(m: &mut [u8; MAD_SIZE]) {
    if u16::from_be_bytes([m[off::ATTR_ID], m[off::ATTR_ID + 1]]) == attr::PORT_INFO {
        m[off::SMP_DATA..off::SMP_DATA + 8].fill(0);
    }
}

/// A violation at port `num` by SMP `m`: PortInfo.M_KeyViolations counts it (up to 0xffff), and
/// Trap 256 goes to the port's SM, if it has one.
pub fn violation(fw: &mut Firmware, mem: &mut dyn GuestMemory, num: u8, m: &[u8; MAD_SIZE]) {
    let Some(p) = fw.node.port_mut(num) else {
        return;
    };
    let count = u16::from_be_bytes([p.info[44], p.info[45]]).saturating_add(1);
    p.info[44..46].copy_from_slice(&count.to_be_bytes());
    let p = p.clone();
    info!(
        "SMA port {num}: bad M_Key in {} of attribute {:#06x}; violation {count}",
        if m[off::METHOD] == METHOD_SET {
            "a Set"
        } else {
            "a Get"
        },
        u16::from_be_bytes([m[off::ATTR_ID], m[off::ATTR_ID + 1]])
    );
    if p.sm_lid == 0 || p.lid == 0 {
        return;
    }
    fw.trap_tid = fw.trap_tid.wrapping_add(1);
    let trap = bad_m_key_trap(&p, m, fw.trap_tid);
    datapath::agent_send(
        fw,
        mem,
        Packet {
            slid: p.lid,
            dlid: p.sm_lid,
            sqpn: 0,
            dqpn: 0,
            psn: 0,
            body: Body::Send {
                data: trap.to_vec(),
                imm: None,
                qkey: Some(0),
                gids: None,
            },
        },
    );
}

/// Trap 256 from port `p` about SMP `m` (IBA 14.2.5.1, Notice with the DataDetails of trap 256;
/// opensm's `ntc_256`).
fn bad_m_key_trap(p: &Port, m: &[u8; MAD_SIZE], tid: u32) -> [u8; MAD_SIZE] {
    let mut t = [0u8; MAD_SIZE];
    t[off::BASE_VERSION] = 1;
    t[off::MGMT_CLASS] = CLASS_SMP_LID_ROUTED;
    t[off::CLASS_VERSION] = 1;
    t[off::METHOD] = METHOD_TRAP;
    // The agent's own transaction ids (the high half marks the firmware as the sender).
    t[off::TID..off::TID + 8].copy_from_slice(&(0xcafe_0000_0000_0000 | u64::from(tid)).to_be_bytes());
    t[off::ATTR_ID..off::ATTR_ID + 2].copy_from_slice(&attr::NOTICE.to_be_bytes());
    t[off::M_KEY..off::M_KEY + 8].copy_from_slice(&port_m_key(p).to_be_bytes());
    let n = &mut t[off::SMP_DATA..off::SMP_DATA + 64];
    n[0] = 0x80 | 2; // IsGeneric, Type: security
    n[1..4].copy_from_slice(&1u32.to_be_bytes()[1..4]); // ProducerType: channel adapter
    n[4..6].copy_from_slice(&TRAP_BAD_M_KEY.to_be_bytes());
    n[6..8].copy_from_slice(&p.lid.to_be_bytes()); // IssuerLID
                                                   // DataDetails (from byte 10): the requester's LID, its DrSLID, the method, the attribute and
                                                   // modifier, the M_Key it carried, the directed route's hop count.
    let directed = m[off::MGMT_CLASS] == CLASS_SMP_DIRECTED;
    let dr_slid = if directed {
        [m[off::DR_SLID], m[off::DR_SLID + 1]]
    } else {
        [0, 0]
    };
    n[12..14].copy_from_slice(&dr_slid);
    n[14..16].copy_from_slice(&dr_slid);
    n[16] = m[off::METHOD];
    n[18..20].copy_from_slice(&m[off::ATTR_ID..off::ATTR_ID + 2]);
    n[20..24].copy_from_slice(&m[off::ATTR_MOD..off::ATTR_MOD + 4]);
    n[24..32].copy_from_slice(&m[off::M_KEY..off::M_KEY + 8]);
    if directed {
        n[32] = m[off::HOP_COUNT] & 0x3f; // DRHopCount
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::firmware::FirmwareConfig;

    fn port(key: u64, protect: u8) -> Port {
        let node = super::super::port::Node::new(&FirmwareConfig {
            managed: true,
            ..FirmwareConfig::default()
        });
        let mut p = node.ports[0].clone();
        p.info[0..8].copy_from_slice(&key.to_be_bytes());
        p.info[34] = (protect << 6) | (p.info[34] & 0x3f);
        p
    }

    fn smp(method: u8, key: u64) -> [u8; MAD_SIZE] {
        let mut m = [0u8; MAD_SIZE];
        m[off::MGMT_CLASS] = CLASS_SMP_LID_ROUTED;
        m[off::METHOD] = method;
        m[off::ATTR_ID..off::ATTR_ID + 2].copy_from_slice(&attr::PORT_INFO.to_be_bytes());
        m[off::M_KEY..off::M_KEY + 8].copy_from_slice(&key.to_be_bytes());
        m
    }

    #[test]
    fn the_protection_bits_decide_what_a_wrong_key_may_do() {
        const GET: u8 = 0x01;
        assert_eq!(check(&port(0, 3), &smp(METHOD_SET, 7)), Check::Pass);
        assert_eq!(check(&port(9, 3), &smp(METHOD_SET, 9)), Check::Pass);
        assert_eq!(check(&port(9, 0), &smp(GET, 7)), Check::Pass);
        assert_eq!(check(&port(9, 0), &smp(METHOD_SET, 7)), Check::Fail);
        assert_eq!(check(&port(9, 1), &smp(GET, 7)), Check::PassHidden);
        assert_eq!(check(&port(9, 1), &smp(METHOD_SET, 0)), Check::Fail);
        assert_eq!(check(&port(9, 2), &smp(GET, 7)), Check::Fail);
        assert_eq!(check(&port(9, 3), &smp(GET, 0)), Check::Fail);
    }

    #[test]
    fn trap_256_names_the_port_the_attribute_and_the_key_carried() {
        let mut p = port(0x1122, 1);
        p.lid = 5;
        let mut m = smp(METHOD_SET, 0x77);
        m[off::ATTR_MOD..off::ATTR_MOD + 4].copy_from_slice(&3u32.to_be_bytes());
        let t = bad_m_key_trap(&p, &m, 1);
        assert_eq!(t[off::METHOD], METHOD_TRAP);
        assert_eq!(&t[off::ATTR_ID..off::ATTR_ID + 2], &attr::NOTICE.to_be_bytes());
        assert_eq!(&t[off::M_KEY..off::M_KEY + 8], &0x1122u64.to_be_bytes());
        let n = &t[off::SMP_DATA..];
        assert_eq!(n[0], 0x82);
        assert_eq!(&n[4..6], &256u16.to_be_bytes());
        assert_eq!(&n[6..8], &5u16.to_be_bytes());
        assert_eq!(n[16], METHOD_SET);
        assert_eq!(&n[18..20], &attr::PORT_INFO.to_be_bytes());
        assert_eq!(&n[20..24], &3u32.to_be_bytes());
        assert_eq!(&n[24..32], &0x77u64.to_be_bytes());
    }
}
