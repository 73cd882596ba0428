// SPDX-License-Identifier: GPL-2.0

//! A kernel QP's send and receive rings (C's `mlx5_ib_wq` pair): what posting
//! (`mlx5_ib_post_send`, `mlx5_ib_post_recv`) and the CQs it completes on share ([`QpShared`]).
//!
//! One coherent buffer holds the receive ring (first) and the send ring, sized as C sizes them
//! (`wq_size`), their geometry checked once when the QP is made (`WqBuf`): posting stores each
//! 16-byte unit of a WQE in place with a mask per slot and no bounds check. A doorbell record
//! (word 0: receive head, word 1: send producer) and a blue-flame register for the send
//! doorbell. Each ring has its IRQ-safe spinlock; polling a
//! CQ takes the CQ's lock, then a ring's (never the other way round), so posting and polling
//! may run in any context. A UD send carries a datagram segment made of its AH's address
//! vector (`ah.rs`).
//!
//! The completion state shared by posting and polling (the per-WQE request ids, the tails) is
//! in `core` atomics: relaxed loads and stores and acquire/release ones are plain `mov`s on
//! x86-64, inline, where the kernel's `Atomic` goes through an out-of-line `rust_helper_*`
//! per access (no `CONFIG_RUST_INLINE_HELPERS`). They pair only with each other, never with C.

use crate::ah::{Mlx5Ah, AV_SIZE};
use crate::qp::wq_size::{RqSize, SendKind, SqSize};
use crate::qp::wqe::{self, Seg, SendCtx, WqeSink};
use crate::srq::SrqShared;
use core::sync::atomic::{
    AtomicU32, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use ib_core::{
    verbs::ops::{DeviceOps, SendWrs},
    verbs::prepared::{PreparedImage, PreparedSend, MAX_PREPARED_UNITS},
    verbs::types::QpCap,
    verbs::wr::{PostError, RecvWr, SendWr, WcStatus, WorkCompletion},
};
use kernel::{
    new_spinlock_irqsave,
    prelude::*,
    sync::{
        barrier::{mb, ordering::Write},
        spinlock_irqsave::SpinLockIrqSave,
        Arc,
    },
};
use mlx5_core::auxdev::{
    Bfreg, CoherentBuf, DoorbellRecord, RingSpec, SendRingWriter, WqBuf, SEND_LOG_STRIDE,
};
use zerocopy::FromBytes;

/// Doorbell record words.
const RCV_DBR: usize = 0;
const SND_DBR: usize = 1;
/// The send ring's posting state (under the send lock).
struct Sq {
    bfreg: Bfreg,
    /// Next basic block to fill (wraps; the ring index is its low bits).
    cur_post: u32,
    /// Requests posted.
    head: u32,
}

/// What the send ring keeps of the WQE starting at a basic block (C's `wrid`, `wqe_head` and
/// `w_list[].next` entries, together: one lookup per request).
struct SqEntry {
    /// The request id.
    wrid: AtomicU64,
    /// The `head` count of the request.
    head: AtomicU32,
    /// The basic block after the WQE.
    next: AtomicU32,
}

/// The send ring's completion state. As in C, polling (under the CQ's lock) does not take the
/// send lock: per-WQE entries are written by the poster before the doorbell and read by the
/// poller after the CQE; `tail` is stored with release after those reads and loaded with
/// acquire by the poster before it reuses a slot.
struct SqDone {
    /// Requests completed (as C: the head value of the last completed request, plus one).
    tail: AtomicU32,
    /// The basic block of the oldest request not completed (C's `last_poll`): where a software
    /// flush starts.
    last_poll: AtomicU32,
    /// The WQE starting at each basic block.
    entries: KVec<SqEntry>,
}

/// The receive ring's posting state (under the receive lock).
struct Rq {
    head: u32,
}

/// The receive ring's completion state (see [`SqDone`]).
struct RqDone {
    tail: AtomicU32,
    wrid: KVec<AtomicU64>,
}

/// What a QP shares with the CQs it completes on.
#[pin_data]
pub(crate) struct QpShared {
    qpn: AtomicU32,
    wq: WqBuf,
    db: DoorbellRecord,
    sqs: SqSize,
    rqs: RqSize,
    /// `CTRL_CQ_UPDATE` when every request is signalled.
    sig_bits: u8,
    /// The transport (a UD send carries a datagram segment).
    kind: SendKind,
    /// The SRQ it receives from (it has no receive queue then).
    srq: Option<Arc<SrqShared>>,
    #[pin]
    sq: SpinLockIrqSave<Sq>,
    sq_done: SqDone,
    #[pin]
    rq: SpinLockIrqSave<Rq>,
    rq_done: RqDone,
}

impl QpShared {
    /// The rings of a QP of `kind` in `buf` (the receive ring first, then the send ring), with
    /// doorbell record `db` and the blue-flame register `bfreg`; every send signalled if
    /// `sig_all`; receiving from `srq` when it has one.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        buf: CoherentBuf,
        db: DoorbellRecord,
        bfreg: Bfreg,
        sqs: SqSize,
        rqs: RqSize,
        sig_all: bool,
        kind: SendKind,
        srq: Option<Arc<SrqShared>>,
    ) -> Result<Arc<Self>> {
        let sq = Sq {
            bfreg,
            cur_post: 0,
            head: 0,
        };
        let sq_done = SqDone {
            tail: AtomicU32::new(0),
            last_poll: AtomicU32::new(0),
            entries: sq_entries(sqs.wqe_cnt)?,
        };
        let recv = RingSpec {
            offset: 0,
            log_stride: rqs.wqe_shift,
            count: rqs.wqe_cnt,
        };
        let send = RingSpec {
            offset: (rqs.wqe_cnt as usize) << rqs.wqe_shift,
            log_stride: SEND_LOG_STRIDE,
            count: sqs.wqe_cnt,
        };
        let wq = WqBuf::new(buf, recv, send)?;
        let rq = Rq { head: 0 };
        let rq_done = RqDone {
            tail: AtomicU32::new(0),
            wrid: zeroed_u64(rqs.wqe_cnt)?,
        };
        let sig_bits = if sig_all { wqe::CTRL_CQ_UPDATE } else { 0 };
        Arc::pin_init(
            pin_init!(QpShared {
                qpn: AtomicU32::new(0),
                wq,
                db,
                sqs,
                rqs,
                sig_bits,
                kind,
                srq,
                sq <- new_spinlock_irqsave!(sq),
                sq_done,
                rq <- new_spinlock_irqsave!(rq),
                rq_done,
            }),
            GFP_KERNEL,
        )
    }

    /// Records the number CREATE_QP gave.
    pub(crate) fn set_qpn(&self, qpn: u32) {
        self.qpn.store(qpn, Relaxed);
    }

    /// Whether the QP has a receive ring of its own.
    pub(crate) fn has_rq(&self) -> bool {
        self.rqs.wqe_cnt != 0
    }

    /// The doorbell record's bus address.
    pub(crate) fn db_dma(&self) -> u64 {
        self.db.dma()
    }

    /// The queue sizes as made (what C's `mlx5_ib_query_qp` reports for a kernel QP).
    pub(crate) fn cap(&self) -> QpCap {
        QpCap {
            max_send_wr: self.sqs.max_post,
            max_recv_wr: self.rqs.wqe_cnt,
            max_send_sge: self.sqs.max_gs,
            max_recv_sge: self.rqs.max_gs,
            max_inline_data: self.sqs.max_inline,
        }
    }

    /// The QP number (0 until CREATE_QP gave one).
    pub(crate) fn qpn(&self) -> u32 {
        self.qpn.load(Relaxed)
    }

    /// A send completion at WQE `wqe_counter`: its request id; the requests up to it are done.
    /// Called with the CQ's lock held (no send lock: see [`SqDone`]).
    #[inline]
    pub(crate) fn sq_complete(&self, wqe_counter: u16) -> u64 {
        let d = &self.sq_done;
        let idx = (u32::from(wqe_counter) & self.sqs.wqe_cnt.saturating_sub(1)) as usize;
        let Some(e) = d.entries.get(idx) else {
            return 0;
        };
        d.last_poll.store(e.next.load(Relaxed), Relaxed);
        d.tail.store(e.head.load(Relaxed).wrapping_add(1), Release);
        e.wrid.load(Relaxed)
    }

    /// Whether requests are outstanding on the send queue (`send`) or the receive queue
    /// (`recv`).
    pub(crate) fn outstanding(&self, send: bool, recv: bool) -> bool {
        (send && self.sq.lock().head != self.sq_done.tail.load(Acquire))
            || (recv && self.rq.lock().head != self.rq_done.tail.load(Acquire))
    }

    /// Completes outstanding send requests, oldest first, as flushed (C's `sw_comp` for the
    /// send queue, used when the device is in the internal-error state and will complete
    /// nothing): up to `wc.len()`; returns how many.
    pub(crate) fn flush_sq(&self, wc: &mut [WorkCompletion]) -> usize {
        let head = self.sq.lock().head;
        let d = &self.sq_done;
        let mask = self.sqs.wqe_cnt.saturating_sub(1);
        let mut n = 0;
        for w in wc.iter_mut() {
            let tail = d.tail.load(Acquire);
            if head == tail {
                break;
            }
            let idx = (d.last_poll.load(Relaxed) & mask) as usize;
            let e = d.entries.get(idx);
            *w = flushed(self.qpn(), e.map_or(0, |e| e.wrid.load(Relaxed)));
            d.last_poll
                .store(e.map_or(0, |e| e.next.load(Relaxed)), Relaxed);
            d.tail.store(tail.wrapping_add(1), Release);
            n += 1;
        }
        n
    }

    /// Completes outstanding receive requests, oldest first, as flushed (C's `sw_comp` for the
    /// receive queue); returns how many. Receives from an SRQ are not the QP's (none here).
    pub(crate) fn flush_rq(&self, wc: &mut [WorkCompletion]) -> usize {
        let head = self.rq.lock().head;
        let d = &self.rq_done;
        let mask = self.rqs.wqe_cnt.saturating_sub(1);
        let mut n = 0;
        for w in wc.iter_mut() {
            let tail = d.tail.load(Acquire);
            if head == tail {
                break;
            }
            let idx = (tail & mask) as usize;
            *w = flushed(self.qpn(), d.wrid.get(idx).map_or(0, |x| x.load(Relaxed)));
            d.tail.store(tail.wrapping_add(1), Release);
            n += 1;
        }
        n
    }

    /// Whether its receives come from an SRQ.
    pub(crate) fn srq(&self) -> Option<&SrqShared> {
        self.srq.as_deref()
    }

    /// A receive completion at WQE `wqe_counter`: from an SRQ, the request id of that WQE
    /// (freed, as C's `mlx5_ib_free_srq_wqe`); else of the oldest posted receive.
    #[inline]
    pub(crate) fn rq_complete(&self, wqe_counter: u16) -> u64 {
        if let Some(srq) = &self.srq {
            return srq.complete(wqe_counter);
        }
        // With the CQ's lock held, not the receive lock (see [`SqDone`]).
        let d = &self.rq_done;
        let tail = d.tail.load(Relaxed);
        let idx = (tail & self.rqs.wqe_cnt.saturating_sub(1)) as usize;
        let wr_id = d.wrid.get(idx).map_or(0, |x| x.load(Relaxed));
        d.tail.store(tail.wrapping_add(1), Release);
        wr_id
    }

    /// Gives the blue-flame register's lease up, before the QP is leaked after a firmware
    /// timeout: posting rings nothing after that, and the function's teardown does not wait
    /// for it.
    pub(crate) fn abandon_doorbell(&self) {
        self.sq.lock().bfreg.abandon();
    }

    /// Empties both rings (after the QP went to RESET).
    pub(crate) fn reset_rings(&self) {
        {
            let mut sq = self.sq.lock();
            sq.cur_post = 0;
            sq.head = 0;
            self.sq_done.tail.store(0, Release);
            self.sq_done.last_poll.store(0, Relaxed);
        }
        {
            let mut rq = self.rq.lock();
            rq.head = 0;
            self.rq_done.tail.store(0, Release);
        }
        self.db.set(RCV_DBR, 0);
        self.db.set(SND_DBR, 0);
    }
}

/// `MLX5_CQE_SYNDROME_WR_FLUSH_ERR`, the vendor error C reports with a software flush.
const SYNDROME_WR_FLUSH_ERR: u32 = 0x05;

/// A request of QP `qpn` completed in software as flushed (C's `sw_comp`).
fn flushed(qpn: u32, wr_id: u64) -> WorkCompletion {
    WorkCompletion {
        wr_id,
        status: WcStatus::WrFlushErr,
        vendor_err: SYNDROME_WR_FLUSH_ERR,
        qp_num: qpn,
        ..WorkCompletion::default()
    }
}

/// `n` zeroed 64-bit entries.
fn zeroed_u64(n: u32) -> Result<KVec<AtomicU64>> {
    let mut k = KVec::with_capacity(n as usize, GFP_KERNEL)?;
    for _ in 0..n {
        k.push(AtomicU64::new(0), GFP_KERNEL)?;
    }
    Ok(k)
}

/// `n` zeroed send ring entries.
fn sq_entries(n: u32) -> Result<KVec<SqEntry>> {
    let mut k = KVec::with_capacity(n as usize, GFP_KERNEL)?;
    for _ in 0..n {
        let e = SqEntry {
            wrid: AtomicU64::new(0),
            head: AtomicU32::new(0),
            next: AtomicU32::new(0),
        };
        k.push(e, GFP_KERNEL)?;
    }
    Ok(k)
}

/// The send ring as a [`WqeSink`]: the WQE starting at producer count `cur_post` is written in
/// place, each 16-byte unit with two volatile 64-bit stores, its basic blocks wrapping at the ring's end
/// (a mask per slot, no bounds check: `WqBuf` checked the ring once).
struct SendRing<'a> {
    ring: SendRingWriter<'a>,
    /// The WQE's first basic block (a producer count: the slot is its low bits).
    cur_post: u32,
}

impl WqeSink for SendRing<'_> {
    #[inline(always)]
    fn put<S: Seg>(&mut self, unit: usize, seg: S) -> Result {
        self.ring.put(self.cur_post, unit as u32, seg);
        Ok(())
    }
}

/// A prepared request's encoding as a [`WqeSink`]: its units as words, at most
/// [`MAX_PREPARED_UNITS`] (`EINVAL` past them).
struct ImageSink {
    words: [u64; 2 * MAX_PREPARED_UNITS],
}

impl WqeSink for ImageSink {
    fn put<S: Seg>(&mut self, unit: usize, seg: S) -> Result {
        let w = <[u64; 2]>::read_from_bytes(seg.as_bytes()).map_err(|_| EINVAL)?;
        self.words
            .get_mut(2 * unit..2 * unit + 2)
            .ok_or(EINVAL)?
            .copy_from_slice(&w);
        Ok(())
    }
}

impl QpShared {
    /// What building `wr`'s WQE needs of this QP (QP number `qpn`, the datagram's address
    /// vector `av` on a UD QP).
    #[inline(always)]
    fn send_ctx<'a>(
        &self,
        wr: &SendWr<'_>,
        qpn: u32,
        av: Option<&'a [u8; AV_SIZE]>,
    ) -> SendCtx<'a> {
        SendCtx {
            qpn,
            sig_bits: self.sig_bits,
            fence: wqe::fence(wr.send_flags, 0),
            max_gs: self.sqs.max_gs as usize,
            max_inline: self.sqs.max_inline as usize,
            av,
        }
    }

    /// Encodes `wr` once for [`Self::post_prepared`] (`ib_core::verbs::prepared`): checked as
    /// `post_send` checks it, its WQE built as `post_send` builds it (at index 0, restamped
    /// at each post). `EOPNOTSUPP` on a UD QP (a prepared request carries no AH), `EINVAL`
    /// without a send queue or for a WQE of more than [`MAX_PREPARED_UNITS`] units.
    pub(crate) fn prepare_send(&self, wr: &SendWr<'_>) -> Result<PreparedImage> {
        if self.sqs.wqe_cnt == 0 {
            return Err(EINVAL);
        }
        if self.kind == SendKind::Ud {
            return Err(EOPNOTSUPP);
        }
        let ctx = self.send_ctx(wr, self.qpn(), None);
        let mut sink = ImageSink {
            words: [0; 2 * MAX_PREPARED_UNITS],
        };
        let built = wqe::build_send_into(wr, 0, &ctx, &mut sink)?;
        PreparedImage::new(sink.words, built.units)
    }

    /// Queues prepared send requests (see [`Self::prepare_send`]): under the send lock, each
    /// encoding is copied into the ring (two volatile words per unit), its control segment
    /// restamped with the WQE's index and the QP number; then the doorbell as `post_send`
    /// rings it. Nothing is checked or encoded again but the queue's room.
    #[inline]
    pub(crate) fn post_prepared(&self, wrs: &[PreparedSend]) -> Result<(), PostError> {
        self.post_with(
            wrs,
            |wr| wr.wr_id,
            |wr, at, qpn, ring| {
                let img = wr.image();
                let units = img.units();
                for u in 1..units {
                    ring.put_words(at, u as u32, img.unit(u));
                }
                let [w0, w1] = img.unit(0);
                let w0 = wqe::restamp_ctrl(w0, at as u16, qpn);
                ring.put_words(at, 0, [w0, w1]);
                Ok((units.div_ceil(wqe::UNITS_PER_BB) as u32, w0.to_le_bytes()))
            },
        )
    }

    /// Queues send requests (C's `mlx5_ib_post_send` for RC and UD): each WQE is written in
    /// place in the ring, segment by segment (wrapping at the end, inline data included), its
    /// control segment last; then the doorbell record, a barrier and the blue-flame doorbell
    /// with the last WQE's first 8 bytes. A UD request's address vector is its AH's, which
    /// the core checked is of the QP's device.
    #[inline]
    pub(crate) fn post_send<D: DeviceOps<Ah = Mlx5Ah>>(
        &self,
        wrs: SendWrs<'_, D>,
    ) -> Result<(), PostError> {
        let s = self;
        s.post_with(
            &wrs,
            |wr| wr.wr_id,
            |wr, at, qpn, ring| {
                let av = match s.kind {
                    SendKind::Ud => Some(&wrs.ah(wr).ok_or(EINVAL)?.av),
                    SendKind::Rc | SendKind::Uc => None,
                };
                let ctx = s.send_ctx(wr, qpn, av);
                let mut sink = SendRing {
                    ring: *ring,
                    cur_post: at,
                };
                // Slots past the producer count: the device reads none of them before the
                // doorbell record says so, and a request refused is refused before its first
                // store.
                match wqe::build_send_into(wr, at as u16, &ctx, &mut sink) {
                    Ok(w) => Ok((w.blocks() as u32, w.ctrl.first8())),
                    Err(err) => {
                        if err == EOPNOTSUPP {
                            pr_warn!("Atomic operations are not supported yet\n");
                        }
                        Err(err)
                    }
                }
            },
        )
    }

    /// What posting a list of send requests is, whatever a request is (`post_send`,
    /// `post_prepared`): under the send lock, for each request in order, the queue's room
    /// checked (`ENOMEM` when full), `write` storing its WQE at producer count `at` (it returns
    /// the WQE's basic blocks and first 8 bytes, or why the request is refused), the request's
    /// completion entry; then the doorbell record, a barrier and the blue-flame doorbell with
    /// the last WQE's first 8 bytes. The requests before the first refused one are posted.
    #[inline(always)]
    fn post_with<T>(
        &self,
        wrs: &[T],
        wr_id: impl Fn(&T) -> u64,
        mut write: impl FnMut(&T, u32, u32, &SendRingWriter<'_>) -> Result<(u32, [u8; 8])>,
    ) -> Result<(), PostError> {
        let s = self;
        let cnt = s.sqs.wqe_cnt;
        if cnt == 0 {
            return Err(EINVAL.into());
        }
        let mut sq = s.sq.lock();
        let tail = s.sq_done.tail.load(Acquire);
        let qpn = s.qpn();
        let ring = s.wq.send_writer();
        let mut nreq = 0u32;
        let mut last = [0u8; 8];
        let mut result = Ok(());
        for (i, wr) in wrs.iter().enumerate() {
            if sq.head.wrapping_sub(tail).wrapping_add(nreq) >= s.sqs.max_post {
                result = Err(PostError {
                    first_bad: i,
                    err: ENOMEM,
                });
                break;
            }
            let at = sq.cur_post;
            let (blocks, first8) = match write(wr, at, qpn, &ring) {
                Ok(w) => w,
                Err(err) => {
                    result = Err(PostError { first_bad: i, err });
                    break;
                }
            };
            let next = at.wrapping_add(blocks);
            if let Some(e) = s.sq_done.entries.get((at & (cnt - 1)) as usize) {
                e.wrid.store(wr_id(wr), Relaxed);
                e.head.store(sq.head.wrapping_add(nreq), Relaxed);
                e.next.store(next, Relaxed);
            }
            last = first8;
            sq.cur_post = next;
            nreq += 1;
        }
        if nreq != 0 {
            sq.head = sq.head.wrapping_add(nreq);
            // Descriptors before the doorbell record, the record before the doorbell.
            mb(Write);
            s.db.set(SND_DBR, sq.cur_post & 0xffff);
            mb(Write);
            if let Err(err) = sq.bfreg.ring(last) {
                return Err(PostError {
                    first_bad: wrs.len(),
                    err,
                });
            }
        }
        result
    }

    /// Queues receive requests (C's `mlx5_ib_post_recv`): data segments, a terminating
    /// segment when the scatter list is shorter than the WQE, then the doorbell record. The
    /// segments are stored in place in the ring.
    #[inline]
    pub(crate) fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        let s = self;
        let cnt = s.rqs.wqe_cnt;
        if cnt == 0 {
            return Err(EINVAL.into());
        }
        let mut rq = s.rq.lock();
        let tail = s.rq_done.tail.load(Acquire);
        let ring = s.wq.recv_writer();
        let mut nreq = 0u32;
        let mut result = Ok(());
        for (i, wr) in wrs.iter().enumerate() {
            if rq.head.wrapping_sub(tail).wrapping_add(nreq) >= cnt {
                result = Err(PostError {
                    first_bad: i,
                    err: ENOMEM,
                });
                break;
            }
            if wr.sg_list.len() > s.rqs.max_gs as usize {
                result = Err(PostError {
                    first_bad: i,
                    err: EINVAL,
                });
                break;
            }
            let ind = rq.head.wrapping_add(nreq) & (cnt - 1);
            // At most `max_gs` units: inside the WQE's slot (its stride holds `max_gs`).
            let mut k = 0;
            for sge in wr.sg_list {
                ring.put(ind, k, wqe::data_seg(sge));
                k += 1;
            }
            if k < s.rqs.max_gs {
                ring.put(ind, k, wqe::recv_terminator());
            }
            if let Some(x) = s.rq_done.wrid.get(ind as usize) {
                x.store(wr.wr_id, Relaxed);
            }
            nreq += 1;
        }
        if nreq != 0 {
            rq.head = rq.head.wrapping_add(nreq);
            mb(Write);
            s.db.set(RCV_DBR, rq.head & 0xffff);
        }
        result
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_qp_rings)]
mod tests {
    use super::*;
    use ib_core::verbs::wr::{send_flags, SendOpcode, Sge};

    #[test]
    fn a_prepared_wqe_restamped_is_the_wqe_post_send_writes() -> Result {
        let sg = [Sge {
            addr: 0x1000,
            length: 64,
            lkey: 0x42,
        }];
        let wr = SendWr {
            opcode: SendOpcode::RdmaWriteWithImm,
            sg_list: &sg,
            send_flags: send_flags::SIGNALED,
            imm_data: 0x55,
            remote_addr: 0x2000,
            rkey: 0x77,
            ..SendWr::default()
        };
        let ctx = SendCtx {
            qpn: 0xabcd,
            sig_bits: 0,
            fence: 0,
            max_gs: 2,
            max_inline: 0,
            av: None,
        };
        let direct = wqe::build_send(&wr, 0x1234, &ctx)?;
        let mut sink = ImageSink {
            words: [0; 2 * MAX_PREPARED_UNITS],
        };
        let built = wqe::build_send_into(&wr, 0, &ctx, &mut sink)?;
        let img = PreparedImage::new(sink.words, built.units)?;
        assert_eq!(img.units() * wqe::SEG, direct.len);
        let [w0, w1] = img.unit(0);
        let mut bytes = KVec::new();
        bytes.extend_from_slice(
            &wqe::restamp_ctrl(w0, 0x1234, 0xabcd).to_le_bytes(),
            GFP_KERNEL,
        )?;
        bytes.extend_from_slice(&w1.to_le_bytes(), GFP_KERNEL)?;
        for u in 1..img.units() {
            for w in img.unit(u) {
                bytes.extend_from_slice(&w.to_le_bytes(), GFP_KERNEL)?;
            }
        }
        assert_eq!(&bytes[..], &direct.bytes[..direct.len]);
        // Larger than a prepared request may be: refused.
        let many = [sg[0]; 8];
        let big = SendWr {
            sg_list: &many,
            ..wr
        };
        let ctx8 = SendCtx { max_gs: 8, ..ctx };
        let mut sink = ImageSink {
            words: [0; 2 * MAX_PREPARED_UNITS],
        };
        assert_eq!(
            wqe::build_send_into(&big, 0, &ctx8, &mut sink).err(),
            Some(EINVAL)
        );
        Ok(())
    }
}
