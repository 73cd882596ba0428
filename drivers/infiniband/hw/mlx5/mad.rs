// SPDX-License-Identifier: GPL-2.0

//! Subnet management queries through MAD_IFC: how the C driver learns an InfiniBand port's
//! identity and state (`mad.c`). Each query is a LID-routed SMP `Get` of one attribute, handed to
//! the port's management agent in firmware; the answer's attribute data is decoded here.

use ib_core::mad::types::{
    class, flags as mad_flags, get16, get32, get64, hdr, method, put16, result, status, Mad, MadWc,
    MAD_SIZE,
};
use kernel::prelude::*;
use mlx5_core::{
    cmd::commands::Commands,
    ifc::{AccessRegPcap, AccessRegPcapIn, MadIfc, MadIfcIn},
};

/// Size of an SMP's attribute data.
pub(crate) const SMP_DATA_SIZE: usize = 64;
/// MAD_IFC `op_mod`: do not check the M_Key and the B_Key (the query has no work completion to
/// send a trap to), as `mlx5_MAD_IFC` sets it for queries.
const OP_MOD_IGNORE_KEYS: u64 = 0x3;

/// Subnet management attributes.
pub(crate) mod attr {
    /// NodeDescription.
    pub(crate) const NODE_DESC: u16 = 0x0010;
    /// NodeInfo.
    pub(crate) const NODE_INFO: u16 = 0x0011;
    /// GUIDInfo (8 GUIDs per block).
    pub(crate) const GUID_INFO: u16 = 0x0014;
    /// PortInfo.
    pub(crate) const PORT_INFO: u16 = 0x0015;
    /// P_KeyTable (32 P_Keys per block).
    pub(crate) const PKEY_TABLE: u16 = 0x0016;
}

/// SMInfo, which the firmware's agent cannot answer (`IB_SMP_ATTR_SM_INFO`).
const ATTR_SM_INFO: u16 = 0x0020;
/// Vendor classes the firmware answers (`MLX5_IB_VENDOR_CLASS1`, `..._CLASS2`).
const VENDOR_CLASS1: u8 = 0x09;
const VENDOR_CLASS2: u8 = 0x0a;

/// Hands a whole MAD to `port`'s management agent in firmware (C's `mlx5_MAD_IFC`): the keys
/// are checked only for a MAD that came with a completion (`with_wc`), which a key violation
/// trap could answer. `out` gets the firmware's whole answer.
fn mad_ifc(
    cmds: &Commands,
    flags: u32,
    port: u8,
    with_wc: bool,
    inp: &Mad,
    out: &mut Mad,
) -> Result {
    let mut op_mod = 0;
    if flags & mad_flags::IGNORE_MKEY != 0 || !with_wc {
        op_mod |= 0x1;
    }
    if flags & mad_flags::IGNORE_BKEY != 0 || !with_wc {
        op_mod |= 0x2;
    }
    let mut input = MadIfcIn::new();
    input.set_op_mod(op_mod)?;
    input.set_port(port.into())?;
    input
        .as_bytes_mut()
        .get_mut(MAD_OFFSET..MAD_OFFSET + MAD_SIZE)
        .ok_or(EINVAL)?
        .copy_from_slice(inp);
    let o = cmds.exec::<MadIfc>(&input)?;
    out.copy_from_slice(
        o.as_bytes()
            .get(MAD_OFFSET..MAD_OFFSET + MAD_SIZE)
            .ok_or(EINVAL)?,
    );
    Ok(())
}

/// Where the MAD sits in MAD_IFC's input and output.
const MAD_OFFSET: usize = 0x10;

/// The driver's part of MAD processing (C's `mlx5_ib_process_mad` on a device without vport
/// counters): subnet management `Get`, `Set` and `TrapRepress` (not SMInfo), and `Get` and
/// `Set` of performance management, congestion management and the two vendor classes, go to
/// the firmware's agent; everything else is left to the MAD layer. A trap from LID 0 is
/// dropped. `has_smi` says whether the port may take subnet management MADs.
pub(crate) fn process_mad(
    cmds: &Commands,
    has_smi: bool,
    flags: u32,
    port: u8,
    wc: Option<&MadWc>,
    inp: &Mad,
    out: &mut Mad,
) -> u32 {
    let class = inp[hdr::MGMT_CLASS];
    let m = inp[hdr::METHOD];
    // Without a completion the MAD is the host's own: C takes its source as the permissive LID.
    let slid = wc.map_or(0xffff, |w| w.slid);
    if m == method::TRAP && slid == 0 {
        return result::SUCCESS | result::CONSUMED;
    }
    match class {
        class::SUBN_LID_ROUTED | class::SUBN_DIRECTED_ROUTE => {
            if !matches!(m, method::GET | method::SET | method::TRAP_REPRESS) {
                return result::SUCCESS;
            }
            if get16(inp, hdr::ATTR_ID) == ATTR_SM_INFO {
                return result::SUCCESS;
            }
            if !has_smi {
                return result::FAILURE;
            }
        }
        class::PERF_MGMT | VENDOR_CLASS1 | VENDOR_CLASS2 | class::CONG_MGMT => {
            if !matches!(m, method::GET | method::SET) {
                return result::SUCCESS;
            }
        }
        _ => return result::SUCCESS,
    }
    if mad_ifc(cmds, flags, port, wc.is_some(), inp, out).is_err() {
        return result::FAILURE;
    }
    if class == class::SUBN_DIRECTED_ROUTE {
        let st = get16(out, hdr::STATUS) | status::SMP_DIRECTION;
        put16(out, hdr::STATUS, st);
    }
    if m == method::TRAP_REPRESS {
        // No response to a TrapRepress.
        return result::SUCCESS | result::CONSUMED;
    }
    result::SUCCESS | result::REPLY
}

/// The PCAP register's id (`MLX5_REG_PCAP`).
const REG_PCAP: u64 = 0x5001;
/// ACCESS_REG `op_mod` of a write.
const REG_WRITE: u64 = 0;
/// PortInfo.CapabilityMask's offset in the attribute.
const PORT_INFO_CAP_MASK: usize = 20;

/// Sets and clears capability bits of `port` (C's `mlx5_ib_modify_port` for an InfiniBand
/// port): the mask PortInfo reports now, changed, written to the PCAP register
/// (`mlx5_set_port_caps`).
pub(crate) fn modify_port_caps(cmds: &Commands, port: u8, set: u32, clear: u32) -> Result {
    let info = smp_get(cmds, port, attr::PORT_INFO, port.into())?;
    let cur = u32::from_be_bytes([
        info[PORT_INFO_CAP_MASK],
        info[PORT_INFO_CAP_MASK + 1],
        info[PORT_INFO_CAP_MASK + 2],
        info[PORT_INFO_CAP_MASK + 3],
    ]);
    let mask = (cur | set) & !clear;
    let mut input = AccessRegPcapIn::new();
    input.set_op_mod(REG_WRITE)?;
    input.set_register_id(REG_PCAP)?;
    input.set_local_port(port.into())?;
    input.set_port_capability_mask(mask.into())?;
    cmds.exec::<AccessRegPcap>(&input)?;
    Ok(())
}

/// Asks `port`'s management agent for attribute `attr_id` (modifier `attr_mod`); returns the
/// attribute data of the answer and its MAD status. A command failure is its errno.
pub(crate) fn smp_get_status(
    cmds: &Commands,
    port: u8,
    attr_id: u16,
    attr_mod: u32,
) -> Result<([u8; SMP_DATA_SIZE], u16)> {
    // Set in place: the layout is large and this runs under device registration.
    let mut input = MadIfcIn::new();
    input.set_op_mod(OP_MOD_IGNORE_KEYS)?;
    input.set_port(port.into())?;
    input.set_mad_base_version(1)?;
    // LID-routed subnet management.
    input.set_mad_mgmt_class(0x01)?;
    input.set_mad_class_version(1)?;
    // Get.
    input.set_mad_method(0x01)?;
    input.set_mad_attr_id(attr_id.into())?;
    input.set_mad_attr_mod(attr_mod.into())?;
    let out = cmds.exec::<MadIfc>(&input)?;
    let mut data = [0u8; SMP_DATA_SIZE];
    for (d, s) in data.iter_mut().zip(out.smp_data()) {
        *d = *s;
    }
    Ok((data, out.mad_status() as u16))
}

/// [`smp_get_status`] without the MAD status, as C's queries (`mlx5_MAD_IFC` callers) use the
/// answer: a MAD the agent refuses (an attribute block past what it serves, say) gives the data
/// it carries (zeros from a well-behaved agent), not an error. A device that reports tables
/// larger than it serves then still registers, as on C, with zeros in the entries it does not
/// serve.
pub(crate) fn smp_get(
    cmds: &Commands,
    port: u8,
    attr_id: u16,
    attr_mod: u32,
) -> Result<[u8; SMP_DATA_SIZE]> {
    Ok(smp_get_status(cmds, port, attr_id, attr_mod)?.0)
}

/// NodeInfo, as far as the driver uses it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct NodeInfo {
    /// System image GUID.
    pub(crate) sys_image_guid: u64,
    /// Node GUID.
    pub(crate) node_guid: u64,
    /// P_Key table size (PartitionCap).
    pub(crate) partition_cap: u16,
    /// Vendor id (24 bits).
    pub(crate) vendor_id: u32,
}

impl NodeInfo {
    /// Decodes NodeInfo attribute data.
    pub(crate) fn parse(d: &[u8; SMP_DATA_SIZE]) -> Self {
        Self {
            sys_image_guid: get64(d, 4),
            node_guid: get64(d, 12),
            partition_cap: get16(d, 28),
            vendor_id: get32(d, 36) & 0x00ff_ffff,
        }
    }
}

/// PortInfo, decoded as `mlx5_query_mad_ifc_port` does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PortInfo {
    /// GID prefix.
    pub(crate) gid_prefix: u64,
    /// LID.
    pub(crate) lid: u16,
    /// SM LID.
    pub(crate) sm_lid: u16,
    /// CapabilityMask.
    pub(crate) cap_mask: u32,
    /// CapabilityMask2.
    pub(crate) cap_mask2: u16,
    /// P_Key violations.
    pub(crate) bad_pkey_cntr: u16,
    /// Q_Key violations.
    pub(crate) qkey_viol_cntr: u16,
    /// LinkWidthActive (5 bits: 2X is only meaningful with CapabilityMask2's 2X bit).
    pub(crate) width_active: u8,
    /// PortState.
    pub(crate) state: u8,
    /// PortPhysicalState.
    pub(crate) phys_state: u8,
    /// LMC.
    pub(crate) lmc: u8,
    /// LinkSpeedActive.
    pub(crate) speed_active: u8,
    /// NeighborMTU (the active MTU).
    pub(crate) neighbor_mtu: u8,
    /// MasterSMSL.
    pub(crate) sm_sl: u8,
    /// VLCap.
    pub(crate) vl_cap: u8,
    /// InitTypeReply.
    pub(crate) init_type_reply: u8,
    /// MTUCap.
    pub(crate) mtu_cap: u8,
    /// GUIDCap (GUID table length).
    pub(crate) guid_cap: u8,
    /// SubnetTimeOut.
    pub(crate) subnet_timeout: u8,
    /// LinkSpeedExtActive.
    pub(crate) speed_ext_active: u8,
}

impl PortInfo {
    /// Decodes PortInfo attribute data.
    pub(crate) fn parse(d: &[u8; SMP_DATA_SIZE]) -> Self {
        Self {
            gid_prefix: get64(d, 8),
            lid: get16(d, 16),
            sm_lid: get16(d, 18),
            cap_mask: get32(d, 20),
            cap_mask2: get16(d, 60),
            bad_pkey_cntr: get16(d, 46),
            qkey_viol_cntr: get16(d, 48),
            width_active: d[31] & 0x1f,
            state: d[32] & 0xf,
            phys_state: d[33] >> 4,
            lmc: d[34] & 0x7,
            speed_active: d[35] >> 4,
            neighbor_mtu: d[36] >> 4,
            sm_sl: d[36] & 0xf,
            vl_cap: d[37] >> 4,
            init_type_reply: d[41] >> 4,
            mtu_cap: d[41] & 0xf,
            guid_cap: d[50],
            subnet_timeout: d[51] & 0x1f,
            speed_ext_active: d[62] >> 4,
        }
    }
}

/// GUID `index % 8` of a GUIDInfo block.
pub(crate) fn guid_in_block(d: &[u8; SMP_DATA_SIZE], index: u32) -> u64 {
    get64(d, (index % 8) as usize * 8)
}

/// P_Key `index % 32` of a P_KeyTable block.
pub(crate) fn pkey_in_block(d: &[u8; SMP_DATA_SIZE], index: u32) -> u16 {
    get16(d, (index % 32) as usize * 2)
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_mad)]
mod tests {
    use super::*;

    #[test]
    fn port_info_fields_at_their_offsets() {
        let mut d = [0u8; SMP_DATA_SIZE];
        d[8..16].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
        d[16..18].copy_from_slice(&0x1234u16.to_be_bytes());
        d[18..20].copy_from_slice(&1u16.to_be_bytes());
        d[20..24].copy_from_slice(&0x2651_e848u32.to_be_bytes());
        d[31] = 0x02;
        d[32] = 0x74;
        d[33] = 0x52;
        d[34] = 0x03;
        d[35] = 0x17;
        d[36] = 0x5a;
        d[41] = 0x05;
        d[50] = 8;
        d[51] = 18;
        d[62] = 0x20;
        let p = PortInfo::parse(&d);
        assert_eq!(p.gid_prefix, 0xfe80_0000_0000_0000);
        assert_eq!((p.lid, p.sm_lid, p.cap_mask), (0x1234, 1, 0x2651_e848));
        assert_eq!((p.width_active, p.state, p.phys_state), (2, 4, 5));
        assert_eq!(
            (p.lmc, p.speed_active, p.neighbor_mtu, p.sm_sl),
            (3, 1, 5, 0xa)
        );
        assert_eq!((p.mtu_cap, p.guid_cap, p.subnet_timeout), (5, 8, 18));
        assert_eq!(p.speed_ext_active, 2);
    }

    #[test]
    fn node_info_and_table_blocks() {
        let mut d = [0u8; SMP_DATA_SIZE];
        d[4..12].copy_from_slice(&0x0002_c903_0000_0100u64.to_be_bytes());
        d[12..20].copy_from_slice(&0x0002_c903_0000_0200u64.to_be_bytes());
        d[28..30].copy_from_slice(&128u16.to_be_bytes());
        d[36] = 1; // LocalPortNum, not part of the vendor id
        d[37..40].copy_from_slice(&[0x00, 0x02, 0xc9]);
        let n = NodeInfo::parse(&d);
        assert_eq!(n.sys_image_guid, 0x0002_c903_0000_0100);
        assert_eq!(n.node_guid, 0x0002_c903_0000_0200);
        assert_eq!((n.partition_cap, n.vendor_id), (128, 0x02c9));
        let mut g = [0u8; SMP_DATA_SIZE];
        g[8..16].copy_from_slice(&7u64.to_be_bytes());
        assert_eq!(guid_in_block(&g, 9), 7);
        g[62..64].copy_from_slice(&0xffffu16.to_be_bytes());
        assert_eq!(pkey_in_block(&g, 63), 0xffff);
    }
}
