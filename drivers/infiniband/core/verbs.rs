// SPDX-License-Identifier: GPL-2.0

//! The kernel verbs objects: protection domains, completion queues, queue pairs and memory
//! regions, as kernel consumers create them on a registered device.
//!
//! Lifetimes are those of the C core, enforced by reference counts rather than by WARNs:
//! - every object holds a [`DeviceRef`] (directly, or through its PD), so unregistering a device
//!   waits until its objects are gone (clients drop theirs in `remove`, which runs first, as in
//!   C);
//! - a QP holds its PD and its CQs, an MR its PD: a PD or CQ is destroyed only after the last
//!   object using it;
//! - each live object is counted and listed per device ([`crate::restrack`]), which is what
//!   `RES_GET` and `RES_{PD,CQ,QP,MR}_GET` report, with the module that created it
//!   ([`KernName`], from [`crate::kern_name!`]) and C's use counts (a PD's users are its QPs and
//!   MRs, a CQ's the QPs completing on it, once per role).
//!
//! The driver's side of each object is the driver's own type (`DeviceOps::Pd`, `Cq`, `Qp`,
//! `Mr`), made in the matching [`crate::verbs::ops::DeviceOps`] method; the core keeps it with the
//! driver's type erased once (see [`crate::verbs::ops`]), so a post or a poll is one indirect call, and
//! gives it back to the driver's destroying verb when the object goes.

pub mod controlled_qkey;
pub mod cq_poll;
pub mod dma_buffer;
pub mod modify_qp;
pub mod ops;
pub mod prepared;
pub mod qp_transitions;
pub mod types;
pub mod wr;

pub use crate::device::events::{EventHandler, EventNotifier, EventType};
pub use crate::restrack::KernName;
pub use crate::verbs::types::{
    Access, AccessFlags, AhAttr, CompletionHandler, CqInit, CqNotifier, GlobalRoute, NewMr, NewQp,
    QpAttr, QpAttrField, QpAttrMask, QpCap, QpInitDriver, QpState, QpType, SrqAttr, SrqAttrField,
    SrqAttrMask,
};
pub use crate::verbs::wr::MappedSg;
use crate::{
    attrs::{Gid, LinkLayer},
    device::ib_device::{DeviceRef, IbDevice},
    restrack::{ResType, Tracked},
    verbs::ops::{CqObject, PdObject, QpObject, SrqObject},
    verbs::prepared::PreparedSend,
    verbs::wr::{AhHandle, MrHandle, MrObject, PostError, RecvWr, SendWr, WorkCompletion},
};
use core::any::Any;
use kernel::{
    alloc::Flags,
    bindings,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
};

pub use modify_qp::qp_transition_ok;

/// A live object counted in its device's resource tracking; dropping it uncounts it. Objects
/// keep it after their driver state, so that the count drops once the driver has destroyed
/// the object, as C's `rdma_restrack_del` after the destroying verb.
struct Counted {
    dev: Arc<IbDevice>,
    res: ResType,
}

impl Counted {
    fn new(dev: &Arc<IbDevice>, res: ResType) -> Self {
        dev.restrack().add(res);
        Self {
            dev: dev.clone(),
            res,
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.dev.restrack().remove(self.res);
    }
}

/// Lists `obj` (just put in its `Arc`) in its device's resource tracking.
fn track<T: Tracked + 'static>(
    dev: &IbDevice,
    t: ResType,
    id: Option<u32>,
    obj: &Arc<T>,
) -> Option<u32> {
    let ptr: *const T = Arc::as_ptr(obj);
    // SAFETY: The object is in an `Arc`, so it does not move, and every tracked type unlists
    // itself first thing in its `Drop`.
    unsafe { dev.restrack().track(t, id, ptr as *const dyn Tracked) }
}

/// Unlists `obj` from its device's resource tracking (in its `Drop`).
fn untrack<T: Tracked + 'static>(dev: &IbDevice, t: ResType, obj: &T) {
    let ptr: *const dyn Tracked = obj;
    dev.restrack().untrack(t, ptr);
}

/// A protection domain.
pub struct Pd {
    // Fields drop in order (after `Drop::drop` unlists the PD): the internal MR, the driver's
    // PD, its count, then the device reference.
    _internal_mr: Option<KBox<dyn MrObject>>,
    drv: KBox<dyn PdObject>,
    _counted: Counted,
    dev: DeviceRef,
    kern_name: KernName,
    local_dma_lkey: u32,
    unsafe_global_rkey: Option<u32>,
    usecnt: Atomic<u64>,
    /// The id resource tracking gave the PD (0 when not listed, as C's `res.id`).
    res_id: Atomic<u32>,
}

impl Pd {
    /// Allocates a PD on `dev` for the module `kern_name` names (C's `ib_alloc_pd(dev, 0)`;
    /// `EOPNOTSUPP` if the driver has no kernel verbs, `ENODEV` if the device is
    /// unregistering). Pass [`crate::kern_name!()`].
    pub fn alloc(dev: &Arc<IbDevice>, kern_name: KernName) -> Result<Arc<Self>> {
        Self::alloc_flags(dev, false, kern_name)
    }

    /// A PD whose DMA MR any peer may read and write with [`Pd::unsafe_global_rkey`] (C's
    /// `IB_PD_UNSAFE_GLOBAL_RKEY`; warns as C does).
    pub fn alloc_unsafe_global_rkey(dev: &Arc<IbDevice>, kern_name: KernName) -> Result<Arc<Self>> {
        Self::alloc_flags(dev, true, kern_name)
    }

    fn alloc_flags(
        dev: &Arc<IbDevice>,
        unsafe_global_rkey: bool,
        kern_name: KernName,
    ) -> Result<Arc<Self>> {
        let dev = dev.try_get().ok_or(ENODEV)?;
        let drv = dev.ops().alloc_pd()?;
        let device_lkey = dev.attr().local_dma_lkey;
        let mut access = AccessFlags::empty();
        if device_lkey.is_none() {
            access |= Access::LocalWrite;
        }
        if unsafe_global_rkey {
            // C's warning is the caller's (`"%s: enabling unsafe global rkey"` with the
            // caller's name), not ib_core's.
            // SAFETY: The format string is one of `format_strings`; the name is NUL-terminated.
            unsafe {
                kernel::print::call_printk(
                    &kernel::print::format_strings::WARNING,
                    kern_name.as_bytes_with_nul(),
                    format_args!("enabling unsafe global rkey\n"),
                )
            };
            access |= Access::RemoteRead | Access::RemoteWrite;
        }
        // C's `__internal_mr`: not tracked, released with the PD. On failure `drv` is dropped,
        // which gives the PD back to the driver.
        let internal = if access == AccessFlags::empty() {
            None
        } else {
            Some(drv.get_dma_mr(access)?)
        };
        let pd = Self {
            local_dma_lkey: device_lkey
                .or(internal.as_ref().map(|m| m.lkey))
                .unwrap_or(0),
            unsafe_global_rkey: internal
                .as_ref()
                .filter(|_| unsafe_global_rkey)
                .map(|m| m.rkey),
            _internal_mr: internal.map(|m| m.mr),
            drv,
            _counted: Counted::new(dev.arc(), ResType::Pd),
            dev,
            kern_name,
            usecnt: Atomic::new(0),
            res_id: Atomic::new(0),
        };
        let pd = Arc::new(pd, GFP_KERNEL)?;
        if let Some(id) = track(&pd.dev, ResType::Pd, None, &pd) {
            pd.res_id.store(id, Relaxed);
        }
        Ok(pd)
    }

    /// The device.
    pub fn device(&self) -> &IbDevice {
        &self.dev
    }

    /// The lkey for local access to all memory (C's `pd->local_dma_lkey`).
    pub fn local_dma_lkey(&self) -> u32 {
        self.local_dma_lkey
    }

    /// The rkey of the unsafe global DMA MR, if the PD has one.
    pub fn unsafe_global_rkey(&self) -> Option<u32> {
        self.unsafe_global_rkey
    }

    /// The module that allocated the PD.
    pub fn kern_name(&self) -> KernName {
        self.kern_name
    }

    /// Objects using the PD (C's `pd->usecnt`: QPs, MRs, SRQs and AHs).
    pub fn users(&self) -> u64 {
        self.usecnt.load(Relaxed)
    }

    /// Whether `other` is on the same device.
    fn same_device(&self, other: &Pd) -> bool {
        core::ptr::eq(self.dev.arc().as_ref(), other.dev.arc().as_ref())
    }

    /// The PD's resource tracking id (`pdn`).
    pub fn res_id(&self) -> u32 {
        self.res_id.load(Relaxed)
    }
}

impl Tracked for Pd {
    fn creator(&self) -> Option<KernName> {
        Some(Pd::kern_name(self))
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        untrack(&self.dev, ResType::Pd, self);
    }
}

/// A completion queue.
pub struct Cq {
    drv: KBox<dyn CqObject>,
    _counted: Counted,
    dev: DeviceRef,
    notifier: CqNotifier,
    kern_name: KernName,
    /// C's `cq->cqe` (a resize changes it).
    cqe: Atomic<u32>,
    usecnt: Atomic<u64>,
    /// C's `poll_ctx` (what `ib_create_cq` leaves, 0, unless [`crate::verbs::cq_poll`] made it).
    poll_ctx: u8,
    /// The core's poller of a [`crate::verbs::cq_poll::PolledCq`], set once after creation (the
    /// `cq_poll` module, above this one, knows its type).
    poller: kernel::sync::SetOnce<Arc<dyn Any + Send + Sync>>,
}

impl Cq {
    /// Creates a CQ on `dev` for the module `kern_name` names (pass [`crate::kern_name!()`]);
    /// `handler` runs on completion events once the CQ is armed (C's `ib_create_cq`).
    pub fn create(
        dev: &Arc<IbDevice>,
        init: &CqInit,
        handler: Option<CompletionHandler>,
        kern_name: KernName,
    ) -> Result<Arc<Self>> {
        Self::create_with_event_handler(dev, init, handler, None, kern_name)
    }

    /// A CQ of [`crate::verbs::cq_poll`], with its polling context.
    pub(crate) fn create_polled(
        dev: &Arc<IbDevice>,
        init: &CqInit,
        handler: Option<CompletionHandler>,
        kern_name: KernName,
        poll_ctx: u8,
    ) -> Result<Arc<Self>> {
        Self::make(dev, init, handler, None, kern_name, poll_ctx)
    }

    /// [`Cq::create`], with `event_handler` getting the CQ's asynchronous events (`CqErr`; C's
    /// `event_handler` of `ib_create_cq`).
    pub fn create_with_event_handler(
        dev: &Arc<IbDevice>,
        init: &CqInit,
        handler: Option<CompletionHandler>,
        event_handler: Option<EventHandler>,
        kern_name: KernName,
    ) -> Result<Arc<Self>> {
        Self::make(dev, init, handler, event_handler, kern_name, 0)
    }

    fn make(
        dev: &Arc<IbDevice>,
        init: &CqInit,
        handler: Option<CompletionHandler>,
        event_handler: Option<EventHandler>,
        kern_name: KernName,
        poll_ctx: u8,
    ) -> Result<Arc<Self>> {
        let dev = dev.try_get().ok_or(ENODEV)?;
        if init.cqe == 0 || init.cqe > dev.attr().max_cqe {
            return Err(EINVAL);
        }
        let notifier = CqNotifier::new(handler, event_handler)?;
        let drv = dev.ops().create_cq(init, &notifier)?;
        let cq = Self {
            cqe: Atomic::new(drv.size().unwrap_or(init.cqe)),
            drv,
            _counted: Counted::new(dev.arc(), ResType::Cq),
            dev,
            notifier,
            kern_name,
            usecnt: Atomic::new(0),
            poll_ctx,
            poller: kernel::sync::SetOnce::new(),
        };
        let cq = Arc::new(cq, GFP_KERNEL)?;
        let _ = track(&cq.dev, ResType::Cq, None, &cq);
        Ok(cq)
    }

    /// Entries the CQ holds, as the driver made it (C's `cq->cqe`).
    pub fn cqe(&self) -> u32 {
        self.cqe.load(Relaxed)
    }

    /// Gives the CQ room for `cqe` completions, keeping those not polled yet: `EOPNOTSUPP` when
    /// the driver cannot, the driver's errno when it refuses the size. [`Cq::cqe`] then says
    /// what the driver made. Process context; polls may go on meanwhile. (C 7.3 has no such
    /// kernel verb any more, `ib_resize_cq` having had no user; its drivers resize for uverbs.)
    pub fn resize(&self, cqe: u32) -> Result {
        self.drv.resize(cqe, None)?;
        self.cqe.store(self.drv.size().unwrap_or(cqe), Relaxed);
        Ok(())
    }

    /// The module that created the CQ.
    pub fn kern_name(&self) -> KernName {
        self.kern_name
    }

    /// QPs completing on the CQ, once per role (C's `cq->usecnt`).
    pub fn users(&self) -> u64 {
        self.usecnt.load(Relaxed)
    }

    /// How completions are polled (C's `cq->poll_ctx`): `IB_POLL_SOFTIRQ` (0), what C's
    /// `ib_create_cq` leaves in it, unless [`crate::verbs::cq_poll::PolledCq`] polls the CQ.
    pub fn poll_ctx(&self) -> u8 {
        self.poll_ctx
    }

    /// The core's poller, if [`crate::verbs::cq_poll::PolledCq`] made the CQ.
    pub(crate) fn poller_ref(&self) -> Option<&(dyn Any + Send + Sync)> {
        self.poller.as_ref().map(|p| &**p)
    }

    /// Records the core's poller (once).
    pub(crate) fn set_poller(&self, p: Arc<dyn Any + Send + Sync>) {
        let _ = self.poller.populate(p);
    }

    /// Asks for a completion event on the next completion (`solicited`: the next solicited
    /// one).
    pub fn req_notify(&self, solicited: bool) -> Result {
        self.drv.req_notify(solicited)
    }

    /// Moves up to `wc.len()` completions into `wc`, oldest first; returns how many (C's
    /// `ib_poll_cq`). A completion event only says that there is something to poll: re-arm with
    /// [`Cq::req_notify`], then poll again, so that nothing completing in between is missed.
    #[inline]
    pub fn poll(&self, wc: &mut [WorkCompletion]) -> Result<usize> {
        let n = self.drv.poll(wc)?;
        // A driver reporting more than it was given room for is a driver bug.
        if n > wc.len() {
            return Err(EIO);
        }
        Ok(n)
    }

    /// The notifier the driver reports events to.
    pub fn notifier(&self) -> &CqNotifier {
        &self.notifier
    }

    /// Whether this CQ is on the same device as `pd`.
    fn same_device(&self, pd: &Pd) -> bool {
        core::ptr::eq(self.dev.arc().as_ref(), pd.dev.arc().as_ref())
    }
}

impl Tracked for Cq {
    fn creator(&self) -> Option<KernName> {
        Some(Cq::kern_name(self))
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        untrack(&self.dev, ResType::Cq, self);
    }
}

/// What a consumer asks for when creating a QP.
pub struct QpInit {
    /// Transport type.
    pub qp_type: QpType,
    /// CQ of send completions.
    pub send_cq: Arc<Cq>,
    /// CQ of receive completions.
    pub recv_cq: Arc<Cq>,
    /// Work queue sizes.
    pub cap: QpCap,
    /// Signal every send WR.
    pub sq_sig_all: bool,
    /// The module creating the QP: [`crate::kern_name!()`].
    pub kern_name: KernName,
    /// The SRQ the QP receives from (of the same device; `None`: its own receive queue).
    pub srq: Option<Arc<Srq>>,
    /// The handler of the QP's asynchronous events (C's `event_handler`).
    pub event_handler: Option<EventHandler>,
    /// The port of a special QP ([`QpType::Smi`], [`QpType::Gsi`], which must name a valid
    /// port); 0 for the others (C's `ib_qp_init_attr.port_num`).
    pub port_num: u32,
}

/// A queue pair. It keeps its PD and CQs alive.
pub struct Qp {
    // Dropped first: the driver destroys the QP while its PD and CQs are there.
    drv: KBox<dyn QpObject>,
    _counted: Counted,
    pd: Arc<Pd>,
    send_cq: Arc<Cq>,
    recv_cq: Arc<Cq>,
    srq: Option<Arc<Srq>>,
    qp_type: QpType,
    qp_num: u32,
    /// The queue sizes as the driver made them.
    cap: QpCap,
    state: kernel::sync::Arc<kernel::sync::Mutex<QpState>>,
    kern_name: KernName,
    /// The port a modify last set (0 before), C's `qp->port`.
    port: Atomic<u32>,
    /// The driver raised `QpLastWqeReached` (C's `srq_completion`).
    last_wqe: Arc<Atomic<bool>>,
}

impl Qp {
    /// Creates a QP in `pd`. Its CQs must be on the same device (`EINVAL` otherwise).
    pub fn create(pd: &Arc<Pd>, init: QpInit) -> Result<Arc<Self>> {
        // Objects of one device are all of its driver's types: this check is what lets the core
        // hand the driver its own CQ states.
        if !init.send_cq.same_device(pd)
            || !init.recv_cq.same_device(pd)
            || init.srq.as_ref().is_some_and(|s| !s.pd.same_device(pd))
        {
            return Err(EINVAL);
        }
        let dev = &pd.dev;
        let special = matches!(init.qp_type, QpType::Smi | QpType::Gsi);
        if special && !dev.is_valid_port(init.port_num) {
            return Err(EINVAL);
        }
        let port = if special { init.port_num } else { 0 };
        let attr = dev.attr();
        if init.cap.max_send_wr > attr.max_qp_wr
            || init.cap.max_recv_wr > attr.max_qp_wr
            || init.cap.max_send_sge > attr.max_send_sge
            || init.cap.max_recv_sge > attr.max_recv_sge
        {
            return Err(EINVAL);
        }
        // The core sees `QpLastWqeReached` first (C's `__ib_qp_event_handler` completing
        // `srq_completion` for `ib_drain_qp`), then the consumer's handler gets every event.
        let last_wqe = Arc::new(Atomic::new(false), GFP_KERNEL)?;
        let seen = last_wqe.clone();
        let consumer = init.event_handler;
        let handler: EventHandler = KBox::new(
            move |e: EventType| {
                if e == EventType::QpLastWqeReached {
                    seen.store(true, Relaxed);
                }
                if let Some(h) = &consumer {
                    h(e);
                }
            },
            GFP_KERNEL,
        )?;
        let events = EventNotifier::new(Some(handler))?;
        let new = pd.drv.create_qp(&QpInitDriver {
            qp_type: init.qp_type,
            port,
            send_cq: &*init.send_cq.drv,
            recv_cq: &*init.recv_cq.drv,
            cap: init.cap,
            sq_sig_all: init.sq_sig_all,
            srq: init.srq.as_ref().map(|s| &*s.drv),
            events: &events,
        })?;
        // On failure from here on, dropping `new.qp` gives the QP back to the driver.
        let state = kernel::sync::Arc::pin_init(
            kernel::new_mutex!(QpState::Reset, "ib_core::verbs::Qp::state"),
            GFP_KERNEL,
        )?;
        let qp = Self {
            cap: new.cap,
            drv: new.qp,
            _counted: Counted::new(dev.arc(), ResType::Qp),
            pd: pd.clone(),
            send_cq: init.send_cq,
            recv_cq: init.recv_cq,
            srq: init.srq,
            qp_type: init.qp_type,
            qp_num: new.qp_num,
            state,
            kern_name: init.kern_name,
            port: Atomic::new(port),
            last_wqe,
        };
        let qp = Arc::new(qp, GFP_KERNEL)?;
        qp.pd.usecnt.fetch_add(1, Relaxed);
        qp.send_cq.usecnt.fetch_add(1, Relaxed);
        qp.recv_cq.usecnt.fetch_add(1, Relaxed);
        if let Some(srq) = &qp.srq {
            srq.usecnt.fetch_add(1, Relaxed);
        }
        let _ = track(&qp.pd.dev, ResType::Qp, Some(qp.qp_num), &qp);
        Ok(qp)
    }

    /// The module that created the QP.
    pub fn kern_name(&self) -> KernName {
        self.kern_name
    }

    /// The queue sizes as the driver made them (C's `ib_qp_init_attr.cap` after
    /// `ib_create_qp`; what was asked for when the driver does not say).
    pub fn cap(&self) -> QpCap {
        self.cap
    }

    /// The port a modify last set, 0 before (C's `qp->port`).
    pub fn port(&self) -> u32 {
        self.port.load(Relaxed)
    }

    /// Whether the driver raised `QpLastWqeReached` on the QP.
    pub(crate) fn last_wqe_reached(&self) -> bool {
        self.last_wqe.load(Relaxed)
    }

    /// The QP number.
    pub fn qp_num(&self) -> u32 {
        self.qp_num
    }

    /// The transport type.
    pub fn qp_type(&self) -> QpType {
        self.qp_type
    }

    /// Queues send work requests, in order (C's `ib_post_send`). On error, the requests before
    /// [`PostError::first_bad`] are queued and will complete; the others are not. A work
    /// request whose AH or registered MR is of another device is refused with `EINVAL`
    /// ([`post_send_checked`]; the driver gets its own AH state from the others, see
    /// [`crate::verbs::ops::SendWrs::ah`]).
    #[inline]
    pub fn post_send(&self, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        post_send_checked(self.pd.dev.arc(), wrs, |w| {
            // SAFETY: `post_send_checked` passes only requests whose AHs are of this QP's
            // device.
            unsafe { self.drv.post_send(w) }
        })
    }

    /// The QP as a prepared request's owner: its device's address and its number.
    fn owner(&self) -> (usize, u32) {
        (Arc::as_ptr(self.pd.dev.arc()).addr(), self.qp_num)
    }

    /// Checks and encodes `wr` once, for [`Qp::post_prepared`] (see [`prepared`]): the errors
    /// [`Qp::post_send`] would give it, `EOPNOTSUPP` for a UD request (a prepared request
    /// carries no AH) or a driver without the prepared path, `EINVAL` for a request whose
    /// encoding is larger than [`prepared::MAX_PREPARED_UNITS`]. Never sleeps.
    pub fn prepare_send(&self, wr: &SendWr<'_>) -> Result<PreparedSend> {
        if wr.ud.is_some() {
            return Err(EOPNOTSUPP);
        }
        let image = self.drv.prepare_send(wr)?;
        Ok(PreparedSend::new(wr.wr_id, self.owner(), image))
    }

    /// Queues prepared send requests, in order, with [`Qp::post_send`]'s partial semantics: the
    /// driver copies each encoding into its ring, under one lock and with one doorbell. A
    /// request prepared for another QP is refused with `EINVAL` (the ones before it are
    /// queued).
    #[inline]
    pub fn post_prepared(&self, wrs: &[PreparedSend]) -> Result<(), PostError> {
        let me = self.owner();
        post_until_refused(wrs, |w| w.owner != me, |w| self.drv.post_prepared(w))
    }

    /// The SRQ the QP receives from, if any.
    pub fn srq(&self) -> Option<&Arc<Srq>> {
        self.srq.as_ref()
    }

    /// Queues receive work requests, in order (C's `ib_post_recv`), with the same partial
    /// semantics as [`Qp::post_send`].
    #[inline]
    pub fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        self.drv.post_recv(wrs)
    }

    /// The state the last modify set, as C drivers track it: a QP the device moves to the error
    /// state (after a failed work request) still reads as before here; [`Qp::query`] asks the
    /// driver.
    pub fn state(&self) -> QpState {
        *self.state.lock()
    }

    /// The PD.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }

    /// The send and receive CQs.
    pub fn cqs(&self) -> (&Arc<Cq>, &Arc<Cq>) {
        (&self.send_cq, &self.recv_cq)
    }

    /// Modifies the QP: the transition and required attributes are checked first (`EINVAL`),
    /// as C's `ib_modify_qp_is_ok` (by the driver, for a C driver), then the driver applies it
    /// ([`modify_qp::QpModify::apply`]).
    pub fn modify(&self, attr: &QpAttr, mask: QpAttrMask) -> Result {
        modify_qp::QpModify {
            dev: &self.pd.dev,
            drv: &*self.drv,
            qp_type: self.qp_type,
            state: &self.state,
            port: &self.port,
        }
        .apply(attr, mask, None)
    }

    /// The QP's attributes, from the driver.
    pub fn query(&self) -> Result<QpAttr> {
        self.drv.query()
    }

    /// Attaches this UD QP to the multicast group `gid`, LID `lid` (C's `ib_attach_mcast`):
    /// `EOPNOTSUPP` for a driver without multicast, `EINVAL` for a GID that is not multicast,
    /// a QP that is not UD, or (the device's ports all InfiniBand) a LID outside the multicast
    /// range.
    pub fn attach_mcast(&self, gid: &Gid, lid: u16) -> Result {
        self.check_mcast(gid, lid)?;
        self.drv.attach_mcast(gid, lid)
    }

    /// Detaches this QP from the multicast group `gid` (C's `ib_detach_mcast`; checks as
    /// [`Qp::attach_mcast`]).
    pub fn detach_mcast(&self, gid: &Gid, lid: u16) -> Result {
        self.check_mcast(gid, lid)?;
        self.drv.detach_mcast(gid, lid)
    }

    /// C's checks of a multicast attach or detach (the driver's op is asked first: a driver
    /// without it answers `EOPNOTSUPP` whatever the arguments, as C).
    fn check_mcast(&self, gid: &Gid, lid: u16) -> Result {
        if !self.drv.has_mcast() {
            return Err(EOPNOTSUPP);
        }
        let dev = &self.pd.dev;
        let all_ib =
            (1..=dev.port_count()).all(|p| dev.link_layer(p) == Some(LinkLayer::Infiniband));
        let lid_ok = !all_ib || (lid >= 0xc000 && lid != 0xffff);
        if gid.0[0] != 0xff || self.qp_type != QpType::Ud || !lid_ok {
            return Err(EINVAL);
        }
        Ok(())
    }
}

impl Tracked for Qp {
    fn creator(&self) -> Option<KernName> {
        Some(Qp::kern_name(self))
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        untrack(&self.pd.dev, ResType::Qp, self);
        if let Some(srq) = &self.srq {
            srq.usecnt.fetch_sub(1, Relaxed);
        }
        self.recv_cq.usecnt.fetch_sub(1, Relaxed);
        self.send_cq.usecnt.fetch_sub(1, Relaxed);
        self.pd.usecnt.fetch_sub(1, Relaxed);
    }
}

/// A shared receive queue (C's `IB_SRQT_BASIC`). It keeps its PD alive.
pub struct Srq {
    drv: KBox<dyn SrqObject>,
    _counted: Counted,
    pd: Arc<Pd>,
    usecnt: Atomic<u64>,
}

impl Srq {
    /// Creates an SRQ in `pd` holding `attr.max_wr` receives of `attr.max_sge` entries, its
    /// limit armed if `attr.srq_limit` is not 0, its asynchronous events going to `handler`
    /// (C's `ib_create_srq`; `EINVAL` past the device's `max_srq_wr` or its receive SGEs).
    pub fn create(
        pd: &Arc<Pd>,
        attr: &SrqAttr,
        handler: Option<EventHandler>,
    ) -> Result<Arc<Self>> {
        let dev = pd.dev.attr();
        if attr.max_wr == 0 || attr.max_wr > dev.max_srq_wr || attr.max_sge > dev.max_recv_sge {
            return Err(EINVAL);
        }
        let events = EventNotifier::new(handler)?;
        // The sizes the driver made are what `query` reports.
        let (drv, _made) = pd.drv.create_srq(attr, &events, None)?;
        let srq = Self {
            drv,
            _counted: Counted::new(pd.dev.arc(), ResType::Srq),
            pd: pd.clone(),
            usecnt: Atomic::new(0),
        };
        let srq = Arc::new(srq, GFP_KERNEL)?;
        pd.usecnt.fetch_add(1, Relaxed);
        let _ = track(&pd.dev, ResType::Srq, None, &srq);
        Ok(srq)
    }

    /// Resizes the SRQ or arms its limit (C's `ib_modify_srq`; `EOPNOTSUPP` if the driver
    /// cannot).
    pub fn modify(&self, attr: &SrqAttr, mask: SrqAttrMask) -> Result {
        self.drv.modify(attr, mask, None)
    }

    /// The SRQ's attributes, from the driver (`srq_limit`: 0 once the limit event fired).
    pub fn query(&self) -> Result<SrqAttr> {
        self.drv.query()
    }

    /// Queues receive work requests (C's `ib_post_srq_recv`), with the partial semantics of
    /// [`Qp::post_send`]. May be called in atomic context.
    #[inline]
    pub fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        self.drv.post_recv(wrs)
    }

    /// The PD.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }

    /// The module that created the SRQ: its PD's.
    pub fn kern_name(&self) -> KernName {
        self.pd.kern_name
    }

    /// QPs receiving from the SRQ (C's `srq->usecnt`).
    pub fn users(&self) -> u64 {
        self.usecnt.load(Relaxed)
    }
}

impl Tracked for Srq {
    fn creator(&self) -> Option<KernName> {
        Some(Srq::kern_name(self))
    }
}

impl Drop for Srq {
    fn drop(&mut self) {
        untrack(&self.pd.dev, ResType::Srq, self);
        self.pd.usecnt.fetch_sub(1, Relaxed);
    }
}

/// An address handle: where UD work requests go. It keeps its PD alive.
pub struct Ah {
    handle: AhHandle,
    pd: Arc<Pd>,
}

impl Ah {
    /// Creates an AH in `pd` for `attr` (C's `rdma_create_ah`; `EINVAL` for a port the device
    /// does not have).
    pub fn create(pd: &Arc<Pd>, attr: &AhAttr) -> Result<Arc<Self>> {
        Self::create_with(pd, attr, GFP_KERNEL)
    }

    /// As [`Ah::create`], with memory allocated with `flags`: with `GFP_ATOMIC` nothing sleeps
    /// (C's `rdma_create_ah` without `RDMA_CREATE_AH_SLEEPABLE`, under a spinlock).
    pub fn create_with(pd: &Arc<Pd>, attr: &AhAttr, flags: Flags) -> Result<Arc<Self>> {
        if !pd.dev.is_valid_port(attr.port_num.into())
            || !modify_qp::av_type_ok(&pd.dev, attr.port_num.into(), attr.grh.as_ref())
        {
            return Err(EINVAL);
        }
        let drv = pd.drv.create_ah(attr, flags)?;
        let device = Arc::as_ptr(pd.dev.arc()).addr();
        let ah = Arc::new(
            Self {
                handle: AhHandle::new(drv, device, *attr),
                pd: pd.clone(),
            },
            flags,
        )?;
        pd.usecnt.fetch_add(1, Relaxed);
        Ok(ah)
    }
}

/// What work requests name of the AH ([`UdWr::ah`]: `ah: &ah`), and its address.
impl core::ops::Deref for Ah {
    type Target = AhHandle;

    fn deref(&self) -> &AhHandle {
        &self.handle
    }
}

impl core::fmt::Debug for Ah {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.handle.fmt(f)
    }
}

impl Drop for Ah {
    fn drop(&mut self) {
        self.pd.usecnt.fetch_sub(1, Relaxed);
    }
}

/// A memory region. It keeps its PD alive.
pub struct Mr {
    handle: MrHandle,
    _counted: Counted,
    pd: Arc<Pd>,
    lkey: u32,
    rkey: u32,
}

impl Mr {
    /// The DMA MR of `pd`: all of memory, with `access` rights (`get_dma_mr`).
    pub fn get_dma_mr(pd: &Arc<Pd>, access: AccessFlags) -> Result<Arc<Self>> {
        Self::own(pd, pd.drv.get_dma_mr(access)?)
    }

    /// The core's MR of `pd` for the driver's new MR `new`: counted, tracked, its PD in use.
    fn own(pd: &Arc<Pd>, new: NewMr<KBox<dyn MrObject>>) -> Result<Arc<Self>> {
        let mr = Self {
            handle: MrHandle::new(new.mr, Arc::as_ptr(pd.dev.arc()).addr()),
            _counted: Counted::new(pd.dev.arc(), ResType::Mr),
            pd: pd.clone(),
            lkey: new.lkey,
            rkey: new.rkey,
        };
        let mr = Arc::new(mr, GFP_KERNEL)?;
        pd.usecnt.fetch_add(1, Relaxed);
        let _ = track(&pd.dev, ResType::Mr, None, &mr);
        Ok(mr)
    }

    /// A fast-registration MR of `pd` for up to `max_num_sg` pages (C's `ib_alloc_mr` with
    /// `IB_MR_TYPE_MEM_REG`): its pages are given by [`Mr::map_sg`] and registered by a
    /// [`wr::SendOpcode::RegMr`] work request; `EOPNOTSUPP` when the driver has none.
    pub fn alloc_fast_reg(pd: &Arc<Pd>, max_num_sg: u32) -> Result<Arc<Self>> {
        Self::own(pd, pd.drv.alloc_mr(max_num_sg)?)
    }

    /// Maps the DMA-mapped scatter list `sg` into this fast-registration MR's page list (C's
    /// `ib_map_mr_sg`): see [`MrObject::map_sg`].
    ///
    /// # Safety
    ///
    /// As for [`MrObject::map_sg`].
    pub unsafe fn map_sg(
        &self,
        sg: *mut bindings::scatterlist,
        nents: u32,
        offset: *mut u32,
        page_size: u32,
    ) -> Result<MappedSg> {
        // SAFETY: The caller's contract.
        unsafe { self.handle.driver().map_sg(sg, nents, offset, page_size) }
    }

    /// What a registration work request names ([`wr::RegWr::mr`]).
    pub fn handle(&self) -> &MrHandle {
        &self.handle
    }

    /// The module that created the MR: its PD's (C's `rdma_restrack_parent_name`).
    pub fn kern_name(&self) -> KernName {
        self.pd.kern_name
    }

    /// Bytes the MR covers as C records it: 0 for a DMA MR.
    pub fn length(&self) -> u64 {
        0
    }

    /// The local key.
    pub fn lkey(&self) -> u32 {
        self.lkey
    }

    /// The remote key.
    pub fn rkey(&self) -> u32 {
        self.rkey
    }
}

impl Tracked for Mr {
    fn creator(&self) -> Option<KernName> {
        Some(Mr::kern_name(self))
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        untrack(&self.pd.dev, ResType::Mr, self);
        self.pd.usecnt.fetch_sub(1, Relaxed);
    }
}

/// The core's one "same device" check of send work requests, before any driver sees them:
/// `wrs` go to `post` (a QP of device `dev`) up to the first whose AH or registered MR is of
/// another device, which is refused with `EINVAL`. `post` gets only requests whose AHs are
/// `dev`'s, which is what a driver's typed view of them rests on
/// ([`crate::verbs::ops::SendWrs`]).
#[inline]
pub(crate) fn post_send_checked(
    dev: &Arc<IbDevice>,
    wrs: &[SendWr<'_>],
    post: impl Fn(&[SendWr<'_>]) -> Result<(), PostError>,
) -> Result<(), PostError> {
    let dev = Arc::as_ptr(dev).addr();
    post_until_refused(
        wrs,
        |wr| {
            wr.ud.as_ref().is_some_and(|ud| !ud.ah.is_of(dev))
                || wr.reg.as_ref().is_some_and(|r| !r.mr.is_of(dev))
        },
        post,
    )
}

/// Posts `wrs` with `post` up to the first that `refused` (which the core refuses with `EINVAL`
/// before the driver sees it): the ones before are posted, as C's `bad_wr` semantics have it.
#[inline(always)]
fn post_until_refused<T>(
    wrs: &[T],
    refused: impl Fn(&T) -> bool,
    post: impl Fn(&[T]) -> Result<(), PostError>,
) -> Result<(), PostError> {
    match wrs.iter().position(refused) {
        None => post(wrs),
        Some(i) => {
            if i > 0 {
                post(&wrs[..i])?;
            }
            Err(PostError {
                first_bad: i,
                err: EINVAL,
            })
        }
    }
}

#[kernel::macros::kunit_tests(rdma_rs_ib_verbs)]
mod tests {
    use super::*;
    use crate::{
        attrs::{DeviceCap, DeviceCapFlags},
        device::DeviceEventRegistration,
        kunit_fake::{self, calls, register_recording as register, take},
        restrack::view::ResView,
        verbs::dma_buffer::{DmaBuffer, DMA_BUFFER_MAX},
        verbs::wr::UdWr,
    };

    #[test]
    fn transitions_follow_the_c_table() {
        use QpAttrField as F;
        use QpState::{Init, Reset, Rtr, Rts};
        let m = |bits: QpAttrMask| bits | F::State;
        let rc_init = F::PkeyIndex | F::Port | F::AccessFlags;
        assert!(qp_transition_ok(Reset, Init, QpType::Rc, m(rc_init)));
        assert!(!qp_transition_ok(
            Reset,
            Init,
            QpType::Rc,
            m(F::Port.into())
        ));
        // UD needs a Q_Key rather than access flags.
        assert!(!qp_transition_ok(Reset, Init, QpType::Ud, m(rc_init)));
        assert!(qp_transition_ok(
            Reset,
            Init,
            QpType::Ud,
            m(F::PkeyIndex | F::Port | F::Qkey)
        ));
        let rc_rtr =
            F::Av | F::PathMtu | F::DestQpn | F::RqPsn | F::MaxDestRdAtomic | F::MinRnrTimer;
        assert!(qp_transition_ok(Init, Rtr, QpType::Rc, m(rc_rtr)));
        assert!(!qp_transition_ok(Init, Rtr, QpType::Rc, m(rc_rtr & !F::Av)));
        assert!(qp_transition_ok(
            Init,
            Rtr,
            QpType::Ud,
            m(QpAttrMask::empty())
        ));
        assert!(qp_transition_ok(Rtr, Rts, QpType::Ud, m(F::SqPsn.into())));
        assert!(!qp_transition_ok(Rtr, Rts, QpType::Rc, m(F::SqPsn.into())));
        // Skipping states is refused; reset and error are always reachable.
        assert!(!qp_transition_ok(Reset, Rtr, QpType::Rc, m(rc_rtr)));
        assert!(!qp_transition_ok(
            Init,
            Rts,
            QpType::Rc,
            m(QpAttrMask::empty())
        ));
        assert!(qp_transition_ok(
            Rts,
            QpState::Err,
            QpType::Rc,
            m(QpAttrMask::empty())
        ));
        assert!(qp_transition_ok(
            Rtr,
            Reset,
            QpType::Rc,
            m(QpAttrMask::empty())
        ));
        // A change of state without the state bit is refused.
        assert!(!qp_transition_ok(Reset, Init, QpType::Rc, rc_init));
        // C's table: RESET goes only to INIT (or stays), and only with no other attribute.
        assert!(!qp_transition_ok(
            Reset,
            QpState::Err,
            QpType::Rc,
            m(QpAttrMask::empty())
        ));
        assert!(qp_transition_ok(
            Reset,
            Reset,
            QpType::Rc,
            m(QpAttrMask::empty())
        ));
        assert!(!qp_transition_ok(
            Reset,
            Reset,
            QpType::Rc,
            m(F::SqPsn.into())
        ));
        assert!(!qp_transition_ok(
            Reset,
            Reset,
            QpType::Rc,
            F::PkeyIndex.into()
        ));
        // Attributes a transition does not take are refused; those it may take are not.
        assert!(!qp_transition_ok(
            Reset,
            Init,
            QpType::Rc,
            m(rc_init | F::Qkey)
        ));
        assert!(qp_transition_ok(
            Init,
            Init,
            QpType::Rc,
            F::PkeyIndex.into()
        ));
        assert!(!qp_transition_ok(Init, Init, QpType::Rc, F::Qkey.into()));
        assert!(qp_transition_ok(
            Init,
            Rtr,
            QpType::Rc,
            m(rc_rtr | F::AccessFlags)
        ));
        assert!(!qp_transition_ok(
            Init,
            Rtr,
            QpType::Rc,
            m(rc_rtr | F::SqPsn)
        ));
        // RTR has no RTR to RTR; the current state may be named from RTR on.
        assert!(!qp_transition_ok(Rtr, Rtr, QpType::Ud, QpAttrMask::empty()));
        assert!(qp_transition_ok(
            Rtr,
            Rts,
            QpType::Ud,
            m(F::SqPsn | F::CurState)
        ));
        assert!(!qp_transition_ok(
            Init,
            Rtr,
            QpType::Ud,
            m(F::CurState.into())
        ));
    }

    #[test]
    fn objects_outlive_their_handles_until_their_users_go() -> Result {
        let calls = calls()?;
        let reg = register(&calls)?;
        let dev = reg.device().clone();
        let pd = Pd::alloc(&dev, crate::kern_name!())?;
        let cq = Cq::create(
            &dev,
            &CqInit {
                cqe: 16,
                comp_vector: 0,
                flags: 0,
            },
            None,
            crate::kern_name!(),
        )?;
        let qp = Qp::create(
            &pd,
            QpInit {
                qp_type: QpType::Rc,
                send_cq: cq.clone(),
                recv_cq: cq.clone(),
                cap: QpCap {
                    max_send_wr: 8,
                    max_recv_wr: 8,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                sq_sig_all: false,
                kern_name: crate::kern_name!(),
                srq: None,
                event_handler: None,
                port_num: 0,
            },
        )?;
        assert_eq!(qp.qp_num(), 0x42);
        let mr = Mr::get_dma_mr(&pd, Access::LocalWrite.into())?;
        assert_eq!((mr.lkey(), mr.rkey()), (7, 8));
        assert_eq!(
            &take(&calls)[..],
            &["alloc_pd", "create_cq", "create_qp", "get_dma_mr"]
        );
        let r = dev.restrack();
        assert_eq!(
            [ResType::Pd, ResType::Cq, ResType::Qp, ResType::Mr].map(|t| r.count(t)),
            [1, 1, 1, 1]
        );
        // Limits from query_device are enforced before the driver is asked.
        assert_eq!(
            Cq::create(
                &dev,
                &CqInit {
                    cqe: 4096,
                    comp_vector: 0,
                    flags: 0
                },
                None,
                crate::kern_name!(),
            )
            .err(),
            Some(EINVAL)
        );
        // A wrong transition never reaches the driver.
        let to_rtr = QpAttr {
            qp_state: QpState::Rtr,
            ..QpAttr::default()
        };
        assert_eq!(qp.modify(&to_rtr, QpAttrField::State.into()), Err(EINVAL));
        assert!(take(&calls).is_empty());
        // Dropping the PD and CQ handles frees nothing: the QP and the MR use them.
        drop(pd);
        drop(cq);
        assert!(take(&calls).is_empty());
        drop(qp);
        assert_eq!(&take(&calls)[..], &["destroy_qp", "destroy_cq"]);
        drop(mr);
        assert_eq!(&take(&calls)[..], &["dereg_mr", "dealloc_pd"]);
        assert_eq!(
            [ResType::Pd, ResType::Cq, ResType::Qp, ResType::Mr].map(|t| r.count(t)),
            [0, 0, 0, 0]
        );
        drop(dev);
        drop(reg);
        Ok(())
    }

    /// The listed objects of type `t`: (id, kern name, users) as netlink sees them.
    fn listed(dev: &IbDevice, t: ResType) -> KVec<(u32, &'static [u8], u64)> {
        let mut out = KVec::new();
        dev.restrack().visit(t, 0, |_, _, id, obj| {
            let Some(view) = ResView::of(obj) else {
                return true;
            };
            let entry = match view {
                ResView::Pd(pd) => (id, pd.kern_name().as_bytes(), pd.users()),
                ResView::Cq(cq) => (id, cq.kern_name().as_bytes(), cq.users()),
                ResView::Qp(qp) => (id, qp.kern_name().as_bytes(), 0),
                ResView::Mr(mr) => (id, mr.kern_name().as_bytes(), 0),
                ResView::Srq(srq) => (id, srq.kern_name().as_bytes(), srq.users()),
                // No user objects or rdma_cm IDs in these tests.
                ResView::CmId(_) => (id, &b"cm_id"[..], 0),
                ResView::Ctx(_)
                | ResView::UserPd(_)
                | ResView::UserMr(_)
                | ResView::UserCq(_)
                | ResView::UserQp(_)
                | ResView::UserSrq(_) => (id, &b"user"[..], 0),
            };
            out.push(entry, GFP_KERNEL).is_ok()
        });
        out
    }

    #[test]
    fn objects_are_listed_as_c_tracks_them() -> Result {
        let calls = calls()?;
        let reg = register(&calls)?;
        let dev = reg.device().clone();
        let me: &[u8] = b"ib_core";
        // PD ids count from 0 per device and type, cyclically: a freed id is not reused next.
        let pd0 = Pd::alloc(&dev, crate::kern_name!())?;
        let pd1 = Pd::alloc(&dev, crate::kern_name!())?;
        drop(pd0);
        let pd = Pd::alloc(&dev, crate::kern_name!())?;
        assert_eq!(&listed(&dev, ResType::Pd)[..], &[(1, me, 0), (2, me, 0)]);
        drop(pd1);
        // The device has a local DMA lkey: no internal MR.
        assert_eq!(pd.local_dma_lkey(), 0x5a);
        assert_eq!(pd.unsafe_global_rkey(), None);
        let init = CqInit {
            cqe: 4,
            comp_vector: 0,
            flags: 0,
        };
        let cq = Cq::create(&dev, &init, None, crate::kern_name!())?;
        // The size is the driver's (1000 + its number), not the request.
        assert!(cq.cqe() > 1000);
        let qp = Qp::create(
            &pd,
            QpInit {
                qp_type: QpType::Rc,
                send_cq: cq.clone(),
                recv_cq: cq.clone(),
                cap: QpCap::default(),
                sq_sig_all: false,
                kern_name: crate::kern_name!(),
                srq: None,
                event_handler: None,
                port_num: 0,
            },
        )?;
        let mr = Mr::get_dma_mr(&pd, Access::LocalWrite.into())?;
        // A QP's id is its number; users: the PD has the QP and the MR, the CQ the QP twice.
        assert_eq!(&listed(&dev, ResType::Qp)[..], &[(0x42, me, 0)]);
        assert_eq!(&listed(&dev, ResType::Mr)[..], &[(0, me, 0)]);
        assert_eq!(&listed(&dev, ResType::Pd)[..], &[(2, me, 2)]);
        assert_eq!(&listed(&dev, ResType::Cq)[..], &[(0, me, 2)]);
        assert_eq!(dev.restrack().with(ResType::Qp, 0x42, |_, _| ()), Some(()));
        assert_eq!(dev.restrack().with(ResType::Qp, 0x43, |_, _| ()), None);
        // A second QP with the same number works but is not listed, as in C.
        let twin = Qp::create(
            &pd,
            QpInit {
                qp_type: QpType::Rc,
                send_cq: cq.clone(),
                recv_cq: cq.clone(),
                cap: QpCap::default(),
                sq_sig_all: false,
                kern_name: crate::kern_name!(),
                srq: None,
                event_handler: None,
                port_num: 0,
            },
        )?;
        assert_eq!(listed(&dev, ResType::Qp).len(), 1);
        assert_eq!(dev.restrack().count(ResType::Qp), 2);
        drop(twin);
        // The port a modify sets is the QP's.
        assert_eq!(qp.port(), 0);
        let to_init = QpAttr {
            qp_state: QpState::Init,
            port_num: 1,
            ..QpAttr::default()
        };
        use QpAttrField as F;
        qp.modify(&to_init, F::State | F::PkeyIndex | F::Port | F::AccessFlags)?;
        assert_eq!(qp.port(), 1);
        drop(qp);
        assert_eq!(listed(&dev, ResType::Qp).len(), 0);
        assert_eq!(&listed(&dev, ResType::Pd)[..], &[(2, me, 1)]);
        assert_eq!(&listed(&dev, ResType::Cq)[..], &[(0, me, 0)]);
        drop(mr);
        assert_eq!(listed(&dev, ResType::Mr).len(), 0);
        // An unsafe global rkey needs a DMA MR the PD keeps (not listed).
        take(&calls);
        let open = Pd::alloc_unsafe_global_rkey(&dev, crate::kern_name!())?;
        assert_eq!(&take(&calls)[..], &["alloc_pd", "get_dma_mr"]);
        assert_eq!(
            (open.local_dma_lkey(), open.unsafe_global_rkey()),
            (0x5a, Some(8))
        );
        assert_eq!(listed(&dev, ResType::Mr).len(), 0);
        drop(open);
        assert_eq!(&take(&calls)[..], &["dereg_mr", "dealloc_pd"]);
        drop((pd, cq));
        assert_eq!(listed(&dev, ResType::Pd).len(), 0);
        assert_eq!(listed(&dev, ResType::Cq).len(), 0);
        drop(dev);
        drop(reg);
        Ok(())
    }

    #[test]
    fn srqs_and_ahs_reach_the_driver_as_its_own() -> Result {
        let calls = calls()?;
        let reg = register(&calls)?;
        let dev = reg.device().clone();
        let pd = Pd::alloc(&dev, crate::kern_name!())?;
        let attr = SrqAttr {
            max_wr: 8,
            max_sge: 1,
            srq_limit: 0,
        };
        // Past the device's limits: refused before the driver is asked (max_srq_wr is 0).
        assert_eq!(Srq::create(&pd, &attr, None).err(), Some(EINVAL));
        take(&calls);
        // The kunit fake has no SRQ limit: make one with a device that has.
        let big = kunit_fake::register_recording_with(&calls, |a| a.max_srq_wr = 64)?;
        let bdev = big.device().clone();
        let bpd = Pd::alloc(&bdev, crate::kern_name!())?;
        let cq = Cq::create(
            &bdev,
            &CqInit {
                cqe: 4,
                comp_vector: 0,
                flags: 0,
            },
            None,
            crate::kern_name!(),
        )?;
        let srq = Srq::create(&bpd, &attr, None)?;
        assert_eq!(
            srq.modify(&attr, SrqAttrField::Limit.into()),
            Err(EOPNOTSUPP)
        );
        let qp_init = |srq: Option<Arc<Srq>>| QpInit {
            qp_type: QpType::Ud,
            send_cq: cq.clone(),
            recv_cq: cq.clone(),
            cap: QpCap::default(),
            sq_sig_all: false,
            kern_name: crate::kern_name!(),
            srq,
            event_handler: None,
            port_num: 0,
        };
        let qp = Qp::create(&bpd, qp_init(Some(srq.clone())))?;
        // The driver got its own SRQ state (the fake reports its number as dest_qp_num).
        assert!(qp.query()?.dest_qp_num != 0);
        assert_eq!((srq.users(), bpd.users()), (1, 2));
        assert_eq!(&listed(&bdev, ResType::Srq)[..], &[(0, &b"ib_core"[..], 1)]);
        // An SRQ of another device is refused before the driver sees it.
        let foreign_srq = Srq::create(&bpd, &attr, None)?;
        let other = kunit_fake::register_recording_with(&calls, |a| a.max_srq_wr = 64)?;
        let opd = Pd::alloc(other.device(), crate::kern_name!())?;
        let ocq = Cq::create(
            other.device(),
            &CqInit {
                cqe: 4,
                comp_vector: 0,
                flags: 0,
            },
            None,
            crate::kern_name!(),
        )?;
        let mut foreign = qp_init(Some(foreign_srq.clone()));
        foreign.send_cq = ocq.clone();
        foreign.recv_cq = ocq.clone();
        assert_eq!(Qp::create(&opd, foreign).err(), Some(EINVAL));
        // AHs: a port the device lacks is refused; a UD work request whose AH is of another
        // device is refused at post, the ones before it reach the driver.
        let ah_attr = AhAttr {
            dlid: 1,
            port_num: 1,
            ..AhAttr::default()
        };
        assert_eq!(
            Ah::create(
                &bpd,
                &AhAttr {
                    port_num: 2,
                    ..ah_attr
                }
            )
            .err(),
            Some(EINVAL)
        );
        let ah = Ah::create(&bpd, &ah_attr)?;
        let oah = Ah::create(&opd, &ah_attr)?;
        // The QP, the two SRQs and the AH.
        assert_eq!(bpd.users(), 4);
        take(&calls);
        let wr = |ah| SendWr {
            ud: Some(UdWr {
                ah,
                remote_qpn: 1,
                remote_qkey: 2,
            }),
            ..SendWr::default()
        };
        let bad = qp.post_send(&[wr(&oah)]).err();
        assert_eq!(bad.map(|e| (e.first_bad, e.err)), Some((0, EINVAL)));
        // With a good one first, the driver is asked (and lacks post_send here).
        let bad = qp.post_send(&[wr(&ah), wr(&oah)]).err();
        assert_eq!(bad.map(|e| e.err), Some(EOPNOTSUPP));
        assert!(take(&calls).is_empty());
        drop((qp, ah, oah));
        assert_eq!((srq.users(), bpd.users()), (0, 2));
        drop(srq);
        assert_eq!(listed(&bdev, ResType::Srq).len(), 1);
        drop(foreign_srq);
        assert_eq!(listed(&bdev, ResType::Srq).len(), 0);
        assert_eq!(bpd.users(), 0);
        drop((opd, ocq, other, cq, bpd, bdev, big, pd, dev, reg));
        Ok(())
    }

    #[test]
    fn event_handlers_get_what_drivers_raise() -> Result {
        let seen = Arc::new(Atomic::new(0u32), GFP_KERNEL)?;
        let s = seen.clone();
        let handler: EventHandler = KBox::new(
            move |e: EventType| {
                s.store(u32::from(e as u8) + 100, Relaxed);
            },
            GFP_KERNEL,
        )?;
        let n = EventNotifier::new(Some(handler))?;
        n.clone().raise(EventType::SrqLimitReached);
        assert_eq!(seen.load(Relaxed), 115);
        n.raise(EventType::QpLastWqeReached);
        assert_eq!(seen.load(Relaxed), 116);
        // A CQ's notifier raises CqErr to the CQ's event handler only.
        let s = seen.clone();
        let on_cq: EventHandler = KBox::new(
            move |e: EventType| {
                s.store(u32::from(e as u8) + 200, Relaxed);
            },
            GFP_KERNEL,
        )?;
        let cq = CqNotifier::new(None, Some(on_cq))?;
        cq.completion();
        assert_eq!(seen.load(Relaxed), 116);
        cq.error();
        assert_eq!(seen.load(Relaxed), 200);
        // Device events reach every registered handler until its registration drops.
        let calls = calls()?;
        let reg = register(&calls)?;
        let log = Arc::new(Atomic::new(0u32), GFP_KERNEL)?;
        let handler = |shift: u32| -> Result<crate::device::events::DeviceEventHandler> {
            let l = log.clone();
            Ok(KBox::new(
                move |e: EventType, port: u32| {
                    l.fetch_add((u32::from(e as u8) * 10 + port) << shift, Relaxed);
                },
                GFP_KERNEL,
            )?)
        };
        let first = DeviceEventRegistration::new(reg.device(), handler(0)?)?;
        let second = DeviceEventRegistration::new(reg.device(), handler(16)?)?;
        reg.dispatch_event(EventType::PortActive, 1);
        assert_eq!(log.load(Relaxed), 91 | (91 << 16));
        drop(first);
        log.store(0, Relaxed);
        reg.dispatch_event(EventType::PortErr, 1);
        assert_eq!(log.load(Relaxed), 101 << 16);
        drop(second);
        reg.dispatch_event(EventType::PortErr, 1);
        assert_eq!(log.load(Relaxed), 101 << 16);
        drop(reg);
        // Without a handler nothing happens.
        EventNotifier::new(None)?.raise(EventType::QpFatal);
        assert_eq!(EventType::DeviceSpeedChange as u8, 20);
        assert_eq!(EventType::CqErr as u8, 0);
        Ok(())
    }

    #[test]
    fn buffers_are_bounds_checked_and_polls_too() -> Result {
        let calls = calls()?;
        let reg = register(&calls)?;
        let dev = reg.device().clone();
        // No post_send or post_recv: a device, but not a kernel verbs provider.
        assert!(!dev.kverbs_provider());
        assert_eq!(DmaBuffer::alloc(&dev, 0).err(), Some(EINVAL));
        assert_eq!(
            DmaBuffer::alloc(&dev, DMA_BUFFER_MAX + 1).err(),
            Some(EINVAL)
        );
        assert!(take(&calls).is_empty());
        let buf = DmaBuffer::alloc(&dev, 64)?;
        buf.write(60, b"abcd")?;
        let mut out = [0u8; 4];
        buf.read(60, &mut out)?;
        assert_eq!(&out, b"abcd");
        // Past the end (and overflowing offsets) never reach the driver.
        assert_eq!(buf.write(61, b"abcd"), Err(EINVAL));
        assert_eq!(buf.read(usize::MAX, &mut out), Err(EINVAL));
        assert_eq!(buf.sge(32, 33, 7).err(), Some(EINVAL));
        let sge = buf.sge(32, 32, 7)?;
        assert_eq!((sge.addr, sge.length, sge.lkey), (0x1020, 32, 7));
        // A driver claiming more completions than the room it had is caught.
        let cq = Cq::create(
            &dev,
            &CqInit {
                cqe: 4,
                comp_vector: 0,
                flags: 0,
            },
            None,
            crate::kern_name!(),
        )?;
        let mut wc = [WorkCompletion::default(); 2];
        assert_eq!(cq.poll(&mut wc), Err(EIO));
        drop(cq);
        drop(buf);
        drop(dev);
        drop(reg);
        Ok(())
    }

    #[test]
    fn the_driver_gets_its_own_objects_back() -> Result {
        let calls = calls()?;
        let reg = register(&calls)?;
        let dev = reg.device().clone();
        let pd = Pd::alloc(&dev, crate::kern_name!())?;
        let init = CqInit {
            cqe: 4,
            comp_vector: 0,
            flags: 0,
        };
        let send_cq = Cq::create(&dev, &init, None, crate::kern_name!())?;
        let recv_cq = Cq::create(&dev, &init, None, crate::kern_name!())?;
        let qp_init = |send: &Arc<Cq>, recv: &Arc<Cq>| QpInit {
            qp_type: QpType::Rc,
            send_cq: send.clone(),
            recv_cq: recv.clone(),
            cap: QpCap::default(),
            sq_sig_all: false,
            kern_name: crate::kern_name!(),
            srq: None,
            event_handler: None,
            port_num: 0,
        };
        let qp = Qp::create(&pd, qp_init(&send_cq, &recv_cq))?;
        // The driver's QP was made from its PD (1) and its two CQs (2 and 3), in their roles.
        let a = qp.query()?;
        assert_eq!((a.qkey, a.sq_psn, a.rq_psn), (1, 2, 3));
        assert_eq!(
            &take(&calls)[..],
            &["alloc_pd", "create_cq", "create_cq", "create_qp"]
        );
        // Objects of another device of the same driver type never reach this driver's verbs.
        let other = register(&calls)?;
        let foreign_cq = Cq::create(other.device(), &init, None, crate::kern_name!())?;
        assert_eq!(
            Qp::create(&pd, qp_init(&send_cq, &foreign_cq)).err(),
            Some(EINVAL)
        );
        assert_eq!(
            Qp::create(&pd, qp_init(&foreign_cq, &recv_cq)).err(),
            Some(EINVAL)
        );
        assert_eq!(&take(&calls)[..], &["create_cq"]);
        // Verbs the driver lacks: EOPNOTSUPP, before anything reaches it.
        assert_eq!(qp.post_send(&[]).err().map(|e| e.err), Some(EOPNOTSUPP));
        assert_eq!(qp.post_recv(&[]).err().map(|e| e.first_bad), Some(0));
        drop((qp, foreign_cq, other, send_cq, recv_cq, pd));
        assert_eq!(
            &take(&calls)[..],
            &[
                "destroy_qp",
                "destroy_cq",
                "destroy_cq",
                "destroy_cq",
                "dealloc_pd"
            ]
        );
        // A driver without verbs (`NoVerbs` objects) has no PDs or CQs to give.
        let plain = kunit_fake::register(b"kunit_noverbs%d", 1)?;
        assert_eq!(
            Pd::alloc(plain.device(), crate::kern_name!()).err(),
            Some(EOPNOTSUPP)
        );
        assert_eq!(
            Cq::create(plain.device(), &init, None, crate::kern_name!()).err(),
            Some(EOPNOTSUPP)
        );
        assert_eq!(plain.device().restrack().count(ResType::Pd), 0);
        Ok(())
    }

    #[test]
    fn flags_have_the_c_values() {
        use QpAttrField as F;
        let all = Access::LocalWrite | Access::RemoteWrite | Access::RemoteRead;
        assert_eq!(u32::from(all | Access::RemoteAtomic), 0xf);
        assert!(all.contains(Access::RemoteRead) && !all.contains(Access::RemoteAtomic));
        assert_eq!(u32::from(AccessFlags::default()), 0);
        assert_eq!(u32::from(QpAttrMask::from(F::DestQpn)), 1 << 20);
        assert_eq!(
            u32::from(F::State | F::MinRnrTimer | F::Av),
            1 | (1 << 15) | (1 << 7)
        );
        // A mask holds only fields `QpAttr` has (and CUR_STATE): complementing never sets
        // another bit.
        assert_eq!(QpAttrMask::all_bits(), 0x13_bffb);
        assert_eq!(u32::from(!QpAttrMask::empty()), QpAttrMask::all_bits());
        assert_eq!(
            u64::from(DeviceCap::BadPkeyCntr | DeviceCap::CcDmaBounce),
            2 | (1 << 41)
        );
        assert_eq!(u64::from(DeviceCapFlags::default()), 0);
    }
}
