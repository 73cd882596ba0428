//! Objects the driver creates through commands: memory keys, completion queues, queue pairs,
//! shared receive queues (SRQ, XRC SRQ, RMP) and XRC domains.
//!
//! The model records each object with the context the driver gave, checks that the objects a
//! context refers to exist (PD, CQ, XRCD, UAR, EQ), keeps queue pairs' state machine, and refuses
//! to destroy an object something still uses. Executing work on them is the data path's business.

use super::{output, CmdError, CmdResult, Firmware, Input};
use crate::command::Status;
use crate::ifc::{self, Field};
use log::debug;
use std::collections::BTreeMap;

/// Object number in create outputs and destroy/modify inputs.
pub const NUMBER: Field = Field::new(0x48, 24);

/// Kinds of object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Memory key.
    Mkey,
    /// Completion queue.
    Cq,
    /// Queue pair.
    Qp,
    /// Shared receive queue (basic).
    Srq,
    /// XRC shared receive queue.
    XrcSrq,
    /// Receive memory pool (the ISSI 1 form of a basic SRQ).
    Rmp,
    /// XRC domain.
    Xrcd,
    /// Protection domain: allocated from an id pool (`Firmware::pds`), never in the tables;
    /// objects name the PD they live in among their references, so that DEALLOC_PD of a PD
    /// still in use is refused as destroying any other used object is.
    Pd,
}

/// Queue pair states, with the values the interface uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpState {
    /// Reset.
    Rst = 0,
    /// Initialised.
    Init = 1,
    /// Ready to receive.
    Rtr = 2,
    /// Ready to send.
    Rts = 3,
    /// Send queue error.
    Sqe = 5,
    /// Error.
    Err = 6,
}

/// One object.
#[derive(Debug, Clone)]
pub struct Object {
    /// The create command's input (context included), for the data path to interpret.
    pub context: Vec<u8>,
    /// Objects this one refers to, so they cannot be destroyed first.
    pub refs: Vec<(Kind, u32)>,
    /// Queue pair state (QPs only).
    pub qp_state: QpState,
    /// QPs: the input of the last command of each transition (by opcode), whose context holds
    /// the attributes that transition set (Q_Key at RST2INIT, remote QP and path at INIT2RTR).
    pub modified: BTreeMap<u16, Vec<u8>>,
}

impl Object {
    /// An object created with `context`, holding `refs`.
    pub fn new(context: Vec<u8>, refs: Vec<(Kind, u32)>) -> Self {
        Self {
            context,
            refs,
            qp_state: QpState::Rst,
            modified: BTreeMap::new(),
        }
    }

    /// A QP attribute: `f` read from the context of the last `op` modify command.
    pub fn attr(&self, op: u16, f: Field) -> u64 {
        self.modified.get(&op).map_or(0, |c| ifc::get(c, f))
    }
}

/// All objects, by kind and number.
#[derive(Debug, Default)]
pub struct Objects {
    tables: BTreeMap<Kind, BTreeMap<u32, Object>>,
    next: BTreeMap<Kind, u32>,
}

impl Objects {
    /// Whether object `n` of `kind` exists.
    pub fn exists(&self, kind: Kind, n: u32) -> bool {
        self.tables.get(&kind).is_some_and(|t| t.contains_key(&n))
    }

    /// Object `n` of `kind`.
    pub fn get(&self, kind: Kind, n: u32) -> Option<&Object> {
        self.tables.get(&kind)?.get(&n)
    }

    /// Object `n` of `kind`, to change.
    pub fn get_mut(&mut self, kind: Kind, n: u32) -> Option<&mut Object> {
        self.tables.get_mut(&kind)?.get_mut(&n)
    }

    /// Number of objects of `kind`.
    pub fn count(&self, kind: Kind) -> usize {
        self.tables.get(&kind).map_or(0, |t| t.len())
    }

    /// Total number of objects.
    pub fn total(&self) -> usize {
        self.tables.values().map(|t| t.len()).sum()
    }

    fn in_use(&self, space: Kind, n: u32) -> bool {
        self.tables
            .iter()
            .any(|(k, t)| number_space(*k) == space && t.contains_key(&n))
    }

    fn insert(&mut self, kind: Kind, obj: Object) -> u32 {
        // Numbers are handed out increasing, as the device does, skipping numbers in use by any
        // kind that shares the number space.
        let space = number_space(kind);
        let mut n = *self.next.entry(space).or_insert(first_number(space));
        while self.in_use(space, n) {
            n = (n + 1) & 0x00ff_ffff;
        }
        self.next.insert(space, (n + 1) & 0x00ff_ffff);
        self.tables.entry(kind).or_default().insert(n, obj);
        n
    }

    /// How many objects refer to object `n` of `kind` (a PD: live in it).
    pub fn users_of(&self, kind: Kind, n: u32) -> usize {
        self.tables
            .values()
            .flat_map(|t| t.values())
            .filter(|o| o.refs.contains(&(kind, n)))
            .count()
    }

    fn remove(&mut self, kind: Kind, n: u32) -> Result<(), CmdError> {
        if !self.exists(kind, n) {
            return Err(CmdError::new(Status::BadResource, 0x0b7_0000 | kind as u32));
        }
        if self.users_of(kind, n) != 0 {
            return Err(CmdError::new(Status::ResourceBusy, 0x0b7_1000 | kind as u32));
        }
        self.tables.entry(kind).or_default().remove(&n);
        Ok(())
    }

    /// Sets QP `n`'s state (the data path moves QPs to an error state); false if no such QP.
    pub fn set_qp_state(&mut self, n: u32, state: QpState) -> bool {
        match self.tables.get_mut(&Kind::Qp).and_then(|t| t.get_mut(&n)) {
            Some(qp) => {
                qp.qp_state = state;
                true
            }
            None => false,
        }
    }

    /// Numbers of the objects of `kind`, increasing.
    pub fn numbers(&self, kind: Kind) -> impl Iterator<Item = u32> + '_ {
        self.tables.get(&kind).into_iter().flat_map(|t| t.keys().copied())
    }

    /// Forgets everything (teardown).
    pub fn clear(&mut self) {
        self.tables.clear();
    }
}

/// Kinds numbered from one pool share a number space: basic SRQs, XRC SRQs and RMPs are all
/// receive queues the driver keeps in one table by number.
fn number_space(kind: Kind) -> Kind {
    match kind {
        Kind::Srq | Kind::XrcSrq | Kind::Rmp => Kind::Srq,
        k => k,
    }
}

/// Numbering starts above the reserved numbers: QP 0 and 1 are the special QPs' wire numbers,
/// and mkey index 1 with key byte 0 would be 0x100, the lkey that ends a scatter list.
fn first_number(kind: Kind) -> u32 {
    match kind {
        Kind::Qp => 0x100,
        Kind::Mkey => 2,
        _ => 0,
    }
}

/// Builds a create handler's output with the new object number.
fn created(n: u32) -> CmdResult {
    let mut out = output(16);
    ifc::set(&mut out, NUMBER, u64::from(n));
    Ok(out)
}

fn need(ok: bool, what: u32) -> Result<(), CmdError> {
    if ok {
        Ok(())
    } else {
        Err(CmdError::new(Status::BadResource, 0x0b8_0000 | what))
    }
}

fn destroy(fw: &mut Firmware, kind: Kind, input: &Input) -> CmdResult {
    let n = input.get(NUMBER) as u32;
    fw.objects.remove(kind, n)?;
    match kind {
        Kind::Cq => fw.datapath.forget_cq(n),
        Kind::Qp => {
            fw.datapath.forget_qp(n);
            fw.datapath.detach_all(n);
        }
        Kind::Rmp => fw.datapath.forget_srq(n),
        _ => {}
    }
    debug!("destroyed {kind:?} {n:#x}");
    Ok(output(16))
}

/// `mkc` fields in CREATE_MKEY.
mod mkc {
    use crate::ifc::Field;
    pub const PD: Field = Field::new(0xe8, 24);
    pub const KEY: Field = Field::new(0xb8, 8);
}

/// CREATE_MKEY: the output is the index; the driver adds its own key byte.
pub fn create_mkey(fw: &mut Firmware, input: &Input) -> CmdResult {
    let pd = input.get(mkc::PD) as u32;
    need(fw.pds.contains(pd), 1)?;
    let _key = input.get(mkc::KEY);
    let n = fw.objects.insert(
        Kind::Mkey,
        Object::new(input.bytes().to_vec(), vec![(Kind::Pd, pd)]),
    );
    created(n)
}

/// DESTROY_MKEY.
pub fn destroy_mkey(fw: &mut Firmware, input: &Input) -> CmdResult {
    destroy(fw, Kind::Mkey, input)
}

/// `cqc` fields in CREATE_CQ.
pub(crate) mod cqc {
    use crate::ifc::Field;
    pub const CQE_SZ: Field = Field::new(0x88, 3);
    pub const LOG_CQ_SIZE: Field = Field::new(0xe3, 5);
    pub const UAR_PAGE: Field = Field::new(0xe8, 24);
    pub const EQN: Field = Field::new(0x120, 32);
    pub const LOG_PAGE_SIZE: Field = Field::new(0x143, 5);
    pub const PAGE_OFFSET: Field = Field::new(0xd4, 6);
}

/// CREATE_CQ: the completion EQ and UAR must exist.
pub fn create_cq(fw: &mut Firmware, input: &Input) -> CmdResult {
    let log_size = input.get(cqc::LOG_CQ_SIZE);
    let max = fw
        .caps
        .get(super::caps::kind::GENERAL, super::caps::general::LOG_MAX_CQ_SZ);
    if log_size > max {
        return Err(CmdError::new(Status::BadParameter, 0x0c9_0001));
    }
    need(fw.uars.contains(input.get(cqc::UAR_PAGE) as u32), 2)?;
    need(fw.eqs.exists(input.get(cqc::EQN) as u8), 3)?;
    let n = fw
        .objects
        .insert(Kind::Cq, Object::new(input.bytes().to_vec(), vec![]));
    created(n)
}

/// DESTROY_CQ.
pub fn destroy_cq(fw: &mut Firmware, input: &Input) -> CmdResult {
    destroy(fw, Kind::Cq, input)
}

/// `qpc` fields in CREATE_QP and the modify commands.
pub(crate) mod qpc {
    use crate::ifc::Field;
    pub const LOG_RQ_SIZE: Field = Field::new(0x109, 4);
    pub const LOG_RQ_STRIDE: Field = Field::new(0x10d, 3);
    pub const NO_SQ: Field = Field::new(0x110, 1);
    pub const LOG_SQ_SIZE: Field = Field::new(0x111, 4);
    pub const LOG_PAGE_SIZE: Field = Field::new(0x163, 5);
    pub const PAGE_OFFSET: Field = Field::new(0x554, 6);
    pub const DBR_ADDR: Field = Field::new(0x5c0, 64);
    pub const ST: Field = Field::new(0xc8, 8);
    pub const PD: Field = Field::new(0xe8, 24);
    pub const UAR_PAGE: Field = Field::new(0x128, 24);
    pub const XRCD: Field = Field::new(0x588, 24);
    pub const CQN_SND: Field = Field::new(0x4a8, 24);
    pub const CQN_RCV: Field = Field::new(0x5a8, 24);
    pub const Q_KEY: Field = Field::new(0x600, 32);
    /// The optional parameters a modify sets (`opt_param_mask`), and the Q_Key's bit.
    pub const OPT_PARAM_MASK: Field = Field::new(0x80, 32);
    /// See `OPT_PARAM_MASK`.
    pub const OPTPAR_Q_KEY: u64 = 1 << 5;
    pub const REMOTE_QPN: Field = Field::new(0x168, 24);
    pub const RLID: Field = Field::new(0x1b0, 16);
    pub const VHCA_PORT_NUM: Field = Field::new(0x2a8, 8);
    pub const PKEY_INDEX: Field = Field::new(0x190, 16);
    /// The primary path's address vector (`ads`): GRH flag, source path bits, remote LID,
    /// source GID index, static rate, hop limit, traffic class, flow label, remote GID, SL,
    /// port.
    pub const PATH: [Field; 12] = [
        Field::new(0x1a8, 1),
        Field::new(0x1a9, 7),
        RLID,
        Field::new(0x1c8, 8),
        Field::new(0x1d4, 4),
        Field::new(0x1d8, 8),
        Field::new(0x1e4, 8),
        Field::new(0x1ec, 20),
        Field::new(0x200, 64),
        Field::new(0x240, 64),
        Field::new(0x2a4, 4),
        VHCA_PORT_NUM,
    ];
    pub const MTU: Field = Field::new(0x100, 3);
    pub const ACK_TIMEOUT: Field = Field::new(0x1c0, 5);
    pub const LOG_SRA_MAX: Field = Field::new(0x448, 3);
    pub const RETRY_COUNT: Field = Field::new(0x44d, 3);
    pub const RNR_RETRY: Field = Field::new(0x450, 3);
    pub const NEXT_SEND_PSN: Field = Field::new(0x488, 24);
    pub const LOG_RRA_MAX: Field = Field::new(0x548, 3);
    pub const RRE: Field = Field::new(0x550, 1);
    pub const RWE: Field = Field::new(0x551, 1);
    pub const RAE: Field = Field::new(0x552, 1);
    pub const MIN_RNR_NAK: Field = Field::new(0x563, 5);
    pub const NEXT_RCV_PSN: Field = Field::new(0x568, 24);
    /// What RST2INIT sets: the primary path's P_Key index and port, the Q_Key and the remote
    /// access rights.
    pub const SET_BY_RST2INIT: [Field; 6] = [PKEY_INDEX, VHCA_PORT_NUM, Q_KEY, RRE, RWE, RAE];
    /// What INIT2RTR sets besides the remote QP and the path: the MTU, the responder's
    /// RDMA-read depth, the receive PSN and the RNR NAK timer.
    pub const SET_BY_INIT2RTR: [Field; 4] = [MTU, LOG_RRA_MAX, NEXT_RCV_PSN, MIN_RNR_NAK];
    /// What RTR2RTS sets: the send PSN, the requester's RDMA-read depth, the retry counts and
    /// the ACK timeout.
    pub const SET_BY_RTR2RTS: [Field; 5] = [NEXT_SEND_PSN, LOG_SRA_MAX, RETRY_COUNT, RNR_RETRY, ACK_TIMEOUT];
    pub const RQ_TYPE: Field = Field::new(0x625, 3);
    pub const SRQN_RMPN: Field = Field::new(0x628, 24);
}

/// Receive queue types in `qpc.rq_type`.
const RQ_TYPE_SRQ: u64 = 1;

/// QP service type of the driver's memory-registration (UMR) QP, which has no PD.
const ST_REG_UMR: u64 = 0xc;

/// CREATE_QP: PD (except for a UMR QP), CQs and the SRQ/RMP (if any) must exist.
pub fn create_qp(fw: &mut Firmware, input: &Input) -> CmdResult {
    let pd = input.get(qpc::PD) as u32;
    need(input.get(qpc::ST) == ST_REG_UMR || fw.pds.contains(pd), 4)?;
    need(fw.uars.contains(input.get(qpc::UAR_PAGE) as u32), 5)?;
    let mut refs = vec![];
    if fw.pds.contains(pd) {
        refs.push((Kind::Pd, pd));
    }
    for f in [qpc::CQN_SND, qpc::CQN_RCV] {
        let cq = input.get(f) as u32;
        need(fw.objects.exists(Kind::Cq, cq), 6)?;
        refs.push((Kind::Cq, cq));
    }
    let xrcd = input.get(qpc::XRCD) as u32;
    if xrcd != 0 {
        need(fw.objects.exists(Kind::Xrcd, xrcd), 7)?;
        refs.push((Kind::Xrcd, xrcd));
    }
    if input.get(qpc::RQ_TYPE) == RQ_TYPE_SRQ {
        let s = input.get(qpc::SRQN_RMPN) as u32;
        let kind = [Kind::Rmp, Kind::Srq, Kind::XrcSrq]
            .into_iter()
            .find(|&k| fw.objects.exists(k, s));
        need(kind.is_some(), 8)?;
        if let Some(k) = kind {
            refs.push((k, s));
        }
    }
    let st = input.get(qpc::ST);
    let n = fw
        .objects
        .insert(Kind::Qp, Object::new(input.bytes().to_vec(), refs));
    debug!("created QP {n:#x} type {st:#x}");
    created(n)
}

/// DESTROY_QP.
pub fn destroy_qp(fw: &mut Firmware, input: &Input) -> CmdResult {
    destroy(fw, Kind::Qp, input)
}

/// The QP transitions, by opcode: the states it may start from and the state it ends in.
pub fn transition(op: u16) -> Option<(&'static [QpState], QpState)> {
    use crate::opcodes::op;
    use QpState::*;
    Some(match op {
        op::RST2INIT_QP => (&[Rst], Init),
        op::INIT2INIT_QP => (&[Init], Init),
        op::INIT2RTR_QP => (&[Init], Rtr),
        op::RTR2RTS_QP => (&[Rtr], Rts),
        op::RTS2RTS_QP => (&[Rts], Rts),
        op::SQERR2RTS_QP => (&[Sqe], Rts),
        op::QP_2ERR_QP => (&[Rst, Init, Rtr, Rts, Sqe, Err], Err),
        op::QP_2RST_QP => (&[Rst, Init, Rtr, Rts, Sqe, Err], Rst),
        _ => return None,
    })
}

/// A QP modify command (RST2INIT, INIT2RTR, RTR2RTS, 2ERR, 2RST, ...).
pub fn modify_qp(fw: &mut Firmware, input: &Input) -> CmdResult {
    let op = input.get(crate::ifc::header::OPCODE) as u16;
    let Some((from, to)) = transition(op) else {
        return Err(CmdError::new(Status::BadOperation, 0x0d0_0000 | u32::from(op)));
    };
    let n = input.get(NUMBER) as u32;
    // A QP counts its events on the counter set its RST2INIT names (0: none), which must exist.
    let set = input.get(super::q_counters::QPC_COUNTER_SET_ID) as u8;
    if op == crate::opcodes::op::RST2INIT_QP && set != 0 && !fw.q_counters.exists(set) {
        return Err(CmdError::new(Status::BadParameter, 0x0d0_3000 | u32::from(set)));
    }
    let qp = fw
        .objects
        .tables
        .get_mut(&Kind::Qp)
        .and_then(|t| t.get_mut(&n))
        .ok_or(CmdError::new(Status::BadResource, 0x0d0_1000))?;
    if !from.contains(&qp.qp_state) {
        return Err(CmdError::new(Status::BadQpState, 0x0d0_2000 | qp.qp_state as u32));
    }
    debug!("QP {n:#x}: {:?} -> {to:?}", qp.qp_state);
    qp.qp_state = to;
    qp.modified.insert(op, input.bytes().to_vec());
    // A later transition may set the Q_Key again, as an optional parameter (IPoIB sets the
    // broadcast group's on its RTS QP): it replaces the one RST2INIT set.
    if op != crate::opcodes::op::RST2INIT_QP && input.get(qpc::OPT_PARAM_MASK) & qpc::OPTPAR_Q_KEY != 0 {
        if let Some(init) = qp.modified.get_mut(&crate::opcodes::op::RST2INIT_QP) {
            ifc::set(init, qpc::Q_KEY, input.get(qpc::Q_KEY));
        }
    }
    Ok(output(16))
}

/// QUERY_QP: the QP's context as created, with its current state and what its last RST2INIT,
/// INIT2RTR and RTR2RTS set (`qpc::SET_BY_*`, the remote QP and the primary path), as firmware
/// reports the context those transitions wrote. (The optional fields of INIT2INIT, RTS2RTS and
/// SQERR2RTS are not reflected yet.)
pub fn query_qp(fw: &mut Firmware, input: &Input) -> CmdResult {
    const QPC: std::ops::Range<usize> = 0x18..0x100;
    const OUT_LEN: usize = 0x1d0;
    const STATE: Field = Field::new(0xc0, 4);
    let n = input.get(NUMBER) as u32;
    let qp = fw
        .objects
        .get(Kind::Qp, n)
        .ok_or(CmdError::new(Status::BadResource, 0x0d1_0000))?;
    let mut out = output(OUT_LEN);
    if let Some(ctx) = qp.context.get(QPC) {
        out[QPC].copy_from_slice(ctx);
    }
    ifc::set(&mut out, STATE, qp.qp_state as u64);
    // The QP context sits at the same offset in the modify inputs and in this output.
    if let Some(init) = qp.modified.get(&crate::opcodes::op::RST2INIT_QP) {
        for f in qpc::SET_BY_RST2INIT {
            ifc::set(&mut out, f, ifc::get(init, f));
        }
    }
    // INIT2RTR: the remote QP, the primary path (its address vector and port) when it names a
    // port, and the receive side's attributes.
    if let Some(rtr) = qp.modified.get(&crate::opcodes::op::INIT2RTR_QP) {
        ifc::set(&mut out, qpc::REMOTE_QPN, ifc::get(rtr, qpc::REMOTE_QPN));
        if ifc::get(rtr, qpc::VHCA_PORT_NUM) != 0 {
            for f in qpc::PATH {
                ifc::set(&mut out, f, ifc::get(rtr, f));
            }
        }
        for f in qpc::SET_BY_INIT2RTR {
            ifc::set(&mut out, f, ifc::get(rtr, f));
        }
    }
    if let Some(rts) = qp.modified.get(&crate::opcodes::op::RTR2RTS_QP) {
        for f in qpc::SET_BY_RTR2RTS {
            ifc::set(&mut out, f, ifc::get(rts, f));
        }
    }
    Ok(out)
}

/// XRC SRQ context fields.
mod xrc_srqc {
    use crate::ifc::Field;
    pub const PD: Field = Field::new(0x148, 24);
    pub const CQN: Field = Field::new(0xc8, 24);
    pub const XRCD: Field = Field::new(0xa8, 24);
}

/// CREATE_XRC_SRQ and CREATE_SRQ (same context positions for PD, CQ and XRCD).
pub fn create_srq(fw: &mut Firmware, kind: Kind, input: &Input) -> CmdResult {
    let pd = input.get(xrc_srqc::PD) as u32;
    need(fw.pds.contains(pd), 9)?;
    let mut refs = vec![(Kind::Pd, pd)];
    let cq = input.get(xrc_srqc::CQN) as u32;
    if kind == Kind::XrcSrq || cq != 0 {
        need(fw.objects.exists(Kind::Cq, cq), 10)?;
        refs.push((Kind::Cq, cq));
    }
    let xrcd = input.get(xrc_srqc::XRCD) as u32;
    if kind == Kind::XrcSrq {
        need(fw.objects.exists(Kind::Xrcd, xrcd), 11)?;
        refs.push((Kind::Xrcd, xrcd));
    }
    let n = fw.objects.insert(kind, Object::new(input.bytes().to_vec(), refs));
    created(n)
}

/// DESTROY_XRC_SRQ / DESTROY_SRQ / DESTROY_RMP.
pub fn destroy_kind(fw: &mut Firmware, kind: Kind, input: &Input) -> CmdResult {
    destroy(fw, kind, input)
}

const RMP_PD: Field = Field::new(0x2c8, 24);

/// CREATE_RMP.
pub fn create_rmp(fw: &mut Firmware, input: &Input) -> CmdResult {
    let pd = input.get(RMP_PD) as u32;
    need(fw.pds.contains(pd), 12)?;
    let n = fw.objects.insert(
        Kind::Rmp,
        Object::new(input.bytes().to_vec(), vec![(Kind::Pd, pd)]),
    );
    created(n)
}

/// MODIFY_RMP fields: the RMP, the field-select bit of the limit, the limit (`rmpc.wq.lwm`).
mod modify_rmp {
    use crate::ifc::Field;
    pub const RMPN: Field = Field::new(0x48, 24);
    pub const SELECT_LWM: Field = Field::new(0xbf, 1);
    pub const LWM: Field = Field::new(0x2b0, 16);
}

/// MODIFY_RMP: only the limit (how a driver arms an SRQ's limit event) is kept.
pub fn modify_rmp(fw: &mut Firmware, input: &Input) -> CmdResult {
    let n = input.get(modify_rmp::RMPN) as u32;
    need(fw.objects.exists(Kind::Rmp, n), 13)?;
    if input.get(modify_rmp::SELECT_LWM) == 1 {
        fw.datapath.arm_srq(n, input.get(modify_rmp::LWM) as u16);
    }
    Ok(output(16))
}

/// QUERY_RMP: the RMP's context as it was created (at byte 0x20 in both the input and the
/// output), ready, with the limit armed now (0 once its event fired, as the device disarms it).
pub fn query_rmp(fw: &mut Firmware, input: &Input) -> CmdResult {
    const RMPC: std::ops::Range<usize> = 0x20..0x110;
    const STATE: Field = Field::new(0x108, 4);
    const STATE_RDY: u64 = 1;
    let n = input.get(modify_rmp::RMPN) as u32;
    let rmp = fw
        .objects
        .get(Kind::Rmp, n)
        .ok_or(CmdError::new(Status::BadResource, 0x0b8_0013))?;
    let mut out = output(RMPC.end);
    if let Some(ctx) = rmp.context.get(RMPC) {
        out[RMPC].copy_from_slice(ctx);
    }
    ifc::set(&mut out, STATE, STATE_RDY);
    ifc::set(&mut out, modify_rmp::LWM, u64::from(fw.datapath.srq_lwm(n)));
    Ok(out)
}

/// ALLOC_XRCD.
pub fn alloc_xrcd(fw: &mut Firmware, input: &Input) -> CmdResult {
    let n = fw
        .objects
        .insert(Kind::Xrcd, Object::new(input.bytes().to_vec(), vec![]));
    created(n)
}

/// DEALLOC_XRCD.
pub fn dealloc_xrcd(fw: &mut Firmware, input: &Input) -> CmdResult {
    destroy(fw, Kind::Xrcd, input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qp_state_machine() {
        use crate::opcodes::op;
        let (from, to) = transition(op::RST2INIT_QP).unwrap();
        assert_eq!((from, to), (&[QpState::Rst][..], QpState::Init));
        assert!(transition(op::CREATE_QP).is_none());
        assert!(transition(op::QP_2RST_QP).unwrap().0.contains(&QpState::Rts));
    }

    #[test]
    fn receive_queues_share_numbers() {
        let mut o = Objects::default();
        let obj = || Object::new(vec![], vec![]);
        let a = o.insert(Kind::XrcSrq, obj());
        let b = o.insert(Kind::Rmp, obj());
        let c = o.insert(Kind::Srq, obj());
        assert!(a != b && b != c && a != c);
        let m = o.insert(Kind::Mkey, obj());
        assert_eq!(m, 2, "other kinds count on their own");
    }

    #[test]
    fn objects_in_use_cannot_be_removed() {
        let mut o = Objects::default();
        let cq = o.insert(Kind::Cq, Object::new(vec![], vec![]));
        let qp = o.insert(Kind::Qp, Object::new(vec![], vec![(Kind::Cq, cq)]));
        assert_eq!(qp, 0x100);
        assert_eq!(o.remove(Kind::Cq, cq).unwrap_err().status, Status::ResourceBusy);
        o.remove(Kind::Qp, qp).unwrap();
        o.remove(Kind::Cq, cq).unwrap();
        assert_eq!(o.remove(Kind::Cq, cq).unwrap_err().status, Status::BadResource);
        assert_eq!(o.total(), 0);
    }
}
