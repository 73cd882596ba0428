//! The responder: executes requests that arrive for this device's QPs. Sends take a receive WQE
//! (from the QP's receive queue or its shared receive queue) and scatter into it; RDMA writes,
//! reads and atomics go through the remote key. RC requests are answered.

use super::buffer::{Buffer, Ring};
use super::completion::{self, opcode, Cqe, Syndrome};
use super::keys::{self, Access, ScatterError, Sge};
use super::packet::{Body, Nak, Packet};
use super::queue_pair::{self, QpInfo};
use super::wqe;
use crate::firmware::objects::{Kind, QpState};
use crate::firmware::q_counters::{self, counter};
use crate::firmware::Firmware;
use crate::guest_memory::GuestMemory;
use crate::ifc;
use log::{debug, warn};
use std::time::Instant;

/// Size of the GRH area at the head of every datagram receive.
const GRH: usize = 40;
/// The GSI QP's number on the wire.
const GSI_QPN: u32 = 1;
/// The SMI QP's number on the wire.
const SMI_QPN: u32 = 0;

/// Per-QP receive queue state: the counter of the next receive WQE.
#[derive(Debug, Clone, Default)]
pub struct RecvQueueState {
    /// Next receive WQE the device takes.
    pub consumer: u16,
}

/// Per-SRQ state: the next WQE in the driver's free list, how many were consumed, and the limit
/// (low watermark) it is armed with, 0 when not armed.
#[derive(Debug, Clone, Default)]
pub struct SrqState {
    head: u16,
    consumed: u16,
    pub(super) lwm: u16,
}

/// Event: a shared receive queue fell below its armed limit (data: SRQ number at byte 24).
const EVENT_SRQ_RQ_LIMIT: u8 = 0x14;

/// `rmpc.wq` fields of CREATE_RMP input.
mod rmp {
    use crate::ifc::Field;
    pub const DBR_ADDR: Field = Field::new(0x300, 64);
    pub const LOG_WQ_STRIDE: Field = Field::new(0x38c, 4);
    pub const LOG_WQ_PG_SZ: Field = Field::new(0x393, 5);
    pub const LOG_WQ_SZ: Field = Field::new(0x39b, 5);
    pub const PAGE_OFFSET: Field = Field::new(0x2ab, 5);
}

/// Where a receive WQE came from, and how to mark it consumed.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// The QP's own receive queue.
    Qp,
    /// A shared receive queue (RMP): the free list continues at `next`; `posted` WQEs were
    /// posted so far (the doorbell record).
    Srq { srqn: u32, next: u16, posted: u16 },
}

/// A receive WQE taken for a message.
struct Receive {
    sges: Vec<Sge>,
    index: u16,
    source: Source,
}

/// The next posted receive WQE of `qp`, if any.
fn next_receive(fw: &mut Firmware, mem: &dyn GuestMemory, qp: &QpInfo) -> Option<Receive> {
    if let Some(rq) = &qp.rq {
        let producer = qp.rq_producer(mem)?;
        let index = fw.datapath.rqs.entry(qp.qpn).or_default().consumer;
        if index == producer {
            return None;
        }
        let segs = rq.read(mem, u64::from(index)).ok()?;
        return Some(Receive {
            sges: keys::receive_sges(&segs),
            index,
            source: Source::Qp,
        });
    }
    // A shared receive queue: the model serves RMPs (how an ISSI 1 driver makes basic SRQs).
    let srqn = qp.srq?;
    let rc = &fw.objects.get(Kind::Rmp, srqn)?.context;
    let stride = 1u64 << ifc::get(rc, rmp::LOG_WQ_STRIDE);
    let entries = 1u64 << ifc::get(rc, rmp::LOG_WQ_SZ);
    let dbr = ifc::get(rc, rmp::DBR_ADDR);
    let ring = Ring {
        buf: Buffer::from_context(rc, rmp::LOG_WQ_PG_SZ, rmp::PAGE_OFFSET, entries * stride),
        base: 0,
        entries,
        stride,
    };
    let mut db = [0u8; 4];
    mem.read(dbr, &mut db).ok()?;
    let posted = u32::from_be_bytes(db) as u16;
    let state = fw.datapath.srqs.entry(srqn).or_default().clone();
    if state.consumed == posted {
        return None;
    }
    let wqe = ring.read(mem, u64::from(state.head)).ok()?;
    // The first 16 bytes link to the next free WQE; the scatter list follows.
    let next = u16::from_be_bytes([wqe[2], wqe[3]]);
    Some(Receive {
        sges: keys::receive_sges(&wqe[16..]),
        index: state.head,
        source: Source::Srq { srqn, next, posted },
    })
}

/// Marks receive `r` consumed; an SRQ armed with a limit that now holds fewer WQEs raises the
/// limit event once (it must be armed again).
fn consume(fw: &mut Firmware, mem: &mut dyn GuestMemory, qpn: u32, r: &Receive) {
    match r.source {
        Source::Qp => fw.datapath.rqs.entry(qpn).or_default().consumer = r.index.wrapping_add(1),
        Source::Srq { srqn, next, posted } => {
            let s = fw.datapath.srqs.entry(srqn).or_default();
            s.head = next;
            s.consumed = s.consumed.wrapping_add(1);
            let left = posted.wrapping_sub(s.consumed);
            if s.lwm != 0 && left < s.lwm {
                debug!("SRQ {srqn:#x}: {left} WQEs left, below its limit {}", s.lwm);
                s.lwm = 0;
                let mut data = [0u8; 28];
                data[24..28].copy_from_slice(&srqn.to_be_bytes());
                fw.post_event(mem, EVENT_SRQ_RQ_LIMIT, 0, &data);
            }
        }
    }
}

/// The destination QP of `p`: its QP number, or for the special numbers 0 and 1 the SMI or
/// GSI QP of the port the destination LID names.
fn destination(fw: &Firmware, p: &Packet) -> Option<QpInfo> {
    let st = match p.dqpn {
        SMI_QPN => wqe::service::QP0,
        GSI_QPN => wqe::service::QP1,
        n => return QpInfo::load(fw, n),
    };
    let port = fw.node.port_for_dlid(p.dlid)?;
    fw.objects
        .numbers(Kind::Qp)
        .filter_map(|n| QpInfo::load(fw, n))
        .find(|q| q.st == st && q.port == port)
}

fn reply(fw: &mut Firmware, req: &Packet, body: Body) {
    fw.transmit(Packet {
        slid: req.dlid,
        dlid: req.slid,
        sqpn: req.dqpn,
        dqpn: req.sqpn,
        psn: req.psn,
        body,
    });
}

/// A SEND landed in receive WQE `r`: consume it and post the responder completion.
#[allow(clippy::too_many_arguments)]
fn send_received(
    fw: &mut Firmware,
    mem: &mut dyn GuestMemory,
    qp: &QpInfo,
    r: &Receive,
    p: &Packet,
    bytes: usize,
    imm: Option<u32>,
    grh: bool,
) {
    consume(fw, mem, qp.qpn, r);
    let op = if imm.is_some() {
        opcode::RESP_SEND_IMM
    } else {
        opcode::RESP_SEND
    };
    let mut c = Cqe::responder(op, qp.qpn, r.index, bytes as u32).source(p.slid, p.sqpn, grh);
    if let Some(i) = imm {
        c = c.immediate(i);
    }
    completion::post(fw, mem, qp.cqn_rcv, c);
}

/// A receive completed with an error: the QP moves to the error state.
fn receive_error(fw: &mut Firmware, mem: &mut dyn GuestMemory, qp: &QpInfo, r: &Receive, s: Syndrome) {
    consume(fw, mem, qp.qpn, r);
    let c = Cqe::responder_error(qp.qpn, r.index, s);
    completion::post(fw, mem, qp.cqn_rcv, c);
    queue_pair::fail(fw, mem, qp.qpn, QpState::Err);
}

/// An RC receive completed with an error: the requester gets `nak` and the QP moves to the
/// error state. A QP looped back to itself takes the NAK before the flush, as a peer would
/// (its request completes with the NAK's error, not with a flush).
#[allow(clippy::too_many_arguments)]
fn rc_receive_error(
    fw: &mut Firmware,
    mem: &mut dyn GuestMemory,
    qp: &QpInfo,
    r: &Receive,
    p: &Packet,
    nak: Nak,
    s: Syndrome,
    now: Instant,
) {
    consume(fw, mem, qp.qpn, r);
    let c = Cqe::responder_error(qp.qpn, r.index, s);
    completion::post(fw, mem, qp.cqn_rcv, c);
    reply(fw, p, Body::Nak(nak));
    if p.sqpn == qp.qpn && p.slid == p.dlid {
        super::pump(fw, mem, now);
    }
    queue_pair::fail(fw, mem, qp.qpn, QpState::Err);
}

/// A request for one of this device's QPs.
pub fn on_request(fw: &mut Firmware, mem: &mut dyn GuestMemory, p: Packet, now: Instant) {
    let Some(qp) = destination(fw, &p) else {
        debug!("packet for QP {:#x}, which does not exist: dropped", p.dqpn);
        return;
    };
    if !matches!(qp.state, QpState::Rtr | QpState::Rts) {
        debug!(
            "QP {:#x} in state {:?} receives nothing: dropped",
            qp.qpn, qp.state
        );
        return;
    }
    if wqe::is_datagram(qp.st) {
        datagram(fw, mem, &qp, p);
        return;
    }
    if qp.st != wqe::service::RC || p.sqpn != qp.remote_qpn {
        debug!(
            "QP {:#x}: request from QP {:#x}, not its peer {:#x}: dropped",
            qp.qpn, p.sqpn, qp.remote_qpn
        );
        return;
    }
    match &p.body {
        Body::Send {
            data,
            imm,
            qkey: None,
            ..
        } => {
            let Some(r) = next_receive(fw, mem, &qp) else {
                q_counters::count(fw, qp.qpn, counter::OUT_OF_BUFFER);
                reply(fw, &p, Body::Nak(Nak::ReceiverNotReady));
                return;
            };
            match keys::scatter(fw, mem, qp.pd, &r.sges, data) {
                Ok(()) => {
                    send_received(fw, mem, &qp, &r, &p, data.len(), *imm, false);
                    reply(fw, &p, Body::Ack);
                }
                Err(ScatterError::TooSmall) => {
                    let (nak, s) = (Nak::InvalidRequest, Syndrome::LocalLength);
                    rc_receive_error(fw, mem, &qp, &r, &p, nak, s, now);
                }
                Err(ScatterError::Key(e)) => {
                    debug!("QP {:#x}: receive buffer refused: {e:?}", qp.qpn);
                    let (nak, s) = (Nak::RemoteOperational, Syndrome::LocalProt);
                    rc_receive_error(fw, mem, &qp, &r, &p, nak, s, now);
                }
            }
        }
        Body::Write {
            addr,
            rkey,
            data,
            imm,
        } => {
            q_counters::count(fw, qp.qpn, counter::RX_WRITE_REQUESTS);
            let r = match imm {
                Some(_) => match next_receive(fw, mem, &qp) {
                    Some(r) => Some(r),
                    None => {
                        q_counters::count(fw, qp.qpn, counter::OUT_OF_BUFFER);
                        reply(fw, &p, Body::Nak(Nak::ReceiverNotReady));
                        return;
                    }
                },
                None => None,
            };
            if !data.is_empty() {
                if let Err(e) = keys::write(fw, mem, *rkey, qp.pd, *addr, data, Access::RemoteWrite) {
                    debug!(
                        "QP {:#x}: RDMA write to {addr:#x} key {rkey:#x} refused: {e:?}",
                        qp.qpn
                    );
                    q_counters::count(fw, qp.qpn, counter::RESP_REMOTE_ACCESS_ERRORS);
                    reply(fw, &p, Body::Nak(Nak::RemoteAccess));
                    return;
                }
            }
            if let (Some(r), Some(i)) = (r, imm) {
                consume(fw, mem, qp.qpn, &r);
                let c = Cqe::responder(opcode::RESP_WR_IMM, qp.qpn, r.index, data.len() as u32)
                    .source(p.slid, p.sqpn, false)
                    .immediate(*i);
                completion::post(fw, mem, qp.cqn_rcv, c);
            }
            reply(fw, &p, Body::Ack);
        }
        Body::Read { addr, rkey, len } => {
            q_counters::count(fw, qp.qpn, counter::RX_READ_REQUESTS);
            let data = if *len == 0 {
                Ok(vec![])
            } else {
                keys::read(fw, mem, *rkey, qp.pd, *addr, u64::from(*len), Access::RemoteRead)
            };
            match data {
                Ok(d) => reply(fw, &p, Body::ReadResponse(d)),
                Err(e) => {
                    debug!(
                        "QP {:#x}: RDMA read of {addr:#x} key {rkey:#x} refused: {e:?}",
                        qp.qpn
                    );
                    q_counters::count(fw, qp.qpn, counter::RESP_REMOTE_ACCESS_ERRORS);
                    reply(fw, &p, Body::Nak(Nak::RemoteAccess));
                }
            }
        }
        Body::Atomic {
            addr,
            rkey,
            compare,
            operand,
        } => {
            q_counters::count(fw, qp.qpn, counter::RX_ATOMIC_REQUESTS);
            if addr % 8 != 0 {
                reply(fw, &p, Body::Nak(Nak::InvalidRequest));
                return;
            }
            let host_order = fw.atomics_in_host_order();
            let orig = match keys::read(fw, mem, *rkey, qp.pd, *addr, 8, Access::RemoteAtomic) {
                Ok(b) => {
                    let b: [u8; 8] = b.try_into().unwrap_or([0; 8]);
                    if host_order {
                        u64::from_le_bytes(b)
                    } else {
                        u64::from_be_bytes(b)
                    }
                }
                Err(e) => {
                    debug!(
                        "QP {:#x}: atomic at {addr:#x} key {rkey:#x} refused: {e:?}",
                        qp.qpn
                    );
                    q_counters::count(fw, qp.qpn, counter::RESP_REMOTE_ACCESS_ERRORS);
                    reply(fw, &p, Body::Nak(Nak::RemoteAccess));
                    return;
                }
            };
            let new = match compare {
                Some(c) if *c == orig => *operand,
                Some(_) => orig,
                None => orig.wrapping_add(*operand),
            };
            let bytes = if host_order {
                new.to_le_bytes()
            } else {
                new.to_be_bytes()
            };
            let res = keys::write(fw, mem, *rkey, qp.pd, *addr, &bytes, Access::RemoteAtomic);
            if res.is_err() {
                reply(fw, &p, Body::Nak(Nak::RemoteOperational));
                return;
            }
            reply(fw, &p, Body::AtomicResponse(orig));
        }
        _ => debug!("QP {:#x}: unexpected packet for an RC responder: dropped", qp.qpn),
    }
}

/// A datagram for a UD or GSI QP: the Q_Key must match; the GRH area (filled when the sender
/// sent one) precedes the payload in the receive buffer.
fn datagram(fw: &mut Firmware, mem: &mut dyn GuestMemory, qp: &QpInfo, p: Packet) {
    let Body::Send {
        data,
        imm,
        qkey: Some(qkey),
        gids,
    } = &p.body
    else {
        debug!("QP {:#x}: not a datagram: dropped", qp.qpn);
        return;
    };
    // Subnet management packets travel on VL15 between QP0s only (IBA 14.2.1.3: VL15 is
    // QP0's, and QP0 takes nothing else): a datagram to QP0 from another QP, or from QP0 to
    // another QP, is dropped on the way, as the fabric drops it.
    let to_smi = qp.st == wqe::service::QP0;
    if to_smi != (p.sqpn == SMI_QPN) {
        debug!(
            "QP {:#x}: datagram from QP {:#x} crosses the QP0/VL15 boundary: dropped",
            qp.qpn, p.sqpn
        );
        return;
    }
    // QP0 takes subnet management packets whatever their Q_Key (IBA 10.2.5).
    if !to_smi && *qkey != qp.qkey {
        debug!("QP {:#x}: Q_Key {qkey:#x} does not match: dropped", qp.qpn);
        return;
    }
    let Some(r) = next_receive(fw, mem, qp) else {
        q_counters::count(fw, qp.qpn, counter::OUT_OF_BUFFER);
        debug!("QP {:#x}: no receive WQE posted: datagram dropped", qp.qpn);
        return;
    };
    let mut msg = vec![0u8; GRH];
    if let Some((sgid, dgid)) = gids {
        msg[0] = 0x60;
        msg[4..6].copy_from_slice(&(data.len() as u16).to_be_bytes());
        msg[6] = 0x1b;
        msg[7] = 0x40;
        msg[8..24].copy_from_slice(sgid);
        msg[24..40].copy_from_slice(dgid);
    }
    msg.extend_from_slice(data);
    match keys::scatter(fw, mem, qp.pd, &r.sges, &msg) {
        Ok(()) => send_received(fw, mem, qp, &r, &p, msg.len(), *imm, gids.is_some()),
        Err(ScatterError::TooSmall) => {
            receive_error(fw, mem, qp, &r, Syndrome::LocalLength);
        }
        Err(ScatterError::Key(e)) => {
            warn!("QP {:#x}: receive buffer refused: {e:?}", qp.qpn);
            receive_error(fw, mem, qp, &r, Syndrome::LocalProt);
        }
    }
}
