//! Completion queues: CQE layouts (good and error), writing entries with the owner bit, 64- and
//! 128-byte entries, overrun detection, arming and completion events, and resizing (MODIFY_CQ).

use super::buffer::{Buffer, Ring, PAS};
use crate::command::Status;
use crate::firmware::eq::event;
use crate::firmware::objects::{cqc, Kind, NUMBER};
use crate::firmware::{caps, output, CmdError, CmdResult, Firmware, Input};
use crate::guest_memory::{DmaFault, GuestMemory};
use crate::ifc::{self, Field};
use log::{debug, warn};

/// CQE opcodes (`op_own[7:4]`).
pub mod opcode {
    /// Requester completion.
    pub const REQ: u8 = 0x0;
    /// Responder: RDMA write with immediate.
    pub const RESP_WR_IMM: u8 = 0x1;
    /// Responder: send.
    pub const RESP_SEND: u8 = 0x2;
    /// Responder: send with immediate.
    pub const RESP_SEND_IMM: u8 = 0x3;
    /// Requester error.
    pub const REQ_ERR: u8 = 0xd;
    /// Responder error.
    pub const RESP_ERR: u8 = 0xe;
    /// The last entry of a resized CQ's old ring (`MLX5_CQE_RESIZE_CQ`).
    pub const RESIZE_CQ: u8 = 0x5;
}

/// Error CQE syndromes, as the device reports them (the provider maps them to `ibv_wc_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syndrome {
    /// Local length error: a receive too small for the message.
    LocalLength = 0x01,
    /// Local QP operation error: a malformed WQE.
    LocalQpOp = 0x02,
    /// Local protection error: a local key that does not allow the access.
    LocalProt = 0x04,
    /// The WQE was flushed because the QP is in the error state.
    WrFlush = 0x05,
    /// Bad response.
    BadResp = 0x10,
    /// Local access error.
    LocalAccess = 0x11,
    /// The responder found the request invalid.
    RemoteInvalidRequest = 0x12,
    /// The responder refused the remote key, bounds or access.
    RemoteAccess = 0x13,
    /// The responder failed to execute the request.
    RemoteOp = 0x14,
    /// No response within the retry count.
    TransportRetryExceeded = 0x15,
    /// Receiver-not-ready beyond the RNR retry count.
    RnrRetryExceeded = 0x16,
}

/// `qpc.user_index` in CREATE_QP: the driver's handle for the QP, which CQEs carry.
const USER_INDEX: Field = Field::new(0x148, 24);

/// Event type of a CQ error (overrun).
const EVENT_CQ_ERROR: u8 = 0x04;
/// `cqc.dbr_addr` in CREATE_CQ.
const DBR_ADDR: Field = Field::new(0x240, 64);

/// A 64-byte CQE under construction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cqe(pub [u8; 64]);

impl Cqe {
    fn new(op: u8, qpn: u32, counter: u16) -> Self {
        let mut c = [0u8; 64];
        c[56..60].copy_from_slice(&(qpn & 0x00ff_ffff).to_be_bytes());
        c[60..62].copy_from_slice(&counter.to_be_bytes());
        c[63] = op << 4;
        Self(c)
    }

    /// A requester completion of WQE `counter` (whose opcode was `wqe_opcode`).
    pub fn requester(qpn: u32, counter: u16, wqe_opcode: u8, byte_cnt: u32) -> Self {
        let mut c = Self::new(opcode::REQ, qpn, counter);
        c.0[56] = wqe_opcode;
        c.0[44..48].copy_from_slice(&byte_cnt.to_be_bytes());
        c
    }

    /// A requester error completion.
    pub fn requester_error(qpn: u32, counter: u16, wqe_opcode: u8, s: Syndrome) -> Self {
        let mut c = Self::new(opcode::REQ_ERR, qpn, counter);
        c.0[56] = wqe_opcode;
        c.0[55] = s as u8;
        c
    }

    /// A responder completion of receive WQE `counter`.
    pub fn responder(op: u8, qpn: u32, counter: u16, byte_cnt: u32) -> Self {
        let mut c = Self::new(op, qpn, counter);
        c.0[44..48].copy_from_slice(&byte_cnt.to_be_bytes());
        c
    }

    /// A responder error completion of receive WQE `counter`.
    pub fn responder_error(qpn: u32, counter: u16, s: Syndrome) -> Self {
        let mut c = Self::new(opcode::RESP_ERR, qpn, counter);
        c.0[55] = s as u8;
        c
    }

    /// Sets the source of a received message: LID, QP and whether a GRH came with it.
    pub fn source(mut self, slid: u16, sqpn: u32, grh: bool) -> Self {
        self.0[22..24].copy_from_slice(&slid.to_be_bytes());
        let flags = u32::from(grh) << 28 | (sqpn & 0x00ff_ffff);
        self.0[24..28].copy_from_slice(&flags.to_be_bytes());
        self
    }

    /// Sets the immediate data.
    pub fn immediate(mut self, imm: u32) -> Self {
        self.0[36..40].copy_from_slice(&imm.to_be_bytes());
        self
    }
}

/// `modify_cq_in.op_mod` of a resize (`MLX5_CQ_OPMOD_RESIZE`); 0 changes moderation.
const OPMOD_RESIZE: u16 = 1;
/// `modify_cq_in.resize_field_select`: which of the context's size fields a resize sets.
const RESIZE_FIELD_SELECT: Field = Field::new(0x60, 32);
/// Its bits (`MLX5_MODIFY_CQ_MASK_LOG_SIZE`, `_PG_OFFSET`, `_PG_SIZE`).
const SELECT_LOG_SIZE: u64 = 1 << 0;
const SELECT_PG_OFFSET: u64 = 1 << 1;
const SELECT_PG_SIZE: u64 = 1 << 2;

/// Per-CQ state: how many entries the device wrote, and whether an event is requested.
#[derive(Debug, Clone, Default)]
pub struct CqState {
    producer: u32,
    armed: bool,
    overrun: bool,
}

/// The CQ's ring: 64- or 128-byte entries (`cqe_sz` 0 or 1).
fn ring(ctx: &[u8]) -> Option<Ring> {
    let stride = match ifc::get(ctx, cqc::CQE_SZ) {
        0 => 64,
        1 => 128,
        _ => return None,
    };
    let entries = 1u64 << ifc::get(ctx, cqc::LOG_CQ_SIZE);
    let buf = Buffer::from_context(ctx, cqc::LOG_PAGE_SIZE, cqc::PAGE_OFFSET, stride * entries);
    Some(Ring {
        buf,
        base: 0,
        entries,
        stride,
    })
}

fn completion_event(fw: &mut Firmware, mem: &mut dyn GuestMemory, cqn: u32, eqn: u8) {
    let mut data = [0u8; 28];
    data[24..28].copy_from_slice(&cqn.to_be_bytes());
    if !fw.eqs.exists(eqn) {
        warn!("CQ {cqn:#x}: completion EQ {eqn} is gone");
        return;
    }
    if let Some(v) = fw.eqs.post_to(mem, eqn, event::COMP, 0, &data) {
        fw.irqs.push(v);
    }
}

/// Writes the 64-byte CQE `c` as entry `index` of `ring` (the second half of a 128-byte entry)
/// with the owner bit of the pass over the ring, the byte holding it last.
fn write_entry(ring: &Ring, mem: &mut dyn GuestMemory, index: u32, mut c: [u8; 64]) -> Result<(), DmaFault> {
    let log_size = ring.entries.trailing_zeros();
    c[63] = (c[63] & 0xfe) | ((index >> log_size) & 1) as u8;
    let at = ring.offset(u64::from(index)) + ring.stride - 64;
    ring.buf.write(mem, at, &c[..63])?;
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    ring.buf.write(mem, at + 63, &c[63..])
}

/// Writes `cqe` as the next entry of CQ `cqn`: the 64-byte CQE (the second half of a 128-byte
/// entry), with the QP's user index (how a provider using CQE version 1 finds the QP), owner
/// bit last. A full CQ (the driver's consumer index, from the CQ's doorbell record,
/// one ring behind) is an overrun: the entry is lost and a CQ error event is raised once.
pub fn post(fw: &mut Firmware, mem: &mut dyn GuestMemory, cqn: u32, cqe: Cqe) {
    let op = cqe.0[63] >> 4;
    if op == opcode::REQ_ERR || op == opcode::RESP_ERR {
        let qpn = u32::from_be_bytes([0, cqe.0[57], cqe.0[58], cqe.0[59]]);
        crate::firmware::q_counters::count_cqe(fw, qpn, op, cqe.0[55]);
    }
    let Some(obj) = fw.objects.get(Kind::Cq, cqn) else {
        warn!("completion for CQ {cqn:#x}, which does not exist");
        return;
    };
    let ctx = &obj.context;
    let Some(ring) = ring(ctx) else {
        warn!("CQ {cqn:#x}: unknown CQE size; completion dropped");
        return;
    };
    let eqn = ifc::get(ctx, cqc::EQN) as u8;
    let consumer = consumer_index(ctx, mem);
    let mut c = cqe.0;
    let qpn = u32::from_be_bytes([0, c[57], c[58], c[59]]);
    if let Some(qp) = fw.objects.get(Kind::Qp, qpn) {
        let uidx = ifc::get(&qp.context, USER_INDEX) as u32;
        c[32..36].copy_from_slice(&uidx.to_be_bytes());
    }
    let state = fw.datapath.cqs.entry(cqn).or_default();
    let index = state.producer;
    if let Some(ci) = consumer {
        let used = index.wrapping_sub(ci) & 0x00ff_ffff;
        if u64::from(used) >= ring.entries {
            if !std::mem::replace(&mut state.overrun, true) {
                warn!("CQ {cqn:#x} overrun: {used} entries not consumed; raising a CQ error");
                let mut data = [0u8; 28];
                data[0..4].copy_from_slice(&cqn.to_be_bytes());
                data[11] = 0x01; // syndrome: overrun
                fw.post_event(mem, EVENT_CQ_ERROR, 0, &data);
            }
            return;
        }
    }
    if let Err(e) = write_entry(&ring, mem, index, c) {
        warn!("CQ {cqn:#x}: cannot write entry {index}: {e}");
        return;
    }
    state.producer = index.wrapping_add(1);
    if std::mem::take(&mut state.armed) {
        completion_event(fw, mem, cqn, eqn);
    }
}

/// The consumer index the driver last wrote to CQ `ctx`'s doorbell record, if it has one.
fn consumer_index(ctx: &[u8], mem: &dyn GuestMemory) -> Option<u32> {
    let dbr = ifc::get(ctx, DBR_ADDR);
    let mut ci = [0u8; 4];
    (dbr != 0 && mem.read(dbr, &mut ci).is_ok()).then(|| u32::from_be_bytes(ci) & 0x00ff_ffff)
}

/// MODIFY_CQ. A resize (op_mod 1) takes the new size and page list from the input's context
/// and `pas`, as C's `mlx5_ib_resize_cq` gives them: the device ends the old ring with a
/// RESIZE_CQ entry at its producer index and writes the entries after it into the new ring,
/// its producer index going on from there. The CQEs the driver has not consumed stay in the old
/// ring for it to copy (C's `copy_resize_cqes`); more of them than the new ring holds is
/// `BAD_SIZE_OUTSTANDING_CQES`. Moderation (op_mod 0) is accepted and not modelled.
pub fn modify_cq(fw: &mut Firmware, mem: &mut dyn GuestMemory, input: &Input) -> CmdResult {
    let cqn = input.get(NUMBER) as u32;
    let Some(obj) = fw.objects.get(Kind::Cq, cqn) else {
        return Err(CmdError::new(Status::BadResource, 0x0c9_1000));
    };
    match input.op_mod() {
        0 => return Ok(output(16)),
        OPMOD_RESIZE => {}
        _ => return Err(CmdError::new(Status::BadParameter, 0x0c9_1001)),
    }
    let select = input.get(RESIZE_FIELD_SELECT);
    let log_size = input.get(cqc::LOG_CQ_SIZE);
    let max = fw.caps.get(caps::kind::GENERAL, caps::general::LOG_MAX_CQ_SZ);
    if select & SELECT_LOG_SIZE == 0 || log_size > max {
        return Err(CmdError::new(Status::BadParameter, 0x0c9_1002));
    }
    // The entry size stays: only the ring's length and pages change.
    if input.get(cqc::CQE_SZ) != ifc::get(&obj.context, cqc::CQE_SZ) {
        return Err(CmdError::new(Status::BadParameter, 0x0c9_1003));
    }
    let mut ctx = obj.context.clone();
    ifc::set(&mut ctx, cqc::LOG_CQ_SIZE, log_size);
    if select & SELECT_PG_OFFSET != 0 {
        ifc::set(&mut ctx, cqc::PAGE_OFFSET, input.get(cqc::PAGE_OFFSET));
    }
    if select & SELECT_PG_SIZE != 0 {
        ifc::set(&mut ctx, cqc::LOG_PAGE_SIZE, input.get(cqc::LOG_PAGE_SIZE));
    }
    ctx.truncate(PAS);
    ctx.resize(PAS, 0);
    ctx.extend_from_slice(input.bytes().get(PAS..).unwrap_or(&[]));
    let (Some(old), Some(new)) = (ring(&obj.context), ring(&ctx)) else {
        return Err(CmdError::new(Status::BadParameter, 0x0c9_1004));
    };
    let producer = fw.datapath.cqs.get(&cqn).map_or(0, |s| s.producer);
    let used =
        consumer_index(&obj.context, mem).map_or(0, |ci| u64::from(producer.wrapping_sub(ci) & 0x00ff_ffff));
    // Room for the RESIZE_CQ entry in the old ring, and for what is outstanding (and that
    // entry, until the driver's next doorbell record update) in the new one.
    if used >= old.entries || used + 1 > new.entries {
        return Err(CmdError::new(Status::BadSizeOutstandingCqes, 0x0c9_1005));
    }
    let mut c = [0u8; 64];
    c[63] = opcode::RESIZE_CQ << 4;
    if let Err(e) = write_entry(&old, mem, producer, c) {
        warn!("CQ {cqn:#x}: cannot write the resize entry {producer}: {e}");
        return Err(CmdError::new(Status::InternalError, 0x0c9_1006));
    }
    debug!(
        "CQ {cqn:#x} resized from {} to {} entries at index {producer}, {used} not consumed",
        old.entries, new.entries
    );
    fw.datapath.cq_resizes += 1;
    fw.datapath.cq_most_carried = fw.datapath.cq_most_carried.max(used);
    if let Some(obj) = fw.objects.get_mut(Kind::Cq, cqn) {
        obj.context = ctx;
    }
    let state = fw.datapath.cqs.entry(cqn).or_default();
    state.producer = producer.wrapping_add(1);
    state.overrun = false;
    Ok(output(16))
}

/// A CQ arm doorbell with the consumer index the driver has reached: the next completion raises
/// an event, or one is raised at once if completions past that index are already there.
pub fn arm_cq(fw: &mut Firmware, mem: &mut dyn GuestMemory, cqn: u32, consumer: u32) {
    let Some(obj) = fw.objects.get(Kind::Cq, cqn) else {
        debug!("arm for unknown CQ {cqn:#x}");
        return;
    };
    let eqn = ifc::get(&obj.context, cqc::EQN) as u8;
    let state = fw.datapath.cqs.entry(cqn).or_default();
    if state.producer & 0x00ff_ffff != consumer & 0x00ff_ffff {
        state.armed = false;
        completion_event(fw, mem, cqn, eqn);
    } else {
        state.armed = true;
    }
}
