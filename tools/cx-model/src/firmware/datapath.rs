//! The data path, as far as it goes today: when the driver rings a send doorbell, the device
//! walks the send queue up to the producer counter in the QP's doorbell record. A SEND on a UD or
//! RC QP whose destination is a port of this device (by LID) is delivered to the destination QP:
//! the payload is gathered through the sender's memory keys, scattered into the receiver's next
//! receive WQE (after a 40-byte GRH area on UD), and the receiver gets a responder completion.
//! Other destinations are "on the wire" with no peer: the send completes and nothing arrives.
//! Every signalled WQE gets a requester completion; an armed CQ raises a completion event.
//!
//! Not yet: RDMA and atomics, SRQs, error completions, a wire between devices.

use super::eq::event;
use super::objects::qpc as objects_qpc;
use super::objects::{cqc, qpc, Kind, Object, QpState};
use super::Firmware;
use crate::guest_memory::{DmaFault, GuestMemory};
use crate::ifc::{self, Field};
use log::{debug, warn};

/// Size of a send WQE basic block, and of a CQE (64-byte CQEs only).
const WQE_BB: u64 = 64;
const CQE_SIZE: u64 = 64;
/// Byte offset of the physical address list in CREATE_QP and CREATE_CQ inputs.
const PAS: usize = 0x110;

/// CQE opcodes.
const CQE_REQ: u8 = 0x0;
const CQE_RESP_SEND: u8 = 0x2;
const CQE_RESP_SEND_IMM: u8 = 0x3;
/// WQE opcodes handled.
const OP_SEND: u8 = 0x0a;
const OP_SEND_IMM: u8 = 0x0b;
/// QP service types.
const ST_RC: u64 = 0x0;
const ST_UD: u64 = 0x2;
/// Size of the GRH area at the head of every UD receive.
const GRH: usize = 40;
/// A data segment lkey that ends a receive WQE's scatter list.
const INVALID_LKEY: u32 = 0x100;
/// WQE ctrl `fm_ce_se`: completion requested.
const CE_MASK: u8 = 0x0c;

/// Where a queue's buffer lives: pages of `page_size` bytes, starting `start` bytes into the
/// first one (user buffers need not be page aligned; the offset is given in units of a 64th of
/// the page size).
#[derive(Debug, Clone)]
struct Buffer {
    pages: Vec<u64>,
    page_size: u64,
    start: u64,
}

impl Buffer {
    fn from_context(ctx: &[u8], log_page_size: Field, page_offset: Field, bytes: u64) -> Self {
        let page_size = 4096u64 << ifc::get(ctx, log_page_size);
        let start = ifc::get(ctx, page_offset) * (page_size / 64);
        let n = (start + bytes).div_ceil(page_size).max(1) as usize;
        let pages = (0..n)
            .map(|i| ifc::get(ctx, Field::new((PAS + i * 8) * 8, 64)))
            .collect();
        Self {
            pages,
            page_size,
            start,
        }
    }

    fn addr(&self, off: u64) -> Option<u64> {
        let off = off + self.start;
        Some(self.pages.get((off / self.page_size) as usize)? + off % self.page_size)
    }
}

/// Per-CQ data-path state.
#[derive(Debug, Clone, Default)]
pub struct CqState {
    producer: u32,
    armed: bool,
}

/// Per-QP data-path state: how far the device has consumed a work queue.
#[derive(Debug, Clone, Default)]
pub struct QpSendState {
    /// Next WQE the device takes.
    pub consumer: u16,
}

fn cq_post(
    fw: &mut Firmware,
    mem: &mut dyn GuestMemory,
    cqn: u32,
    cqe: &mut [u8; 64],
) -> Result<(), DmaFault> {
    let Some(ctx) = fw.objects.get(Kind::Cq, cqn).map(|o| o.context.clone()) else {
        warn!("completion for CQ {cqn:#x}, which does not exist");
        return Ok(());
    };
    if ifc::get(&ctx, cqc::CQE_SZ) != 0 {
        warn!("CQ {cqn:#x}: 128-byte CQEs are not implemented; completion dropped");
        return Ok(());
    }
    let log_size = ifc::get(&ctx, cqc::LOG_CQ_SIZE) as u32;
    let buf = Buffer::from_context(&ctx, cqc::LOG_PAGE_SIZE, cqc::PAGE_OFFSET, CQE_SIZE << log_size);
    let state = fw.cq_state.entry(cqn).or_default();
    let index = state.producer;
    let Some(addr) = buf.addr(u64::from(index & ((1 << log_size) - 1)) * CQE_SIZE) else {
        warn!("CQ {cqn:#x}: entry {index} outside its buffer");
        return Ok(());
    };
    // Owner bit: the parity of the pass over the ring.
    let owner = ((index >> log_size) & 1) as u8;
    cqe[63] = (cqe[63] & 0xf0) | owner;
    mem.write(addr, &cqe[..63])?;
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    mem.write(addr + 63, &cqe[63..])?;
    state.producer = index.wrapping_add(1);
    if std::mem::take(&mut state.armed) {
        let eqn = ifc::get(&ctx, cqc::EQN) as u8;
        let mut data = [0u8; 28];
        data[24..28].copy_from_slice(&cqn.to_be_bytes());
        if !fw.eqs.exists(eqn) {
            warn!("CQ {cqn:#x}: completion EQ {eqn} is gone");
            return Ok(());
        }
        if let Some(v) = fw.eqs.post_to(mem, eqn, event::COMP, 0, &data) {
            fw.irqs.push(v);
        }
    }
    Ok(())
}

/// A CQ arm doorbell with the consumer index the driver has reached: the next completion raises
/// an event, or one is raised at once if completions past that index are already there.
pub fn arm_cq(fw: &mut Firmware, mem: &mut dyn GuestMemory, cqn: u32, consumer: u32) {
    let Some(ctx) = fw.objects.get(Kind::Cq, cqn).map(|o| o.context.clone()) else {
        debug!("arm for unknown CQ {cqn:#x}");
        return;
    };
    let state = fw.cq_state.entry(cqn).or_default();
    if state.producer & 0x00ff_ffff != consumer & 0x00ff_ffff {
        state.armed = false;
        let eqn = ifc::get(&ctx, cqc::EQN) as u8;
        let mut data = [0u8; 28];
        data[24..28].copy_from_slice(&cqn.to_be_bytes());
        if let Some(v) = fw.eqs.post_to(mem, eqn, event::COMP, 0, &data) {
            fw.irqs.push(v);
        }
    } else {
        state.armed = true;
    }
}

/// A send doorbell for `qpn`: processes the send queue up to the producer counter in the QP's
/// doorbell record.
pub fn send_doorbell(fw: &mut Firmware, mem: &mut dyn GuestMemory, qpn: u32) {
    let Some(qp) = fw.objects.get(Kind::Qp, qpn).cloned() else {
        warn!("send doorbell for unknown QP {qpn:#x}");
        return;
    };
    let ctx = &qp.context;
    if ifc::get(ctx, qpc::NO_SQ) != 0 {
        warn!("send doorbell for QP {qpn:#x}, which has no send queue");
        return;
    }
    if !matches!(qp.qp_state, QpState::Rts) {
        debug!(
            "send doorbell for QP {qpn:#x} in state {:?}: nothing is sent",
            qp.qp_state
        );
        return;
    }
    let rq_bytes = if ifc::get(ctx, qpc::RQ_TYPE) == 0 {
        (1u64 << ifc::get(ctx, qpc::LOG_RQ_SIZE)) * (16u64 << ifc::get(ctx, qpc::LOG_RQ_STRIDE))
    } else {
        0
    };
    let sq_entries = 1u64 << ifc::get(ctx, qpc::LOG_SQ_SIZE);
    let buf = Buffer::from_context(
        ctx,
        qpc::LOG_PAGE_SIZE,
        qpc::PAGE_OFFSET,
        rq_bytes + sq_entries * WQE_BB,
    );
    let mut dbrec = [0u8; 4];
    if let Err(e) = mem.read(ifc::get(ctx, qpc::DBR_ADDR) + 4, &mut dbrec) {
        warn!("QP {qpn:#x}: doorbell record unreadable: {e}");
        return;
    }
    let producer = u32::from_be_bytes(dbrec) as u16;
    let cqn = ifc::get(ctx, qpc::CQN_SND) as u32;
    let mut consumer = fw.qp_send.entry(qpn).or_default().consumer;
    let st = ifc::get(ctx, objects_qpc::ST);
    debug!(
        "QP {qpn:#x}: send doorbell, SQ {consumer}..{producer}, RQ {rq_bytes} bytes, {sq_entries} SQ entries, buffer {:x?} +{:#x}",
        buf.pages.first(),
        buf.start
    );
    while consumer != producer {
        // Read the whole WQE: its control segment says how many 16-byte units it has.
        let bb = |i: u16| buf.addr(rq_bytes + u64::from(consumer.wrapping_add(i)) % sq_entries * WQE_BB);
        let mut first = [0u8; WQE_BB as usize];
        if let Some(addr) = bb(0) {
            if let Err(e) = mem.read(addr, &mut first) {
                warn!("QP {qpn:#x}: WQE {consumer} unreadable: {e}");
                break;
            }
        }
        let ds = usize::from(first[7] & 0x3f);
        let nbb = (ds * 16).div_ceil(WQE_BB as usize).max(1) as u16;
        let mut wqe = Vec::with_capacity(usize::from(nbb) * WQE_BB as usize);
        wqe.extend_from_slice(&first);
        for i in 1..nbb {
            let mut b = [0u8; WQE_BB as usize];
            if let Some(addr) = bb(i) {
                let _ = mem.read(addr, &mut b);
            }
            wqe.extend_from_slice(&b);
        }
        wqe.truncate(ds * 16);
        let opcode = first[3];
        let wqe_index = u16::from_be_bytes([first[1], first[2]]);
        if matches!(opcode, OP_SEND | OP_SEND_IMM) && (st == ST_UD || st == ST_RC) {
            deliver_send(fw, mem, &qp, qpn, st, &wqe);
        } else {
            debug!("QP {qpn:#x}: WQE {wqe_index} opcode {opcode:#x}: sent to the wire (no peer)");
        }
        if first[11] & CE_MASK != 0 {
            let mut cqe = [0u8; 64];
            cqe[56..60].copy_from_slice(&(qpn & 0x00ff_ffff).to_be_bytes());
            cqe[60..62].copy_from_slice(&wqe_index.to_be_bytes());
            cqe[63] = CQE_REQ << 4;
            if let Err(e) = cq_post(fw, mem, cqn, &mut cqe) {
                warn!("QP {qpn:#x}: cannot write the completion: {e}");
            }
        }
        consumer = consumer.wrapping_add(nbb);
    }
    fw.qp_send.entry(qpn).or_default().consumer = consumer;
}

/// `mkc` fields of CREATE_MKEY input, and where its translation entries start.
mod mkc {
    use crate::ifc::Field;
    pub const ACCESS_MODE: Field = Field::new(0x96, 2);
    pub const LENGTH64: Field = Field::new(0xe0, 1);
    pub const START_ADDR: Field = Field::new(0x100, 64);
    pub const LEN: Field = Field::new(0x140, 64);
    pub const LOG_PAGE_SIZE: Field = Field::new(0x25a, 6);
    pub const MTT: usize = 0x110;
}

/// Access modes: physical addresses, or a table of pages.
const ACCESS_PA: u64 = 0;
const ACCESS_MTT: u64 = 1;

/// Translates `len` bytes at `addr` through memory key `lkey` into guest-physical runs.
fn translate(fw: &Firmware, lkey: u32, addr: u64, len: u64) -> Option<Vec<(u64, usize)>> {
    let mkey = fw.objects.get(Kind::Mkey, lkey >> 8)?;
    let c = &mkey.context;
    let start = ifc::get(c, mkc::START_ADDR);
    let size = ifc::get(c, mkc::LEN);
    let unbounded = ifc::get(c, mkc::LENGTH64) == 1;
    let end = addr.checked_add(len)?;
    if !unbounded && (addr < start || end > start.checked_add(size)?) {
        return None;
    }
    match ifc::get(c, mkc::ACCESS_MODE) {
        ACCESS_PA => Some(vec![(addr, len as usize)]),
        ACCESS_MTT => {
            let psz = 1u64 << ifc::get(c, mkc::LOG_PAGE_SIZE);
            let base = start & !(psz - 1);
            let mut runs = vec![];
            let mut a = addr;
            while a < end {
                let page = (a - base) / psz;
                let entry = ifc::get(c, Field::new((mkc::MTT + page as usize * 8) * 8, 64)) & !0x7;
                let take = (psz - a % psz).min(end - a);
                runs.push((entry + a % psz, take as usize));
                a += take;
            }
            Some(runs)
        }
        _ => None,
    }
}

/// The payload of a send: inline data, or data segments gathered through memory keys.
fn gather(fw: &Firmware, mem: &dyn GuestMemory, segs: &[u8]) -> Option<Vec<u8>> {
    let mut out = vec![];
    let mut i = 0;
    while i + 16 <= segs.len() {
        let bc = u32::from_be_bytes([segs[i], segs[i + 1], segs[i + 2], segs[i + 3]]);
        if bc & 0x8000_0000 != 0 {
            let n = (bc & 0x3ff) as usize;
            out.extend_from_slice(segs.get(i + 4..i + 4 + n)?);
            i += (4 + n).div_ceil(16) * 16;
            continue;
        }
        let lkey = u32::from_be_bytes([segs[i + 4], segs[i + 5], segs[i + 6], segs[i + 7]]);
        let addr = u64::from_be_bytes(segs[i + 8..i + 16].try_into().ok()?);
        for (pa, n) in translate(fw, lkey, addr, u64::from(bc))? {
            let at = out.len();
            out.resize(at + n, 0);
            mem.read(pa, &mut out[at..]).ok()?;
        }
        i += 16;
    }
    Some(out)
}

/// Writes `data` into the scatter list of a receive WQE; returns how much fitted.
fn scatter(fw: &Firmware, mem: &mut dyn GuestMemory, segs: &[u8], data: &[u8]) -> Option<usize> {
    let mut done = 0;
    for s in segs.chunks_exact(16) {
        let bc = u32::from_be_bytes([s[0], s[1], s[2], s[3]]) as usize;
        let lkey = u32::from_be_bytes([s[4], s[5], s[6], s[7]]);
        if lkey == INVALID_LKEY || bc == 0 || done == data.len() {
            break;
        }
        let addr = u64::from_be_bytes(s[8..16].try_into().ok()?);
        let n = bc.min(data.len() - done);
        for (pa, len) in translate(fw, lkey, addr, n as u64)? {
            mem.write(pa, &data[done..done + len]).ok()?;
            done += len;
        }
    }
    Some(done)
}

/// Delivers a SEND from `src` to its destination on this device, if it is one.
fn deliver_send(
    fw: &mut Firmware,
    mem: &mut dyn GuestMemory,
    src: &Object,
    src_qpn: u32,
    st: u64,
    wqe: &[u8],
) {
    use crate::opcodes::op;
    let imm = (wqe[3] == OP_SEND_IMM).then(|| u32::from_be_bytes([wqe[12], wqe[13], wqe[14], wqe[15]]));
    // Where it goes, and what it carries after the control (and, on UD, datagram) segment.
    let (dlid, dqpn, qkey, grh_gid, segs) = if st == ST_UD {
        let av = &wqe[16..64.min(wqe.len())];
        if av.len() < 48 {
            return;
        }
        let mut qkey = u32::from_be_bytes([av[0], av[1], av[2], av[3]]);
        if qkey & 0x8000_0000 != 0 {
            qkey = src.attr(op::RST2INIT_QP, objects_qpc::Q_KEY) as u32;
        }
        let dqpn = u32::from_be_bytes([av[8], av[9], av[10], av[11]]) & 0x00ff_ffff;
        let dlid = u16::from_be_bytes([av[14], av[15]]);
        let grh = u32::from_be_bytes([av[28], av[29], av[30], av[31]]) & (1 << 30) != 0;
        let gid: Option<[u8; 16]> = grh.then(|| av[32..48].try_into().unwrap_or([0; 16]));
        (dlid, dqpn, Some(qkey), gid, &wqe[64.min(wqe.len())..])
    } else {
        let dlid = src.attr(op::INIT2RTR_QP, objects_qpc::RLID) as u16;
        let dqpn = src.attr(op::INIT2RTR_QP, objects_qpc::REMOTE_QPN) as u32;
        (dlid, dqpn, None, None, &wqe[16..])
    };
    let Some(dst_port) = fw.node.ports.iter().find(|p| p.lid == dlid).cloned() else {
        debug!("QP {src_qpn:#x}: SEND to LID {dlid:#x}: no port of this device; on the wire, no peer");
        return;
    };
    let Some(dst) = fw.objects.get(Kind::Qp, dqpn).cloned() else {
        debug!("QP {src_qpn:#x}: SEND to QP {dqpn:#x}, which does not exist: dropped");
        return;
    };
    if !matches!(dst.qp_state, QpState::Rtr | QpState::Rts) || ifc::get(&dst.context, objects_qpc::ST) != st {
        debug!("QP {src_qpn:#x}: destination QP {dqpn:#x} not ready for this service: dropped");
        return;
    }
    if let Some(k) = qkey {
        if dst.attr(op::RST2INIT_QP, objects_qpc::Q_KEY) as u32 != k {
            debug!("QP {src_qpn:#x}: Q_Key {k:#x} does not match QP {dqpn:#x}: dropped");
            return;
        }
    }
    let Some(payload) = gather(fw, mem, segs) else {
        warn!("QP {src_qpn:#x}: SEND data not reachable through its memory keys: dropped");
        return;
    };
    // The receiver's next receive WQE, from its own receive queue or from its SRQ.
    let c = dst.context.clone();
    let Some(recv) = next_receive(fw, mem, dqpn, &c) else {
        debug!("QP {dqpn:#x}: no receive WQE posted: dropped");
        return;
    };
    let mut data = vec![];
    if st == ST_UD {
        let mut grh = [0u8; GRH];
        if let Some(dgid) = grh_gid {
            grh[0] = 0x60;
            grh[4..6].copy_from_slice(&(payload.len() as u16).to_be_bytes());
            grh[6] = 0x1b;
            grh[7] = 0x40;
            let src_port = src.attr(op::RST2INIT_QP, objects_qpc::VHCA_PORT_NUM).max(1);
            let sgid_guid = fw.node.port(src_port as u8).map_or(0, |p| p.guid);
            grh[8..16].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
            grh[16..24].copy_from_slice(&sgid_guid.to_be_bytes());
            grh[24..40].copy_from_slice(&dgid);
        }
        data.extend_from_slice(&grh);
    }
    data.extend_from_slice(&payload);
    let Some(written) = scatter(fw, mem, &recv.segs, &data) else {
        warn!("QP {dqpn:#x}: receive buffer not reachable through its memory keys: dropped");
        return;
    };
    let index = recv.index;
    match recv.queue {
        RecvQueue::Qp => fw.qp_recv.entry(dqpn).or_default().consumer = index.wrapping_add(1),
        RecvQueue::Srq { rmpn, next } => {
            let s = fw.srq_state.entry(rmpn).or_default();
            s.head = next;
            s.consumed = s.consumed.wrapping_add(1);
        }
    }
    let src_port = src.attr(op::RST2INIT_QP, objects_qpc::VHCA_PORT_NUM).max(1) as u8;
    let src_lid = fw.node.port(src_port).map_or(dst_port.lid, |p| p.lid);
    let mut cqe = [0u8; 64];
    let g = u32::from(grh_gid.is_some()) << 28;
    cqe[22..24].copy_from_slice(&src_lid.to_be_bytes());
    cqe[24..28].copy_from_slice(&(g | (src_qpn & 0x00ff_ffff)).to_be_bytes());
    if let Some(imm) = imm {
        cqe[36..40].copy_from_slice(&imm.to_be_bytes());
    }
    if let RecvQueue::Srq { rmpn, .. } = recv.queue {
        cqe[32..36].copy_from_slice(&rmpn.to_be_bytes());
    }
    cqe[44..48].copy_from_slice(&(written as u32).to_be_bytes());
    cqe[56..60].copy_from_slice(&(dqpn & 0x00ff_ffff).to_be_bytes());
    cqe[60..62].copy_from_slice(&index.to_be_bytes());
    cqe[63] = (if imm.is_some() {
        CQE_RESP_SEND_IMM
    } else {
        CQE_RESP_SEND
    }) << 4;
    let rcq = ifc::get(&c, objects_qpc::CQN_RCV) as u32;
    debug!(
        "QP {src_qpn:#x} -> QP {dqpn:#x}: {} bytes delivered (receive WQE {index})",
        payload.len()
    );
    if let Err(e) = cq_post(fw, mem, rcq, &mut cqe) {
        warn!("QP {dqpn:#x}: cannot write the receive completion: {e}");
    }
}

/// Where a receive WQE came from, and how to mark it consumed.
#[derive(Debug, Clone, Copy)]
enum RecvQueue {
    /// The QP's own receive queue.
    Qp,
    /// A shared receive queue (RMP): the WQE list continues at `next`.
    Srq { rmpn: u32, next: u16 },
}

/// A receive WQE taken for a delivery: its scatter list and index.
struct Receive {
    segs: Vec<u8>,
    index: u16,
    queue: RecvQueue,
}

/// Per-SRQ state: the next WQE in the driver's free list, and how many were consumed.
#[derive(Debug, Clone, Default)]
pub struct SrqState {
    head: u16,
    consumed: u16,
}

/// `rmpc.wq` fields of CREATE_RMP input.
mod rmp {
    use crate::ifc::Field;
    pub const DBR_ADDR: Field = Field::new(0x300, 64);
    pub const LOG_WQ_STRIDE: Field = Field::new(0x38c, 4);
    pub const LOG_WQ_PG_SZ: Field = Field::new(0x393, 5);
    pub const LOG_WQ_SZ: Field = Field::new(0x39b, 5);
    pub const PAGE_OFFSET: Field = Field::new(0x2ab, 5);
}

/// The next posted receive WQE of QP `qpn` (context `c`), if any.
fn next_receive(fw: &mut Firmware, mem: &dyn GuestMemory, qpn: u32, c: &[u8]) -> Option<Receive> {
    if ifc::get(c, qpc::RQ_TYPE) == 0 {
        let stride = 16u64 << ifc::get(c, qpc::LOG_RQ_STRIDE);
        let entries = 1u64 << ifc::get(c, qpc::LOG_RQ_SIZE);
        let mut db = [0u8; 4];
        mem.read(ifc::get(c, qpc::DBR_ADDR), &mut db).ok()?;
        let producer = u32::from_be_bytes(db) as u16;
        let index = fw.qp_recv.entry(qpn).or_default().consumer;
        if index == producer {
            return None;
        }
        let sq_entries = 1u64 << ifc::get(c, qpc::LOG_SQ_SIZE);
        let buf = Buffer::from_context(
            c,
            qpc::LOG_PAGE_SIZE,
            qpc::PAGE_OFFSET,
            entries * stride + sq_entries * WQE_BB,
        );
        let mut segs = vec![0u8; stride as usize];
        mem.read(buf.addr(u64::from(index) % entries * stride)?, &mut segs)
            .ok()?;
        return Some(Receive {
            segs,
            index,
            queue: RecvQueue::Qp,
        });
    }
    // A shared receive queue: the model serves RMPs (how an ISSI 1 driver makes basic SRQs).
    let rmpn = ifc::get(c, qpc::SRQN_RMPN) as u32;
    let rc = fw.objects.get(Kind::Rmp, rmpn)?.context.clone();
    let stride = 1u64 << ifc::get(&rc, rmp::LOG_WQ_STRIDE);
    let entries = 1u64 << ifc::get(&rc, rmp::LOG_WQ_SZ);
    let mut db = [0u8; 4];
    mem.read(ifc::get(&rc, rmp::DBR_ADDR), &mut db).ok()?;
    let posted = u32::from_be_bytes(db) as u16;
    let state = fw.srq_state.entry(rmpn).or_default().clone();
    if state.consumed == posted {
        return None;
    }
    let buf = Buffer::from_context(&rc, rmp::LOG_WQ_PG_SZ, rmp::PAGE_OFFSET, entries * stride);
    let mut wqe = vec![0u8; stride as usize];
    mem.read(buf.addr(u64::from(state.head) % entries * stride)?, &mut wqe)
        .ok()?;
    // The first 16 bytes link to the next free WQE; the scatter list follows.
    let next = u16::from_be_bytes([wqe[2], wqe[3]]);
    Some(Receive {
        segs: wqe.split_off(16),
        index: state.head,
        queue: RecvQueue::Srq { rmpn, next },
    })
}
