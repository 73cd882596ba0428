//! What the data path needs of a queue pair, read from its create and modify commands; and
//! moving a QP to an error state with its queues flushed.

use super::buffer::{Buffer, Ring};
use super::completion::{self, Cqe, Syndrome};
use super::wqe::{self, WQE_BB};
use crate::firmware::objects::{qpc, Kind, QpState};
use crate::firmware::Firmware;
use crate::guest_memory::GuestMemory;
use crate::ifc;
use crate::opcodes::op;
use log::{debug, warn};

/// `qpc` fields of the modify commands the data path reads (the context starts at byte 0xc0).
mod attr {
    use crate::ifc::Field;
    pub const RETRY_COUNT: Field = Field::new(0xc0 + 0x38d, 3);
    pub const RNR_RETRY: Field = Field::new(0xc0 + 0x390, 3);
}

/// Receive queue types in `qpc.rq_type`.
const RQ_REGULAR: u64 = 0;
const RQ_SHARED: u64 = 1;

/// A QP as the data path sees it.
#[derive(Debug, Clone)]
pub struct QpInfo {
    /// QP number.
    pub qpn: u32,
    /// Service type.
    pub st: u64,
    /// Current state.
    pub state: QpState,
    /// Protection domain.
    pub pd: u32,
    /// Port (1-based).
    pub port: u8,
    /// Q_Key.
    pub qkey: u32,
    /// The send queue (none for a QP without one).
    pub sq: Option<Ring>,
    /// The QP's own receive queue.
    pub rq: Option<Ring>,
    /// The SRQ (RMP) it receives from.
    pub srq: Option<u32>,
    /// Doorbell record: receive counter at +0, send counter at +4.
    pub dbr: u64,
    /// Send completion queue.
    pub cqn_snd: u32,
    /// Receive completion queue.
    pub cqn_rcv: u32,
    /// Connected peer (RC): LID.
    pub rlid: u16,
    /// Connected peer (RC): QP.
    pub remote_qpn: u32,
    /// Transport retries before a missing response is an error.
    pub retry_count: u8,
    /// Receiver-not-ready retries (7: forever).
    pub rnr_retry: u8,
}

impl QpInfo {
    /// QP `qpn`, if it exists.
    pub fn load(fw: &Firmware, qpn: u32) -> Option<Self> {
        let qp = fw.objects.get(Kind::Qp, qpn)?;
        let c = &qp.context;
        let rq_type = ifc::get(c, qpc::RQ_TYPE);
        let rq_entries = 1u64 << ifc::get(c, qpc::LOG_RQ_SIZE);
        let rq_stride = 16u64 << ifc::get(c, qpc::LOG_RQ_STRIDE);
        let rq_bytes = if rq_type == RQ_REGULAR {
            rq_entries * rq_stride
        } else {
            0
        };
        let sq_entries = 1u64 << ifc::get(c, qpc::LOG_SQ_SIZE);
        let has_sq = ifc::get(c, qpc::NO_SQ) == 0;
        let buf = Buffer::from_context(
            c,
            qpc::LOG_PAGE_SIZE,
            qpc::PAGE_OFFSET,
            rq_bytes + if has_sq { sq_entries * WQE_BB } else { 0 },
        );
        let sq = has_sq.then(|| Ring {
            buf: buf.clone(),
            base: rq_bytes,
            entries: sq_entries,
            stride: WQE_BB,
        });
        let rq = (rq_type == RQ_REGULAR).then_some(Ring {
            buf,
            base: 0,
            entries: rq_entries,
            stride: rq_stride,
        });
        Some(Self {
            qpn,
            st: ifc::get(c, qpc::ST),
            state: qp.qp_state,
            pd: ifc::get(c, qpc::PD) as u32,
            port: qp.attr(op::RST2INIT_QP, qpc::VHCA_PORT_NUM).max(1) as u8,
            qkey: qp.attr(op::RST2INIT_QP, qpc::Q_KEY) as u32,
            sq,
            rq,
            srq: (rq_type == RQ_SHARED).then(|| ifc::get(c, qpc::SRQN_RMPN) as u32),
            dbr: ifc::get(c, qpc::DBR_ADDR),
            cqn_snd: ifc::get(c, qpc::CQN_SND) as u32,
            cqn_rcv: ifc::get(c, qpc::CQN_RCV) as u32,
            rlid: qp.attr(op::INIT2RTR_QP, qpc::RLID) as u16,
            remote_qpn: qp.attr(op::INIT2RTR_QP, qpc::REMOTE_QPN) as u32,
            retry_count: qp.attr(op::RTR2RTS_QP, attr::RETRY_COUNT) as u8,
            rnr_retry: qp.attr(op::RTR2RTS_QP, attr::RNR_RETRY) as u8,
        })
    }

    /// The send producer counter from the doorbell record.
    pub fn sq_producer(&self, mem: &dyn GuestMemory) -> Option<u16> {
        read_counter(mem, self.dbr + 4)
    }

    /// The receive producer counter from the doorbell record.
    pub fn rq_producer(&self, mem: &dyn GuestMemory) -> Option<u16> {
        read_counter(mem, self.dbr)
    }

    /// The source LID of packets this QP sends.
    pub fn slid(&self, fw: &Firmware) -> u16 {
        fw.node.port(self.port).map_or(0, |p| p.lid)
    }
}

fn read_counter(mem: &dyn GuestMemory, addr: u64) -> Option<u16> {
    let mut b = [0u8; 4];
    mem.read(addr, &mut b).ok()?;
    Some(u32::from_be_bytes(b) as u16)
}

/// Reads the whole send WQE at counter `at` of `sq` (its first block says how long it is).
pub fn fetch_send_wqe(
    mem: &dyn GuestMemory,
    sq: &Ring,
    at: u16,
) -> Result<Vec<u8>, crate::guest_memory::DmaFault> {
    let first = sq.read(mem, u64::from(at))?;
    let bbs = wqe::basic_blocks(&first);
    let ds = usize::from(first[7] & 0x3f);
    let mut w = first;
    for i in 1..bbs {
        w.extend_from_slice(&sq.read(mem, u64::from(at.wrapping_add(i)))?);
    }
    w.truncate((ds * 16).max(16));
    Ok(w)
}

/// Moves QP `qpn` to `state` (error or send-queue error) after a failed WQE, and flushes.
pub fn fail(fw: &mut Firmware, mem: &mut dyn GuestMemory, qpn: u32, state: QpState) {
    debug!("QP {qpn:#x}: moves to {state:?}");
    fw.objects.set_qp_state(qpn, state);
    if state == QpState::Err {
        entered_error(fw, mem, qpn);
    }
    flush(fw, mem, qpn);
}

/// Event: the last WQE of a QP attached to an SRQ was reached (data: queue type at byte 20, 0
/// for a QP; the QP number at byte 24).
const EVENT_SRQ_LAST_WQE: u8 = 0x13;

/// QP `qpn` is in the error state: watched for receives posted later, and, the first time since
/// its last reset, when it takes its receives from an SRQ, the device reports that the last WQE
/// was reached (nothing more will be taken from the SRQ for it), as a ConnectX does; drivers
/// wait for this event before draining such a QP (C's `ib_drain_qp` on an SRQ QP).
pub fn entered_error(fw: &mut Firmware, mem: &mut dyn GuestMemory, qpn: u32) {
    if !fw.datapath.watch_errored(qpn) {
        return;
    }
    if QpInfo::load(fw, qpn).is_some_and(|q| q.srq.is_some()) {
        let mut data = [0u8; 28];
        data[24..28].copy_from_slice(&qpn.to_be_bytes());
        fw.post_event(mem, EVENT_SRQ_LAST_WQE, 0, &data);
    }
}

/// Completes every WQE still in QP `qpn`'s queues with a flush error: the request in flight and
/// the posted send WQEs, and (in the error state) the posted receive WQEs.
pub fn flush(fw: &mut Firmware, mem: &mut dyn GuestMemory, qpn: u32) {
    let Some(qp) = QpInfo::load(fw, qpn) else {
        return;
    };
    if let Some(sq) = &qp.sq {
        let mut cqes = vec![];
        let state = fw.datapath.sqs.entry(qpn).or_default();
        if let Some(w) = state.take_inflight() {
            cqes.push(Cqe::requester_error(qpn, w.counter, w.opcode, Syndrome::WrFlush));
        }
        let producer = qp.sq_producer(mem).unwrap_or(state.consumer);
        let mut at = state.consumer;
        while at != producer {
            let Ok(first) = sq.read(mem, u64::from(at)) else {
                warn!("QP {qpn:#x}: send WQE {at} unreadable while flushing");
                break;
            };
            let counter = u16::from_be_bytes([first[1], first[2]]);
            cqes.push(Cqe::requester_error(qpn, counter, first[3], Syndrome::WrFlush));
            at = at.wrapping_add(wqe::basic_blocks(&first));
        }
        fw.datapath.sqs.entry(qpn).or_default().consumer = producer;
        for c in cqes {
            completion::post(fw, mem, qp.cqn_snd, c);
        }
    }
    flush_receives(fw, mem, qpn);
}

/// In the error state, completes the posted receive WQEs of QP `qpn` with a flush error.
pub fn flush_receives(fw: &mut Firmware, mem: &mut dyn GuestMemory, qpn: u32) {
    let Some(qp) = QpInfo::load(fw, qpn) else {
        return;
    };
    if qp.state != QpState::Err || qp.rq.is_none() {
        return;
    }
    let Some(producer) = qp.rq_producer(mem) else {
        return;
    };
    let rq = fw.datapath.rqs.entry(qpn).or_default();
    let from = rq.consumer;
    rq.consumer = producer;
    let mut at = from;
    while at != producer {
        completion::post(
            fw,
            mem,
            qp.cqn_rcv,
            Cqe::responder_error(qpn, at, Syndrome::WrFlush),
        );
        at = at.wrapping_add(1);
    }
}
