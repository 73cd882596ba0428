//! The subnet management agent of a managed port (`--fabric managed`): the Sets a subnet manager
//! sends (PortInfo, P_KeyTable, GUIDInfo, SLtoVLMappingTable, VLArbitrationTable), the checks a
//! port makes before applying one (IBA 14.2.5: a Set with an invalid component changes nothing and
//! is answered with status 0x1c and the attribute as it is), and the PORT_CHANGE events the
//! changes raise, as ConnectX firmware raises them for the driver: LID (the LID, LMC, SM LID or
//! the SM's SL changed), P_Key, GUID (a GUID or the GID prefix), client reregistration, the port
//! going ACTIVE, and DOWN when the SM takes the link down.

use super::port::{
    attr, block, mad, port_in_modifier, Node, Port, GUIDS_PER_BLOCK, LINK_SPEED_EXT_SUPPORTED,
    LINK_SPEED_SUPPORTED, LINK_WIDTH_SUPPORTED, MAD_SIZE, MAD_STATUS_INVALID_FIELD,
    MAD_STATUS_UNSUPPORTED_ATTR, MTU_CAP, PHYS_DISABLED, PHYS_LINK_UP, PHYS_POLLING, PKEYS_PER_BLOCK,
    STATE_ACTIVE, STATE_ARMED, STATE_DOWN, STATE_INIT, VL_CAP,
};
use super::{eq::event, Firmware};
use crate::guest_memory::GuestMemory;
use log::{debug, info};

/// PORT_CHANGE sub-types (the driver's `MLX5_PORT_CHANGE_SUBTYPE_*`).
pub mod subtype {
    /// The link went down.
    pub const DOWN: u8 = 1;
    /// The port became ACTIVE.
    pub const ACTIVE: u8 = 4;
    /// The LID, LMC, SM LID or SM SL changed.
    pub const LID: u8 = 6;
    /// The P_Key table changed.
    pub const PKEY: u8 = 7;
    /// A GUID or the GID prefix changed.
    pub const GUID: u8 = 8;
    /// The SM asks the port's clients to register again.
    pub const CLIENT_REREG: u8 = 9;
}

/// A Set that leaves the physical port state as it is.
const PHYS_NO_CHANGE: u8 = 0;

/// PortInfo bytes an SM writes as they come, with the bits of each that are writable: M_Key, the
/// GID prefix, the M_Key lease period, M_KeyProtectBits and LMC, MasterSMSL, VLHighLimit,
/// VLStallCount and HOQLife, the partition enforcement and raw filter bits, the violation
/// counters, SubnetTimeOut, the error thresholds. The other writable fields have rules of their
/// own (below).
const WRITABLE: [(usize, u8); 20] = [
    (0, 0xff),
    (1, 0xff),
    (2, 0xff),
    (3, 0xff),
    (4, 0xff),
    (5, 0xff),
    (6, 0xff),
    (7, 0xff),
    (8, 0xff),
    (9, 0xff),
    (10, 0xff),
    (11, 0xff),
    (12, 0xff),
    (13, 0xff),
    (14, 0xff),
    (15, 0xff),
    (26, 0xff),
    (27, 0xff),
    (34, 0xc7),
    (36, 0x0f),
];
/// More writable bytes, after the NeighborMTU rule.
const WRITABLE_LATE: [(usize, u8); 10] = [
    (38, 0xff),
    (42, 0xff),
    (43, 0x0f),
    (44, 0xff),
    (45, 0xff),
    (46, 0xff),
    (47, 0xff),
    (48, 0xff),
    (49, 0xff),
    (53, 0xff),
];

/// What a Set changed, for the events it raises.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Changes {
    down: bool,
    lid: bool,
    pkey: bool,
    guid: bool,
    client_rereg: bool,
    active: bool,
}

/// Reads a big-endian u16 at `at`.
fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}

/// Whether `lid` is a unicast LID an SM may assign.
fn unicast(lid: u16) -> bool {
    (1..0xc000).contains(&lid)
}

/// An "enabled" bit field: 0 keeps `old`, `all` selects every supported value, anything else
/// must be a subset of `supported`.
fn enabled(new: u8, old: u8, all: u8, supported: u8) -> Option<u8> {
    match new {
        0 => Some(old),
        n if n == all => Some(supported),
        n if n & !supported == 0 => Some(n),
        _ => None,
    }
}

/// The port after a Set of PortInfo with data `d`, or the status refusing it.
fn port_info(old: &Port, d: &[u8]) -> Result<(Port, Changes), u16> {
    let invalid = Err(MAD_STATUS_INVALID_FIELD);
    let mut p = old.clone();
    let mut c = Changes::default();
    let write = |p: &mut Port, table: &[(usize, u8)]| {
        for &(i, mask) in table {
            p.info[i] = (p.info[i] & !mask) | (d[i] & mask);
        }
    };
    write(&mut p, &WRITABLE);
    write(&mut p, &WRITABLE_LATE);
    let (lid, sm_lid) = (be16(d, 16), be16(d, 18));
    if (lid != old.lid && !unicast(lid)) || (sm_lid != old.sm_lid && !unicast(sm_lid)) {
        return invalid;
    }
    (p.lid, p.sm_lid) = (lid, sm_lid);
    p.info[29] = enabled(d[29], old.info[29], 0xff, LINK_WIDTH_SUPPORTED).ok_or(MAD_STATUS_INVALID_FIELD)?;
    let speed = enabled(d[35] & 0xf, old.info[35] & 0xf, 0xf, LINK_SPEED_SUPPORTED)
        .ok_or(MAD_STATUS_INVALID_FIELD)?;
    p.info[35] = (p.info[35] & 0xf0) | speed;
    let ext = match d[63] & 0x1f {
        0 => old.info[63] & 0x1f,
        0x1e | 0x1f => LINK_SPEED_EXT_SUPPORTED,
        n if n & !LINK_SPEED_EXT_SUPPORTED == 0 => n,
        _ => return invalid,
    };
    p.info[63] = ext;
    let mtu = d[36] >> 4;
    if !(1..=MTU_CAP).contains(&mtu) {
        return invalid;
    }
    p.info[36] = (mtu << 4) | (p.info[36] & 0xf);
    match d[43] >> 4 {
        0 => {}
        v if v <= VL_CAP => p.info[43] = (v << 4) | (p.info[43] & 0xf),
        _ => return invalid,
    }
    match d[33] & 0xf {
        0 => {}
        v @ (1 | 2) => p.info[33] = (p.info[33] & 0xf0) | v,
        _ => return invalid,
    }
    p.info[51] = (p.info[51] & 0x80) | (d[51] & 0x1f);
    // The logical state: ARMED from INIT (or ARMED), ACTIVE from ARMED (or ACTIVE), DOWN from any
    // state (the link retrains and the port comes back INIT); INIT cannot be set.
    match d[32] & 0xf {
        0 => {}
        1 => {
            p.state = STATE_INIT;
            c.down = true;
        }
        STATE_ARMED if matches!(old.state, STATE_INIT | STATE_ARMED) => p.state = STATE_ARMED,
        STATE_ACTIVE if matches!(old.state, STATE_ARMED | STATE_ACTIVE) => p.state = STATE_ACTIVE,
        _ => return invalid,
    }
    match d[33] >> 4 {
        PHYS_NO_CHANGE => {}
        PHYS_POLLING => {
            (p.state, p.phys_state) = (STATE_INIT, PHYS_LINK_UP);
            c.down = true;
        }
        PHYS_DISABLED => {
            (p.state, p.phys_state) = (STATE_DOWN, PHYS_DISABLED);
            c.down = true;
        }
        _ => return invalid,
    }
    c.lid = p.lid != old.lid
        || p.lmc() != old.lmc()
        || p.sm_lid != old.sm_lid
        || (p.info[36] & 0xf) != (old.info[36] & 0xf);
    c.guid = p.info[8..16] != old.info[8..16];
    c.client_rereg = d[51] & 0x80 != 0;
    c.active = p.state == STATE_ACTIVE && old.state != STATE_ACTIVE;
    Ok((p, c))
}

/// The port after a Set of block `attr_mod` of its P_Key table.
fn pkey_table(old: &Port, attr_mod: u32, d: &[u8]) -> Result<(Port, Changes), u16> {
    block(&old.pkeys, PKEYS_PER_BLOCK, attr_mod).ok_or(MAD_STATUS_INVALID_FIELD)?;
    let mut p = old.clone();
    let start = attr_mod as usize * PKEYS_PER_BLOCK;
    for (i, k) in p.pkeys[start..start + PKEYS_PER_BLOCK].iter_mut().enumerate() {
        *k = be16(d, i * 2);
    }
    let pkey = p.pkeys != old.pkeys;
    Ok((
        p,
        Changes {
            pkey,
            ..Default::default()
        },
    ))
}

/// The port after a Set of block `attr_mod` of its GUID table; the port GUID (entry 0) is
/// read-only, the alias GUIDs after it are the SM's.
fn guid_info(old: &Port, attr_mod: u32, d: &[u8]) -> Result<(Port, Changes), u16> {
    block(&old.guids, GUIDS_PER_BLOCK, attr_mod).ok_or(MAD_STATUS_INVALID_FIELD)?;
    let mut p = old.clone();
    let start = attr_mod as usize * GUIDS_PER_BLOCK;
    for i in 0..GUIDS_PER_BLOCK {
        if start + i != 0 {
            p.guids[start + i] = u64::from_be_bytes(d[i * 8..i * 8 + 8].try_into().unwrap_or_default());
        }
    }
    let guid = p.guids != old.guids;
    Ok((
        p,
        Changes {
            guid,
            ..Default::default()
        },
    ))
}

/// The port after a Set of one of its VL tables (they raise no event).
fn vl_table(old: &Port, attr_id: u16, attr_mod: u32, d: &[u8]) -> Result<(Port, Changes), u16> {
    let mut p = old.clone();
    if attr_id == attr::SL_TO_VL_TABLE {
        // Each SL's VL must be a data VL the port has, or VL15 (the SL's packets are dropped).
        if d[..8]
            .iter()
            .flat_map(|b| [b >> 4, b & 0xf])
            .any(|vl| vl >= 8 && vl != 15)
        {
            return Err(MAD_STATUS_INVALID_FIELD);
        }
        p.sl2vl.copy_from_slice(&d[..8]);
    } else {
        match attr_mod >> 16 {
            b @ 1..=4 => p.vl_arb[b as usize - 1].copy_from_slice(&d[..64]),
            _ => return Err(MAD_STATUS_INVALID_FIELD),
        }
    }
    Ok((p, Changes::default()))
}

/// The port a PortInfo Set names: the modifier's port, 0 for the one the SMP arrived on.
fn target(node: &Node, arrived: u8, attr_id: u16, attr_mod: u32) -> Option<u8> {
    match port_in_modifier(attr_mod) {
        _ if attr_id != attr::PORT_INFO => Some(arrived),
        0 => Some(arrived),
        n => node.port(n).map(|p| p.num),
    }
}

/// A Set the SMA of port `arrived` received (`m`, a subnet management MAD): applies it if every
/// component is valid, raises the events of what changed, and turns `m` into the answer (the
/// attribute as it is now). Returns the MAD status.
pub fn set(fw: &mut Firmware, mem: &mut dyn GuestMemory, arrived: u8, m: &mut [u8; MAD_SIZE]) -> u16 {
    let attr_id = be16(&m[..], mad::ATTR_ID);
    let attr_mod = u32::from_be_bytes(m[mad::ATTR_MOD..mad::ATTR_MOD + 4].try_into().unwrap_or_default());
    let d: [u8; 64] = m[mad::SMP_DATA..mad::SMP_DATA + 64].try_into().unwrap_or([0; 64]);
    let Some(num) = target(&fw.node, arrived, attr_id, attr_mod) else {
        return MAD_STATUS_INVALID_FIELD;
    };
    let Some(old) = fw.node.port(num).cloned() else {
        return MAD_STATUS_INVALID_FIELD;
    };
    let applied = match attr_id {
        attr::PORT_INFO => port_info(&old, &d),
        attr::PKEY_TABLE => pkey_table(&old, attr_mod, &d),
        attr::GUID_INFO => guid_info(&old, attr_mod, &d),
        attr::SL_TO_VL_TABLE | attr::VL_ARB_TABLE => vl_table(&old, attr_id, attr_mod, &d),
        // Nothing of it can be enabled without FDR10: answered as it is.
        attr::MLNX_EXT_PORT_INFO => Ok((old.clone(), Changes::default())),
        _ => Err(MAD_STATUS_UNSUPPORTED_ATTR),
    };
    let status = match applied {
        Ok((new, changes)) => {
            if new.lid != old.lid || new.state != old.state {
                info!(
                    "SMA port {num}: LID {:#x} -> {:#x}, state {} -> {}, SM LID {:#x}",
                    old.lid, new.lid, old.state, new.state, new.sm_lid
                );
            }
            if let Some(p) = fw.node.port_mut(num) {
                *p = new;
            }
            raise(fw, mem, num, changes);
            0
        }
        Err(status) => {
            debug!("SMA port {num}: Set of attribute {attr_id:#06x} refused with status {status:#x}");
            status
        }
    };
    let Some(now) = fw.node.port(arrived).cloned() else {
        return status;
    };
    let answered = fw.node.answer_smp(&now, m);
    if status != 0 {
        status
    } else {
        answered
    }
}

/// Posts the PORT_CHANGE events of `c` for port `num`, in the order firmware reports them.
fn raise(fw: &mut Firmware, mem: &mut dyn GuestMemory, num: u8, c: Changes) {
    let mut data = [0u8; 28];
    data[8] = num << 4;
    let events = [
        (c.down, subtype::DOWN),
        (c.lid, subtype::LID),
        (c.pkey, subtype::PKEY),
        (c.guid, subtype::GUID),
        (c.client_rereg, subtype::CLIENT_REREG),
        (c.active, subtype::ACTIVE),
    ];
    for (_, sub) in events.iter().filter(|(happened, _)| *happened) {
        fw.post_event(mem, event::PORT_CHANGE, *sub, &data);
    }
}

/// A packet at or from a managed port that is not up: only subnet management packets (QP0) move
/// before the SM has made the port ACTIVE (IBA 7.2: INIT and ARMED ports take SMPs only; an ARMED
/// port that receives another packet becomes ACTIVE). Returns whether `port` may carry a packet
/// of QP `qpn`, `receiving` it or sending it, and raises the ACTIVE event of an ARMED port that
/// receives one.
pub fn link_admits(
    fw: &mut Firmware,
    mem: &mut dyn GuestMemory,
    port: u8,
    qpn: u32,
    receiving: bool,
) -> bool {
    if !fw.config.managed || qpn == 0 {
        return true;
    }
    match fw.node.port(port).map(|p| p.state) {
        Some(STATE_ACTIVE) => true,
        Some(STATE_ARMED) if receiving => {
            if let Some(p) = fw.node.port_mut(port) {
                p.state = STATE_ACTIVE;
            }
            info!("SMA port {port}: ARMED -> ACTIVE on a packet received");
            raise(
                fw,
                mem,
                port,
                Changes {
                    active: true,
                    ..Default::default()
                },
            );
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::firmware::FirmwareConfig;

    fn managed() -> Port {
        Node::new(&FirmwareConfig {
            managed: true,
            ..Default::default()
        })
        .ports[0]
            .clone()
    }

    /// PortInfo data as the SM sends it: the port's current attribute with `f` applied.
    fn info_set(p: &Port, f: impl FnOnce(&mut [u8; 64])) -> [u8; 64] {
        let mut d = [0u8; 64];
        Node::port_info(p, &mut d);
        d[32] &= 0xf0; // PortState: no change
        d[33] &= 0x0f; // PortPhysicalState: no change
        f(&mut d);
        d
    }

    #[test]
    fn a_managed_port_waits_for_the_sm() {
        let p = managed();
        assert_eq!(
            (p.lid, p.sm_lid, p.state, p.phys_state),
            (0, 0, STATE_INIT, PHYS_LINK_UP)
        );
    }

    #[test]
    fn the_sm_assigns_the_lid_then_arms_and_activates() {
        let p = managed();
        let d = info_set(&p, |d| {
            d[16..18].copy_from_slice(&7u16.to_be_bytes());
            d[18..20].copy_from_slice(&1u16.to_be_bytes());
            d[32] |= STATE_ARMED;
            d[51] |= 0x80;
        });
        let (p, c) = port_info(&p, &d).unwrap();
        assert_eq!((p.lid, p.sm_lid, p.state), (7, 1, STATE_ARMED));
        assert!(c.lid && c.client_rereg && !c.active && !c.down);
        assert_eq!(p.info[51] & 0x80, 0, "ClientReregister is not kept");
        let d = info_set(&p, |d| d[32] |= STATE_ACTIVE);
        let (p, c) = port_info(&p, &d).unwrap();
        assert_eq!(p.state, STATE_ACTIVE);
        assert_eq!(
            c,
            Changes {
                active: true,
                ..Default::default()
            }
        );
    }

    #[test]
    fn invalid_components_change_nothing() {
        let p = managed();
        // INIT -> ACTIVE skips ARMED; INIT cannot be set; LIDs 0 and multicast; MTU above the cap;
        // more operational VLs than the port has; a width it does not support.
        let cases: [fn(&mut [u8; 64]); 7] = [
            |d| d[32] |= STATE_ACTIVE,
            |d| d[32] |= STATE_INIT,
            |d| d[16..18].copy_from_slice(&0xc001u16.to_be_bytes()),
            |d| d[18..20].copy_from_slice(&0xffffu16.to_be_bytes()),
            |d| d[36] = (6 << 4) | (d[36] & 0xf),
            |d| d[43] = (5 << 4) | (d[43] & 0xf),
            |d| d[29] = 0x08,
        ];
        for f in cases {
            let d = info_set(&p, f);
            assert_eq!(port_info(&p, &d).map(|_| ()), Err(MAD_STATUS_INVALID_FIELD));
        }
    }

    #[test]
    fn taking_the_link_down_brings_the_port_back_to_init() {
        let mut p = managed();
        p.state = STATE_ACTIVE;
        p.lid = 9;
        let d = info_set(&p, |d| d[32] |= STATE_DOWN);
        let (p, c) = port_info(&p, &d).unwrap();
        assert_eq!((p.state, p.lid), (STATE_INIT, 9), "the port keeps its LID");
        assert!(c.down);
    }

    #[test]
    fn tables_are_kept_and_the_port_guid_is_read_only() {
        let p = managed();
        let mut d = [0u8; 64];
        d[0..2].copy_from_slice(&0xffffu16.to_be_bytes());
        d[2..4].copy_from_slice(&0x8001u16.to_be_bytes());
        let (q, c) = pkey_table(&p, 0, &d).unwrap();
        assert_eq!(&q.pkeys[..3], &[0xffff, 0x8001, 0]);
        assert!(c.pkey);
        assert_eq!(pkey_table(&p, 4, &d).map(|_| ()), Err(MAD_STATUS_INVALID_FIELD));
        let mut d = [0u8; 64];
        d[8..16].copy_from_slice(&0x1234u64.to_be_bytes());
        let (q, c) = guid_info(&p, 0, &d).unwrap();
        assert_eq!(&q.guids[..2], &[p.guid, 0x1234]);
        assert!(c.guid);
        let mut d = [0u8; 64];
        d[0] = 0x0f;
        assert!(vl_table(&p, attr::SL_TO_VL_TABLE, 0, &d).is_ok());
        d[0] = 0x09;
        assert!(vl_table(&p, attr::SL_TO_VL_TABLE, 0, &d).is_err());
    }
}
