// SPDX-License-Identifier: GPL-2.0

//! The many-message phases, as the C twin's: 1000 messages each, posted in batches of
//! [`BATCH`] receives and sends and checked one by one (status, length, source, bytes) —
//! UD through an address handle (the 40-byte GRH area first), RC receiving from an SRQ (its
//! limit armed once), RC around small rings (the driver's sizes printed), RC with inline
//! sends, and RC through a CQ resized larger, then smaller. Each phase has objects of its own,
//! freed before it returns; one line each.

use super::env::{connect_rc, fill_at, holds_at, message, Env};
use ib_core::{
    device::IbDevice,
    verbs::dma_buffer::DmaBuffer,
    verbs::wr::{send_flags, RecvWr, SendOpcode, SendWr, UdWr, WcOpcode, WcStatus, WorkCompletion},
    verbs::{
        Access, AccessFlags, Ah, AhAttr, EventHandler, EventType, Qp, Srq, SrqAttr, SrqAttrField,
    },
};
use kernel::{
    prelude::*,
    str::BStr,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
    time::{delay::fsleep, Delta},
};

/// Messages per phase.
const MANY: usize = 1000;
/// Receives and sends posted before the completions are collected.
const BATCH: usize = 8;
/// Bytes of the GRH area at the start of a UD receive.
const GRH: u32 = 40;
/// Zeros, to clear a receive slot.
static ZERO: [u8; 1024] = [0; 1024];

/// What the completions of a phase said.
#[derive(Default)]
struct Tally {
    /// Receives with the expected length, source and bytes.
    intact: u32,
    /// Completions that were not successful.
    failed: u32,
    /// Successful send completions.
    sends: u32,
}

impl Tally {
    /// Counts `wcs`: receive `wr_id` landed in slot `wr_id % BATCH` of `rx` (`slot` bytes each)
    /// at `off`, `len` bytes of the message of seed `wr_id`, with byte_len `blen` and (UD,
    /// `src` not 0) from QP `src`.
    #[allow(clippy::too_many_arguments)]
    fn count(
        &mut self,
        rx: &DmaBuffer,
        wcs: &[WorkCompletion],
        slot: usize,
        off: usize,
        len: usize,
        blen: u32,
        src: u32,
    ) -> Result {
        for wc in wcs {
            if wc.status != WcStatus::Success {
                self.failed += 1;
                continue;
            }
            if !matches!(wc.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm) {
                self.sends += 1;
                continue;
            }
            // `wr_id` is the sample's own, below MANY; the slot stays inside rx.
            let id = wc.wr_id as usize;
            if wc.byte_len == blen
                && (src == 0 || wc.src_qp == src)
                && holds_at(rx, (id % BATCH) * slot + off, len, id as u8)?
            {
                self.intact += 1;
            }
        }
        Ok(())
    }
}

/// Counts the events of `kind` it is given.
fn counter(kind: EventType) -> Result<(Arc<Atomic<u32>>, EventHandler)> {
    let count = Arc::new(Atomic::new(0u32), GFP_KERNEL)?;
    let c = count.clone();
    let handler: EventHandler = KBox::new(
        move |e: EventType| {
            if e == kind {
                c.fetch_add(1, Relaxed);
            }
        },
        GFP_KERNEL,
    )?;
    Ok((count, handler))
}

/// UD: 1000 messages of 256 bytes to the QP itself through an address handle.
pub(crate) fn ud(dev: &Arc<IbDevice>, name: &BStr) -> Result {
    const LEN: usize = 256;
    const SLOT: usize = 512;
    const QKEY: u32 = 0x1111_1111;
    let e = Env::create(dev, 64, BATCH * SLOT, Access::LocalWrite.into())?;
    let qp = e.ud_qp(16, 16, true, QKEY)?;
    let ah = Ah::create(
        &e.pd,
        &AhAttr {
            dlid: e.lid,
            port_num: 1,
            ..AhAttr::default()
        },
    )?;
    let mut ty = Tally::default();
    for i in (0..MANY).step_by(BATCH) {
        for j in i..i + BATCH {
            let o = (j % BATCH) * SLOT;
            fill_at(&e.tx, o, LEN, j as u8)?;
            e.rx.write(o, &ZERO[..SLOT])?;
            let rs = [e.rx.sge(o, GRH + LEN as u32, e.mr.lkey())?];
            qp.post_recv(&[RecvWr {
                wr_id: j as u64,
                sg_list: &rs,
            }])?;
            let ss = [e.tx.sge(o, LEN as u32, e.mr.lkey())?];
            qp.post_send(&[SendWr {
                wr_id: j as u64,
                opcode: SendOpcode::Send,
                sg_list: &ss,
                send_flags: send_flags::SIGNALED,
                ud: Some(UdWr {
                    ah: &ah,
                    remote_qpn: qp.qp_num(),
                    remote_qkey: QKEY,
                }),
                ..SendWr::default()
            }])?;
        }
        let wcs = e.collect(2 * BATCH)?;
        ty.count(
            &e.rx,
            &wcs,
            SLOT,
            GRH as usize,
            LEN,
            GRH + LEN as u32,
            qp.qp_num(),
        )?;
    }
    pr_info!(
        "{name}: ud: {MANY} messages of {LEN} bytes to own qp through an AH: {} sends completed, {} received intact with byte_len {} (40-byte GRH area first), {} failed completion(s)\n",
        ty.sends,
        ty.intact,
        GRH + LEN as u32,
        ty.failed
    );
    Ok(())
}

/// Bytes of a receive slot of the RC phases.
const RC_SLOT: usize = 1024;

/// RC, 1000 messages of `len` bytes to itself in batches of [`BATCH`], only the last send of
/// each batch signalled; receives from the QP's RQ or from `srq`; sends inline when `inline`.
fn rc_many(e: &Env, qp: &Qp, srq: Option<&Srq>, len: usize, inline: bool) -> Result<Tally> {
    let mut ty = Tally::default();
    for i in (0..MANY).step_by(BATCH) {
        post_batch(e, qp, srq, len, inline, i)?;
        let wcs = e.collect(BATCH + 1)?;
        ty.count(&e.rx, &wcs, RC_SLOT, 0, len, len as u32, 0)?;
    }
    Ok(ty)
}

/// Posts messages `i..i + BATCH` of [`rc_many`]: a receive and a send each.
fn post_batch(e: &Env, qp: &Qp, srq: Option<&Srq>, len: usize, inline: bool, i: usize) -> Result {
    for j in i..i + BATCH {
        let o = (j % BATCH) * RC_SLOT;
        e.rx.write(o, &ZERO[..RC_SLOT])?;
        let rs = [e.rx.sge(o, RC_SLOT as u32, e.mr.lkey())?];
        let rwr = [RecvWr {
            wr_id: j as u64,
            sg_list: &rs,
        }];
        match srq {
            Some(srq) => srq.post_recv(&rwr)?,
            None => qp.post_recv(&rwr)?,
        }
        let flags = if j == i + BATCH - 1 {
            send_flags::SIGNALED
        } else {
            0
        };
        if inline {
            // The bytes come from ordinary kernel memory, never mapped for the device.
            let src = message(len, j as u8)?;
            let parts = [&src[..]];
            qp.post_send(&[SendWr {
                wr_id: j as u64,
                opcode: SendOpcode::Send,
                send_flags: flags | send_flags::INLINE,
                inline_data: &parts,
                ..SendWr::default()
            }])?;
        } else {
            fill_at(&e.tx, o, len, j as u8)?;
            let ss = [e.tx.sge(o, len as u32, e.mr.lkey())?];
            qp.post_send(&[SendWr {
                wr_id: j as u64,
                opcode: SendOpcode::Send,
                sg_list: &ss,
                send_flags: flags,
                ..SendWr::default()
            }])?;
        }
    }
    Ok(())
}

/// SRQ: 1000 messages into an RC QP whose receives come from an SRQ of 16, armed once with
/// limit 4 before the first receive is posted (one limit event: arming again is the
/// consumer's job).
pub(crate) fn srq(dev: &Arc<IbDevice>, name: &BStr) -> Result {
    let e = Env::create(dev, 64, BATCH * 1024, Access::LocalWrite.into())?;
    let (limits, on_limit) = counter(EventType::SrqLimitReached)?;
    let srq = Srq::create(
        &e.pd,
        &SrqAttr {
            max_wr: 16,
            max_sge: 1,
            srq_limit: 0,
        },
        Some(on_limit),
    )?;
    // What the driver made of the 16 asked (C updates the attributes `ib_create_srq` got).
    let made = srq.query()?.max_wr;
    let qp = e.rc_qp(16, 0, 0, Some(srq.clone()))?;
    connect_rc(&qp, e.lid, qp.qp_num(), AccessFlags::empty(), 7)?;
    srq.modify(
        &SrqAttr {
            srq_limit: 4,
            ..SrqAttr::default()
        },
        SrqAttrField::Limit.into(),
    )?;
    let ty = rc_many(&e, &qp, Some(&srq), 512, false)?;
    // The event may be handled after the completions were polled (1 s at most).
    for _ in 0..100 {
        if limits.load(Relaxed) != 0 {
            break;
        }
        fsleep(Delta::from_millis(10));
    }
    pr_info!(
        "{name}: srq: {MANY} messages of 512 bytes through an SRQ of 16 asked (driver: {made}): {} received intact, {} send completion(s) (1 in {BATCH} signalled), {} failed completion(s); limit 4 armed once: {} limit event(s)\n",
        ty.intact,
        ty.sends,
        ty.failed,
        limits.load(Relaxed)
    );
    Ok(())
}

/// RC ring wrap-around: 1000 messages through an SQ and an RQ of 8 and a CQ of 16 (as asked;
/// the line says what the driver made of them), or the same with 64-byte inline sends.
pub(crate) fn wrap(dev: &Arc<IbDevice>, name: &BStr, inline: bool) -> Result {
    let len = if inline { 64 } else { 512 };
    let e = Env::create(dev, 16, BATCH * 1024, Access::LocalWrite.into())?;
    let qp = e.rc_qp(8, 8, if inline { 64 } else { 0 }, None)?;
    connect_rc(&qp, e.lid, qp.qp_num(), AccessFlags::empty(), 7)?;
    let ty = rc_many(&e, &qp, None, len, inline)?;
    let cap = qp.cap();
    if inline {
        pr_info!(
            "{name}: inline: {MANY} sends of {len} bytes inline (max_inline_data {}): {} received intact, {} send completion(s), {} failed completion(s)\n",
            cap.max_inline_data,
            ty.intact,
            ty.sends,
            ty.failed
        );
    } else {
        pr_info!(
            "{name}: rc wrap: {MANY} messages of {len} bytes, sq 8 rq 8 cq 16 asked (driver: sq {} rq {} cq {}): {} received intact, {} send completion(s) (1 in {BATCH} signalled), {} failed completion(s)\n",
            cap.max_send_wr,
            cap.max_recv_wr,
            e.cq.cqe(),
            ty.intact,
            ty.sends,
            ty.failed
        );
    }
    Ok(())
}

/// CQ resize: an RC QP on a CQ of 16 (as `wrap`); the CQ grows to 100 and 1000 messages move,
/// then it shrinks to 10 and 1000 more move (each ring wraps); resizing to the size it has
/// changes nothing, one past the device's `max_cqe` is refused. The line says what the driver
/// made of each size. A driver that cannot resize (`EOPNOTSUPP`) says so instead. No C twin:
/// C 7.3 has no `ib_resize_cq`; the driver code this runs (`mlx5_ib_resize_cq` on a kernel CQ)
/// is C's, which only its uverbs path still reaches.
pub(crate) fn cq_resize(dev: &Arc<IbDevice>, name: &BStr) -> Result {
    let e = Env::create(dev, 16, BATCH * 1024, Access::LocalWrite.into())?;
    let qp = e.rc_qp(8, 8, 0, None)?;
    connect_rc(&qp, e.lid, qp.qp_num(), AccessFlags::empty(), 7)?;
    let made = e.cq.cqe();
    match e.cq.resize(100) {
        Err(err) if err == EOPNOTSUPP => {
            pr_info!(
                "{name}: cq resize: the driver cannot resize CQs (err {})\n",
                err.to_errno()
            );
            return Ok(());
        }
        r => r?,
    }
    let grown = e.cq.cqe();
    let big = rc_many(&e, &qp, None, 512, false)?;
    e.cq.resize(10)?;
    let shrunk = e.cq.cqe();
    let small = rc_many(&e, &qp, None, 512, false)?;
    let again =
        e.cq.resize(shrunk)
            .map_or_else(|err| err.to_errno(), |()| 0);
    let unchanged = e.cq.cqe();
    let max_cqe = dev.attr().max_cqe;
    let past =
        e.cq.resize(max_cqe.saturating_add(1))
            .map_or_else(|err| err.to_errno(), |()| 0);
    pr_info!(
        "{name}: cq resize: 16 asked (driver: {made}); grown to 100 (driver: {grown}): {} received intact, {} send completion(s), {} failed; shrunk to 10 (driver: {shrunk}): {} received intact, {} send completion(s), {} failed; {shrunk} again: {again} (cqe {unchanged}); max_cqe + 1: err {past}\n",
        big.intact,
        big.sends,
        big.failed,
        small.intact,
        small.sends,
        small.failed
    );
    waiting(&e, &qp, name)
}

/// A resize with completions not polled yet: a batch's 9 completions are in the CQ (its
/// completion event came, then 100 ms) when it grows to 50; polled after, they are all there,
/// in order, their messages intact. (C's `copy_resize_cqes`, which this exercises in our
/// driver, puts such completions at index `(i + 1) & nent` of the new ring: entry 0 or one past
/// the ring's end.)
fn waiting(e: &Env, qp: &Qp, name: &BStr) -> Result {
    let seen = e.events.seen();
    e.cq.req_notify(false)?;
    post_batch(e, qp, None, 512, false, 0)?;
    let evented = e.events.wait_past(seen);
    fsleep(Delta::from_millis(100));
    e.cq.resize(50)?;
    let grown = e.cq.cqe();
    let wcs = e.collect(BATCH + 1)?;
    let in_order = wcs
        .iter()
        .filter(|w| matches!(w.opcode, WcOpcode::Recv))
        .map(|w| w.wr_id)
        .eq(0..BATCH as u64);
    let mut ty = Tally::default();
    ty.count(&e.rx, &wcs, RC_SLOT, 0, 512, 512, 0)?;
    pr_info!(
        "{name}: cq resize with completions waiting: a batch's {} completion(s) in the CQ (event: {evented}) when it grew to 50 (driver: {grown}): {} received intact {}, {} send completion(s), {} failed\n",
        wcs.len(),
        ty.intact,
        if in_order { "in order" } else { "OUT OF ORDER" },
        ty.sends,
        ty.failed
    );
    Ok(())
}
