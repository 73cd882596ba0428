//! The send side of the data path, as far as the port can take it today: when the driver rings a
//! send doorbell, the device walks the send queue up to the producer counter in the QP's doorbell
//! record, puts each WQE "on the wire", and writes a requester completion to the send CQ for
//! every signalled WQE; an armed CQ then raises a completion event on its EQ.
//!
//! There is no wire yet: packets leave and reach nobody (as on a port with no peer), so sends
//! complete successfully and nothing is received. Responder processing, RDMA and atomics, and
//! error completions are the data-path issue's work.

use super::eq::event;
use super::objects::{cqc, qpc, Kind, QpState};
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
/// WQE ctrl `fm_ce_se`: completion requested.
const CE_MASK: u8 = 0x0c;

/// Where a queue's buffer lives: pages of `page_size` bytes.
#[derive(Debug, Clone)]
struct Buffer {
    pages: Vec<u64>,
    page_size: u64,
}

impl Buffer {
    fn from_context(ctx: &[u8], log_page_size: Field, bytes: u64) -> Self {
        let page_size = 4096u64 << ifc::get(ctx, log_page_size);
        let n = bytes.div_ceil(page_size).max(1) as usize;
        let pages = (0..n)
            .map(|i| ifc::get(ctx, Field::new((PAS + i * 8) * 8, 64)))
            .collect();
        Self { pages, page_size }
    }

    fn addr(&self, off: u64) -> Option<u64> {
        Some(self.pages.get((off / self.page_size) as usize)? + off % self.page_size)
    }
}

/// Per-CQ data-path state.
#[derive(Debug, Clone, Default)]
pub struct CqState {
    producer: u32,
    armed: bool,
}

/// Per-QP data-path state.
#[derive(Debug, Clone, Default)]
pub struct QpSendState {
    consumer: u16,
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
    let buf = Buffer::from_context(&ctx, cqc::LOG_PAGE_SIZE, CQE_SIZE << log_size);
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

/// A CQ arm doorbell: the next completion raises an event.
pub fn arm_cq(fw: &mut Firmware, cqn: u32) {
    if fw.objects.exists(Kind::Cq, cqn) {
        fw.cq_state.entry(cqn).or_default().armed = true;
    } else {
        debug!("arm for unknown CQ {cqn:#x}");
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
    let buf = Buffer::from_context(ctx, qpc::LOG_PAGE_SIZE, rq_bytes + sq_entries * WQE_BB);
    let mut dbrec = [0u8; 4];
    if let Err(e) = mem.read(ifc::get(ctx, qpc::DBR_ADDR) + 4, &mut dbrec) {
        warn!("QP {qpn:#x}: doorbell record unreadable: {e}");
        return;
    }
    let producer = u32::from_be_bytes(dbrec) as u16;
    let cqn = ifc::get(ctx, qpc::CQN_SND) as u32;
    let mut consumer = fw.qp_send.entry(qpn).or_default().consumer;
    while consumer != producer {
        let off = rq_bytes + u64::from(consumer) % sq_entries * WQE_BB;
        let mut ctrl = [0u8; 16];
        if let Some(addr) = buf.addr(off) {
            if let Err(e) = mem.read(addr, &mut ctrl) {
                warn!("QP {qpn:#x}: WQE {consumer} unreadable: {e}");
                break;
            }
        }
        let opcode = ctrl[3];
        let wqe_index = u16::from_be_bytes([ctrl[1], ctrl[2]]);
        let ds = u64::from(ctrl[7] & 0x3f);
        debug!("QP {qpn:#x}: WQE {wqe_index} opcode {opcode:#x}, {ds} segments: sent to the wire (no peer)");
        if ctrl[11] & CE_MASK != 0 {
            let mut cqe = [0u8; 64];
            cqe[56..60].copy_from_slice(&(qpn & 0x00ff_ffff).to_be_bytes());
            cqe[60..62].copy_from_slice(&wqe_index.to_be_bytes());
            cqe[63] = CQE_REQ << 4;
            if let Err(e) = cq_post(fw, mem, cqn, &mut cqe) {
                warn!("QP {qpn:#x}: cannot write the completion: {e}");
            }
        }
        // A WQE takes ceil(ds * 16 / 64) basic blocks.
        consumer = consumer.wrapping_add(((ds * 16).div_ceil(WQE_BB)).max(1) as u16);
    }
    fw.qp_send.entry(qpn).or_default().consumer = consumer;
}
