// SPDX-License-Identifier: GPL-2.0

//! CQs the core polls for the consumer (C's `ib_alloc_cq` in `cq.c`): the consumer gives a
//! polling context and a `done` callback, which gets every completion (C's per-request
//! `ib_cqe.done`; a consumer tells its requests apart by `wr_id`), and the core polls:
//!
//! - [`PollCtx::Direct`]: only when the consumer calls [`PolledCq::process_direct`] (C's
//!   `ib_process_cq_direct`); no completion events;
//! - [`PollCtx::Softirq`], [`PollCtx::Workqueue`], [`PollCtx::UnboundWorkqueue`]: on each
//!   completion event a work item polls up to [`POLL_BUDGET_WORKQUEUE`] completions in batches
//!   of [`POLL_BATCH`], then re-arms the CQ and polls once more, queueing itself again if
//!   anything came in between (C's `ib_cq_poll_work`), on the core's `ib-comp-wq` (unbound:
//!   `ib-comp-unb-wq`), which the module destroys at unload after its work has run. The kernel
//!   crate has no `irq_poll`, so the softirq context runs on `ib-comp-wq` (high priority) too:
//!   `done` then runs in process context, which C's softirq context does not give, so `done`
//!   must not count on it either way.
//!
//! Draining (C's `ib_drain_sq`, `ib_drain_rq`, `ib_drain_qp`): the QP is moved to the error
//! state and a marker work request is posted; the marker's flushed completion, which the
//! polling intercepts (it is not given to `done`), says that every earlier request has
//! completed. `wr_id`s [`DRAIN_SQ_WR_ID`] and [`DRAIN_RQ_WR_ID`] are reserved for the markers.
//! A QP receiving from an SRQ has no receive marker: its drain waits for the driver's
//! `QpLastWqeReached` instead (C's `__ib_drain_srq`).

use crate::{
    device::ib_device::IbDevice,
    restrack::KernName,
    verbs::wr::{RecvWr, SendOpcode, SendWr, WorkCompletion},
    verbs::{Cq, CqInit, Qp, QpAttr, QpAttrField, QpState},
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, Completion, Mutex,
    },
    time::{delay::fsleep, Delta},
    workqueue::{self, Work, WorkItem},
};

/// Completions polled at once (C's `IB_POLL_BATCH`).
pub const POLL_BATCH: usize = 16;
/// Completions a work item handles before it lets others run (C's
/// `IB_POLL_BUDGET_WORKQUEUE`).
pub const POLL_BUDGET_WORKQUEUE: usize = 65536;
/// The `wr_id` of a send queue drain marker.
pub const DRAIN_SQ_WR_ID: u64 = u64::MAX;
/// The `wr_id` of a receive queue drain marker.
pub const DRAIN_RQ_WR_ID: u64 = u64::MAX - 1;

/// How a CQ is polled (`enum ib_poll_context`, C's values, which `rdma res show cq` reports as
/// `poll-ctx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PollCtx {
    /// From a work item on the high-priority queue (C: softirq).
    Softirq = 0,
    /// From a work item.
    Workqueue = 1,
    /// From a work item not bound to a CPU.
    UnboundWorkqueue = 2,
    /// Only when the consumer asks ([`PolledCq::process_direct`]).
    Direct = 3,
}

/// The consumer's callback for each completion.
pub type CqDone = KBox<dyn Fn(&WorkCompletion) + Send + Sync>;

/// A drain waiting for its marker.
struct Drain {
    qp_num: u32,
    wr_id: u64,
    done: Arc<Completion>,
    seen: Arc<Atomic<bool>>,
}

/// The polling side of a [`PolledCq`], shared with its work item and its completion handler.
#[pin_data]
pub(crate) struct Poller {
    #[pin]
    work: Work<Poller>,
    ctx: PollCtx,
    done: CqDone,
    /// The CQ while the consumer has it (`None` after [`PolledCq`] is dropped, which breaks the
    /// CQ -> handler -> poller -> CQ cycle).
    #[pin]
    cq: Mutex<Option<Arc<Cq>>>,
    /// Drains waiting for their markers.
    #[pin]
    drains: Mutex<KVec<Drain>>,
    /// Serialises polling (a work item and a direct call never poll at once).
    #[pin]
    polling: Mutex<()>,
}

kernel::impl_has_work! {
    impl HasWork<Self> for Poller { self.work }
}

impl WorkItem for Poller {
    type Pointer = Arc<Poller>;

    fn run(this: Arc<Poller>) {
        let Some(cq) = this.cq.lock().clone() else {
            return;
        };
        let n = this.process(&cq, POLL_BUDGET_WORKQUEUE);
        // Re-arm, then look again: a completion may have come in before the arming.
        let again = n >= POLL_BUDGET_WORKQUEUE
            || cq.req_notify(false).is_err()
            || this.process(&cq, POLL_BUDGET_WORKQUEUE) > 0;
        if again {
            this.schedule();
        }
    }
}

impl Poller {
    /// Queues the work item (nothing if it is queued already).
    fn schedule(self: &Arc<Self>) {
        let Some(q) = crate::device::workqueues::queues() else {
            return;
        };
        let queue: &workqueue::Queue = match self.ctx {
            PollCtx::Softirq | PollCtx::Workqueue => &q.completion,
            PollCtx::UnboundWorkqueue => &q.completion_unbound,
            PollCtx::Direct => return,
        };
        let _ = queue.enqueue(self.clone());
    }

    /// Polls up to `budget` completions of `cq`, giving each to `done` (markers to their
    /// drains); returns how many were polled (C's `__ib_process_cq`).
    fn process(&self, cq: &Cq, budget: usize) -> usize {
        let _serial = self.polling.lock();
        let mut wc = [WorkCompletion::default(); POLL_BATCH];
        let mut total = 0;
        while total < budget {
            let want = (budget - total).min(POLL_BATCH);
            let n = match cq.poll(&mut wc[..want]) {
                Ok(n) => n,
                Err(_) => break,
            };
            for w in &wc[..n] {
                if !self.drain_marker(w) {
                    (self.done)(w);
                }
            }
            total += n;
            if n < want {
                break;
            }
        }
        total
    }

    /// Whether `wc` is a drain's marker (then the drain is told).
    fn drain_marker(&self, wc: &WorkCompletion) -> bool {
        if wc.wr_id != DRAIN_SQ_WR_ID && wc.wr_id != DRAIN_RQ_WR_ID {
            return false;
        }
        let mut drains = self.drains.lock();
        let Some(i) = drains
            .iter()
            .position(|d| d.qp_num == wc.qp_num && d.wr_id == wc.wr_id)
        else {
            return false;
        };
        if let Ok(d) = drains.remove(i) {
            d.seen.store(true, Relaxed);
            d.done.complete_all();
        }
        true
    }
}

/// A CQ the core polls, from [`PolledCq::alloc`] (C's `ib_alloc_cq`). Dropping it stops the
/// polling (C's `ib_free_cq`); the CQ itself goes with its last user.
pub struct PolledCq {
    cq: Arc<Cq>,
    poller: Arc<Poller>,
}

impl PolledCq {
    /// A CQ of `nr_cqe` entries on `dev` polled as `ctx` says, `done` getting each completion
    /// (C's `ib_alloc_cq`; pass [`crate::kern_name!()`]).
    pub fn alloc(
        dev: &Arc<IbDevice>,
        nr_cqe: u32,
        comp_vector: u32,
        ctx: PollCtx,
        done: CqDone,
        kern_name: KernName,
    ) -> Result<Self> {
        let poller = Arc::pin_init(
            pin_init!(Poller {
                work <- kernel::new_work!("ib_core::verbs::cq_poll::Poller::work"),
                ctx,
                done,
                cq <- new_mutex!(None, "ib_core::verbs::cq_poll::Poller::cq"),
                drains <- new_mutex!(KVec::new(), "ib_core::verbs::cq_poll::Poller::drains"),
                polling <- new_mutex!((), "ib_core::verbs::cq_poll::Poller::polling"),
            }),
            GFP_KERNEL,
        )?;
        let handler = if ctx == PollCtx::Direct {
            None
        } else {
            let p = poller.clone();
            let h: crate::verbs::CompletionHandler = KBox::new(move || p.schedule(), GFP_KERNEL)?;
            Some(h)
        };
        let init = CqInit {
            cqe: nr_cqe,
            comp_vector,
            flags: 0,
        };
        let cq = Cq::create_polled(dev, &init, handler, kern_name, ctx as u8)?;
        cq.set_poller(poller.clone());
        *poller.cq.lock() = Some(cq.clone());
        // On failure from here, dropping `Self` stops the polling.
        let this = Self { cq, poller };
        if ctx != PollCtx::Direct {
            this.cq.req_notify(false)?;
        }
        Ok(this)
    }

    /// The CQ, for creating QPs on it.
    pub fn cq(&self) -> &Arc<Cq> {
        &self.cq
    }

    /// Polls up to `budget` completions now (all there are with `None`), giving each to
    /// `done`; returns how many (C's `ib_process_cq_direct`). Process context.
    pub fn process_direct(&self, budget: Option<usize>) -> usize {
        self.poller.process(&self.cq, budget.unwrap_or(usize::MAX))
    }

    /// Stops the polling and waits for a pass in progress: once this returns, `done` is not
    /// called again (C's `ib_free_cq`, which cancels its work item synchronously). For a
    /// consumer whose `done` reaches memory it frees next (a C module's `ib_cqe`).
    pub(crate) fn stop(&self) {
        self.poller.cq.lock().take();
        // A pass holds this lock while it calls `done`; later passes find no CQ.
        drop(self.poller.polling.lock());
    }
}

impl Drop for PolledCq {
    fn drop(&mut self) {
        self.poller.cq.lock().take();
    }
}

impl Cq {
    /// The poller of a CQ made by [`PolledCq::alloc`].
    fn poller(&self) -> Option<&Poller> {
        self.poller_ref()?.downcast_ref::<Poller>()
    }
}

/// Which queue a drain empties.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Queue {
    Send,
    Recv,
}

impl Qp {
    /// Moves the QP to the error state and waits until every send request posted before has
    /// completed (C's `ib_drain_sq`). The send CQ must be a [`PolledCq`]'s (`EINVAL`
    /// otherwise); errors of the modify or the marker's post are returned (C warns).
    pub fn drain_sq(&self) -> Result {
        self.drain(Queue::Send)
    }

    /// The same for the receive queue (C's `ib_drain_rq`); `EINVAL` for a QP receiving from an
    /// SRQ.
    pub fn drain_rq(&self) -> Result {
        if self.srq().is_some() {
            return Err(EINVAL);
        }
        self.drain(Queue::Recv)
    }

    /// Drains the send queue, then the receive queue, or for a QP receiving from an SRQ, waits
    /// (at most 60 s) for the driver's `QpLastWqeReached` and polls the receive CQ for what was
    /// flushed (C's `ib_drain_qp` with `__ib_drain_srq`; `ETIMEDOUT` when the event does not
    /// come, where C returns quietly).
    pub fn drain_qp(&self) -> Result {
        self.drain_sq()?;
        if self.srq().is_none() {
            return self.drain_rq();
        }
        let (_, recv_cq) = self.cqs();
        let poller = recv_cq.poller().ok_or(EINVAL)?;
        let err = QpAttr {
            qp_state: QpState::Err,
            ..QpAttr::default()
        };
        self.modify(&err, QpAttrField::State.into())?;
        for _ in 0..600 {
            if self.last_wqe_reached() {
                let cqe = recv_cq.cqe() as usize;
                let mut polled = 0;
                while polled < cqe {
                    let n = poller.process(recv_cq, cqe - polled);
                    if n == 0 {
                        break;
                    }
                    polled += n;
                }
                return Ok(());
            }
            fsleep(Delta::from_millis(100));
        }
        Err(ETIMEDOUT)
    }

    fn drain(&self, queue: Queue) -> Result {
        let (send_cq, recv_cq) = self.cqs();
        let cq = if queue == Queue::Send {
            send_cq
        } else {
            recv_cq
        };
        let poller = cq.poller().ok_or(EINVAL)?;
        let wr_id = if queue == Queue::Send {
            DRAIN_SQ_WR_ID
        } else {
            DRAIN_RQ_WR_ID
        };
        let done = Arc::pin_init(Completion::new(), GFP_KERNEL)?;
        let seen = Arc::new(Atomic::new(false), GFP_KERNEL)?;
        let err = QpAttr {
            qp_state: QpState::Err,
            ..QpAttr::default()
        };
        self.modify(&err, QpAttrField::State.into())?;
        poller.drains.lock().push(
            Drain {
                qp_num: self.qp_num(),
                wr_id,
                done: done.clone(),
                seen: seen.clone(),
            },
            GFP_KERNEL,
        )?;
        let posted = match queue {
            Queue::Send => self
                .post_send(&[SendWr {
                    wr_id,
                    opcode: SendOpcode::RdmaWrite,
                    ..SendWr::default()
                }])
                .map_err(Error::from),
            Queue::Recv => self
                .post_recv(&[RecvWr {
                    wr_id,
                    sg_list: &[],
                }])
                .map_err(Error::from),
        };
        if let Err(e) = posted {
            let qpn = self.qp_num();
            poller
                .drains
                .lock()
                .retain(|d| !(d.qp_num == qpn && d.wr_id == wr_id));
            return Err(e);
        }
        if poller.ctx == PollCtx::Direct {
            while !seen.load(Relaxed) {
                poller.process(cq, usize::MAX);
                if !seen.load(Relaxed) {
                    fsleep(Delta::from_millis(100));
                }
            }
        } else {
            done.wait_for_completion();
        }
        Ok(())
    }
}
