//! Queue counters (Q counters): sets of 32-bit counters of events on the QPs bound to them.
//!
//! The driver allocates a set (ALLOC_Q_COUNTER), binds QPs to it through the QP context's
//! `counter_set_id` at RST2INIT, reads it (QUERY_Q_COUNTER, optionally clearing it) and frees it
//! (DEALLOC_Q_COUNTER). The C `mlx5_ib` allocates one set per port at probe and binds every QP
//! to its port's set; its `hw_counters` in sysfs and `rdma stat show` read the set.
//!
//! The data path counts an event on the set of the QP it happened on: the responder QP for
//! received requests, missing receive WQEs and responder errors, the requester QP for NAKs,
//! timeouts and requester errors. A QP bound to no set (`counter_set_id` 0) is counted nowhere.
//! Counters the model's data path cannot produce (out of sequence, duplicate requests, PSN
//! errors: RC is stop-and-wait over a lossless local queue or wire, messages are never split)
//! stay 0, as they would on a device that never sees those events.

use super::datapath::{cqe_opcode as cqe_op, Syndrome};
use super::objects::Kind;
use super::{output, CmdError, CmdResult, Firmware, Input};
use crate::command::Status;
use crate::ifc::{self, Field};
use crate::opcodes::op;
use std::collections::BTreeMap;

/// How many sets the device has (cap `max_qp_cnt`). Not read from a real ConnectX-5; the set
/// number is 8 bits wide in every command and context, so at most 255 sets are addressable.
pub const MAX_SETS: u64 = 128;

/// ALLOC_Q_COUNTER's output: the set number.
const OUT_SET_ID: Field = Field::new(0x58, 8);
/// DEALLOC_Q_COUNTER's input: the set number.
const DEALLOC_SET_ID: Field = Field::new(0x58, 8);
/// QUERY_Q_COUNTER's input fields.
const QUERY_OTHER_VPORT: Field = Field::new(0x40, 1);
const QUERY_CLEAR: Field = Field::new(0xc0, 1);
const QUERY_AGGREGATE: Field = Field::new(0xc1, 1);
const QUERY_SET_ID: Field = Field::new(0xf8, 8);
/// QUERY_Q_COUNTER's output size (`query_q_counter_out`).
const QUERY_OUT_LEN: usize = 0x100;
/// The QP context's `counter_set_id` in the modify commands' input (the context at 0xc0).
pub const QPC_COUNTER_SET_ID: Field = Field::new(0x120, 8);

/// One set's counters, by their byte offset in QUERY_Q_COUNTER's output (`mlx5_ifc.h`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QCounterSet {
    /// Every counter, by byte offset in the output; 32 bits that wrap, as the device's.
    values: BTreeMap<usize, u32>,
}

/// Byte offsets of the counters the data path counts.
pub mod counter {
    /// RDMA write requests received (responder).
    pub const RX_WRITE_REQUESTS: usize = 0x10;
    /// RDMA read requests received (responder).
    pub const RX_READ_REQUESTS: usize = 0x18;
    /// Atomic requests received (responder).
    pub const RX_ATOMIC_REQUESTS: usize = 0x20;
    /// Messages dropped (UD) or refused with a receiver-not-ready NAK (RC) for lack of a
    /// receive WQE (responder).
    pub const OUT_OF_BUFFER: usize = 0x30;
    /// Receiver-not-ready NAKs received and retried: the retry limit was not exceeded
    /// (requester).
    pub const RNR_NAK_RETRY_ERR: usize = 0x48;
    /// Acknowledgement timeouts that led to a retry: the limit was not exceeded (requester).
    pub const LOCAL_ACK_TIMEOUT_ERR: usize = 0x60;
    /// Receiver-not-ready retries exceeded (requester error CQE, syndrome 0x16).
    pub const REQ_RNR_RETRIES_EXCEEDED: usize = 0x70;
    /// Local length errors (responder error CQE, syndrome 0x01).
    pub const RESP_LOCAL_LENGTH_ERROR: usize = 0x78;
    /// Responder error CQEs other than flushes.
    pub const RESP_CQE_ERROR: usize = 0x90;
    /// Requester error CQEs other than flushes.
    pub const REQ_CQE_ERROR: usize = 0x94;
    /// Remote invalid request NAKs (requester error CQE, syndrome 0x12).
    pub const REQ_REMOTE_INVALID_REQUEST: usize = 0xa0;
    /// Remote access error NAKs (requester error CQE, syndrome 0x13).
    pub const REQ_REMOTE_ACCESS_ERRORS: usize = 0xa8;
    /// Remote access errors the responder detected (bad rkey, bounds, rights).
    pub const RESP_REMOTE_ACCESS_ERRORS: usize = 0xac;
    /// Transport retries exceeded (requester error CQE, syndrome 0x15).
    pub const REQ_TRANSPORT_RETRIES_EXCEEDED: usize = 0xb4;
    /// Responder flush error CQEs.
    pub const RESP_CQE_FLUSH_ERROR: usize = 0xbc;
    /// Requester flush error CQEs.
    pub const REQ_CQE_FLUSH_ERROR: usize = 0xc0;
}

impl QCounterSet {
    /// Counts one event of the counter at byte offset `at`.
    pub fn add(&mut self, at: usize) {
        let v = self.values.entry(at).or_default();
        *v = v.wrapping_add(1);
    }

    /// The counter at byte offset `at`.
    pub fn get(&self, at: usize) -> u32 {
        self.values.get(&at).copied().unwrap_or(0)
    }
}

/// The device's counter sets.
#[derive(Debug, Default)]
pub struct QCounters {
    sets: BTreeMap<u8, QCounterSet>,
}

impl QCounters {
    /// The set `id`, if allocated.
    pub fn set(&self, id: u8) -> Option<&QCounterSet> {
        self.sets.get(&id)
    }

    /// Whether set `id` is allocated.
    pub fn exists(&self, id: u8) -> bool {
        self.sets.contains_key(&id)
    }

    /// Number of allocated sets.
    pub fn count(&self) -> usize {
        self.sets.len()
    }
}

/// The set QP `qpn` counts on: the `counter_set_id` of its last RST2INIT, if that set exists.
fn set_of(fw: &Firmware, qpn: u32) -> Option<u8> {
    let qp = fw.objects.get(Kind::Qp, qpn)?;
    let id = qp.attr(op::RST2INIT_QP, QPC_COUNTER_SET_ID) as u8;
    (id != 0 && fw.q_counters.exists(id)).then_some(id)
}

/// Counts one event of counter `at` on the set of QP `qpn` (nowhere if it has none).
pub fn count(fw: &mut Firmware, qpn: u32, at: usize) {
    if let Some(id) = set_of(fw, qpn) {
        if let Some(s) = fw.q_counters.sets.get_mut(&id) {
            s.add(at);
        }
    }
}

/// Counts what an error CQE of QP `qpn` says: requester or responder, flush or not, and the
/// syndromes that have counters of their own.
pub fn count_cqe(fw: &mut Firmware, qpn: u32, cqe_opcode: u8, syndrome: u8) {
    use counter::*;
    let flush = syndrome == Syndrome::WrFlush as u8;
    match cqe_opcode {
        cqe_op::REQ_ERR => {
            count(fw, qpn, if flush { REQ_CQE_FLUSH_ERROR } else { REQ_CQE_ERROR });
            let specific = match syndrome {
                s if s == Syndrome::RemoteInvalidRequest as u8 => Some(REQ_REMOTE_INVALID_REQUEST),
                s if s == Syndrome::RemoteAccess as u8 => Some(REQ_REMOTE_ACCESS_ERRORS),
                s if s == Syndrome::TransportRetryExceeded as u8 => Some(REQ_TRANSPORT_RETRIES_EXCEEDED),
                s if s == Syndrome::RnrRetryExceeded as u8 => Some(REQ_RNR_RETRIES_EXCEEDED),
                _ => None,
            };
            if let Some(at) = specific {
                count(fw, qpn, at);
            }
        }
        cqe_op::RESP_ERR => {
            count(
                fw,
                qpn,
                if flush {
                    RESP_CQE_FLUSH_ERROR
                } else {
                    RESP_CQE_ERROR
                },
            );
            if syndrome == Syndrome::LocalLength as u8 {
                count(fw, qpn, RESP_LOCAL_LENGTH_ERROR);
            }
        }
        _ => {}
    }
}

/// ALLOC_Q_COUNTER: a new set, all zero; the lowest free number from 1 up. Past `MAX_SETS`
/// sets the firmware is out of resources.
pub fn alloc_q_counter(fw: &mut Firmware, _input: &Input) -> CmdResult {
    let id = (1..=MAX_SETS as u8)
        .find(|id| !fw.q_counters.sets.contains_key(id))
        .ok_or(CmdError::new(Status::NoResources, 0x0c70_0001))?;
    fw.q_counters.sets.insert(id, QCounterSet::default());
    let mut out = output(16);
    ifc::set(&mut out, OUT_SET_ID, u64::from(id));
    Ok(out)
}

/// DEALLOC_Q_COUNTER: frees a set (QPs still bound to it count nowhere from then on).
pub fn dealloc_q_counter(fw: &mut Firmware, input: &Input) -> CmdResult {
    let id = input.get(DEALLOC_SET_ID) as u8;
    fw.q_counters
        .sets
        .remove(&id)
        .ok_or(CmdError::new(Status::BadParameter, 0x0c72_0000 | u32::from(id)))?;
    Ok(output(16))
}

/// QUERY_Q_COUNTER: a set's counters as 32-bit big-endian values at their offsets; with
/// `clear`, the set is zeroed after it is read. Other vports and aggregation (switchdev) are
/// not modelled.
pub fn query_q_counter(fw: &mut Firmware, input: &Input) -> CmdResult {
    if input.get(QUERY_OTHER_VPORT) != 0 || input.get(QUERY_AGGREGATE) != 0 {
        return Err(CmdError::new(Status::BadParameter, 0x0c73_1000));
    }
    let id = input.get(QUERY_SET_ID) as u8;
    let set = fw
        .q_counters
        .sets
        .get_mut(&id)
        .ok_or(CmdError::new(Status::BadParameter, 0x0c73_0000 | u32::from(id)))?;
    let mut out = output(QUERY_OUT_LEN);
    for (&at, &v) in &set.values {
        if let Some(b) = out.get_mut(at..at + 4) {
            b.copy_from_slice(&v.to_be_bytes());
        }
    }
    if input.get(QUERY_CLEAR) != 0 {
        set.values.clear();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::firmware::FirmwareConfig;

    fn cmd(opcode: u16, len: usize) -> Vec<u8> {
        let mut c = vec![0u8; len];
        c[0..2].copy_from_slice(&opcode.to_be_bytes());
        c
    }

    fn be32(out: &[u8], at: usize) -> u32 {
        u32::from_be_bytes([out[at], out[at + 1], out[at + 2], out[at + 3]])
    }

    #[test]
    fn sets_are_allocated_queried_cleared_and_freed() {
        let mut fw = Firmware::new(FirmwareConfig::default());
        let a = ifc::get(
            &alloc_q_counter(&mut fw, &Input::new(&cmd(op::ALLOC_Q_COUNTER, 16))).unwrap(),
            OUT_SET_ID,
        );
        let b = ifc::get(
            &alloc_q_counter(&mut fw, &Input::new(&cmd(op::ALLOC_Q_COUNTER, 16))).unwrap(),
            OUT_SET_ID,
        );
        assert_eq!((a, b), (1, 2));
        fw.q_counters
            .sets
            .get_mut(&2)
            .unwrap()
            .add(counter::RX_WRITE_REQUESTS);
        fw.q_counters
            .sets
            .get_mut(&2)
            .unwrap()
            .add(counter::RX_WRITE_REQUESTS);
        fw.q_counters
            .sets
            .get_mut(&2)
            .unwrap()
            .add(counter::OUT_OF_BUFFER);
        let mut q = cmd(op::QUERY_Q_COUNTER, 32);
        ifc::set(&mut q, QUERY_SET_ID, 2);
        let out = query_q_counter(&mut fw, &Input::new(&q)).unwrap();
        assert_eq!(out.len(), QUERY_OUT_LEN);
        assert_eq!(be32(&out, counter::RX_WRITE_REQUESTS), 2);
        assert_eq!(be32(&out, counter::OUT_OF_BUFFER), 1);
        assert_eq!(be32(&out, counter::RX_READ_REQUESTS), 0);
        // Set 1 saw nothing.
        ifc::set(&mut q, QUERY_SET_ID, 1);
        let out = query_q_counter(&mut fw, &Input::new(&q)).unwrap();
        assert!(out[16..].iter().all(|&b| b == 0));
        // Clear: this read still has the values, the next one is zero.
        ifc::set(&mut q, QUERY_SET_ID, 2);
        ifc::set(&mut q, QUERY_CLEAR, 1);
        let out = query_q_counter(&mut fw, &Input::new(&q)).unwrap();
        assert_eq!(be32(&out, counter::RX_WRITE_REQUESTS), 2);
        let out = query_q_counter(&mut fw, &Input::new(&q)).unwrap();
        assert_eq!(be32(&out, counter::RX_WRITE_REQUESTS), 0);
        // Free: the number is free again, and unknown sets are refused.
        let mut d = cmd(op::DEALLOC_Q_COUNTER, 16);
        ifc::set(&mut d, DEALLOC_SET_ID, 1);
        dealloc_q_counter(&mut fw, &Input::new(&d)).unwrap();
        let e = dealloc_q_counter(&mut fw, &Input::new(&d)).unwrap_err();
        assert_eq!(e.status, Status::BadParameter);
        ifc::set(&mut q, QUERY_SET_ID, 1);
        assert_eq!(
            query_q_counter(&mut fw, &Input::new(&q)).unwrap_err().status,
            Status::BadParameter
        );
        let again = alloc_q_counter(&mut fw, &Input::new(&cmd(op::ALLOC_Q_COUNTER, 16))).unwrap();
        assert_eq!(ifc::get(&again, OUT_SET_ID), 1);
    }

    #[test]
    fn sets_run_out_at_the_cap() {
        let mut fw = Firmware::new(FirmwareConfig::default());
        for _ in 0..MAX_SETS {
            alloc_q_counter(&mut fw, &Input::new(&cmd(op::ALLOC_Q_COUNTER, 16))).unwrap();
        }
        let e = alloc_q_counter(&mut fw, &Input::new(&cmd(op::ALLOC_Q_COUNTER, 16))).unwrap_err();
        assert_eq!(e.status, Status::NoResources);
        assert_eq!(fw.q_counters.count(), MAX_SETS as usize);
    }

    #[test]
    fn counters_wrap_at_32_bits() {
        let mut s = QCounterSet::default();
        s.values.insert(counter::OUT_OF_BUFFER, u32::MAX);
        s.add(counter::OUT_OF_BUFFER);
        assert_eq!(s.get(counter::OUT_OF_BUFFER), 0);
    }
}
