//! The requester: fetches send WQEs, turns them into packets, and completes them when their
//! response comes (RC) or when they are sent (datagrams). Handles NAKs, receiver-not-ready
//! retries and missing responses.

use super::completion::{self, Cqe, Syndrome};
use super::keys::{self, Access, KeyError, ScatterError};
use super::packet::{Body, Nak, Packet};
use super::queue_pair::{self, QpInfo};
use super::wqe::{self, Data, Op, SendWqe};
use crate::firmware::objects::QpState;
use crate::firmware::port::LID_PERMISSIVE;
use crate::firmware::q_counters::{self, counter};
use crate::firmware::Firmware;
use crate::guest_memory::GuestMemory;
use log::{debug, warn};
use std::time::{Duration, Instant};

/// How long a request waits for its response before it is sent again. (The QP's ack timeout
/// attribute is not modelled: responses between models come in microseconds.)
pub const ACK_TIMEOUT: Duration = Duration::from_millis(50);
/// How long a request waits after a receiver-not-ready NAK before it is sent again.
pub const RNR_DELAY: Duration = Duration::from_millis(1);
/// An RNR retry count that means "retry forever".
const RNR_RETRY_FOREVER: u8 = 7;

/// An RC request waiting for its response.
#[derive(Debug, Clone)]
struct Inflight {
    wqe: SendWqe,
    packet: Packet,
    deadline: Instant,
    /// Waiting out a receiver-not-ready NAK (as opposed to waiting for a response).
    rnr: bool,
    retries: u8,
    rnr_retries: u8,
}

/// Per-QP requester state.
#[derive(Debug, Clone, Default)]
pub struct SendQueue {
    /// Counter of the next WQE to fetch.
    pub consumer: u16,
    psn: u32,
    inflight: Option<Inflight>,
}

impl SendQueue {
    /// When the request in flight times out or is retried.
    pub fn deadline(&self) -> Option<Instant> {
        self.inflight.as_ref().map(|i| i.deadline)
    }

    /// Takes the WQE in flight (to flush it).
    pub fn take_inflight(&mut self) -> Option<SendWqe> {
        self.inflight.take().map(|i| i.wqe)
    }
}

/// The GID of `port`: the link-local prefix and the port GUID.
fn port_gid(fw: &Firmware, port: u8) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[..8].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
    g[8..].copy_from_slice(&fw.node.port(port).map_or(0, |p| p.guid).to_be_bytes());
    g
}

/// The bytes a send or write carries.
fn gather(fw: &Firmware, mem: &dyn GuestMemory, pd: u32, data: &Data) -> Result<Vec<u8>, KeyError> {
    match data {
        Data::Inline(b) => Ok(b.clone()),
        Data::List(list) => {
            let mut out = Vec::with_capacity(data.len() as usize);
            for s in list {
                out.extend(keys::read(
                    fw,
                    mem,
                    s.key,
                    pd,
                    s.addr,
                    u64::from(s.len),
                    Access::LocalRead,
                )?);
            }
            Ok(out)
        }
    }
}

fn complete(fw: &mut Firmware, mem: &mut dyn GuestMemory, qp: &QpInfo, w: &SendWqe, bytes: u32) {
    if w.signaled {
        completion::post(
            fw,
            mem,
            qp.cqn_snd,
            Cqe::requester(qp.qpn, w.counter, w.opcode, bytes),
        );
    }
}

/// An error completion for `w`; the QP moves to the error state (send-queue error for
/// datagram QPs) and the rest of its work is flushed.
fn error(fw: &mut Firmware, mem: &mut dyn GuestMemory, qp: &QpInfo, counter: u16, opcode: u8, s: Syndrome) {
    debug!("QP {:#x}: WQE {counter} fails with {s:?}", qp.qpn);
    completion::post(
        fw,
        mem,
        qp.cqn_snd,
        Cqe::requester_error(qp.qpn, counter, opcode, s),
    );
    let state = if wqe::is_datagram(qp.st) {
        QpState::Sqe
    } else {
        QpState::Err
    };
    queue_pair::fail(fw, mem, qp.qpn, state);
}

/// Runs QP `qpn`'s send queue: fetches and executes WQEs until the queue is empty or an RC
/// request is waiting for its response.
pub fn progress(fw: &mut Firmware, mem: &mut dyn GuestMemory, qpn: u32, now: Instant) {
    let Some(qp) = QpInfo::load(fw, qpn) else {
        warn!("send doorbell for unknown QP {qpn:#x}");
        return;
    };
    let Some(sq) = qp.sq.clone() else {
        warn!("send doorbell for QP {qpn:#x}, which has no send queue");
        return;
    };
    match qp.state {
        QpState::Rts => {}
        QpState::Err | QpState::Sqe => {
            queue_pair::flush(fw, mem, qpn);
            return;
        }
        s => {
            debug!("send doorbell for QP {qpn:#x} in state {s:?}: nothing is sent");
            return;
        }
    }
    loop {
        let state = fw.datapath.sqs.entry(qpn).or_default();
        if state.inflight.is_some() {
            return;
        }
        let at = state.consumer;
        let Some(producer) = qp.sq_producer(mem) else {
            warn!("QP {qpn:#x}: doorbell record unreadable");
            return;
        };
        if at == producer {
            return;
        }
        let raw = match queue_pair::fetch_send_wqe(mem, &sq, at) {
            Ok(w) => w,
            Err(e) => {
                warn!("QP {qpn:#x}: WQE {at} unreadable: {e}");
                return;
            }
        };
        fw.datapath.sqs.entry(qpn).or_default().consumer = at.wrapping_add(wqe::basic_blocks(&raw));
        let w = match wqe::parse(&raw, qp.st) {
            Ok(w) => w,
            Err(wqe::Malformed(why)) => {
                warn!("QP {qpn:#x}: WQE {at} malformed: {why}");
                let counter = u16::from_be_bytes([raw[1], raw[2]]);
                error(fw, mem, &qp, counter, raw[3], Syndrome::LocalQpOp);
                return;
            }
        };
        if !execute(fw, mem, &qp, w, now) {
            return;
        }
    }
}

/// Executes one WQE; false when the QP stopped (error).
fn execute(fw: &mut Firmware, mem: &mut dyn GuestMemory, qp: &QpInfo, w: SendWqe, now: Instant) -> bool {
    let datagram = wqe::is_datagram(qp.st);
    if !datagram && qp.st != wqe::service::RC {
        // Driver-internal QPs (memory registration): their work has no effect here.
        complete(fw, mem, qp, &w, 0);
        return true;
    }
    let body = match &w.op {
        Op::Nop => {
            complete(fw, mem, qp, &w, 0);
            return true;
        }
        Op::Send { imm, to } => {
            let data = match gather(fw, mem, qp.pd, &w.data) {
                Ok(d) => d,
                Err(e) => {
                    debug!("QP {:#x}: send gather refused: {e:?}", qp.qpn);
                    error(fw, mem, qp, w.counter, w.opcode, Syndrome::LocalProt);
                    return false;
                }
            };
            if let Some(to) = to {
                let gids = to.dgid.map(|d| (port_gid(fw, qp.port), d));
                let p = Packet {
                    // A packet for the permissive LID (a directed-route SMP) carries the
                    // permissive LID as its source too, as the HCA builds its header.
                    slid: if to.dlid == LID_PERMISSIVE {
                        LID_PERMISSIVE
                    } else {
                        qp.slid(fw)
                    },
                    dlid: to.dlid,
                    sqpn: wqe::wire_qpn(qp.st, qp.qpn),
                    dqpn: to.dqpn,
                    psn: 0,
                    body: Body::Send {
                        data,
                        imm: *imm,
                        qkey: Some(to.qkey.unwrap_or(qp.qkey)),
                        gids,
                    },
                };
                fw.transmit(p);
                complete(fw, mem, qp, &w, 0);
                return true;
            }
            Body::Send {
                data,
                imm: *imm,
                qkey: None,
                gids: None,
            }
        }
        Op::Write { remote, imm } => match gather(fw, mem, qp.pd, &w.data) {
            Ok(data) => Body::Write {
                addr: remote.addr,
                rkey: remote.rkey,
                data,
                imm: *imm,
            },
            Err(e) => {
                debug!("QP {:#x}: write gather refused: {e:?}", qp.qpn);
                error(fw, mem, qp, w.counter, w.opcode, Syndrome::LocalProt);
                return false;
            }
        },
        Op::Read(remote) => Body::Read {
            addr: remote.addr,
            rkey: remote.rkey,
            len: w.data.len() as u32,
        },
        Op::Atomic {
            remote,
            compare,
            operand,
        } => Body::Atomic {
            addr: remote.addr,
            rkey: remote.rkey,
            compare: *compare,
            operand: *operand,
        },
    };
    if datagram {
        // Only sends go as datagrams.
        error(fw, mem, qp, w.counter, w.opcode, Syndrome::LocalQpOp);
        return false;
    }
    let state = fw.datapath.sqs.entry(qp.qpn).or_default();
    let psn = state.psn;
    state.psn = psn.wrapping_add(1);
    let p = Packet {
        slid: qp.slid(fw),
        dlid: qp.rlid,
        sqpn: qp.qpn,
        dqpn: qp.remote_qpn,
        psn,
        body,
    };
    fw.datapath.sqs.entry(qp.qpn).or_default().inflight = Some(Inflight {
        wqe: w,
        packet: p.clone(),
        deadline: now + ACK_TIMEOUT,
        rnr: false,
        retries: 0,
        rnr_retries: 0,
    });
    fw.transmit(p);
    true
}

/// A response for one of this device's requesters.
pub fn on_response(fw: &mut Firmware, mem: &mut dyn GuestMemory, p: Packet, now: Instant) {
    let qpn = p.dqpn;
    let Some(qp) = QpInfo::load(fw, qpn) else {
        debug!("response for QP {qpn:#x}, which does not exist: dropped");
        return;
    };
    let state = fw.datapath.sqs.entry(qpn).or_default();
    let Some(mut inf) = state.inflight.take_if(|i| i.packet.psn == p.psn) else {
        debug!("QP {qpn:#x}: response {} matches no request: dropped", p.psn);
        return;
    };
    let w = inf.wqe.clone();
    match p.body {
        Body::Ack => complete(fw, mem, &qp, &w, 0),
        Body::ReadResponse(data) => {
            let Data::List(list) = &w.data else {
                error(fw, mem, &qp, w.counter, w.opcode, Syndrome::LocalQpOp);
                return;
            };
            match keys::scatter(fw, mem, qp.pd, list, &data) {
                Ok(()) => complete(fw, mem, &qp, &w, data.len() as u32),
                Err(ScatterError::TooSmall) => {
                    error(fw, mem, &qp, w.counter, w.opcode, Syndrome::LocalLength);
                    return;
                }
                Err(ScatterError::Key(_)) => {
                    error(fw, mem, &qp, w.counter, w.opcode, Syndrome::LocalProt);
                    return;
                }
            }
        }
        Body::AtomicResponse(v) => {
            let Data::List(list) = &w.data else {
                error(fw, mem, &qp, w.counter, w.opcode, Syndrome::LocalQpOp);
                return;
            };
            let bytes = if fw.atomics_in_host_order() {
                v.to_le_bytes()
            } else {
                v.to_be_bytes()
            };
            match keys::scatter(fw, mem, qp.pd, list, &bytes) {
                Ok(()) => complete(fw, mem, &qp, &w, 8),
                Err(_) => {
                    error(fw, mem, &qp, w.counter, w.opcode, Syndrome::LocalProt);
                    return;
                }
            }
        }
        Body::Nak(Nak::ReceiverNotReady) => {
            if qp.rnr_retry == RNR_RETRY_FOREVER || inf.rnr_retries < qp.rnr_retry {
                inf.rnr_retries = inf.rnr_retries.saturating_add(1);
                inf.rnr = true;
                inf.deadline = now + RNR_DELAY;
                fw.datapath.sqs.entry(qpn).or_default().inflight = Some(inf);
                q_counters::count(fw, qpn, counter::RNR_NAK_RETRY_ERR);
                return;
            }
            error(fw, mem, &qp, w.counter, w.opcode, Syndrome::RnrRetryExceeded);
            return;
        }
        Body::Nak(n) => {
            let s = match n {
                Nak::InvalidRequest | Nak::ReceiverNotReady => Syndrome::RemoteInvalidRequest,
                Nak::RemoteAccess => Syndrome::RemoteAccess,
                Nak::RemoteOperational => Syndrome::RemoteOp,
            };
            error(fw, mem, &qp, w.counter, w.opcode, s);
            return;
        }
        _ => {
            warn!("QP {qpn:#x}: a request where a response was due: dropped");
            fw.datapath.sqs.entry(qpn).or_default().inflight = Some(inf);
            return;
        }
    }
    progress(fw, mem, qpn, now);
}

/// Retries requests whose receiver-not-ready wait is over, and resends (or, past the retry
/// count, fails) requests whose response did not come.
pub fn timers(fw: &mut Firmware, mem: &mut dyn GuestMemory, now: Instant) {
    let due: Vec<u32> = fw
        .datapath
        .sqs
        .iter()
        .filter(|(_, s)| s.deadline().is_some_and(|d| d <= now))
        .map(|(&n, _)| n)
        .collect();
    for qpn in due {
        let Some(qp) = QpInfo::load(fw, qpn) else {
            fw.datapath.forget_qp(qpn);
            continue;
        };
        let Some(mut inf) = fw.datapath.sqs.entry(qpn).or_default().inflight.take() else {
            continue;
        };
        if inf.rnr {
            inf.rnr = false;
        } else {
            inf.retries = inf.retries.saturating_add(1);
            if inf.retries > qp.retry_count {
                debug!("QP {qpn:#x}: no response after {} tries", inf.retries);
                let w = inf.wqe;
                error(
                    fw,
                    mem,
                    &qp,
                    w.counter,
                    w.opcode,
                    Syndrome::TransportRetryExceeded,
                );
                continue;
            }
            q_counters::count(fw, qpn, counter::LOCAL_ACK_TIMEOUT_ERR);
        }
        inf.deadline = now + ACK_TIMEOUT;
        let p = inf.packet.clone();
        fw.datapath.sqs.entry(qpn).or_default().inflight = Some(inf);
        fw.transmit(p);
    }
}
