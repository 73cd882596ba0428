// SPDX-License-Identifier: GPL-2.0

//! The sample's third phase, on objects of its own freed before `add` returns: CQs the core
//! polls (`PolledCq`, C's `ib_alloc_cq`) in a workqueue and directly, with a `done` callback per
//! completion, and draining a QP (C's `ib_drain_qp`): what was outstanding is flushed to `done`,
//! the drain's own markers are not.

use ib_core::{
    device::IbDevice,
    verbs::cq_poll::{CqDone, PollCtx, PolledCq},
    verbs::dma_buffer::DmaBuffer,
    verbs::wr::{send_flags, RecvWr, SendOpcode, SendWr, WcStatus, WorkCompletion},
    verbs::{
        Access, EventHandler, EventType, Mr, Pd, Qp, QpAttr, QpAttrField as F, QpCap, QpInit,
        QpState, QpType, Srq, SrqAttr,
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

/// What `done` saw.
struct Seen {
    ok: Atomic<u32>,
    flushed: Atomic<u32>,
    other: Atomic<u32>,
}

impl Seen {
    fn total(&self) -> u32 {
        self.ok.load(Relaxed) + self.flushed.load(Relaxed) + self.other.load(Relaxed)
    }

    /// Waits (about 2 s at most) until `done` saw `n` completions.
    fn wait(&self, n: u32) -> bool {
        for _ in 0..200 {
            if self.total() >= n {
                return true;
            }
            fsleep(Delta::from_millis(10));
        }
        false
    }
}

/// How a drain ended, as the line says it: `drained` (all C's `ib_drain_qp`, which returns
/// nothing, can say), or the error the Rust core returned (e.g. `ETIMEDOUT` when last-WQE-reached
/// never came).
struct Drained(Result);

impl kernel::fmt::Display for Drained {
    fn fmt(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        match &self.0 {
            Ok(()) => f.write_str("drained"),
            Err(e) => write!(f, "drain failed: err {}", e.to_errno()),
        }
    }
}

/// A `done` callback counting into a new [`Seen`].
fn counting() -> Result<(Arc<Seen>, CqDone)> {
    let seen = Arc::new(
        Seen {
            ok: Atomic::new(0),
            flushed: Atomic::new(0),
            other: Atomic::new(0),
        },
        GFP_KERNEL,
    )?;
    let s = seen.clone();
    let done: CqDone = KBox::new(
        move |wc: &WorkCompletion| match wc.status {
            WcStatus::Success => {
                s.ok.fetch_add(1, Relaxed);
            }
            WcStatus::WrFlushErr => {
                s.flushed.fetch_add(1, Relaxed);
            }
            _ => {
                s.other.fetch_add(1, Relaxed);
            }
        },
        GFP_KERNEL,
    )?;
    Ok((seen, done))
}

/// An RC QP on `cq`, connected to itself.
fn looped_qp(
    pd: &Arc<Pd>,
    cq: &PolledCq,
    srq: Option<Arc<Srq>>,
    lid: u16,
    event_handler: Option<EventHandler>,
) -> Result<Arc<Qp>> {
    let qp = Qp::create(
        pd,
        QpInit {
            qp_type: QpType::Rc,
            send_cq: cq.cq().clone(),
            recv_cq: cq.cq().clone(),
            cap: QpCap {
                max_send_wr: 8,
                max_recv_wr: 8,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            sq_sig_all: false,
            kern_name: ib_core::kern_name!(),
            srq,
            event_handler,
            port_num: 0,
        },
    )?;
    let init = QpAttr {
        qp_state: QpState::Init,
        port_num: 1,
        qp_access_flags: Access::RemoteWrite.into(),
        ..QpAttr::default()
    };
    qp.modify(&init, F::State | F::Port | F::PkeyIndex | F::AccessFlags)?;
    let rtr = QpAttr {
        qp_state: QpState::Rtr,
        path_mtu: 5,
        // A hardware port routes by LID: the port's own.
        dlid: lid,
        dest_qp_num: qp.qp_num(),
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        ..QpAttr::default()
    };
    qp.modify(
        &rtr,
        F::State | F::Av | F::PathMtu | F::DestQpn | F::RqPsn | F::MaxDestRdAtomic | F::MinRnrTimer,
    )?;
    let rts = QpAttr {
        qp_state: QpState::Rts,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 1,
        ..QpAttr::default()
    };
    qp.modify(
        &rts,
        F::State | F::Timeout | F::RetryCnt | F::RnrRetry | F::SqPsn | F::MaxQpRdAtomic,
    )?;
    Ok(qp)
}

/// Posts `recvs` receives, then one signaled SEND of 64 bytes.
fn traffic(qp: &Qp, mr: &Mr, buf: &DmaBuffer, recvs: u64) -> Result {
    for i in 0..recvs {
        let sge = [buf.sge(1024 + i as usize * 64, 64, mr.lkey())?];
        qp.post_recv(&[RecvWr {
            wr_id: 100 + i,
            sg_list: &sge,
        }])?;
    }
    let sge = [buf.sge(0, 64, mr.lkey())?];
    qp.post_send(&[SendWr {
        wr_id: 1,
        opcode: SendOpcode::Send,
        sg_list: &sge,
        send_flags: send_flags::SIGNALED,
        ..SendWr::default()
    }])?;
    Ok(())
}

/// The phase on `dev`.
pub(crate) fn exercise(dev: &Arc<IbDevice>, name: &BStr) -> Result {
    let pd = Pd::alloc(dev, ib_core::kern_name!())?;
    let lid = u16::try_from(dev.query_port(1)?.lid).map_err(|_| EINVAL)?;
    let mr = Mr::get_dma_mr(&pd, Access::LocalWrite | Access::RemoteWrite)?;
    let buf = DmaBuffer::alloc(dev, 4096)?;
    // Polled from a workqueue: the send and one receive complete, the other receive is
    // flushed by the drain.
    let (seen, done) = counting()?;
    let cq = PolledCq::alloc(dev, 32, 0, PollCtx::Workqueue, done, ib_core::kern_name!())?;
    let qp = looped_qp(&pd, &cq, None, lid, None)?;
    traffic(&qp, &mr, &buf, 2)?;
    let before = if seen.wait(2) {
        seen.ok.load(Relaxed)
    } else {
        0
    };
    let drained = qp.drain_qp();
    let flushed_ok = seen.wait(3);
    pr_info!(
        "{name}: polled cq {:?} (poll-ctx {}): {} done before drain; {}; then {} flushed to done{}, {} other\n",
        PollCtx::Workqueue,
        cq.cq().poll_ctx(),
        before,
        Drained(drained),
        seen.flushed.load(Relaxed),
        if flushed_ok { "" } else { " (timed out)" },
        seen.other.load(Relaxed)
    );
    drop(qp);
    drop(cq);
    // Polled directly: nothing happens until the consumer asks.
    let (seen, done) = counting()?;
    let cq = PolledCq::alloc(dev, 32, 0, PollCtx::Direct, done, ib_core::kern_name!())?;
    let qp = looped_qp(&pd, &cq, None, lid, None)?;
    traffic(&qp, &mr, &buf, 1)?;
    // A device completes the work after the post returns: give it time, then check that
    // nothing called `done` unasked, and poll until both completions came (about 2 s at most).
    fsleep(Delta::from_millis(50));
    let untouched = seen.total();
    let mut processed = 0;
    for _ in 0..200 {
        processed += cq.process_direct(None);
        if seen.total() >= 2 {
            break;
        }
        fsleep(Delta::from_millis(10));
    }
    let drained = qp.drain_qp();
    pr_info!(
        "{name}: direct cq: {} done before asked, process_direct {} ({} done), {}, {} flushed\n",
        untouched,
        processed,
        seen.ok.load(Relaxed),
        Drained(drained),
        seen.flushed.load(Relaxed)
    );
    drop(qp);
    drop(cq);
    // A QP receiving from an SRQ: its drain waits for last-WQE-reached; the SRQ keeps its
    // other receive.
    let (seen, done) = counting()?;
    let cq = PolledCq::alloc(dev, 32, 0, PollCtx::Workqueue, done, ib_core::kern_name!())?;
    let srq = Srq::create(
        &pd,
        &SrqAttr {
            max_wr: 8,
            max_sge: 1,
            srq_limit: 0,
        },
        None,
    )?;
    let last_wqe = Arc::new(Atomic::new(0u32), GFP_KERNEL)?;
    let count = last_wqe.clone();
    let on_event: EventHandler = KBox::new(
        move |e: EventType| {
            if e == EventType::QpLastWqeReached {
                count.fetch_add(1, Relaxed);
            }
        },
        GFP_KERNEL,
    )?;
    let qp = looped_qp(&pd, &cq, Some(srq.clone()), lid, Some(on_event))?;
    for i in 0..2u64 {
        let sge = [buf.sge(1024 + i as usize * 64, 64, mr.lkey())?];
        srq.post_recv(&[RecvWr {
            wr_id: 100 + i,
            sg_list: &sge,
        }])?;
    }
    traffic(&qp, &mr, &buf, 0)?;
    let before = if seen.wait(2) {
        seen.ok.load(Relaxed)
    } else {
        0
    };
    let drained = qp.drain_qp();
    pr_info!(
        "{name}: polled cq, qp on an srq: {} done before drain; {}, {} last wqe reached event(s); {} flushed\n",
        before,
        Drained(drained),
        last_wqe.load(Relaxed),
        seen.flushed.load(Relaxed)
    );
    Ok(())
}
