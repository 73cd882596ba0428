//! The InfiniBand ports: their identity (GUIDs, LID), link state, and the commands that report
//! them: MAD_IFC (the subnet management attributes a port answers: NodeInfo, NodeDescription,
//! PortInfo, GUIDInfo, P_KeyTable), QUERY_HCA_VPORT_CONTEXT and QUERY_VPORT_STATE.
//!
//! A self-activating port (the default) presents itself as a configured, ACTIVE port with a LID,
//! the way it would after an SM swept it. A managed port (`--fabric managed`) comes up INIT without
//! a LID and takes its LID, state and tables from a subnet manager's Sets (see [`super::sma`]).

use super::{output, CmdError, CmdResult, Firmware, FirmwareConfig, Input};
use crate::command::Status;
use crate::guest_memory::GuestMemory;
use crate::ifc::{self, Field};
use log::debug;

/// Size of a MAD.
pub const MAD_SIZE: usize = 256;
/// Byte offset of the MAD in MAD_IFC input and output.
const MAD_OFFSET: usize = 0x10;
const MAD_IFC_PORT: Field = Field::new(0x58, 8);

/// Offsets inside a MAD / SMP.
pub(super) mod mad {
    pub const BASE_VERSION: usize = 0;
    pub const MGMT_CLASS: usize = 1;
    pub const CLASS_VERSION: usize = 2;
    pub const METHOD: usize = 3;
    pub const STATUS: usize = 4;
    /// Directed route: the hop count.
    pub const HOP_COUNT: usize = 7;
    pub const TID: usize = 8;
    pub const ATTR_ID: usize = 16;
    pub const ATTR_MOD: usize = 20;
    /// The SMP's M_Key.
    pub const M_KEY: usize = 24;
    /// Directed route: the requester's LID.
    pub const DR_SLID: usize = 32;
    pub const SMP_DATA: usize = 64;
}

/// Management classes the model answers.
pub(super) const CLASS_SMP_LID_ROUTED: u8 = 0x01;
pub(super) const CLASS_SMP_DIRECTED: u8 = 0x81;
pub(super) const METHOD_GET: u8 = 0x01;
pub(super) const METHOD_SET: u8 = 0x02;
const METHOD_GET_RESP: u8 = 0x81;
pub(super) const METHOD_TRAP: u8 = 0x05;
const METHOD_TRAP_REPRESS: u8 = 0x07;
/// MAD_IFC `op_mod` bit: the M_Key is not checked (the host's own MADs).
const OP_MOD_IGNORE_MKEY: u16 = 0x1;
/// MAD status: the method/attribute combination is not supported.
pub const MAD_STATUS_UNSUPPORTED_ATTR: u16 = 0x000c;
/// MAD status: a field of the attribute or modifier is invalid.
pub const MAD_STATUS_INVALID_FIELD: u16 = 0x001c;
/// MAD status: the method is not supported.
const MAD_STATUS_UNSUPPORTED_METHOD: u16 = 0x0008;

/// Subnet management attributes.
pub(super) mod attr {
    /// The Notice a trap carries.
    pub const NOTICE: u16 = 0x0002;
    pub const NODE_DESCRIPTION: u16 = 0x0010;
    pub const NODE_INFO: u16 = 0x0011;
    pub const GUID_INFO: u16 = 0x0014;
    pub const PORT_INFO: u16 = 0x0015;
    pub const PKEY_TABLE: u16 = 0x0016;
    pub const SL_TO_VL_TABLE: u16 = 0x0017;
    pub const VL_ARB_TABLE: u16 = 0x0018;
    /// Mellanox's ExtendedPortInfo (FDR10 speeds), which infiniband-diags reads of ConnectX ports.
    pub const MLNX_EXT_PORT_INFO: u16 = 0xff90;
}

/// P_Key table length reported in NodeInfo.PartitionCap.
pub const PKEY_TABLE_LEN: u16 = 128;
/// GUID table length reported in PortInfo.GUIDCap.
pub const GUID_TABLE_LEN: u8 = 8;
/// Port state DOWN.
pub const STATE_DOWN: u8 = 1;
/// Port state INIT: the link is up, no SM has armed the port yet.
pub const STATE_INIT: u8 = 2;
/// Port state ARMED.
pub const STATE_ARMED: u8 = 3;
/// Port state ACTIVE.
pub const STATE_ACTIVE: u8 = 4;
/// Entries of a P_Key table block (`P_KeyTable`, 32 per attribute modifier).
pub const PKEYS_PER_BLOCK: usize = 32;
/// Entries of a GUIDInfo block.
pub const GUIDS_PER_BLOCK: usize = 8;
/// Physical port state Polling (training the link).
pub const PHYS_POLLING: u8 = 2;
/// Physical port state Disabled.
pub const PHYS_DISABLED: u8 = 3;
/// Physical port state LinkUp.
pub const PHYS_LINK_UP: u8 = 5;
/// PortInfo.CapabilityMask: SM-configured features a ConnectX port reports (trap, automatic path
/// migration, SL mapping, LED info, system image GUID, extended speeds, CapabilityMask2, vendor
/// class, capability-mask notice, client reregistration, ...).
pub const CAPABILITY_MASK: u32 = 0x2651_e848;
/// PortInfo.LinkWidthSupported: 1X, 4X.
pub const LINK_WIDTH_SUPPORTED: u8 = 0x03;
/// PortInfo.LinkSpeedSupported: SDR, DDR, QDR.
pub const LINK_SPEED_SUPPORTED: u8 = 0x7;
/// PortInfo.LinkSpeedExtSupported: FDR, EDR.
pub const LINK_SPEED_EXT_SUPPORTED: u8 = 0x3;
/// PortInfo.VLCap: VL0-7.
pub const VL_CAP: u8 = 4;
/// PortInfo.MTUCap: 4096 bytes.
pub const MTU_CAP: u8 = 5;
/// The permissive LID.
pub const LID_PERMISSIVE: u16 = 0xffff;
/// NodeDescription firmware reports before the host sets one.
pub const NODE_DESCRIPTION: &str = "MT4119 ConnectX5   Mellanox Technologies";

/// One InfiniBand port's identity and state.
#[derive(Debug, Clone)]
pub struct Port {
    /// Port number (1-based).
    pub num: u8,
    /// Port GUID.
    pub guid: u64,
    /// Base LID.
    pub lid: u16,
    /// LID of the subnet manager.
    pub sm_lid: u16,
    /// Logical port state (4 = ACTIVE).
    pub state: u8,
    /// Physical port state (5 = LinkUp).
    pub phys_state: u8,
    /// PortInfo.CapabilityMask: [`CAPABILITY_MASK`] until the host writes the PCAP register
    /// (IsSM while a subnet manager holds `issmN`).
    pub cap_mask: u32,
    /// The PortInfo attribute as an SM last set it: the writable fields (M_Key, GID prefix,
    /// enabled widths and speeds, LMC, MTU, VLs, timers, ...) at their offsets; the fields kept
    /// above and the read-only ones are filled in when it is read.
    pub info: [u8; 64],
    /// The P_Key table ([`PKEY_TABLE_LEN`] entries; the default full-member key first).
    pub pkeys: Vec<u16>,
    /// The GUID table ([`GUID_TABLE_LEN`] entries; the port GUID first, alias GUIDs after).
    pub guids: Vec<u64>,
    /// SLtoVLMappingTable: 16 four-bit entries.
    pub sl2vl: [u8; 8],
    /// VLArbitrationTable blocks (low priority 0-31, 32-63, high priority 0-31, 32-63).
    pub vl_arb: [[u8; 64]; 4],
}

impl Port {
    /// A port of the node, configured (`managed` false: ACTIVE with `lid`) or waiting for an SM
    /// (INIT, LID 0).
    fn new(num: u8, guid: u64, lid: u16, managed: bool) -> Self {
        let mut info = [0u8; 64];
        info[8..16].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes()); // GidPrefix
        info[29] = 0x02; // LinkWidthEnabled: 4X
        info[33] = 0x2; // LinkDownDefaultState: Polling
        info[35] = 0x7; // LinkSpeedEnabled: SDR, DDR, QDR
        info[36] = 5 << 4; // NeighborMTU 4096, MasterSMSL 0
        info[38] = 0x10; // VLHighLimit
        info[43] = 4 << 4; // OperationalVLs: VL0-7
        info[51] = 18; // SubnetTimeOut
        info[63] = 0x2; // LinkSpeedExtEnabled: EDR
        let mut pkeys = vec![0u16; usize::from(PKEY_TABLE_LEN)];
        pkeys[0] = 0xffff;
        let mut guids = vec![0u64; usize::from(GUID_TABLE_LEN)];
        guids[0] = guid;
        Self {
            num,
            guid,
            lid: if managed { 0 } else { lid },
            sm_lid: if managed { 0 } else { 1 },
            state: if managed { STATE_INIT } else { STATE_ACTIVE },
            phys_state: PHYS_LINK_UP,
            cap_mask: CAPABILITY_MASK,
            info,
            pkeys,
            guids,
            // SL n on VL n for the eight data VLs, as firmware leaves it.
            sl2vl: [0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x67],
            vl_arb: [[0; 64]; 4],
        }
    }

    /// The LMC (LID mask control) the SM set.
    pub fn lmc(&self) -> u8 {
        self.info[34] & 0x7
    }

    /// Whether `lid` addresses this port: its base LID and the 2^LMC LIDs from it.
    pub fn has_lid(&self, lid: u16) -> bool {
        self.lid != 0 && lid >> self.lmc() == self.lid >> self.lmc()
    }
}

/// The node: identity shared by its ports.
#[derive(Debug, Clone)]
pub struct Node {
    /// Node GUID.
    pub guid: u64,
    /// System image GUID.
    pub system_image_guid: u64,
    /// Node description.
    pub description: String,
    /// Ports, index 0 = port 1.
    pub ports: Vec<Port>,
    /// Garbage put into answers on purpose (`mad-poke`): for SMPs of attribute `.0`, the data
    /// bytes from offset `.1` are replaced by `.2` after the answer is built.
    pub pokes: Vec<(u16, usize, Vec<u8>)>,
}

impl Node {
    /// Identity derived from the instance's seed: Mellanox OUI 00:02:c9, then the seed.
    pub fn new(config: &FirmwareConfig) -> Self {
        let base = (0x0002_c903_u64 << 32) | ((config.guid_seed & 0x00ff_ffff) << 8);
        // Unicast LIDs are 1..0xbfff; the SM sits at LID 1, the ports follow.
        let lid0 = 2 + (config.guid_seed % 0x1000) as u16 * 4;
        let ports = (1..=config.ports)
            .map(|num| {
                Port::new(
                    num,
                    base + u64::from(num),
                    lid0 + u16::from(num) - 1,
                    config.managed,
                )
            })
            .collect();
        Self {
            guid: base,
            system_image_guid: base,
            description: NODE_DESCRIPTION.into(),
            ports,
            pokes: Vec::new(),
        }
    }

    /// Port `num` (1-based).
    pub fn port(&self, num: u8) -> Option<&Port> {
        self.ports.get(usize::from(num).checked_sub(1)?)
    }

    /// Port `num` (1-based), to change.
    pub fn port_mut(&mut self, num: u8) -> Option<&mut Port> {
        self.ports.get_mut(usize::from(num).checked_sub(1)?)
    }

    /// The port a packet for `dlid` arrives at: the one with that LID, or for the permissive LID
    /// (a directed-route SMP) the port the wire is attached to, port 1.
    pub fn port_for_dlid(&self, dlid: u16) -> Option<u8> {
        if dlid == LID_PERMISSIVE {
            return self.ports.first().map(|p| p.num);
        }
        self.ports.iter().find(|p| p.has_lid(dlid)).map(|p| p.num)
    }

    fn node_info(&self, port: &Port, d: &mut [u8]) {
        d[0] = 1; // BaseVersion
        d[1] = 1; // ClassVersion
        d[2] = 1; // NodeType: channel adapter
        d[3] = self.ports.len() as u8;
        d[4..12].copy_from_slice(&self.system_image_guid.to_be_bytes());
        d[12..20].copy_from_slice(&self.guid.to_be_bytes());
        d[20..28].copy_from_slice(&port.guid.to_be_bytes());
        d[28..30].copy_from_slice(&PKEY_TABLE_LEN.to_be_bytes());
        d[30..32].copy_from_slice(&crate::pci_config::DEVICE_ID.to_be_bytes());
        d[36] = port.num; // LocalPortNum
        d[37..40].copy_from_slice(&super::hca::MELLANOX_OUI.to_be_bytes()[5..8]);
    }

    /// PortInfo: what the SM set ([`Port::info`]) with the port's own fields filled in.
    pub(super) fn port_info(port: &Port, d: &mut [u8]) {
        d[..64].copy_from_slice(&port.info);
        d[16..18].copy_from_slice(&port.lid.to_be_bytes());
        d[18..20].copy_from_slice(&port.sm_lid.to_be_bytes());
        d[20..24].copy_from_slice(&port.cap_mask.to_be_bytes());
        d[24..26].fill(0); // DiagCode
        d[28] = port.num; // LocalPortNum
        d[30] = LINK_WIDTH_SUPPORTED;
        d[31] = 0x02; // LinkWidthActive: 4X
        d[32] = (LINK_SPEED_SUPPORTED << 4) | port.state;
        d[33] = (port.phys_state << 4) | (d[33] & 0xf);
        d[35] = (0x1 << 4) | (d[35] & 0xf); // LinkSpeedActive SDR (extended speed below)
        d[37] = VL_CAP << 4; // VLCap, InitType 0
        d[39] = 0; // VLArbitrationHighCap
        d[40] = 0; // VLArbitrationLowCap
        d[41] = MTU_CAP; // InitTypeReply 0, MTUCap
        d[50] = GUID_TABLE_LEN;
        d[51] &= 0x1f; // ClientReregister reads 0
        d[52] = 0; // RespTimeValue
        d[54..60].fill(0);
        d[60..62].copy_from_slice(&0u16.to_be_bytes()); // CapabilityMask2
        d[62] = (2 << 4) | LINK_SPEED_EXT_SUPPORTED; // LinkSpeedExtActive: EDR (25.78 Gb/s per lane)
    }

    /// Answers the SMP in `m` in place, then applies the pokes of its attribute; returns the
    /// MAD status.
    pub(super) fn answer_smp(&self, port: &Port, m: &mut [u8; MAD_SIZE]) -> u16 {
        let status = self.answer_smp_plain(port, m);
        let attr_id = u16::from_be_bytes([m[mad::ATTR_ID], m[mad::ATTR_ID + 1]]);
        let d = &mut m[mad::SMP_DATA..mad::SMP_DATA + 64];
        for (attr, off, bytes) in &self.pokes {
            if *attr == attr_id {
                let end = (off + bytes.len()).min(d.len());
                if *off < end {
                    d[*off..end].copy_from_slice(&bytes[..end - off]);
                }
            }
        }
        status
    }

    fn answer_smp_plain(&self, port: &Port, m: &mut [u8; MAD_SIZE]) -> u16 {
        let attr_id = u16::from_be_bytes([m[mad::ATTR_ID], m[mad::ATTR_ID + 1]]);
        let attr_mod = u32::from_be_bytes(m[mad::ATTR_MOD..mad::ATTR_MOD + 4].try_into().unwrap_or_default());
        let d = &mut m[mad::SMP_DATA..mad::SMP_DATA + 64];
        d.fill(0);
        match attr_id {
            attr::NODE_INFO => self.node_info(port, d),
            attr::NODE_DESCRIPTION => {
                let b = self.description.as_bytes();
                let n = b.len().min(64);
                d[..n].copy_from_slice(&b[..n]);
            }
            attr::PORT_INFO => {
                // The modifier's low byte selects the port, 0 the one the SMP arrived on (bit 31
                // says the SM knows the extended speeds; the other bits are reserved).
                let p = match port_in_modifier(attr_mod) {
                    0 => Some(port),
                    n => self.port(n),
                };
                match p {
                    Some(p) => Self::port_info(p, d),
                    None => return MAD_STATUS_UNSUPPORTED_ATTR,
                }
            }
            attr::GUID_INFO => match block(&port.guids, GUIDS_PER_BLOCK, attr_mod) {
                Some(guids) => {
                    for (i, g) in guids.iter().enumerate() {
                        d[i * 8..i * 8 + 8].copy_from_slice(&g.to_be_bytes());
                    }
                }
                None => return MAD_STATUS_UNSUPPORTED_ATTR,
            },
            attr::PKEY_TABLE => match block(&port.pkeys, PKEYS_PER_BLOCK, attr_mod) {
                Some(pkeys) => {
                    for (i, k) in pkeys.iter().enumerate() {
                        d[i * 2..i * 2 + 2].copy_from_slice(&k.to_be_bytes());
                    }
                }
                None => return MAD_STATUS_UNSUPPORTED_ATTR,
            },
            // No FDR10: its supported, enabled and active speeds are all 0.
            attr::MLNX_EXT_PORT_INFO => {}
            // A channel adapter has one table: the modifier's port fields are ignored.
            attr::SL_TO_VL_TABLE => d[..8].copy_from_slice(&port.sl2vl),
            attr::VL_ARB_TABLE => match attr_mod >> 16 {
                b @ 1..=4 => d.copy_from_slice(&port.vl_arb[b as usize - 1]),
                _ => return MAD_STATUS_INVALID_FIELD,
            },
            _ => return MAD_STATUS_UNSUPPORTED_ATTR,
        }
        0
    }
}

/// The port a PortInfo modifier names (its low byte).
pub(super) fn port_in_modifier(attr_mod: u32) -> u8 {
    (attr_mod & 0xff) as u8
}

/// Block `attr_mod` of `table` (`per` entries a block), if the table has it.
pub(super) fn block<T>(table: &[T], per: usize, attr_mod: u32) -> Option<&[T]> {
    let start = usize::try_from(attr_mod).ok()?.checked_mul(per)?;
    table.get(start..start.checked_add(per)?)
}

/// MAD_IFC: the port's management agent answers a MAD.
pub fn mad_ifc(fw: &mut Firmware, mem: &mut dyn GuestMemory, input: &Input) -> CmdResult {
    if input.len() < MAD_OFFSET + MAD_SIZE {
        return Err(CmdError::new(Status::BadInputLength, 0x3ad_0001));
    }
    let num = input.get(MAD_IFC_PORT) as u8;
    let port = fw
        .node
        .port(num)
        .cloned()
        .ok_or(CmdError::new(Status::BadParameter, 0x3ad_0002))?;
    let mut m = [0u8; MAD_SIZE];
    m.copy_from_slice(&input.bytes()[MAD_OFFSET..MAD_OFFSET + MAD_SIZE]);
    let class = m[mad::MGMT_CLASS];
    let method = m[mad::METHOD];
    // An SMP from the fabric must carry the port's M_Key (see `mkey`); the driver's own are not
    // checked.
    let smp = matches!(class, CLASS_SMP_LID_ROUTED | CLASS_SMP_DIRECTED);
    let mut hidden = false;
    if smp && input.op_mod() & OP_MOD_IGNORE_MKEY == 0 {
        match super::mkey::check(&port, &m) {
            super::mkey::Check::Fail => {
                super::mkey::violation(fw, mem, num, &m);
                return Err(CmdError::new(Status::BadParameter, 0x3ad_0003));
            }
            super::mkey::Check::PassHidden => hidden = true,
            super::mkey::Check::Pass => {}
        }
    }
    let status = match (class, method) {
        (CLASS_SMP_LID_ROUTED | CLASS_SMP_DIRECTED, METHOD_GET) => fw.node.answer_smp(&port, &mut m),
        // A managed port applies an SM's Sets; a self-configured one answers with what it has.
        (CLASS_SMP_LID_ROUTED | CLASS_SMP_DIRECTED, METHOD_SET) if fw.config.managed => {
            super::sma::set(fw, mem, num, &mut m)
        }
        (CLASS_SMP_LID_ROUTED | CLASS_SMP_DIRECTED, METHOD_SET) => fw.node.answer_smp(&port, &mut m),
        // A trap's answer: the agent sends each trap once, so nothing is left to stop.
        (CLASS_SMP_LID_ROUTED | CLASS_SMP_DIRECTED, METHOD_TRAP_REPRESS) => 0,
        (CLASS_SMP_LID_ROUTED | CLASS_SMP_DIRECTED, _) => MAD_STATUS_UNSUPPORTED_METHOD,
        (super::pma::CLASS_PERF_MGMT, METHOD_GET) => {
            let attr = u16::from_be_bytes([m[mad::ATTR_ID], m[mad::ATTR_ID + 1]]);
            super::pma::answer_get(&fw.datapath.counters, attr, num, &mut m)
        }
        _ => MAD_STATUS_UNSUPPORTED_METHOD,
    };
    debug!(
        "MAD_IFC port {num}: class {class:#x} method {method:#x} attr {:#06x} -> status {status:#x}",
        u16::from_be_bytes([m[mad::ATTR_ID], m[mad::ATTR_ID + 1]])
    );
    if hidden {
        super::mkey::hide(&mut m);
    }
    m[mad::METHOD] = METHOD_GET_RESP;
    m[mad::STATUS..mad::STATUS + 2].copy_from_slice(&status.to_be_bytes());
    let mut out = output(MAD_OFFSET + MAD_SIZE);
    out[MAD_OFFSET..].copy_from_slice(&m);
    Ok(out)
}

/// `hca_vport_context` fields in QUERY_HCA_VPORT_CONTEXT output.
mod vport {
    use crate::ifc::Field;
    pub const IN_OTHER_VPORT: Field = Field::new(0x40, 1);
    pub const IN_PORT_NUM: Field = Field::new(0x4c, 4);
    pub const HAS_SMI: Field = Field::new(0x181, 1);
    pub const PORT_PHYSICAL_STATE: Field = Field::new(0x190, 4);
    pub const PORT_STATE: Field = Field::new(0x198, 4);
    pub const VPORT_STATE: Field = Field::new(0x19c, 4);
    pub const SYSTEM_IMAGE_GUID: Field = Field::new(0x1c0, 64);
    pub const PORT_GUID: Field = Field::new(0x200, 64);
    pub const NODE_GUID: Field = Field::new(0x240, 64);
    pub const CAP_MASK1: Field = Field::new(0x280, 32);
    pub const LID: Field = Field::new(0x380, 16);
    pub const SUBNET_TIMEOUT: Field = Field::new(0x39b, 5);
    pub const SM_LID: Field = Field::new(0x3a0, 16);
    pub const OUT_LEN: usize = 0x10 + 0x200;
    pub const STATE_OUT_STATE: Field = Field::new(0x7c, 4);
    pub const STATE_OUT_ADMIN_STATE: Field = Field::new(0x78, 4);
}

fn port_of(fw: &Firmware, input: &Input) -> Result<Port, CmdError> {
    if input.get(vport::IN_OTHER_VPORT) != 0 {
        return Err(CmdError::new(Status::BadParameter, 0x762_0001));
    }
    // Port 0 means the function's own port on single-port devices.
    let n = (input.get(vport::IN_PORT_NUM) as u8).max(1);
    fw.node
        .port(n)
        .cloned()
        .ok_or(CmdError::new(Status::BadParameter, 0x762_0002))
}

/// QUERY_HCA_VPORT_CONTEXT: the port as the function's own vport sees it.
pub fn query_hca_vport_context(fw: &mut Firmware, input: &Input) -> CmdResult {
    let port = port_of(fw, input)?;
    let mut out = output(vport::OUT_LEN);
    let mut set = |f: Field, v: u64| ifc::set(&mut out, f, v);
    set(vport::HAS_SMI, 1);
    set(vport::PORT_PHYSICAL_STATE, u64::from(port.phys_state));
    set(vport::PORT_STATE, u64::from(port.state));
    set(vport::VPORT_STATE, u64::from(port.state));
    set(vport::SYSTEM_IMAGE_GUID, fw.node.system_image_guid);
    set(vport::PORT_GUID, port.guid);
    set(vport::NODE_GUID, fw.node.guid);
    set(vport::CAP_MASK1, u64::from(port.cap_mask));
    set(vport::LID, u64::from(port.lid));
    set(vport::SUBNET_TIMEOUT, 18);
    set(vport::SM_LID, u64::from(port.sm_lid));
    Ok(out)
}

/// QUERY_VPORT_STATE: link state of the function's vport (1 = down, 4 = up in vport terms; the
/// IB logical state otherwise).
pub fn query_vport_state(fw: &mut Firmware, input: &Input) -> CmdResult {
    if input.get(vport::IN_OTHER_VPORT) != 0 {
        return Err(CmdError::new(Status::BadParameter, 0x750_0001));
    }
    let port = fw
        .node
        .port(1)
        .cloned()
        .ok_or(CmdError::new(Status::BadParameter, 0x750_0002))?;
    let mut out = output(16);
    let up = port.state == STATE_ACTIVE;
    ifc::set(&mut out, vport::STATE_OUT_STATE, if up { 1 } else { 0 });
    ifc::set(&mut out, vport::STATE_OUT_ADMIN_STATE, 1);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn smp(attr_id: u16, attr_mod: u32) -> [u8; MAD_SIZE] {
        let mut m = [0u8; MAD_SIZE];
        m[0] = 1;
        m[mad::MGMT_CLASS] = CLASS_SMP_LID_ROUTED;
        m[2] = 1;
        m[mad::METHOD] = METHOD_GET;
        m[mad::ATTR_ID..mad::ATTR_ID + 2].copy_from_slice(&attr_id.to_be_bytes());
        m[mad::ATTR_MOD..mad::ATTR_MOD + 4].copy_from_slice(&attr_mod.to_be_bytes());
        m
    }

    #[test]
    fn identity_follows_the_seed() {
        let a = Node::new(&FirmwareConfig {
            guid_seed: 1,
            ..Default::default()
        });
        let b = Node::new(&FirmwareConfig {
            guid_seed: 2,
            ports: 2,
            ..Default::default()
        });
        assert_ne!(a.guid, b.guid);
        assert_ne!(a.ports[0].lid, b.ports[0].lid);
        assert_eq!(b.ports[1].guid, b.guid + 2);
        assert!(a
            .ports
            .iter()
            .chain(&b.ports)
            .all(|p| (1..0xc000).contains(&p.lid)));
    }

    #[test]
    fn port_info_and_node_info_fields() {
        let n = Node::new(&FirmwareConfig::default());
        let p = n.ports[0].clone();
        let mut m = smp(attr::PORT_INFO, 1);
        assert_eq!(n.answer_smp(&p, &mut m), 0);
        let d = &m[mad::SMP_DATA..];
        assert_eq!(u16::from_be_bytes([d[16], d[17]]), p.lid);
        assert_eq!(d[32] & 0xf, STATE_ACTIVE);
        assert_eq!(d[33] >> 4, PHYS_LINK_UP);
        assert_eq!(d[50], GUID_TABLE_LEN);
        let mut m = smp(attr::NODE_INFO, 0);
        assert_eq!(n.answer_smp(&p, &mut m), 0);
        let d = &m[mad::SMP_DATA..];
        assert_eq!(u64::from_be_bytes(d[12..20].try_into().unwrap()), n.guid);
        assert_eq!(u16::from_be_bytes([d[28], d[29]]), PKEY_TABLE_LEN);
        assert_eq!(u32::from_be_bytes(d[36..40].try_into().unwrap()) & 0xffff, 0x02c9);
    }

    #[test]
    fn tables_and_unknown_attributes() {
        let n = Node::new(&FirmwareConfig::default());
        let p = n.ports[0].clone();
        let mut m = smp(attr::PKEY_TABLE, 0);
        assert_eq!(n.answer_smp(&p, &mut m), 0);
        assert_eq!(&m[mad::SMP_DATA..mad::SMP_DATA + 2], &[0xff, 0xff]);
        let mut m = smp(attr::PKEY_TABLE, 4);
        assert_eq!(n.answer_smp(&p, &mut m), MAD_STATUS_UNSUPPORTED_ATTR);
        let mut m = smp(attr::GUID_INFO, 0);
        assert_eq!(n.answer_smp(&p, &mut m), 0);
        assert_eq!(u64::from_be_bytes(m[64..72].try_into().unwrap()), p.guid);
        let mut m = smp(0xff91, 1);
        assert_eq!(n.answer_smp(&p, &mut m), MAD_STATUS_UNSUPPORTED_ATTR);
    }
}
