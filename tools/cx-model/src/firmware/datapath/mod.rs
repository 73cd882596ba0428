//! The data path: work queues, execution, completions, and the packets between queue pairs.
//!
//! A send doorbell makes the **requester** ([`requester`]) fetch WQEs from the QP's send queue
//! (up to the producer counter in its doorbell record) and turn each into a [`Packet`] addressed
//! by LID and QP number. Packets for a LID of this device go to a local queue; others go to the
//! wire (another model, see `crate::wire`) when one is connected, and are lost otherwise. The
//! **responder** ([`responder`]) executes requests against its own memory through memory keys,
//! consumes receive WQEs (the QP's receive queue or its SRQ), and answers RC requests with an
//! acknowledgement, read data, an atomic's original value or a NAK.
//!
//! RC is stop-and-wait per QP: one request is in flight, and the next WQE is fetched when the
//! response came. That keeps ordering trivially right across RNR retries. A NAK or a missing
//! response ends in an error completion; the QP moves to the error state and every WQE still in
//! its queues is flushed. Receiver-not-ready NAKs and lost requests are retried from
//! [`tick`], which the model's network thread calls while [`DataPath::next_deadline`] says a
//! timer runs.

mod buffer;
mod completion;
mod keys;
mod multicast;
pub mod packet;
mod queue_pair;
mod requester;
mod responder;
mod wqe;

#[cfg(test)]
mod tests;

use super::objects::QpState;
use super::Firmware;
use crate::guest_memory::GuestMemory;
use log::debug;
pub use packet::Packet;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Instant;

pub use completion::{arm_cq, modify_cq, opcode as cqe_opcode, Syndrome};
pub use multicast::{attach_to_mcg, detach_from_mcg};

/// Traffic counters of the device, as the port counters (PMA) report them. Events of QPs are
/// counted on their queue counter sets (`crate::firmware::q_counters`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Packets and payload bytes sent by this device's QPs (requests and responses).
    pub xmit_packets: u64,
    /// Payload bytes sent.
    pub xmit_bytes: u64,
    /// Packets received by this device's QPs.
    pub rcv_packets: u64,
    /// Payload bytes received.
    pub rcv_bytes: u64,
}

/// Data-path state of one function.
#[derive(Debug, Default)]
pub struct DataPath {
    cqs: BTreeMap<u32, completion::CqState>,
    sqs: BTreeMap<u32, requester::SendQueue>,
    rqs: BTreeMap<u32, responder::RecvQueueState>,
    srqs: BTreeMap<u32, responder::SrqState>,
    /// Packets for this device, in arrival order.
    local: VecDeque<Packet>,
    /// Packets for other devices, for the wire.
    outbound: Vec<Packet>,
    /// Whether a wire carries packets to other devices.
    pub wire: bool,
    /// Traffic counters.
    pub counters: Counters,
    /// CQ resizes done, and the most entries one of them found not consumed yet (which the
    /// driver must carry over to the new ring).
    pub cq_resizes: u64,
    /// See `cq_resizes`.
    pub cq_most_carried: u64,
    /// QPs in the error state: receives posted to them later are flushed by [`tick`] (the
    /// driver rings no doorbell for receives; the device notices the doorbell record).
    errored: BTreeSet<u32>,
    /// When [`tick`] next looks at the receive queues of `errored`.
    errored_scan: Option<Instant>,
    /// The LID the control channel's injected datagrams come from (a hostile node): what the
    /// device sends to it is kept in `replies` instead of going to the wire.
    pub hostile: Option<u16>,
    /// The datagrams sent to `hostile` since the last injection (at most [`MAX_REPLIES`]).
    pub replies: VecDeque<Vec<u8>>,
    /// Multicast groups: the QPs attached to each multicast GID.
    pub(super) groups: BTreeMap<[u8; 16], BTreeSet<u32>>,
}

/// How many datagrams to the hostile node are kept.
pub const MAX_REPLIES: usize = 256;

impl DataPath {
    /// The earliest retry or timeout deadline of any QP, if a timer runs.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.sqs
            .values()
            .filter_map(|s| s.deadline())
            .chain(self.errored_scan)
            .min()
    }

    /// QP `qpn` entered the error state: watch its receive queue.
    /// Watches QP `qpn`, now in the error state; true when it just entered it (it was not
    /// watched since its last reset).
    fn watch_errored(&mut self, qpn: u32) -> bool {
        let new = self.errored.insert(qpn);
        self.errored_scan
            .get_or_insert_with(|| Instant::now() + ERRORED_SCAN);
        new
    }

    /// Packets for the wire; drains the list.
    pub fn take_outbound(&mut self) -> Vec<Packet> {
        std::mem::take(&mut self.outbound)
    }

    /// Forgets the state of a destroyed or reset QP.
    pub fn forget_qp(&mut self, qpn: u32) {
        self.sqs.remove(&qpn);
        self.rqs.remove(&qpn);
        self.errored.remove(&qpn);
        if self.errored.is_empty() {
            self.errored_scan = None;
        }
    }

    /// Detaches a destroyed QP from every multicast group.
    pub fn detach_all(&mut self, qpn: u32) {
        self.groups.retain(|_, members| {
            members.remove(&qpn);
            !members.is_empty()
        });
    }

    /// Forgets the state of a destroyed CQ.
    pub fn forget_cq(&mut self, cqn: u32) {
        self.cqs.remove(&cqn);
    }

    /// Arms SRQ (RMP) `srqn` with limit `lwm` (0 disarms): it raises an event when fewer WQEs
    /// than that are left.
    pub fn arm_srq(&mut self, srqn: u32, lwm: u16) {
        self.srqs.entry(srqn).or_default().lwm = lwm;
    }

    /// The limit SRQ (RMP) `srqn` is armed with (0: none, or it fired).
    pub fn srq_lwm(&self, srqn: u32) -> u16 {
        self.srqs.get(&srqn).map_or(0, |s| s.lwm)
    }

    /// Forgets the state of a destroyed SRQ (RMP).
    pub fn forget_srq(&mut self, srqn: u32) {
        self.srqs.remove(&srqn);
    }

    /// Forgets everything (teardown); counters stay.
    pub fn clear(&mut self) {
        let counters = std::mem::take(&mut self.counters);
        let wire = self.wire;
        *self = Self {
            counters,
            wire,
            ..Self::default()
        };
    }

    /// Sends `p`: to the local queue when its LID is a port of this device (`local`), else to
    /// the wire.
    fn send(&mut self, local: bool, p: Packet) {
        self.counters.xmit_packets += 1;
        self.counters.xmit_bytes += p.body.payload_len() as u64;
        if !local && self.hostile == Some(p.dlid) {
            if let packet::Body::Send { data, .. } = &p.body {
                if self.replies.len() < MAX_REPLIES {
                    self.replies.push_back(data.clone());
                }
            }
            return;
        }
        if local {
            self.local.push_back(p);
        } else if self.wire {
            self.outbound.push(p);
        } else {
            debug!(
                "packet for LID {:#x} QP {:#x}: no such port here and no wire; lost",
                p.dlid, p.dqpn
            );
        }
    }
}

impl Firmware {
    /// Whether the driver chose host order (little-endian) for 8-byte atomic operands in memory.
    fn atomics_in_host_order(&self) -> bool {
        use super::caps::{atomic, kind};
        self.caps.get(kind::ATOMIC, atomic::REQ_8B_ENDIANNESS_MODE) == 1
    }

    /// Sends a packet from this device (see [`DataPath::send`]).
    fn transmit(&mut self, p: Packet) {
        // A managed port that is not ACTIVE sends subnet management packets only.
        let from = self
            .node
            .ports
            .iter()
            .find(|port| port.has_lid(p.slid))
            .or(self.node.ports.first());
        if self.config.managed
            && p.sqpn != 0
            && from.is_some_and(|port| port.state != super::port::STATE_ACTIVE)
        {
            debug!("packet from QP {:#x}: the port is not ACTIVE; not sent", p.sqpn);
            return;
        }
        if multicast::is_multicast(p.dlid) {
            // To the attached QPs here, and to the other node's.
            self.datapath.local.push_back(p.clone());
            self.datapath.send(false, p);
            return;
        }
        let local = self.node.ports.iter().any(|port| port.has_lid(p.dlid));
        self.datapath.send(local, p);
    }
}

/// Delivers every packet queued for this device, including those the deliveries produce.
fn pump(fw: &mut Firmware, mem: &mut dyn GuestMemory, now: Instant) {
    while let Some(p) = fw.datapath.local.pop_front() {
        if multicast::is_multicast(p.dlid) {
            // A copy for each attached QP, each delivered as a packet of its own.
            for c in multicast::copies(fw, &p) {
                deliver(fw, mem, c, now);
            }
        } else {
            deliver(fw, mem, p, now);
        }
    }
}

/// Delivers packet `p` to its destination QP on this device.
fn deliver(fw: &mut Firmware, mem: &mut dyn GuestMemory, p: Packet, now: Instant) {
    fw.datapath.counters.rcv_packets += 1;
    fw.datapath.counters.rcv_bytes += p.body.payload_len() as u64;
    let port = fw.node.port_for_dlid(p.dlid).unwrap_or(1);
    if !super::sma::link_admits(fw, mem, port, p.dqpn, true) {
        debug!("packet for QP {:#x}: port {port} is not up; dropped", p.dqpn);
        return;
    }
    if p.body.is_request() {
        responder::on_request(fw, mem, p, now);
    } else {
        requester::on_response(fw, mem, p, now);
    }
}

/// A send doorbell for `qpn`: runs its send queue up to the producer counter.
pub fn send_doorbell(fw: &mut Firmware, mem: &mut dyn GuestMemory, qpn: u32) {
    let now = Instant::now();
    requester::progress(fw, mem, qpn, now);
    pump(fw, mem, now);
}

/// A packet from the wire.
pub fn receive(fw: &mut Firmware, mem: &mut dyn GuestMemory, p: Packet) {
    if fw.halted {
        debug!("packet for QP {:#x} dropped: the device is halted", p.dqpn);
        return;
    }
    let now = Instant::now();
    fw.datapath.local.push_back(p);
    pump(fw, mem, now);
}

/// Sends a MAD of the device's own port agent (a trap to the SM, from QP0): over the wire, or to
/// this device's QP0 when the SM is here.
pub fn agent_send(fw: &mut Firmware, mem: &mut dyn GuestMemory, p: Packet) {
    fw.transmit(p);
    pump(fw, mem, Instant::now());
}

/// Runs the retry and timeout timers due at `now`.
pub fn tick(fw: &mut Firmware, mem: &mut dyn GuestMemory, now: Instant) {
    if fw.halted {
        return;
    }
    requester::timers(fw, mem, now);
    if fw.datapath.errored_scan.is_some_and(|t| t <= now) {
        let errored: Vec<u32> = fw.datapath.errored.iter().copied().collect();
        for qpn in errored {
            queue_pair::flush_receives(fw, mem, qpn);
        }
        fw.datapath.errored_scan = (!fw.datapath.errored.is_empty()).then(|| now + ERRORED_SCAN);
    }
    pump(fw, mem, now);
}

/// How often receives posted to QPs in the error state are flushed.
const ERRORED_SCAN: std::time::Duration = std::time::Duration::from_millis(10);

/// A QP moved to `state` by a modify command: entering the error state flushes its queues;
/// reset forgets how far they were consumed.
pub fn qp_modified(fw: &mut Firmware, mem: &mut dyn GuestMemory, qpn: u32, state: QpState) {
    if fw.halted {
        return;
    }
    match state {
        QpState::Err => {
            queue_pair::entered_error(fw, mem, qpn);
            queue_pair::flush(fw, mem, qpn)
        }
        QpState::Rst => fw.datapath.forget_qp(qpn),
        _ => {}
    }
}
