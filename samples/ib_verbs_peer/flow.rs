// SPDX-License-Identifier: GPL-2.0

//! Messages that keep flowing, for faults during traffic (the C twin's "flow" section): an RC
//! QP looped back to itself with [`SLOTS`] sends and [`SLOTS`] receives of [`LEN`] bytes always
//! posted; the CQ's completion handler (the driver's interrupt context) polls and re-posts each
//! slot whose request completed successfully, and re-arms. It is driven through the debugfs file
//! `ib_verbs_peer/<device>/flow`: write `start` or `stop`; read `flow: <state>; messages N`.
//!
//! The flow ends when a completion fails or a re-post is refused (the device failed), or on
//! `stop` (or the device or the module going away), which moves the QP to the error state so that
//! the device flushes what is outstanding. Once nothing is outstanding it logs one line: every
//! slot must have ended exactly once (flushed, its re-post refused, or not re-posted because of
//! the stop), with no other error; after a failure, a new send must be refused. A device event
//! handler logs `DEVICE_FATAL`.

use ib_core::{
    device::events::EventType,
    device::{DeviceEventRegistration, IbDevice},
    verbs::dma_buffer::DmaBuffer,
    verbs::wr::{send_flags, RecvWr, SendOpcode, SendWr, Sge, WcStatus, WorkCompletion},
    verbs::{
        Access, Cq, CqInit, Mr, Pd, Qp, QpAttr, QpAttrField as F, QpCap, QpInit, QpState, QpType,
    },
};
use kernel::{
    fmt, new_mutex, new_spinlock_irq,
    owned_workqueue::{Flags, OwnedQueue},
    prelude::*,
    str::{BStr, CString},
    sync::{Arc, Mutex, SpinLockIrq},
    time::{delay::fsleep, Delta},
    uaccess::UserSliceReader,
    workqueue::{Work, WorkItem},
};

/// Sends (and receives) kept posted.
pub(crate) const SLOTS: usize = 16;
/// Bytes per message.
const LEN: u32 = 64;
/// `wr_id` of a receive: its slot plus this.
const RECV: u64 = 1 << 32;
/// Completions the completion handler takes at most; past that it leaves the rest to a work
/// item (as C's `ib_alloc_cq` contexts move polling out of the interrupt), so that a flow the
/// CPU cannot keep up with does not keep it in hard-IRQ context.
const IRQ_BUDGET: usize = 64;
/// Completions the work item takes per pass.
const WORK_BUDGET: usize = 256;

/// What the flow counts (under the handler's lock).
#[derive(Default)]
struct Counts {
    /// Successful receives: messages moved.
    messages: u64,
    /// Per queue (0 send, 1 receive): completions flushed, re-posts refused, slots not
    /// re-posted because of a stop.
    flushed: [usize; 2],
    refused: [usize; 2],
    left: [usize; 2],
    /// Completions with another error, or the wrong length.
    other: usize,
    /// The errno of the first refused re-post.
    err: i32,
    /// Outstanding requests per queue.
    outstanding: [usize; 2],
}

/// What the handler works with.
struct Live {
    cq: Arc<Cq>,
    qp: Arc<Qp>,
    tx: Sge,
    rx: Sge,
    c: Counts,
    /// A completion failed or a re-post was refused.
    failed: bool,
    /// `stop` was asked.
    stopping: bool,
    /// The end line was logged.
    reported: bool,
}

/// The state shared with the completion handler and the work item.
#[pin_data]
pub(crate) struct Shared {
    name: CString,
    #[pin]
    live: SpinLockIrq<Option<Live>>,
    /// Continues polling in process context when the handler spent its budget.
    #[pin]
    work: Work<Shared>,
}

kernel::impl_has_work! {
    impl HasWork<Self> for Shared { self.work }
}

/// What one polling pass left.
#[derive(PartialEq, Eq)]
enum Pass {
    /// The CQ was empty and is armed again.
    Armed,
    /// The budget was spent: completions may be left, the CQ is not armed.
    More,
    /// No flow (stopped, or armed failed).
    Idle,
}

impl Shared {
    /// One polling pass of at most `budget` completions: counts, re-posts, re-arms once the CQ
    /// is empty; logs the end once nothing is outstanding after a failure or a stop. Atomic
    /// context is fine.
    fn pass(&self, budget: usize) -> Pass {
        let mut guard = self.live.lock();
        let Some(l) = (*guard).as_mut() else {
            return Pass::Idle;
        };
        let mut wc = [WorkCompletion::default(); 16];
        let mut taken = 0;
        let outcome = loop {
            if taken >= budget {
                break Pass::More;
            }
            let n = match l.cq.poll(&mut wc) {
                Ok(0) => {
                    // Arm, then poll once more: a completion may have come in between.
                    if l.cq.req_notify(false).is_err() {
                        break Pass::Idle;
                    }
                    match l.cq.poll(&mut wc) {
                        Ok(0) => break Pass::Armed,
                        Err(_) => break Pass::Idle,
                        Ok(n) => n,
                    }
                }
                Ok(n) => n,
                Err(_) => break Pass::Idle,
            };
            taken += n;
            for w in &wc[..n] {
                l.complete(w);
            }
        };
        l.report_end(&self.name);
        outcome
    }

    /// Passes in process context, with a short sleep in between, until the CQ is empty and
    /// armed again (or there is no flow).
    fn poll_until_armed(&self) {
        while self.pass(WORK_BUDGET) == Pass::More {
            fsleep(Delta::from_micros(100));
        }
    }
}

impl WorkItem for Shared {
    type Pointer = Arc<Shared>;

    /// See [`Shared::poll_until_armed`].
    fn run(this: Arc<Shared>) {
        this.poll_until_armed();
    }
}

impl Live {
    /// One completion: count it and re-post its slot while the flow runs.
    fn complete(&mut self, w: &WorkCompletion) {
        let q = usize::from(w.wr_id >= RECV);
        let slot = (w.wr_id & 0xffff_ffff) as usize;
        if slot >= SLOTS || self.c.outstanding[q] == 0 {
            self.c.other += 1;
            return;
        }
        self.c.outstanding[q] -= 1;
        if w.status == WcStatus::WrFlushErr {
            self.c.flushed[q] += 1;
            self.failed = true;
            return;
        }
        if w.status != WcStatus::Success || (q == 1 && w.byte_len != LEN) {
            self.c.other += 1;
            self.failed = true;
            return;
        }
        if q == 1 {
            self.c.messages += 1;
        }
        if self.failed || self.stopping {
            self.c.left[q] += 1;
            return;
        }
        match self.post(q, slot) {
            Ok(()) => self.c.outstanding[q] += 1,
            Err(e) => {
                self.c.refused[q] += 1;
                if !self.failed {
                    self.c.err = e.to_errno();
                }
                self.failed = true;
            }
        }
    }

    /// Posts the request of `slot` on queue `q` (0 send, 1 receive).
    fn post(&self, q: usize, slot: usize) -> Result {
        let off = (slot as u64) * u64::from(LEN);
        if q == 1 {
            let sge = [Sge {
                addr: self.rx.addr + off,
                ..self.rx
            }];
            self.qp.post_recv(&[RecvWr {
                wr_id: RECV + slot as u64,
                sg_list: &sge,
            }])?;
        } else {
            let sge = [Sge {
                addr: self.tx.addr + off,
                ..self.tx
            }];
            self.qp.post_send(&[SendWr {
                wr_id: slot as u64,
                opcode: SendOpcode::Send,
                sg_list: &sge,
                send_flags: send_flags::SIGNALED,
                ..SendWr::default()
            }])?;
        }
        Ok(())
    }

    /// Logs the end once nothing is outstanding after a failure or a stop.
    fn report_end(&mut self, name: &CStr) {
        if self.reported || !(self.failed || self.stopping) || self.c.outstanding != [0, 0] {
            return;
        }
        self.reported = true;
        let c = &self.c;
        let once = (0..2).all(|q| c.flushed[q] + c.refused[q] + c.left[q] == SLOTS);
        let how = if self.stopping { "stopped" } else { "ended" };
        let name = BStr::from_bytes(name.to_bytes());
        pr_info!(
            "{name}: flow: {how} after {} messages: {}, {} other error(s)\n",
            c.messages,
            if once {
                "each of the 16 send and 16 receive slots ended exactly once (flushed, refused or left)"
            } else {
                "MISMATCH: a slot did not end exactly once"
            },
            c.other
        );
        pr_info!(
            "{name}: flow: slots: sends {} flushed {} refused {} left; receives {} flushed {} refused {} left; first refusal err {}\n",
            c.flushed[0],
            c.refused[0],
            c.left[0],
            c.flushed[1],
            c.refused[1],
            c.left[1],
            c.err
        );
        if !self.stopping {
            // After a failure the device takes no new work.
            let err = match self.post(0, 0) {
                Ok(()) => {
                    self.c.outstanding[0] += 1;
                    0
                }
                Err(e) => e.to_errno(),
            };
            pr_info!("{name}: flow: a new send after the failure: err {err}\n");
        }
    }
}

/// A running flow's objects; the queue goes last (destroying it waits for the work item).
struct Running {
    shared: Arc<Shared>,
    qp: Arc<Qp>,
    _mr: Arc<Mr>,
    _buf: DmaBuffer,
    _fatal: DeviceEventRegistration,
    _queue: Arc<OwnedQueue>,
}

/// The `flow` file's data: the device and its flow, if any.
#[pin_data(PinnedDrop)]
pub(crate) struct FlowCtl {
    dev: Arc<IbDevice>,
    name: CString,
    #[pin]
    running: Mutex<Option<Running>>,
}

impl FlowCtl {
    /// No flow yet on `dev`.
    pub(crate) fn new(dev: &Arc<IbDevice>) -> Result<impl PinInit<Self, Error>> {
        let name = CString::try_from_fmt(fmt!("{}", BStr::from_bytes(&dev.name())))?;
        let dev = dev.clone();
        Ok(try_pin_init!(FlowCtl {
            dev,
            name,
            running <- new_mutex!(None),
        }? Error))
    }

    /// Starts the flow (`EBUSY` while one runs or has not been stopped).
    fn start(&self) -> Result {
        let mut running = self.running.lock();
        if running.is_some() {
            return Err(EBUSY);
        }
        let dev = &self.dev;
        let lid = u16::try_from(dev.query_port(1)?.lid).map_err(|_| EINVAL)?;
        let pd = Pd::alloc(dev, ib_core::kern_name!())?;
        let shared_name =
            CString::try_from_fmt(fmt!("{}", BStr::from_bytes(self.name.to_bytes())))?;
        let shared = Arc::pin_init(
            try_pin_init!(Shared {
                name: shared_name,
                live <- new_spinlock_irq!(None),
                work <- kernel::new_work!("ib_verbs_peer::flow::Shared::work"),
            }? Error),
            GFP_KERNEL,
        )?;
        let queue = Arc::new(
            OwnedQueue::new(c"ib_verbs_peer_flow", Flags::UNBOUND, 1)?,
            GFP_KERNEL,
        )?;
        let (s, q) = (shared.clone(), queue.clone());
        let on_completion = move || {
            if s.pass(IRQ_BUDGET) == Pass::More {
                // Already queued is fine: the queued run polls.
                let _ = q.enqueue(s.clone());
            }
        };
        let cq = Cq::create(
            dev,
            &CqInit {
                cqe: 2 * SLOTS as u32 + 8,
                comp_vector: 0,
                flags: 0,
            },
            Some(KBox::new(on_completion, GFP_KERNEL)?),
            ib_core::kern_name!(),
        )?;
        let qp = Qp::create(
            &pd,
            QpInit {
                qp_type: QpType::Rc,
                send_cq: cq.clone(),
                recv_cq: cq.clone(),
                cap: QpCap {
                    max_send_wr: SLOTS as u32 + 1,
                    max_recv_wr: SLOTS as u32,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                sq_sig_all: false,
                kern_name: ib_core::kern_name!(),
                srq: None,
                event_handler: None,
                port_num: 0,
            },
        )?;
        let mr = Mr::get_dma_mr(&pd, Access::LocalWrite.into())?;
        let buf = DmaBuffer::alloc(dev, 2 * SLOTS * LEN as usize)?;
        super::env::connect_rc(&qp, lid, qp.qp_num(), Access::LocalWrite.into(), 7)?;
        let name = CString::try_from_fmt(fmt!("{}", BStr::from_bytes(self.name.to_bytes())))?;
        let fatal = DeviceEventRegistration::new(
            dev,
            KBox::new(
                move |event: EventType, port: u32| {
                    if event == EventType::DeviceFatal {
                        pr_info!("{}: flow: event DEVICE_FATAL on port {port}\n", &*name);
                    }
                },
                GFP_KERNEL,
            )?,
        )?;
        let mut live = Live {
            cq: cq.clone(),
            qp: qp.clone(),
            tx: buf.sge(0, LEN, mr.lkey())?,
            rx: buf.sge(SLOTS * LEN as usize, LEN, mr.lkey())?,
            c: Counts::default(),
            failed: false,
            stopping: false,
            reported: false,
        };
        // Receives first, then the sends; the handler sees the flow only once all are posted.
        let mut posted = Ok(());
        for q in [1, 0] {
            for slot in 0..SLOTS {
                posted = live.post(q, slot);
                if posted.is_err() {
                    break;
                }
                live.c.outstanding[q] += 1;
            }
        }
        let qpn = qp.qp_num();
        let outstanding = live.c.outstanding;
        *shared.live.lock() = Some(live);
        *running = Some(Running {
            shared: shared.clone(),
            qp,
            _mr: mr,
            _buf: buf,
            _fatal: fatal,
            _queue: queue,
        });
        drop(running);
        // A completion may have come before the handler could see the flow.
        shared.poll_until_armed();
        if let Err(e) = posted {
            self.stop();
            return Err(e);
        }
        pr_info!(
            "{}: flow: started on rc qp {qpn:#x} looped back: {} sends and {} receives of {LEN} bytes kept posted, re-posted from the completion handler\n",
            BStr::from_bytes(self.name.to_bytes()),
            outstanding[0],
            outstanding[1]
        );
        Ok(())
    }

    /// Stops the flow, if any: the QP to the error state, everything outstanding back (5 s at
    /// most), then the objects freed.
    fn stop(&self) {
        let Some(r) = self.running.lock().take() else {
            return;
        };
        if let Some(l) = (*r.shared.live.lock()).as_mut() {
            l.stopping = true;
        }
        let err = QpAttr {
            qp_state: QpState::Err,
            ..QpAttr::default()
        };
        // On a dead device this may fail: the driver then flushes in software.
        let _ = r.qp.modify(&err, F::State.into());
        for _ in 0..50 {
            r.shared.poll_until_armed();
            let done = match r.shared.live.lock().as_ref() {
                Some(l) => l.reported,
                None => true,
            };
            if done {
                break;
            }
            fsleep(Delta::from_millis(100));
        }
        let live = r.shared.live.lock().take();
        if let Some(l) = &live {
            if !l.reported {
                pr_info!(
                    "{}: flow: stopped with {} send(s) and {} receive(s) still outstanding after 5 s\n",
                    BStr::from_bytes(self.name.to_bytes()),
                    l.c.outstanding[0],
                    l.c.outstanding[1]
                );
            }
        }
        // The handler's references go first (it sees `None` from now on), then the objects.
        drop(live);
        drop(r);
    }

    /// The `flow` line.
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let running = self.running.lock();
        let Some(r) = running.as_ref() else {
            return writeln!(f, "flow: idle");
        };
        let live = r.shared.live.lock();
        let Some(l) = live.as_ref() else {
            return writeln!(f, "flow: idle");
        };
        let state = if l.reported {
            "ended"
        } else if l.failed || l.stopping {
            "ending"
        } else {
            "running"
        };
        writeln!(f, "flow: {state}; messages {}", l.c.messages)
    }
}

#[pinned_drop]
impl PinnedDrop for FlowCtl {
    fn drop(self: Pin<&mut Self>) {
        self.stop();
    }
}

/// Reading `flow`.
pub(crate) fn flow_read(ctl: &FlowCtl, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    ctl.describe(f)
}

/// Writing `flow`: `start` or `stop`.
pub(crate) fn flow_write(ctl: &FlowCtl, reader: &mut UserSliceReader) -> Result {
    let mut buf = [0u8; 16];
    let n = reader.len();
    if n >= buf.len() {
        return Err(EINVAL);
    }
    reader.read_slice(&mut buf[..n])?;
    let r = match core::str::from_utf8(&buf[..n]).map_err(|_| EINVAL)?.trim() {
        "start" => ctl.start(),
        "stop" => {
            ctl.stop();
            Ok(())
        }
        _ => Err(EINVAL),
    };
    r.inspect_err(|e| {
        pr_info!(
            "{}: flow: command failed: err {}\n",
            BStr::from_bytes(ctl.name.to_bytes()),
            e.to_errno()
        );
    })
}
