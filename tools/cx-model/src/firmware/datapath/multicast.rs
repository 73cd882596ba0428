//! Multicast groups: UD QPs attached to a multicast GID (ATTACH_TO_MCG, DETACH_FROM_MCG), and
//! the delivery of a datagram sent to a multicast LID to every QP attached to its GID, on this
//! device and, over the wire, on the other.
//!
//! The group is named by the GRH's destination GID (a datagram to a multicast LID carries one,
//! IBA 8.3). The sending QP does not get its own datagram back (the loopback a driver may block;
//! IPoIB, the user here, drops its own anyway). An attachment lasts until the QP is detached or
//! destroyed (a reset keeps it, as the device keeps its multicast table).

use super::packet::{Body, Packet};
use super::queue_pair::QpInfo;
use super::wqe;
use crate::command::Status;
use crate::firmware::{output, CmdError, CmdResult, Firmware, Input};
use crate::ifc::Field;
use log::debug;

/// ATTACH_TO_MCG / DETACH_FROM_MCG input: the QP number.
const QPN: Field = Field::new(0x48, 24);
/// ... and the multicast GID, at byte 0x10.
const GID_OFFSET: usize = 0x10;

/// Whether `lid` is a multicast LID (IBA 4.1.1: 0xc000 to 0xfffe).
pub fn is_multicast(lid: u16) -> bool {
    (0xc000..0xffff).contains(&lid)
}

fn qp_and_gid(fw: &Firmware, input: &Input) -> Result<(u32, [u8; 16]), CmdError> {
    let qpn = input.get(QPN) as u32;
    let gid: [u8; 16] = input
        .bytes()
        .get(GID_OFFSET..GID_OFFSET + 16)
        .and_then(|b| b.try_into().ok())
        .ok_or(CmdError::new(Status::BadInputLength, 0x0a70_0001))?;
    let qp = QpInfo::load(fw, qpn).ok_or(CmdError::new(Status::BadResource, 0x0a70_0002))?;
    if qp.st != wqe::service::UD {
        return Err(CmdError::new(Status::BadParameter, 0x0a70_0003));
    }
    if gid[0] != 0xff {
        return Err(CmdError::new(Status::BadParameter, 0x0a70_0004));
    }
    Ok((qpn, gid))
}

/// ATTACH_TO_MCG: QP `qpn` (a UD QP) receives the datagrams sent to the multicast GID.
pub fn attach_to_mcg(fw: &mut Firmware, input: &Input) -> CmdResult {
    let (qpn, gid) = qp_and_gid(fw, input)?;
    fw.datapath.groups.entry(gid).or_default().insert(qpn);
    debug!("QP {qpn:#x} attached to {gid:02x?}");
    Ok(output(16))
}

/// DETACH_FROM_MCG: the attachment goes (a QP not attached: a bad parameter).
pub fn detach_from_mcg(fw: &mut Firmware, input: &Input) -> CmdResult {
    let (qpn, gid) = qp_and_gid(fw, input)?;
    let members = fw
        .datapath
        .groups
        .get_mut(&gid)
        .ok_or(CmdError::new(Status::BadParameter, 0x0a70_0005))?;
    if !members.remove(&qpn) {
        return Err(CmdError::new(Status::BadParameter, 0x0a70_0005));
    }
    if members.is_empty() {
        fw.datapath.groups.remove(&gid);
    }
    Ok(output(16))
}

/// The copies of the multicast datagram `p` for this device's attached QPs (none for a packet
/// without a GRH, or the sender's own QP), each addressed to one of them.
pub fn copies(fw: &Firmware, p: &Packet) -> Vec<Packet> {
    let Body::Send {
        gids: Some((_, dgid)),
        ..
    } = &p.body
    else {
        debug!("multicast packet without a GRH: dropped");
        return Vec::new();
    };
    let Some(members) = fw.datapath.groups.get(dgid) else {
        return Vec::new();
    };
    let own_lid = fw.node.ports.iter().any(|port| port.has_lid(p.slid));
    members
        .iter()
        .filter(|&&qpn| !(own_lid && qpn == p.sqpn))
        .map(|&qpn| Packet {
            dqpn: qpn,
            ..p.clone()
        })
        .collect()
}
