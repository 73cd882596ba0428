// SPDX-License-Identifier: GPL-2.0

//! What every later phase of the sample works with, as the C twin's `struct env`: a PD, a CQ
//! whose completion handler counts events, a DMA MR and two DMA buffers (tx, rx); collecting
//! completions; RC QPs connected to themselves, UD QPs at RTS; the test messages.

use ib_core::{
    device::IbDevice,
    verbs::dma_buffer::DmaBuffer,
    verbs::wr::WorkCompletion,
    verbs::{
        AccessFlags, CompletionHandler, Cq, CqInit, Mr, Pd, Qp, QpAttr, QpAttrField as F, QpCap,
        QpInit, QpState, QpType, Srq,
    },
};
use kernel::{
    new_condvar, new_spinlock_irq,
    prelude::*,
    sync::{Arc, CondVar, SpinLockIrq},
    time::msecs_to_jiffies,
};

/// Completion events of a CQ, counted by its handler.
#[pin_data]
pub(crate) struct Events {
    // An IRQ-safe spinlock, not a mutex: a hardware driver calls the completion handler from
    // its interrupt handler.
    #[pin]
    count: SpinLockIrq<u32>,
    #[pin]
    wake: CondVar,
}

impl Events {
    /// New counts and the completion handler that bumps them.
    pub(crate) fn new() -> Result<(Arc<Events>, CompletionHandler)> {
        let events = Arc::pin_init(
            pin_init!(Events {
                count <- new_spinlock_irq!(0),
                wake <- new_condvar!(),
            }),
            GFP_KERNEL,
        )?;
        let counter = events.clone();
        let handler: CompletionHandler = KBox::new(
            move || {
                *counter.count.lock() += 1;
                counter.wake.notify_all();
            },
            GFP_KERNEL,
        )?;
        Ok((events, handler))
    }

    /// Events counted so far.
    pub(crate) fn seen(&self) -> u32 {
        *self.count.lock()
    }

    /// Waits (at most 5 s) until more than `seen` events have been counted.
    pub(crate) fn wait_past(&self, seen: u32) -> bool {
        self.wait_past_rounds(seen, 50)
    }

    /// Waits (at most `rounds` times 100 ms) until more than `seen` events have been counted.
    fn wait_past_rounds(&self, seen: u32, rounds: u32) -> bool {
        let mut c = self.count.lock();
        for _ in 0..rounds {
            if *c > seen {
                return true;
            }
            let _ = self
                .wake
                .wait_interruptible_timeout(&mut c, msecs_to_jiffies(100));
        }
        *c > seen
    }
}

/// Polls `cq` until `n` completions are in, waiting for events in between (`ETIMEDOUT` after
/// 50 rounds of 100 ms without them); never takes more than `n`.
pub(crate) fn collect(cq: &Cq, events: &Events, n: usize) -> Result<KVec<WorkCompletion>> {
    let mut got = KVec::with_capacity(n, GFP_KERNEL)?;
    let mut wc = [WorkCompletion::default(); 8];
    let mut round = 0;
    while round < 50 {
        while got.len() < n {
            let want = (n - got.len()).min(wc.len());
            let k = cq.poll(&mut wc[..want])?;
            if k == 0 {
                break;
            }
            got.extend_from_slice(&wc[..k], GFP_KERNEL)?;
        }
        if got.len() >= n {
            return Ok(got);
        }
        // Arm, then poll once more before sleeping: a completion may have come in between.
        let seen = events.seen();
        cq.req_notify(false)?;
        if cq.poll(&mut wc[..1])? == 1 {
            got.push(wc[0], GFP_KERNEL)?;
            continue;
        }
        events.wait_past_rounds(seen, 1);
        round += 1;
    }
    Err(ETIMEDOUT)
}

/// A PD, a CQ with an event-counting handler, a DMA MR and two buffers.
pub(crate) struct Env {
    /// The port's LID (QPs are looped back to it).
    pub(crate) lid: u16,
    /// The PD.
    pub(crate) pd: Arc<Pd>,
    /// The CQ of every QP of the phase.
    pub(crate) cq: Arc<Cq>,
    /// Its completion events.
    pub(crate) events: Arc<Events>,
    /// The DMA MR.
    pub(crate) mr: Arc<Mr>,
    /// What is sent.
    pub(crate) tx: DmaBuffer,
    /// What is received.
    pub(crate) rx: DmaBuffer,
}

impl Env {
    /// A PD, a CQ of `cqe` entries, a DMA MR with `access` and two buffers of `size` bytes.
    pub(crate) fn create(
        dev: &Arc<IbDevice>,
        cqe: u32,
        size: usize,
        access: AccessFlags,
    ) -> Result<Env> {
        let lid = u16::try_from(dev.query_port(1)?.lid).map_err(|_| EINVAL)?;
        let pd = Pd::alloc(dev, ib_core::kern_name!())?;
        let (events, handler) = Events::new()?;
        let cq = Cq::create(
            dev,
            &CqInit {
                cqe,
                comp_vector: 0,
                flags: 0,
            },
            Some(handler),
            ib_core::kern_name!(),
        )?;
        let mr = Mr::get_dma_mr(&pd, access)?;
        Ok(Env {
            lid,
            pd,
            cq,
            events,
            mr,
            tx: DmaBuffer::alloc(dev, size)?,
            rx: DmaBuffer::alloc(dev, size)?,
        })
    }

    /// [`collect`] on the phase's CQ.
    pub(crate) fn collect(&self, n: usize) -> Result<KVec<WorkCompletion>> {
        collect(&self.cq, &self.events, n)
    }

    /// An RC QP on the phase's CQ with `sq`/`rq` work requests and `inline` bytes; receiving
    /// from `srq` when given (its own RQ is then empty).
    pub(crate) fn rc_qp(
        &self,
        sq: u32,
        rq: u32,
        inline: u32,
        srq: Option<Arc<Srq>>,
    ) -> Result<Arc<Qp>> {
        let own_rq = srq.is_none();
        Qp::create(
            &self.pd,
            QpInit {
                qp_type: QpType::Rc,
                send_cq: self.cq.clone(),
                recv_cq: self.cq.clone(),
                cap: QpCap {
                    max_send_wr: sq,
                    max_recv_wr: if own_rq { rq } else { 0 },
                    max_send_sge: 1,
                    max_recv_sge: u32::from(own_rq),
                    max_inline_data: inline,
                },
                sq_sig_all: false,
                kern_name: ib_core::kern_name!(),
                srq,
                event_handler: None,
                port_num: 0,
            },
        )
    }
}

impl Env {
    /// A UD QP on the phase's CQ with `sq`/`rq` work requests (every send signalled when
    /// `sig_all`), moved to RTS with Q_Key `qkey` on port 1.
    pub(crate) fn ud_qp(&self, sq: u32, rq: u32, sig_all: bool, qkey: u32) -> Result<Arc<Qp>> {
        let qp = Qp::create(
            &self.pd,
            QpInit {
                qp_type: QpType::Ud,
                send_cq: self.cq.clone(),
                recv_cq: self.cq.clone(),
                cap: QpCap {
                    max_send_wr: sq,
                    max_recv_wr: rq,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                sq_sig_all: sig_all,
                kern_name: ib_core::kern_name!(),
                srq: None,
                event_handler: None,
                port_num: 0,
            },
        )?;
        let init = QpAttr {
            qp_state: QpState::Init,
            port_num: 1,
            qkey,
            ..QpAttr::default()
        };
        qp.modify(&init, F::State | F::Port | F::PkeyIndex | F::Qkey)?;
        let rtr = QpAttr {
            qp_state: QpState::Rtr,
            ..QpAttr::default()
        };
        qp.modify(&rtr, F::State.into())?;
        let rts = QpAttr {
            qp_state: QpState::Rts,
            sq_psn: 0x1234,
            ..QpAttr::default()
        };
        qp.modify(&rts, F::State | F::SqPsn)?;
        Ok(qp)
    }
}

/// `IB_MTU_4096`.
const MTU_4096: u8 = 5;

/// Moves an RC QP to RTS, connected to `dqpn` behind LID `lid` on port 1, with `access` for the
/// peer and `rnr_retry` (as the C twin's `connect_rc`).
pub(crate) fn connect_rc(
    qp: &Qp,
    lid: u16,
    dqpn: u32,
    access: AccessFlags,
    rnr_retry: u8,
) -> Result {
    let to_init = QpAttr {
        qp_state: QpState::Init,
        port_num: 1,
        pkey_index: 0,
        qp_access_flags: access,
        ..QpAttr::default()
    };
    qp.modify(&to_init, F::State | F::Port | F::PkeyIndex | F::AccessFlags)?;
    let to_rtr = QpAttr {
        qp_state: QpState::Rtr,
        path_mtu: MTU_4096,
        dlid: lid,
        dest_qp_num: dqpn,
        rq_psn: 0x1234,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        ..QpAttr::default()
    };
    qp.modify(
        &to_rtr,
        F::State | F::Av | F::PathMtu | F::DestQpn | F::RqPsn | F::MaxDestRdAtomic | F::MinRnrTimer,
    )?;
    let to_rts = QpAttr {
        qp_state: QpState::Rts,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry,
        sq_psn: 0x1234,
        max_rd_atomic: 1,
        ..QpAttr::default()
    };
    qp.modify(
        &to_rts,
        F::State | F::Timeout | F::RetryCnt | F::RnrRetry | F::SqPsn | F::MaxQpRdAtomic,
    )
}

/// RESET, then RTS again, connected to itself.
pub(crate) fn reconnect(qp: &Qp, lid: u16, access: AccessFlags, rnr_retry: u8) -> Result {
    let reset = QpAttr {
        qp_state: QpState::Reset,
        ..QpAttr::default()
    };
    qp.modify(&reset, F::State.into())?;
    connect_rc(qp, lid, qp.qp_num(), access, rnr_retry)
}

/// Byte `i` of the test message made with `seed`.
pub(crate) fn pattern(i: usize, seed: u8) -> u8 {
    (i as u8).wrapping_mul(7).wrapping_add(seed)
}

/// The test message of `len` bytes made with `seed`.
pub(crate) fn message(len: usize, seed: u8) -> Result<KVec<u8>> {
    let mut data = KVec::with_capacity(len, GFP_KERNEL)?;
    for i in 0..len {
        data.push(pattern(i, seed), GFP_KERNEL)?;
    }
    Ok(data)
}

/// Writes the message of `len` bytes made with `seed` at `offset` of `buf`.
pub(crate) fn fill_at(buf: &DmaBuffer, offset: usize, len: usize, seed: u8) -> Result {
    buf.write(offset, &message(len, seed)?)
}

/// Whether `buf` holds, at `offset`, the message of `len` bytes made with `seed`.
pub(crate) fn holds_at(buf: &DmaBuffer, offset: usize, len: usize, seed: u8) -> Result<bool> {
    let mut data = KVec::with_capacity(len, GFP_KERNEL)?;
    data.resize(len, 0, GFP_KERNEL)?;
    buf.read(offset, &mut data)?;
    Ok(data.iter().enumerate().all(|(i, &b)| b == pattern(i, seed)))
}

/// `intact` or `CORRUPT`.
pub(crate) fn intact(ok: bool) -> &'static str {
    if ok {
        "intact"
    } else {
        "CORRUPT"
    }
}
