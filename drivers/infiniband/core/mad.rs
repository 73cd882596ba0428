// SPDX-License-Identifier: GPL-2.0

//! The MAD layer (C's `ib_mad`, `agent.c`): a client of every device that opens, on each port
//! with MAD services, QP0 and QP1 ([`crate::mad::port`]), and the API agents use to send and
//! receive management datagrams on them.
//!
//! - **Agents** ([`MadAgent::register`]) register for a class, version and methods
//!   ([`crate::mad::agent`]); a received request goes to the owner of its method, a response
//!   to the agent whose transaction id it carries (bits 63..32: the agent's `hi_tid`).
//! - **Sending** ([`MadAgent::send`]): a request with a timeout waits, from its send
//!   completion, for its response (same transaction id and class); unanswered, it is sent
//!   again `retries` times, then completes with [`WcStatus::RespTimeoutErr`]. A directed-route
//!   SMP for the local port never leaves it: the driver answers it (`process_mad`).
//! - **Receiving**: a MAD is checked, directed-route SMPs follow the hop rules
//!   ([`crate::mad::smi`]), then the driver gets the first refusal (`process_mad`: its reply is
//!   sent back to the requester), then the agents; a `Get` or `Set` nobody takes is answered
//!   with status "unsupported method/attribute", as C does.
//!
//! Completions are polled on the core's unbound completion workqueue; agents' handlers run
//! there, in process context, never with a lock of the MAD layer held. Response timeouts run
//! from a high-resolution timer that queues work on the core's general workqueue.

pub mod agent;
pub(crate) mod port;
pub mod rmpp;
pub mod smi;
pub mod types;

use crate::{
    device::ib_device::IbDevice,
    device::registry::Client,
    mad::agent::{AgentKey, MadRegReq},
    mad::port::{MadQp, RECV_SLOT},
    mad::rmpp::{flag, kind, rhdr, status, AckEffect, AfterAck, Reassembly, Segmenter, Step},
    mad::types::{class, get32, get64, hdr, method, result, Mad, MadWc, GRH_SIZE, MAD_SIZE},
    verbs::cq_poll::{PollCtx, PolledCq},
    verbs::types::{AhAttr, GlobalRoute, QpType},
    verbs::wr::{send_flags, SendOpcode, SendWr, UdWr, WcOpcode, WcStatus, WorkCompletion},
    verbs::{Ah, Pd},
};
use kernel::{
    impl_has_hr_timer, new_mutex, new_work,
    prelude::*,
    str::BStr,
    sync::{
        atomic::{Atomic, Relaxed},
        global_lock, Arc, ArcBorrow, Mutex,
    },
    time::{
        hrtimer::{
            ArcHrTimerHandle, HrTimer, HrTimerCallback, HrTimerCallbackContext, HrTimerPointer,
            HrTimerRestart, RelativeMode,
        },
        Delta, Instant, Monotonic,
    },
    workqueue::{Work, WorkItem},
};

/// The Q_Key a MAD is sent with: the QP's own (`IB_QP_SET_QKEY`).
const SET_QKEY: u32 = 0x8000_0000;
/// Completion queue entries per QP (send and receive).
const CQ_PER_QP: u32 = port::SEND_QUEUE_SIZE + port::RECV_QUEUE_SIZE;
/// Index of QP0 and QP1 in a port's table.
const QP0: usize = 0;
const QP1: usize = 1;

/// A received MAD as an agent gets it.
pub struct ReceivedMad {
    /// The MAD.
    pub mad: Mad,
    /// Its completion.
    pub wc: MadWc,
    /// The GRH it came with, if any.
    pub grh: Option<[u8; GRH_SIZE]>,
    /// For a response to one of the agent's sends: that send's context ([`MadSend::context`];
    /// C hands the request's `ib_mad_send_buf` with the response).
    pub request: Option<u64>,
    /// An RMPP message put back together: the data of its segments after the first (each
    /// segment's data, in order), which `mad` holds; empty for a single MAD.
    pub rmpp_data: KVec<u8>,
    /// The message's length from the start of `mad` (C's `mad_len`): [`MAD_SIZE`] for a single
    /// MAD, the header and all the data for an RMPP message.
    pub mad_len: usize,
}

impl ReceivedMad {
    /// A single MAD as it came.
    fn single(mad: Mad, wc: MadWc, grh: Option<[u8; GRH_SIZE]>) -> Self {
        Self {
            mad,
            wc,
            grh,
            request: None,
            rmpp_data: KVec::new(),
            mad_len: MAD_SIZE,
        }
    }
}

/// How a send ended, as its agent hears it.
pub struct SendDone {
    /// The sender's context ([`MadSend::context`]).
    pub context: u64,
    /// [`WcStatus::Success`], [`WcStatus::RespTimeoutErr`] when no response came,
    /// [`WcStatus::WrFlushErr`] when cancelled, or the send completion's error.
    pub status: WcStatus,
    /// The MAD as it was sent (its transaction id as it went).
    pub mad: KBox<Mad>,
    /// How many times it was sent again for want of a response (C's `send_buf->retries` at
    /// the end).
    pub retried: u32,
}

/// What an agent does with what the MAD layer hands it. Called in process context, with no
/// lock of the MAD layer held; a handler may send, but must not unregister its own agent.
pub trait MadHandler: Send + Sync {
    /// A request for one of the agent's methods, or a response to one of its requests.
    fn recv(&self, agent: &Arc<MadAgent>, mad: KBox<ReceivedMad>);
    /// One of the agent's sends ended.
    fn send_done(&self, agent: &Arc<MadAgent>, done: SendDone);
}

/// A MAD to send (C's `ib_mad_send_buf` with its address).
pub struct MadSend {
    /// The MAD (256 bytes, padded).
    pub mad: KBox<Mad>,
    /// The destination.
    pub ah: AhAttr,
    /// The destination QP.
    pub remote_qpn: u32,
    /// The P_Key index to send with.
    pub pkey_index: u16,
    /// How long to wait for the response, from the send's completion (0: no response).
    pub timeout_ms: u32,
    /// How many times to send again without a response.
    pub retries: u32,
    /// The sender's context, given back in [`SendDone`].
    pub context: u64,
    /// For an RMPP message (an agent registered for RMPP, the MAD's RMPP header active, type
    /// DATA): its data after the class's header, sent in segments that each repeat `mad` up to
    /// there; empty otherwise (C's `ib_create_send_mad` with `rmpp_active`).
    pub rmpp_data: KVec<u8>,
}

/// Where a send is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SendState {
    /// Waiting for a free slot of the QP's send queue.
    Queued,
    /// On the send queue in slot `.0`.
    Posted(u32),
    /// Sent; waiting for its response until the deadline (ns since the port opened).
    Waiting(i64),
}

/// A send in flight (C's `ib_mad_send_wr_private`).
struct SendRec {
    /// The agent; `None` for the port's own replies (C's port agents).
    agent: Option<Arc<MadAgent>>,
    qpi: usize,
    mad: KBox<Mad>,
    ah: Arc<Ah>,
    remote_qpn: u32,
    tid: u64,
    mgmt_class: u8,
    timeout_ms: u32,
    retries_left: u32,
    /// How many times it was sent again.
    retried: u32,
    context: u64,
    state: SendState,
    /// Its response came before its send completion (C's early response).
    answered: bool,
    /// Its agent unregistered while it was on the send queue: drop it when it completes.
    cancelled: bool,
    /// Its sender cancelled it ([`MadAgent::modify_send`] with no timeout) while it was on the
    /// send queue: it ends with [`WcStatus::WrFlushErr`] when it completes.
    flushed: bool,
    /// The receiver aborted the RMPP transfer while a segment was on the send queue: it ends
    /// with [`WcStatus::RemAbortErr`] when it completes.
    aborted: bool,
    /// An RMPP message: its segments and window.
    rmpp: Option<KBox<rmpp::Sender>>,
}

/// A port's mutable state.
struct PortState {
    /// False once the port closes: nothing is posted any more.
    open: bool,
    qps: [Option<MadQp>; 2],
    sends: KVec<SendRec>,
    agents: KVec<Arc<MadAgent>>,
    /// The next `hi_tid` to try.
    next_hi_tid: u32,
    /// The armed response timer and when it fires (ns since the port opened).
    timer: Option<(i64, ArcHrTimerHandle<MadTimer>)>,
    /// The timer's state (taken at close: it refers to the port).
    timer_obj: Option<Arc<MadTimer>>,
    /// The CQ's polling (taken at close, after the QPs).
    cq: Option<PolledCq>,
    /// RMPP messages being received, and those received lately (C's `rmpp_list` of each
    /// agent).
    rmpp_recvs: KVec<RmppRecv>,
}

/// The MAD services of one port (C's `ib_mad_port_private`).
#[pin_data]
pub struct MadPort {
    dev: Arc<IbDevice>,
    port: u32,
    /// When the port opened: deadlines count from it.
    epoch: Instant<Monotonic>,
    pd: Arc<Pd>,
    #[pin]
    state: Mutex<PortState>,
}

/// A registered agent (C's `ib_mad_agent_private`).
pub struct MadAgent {
    port: Arc<MadPort>,
    key: AgentKey,
    rmpp_version: u8,
    /// The MAD layer does RMPP for it (registered for RMPP, and not [`agent::USER_RMPP`]).
    kernel_rmpp: bool,
    handler: Arc<dyn MadHandler>,
    /// Held while a handler runs; false once unregistered (no handler call after).
    live: Pin<KBox<Mutex<bool>>>,
    registered: Atomic<bool>,
}

/// Something finished, to tell an agent once the port's lock is dropped.
enum Notice {
    Done(Arc<MadAgent>, SendDone),
    Recv(Arc<MadAgent>, KBox<ReceivedMad>),
}

fn deliver(notices: KVec<Notice>) {
    for n in notices {
        match n {
            Notice::Done(a, d) => a.call(|h, a| h.send_done(a, d)),
            Notice::Recv(a, r) => a.call(|h, a| h.recv(a, r)),
        }
    }
}

global_lock! {
    // SAFETY: Initialized by the module initializer before the MAD client registers.
    unsafe(uninit) static PORTS: Mutex<KVec<Arc<MadPort>>> = KVec::new();
}

/// Initializes the table of open ports.
///
/// # Safety
///
/// Called once, at module load, before the MAD client registers.
pub(crate) unsafe fn init() {
    // SAFETY: As this function's contract.
    unsafe { PORTS.init() };
}

/// Frees the table's memory at unload (every port is closed by then: drivers hold a
/// reference on the module while their devices are registered).
pub(crate) fn clear() {
    *PORTS.lock() = KVec::new();
}

/// The open MAD port `port` of `dev`.
fn find_port(dev: &IbDevice, port: u32) -> Option<Arc<MadPort>> {
    PORTS
        .lock()
        .iter()
        .find(|p| core::ptr::eq(&*p.dev, dev) && p.port == port)
        .cloned()
}

impl MadAgent {
    /// Registers an agent on `port` of `dev`'s SMI (`qp_type` [`QpType::Smi`]) or GSI QP for
    /// `reg` (`None`: it only sends, and gets the responses to its requests), with C's checks
    /// and errnos: `EINVAL` for a bad registration or a method another agent owns,
    /// `EPROTONOSUPPORT` for a QP the port does not have, `ENODEV` without MAD services on
    /// the port, `EBUSY` when every transaction id prefix is taken. With `rmpp_version` 1 the
    /// MAD layer sends and receives the agent's RMPP messages, unless `flags` has
    /// [`agent::USER_RMPP`] (its user does RMPP itself).
    pub fn register(
        dev: &IbDevice,
        port: u32,
        qp_type: QpType,
        reg: Option<&MadRegReq>,
        rmpp_version: u8,
        flags: u32,
        handler: Arc<dyn MadHandler>,
    ) -> Result<Arc<MadAgent>> {
        let imm = dev.port_immutable(port).ok_or(ENODEV)?;
        let cm = imm.core_cap_flags & crate::attrs::CORE_CAP_IB_CM != 0;
        if !agent::port_serves(qp_type, port::has_smi(imm), cm) {
            return Err(EPROTONOSUPPORT);
        }
        agent::check_registration(qp_type, reg, rmpp_version)?;
        let mp = find_port(dev, port).ok_or(ENODEV)?;
        let qpi = if qp_type == QpType::Smi { QP0 } else { QP1 };
        let live = KBox::pin_init(new_mutex!(true, "ib_core::mad::MadAgent::live"), GFP_KERNEL)?;
        let mut st = mp.state.lock();
        if !st.open {
            return Err(ENODEV);
        }
        if st.qps.get(qpi).is_none_or(|q| q.is_none()) {
            return Err(EPROTONOSUPPORT);
        }
        let mut key = AgentKey {
            qp_type,
            hi_tid: 0,
            reg: reg.copied(),
        };
        if st.agents.iter().any(|a| a.key.conflicts(&key)) {
            return Err(EINVAL);
        }
        key.hi_tid = agent::free_hi_tid(st.next_hi_tid, |t| {
            st.agents.iter().any(|a| a.key.hi_tid == t)
        })
        .ok_or(EBUSY)?;
        st.next_hi_tid = (key.hi_tid + 1) & agent::HI_TID_MAX;
        let agent = Arc::new(
            MadAgent {
                port: mp.clone(),
                key,
                rmpp_version,
                kernel_rmpp: rmpp_version != 0 && flags & agent::USER_RMPP == 0,
                handler,
                live,
                registered: Atomic::new(true),
            },
            GFP_KERNEL,
        )?;
        st.agents.push(agent.clone(), GFP_KERNEL)?;
        Ok(agent)
    }

    /// The agent's transaction id prefix: its requests carry it in TID bits 63..32.
    pub fn hi_tid(&self) -> u32 {
        self.key.hi_tid
    }

    /// The QP type it is on.
    pub fn qp_type(&self) -> QpType {
        self.key.qp_type
    }

    /// The RMPP version it registered with.
    pub fn rmpp_version(&self) -> u8 {
        self.rmpp_version
    }

    /// The device it is on.
    pub fn device(&self) -> &Arc<IbDevice> {
        &self.port.dev
    }

    /// The port it is on.
    pub fn port(&self) -> u32 {
        self.port.port
    }

    /// The PD of the port's MAD QPs (C's `agent->qp->pd`), where address handles of its
    /// sends live.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.port.pd
    }

    /// Calls the handler unless the agent is unregistered; unregistering waits for it.
    fn call(self: &Arc<Self>, f: impl FnOnce(&dyn MadHandler, &Arc<MadAgent>)) {
        let live = self.live.lock();
        if *live {
            f(&*self.handler, self);
        }
        drop(live);
    }

    /// Unregisters the agent (C's `ib_unregister_mad_agent`): its sends complete with
    /// [`WcStatus::WrFlushErr`], its methods are free again, and once this returns no handler
    /// of it runs. Nothing happens the second time. As C's, it waits for its sends already on
    /// the QP to complete (so that a message sent just before, ib_cm's DREQ when an ID goes,
    /// is on the wire before the device may go), for at most [`UNREGISTER_SEND_WAIT_MS`].
    pub fn unregister(self: &Arc<Self>) {
        self.unregister_waiting(true);
    }

    /// [`Self::unregister`]; `wait`: for the sends on the QP (not when the port closes, whose
    /// QPs go next).
    fn unregister_waiting(self: &Arc<Self>, wait: bool) {
        if !self.registered.xchg(false, Relaxed) {
            return;
        }
        let mut notices = KVec::new();
        {
            let mut st = self.port.state.lock();
            if let Some(i) = st.agents.iter().position(|a| core::ptr::eq(&**a, &**self)) {
                let _ = st.agents.remove(i);
            }
            // Its RMPP messages being received go (C's `ib_cancel_rmpp_recvs`).
            st.rmpp_recvs.retain(|x| !core::ptr::eq(&*x.agent, &**self));
            let mut i = 0;
            while let Some(r) = st.sends.get_mut(i) {
                if !self.owns(r) {
                    i += 1;
                    continue;
                }
                if matches!(r.state, SendState::Posted(_)) {
                    // The slot is the device's until the send completes, which reports the
                    // flush (C's `cancel_mads` marks it so); no response is waited for.
                    r.flushed = true;
                    r.timeout_ms = 0;
                    i += 1;
                } else if let Ok(r) = st.sends.remove(i) {
                    finish(r, WcStatus::WrFlushErr, &mut notices);
                }
            }
        }
        deliver(notices);
        if wait {
            let deadline =
                self.port.now_ns() + Delta::from_millis(UNREGISTER_SEND_WAIT_MS).as_nanos();
            while self.has_posted() && self.port.now_ns() < deadline {
                kernel::time::delay::fsleep(Delta::from_millis(1));
            }
        }
        // Sends the device did not complete in time are reported flushed now; their slots stay
        // the device's until it completes them.
        let mut notices = KVec::new();
        {
            let mut st = self.port.state.lock();
            for r in st.sends.iter_mut() {
                if self.owns(r) && matches!(r.state, SendState::Posted(_)) && !r.cancelled {
                    r.cancelled = true;
                    if let Ok(mad) = KBox::new(*r.mad, GFP_KERNEL) {
                        let d = SendDone {
                            context: r.context,
                            status: WcStatus::WrFlushErr,
                            mad,
                            retried: r.retried,
                        };
                        let _ = notices.push(Notice::Done(self.clone(), d), GFP_KERNEL);
                    }
                }
            }
        }
        deliver(notices);
        // From here no handler runs.
        *self.live.lock() = false;
    }

    /// Whether `r` is one of this agent's sends.
    fn owns(&self, r: &SendRec) -> bool {
        r.agent.as_ref().is_some_and(|a| core::ptr::eq(&**a, self))
    }

    /// Whether a send of this agent is on the QP still.
    fn has_posted(&self) -> bool {
        let st = self.port.state.lock();
        st.sends
            .iter()
            .any(|r| self.owns(r) && matches!(r.state, SendState::Posted(_)))
    }

    /// Changes how long the agent's send whose context is `context` waits for its response,
    /// from now if it is waiting already, from its send completion otherwise (C's
    /// `ib_modify_mad`); with `timeout_ms` 0 the send is cancelled: it ends with
    /// [`WcStatus::WrFlushErr`] at once, or when its send completes if it is on the send queue
    /// (C's `ib_cancel_mad`). `EINVAL` when the agent has no such send still going.
    pub fn modify_send(self: &Arc<Self>, context: u64, timeout_ms: u32) -> Result {
        let mut notices = KVec::new();
        {
            let mut st = self.port.state.lock();
            let found = st.sends.iter().position(|r| {
                r.context == context
                    && !r.cancelled
                    && !r.flushed
                    && r.agent
                        .as_ref()
                        .is_some_and(|a| core::ptr::eq(&**a, &**self))
            });
            let Some(i) = found else {
                return Err(EINVAL);
            };
            let Some(r) = st.sends.get_mut(i) else {
                return Err(EINVAL);
            };
            r.timeout_ms = timeout_ms;
            let state = r.state;
            match (timeout_ms, state) {
                (0, SendState::Posted(_)) => r.flushed = true,
                (0, _) => {
                    if let Ok(r) = st.sends.remove(i) {
                        finish(r, WcStatus::WrFlushErr, &mut notices);
                    }
                }
                (t, SendState::Waiting(_)) => {
                    let deadline = self.port.now_ns() + Delta::from_millis(i64::from(t)).as_nanos();
                    r.state = SendState::Waiting(deadline);
                    self.port.arm(&mut st, deadline);
                }
                _ => {}
            }
        }
        deliver(notices);
        Ok(())
    }

    /// Sends a MAD (C's `ib_post_send_mad`). `EINVAL` for a class the agent cannot send (a
    /// class without RMPP on an RMPP agent), a directed route that does not start here, or a
    /// local SMP the driver cannot answer; `ENODEV` once the agent or the port is gone.
    pub fn send(self: &Arc<Self>, s: MadSend) -> Result {
        if !self.registered.load(Relaxed) {
            return Err(ENODEV);
        }
        agent::check_send(self.rmpp_version, &s.mad)?;
        let c = s.mad[hdr::MGMT_CLASS];
        let mut mad = s.mad;
        if c == class::SUBN_DIRECTED_ROUTE && self.key.qp_type == QpType::Smi {
            if let Some(local) = self.port.outgoing_dr_smp(&mut mad)? {
                return self.port.complete_local(self, s.context, mad, local);
            }
        }
        let rmpp =
            self.port
                .rmpp_send(self, &mad, s.rmpp_data, s.ah.dlid, s.retries, s.timeout_ms)?;
        let ah = Ah::create(&self.port.pd, &s.ah)?;
        let qpi = if self.key.qp_type == QpType::Smi {
            QP0
        } else {
            QP1
        };
        let rec = SendRec {
            agent: Some(self.clone()),
            qpi,
            tid: agent::tid(&mad),
            mgmt_class: c,
            mad,
            ah,
            remote_qpn: s.remote_qpn,
            timeout_ms: s.timeout_ms,
            retries_left: s.retries,
            retried: 0,
            context: s.context,
            state: SendState::Queued,
            answered: false,
            cancelled: false,
            flushed: false,
            aborted: false,
            rmpp,
        };
        self.port.submit(rec)
    }
}

/// What the driver made of a local directed-route SMP.
enum Local {
    /// Its reply, for the sender.
    Reply(KBox<ReceivedMad>),
    /// Consumed: only the send completes.
    Consumed,
    /// A request for a local agent.
    ForAgent(Arc<MadAgent>, KBox<ReceivedMad>),
}

impl MadPort {
    /// Nanoseconds since the port opened.
    fn now_ns(&self) -> i64 {
        (Instant::<Monotonic>::now() - self.epoch).as_nanos()
    }

    /// Opens the MAD services of `port` of `dev` (C's `ib_mad_port_open`).
    fn open(dev: &Arc<IbDevice>, port: u32) -> Result<Arc<Self>> {
        let imm = dev.port_immutable(port).ok_or(EINVAL)?;
        let smi = port::has_smi(imm);
        let pd = Pd::alloc(dev, crate::kern_name!())?;
        let mp = Arc::pin_init(
            pin_init!(MadPort {
                dev: dev.clone(),
                port,
                epoch: Instant::<Monotonic>::now(),
                pd,
                state <- new_mutex!(PortState {
                    open: false,
                    qps: [None, None],
                    sends: KVec::new(),
                    agents: KVec::new(),
                    next_hi_tid: 0,
                    timer: None,
                    timer_obj: None,
                    cq: None,
                    rmpp_recvs: KVec::new(),
                }, "ib_core::mad::MadPort::state"),
            }),
            GFP_KERNEL,
        )?;
        let timer_port = mp.clone();
        let timer = Arc::pin_init(
            pin_init!(MadTimer {
                timer <- HrTimer::new(),
                work <- new_work!("ib_core::mad::MadTimer::work"),
                port: timer_port,
            }),
            GFP_KERNEL,
        )?;
        let nr = if smi { 2 * CQ_PER_QP } else { CQ_PER_QP };
        let me = mp.clone();
        let done: crate::verbs::cq_poll::CqDone =
            KBox::new(move |wc: &WorkCompletion| me.completed(wc), GFP_KERNEL)?;
        let cq = PolledCq::alloc(
            dev,
            nr,
            0,
            PollCtx::UnboundWorkqueue,
            done,
            crate::kern_name!(),
        );
        let cq = match cq {
            Ok(cq) => cq,
            Err(e) => {
                mp.close();
                return Err(e);
            }
        };
        let cq_arc = cq.cq().clone();
        {
            let mut st = mp.state.lock();
            st.cq = Some(cq);
            st.timer_obj = Some(timer);
        }
        // On failure from here, `close` takes apart what was made, in reverse.
        let qp0 = if smi {
            match MadQp::open(dev, &mp.pd, &cq_arc, port, QpType::Smi, QP0) {
                Ok(q) => Some(q),
                Err(e) => {
                    mp.close();
                    return Err(e);
                }
            }
        } else {
            None
        };
        mp.state.lock().qps[QP0] = qp0;
        match MadQp::open(dev, &mp.pd, &cq_arc, port, QpType::Gsi, QP1) {
            Ok(q) => {
                let mut st = mp.state.lock();
                st.qps[QP1] = Some(q);
                st.open = true;
            }
            Err(e) => {
                mp.close();
                return Err(e);
            }
        }
        Ok(mp)
    }

    /// Closes the port (C's `ib_mad_port_close`): agents left get their sends flushed, the
    /// timer stops, the QPs are destroyed, then the CQ, then the buffers.
    fn close(self: &Arc<Self>) {
        let (agents, qps, cq, timer, timer_obj) = {
            let mut st = self.state.lock();
            st.open = false;
            let agents = core::mem::take(&mut st.agents);
            let qps = [st.qps[QP0].take(), st.qps[QP1].take()];
            (
                agents,
                qps,
                st.cq.take(),
                st.timer.take(),
                st.timer_obj.take(),
            )
        };
        // Stops the timer (dropping its handle cancels it) before anything else goes.
        drop(timer);
        drop(timer_obj);
        for a in &agents {
            a.unregister_waiting(false);
        }
        // The QPs go first (the device stops using the buffers), then the CQ's polling.
        drop(qps);
        drop(cq);
        let mut st = self.state.lock();
        st.sends.clear();
        st.rmpp_recvs.clear();
    }

    /// Queues `rec` and posts it if the QP has room (C's `ib_send_mad`).
    fn submit(self: &Arc<Self>, rec: SendRec) -> Result {
        let mut st = self.state.lock();
        if !st.open {
            return Err(ENODEV);
        }
        st.sends.push(rec, GFP_KERNEL)?;
        let i = st.sends.len() - 1;
        if let Err(e) = self.post(&mut st, i) {
            let _ = st.sends.remove(i);
            return Err(e);
        }
        Ok(())
    }

    /// Posts send `i` on its QP if a slot is free (else it stays queued).
    fn post(&self, st: &mut PortState, i: usize) -> Result {
        let lkey = self.pd.local_dma_lkey();
        let PortState { qps, sends, .. } = st;
        let rec = sends.get_mut(i).ok_or(EINVAL)?;
        let q = qps
            .get_mut(rec.qpi)
            .and_then(|q| q.as_mut())
            .ok_or(ENODEV)?;
        let Some(slot) = q.free.pop() else {
            rec.state = SendState::Queued;
            return Ok(());
        };
        let mut seg = [0u8; MAD_SIZE];
        let bytes: &[u8] = match &rec.rmpp {
            Some(r) => {
                r.write_segment(&rec.mad, &mut seg);
                &seg
            }
            None => &rec.mad[..],
        };
        let posted = (|| -> Result {
            q.send.write(slot, bytes)?;
            let sge = [q.send.sge(slot, lkey)?];
            let wr = SendWr {
                wr_id: port::wr_id(false, rec.qpi, slot),
                opcode: SendOpcode::Send,
                sg_list: &sge,
                send_flags: send_flags::SIGNALED,
                ud: Some(UdWr {
                    ah: &rec.ah,
                    remote_qpn: rec.remote_qpn,
                    remote_qkey: SET_QKEY,
                }),
                ..SendWr::default()
            };
            q.qp.post_send(&[wr]).map_err(Error::from)
        })();
        match posted {
            Ok(()) => {
                rec.state = SendState::Posted(slot);
                Ok(())
            }
            Err(e) => {
                let _ = q.free.push(slot, GFP_KERNEL);
                Err(e)
            }
        }
    }

    /// Posts queued sends of QP `qpi` while it has free slots; a send that fails is finished
    /// with a general error.
    fn post_queued(&self, st: &mut PortState, qpi: usize, notices: &mut KVec<Notice>) {
        let mut i = 0;
        while let Some(r) = st.sends.get(i) {
            if r.qpi != qpi || r.state != SendState::Queued {
                i += 1;
                continue;
            }
            let room = st
                .qps
                .get(qpi)
                .and_then(|q| q.as_ref())
                .is_some_and(|q| !q.free.is_empty());
            if !room {
                return;
            }
            if self.post(st, i).is_err() {
                if let Ok(r) = st.sends.remove(i) {
                    finish(r, WcStatus::GeneralErr, notices);
                }
                continue;
            }
            i += 1;
        }
    }

    /// A completion of the port's CQ (on the completion workqueue).
    fn completed(self: &Arc<Self>, wc: &WorkCompletion) {
        let (recv, qpi, slot) = port::from_wr_id(wc.wr_id);
        if qpi > QP1 {
            return;
        }
        if recv {
            self.received(qpi, slot, wc);
        } else {
            self.send_completed(qpi, slot, wc);
        }
    }

    /// A send completion: the slot is free; the send waits for its response or is finished.
    fn send_completed(self: &Arc<Self>, qpi: usize, slot: u32, wc: &WorkCompletion) {
        let mut notices = KVec::new();
        {
            let mut st = self.state.lock();
            if let Some(q) = st.qps.get_mut(qpi).and_then(|q| q.as_mut()) {
                let _ = q.free.push(slot, GFP_KERNEL);
            }
            let found = st
                .sends
                .iter()
                .position(|r| r.qpi == qpi && r.state == SendState::Posted(slot));
            let next = found.and_then(|i| {
                let r = st.sends.get_mut(i)?;
                let ok = wc.status == WcStatus::Success;
                let live = !r.answered && !r.cancelled && !r.flushed && !r.aborted;
                Some((i, r.rmpp.as_mut()?.segment_sent(ok && live)?))
            });
            if let Some((i, next)) = next {
                // An RMPP segment went: the next one, or the wait for the receiver's ACK.
                match next {
                    rmpp::Next::Post => self.post_or_fail(&mut st, i, &mut notices),
                    rmpp::Next::WaitAck(ms) => {
                        let deadline = self.now_ns() + Delta::from_millis(i64::from(ms)).as_nanos();
                        if let Some(r) = st.sends.get_mut(i) {
                            r.state = SendState::Waiting(deadline);
                        }
                        self.arm(&mut st, deadline);
                    }
                }
            } else if let Some((i, r)) = found.and_then(|i| Some((i, st.sends.get_mut(i)?))) {
                let wait = wc.status == WcStatus::Success
                    && r.timeout_ms != 0
                    && !r.answered
                    && !r.cancelled;
                if wait {
                    let deadline =
                        self.now_ns() + Delta::from_millis(i64::from(r.timeout_ms)).as_nanos();
                    r.state = SendState::Waiting(deadline);
                    self.arm(&mut st, deadline);
                } else if let Ok(r) = st.sends.remove(i) {
                    if !r.cancelled {
                        let status = match wc.status {
                            WcStatus::Success if r.flushed => WcStatus::WrFlushErr,
                            WcStatus::Success if r.aborted => WcStatus::RemAbortErr,
                            s => s,
                        };
                        finish(r, status, &mut notices);
                    }
                }
            }
            if st.open {
                self.post_queued(&mut st, qpi, &mut notices);
            }
        }
        deliver(notices);
    }

    /// Arms the response timer for `deadline` unless it fires earlier already.
    fn arm(&self, st: &mut PortState, deadline: i64) {
        if let Some((at, _)) = &st.timer {
            if *at <= deadline {
                return;
            }
        }
        let Some(t) = st.timer_obj.clone() else {
            return;
        };
        // Dropping the old handle cancels the old timer.
        st.timer = None;
        let delay = Delta::from_nanos((deadline - self.now_ns()).max(0));
        st.timer = Some((deadline, t.start(delay)));
    }

    /// The response timer fired: expired sends are sent again or finish with
    /// [`WcStatus::RespTimeoutErr`] (C's `timeout_sends`).
    fn timeouts(self: &Arc<Self>) {
        let mut notices = KVec::new();
        {
            let mut st = self.state.lock();
            st.timer = None;
            if !st.open {
                return;
            }
            let now = self.now_ns();
            let mut next: Option<i64> = None;
            let mut i = 0;
            while let Some(r) = st.sends.get_mut(i) {
                let SendState::Waiting(at) = r.state else {
                    i += 1;
                    continue;
                };
                if at > now {
                    next = Some(next.map_or(at, |n| n.min(at)));
                    i += 1;
                    continue;
                }
                // An RMPP message all acknowledged waited for its response: it is not sent again.
                let resend = r.rmpp.as_mut().is_none_or(|m| m.rewind());
                if r.retries_left > 0 && resend {
                    r.retries_left -= 1;
                    r.retried += 1;
                    r.state = SendState::Queued;
                    if self.post(&mut st, i).is_err() {
                        if let Ok(r) = st.sends.remove(i) {
                            finish(r, WcStatus::GeneralErr, &mut notices);
                        }
                        continue;
                    }
                    i += 1;
                } else if let Ok(r) = st.sends.remove(i) {
                    finish(r, WcStatus::RespTimeoutErr, &mut notices);
                }
            }
            let now_recvs = self.expire_rmpp_recvs(&mut st, now);
            let next = match (next, now_recvs.next) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if let Some(n) = next {
                self.arm(&mut st, n);
            }
            drop(st);
            for (reply, abort) in now_recvs.aborts {
                self.send_response(QP1, abort, &reply);
            }
        }
        deliver(notices);
    }

    /// A receive completion: the MAD is copied out, its slot posted again, then processed.
    ///
    /// Only the `byte_len` bytes the datagram brought are copied; the rest of the MAD reads as
    /// zeros. The slot is reposted as it is, so past `byte_len` it still holds an earlier
    /// datagram (possibly another node's SMP, M_Key included), which must not reach a reply, an
    /// agent or MAD_IFC. (C's fresh buffers are zeroed, but it reposts a buffer that held its
    /// previous answer, mad.c:2431; a short MAD then carries that answer's tail.)
    fn received(self: &Arc<Self>, qpi: usize, slot: u32, wc: &WorkCompletion) {
        if wc.status != WcStatus::Success || wc.opcode != WcOpcode::Recv {
            // Flushed at close, or an error that put the QP in the error state.
            return;
        }
        let mut buf = [0u8; RECV_SLOT];
        let got = port::recv_len(wc.byte_len);
        let qp_type = {
            let st = self.state.lock();
            let Some(q) = st.qps.get(qpi).and_then(|q| q.as_ref()) else {
                return;
            };
            if q.recv.read(slot, &mut buf[..got]).is_err() {
                return;
            }
            let _ = q.post_recv(qpi, slot, self.pd.local_dma_lkey());
            q.qp_type
        };
        let mad_wc = MadWc {
            slid: wc.slid,
            src_qp: wc.src_qp,
            sl: wc.sl,
            pkey_index: wc.pkey_index,
            dlid_path_bits: wc.dlid_path_bits,
        };
        let Ok(mut r) = KBox::new(ReceivedMad::single([0; MAD_SIZE], mad_wc, None), GFP_KERNEL)
        else {
            return;
        };
        r.mad.copy_from_slice(&buf[GRH_SIZE..]);
        if wc.grh {
            let mut g = [0u8; GRH_SIZE];
            g.copy_from_slice(&buf[..GRH_SIZE]);
            r.grh = Some(g);
        }
        self.process_received(qpi, qp_type, r);
    }

    /// C's `ib_mad_recv_done` from validation on ([`dispatch`]).
    fn process_received(self: &Arc<Self>, qpi: usize, qp_type: QpType, mut r: KBox<ReceivedMad>) {
        let Ok(mut out) = KBox::new([0u8; MAD_SIZE], GFP_KERNEL) else {
            return;
        };
        let ops = self.dev.ops();
        let (wc, port) = (r.wc, self.port);
        let driver = ops
            .has_process_mad()
            .then_some(|m: &Mad| ops.process_mad(0, port, Some(&wc), m, &mut out));
        let ports = self.dev.port_count();
        let find = |m: &Mad| self.find_agent(qp_type, m);
        match dispatch(&mut r.mad, qp_type, port, ports, driver, find) {
            Recv::Drop => {}
            Recv::DriverReply => self.send_response(qpi, out, &r),
            Recv::Agent(agent) => self.agent_received(agent, r),
            Recv::Unmatched => {
                agent::unmatched_response(&r.mad, &mut out);
                self.send_response(qpi, out, &r);
            }
        }
    }

    /// The agent a received MAD is for (C's `find_mad_agent`).
    fn find_agent(&self, qp_type: QpType, m: &Mad) -> Option<Arc<MadAgent>> {
        let st = self.state.lock();
        let i = agent::recipient(st.agents.iter().map(|a| &a.key), qp_type, m)?;
        st.agents.get(i).cloned()
    }

    /// Gives `r` to `agent`: a request as it is, a response only if it answers one of the
    /// agent's sends, which then completes (C's `ib_mad_complete_recv`).
    fn agent_received(self: &Arc<Self>, agent: Arc<MadAgent>, r: KBox<ReceivedMad>) {
        let mut r = if agent.kernel_rmpp {
            match self.rmpp_received(&agent, r) {
                Some(r) => r,
                None => return,
            }
        } else {
            r
        };
        if !agent::is_response(&r.mad) {
            agent.call(|h, a| h.recv(a, r));
            return;
        }
        let tid = agent::tid(&r.mad);
        let c = r.mad[hdr::MGMT_CLASS];
        let done = {
            let mut st = self.state.lock();
            let found = st.sends.iter().position(|s| {
                s.agent
                    .as_ref()
                    .is_some_and(|a| core::ptr::eq(&**a, &*agent))
                    && s.tid == tid
                    && s.mgmt_class == c
                    && awaits_response(s.timeout_ms, s.answered, s.cancelled, s.state)
            });
            let Some((i, s)) = found.and_then(|i| Some((i, st.sends.get_mut(i)?))) else {
                // An answer to nothing of this agent's: dropped, unless the agent's user does
                // RMPP itself and this is one of its segments (C hands those on).
                let user_rmpp = agent.rmpp_version != 0
                    && !agent.kernel_rmpp
                    && agent::is_rmpp_class(c)
                    && rmpp::is_active(&r.mad);
                drop(st);
                if user_rmpp {
                    agent.call(|h, a| h.recv(a, r));
                }
                return;
            };
            r.request = Some(s.context);
            if matches!(s.state, SendState::Posted(_)) {
                // Early: the send completes when its completion comes.
                s.answered = true;
                None
            } else {
                st.sends.remove(i).ok()
            }
        };
        agent.call(|h, a| h.recv(a, r));
        if let Some(s) = done {
            let mut n = KVec::new();
            finish(s, WcStatus::Success, &mut n);
            deliver(n);
        }
    }

    /// Sends `out`, the reply to `r`, back to its sender through the QP it came on (C's
    /// `agent_send_response`).
    fn send_response(self: &Arc<Self>, qpi: usize, out: KBox<Mad>, r: &ReceivedMad) {
        let ah = AhAttr {
            dlid: r.wc.slid,
            sl: r.wc.sl,
            src_path_bits: r.wc.dlid_path_bits,
            static_rate: 0,
            port_num: self.port as u8,
            grh: r.grh.as_ref().map(|g| {
                let flow = get32(g, 0);
                let mut dgid = [0u8; 16];
                dgid.copy_from_slice(&g[8..24]);
                GlobalRoute {
                    dgid: crate::attrs::Gid(dgid),
                    flow_label: flow & 0xf_ffff,
                    sgid_index: 0,
                    hop_limit: 0xff,
                    traffic_class: ((flow >> 20) & 0xff) as u8,
                    roce_dmac: None,
                }
            }),
        };
        let mut out = out;
        if out[hdr::MGMT_CLASS] == class::SUBN_DIRECTED_ROUTE {
            // The reply's route is checked as any directed-route send from here.
            match self.outgoing_dr_smp(&mut out) {
                Ok(None) => {}
                _ => return,
            }
        }
        let Ok(ah) = Ah::create(&self.pd, &ah) else {
            return;
        };
        let rec = SendRec {
            agent: None,
            qpi,
            tid: agent::tid(&out),
            mgmt_class: out[hdr::MGMT_CLASS],
            mad: out,
            ah,
            remote_qpn: r.wc.src_qp,
            timeout_ms: 0,
            retries_left: 0,
            retried: 0,
            context: 0,
            state: SendState::Queued,
            answered: false,
            cancelled: false,
            flushed: false,
            aborted: false,
            rmpp: None,
        };
        let _ = self.submit(rec);
    }

    /// The directed-route rules for an SMP sent from here (C's `handle_outgoing_dr_smp`):
    /// `EINVAL` for a route that cannot start here; `Some` when the SMP is for this port's
    /// own agent and never leaves (the driver's answer); `None` to send it.
    fn outgoing_dr_smp(&self, m: &mut Mad) -> Result<Option<Local>> {
        if smi::outgoing_refused(m, self.port) {
            let name = self.dev.name();
            pr_err!(
                "infiniband {}: Invalid directed route\n",
                BStr::from_bytes(&name)
            );
            return Err(EINVAL);
        }
        if !self.dev.ops().has_process_mad() || (!smi::is_local(m) && !smi::is_local_returning(m)) {
            return Ok(None);
        }
        let wc = MadWc {
            slid: smi::dr_slid(m),
            src_qp: 0,
            ..MadWc::default()
        };
        let mut out = KBox::new([0u8; MAD_SIZE], GFP_KERNEL)?;
        let ret = self
            .dev
            .ops()
            .process_mad(0, self.port, Some(&wc), m, &mut out);
        let local_wc = MadWc {
            slid: smi::LID_PERMISSIVE,
            ..MadWc::default()
        };
        match ret {
            r if r == result::SUCCESS | result::REPLY => {
                let recv = KBox::new(ReceivedMad::single(*out, local_wc, None), GFP_KERNEL)?;
                Ok(Some(Local::Reply(recv)))
            }
            r if r == result::SUCCESS | result::CONSUMED => Ok(Some(Local::Consumed)),
            r if r == result::SUCCESS => {
                let Some(agent) = self.find_agent(QpType::Smi, m) else {
                    return Ok(Some(Local::Consumed));
                };
                let recv = KBox::new(ReceivedMad::single(*m, local_wc, None), GFP_KERNEL)?;
                Ok(Some(Local::ForAgent(agent, recv)))
            }
            _ => Err(EINVAL),
        }
    }

    /// Completes a send the port answered itself, from the general workqueue (C's
    /// `local_completions`): the reply (if a response) to the sender, then its completion.
    fn complete_local(
        &self,
        agent: &Arc<MadAgent>,
        context: u64,
        mad: KBox<Mad>,
        local: Local,
    ) -> Result {
        let mut notices = KVec::new();
        match local {
            Local::Reply(r) => {
                if agent::is_response(&r.mad) {
                    notices.push(Notice::Recv(agent.clone(), r), GFP_KERNEL)?;
                }
            }
            Local::Consumed => {}
            Local::ForAgent(a, r) => notices.push(Notice::Recv(a, r), GFP_KERNEL)?,
        }
        let done = SendDone {
            context,
            status: WcStatus::Success,
            mad,
            retried: 0,
        };
        notices.push(Notice::Done(agent.clone(), done), GFP_KERNEL)?;
        let w = KBox::pin_init(
            pin_init!(LocalWork {
                notices,
                work <- new_work!("ib_core::mad::LocalWork::work"),
            }),
            GFP_KERNEL,
        )?;
        let q = crate::device::workqueues::queues().ok_or(ENODEV)?;
        q.general.enqueue(w);
        Ok(())
    }
}

/// What becomes of a received MAD.
#[derive(Debug, PartialEq, Eq)]
enum Recv<A> {
    /// Dropped.
    Drop,
    /// The driver's reply goes back to the sender.
    DriverReply,
    /// For this agent.
    Agent(A),
    /// A `Get` or `Set` nobody takes: answered "unsupported method/attribute".
    Unmatched,
}

/// Decides what becomes of `m`, received on a QP of `qp_type` at `port` of a device with
/// `ports` ports, in C's order (`ib_mad_recv_done`): validation, the directed-route hop rules
/// (which move the hop pointer), the driver's `process_mad` (`None`: the device has none),
/// the agent `find` names, then the "unsupported" answer.
fn dispatch<A>(
    m: &mut Mad,
    qp_type: QpType,
    port: u32,
    ports: u32,
    driver: Option<impl FnOnce(&Mad) -> u32>,
    find: impl FnOnce(&Mad) -> Option<A>,
) -> Recv<A> {
    if !agent::valid_for_qp(m, qp_type) {
        return Recv::Drop;
    }
    if m[hdr::MGMT_CLASS] == class::SUBN_DIRECTED_ROUTE && !smi::received(m, port, ports) {
        return Recv::Drop;
    }
    // Without `process_mad`, C's result stays SUCCESS: an unmatched Get or Set is answered.
    let ret = driver.map_or(result::SUCCESS, |f| f(m));
    if ret & result::SUCCESS != 0 {
        if ret & result::CONSUMED != 0 {
            return Recv::Drop;
        }
        if ret & result::REPLY != 0 {
            return Recv::DriverReply;
        }
    }
    if let Some(a) = find(m) {
        return Recv::Agent(a);
    }
    let meth = m[hdr::METHOD];
    if ret & result::SUCCESS != 0 && (meth == method::GET || meth == method::SET) {
        Recv::Unmatched
    } else {
        Recv::Drop
    }
}

/// Whether a send in `state`, sent with `timeout_ms`, may take a response (C's
/// `ib_find_send_mad`): only one that waits for one (a timeout), sent or on the send queue
/// still (an early response), not answered or cancelled yet. A send without timeout (a
/// response itself) never takes one: otherwise an agent's answer, routed back to it by a
/// requester using its TID prefix, would be taken as the answer to its own answer.
fn awaits_response(timeout_ms: u32, answered: bool, cancelled: bool, state: SendState) -> bool {
    timeout_ms != 0
        && !answered
        && !cancelled
        && matches!(state, SendState::Waiting(_) | SendState::Posted(_))
}

/// Finishes send `r` with `status`: its agent hears of it (the port's own replies end
/// silently).
fn finish(r: SendRec, status: WcStatus, notices: &mut KVec<Notice>) {
    if let Some(a) = r.agent {
        let d = SendDone {
            context: r.context,
            status,
            mad: r.mad,
            retried: r.retried,
        };
        let _ = notices.push(Notice::Done(a, d), GFP_KERNEL);
    }
}

/// Local completions, delivered on a workqueue as C's `local_work`.
#[pin_data]
struct LocalWork {
    notices: KVec<Notice>,
    #[pin]
    work: Work<LocalWork>,
}

kernel::impl_has_work! {
    impl HasWork<Self> for LocalWork { self.work }
}

impl WorkItem for LocalWork {
    type Pointer = Pin<KBox<LocalWork>>;

    fn run(this: Pin<KBox<LocalWork>>) {
        // SAFETY: `notices` is not structurally pinned, and the work item is done with `work`:
        // taking `notices` moves nothing that is pinned.
        let mut this = unsafe { Pin::into_inner_unchecked(this) };
        let notices = core::mem::replace(&mut this.notices, KVec::new());
        deliver(notices);
    }
}

/// The response timer of a port: fires at the earliest deadline and queues the timeout work.
#[pin_data]
struct MadTimer {
    #[pin]
    timer: HrTimer<Self>,
    #[pin]
    work: Work<MadTimer>,
    port: Arc<MadPort>,
}

impl HrTimerCallback for MadTimer {
    type Pointer<'a> = Arc<Self>;

    fn run(this: ArcBorrow<'_, Self>, _ctx: HrTimerCallbackContext<'_, Self>) -> HrTimerRestart {
        if let Some(q) = crate::device::workqueues::queues() {
            let _ = q.general.enqueue(Arc::<Self>::from(this));
        }
        HrTimerRestart::NoRestart
    }
}

impl_has_hr_timer! {
    impl HasHrTimer<Self> for MadTimer {
        mode: RelativeMode<Monotonic>, field: self.timer
    }
}

kernel::impl_has_work! {
    impl HasWork<Self> for MadTimer { self.work }
}

impl WorkItem for MadTimer {
    type Pointer = Arc<MadTimer>;

    fn run(this: Arc<MadTimer>) {
        this.port.timeouts();
    }
}

/// The MAD client: opens the MAD services of every port that has them (C's `mad_client`,
/// `ib_mad_init_device`, `ib_mad_remove_device`).
pub(crate) struct MadClient;

impl Client for MadClient {
    type Data = KVec<Arc<MadPort>>;

    fn add(&self, dev: &Arc<IbDevice>) -> Result<Self::Data> {
        let mut ports: KVec<Arc<MadPort>> = KVec::new();
        let mut fail = None;
        for p in 1..=dev.port_count() {
            let has_mad = dev
                .port_immutable(p)
                .is_some_and(|i| i.core_cap_flags & crate::attrs::CORE_CAP_IB_MAD != 0);
            if !has_mad {
                continue;
            }
            let opened = MadPort::open(dev, p).and_then(|mp| {
                if let Err(e) = ports.push(mp.clone(), GFP_KERNEL) {
                    mp.close();
                    return Err(e.into());
                }
                if let Err(e) = PORTS.lock().push(mp.clone(), GFP_KERNEL) {
                    return Err(e.into());
                }
                Ok(())
            });
            if let Err(e) = opened {
                let name = dev.name();
                pr_err!(
                    "infiniband {}: Couldn't open port {}\n",
                    BStr::from_bytes(&name),
                    p
                );
                fail = Some(e);
                break;
            }
        }
        if let Some(e) = fail {
            self.remove(dev, ports);
            return Err(e);
        }
        if ports.is_empty() {
            return Err(EOPNOTSUPP);
        }
        Ok(ports)
    }

    fn remove(&self, _dev: &IbDevice, data: Self::Data) {
        for mp in data.iter().rev() {
            {
                let mut all = PORTS.lock();
                if let Some(i) = all.iter().position(|p| Arc::ptr_eq(p, mp)) {
                    let _ = all.remove(i);
                }
            }
            mp.close();
        }
    }
}

// RMPP in the MAD layer's flow (C's `mad_rmpp.c` around `ib_send_rmpp_mad`,
// `ib_process_rmpp_send_wc`, `ib_retry_rmpp` and `ib_process_rmpp_recv_wc`), for agents
// registered for RMPP whose user does not do it itself; the protocol's arithmetic and decisions
// are in [`rmpp`]:
//
// - Sending a DATA message: segment 1 goes first; each segment's send completion posts the
//   next while the receiver's window allows, else the send waits for an ACK (2 s, or the send's
//   timeout if shorter). An ACK moves the window (the retries start again); once every segment
//   is acknowledged the send waits for its response (its timeout) or, without one, completes.
//   Unacknowledged, the segments from the last ACK are sent again (the send's retries), then
//   the send fails with a response timeout. A STOP or ABORT from the receiver ends it with
//   `RemAbortErr`.
// - Receiving a DATA message: segment 1 starts a reassembly (a duplicate continues it), each
//   window of segments in order is acknowledged, the last one completes it and the agent gets
//   the whole message; 40 s after it started an incomplete one is aborted (T2L), and a complete
//   one is kept 10 s more to acknowledge repeated segments. Bad segments are refused with an
//   ABORT carrying C's status.
//
// The sends this makes on its own (ACKs, ABORTs) go out as the port's replies, never seen by
// the agent's handler, as C's internal RMPP sends.

/// How long unregistering an agent waits for its sends on the QP to complete. C waits without
/// limit; a device that stopped completing sends (gone before its driver flushed them) would
/// hold the unregistration, and with it the device's removal, for ever.
const UNREGISTER_SEND_WAIT_MS: i64 = 2000;

/// How long a reassembly may take (C's 40 s "until we can find the packet lifetimes").
const RMPP_RECV_TIMEOUT_MS: i64 = 40_000;
/// How long a complete message is remembered, to acknowledge its repeated segments.
const RMPP_RECV_CLEANUP_MS: i64 = 10_000;

/// Segments a receiver acknowledges at a time: an eighth of the receive queue (C's
/// `window_size`).
fn rmpp_window() -> u32 {
    (port::RECV_QUEUE_SIZE >> 3).max(1)
}

/// An RMPP message being received, or received lately (C's `mad_rmpp_recv`).
struct RmppRecv {
    agent: Arc<MadAgent>,
    tid: u64,
    src_qp: u32,
    slid: u16,
    mgmt_class: u8,
    class_version: u8,
    method: u8,
    /// The first segment, its completion and GRH (the ACKs go back the way it came).
    first: KBox<ReceivedMad>,
    asm: Reassembly,
    /// When it is aborted (under way) or forgotten (complete), in ns since the port opened.
    deadline: i64,
}

impl RmppRecv {
    /// Whether `r`, for `agent`, is a segment of this message (C's `find_rmpp_recv`).
    fn is_for(&self, agent: &MadAgent, r: &ReceivedMad) -> bool {
        core::ptr::eq(&*self.agent, agent)
            && self.tid == get64(&r.mad, hdr::TID)
            && self.src_qp == r.wc.src_qp
            && self.slid == r.wc.slid
            && self.mgmt_class == r.mad[hdr::MGMT_CLASS]
            && self.class_version == r.mad[hdr::CLASS_VERSION]
            && self.method == r.mad[hdr::METHOD]
    }
}

/// What an ACK asks of the receiver's side once the port's lock is dropped.
enum AckThen {
    /// Nothing.
    Nothing,
    /// Acknowledge the ACK of the whole message (C's `ack_ds_ack`).
    DsAck,
    /// Refuse it: it acknowledges segments not sent (S2B).
    TooBig,
}

/// What expiring the reassemblies left to do once the port's lock is dropped.
struct Expired {
    /// The earliest deadline still ahead.
    next: Option<i64>,
    /// ABORTs (T2L) to send, each with the first segment it answers.
    aborts: KVec<(KBox<ReceivedMad>, KBox<Mad>)>,
}

impl MadPort {
    /// The RMPP state of a send by `agent` of `mad` with `data` to `dlid` (C's
    /// `ib_send_rmpp_mad` and `init_newwin`): `None` unless the MAD layer does RMPP for the agent
    /// and the MAD is an active DATA segment; data without one is `EINVAL`.
    fn rmpp_send(
        &self,
        agent: &MadAgent,
        mad: &Mad,
        data: KVec<u8>,
        dlid: u16,
        retries: u32,
        timeout_ms: u32,
    ) -> Result<Option<KBox<rmpp::Sender>>> {
        let active = agent.kernel_rmpp && rmpp::is_active(mad) && mad[rhdr::TYPE] == kind::DATA;
        if !active {
            return if data.is_empty() {
                Ok(None)
            } else {
                Err(EINVAL)
            };
        }
        let seg = Segmenter::new(mad[hdr::MGMT_CLASS], data)?;
        // A response starts with the window its requester announced, if it sent one.
        let mut newwin = 1;
        if mad[hdr::METHOD] & method::RESP != 0 {
            let st = self.state.lock();
            let tid = get64(mad, hdr::TID);
            if let Some(r) = st.rmpp_recvs.iter().find(|r| {
                core::ptr::eq(&*r.agent, agent)
                    && r.tid == tid
                    && r.mgmt_class == mad[hdr::MGMT_CLASS]
                    && r.class_version == mad[hdr::CLASS_VERSION]
                    && r.method & method::RESP == 0
                    && r.slid == dlid
            }) {
                newwin = r.asm.repwin;
            }
        }
        Ok(Some(KBox::new(
            rmpp::Sender::new(seg, newwin, retries, timeout_ms),
            GFP_KERNEL,
        )?))
    }

    /// Posts send `i`; a send that cannot be posted ends with a general error.
    fn post_or_fail(&self, st: &mut PortState, i: usize, notices: &mut KVec<Notice>) {
        if let Some(r) = st.sends.get_mut(i) {
            r.state = SendState::Queued;
        }
        if self.post(st, i).is_err() {
            if let Ok(r) = st.sends.remove(i) {
                finish(r, WcStatus::GeneralErr, notices);
            }
        }
    }

    /// A MAD for `agent`, which the MAD layer does RMPP for (C's `ib_process_rmpp_recv_wc`):
    /// `r` back when it is not an RMPP segment or completes a message (then the whole
    /// message), `None` when RMPP took it.
    fn rmpp_received(
        self: &Arc<Self>,
        agent: &Arc<MadAgent>,
        r: KBox<ReceivedMad>,
    ) -> Option<KBox<ReceivedMad>> {
        if !rmpp::is_active(&r.mad) {
            return Some(r);
        }
        let st = r.mad[rhdr::STATUS];
        if r.mad[rhdr::VERSION] != rmpp::VERSION {
            self.refuse(agent, &r, status::UNV);
            return None;
        }
        match r.mad[rhdr::TYPE] {
            kind::DATA => return self.rmpp_data(agent, r),
            kind::ACK => self.rmpp_ack(agent, &r),
            kind::STOP if st == status::RESX => self.abort_send(agent, &r.mad),
            kind::ABORT if (status::ABORT_MIN..=status::ABORT_MAX).contains(&st) => {
                self.abort_send(agent, &r.mad)
            }
            kind::STOP | kind::ABORT => self.refuse(agent, &r, status::BAD_STATUS),
            _ => self.refuse(agent, &r, status::BADT),
        }
        None
    }

    /// Ends the agent's transfer that `r` is about and answers `r` with an ABORT of `st` (C's
    /// `abort_send` then `nack_recv`).
    fn refuse(self: &Arc<Self>, agent: &Arc<MadAgent>, r: &ReceivedMad, st: u8) {
        self.abort_send(agent, &r.mad);
        self.nack(r, st);
    }

    /// Answers `r` with an ABORT of `st` (C's `nack_recv`).
    fn nack(self: &Arc<Self>, r: &ReceivedMad, st: u8) {
        if let Ok(out) = KBox::new(rmpp::abort(&r.mad, st), GFP_KERNEL) {
            self.send_response(QP1, out, r);
        }
    }

    /// Sends `m` back to where `r` came from.
    fn answer(self: &Arc<Self>, r: &ReceivedMad, m: Mad) {
        if let Ok(out) = KBox::new(m, GFP_KERNEL) {
            self.send_response(QP1, out, r);
        }
    }

    /// The receiver stopped or aborted the agent's RMPP transfer that `m` answers (C's
    /// `abort_send`): it ends with [`WcStatus::RemAbortErr`], unless it is over already.
    fn abort_send(&self, agent: &Arc<MadAgent>, m: &Mad) {
        let mut notices = KVec::new();
        {
            let mut st = self.state.lock();
            let tid = agent::tid(m);
            let found = st.sends.iter().position(|s| {
                s.agent.as_ref().is_some_and(|a| Arc::ptr_eq(a, agent))
                    && s.tid == tid
                    && s.mgmt_class == m[hdr::MGMT_CLASS]
                    && !s.cancelled
                    && !s.flushed
                    && s.rmpp.as_ref().is_some_and(|x| !x.acknowledged())
            });
            let Some(i) = found else {
                return;
            };
            match st.sends.get_mut(i) {
                Some(s) if matches!(s.state, SendState::Posted(_)) => s.aborted = true,
                Some(_) => {
                    if let Ok(s) = st.sends.remove(i) {
                        finish(s, WcStatus::RemAbortErr, &mut notices);
                    }
                }
                None => {}
            }
        }
        deliver(notices);
    }

    /// An ACK for the agent (C's `process_rmpp_ack`).
    fn rmpp_ack(self: &Arc<Self>, agent: &Arc<MadAgent>, r: &ReceivedMad) {
        if r.mad[rhdr::STATUS] != 0 {
            return self.refuse(agent, r, status::BAD_STATUS);
        }
        let seg = rmpp::seg_num(&r.mad);
        let newwin = rmpp::paylen_newwin(&r.mad);
        // As C's `int`s (see `Reassembly::segment`).
        if (newwin as i32) < seg as i32 {
            return self.refuse(agent, r, status::W2S);
        }
        let mut notices = KVec::new();
        let then = {
            let mut st = self.state.lock();
            let tid = agent::tid(&r.mad);
            let found = st.sends.iter().position(|s| {
                s.agent.as_ref().is_some_and(|a| Arc::ptr_eq(a, agent))
                    && s.tid == tid
                    && s.mgmt_class == r.mad[hdr::MGMT_CLASS]
                    && s.rmpp.is_some()
            });
            match found {
                None => {
                    // Unmatched, or the requester's ACK of our whole answer: its window.
                    if seg == 0 {
                        if let Some(x) = st
                            .rmpp_recvs
                            .iter_mut()
                            .find(|x| x.asm.is_complete() && x.is_for(agent, r))
                        {
                            x.asm.repwin = newwin;
                        }
                    }
                    AckThen::Nothing
                }
                Some(i) => self.ack_send(&mut st, i, seg, newwin, &mut notices),
            }
        };
        deliver(notices);
        match then {
            AckThen::Nothing => {}
            AckThen::DsAck => self.answer(r, rmpp::ds_ack(&r.mad)),
            AckThen::TooBig => self.refuse(agent, r, status::S2B),
        }
    }

    /// Applies an ACK of segments up to `seg`, window `newwin`, to send `i`.
    fn ack_send(
        &self,
        st: &mut PortState,
        i: usize,
        seg: u32,
        newwin: u32,
        notices: &mut KVec<Notice>,
    ) -> AckThen {
        let Some(s) = st.sends.get_mut(i) else {
            return AckThen::Nothing;
        };
        let waiting = matches!(s.state, SendState::Waiting(_));
        let live = !s.cancelled && !s.flushed && !s.aborted;
        let timeout_ms = s.timeout_ms;
        let Some(m) = s.rmpp.as_mut() else {
            return AckThen::Nothing;
        };
        let (retries_reset, then) = match m.on_ack(seg, newwin, live, waiting) {
            AckEffect::Ignore => return AckThen::Nothing,
            AckEffect::DsAck => return AckThen::DsAck,
            AckEffect::TooBig => return AckThen::TooBig,
            AckEffect::Moved {
                retries_reset,
                then,
            } => (retries_reset, then),
        };
        if retries_reset {
            s.retries_left = m.max_retries;
        }
        match then {
            AfterAck::Wait => AckThen::Nothing,
            AfterAck::Post => {
                self.post_or_fail(st, i, notices);
                AckThen::Nothing
            }
            AfterAck::Done => {
                // Nothing to wait for: the ACK completes the send (at its send completion if a
                // segment is still on the queue).
                if waiting {
                    if let Ok(s) = st.sends.remove(i) {
                        finish(s, WcStatus::Success, notices);
                    }
                }
                AckThen::Nothing
            }
            AfterAck::AwaitResponse => {
                if waiting {
                    let deadline =
                        self.now_ns() + Delta::from_millis(i64::from(timeout_ms)).as_nanos();
                    s.state = SendState::Waiting(deadline);
                    self.arm(st, deadline);
                }
                AckThen::DsAck
            }
        }
    }

    /// A DATA segment for the agent (C's `process_rmpp_data`, `start_rmpp`, `continue_rmpp`).
    fn rmpp_data(
        self: &Arc<Self>,
        agent: &Arc<MadAgent>,
        r: KBox<ReceivedMad>,
    ) -> Option<KBox<ReceivedMad>> {
        if r.mad[rhdr::STATUS] != 0 {
            self.nack(&r, status::BAD_STATUS);
            return None;
        }
        if agent::is_response(&r.mad) && !self.awaits(agent, &r.mad) {
            // A response to nothing the agent asked (C's `is_kernel_rmpp_data_response`).
            return None;
        }
        let first = rmpp::flags(&r.mad) & flag::FIRST != 0;
        if (rmpp::seg_num(&r.mad) == 1) != first {
            self.nack(&r, status::BAD_SEG);
            return None;
        }
        let now = self.now_ns();
        let (ack, done) = {
            let mut st = self.state.lock();
            let out = match st.rmpp_recvs.iter_mut().find(|x| x.is_for(agent, &r)) {
                // A repeated first segment continues the message.
                Some(x) => continue_with(x, &r, now),
                None if first => {
                    let (asm, step) = Reassembly::start(&r.mad, rmpp_window());
                    let copy = ReceivedMad::single(r.mad, r.wc, r.grh);
                    match KBox::new(copy, GFP_KERNEL) {
                        Ok(first_seg) => {
                            let mut x = RmppRecv {
                                agent: agent.clone(),
                                tid: get64(&r.mad, hdr::TID),
                                src_qp: r.wc.src_qp,
                                slid: r.wc.slid,
                                mgmt_class: r.mad[hdr::MGMT_CLASS],
                                class_version: r.mad[hdr::CLASS_VERSION],
                                method: r.mad[hdr::METHOD],
                                first: first_seg,
                                asm,
                                deadline: now + ms_ns(RMPP_RECV_TIMEOUT_MS),
                            };
                            let out = after(&mut x, &r, step, now);
                            let deadline = x.deadline;
                            if st.rmpp_recvs.push(x, GFP_KERNEL).is_ok() {
                                self.arm(&mut st, deadline);
                                out
                            } else {
                                (None, None)
                            }
                        }
                        Err(_) => (None, None),
                    }
                }
                None => (None, None),
            };
            if out.1.is_some() {
                // Kept a while to acknowledge repeated segments.
                self.arm(&mut st, now + ms_ns(RMPP_RECV_CLEANUP_MS));
            }
            out
        };
        if let Some(a) = ack {
            self.answer(&r, a);
        }
        done
    }

    /// Whether one of `agent`'s sends waits for `m` as its response (C's `ib_find_send_mad`).
    fn awaits(&self, agent: &Arc<MadAgent>, m: &Mad) -> bool {
        let tid = agent::tid(m);
        self.state.lock().sends.iter().any(|s| {
            s.agent.as_ref().is_some_and(|a| Arc::ptr_eq(a, agent))
                && s.tid == tid
                && s.mgmt_class == m[hdr::MGMT_CLASS]
                && awaits_response(s.timeout_ms, s.answered, s.cancelled, s.state)
        })
    }

    /// Drops the reassemblies past their deadline at `now` (C's `recv_timeout_handler` and
    /// `recv_cleanup_handler`): an incomplete one is answered with an ABORT (T2L).
    fn expire_rmpp_recvs(&self, st: &mut PortState, now: i64) -> Expired {
        let mut out = Expired {
            next: None,
            aborts: KVec::new(),
        };
        let mut i = 0;
        while let Some(x) = st.rmpp_recvs.get(i) {
            if x.deadline > now {
                out.next = Some(out.next.map_or(x.deadline, |n: i64| n.min(x.deadline)));
                i += 1;
                continue;
            }
            if let Ok(x) = st.rmpp_recvs.remove(i) {
                if !x.asm.is_complete() {
                    if let Ok(a) = KBox::new(rmpp::abort(&x.first.mad, status::T2L), GFP_KERNEL) {
                        let _ = out.aborts.push((x.first, a), GFP_KERNEL);
                    }
                }
            }
        }
        out
    }
}

/// Milliseconds in nanoseconds.
fn ms_ns(n: i64) -> i64 {
    Delta::from_millis(n).as_nanos()
}

/// Takes segment `r` into the message `x`: the ACK to send and the whole message, if any.
fn continue_with(
    x: &mut RmppRecv,
    r: &ReceivedMad,
    now: i64,
) -> (Option<Mad>, Option<KBox<ReceivedMad>>) {
    match x.asm.segment(&r.mad, rmpp_window()) {
        Ok(step) => after(x, r, step, now),
        Err(_) => (None, None),
    }
}

/// What `step` means for the message `x` whose segment `r` came: an ACK, and at the end the
/// whole message for the agent (then `x` is kept a while to acknowledge repeats).
fn after(
    x: &mut RmppRecv,
    r: &ReceivedMad,
    step: Step,
    now: i64,
) -> (Option<Mad>, Option<KBox<ReceivedMad>>) {
    match step {
        Step::Drop => (None, None),
        Step::Ack => (Some(x.asm.ack(&r.mad)), None),
        Step::Complete => {
            let ack = x.asm.ack(&r.mad);
            x.deadline = now + ms_ns(RMPP_RECV_CLEANUP_MS);
            let mut whole = ReceivedMad::single(x.first.mad, x.first.wc, x.first.grh);
            whole.rmpp_data = x.asm.take_more();
            whole.mad_len = x.asm.mad_len();
            (Some(ack), KBox::new(whole, GFP_KERNEL).ok())
        }
    }
}

#[kernel::macros::kunit_tests(rdma_rs_ib_mad)]
mod tests {
    use super::*;
    use crate::mad::{
        agent::AgentKey,
        types::{get16, put16, put64},
    };
    use core::cell::Cell;

    /// The `hardening-mad-wire` scenario's `mad CLASS VERSION METHOD ATTR BASE HOP_PTR HOP_CNT
    /// STATUS LEN`: the common header (TID 0x1234 + LEN), then 0x5a bytes, as the port copies
    /// a datagram of LEN bytes out of its receive slot (the rest zero).
    #[allow(clippy::too_many_arguments)]
    fn wire(
        c: u8,
        v: u8,
        m: u8,
        attr: u16,
        base: u8,
        ptr: u8,
        cnt: u8,
        st: u16,
        len: usize,
    ) -> Mad {
        let mut full = [0x5au8; MAD_SIZE];
        full[hdr::BASE_VERSION] = base;
        full[hdr::MGMT_CLASS] = c;
        full[hdr::CLASS_VERSION] = v;
        full[hdr::METHOD] = m;
        put16(&mut full, hdr::STATUS, st);
        full[hdr::HOP_PTR] = ptr;
        full[hdr::HOP_CNT] = cnt;
        put64(&mut full, hdr::TID, 0x1234 + len as u64);
        put16(&mut full, hdr::ATTR_ID, attr);
        full[18..24].fill(0);
        let mut got = [0u8; MAD_SIZE];
        let n = port::recv_len((GRH_SIZE + len) as u32) - GRH_SIZE;
        got[..n].copy_from_slice(&full[..n]);
        got
    }

    /// The agents of a port the scenario attacks: umad's perfquery (send only, prefix 0), a
    /// PMA-like agent (class 4 version 1, Get and Set, prefix 1), smpquery (send only on QP0,
    /// prefix 2).
    fn agents() -> [AgentKey; 3] {
        let mut pma = agent::MadRegReq {
            mgmt_class: class::PERF_MGMT,
            class_version: 1,
            ..Default::default()
        };
        pma.method_mask[0] = (1 << method::GET) | (1 << method::SET);
        [
            AgentKey {
                qp_type: QpType::Gsi,
                hi_tid: 0,
                reg: None,
            },
            AgentKey {
                qp_type: QpType::Gsi,
                hi_tid: 1,
                reg: Some(pma),
            },
            AgentKey {
                qp_type: QpType::Smi,
                hi_tid: 2,
                reg: None,
            },
        ]
    }

    /// [`dispatch`] of `m` on port 1 of 1 with a driver answering `ret` and [`agents`].
    fn run(mut m: Mad, qp_type: QpType, ret: Option<u32>) -> Recv<usize> {
        let keys = agents();
        let driver = ret.map(|r| move |_: &Mad| r);
        dispatch(&mut m, qp_type, 1, 1, driver, |m| {
            agent::recipient(keys.iter(), qp_type, m)
        })
    }

    #[test]
    fn received_lengths_are_bounded_by_the_slot() {
        // The GRH area comes first: a datagram of N bytes completes with 40 + N.
        assert_eq!(port::recv_len(0), 0);
        assert_eq!(port::recv_len(41), 41);
        assert_eq!(port::recv_len(296), 296);
        assert_eq!(port::recv_len(297), 296);
        assert_eq!(port::recv_len(u32::MAX), 296);
        // A 23-byte datagram: its bytes, then zeros (never the slot's earlier contents).
        let m = wire(0x0a, 1, 1, 0x10, 1, 0, 0, 0, 23);
        assert_eq!((m[hdr::METHOD], m[22], m[23], m[24]), (1, 0, 0, 0));
        let m = wire(0x0a, 1, 1, 0x10, 1, 0, 0, 0, 100);
        assert_eq!((m[99], m[100]), (0x5a, 0));
    }

    /// The decode-level cases of the `hardening-mad-wire` scenario (the driver lets every MAD
    /// through: `process_mad` answers SUCCESS alone).
    #[test]
    fn the_wire_attacks_are_dropped_or_answered_as_c() {
        let ok = Some(result::SUCCESS);
        let (gsi, smi) = (QpType::Gsi, QpType::Smi);
        // QP1: base versions 0, 2, 255: dropped.
        for base in [0, 2, 255] {
            assert_eq!(
                run(wire(4, 1, 1, 0x12, base, 0, 0, 0, 256), gsi, ok),
                Recv::Drop
            );
        }
        // A PMA class version nobody registered: the Get is answered "unsupported".
        assert_eq!(
            run(wire(4, 9, 1, 0x12, 1, 0, 0, 0, 256), gsi, ok),
            Recv::Unmatched
        );
        // And version 1 goes to its owner.
        assert_eq!(
            run(wire(4, 1, 1, 0x12, 1, 0, 0, 0, 256), gsi, ok),
            Recv::Agent(1)
        );
        // A method nobody owns, neither Get nor Set: dropped unanswered.
        assert_eq!(
            run(wire(4, 1, 0x7f, 0x12, 1, 0, 0, 0, 256), gsi, ok),
            Recv::Drop
        );
        // Vendor Gets of 1 byte (class 0, method 0: dropped), 23, 24, 100 (unsupported).
        assert_eq!(
            run(wire(0x0a, 1, 1, 0x10, 1, 0, 0, 0, 1), gsi, ok),
            Recv::Drop
        );
        for len in [23, 24, 100] {
            let m = wire(0x0a, 1, 1, 0x10, 1, 0, 0, 0, len);
            assert_eq!(run(m, gsi, ok), Recv::Unmatched);
        }
        // An unsolicited PMA GetResp: to the agent of TID prefix 0 (which no send of it
        // awaits: `awaits_response` drops it there); with prefix 5, to nobody.
        let resp = wire(4, 1, 0x81, 0x12, 1, 0, 0, 0, 256);
        assert_eq!(run(resp, gsi, ok), Recv::Agent(0));
        let mut stray = resp;
        put64(&mut stray, hdr::TID, 5 << 32);
        assert_eq!(run(stray, gsi, ok), Recv::Drop);
        // QP0: directed routes the SMI rules refuse, a header-only SMP, one byte: dropped.
        for (ptr, cnt) in [(0, 200), (1, 64), (70, 3)] {
            let m = wire(0x81, 1, 1, 0x11, 1, ptr, cnt, 0, 256);
            assert_eq!(run(m, smi, ok), Recv::Drop);
        }
        assert_eq!(
            run(wire(0x81, 1, 1, 0x11, 1, 0, 0, 0, 24), smi, ok),
            Recv::Drop
        );
        assert_eq!(
            run(wire(0x01, 1, 1, 0x11, 1, 0, 0, 0, 1), smi, ok),
            Recv::Drop
        );
        // The return bit with pointer 0 is for the local agent: the Get is answered.
        let m = wire(0x81, 1, 1, 0x11, 1, 0, 2, 0x8000, 256);
        assert_eq!(run(m, smi, ok), Recv::Unmatched);
        // An unsolicited SMP GetResp: prefix 0 is a QP1 agent's, so nobody's on QP0.
        let m = wire(0x01, 1, 0x81, 0x11, 1, 0, 0, 0, 256);
        assert_eq!(run(m, smi, ok), Recv::Drop);
        let mut m = m;
        put64(&mut m, hdr::TID, 2 << 32);
        assert_eq!(run(m, smi, ok), Recv::Agent(2));
        // An SMP on QP1, a PMA MAD on QP0: dropped before the driver sees them.
        let seen = Cell::new(false);
        let mut m = wire(0x01, 1, 1, 0x11, 1, 0, 0, 0, 256);
        let driver = Some(|_: &Mad| {
            seen.set(true);
            result::SUCCESS
        });
        assert_eq!(dispatch(&mut m, gsi, 1, 1, driver, |_| Some(0)), Recv::Drop);
        assert!(!seen.get());
    }

    #[test]
    fn the_driver_has_the_first_refusal() {
        let (gsi, smi) = (QpType::Gsi, QpType::Smi);
        let get = wire(4, 1, 1, 0x12, 1, 0, 0, 0, 256);
        let nobodys = wire(4, 9, 1, 0x12, 1, 0, 0, 0, 256);
        // Consumed: nothing else happens; a reply: it goes back, the agents are not asked.
        let consumed = Some(result::SUCCESS | result::CONSUMED);
        assert_eq!(run(get, gsi, consumed), Recv::Drop);
        let reply = Some(result::SUCCESS | result::REPLY);
        assert_eq!(run(get, gsi, reply), Recv::DriverReply);
        assert_eq!(run(nobodys, gsi, reply), Recv::DriverReply);
        // Consumed wins over a reply.
        let both = Some(result::SUCCESS | result::CONSUMED | result::REPLY);
        assert_eq!(run(get, gsi, both), Recv::Drop);
        // Without SUCCESS the bits mean nothing: on to the agents, and no "unsupported".
        let failed = Some(result::REPLY | result::CONSUMED);
        assert_eq!(run(get, gsi, failed), Recv::Agent(1));
        assert_eq!(run(nobodys, gsi, failed), Recv::Drop);
        assert_eq!(run(nobodys, gsi, Some(result::FAILURE)), Recv::Drop);
        // A device without `process_mad`: C's result stays SUCCESS, so the agents get their
        // MADs and a Get nobody takes is answered.
        assert_eq!(run(get, gsi, None), Recv::Agent(1));
        assert_eq!(run(nobodys, gsi, None), Recv::Unmatched);
        let send = wire(4, 9, method::SEND, 0x12, 1, 0, 0, 0, 256);
        assert_eq!(run(send, gsi, None), Recv::Drop);
        // A Set nobody takes is answered too; a Send, a Trap are not.
        for (meth, want) in [
            (method::SET, Recv::Unmatched),
            (method::SEND, Recv::Drop),
            (method::TRAP, Recv::Drop),
        ] {
            let m = wire(4, 9, meth, 0x12, 1, 0, 0, 0, 256);
            assert_eq!(run(m, gsi, Some(result::SUCCESS)), want);
        }
        // CM: a Get of an attribute other than ClassPortInfo is dropped before the driver.
        let cm = wire(class::CM, 2, 1, 0x10, 1, 0, 0, 0, 256);
        assert_eq!(
            run(cm, gsi, Some(result::SUCCESS | result::REPLY)),
            Recv::Drop
        );
        let cpi = wire(class::CM, 2, 1, 0x01, 1, 0, 0, 0, 256);
        assert_eq!(
            run(cpi, gsi, Some(result::SUCCESS | result::REPLY)),
            Recv::DriverReply
        );
        // The driver sees a directed-route SMP after the hop rules moved its pointer.
        let mut m = wire(0x81, 1, 1, 0x11, 1, 1, 1, 0, 256);
        put16(&mut m, 34, smi::LID_PERMISSIVE);
        let ptr = Cell::new(0);
        let driver = Some(|m: &Mad| {
            ptr.set(m[hdr::HOP_PTR]);
            result::SUCCESS | result::REPLY
        });
        assert_eq!(
            dispatch(&mut m, smi, 1, 1, driver, |_| None::<usize>),
            Recv::DriverReply
        );
        assert_eq!(ptr.get(), 2);
        assert_eq!(get16(&m, hdr::STATUS), 0);
    }

    #[test]
    fn only_a_send_with_a_timeout_takes_a_response() {
        let posted = SendState::Posted(3);
        let waiting = SendState::Waiting(1000);
        assert!(awaits_response(1000, false, false, waiting));
        // An early response: the send is still on the send queue.
        assert!(awaits_response(1000, false, false, posted));
        // A send without timeout (a response itself) takes none.
        assert!(!awaits_response(0, false, false, posted));
        assert!(!awaits_response(0, false, false, waiting));
        assert!(!awaits_response(1000, true, false, posted));
        assert!(!awaits_response(1000, false, true, waiting));
        assert!(!awaits_response(1000, false, false, SendState::Queued));
    }
}
