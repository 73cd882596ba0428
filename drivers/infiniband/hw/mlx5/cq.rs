// SPDX-License-Identifier: GPL-2.0

//! Completion queues of kernel consumers (C's `mlx5_ib_create_cq` for a kernel CQ,
//! `mlx5_ib_poll_cq`, `mlx5_ib_arm_cq`, `mlx5_ib_resize_cq`, `mlx5_ib_destroy_cq`,
//! `__mlx5_ib_cq_clean`).
//!
//! A CQ is a ring of 64-byte CQEs in coherent memory, all starting as "invalid"; a
//! doorbell record (word 0: consumer index, word 1: arm request) and CREATE_CQ with the
//! completion EQ of the consumer's vector and the function's UAR page. Its completion handler
//! (registered in `mlx5_core`'s CQ table) bumps the arm sequence number and calls the
//! consumer's handler. Polling walks the ring under an IRQ-safe spinlock, finds the QP of
//! each CQE in the CQ's own table of QPs (so a CQE naming an unknown QP is skipped, never
//! followed) and takes the work request id from the QP's rings.
//!
//! Resizing gives the device a new ring with MODIFY_CQ. The device ends the old ring with a
//! RESIZE_CQ entry and goes on in the new one, at the next index: whichever comes first, a
//! poll meeting that entry or the resize once the command returned (moving the entries not
//! polled yet across, C's `copy_resize_cqes`), switches the CQ to the new ring. The old ring
//! is freed by the resize, in process context, never by a poll.

pub(crate) mod cqe;

use crate::cq::cqe::{op, Cqe64, CqeFields, CQE_INIT_OP_OWN, CQE_SIZE, OP_OWN};
use crate::qp::rings::QpShared;
use crate::user::{cq::UserCq, umem::coherent_page_list};
use ib_core::{
    verbs::types::{CqInit, CqNotifier},
    verbs::wr::{WcStatus, WorkCompletion},
};
use kernel::{
    dma::CoherentView,
    io::io_read,
    new_mutex, new_spinlock, new_spinlock_irqsave,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        barrier::{mb, ordering::Read, ordering::Write},
        spinlock_irqsave::SpinLockIrqSave,
        Arc, Mutex, SpinLock,
    },
};
use mlx5_core::{
    auxdev::{CoherentBuf, CqHandler, CqRegistration, DoorbellRecord, Mlx5Device},
    cmd::commands::Commands,
    ifc::verbs::{
        cq_resize_select, CreateCq, CreateCqIn, DestroyCq, DestroyCqIn, ModifyCq, ModifyCqIn,
        CQ_OPMOD_RESIZE,
    },
};

/// Offset of the CQ doorbell in the UAR page (`MLX5_CQ_DOORBELL`).
const CQ_DOORBELL: usize = 0x20;
/// Arm for solicited completions only (`MLX5_CQ_DB_REQ_NOT_SOL`).
const CQ_DB_REQ_NOT_SOL: u32 = 1 << 24;
/// `MLX5_EVENT_TYPE_CQ_ERROR`.
const EVENT_TYPE_CQ_ERROR: u8 = 0x04;
/// Doorbell record words.
const SET_CI: usize = 0;
const ARM: usize = 1;

/// A ring of CQEs in coherent memory.
struct Ring {
    buf: CoherentBuf,
    /// Entries (a power of two).
    entries: u32,
}

impl Ring {
    /// A ring of `entries` CQEs (a power of two), every one invalid (C's `init_cq_frag_buf`).
    fn new(dev: &Mlx5Device, entries: u32) -> Result<Ring> {
        let buf = dev.alloc_coherent(entries as usize * CQE_SIZE)?;
        for i in 0..entries as usize {
            buf.write(i * CQE_SIZE + OP_OWN, &[CQE_INIT_OP_OWN])?;
        }
        Ok(Ring { buf, entries })
    }

    /// Byte offset of entry `n` (an index that counts on past the ring's end).
    fn offset(&self, n: u32) -> usize {
        (n & (self.entries - 1)) as usize * CQE_SIZE
    }

    /// `op_own` of entry `n`.
    fn op_own(&self, n: u32) -> Result<u8> {
        self.buf.read_u8(self.offset(n) + OP_OWN)
    }

    /// Whether software owns entry `n`.
    fn sw_owned(&self, n: u32) -> bool {
        self.op_own(n)
            .is_ok_and(|o| cqe::sw_owned(o, n, self.entries))
    }
}

/// A CQE in the ring, read in place: each field with one volatile load when asked for.
#[derive(Clone, Copy)]
struct InPlace<'a>(CoherentView<'a, Cqe64>);

impl CqeFields for InPlace<'_> {
    #[inline]
    fn op_own(&self) -> u8 {
        io_read!(self.0, .op_own)
    }
    #[inline]
    fn sop_drop_qpn(&self) -> u32 {
        u32::from_be(io_read!(self.0, .sop_drop_qpn))
    }
    #[inline]
    fn wqe_counter(&self) -> u16 {
        u16::from_be(io_read!(self.0, .wqe_counter))
    }
    #[inline]
    fn byte_cnt(&self) -> u32 {
        u32::from_be(io_read!(self.0, .byte_cnt))
    }
    #[inline]
    fn imm(&self) -> u32 {
        u32::from_be(io_read!(self.0, .imm))
    }
    #[inline]
    fn flags_rqpn(&self) -> u32 {
        u32::from_be(io_read!(self.0, .flags_rqpn))
    }
    #[inline]
    fn slid(&self) -> u16 {
        u16::from_be(io_read!(self.0, .slid))
    }
    #[inline]
    fn ml_path(&self) -> u8 {
        io_read!(self.0, .ml_path)
    }
    #[inline]
    fn syndromes(&self) -> (u8, u8) {
        (
            io_read!(self.0, .syndrome),
            io_read!(self.0, .vendor_syndrome),
        )
    }
}

/// What polling changes, under the CQ's lock.
pub(crate) struct CqInner {
    /// Consumer index (counts every CQE consumed, wraps at 2^32).
    cons_index: u32,
    /// The ring polled.
    ring: Ring,
    /// The ring a resize gave the device, until the CQ switches to it (C's `resize_buf`).
    resize: Option<Ring>,
    /// A ring a poll switched away from, for the resize to free (a poll runs in atomic
    /// context, where coherent memory cannot be freed).
    retired: Option<Ring>,
    /// The QPs using this CQ, by number (few: a linear search), and for which queues.
    qps: KVec<(u32, Arc<QpShared>, Roles)>,
}

/// Which of a QP's queues complete on a CQ.
#[derive(Clone, Copy, Default)]
pub(crate) struct Roles {
    send: bool,
    recv: bool,
}

/// A queue of a QP, as [`CqShared::add_qp`] adds it.
#[derive(Clone, Copy)]
pub(crate) enum QueueRole {
    /// The send queue.
    Send,
    /// The receive queue.
    Recv,
}

impl Roles {
    fn add(&mut self, role: QueueRole) {
        match role {
            QueueRole::Send => self.send = true,
            QueueRole::Recv => self.recv = true,
        }
    }
}

/// The completion handler `mlx5_core` calls from its EQ.
struct Events {
    /// Arm sequence number: bumped on every completion event, as C's `mlx5_eq_comp_int`.
    arm_sn: Atomic<u32>,
    notifier: CqNotifier,
    /// The CQ number (set once CREATE_CQ returned), for the log.
    cqn: Atomic<u32>,
}

impl CqHandler for Events {
    fn completion(&self) {
        self.arm_sn.fetch_add(1, Relaxed);
        self.notifier.completion();
    }

    fn event(&self, event_type: u8) {
        // As C's `mlx5_ib_cq_event`: a CQ error goes to the consumer's event handler; any other
        // type is unexpected.
        if event_type == EVENT_TYPE_CQ_ERROR {
            self.notifier.error();
        } else {
            pr_warn!(
                "Unexpected event type {} on CQ {:06x}\n",
                event_type,
                self.cqn.load(Relaxed)
            );
        }
    }
}

/// The shared state of a CQ (QPs reference it for their CQE cleaning).
#[pin_data]
pub(crate) struct CqShared {
    /// The CQ number (set once CREATE_CQ returned).
    cqn: Atomic<u32>,
    /// Entries of the ring, as the last resize made it (C's `ibcq.cqe` plus one).
    entries: Atomic<u32>,
    db: DoorbellRecord,
    events: Arc<Events>,
    #[pin]
    inner: SpinLockIrqSave<CqInner>,
    /// One resize at a time (C's `resize_mutex`); taken before `inner`.
    #[pin]
    resizing: Mutex<()>,
}

/// The CQs of a device, for the internal-error handling (C walks its QP list to find the CQs
/// with work outstanding; ours are found from their QP tables).
#[pin_data]
pub(crate) struct DeviceCqs {
    #[pin]
    list: SpinLock<KVec<Arc<CqShared>>>,
}

impl DeviceCqs {
    /// None yet.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                list <- new_spinlock!(KVec::new(), "mlx5_ib::cq::DeviceCqs::list"),
            }),
            GFP_KERNEL,
        )
    }

    /// Adds a created CQ.
    pub(crate) fn add(&self, cq: &Arc<CqShared>) -> Result {
        // Under a spinlock: no sleeping allocation (CQ creation is process context).
        self.list.lock().push(cq.clone(), GFP_ATOMIC)?;
        Ok(())
    }

    /// Removes a CQ being destroyed.
    pub(crate) fn remove(&self, cq: &Arc<CqShared>) {
        self.list.lock().retain(|c| !Arc::ptr_eq(c, cq));
    }

    /// The device entered the internal-error state (C's `mlx5_ib_handle_internal_error`): the
    /// completion handler of every CQ with work outstanding is called, so that its consumer
    /// polls and gets the outstanding requests back as flushed. Process context.
    pub(crate) fn internal_error(&self) -> Result {
        let cqs = {
            let list = self.list.lock();
            let mut copy = KVec::with_capacity(list.len(), GFP_ATOMIC)?;
            for c in list.iter() {
                copy.push(c.clone(), GFP_ATOMIC)?;
            }
            copy
        };
        for cq in cqs.iter().filter(|c| c.has_outstanding()) {
            cq.notify_completion();
        }
        Ok(())
    }
}

/// A CQ's driver state (C's `mlx5_ib_cq`): one type for kernel consumers' CQs and user
/// contexts'.
pub(crate) enum Mlx5Cq<'bound> {
    /// A kernel consumer's: the driver's ring, which the driver polls and arms.
    Kernel(KernelCq),
    /// A user context's: user space's ring, which user space polls and arms (`user::cq`).
    User(UserCq<'bound>),
}

impl Mlx5Cq<'_> {
    /// The CQ number.
    pub(crate) fn cqn(&self) -> u32 {
        match self {
            Self::Kernel(k) => k.shared.cqn(),
            Self::User(u) => u.cqn(),
        }
    }

    /// Its size as its consumer sees it (C's `ibcq.cqe`: the entries made, less one).
    pub(crate) fn size(&self) -> u32 {
        match self {
            Self::Kernel(k) => k.shared.entries().saturating_sub(1),
            Self::User(u) => u.size(),
        }
    }

    /// A kernel consumer's CQ, shared with the QPs that use it (`EINVAL` for a user CQ, which
    /// the kernel neither polls nor arms).
    pub(crate) fn kernel(&self) -> Result<&Arc<CqShared>> {
        match self {
            Self::Kernel(k) => Ok(&k.shared),
            Self::User(_) => Err(EINVAL),
        }
    }
}

/// A kernel consumer's CQ.
pub(crate) struct KernelCq {
    /// Shared with the QPs that use it.
    shared: Arc<CqShared>,
    /// The CQ table registration (dropped before DESTROY_CQ).
    reg: Option<CqRegistration>,
}

/// Entries of a CQ asked for `cqe` completions (C: room for one more, a power of two).
/// `EINVAL` past `log_max_cq_sz`.
pub(crate) fn cq_entries(cqe: u32, log_max_cq_sz: u32) -> Result<u32> {
    let n = cqe
        .checked_add(1)
        .and_then(u32::checked_next_power_of_two)
        .ok_or(EINVAL)?;
    if u64::from(n) > 1u64 << log_max_cq_sz.min(32) {
        return Err(EINVAL);
    }
    Ok(n)
}

/// Creates a kernel consumer's CQ.
pub(crate) fn create(
    dev: &Mlx5Device,
    log_max_cq_sz: u32,
    init: &CqInit,
    notifier: &CqNotifier,
) -> Result<KernelCq> {
    let entries = cq_entries(init.cqe, log_max_cq_sz)?;
    let eqn = dev.comp_eqn(init.comp_vector)?;
    let ring = Ring::new(dev, entries)?;
    let db = dev.alloc_db()?;
    let dbr = db.dma();
    let pas = coherent_page_list(ring.buf.dma(), ring.buf.len())?;
    // Everything is allocated before CREATE_CQ: once the CQ exists, its memory is freed only
    // after DESTROY_CQ succeeded.
    let events = Arc::new(
        Events {
            arm_sn: Atomic::new(0),
            notifier: notifier.clone(),
            cqn: Atomic::new(0),
        },
        GFP_KERNEL,
    )?;
    let shared = Arc::pin_init(
        pin_init!(CqShared {
            cqn: Atomic::new(0),
            entries: Atomic::new(entries),
            db,
            events,
            inner <- new_spinlock_irqsave!(CqInner {
                cons_index: 0,
                ring,
                resize: None,
                retired: None,
                qps: KVec::new(),
            }),
            resizing <- new_mutex!(()),
        }),
        GFP_KERNEL,
    )?;
    // Set in place: a CQ may be created deep in a probe (a client's `add` during device
    // registration), where copies of the layout per builder step would cost kilobytes of stack.
    let mut input = CreateCqIn::new();
    input.set_cqe_sz(0)?;
    input.set_log_cq_size(entries.trailing_zeros().into())?;
    input.set_uar_page(dev.uar().index().into())?;
    input.set_c_eqn(eqn.into())?;
    input.set_log_page_size(0)?;
    input.set_dbr_addr(dbr)?;
    let out = match dev.exec_var_large::<CreateCq>(&input, &pas, 0) {
        Ok((out, _)) => out,
        Err(e) => {
            // A timed-out CREATE_CQ may have created the CQ: its memory is never freed then.
            if e == ETIMEDOUT {
                core::mem::forget(shared);
            }
            return Err(e);
        }
    };
    let cqn = out.cqn() as u32;
    shared.cqn.store(cqn, Relaxed);
    shared.events.cqn.store(cqn, Relaxed);
    let handler: Arc<dyn CqHandler> = shared.events.clone();
    match dev.register_cq(cqn, handler) {
        Ok(reg) => Ok(KernelCq {
            shared,
            reg: Some(reg),
        }),
        Err(e) => {
            if destroy_cmd(dev.commands(), cqn).is_err() {
                core::mem::forget(shared);
            }
            Err(e)
        }
    }
}

fn destroy_cmd(cmds: &Commands, cqn: u32) -> Result {
    cmds.exec::<DestroyCq>(&DestroyCqIn::new().cqn(cqn.into())?)?;
    Ok(())
}

/// Destroys a CQ: unregisters its handler, then DESTROY_CQ; its memory is freed (or unpinned)
/// unless the command failed (the device may still write it then).
pub(crate) fn destroy(cmds: &Commands, cq: Mlx5Cq<'_>) -> Result {
    match cq {
        Mlx5Cq::Kernel(k) => destroy_kernel(cmds, k),
        Mlx5Cq::User(u) => crate::user::cq::destroy(cmds, u),
    }
}

fn destroy_kernel(cmds: &Commands, mut cq: KernelCq) -> Result {
    drop(cq.reg.take());
    let r = destroy_cmd(cmds, cq.shared.cqn());
    if r.is_err() {
        core::mem::forget(cq.shared);
    }
    r
}

impl CqShared {
    /// The CQ number.
    pub(crate) fn cqn(&self) -> u32 {
        self.cqn.load(Relaxed)
    }

    /// Entries of the CQ's ring (the new ring's once a resize returned).
    pub(crate) fn entries(&self) -> u32 {
        self.entries.load(Relaxed)
    }

    /// Adds a QP's queue to the CQ's table (a QP using the CQ for both queues has one entry).
    pub(crate) fn add_qp(&self, qpn: u32, qp: &Arc<QpShared>, role: QueueRole) -> Result {
        let mut inner = self.inner.lock();
        if let Some((_, _, roles)) = inner.qps.iter_mut().find(|(n, _, _)| *n == qpn) {
            roles.add(role);
            return Ok(());
        }
        let mut roles = Roles::default();
        roles.add(role);
        inner.qps.push((qpn, qp.clone(), roles), GFP_ATOMIC)?;
        Ok(())
    }

    /// Whether a QP has requests outstanding on a queue that completes here (C's
    /// `mlx5_ib_handle_internal_error` looks for those CQs).
    pub(crate) fn has_outstanding(&self) -> bool {
        let inner = self.inner.lock();
        inner
            .qps
            .iter()
            .any(|(_, qp, r)| qp.outstanding(r.send, r.recv))
    }

    /// Calls the consumer's completion handler (C's `mcq->comp`, `mlx5_ib_cq_comp`): not a
    /// completion event from the EQ, so the arm sequence number stays as it is.
    pub(crate) fn notify_completion(&self) {
        self.events.notifier.completion();
    }

    /// Polls in the internal-error state (C's `mlx5_ib_poll_sw_comp`): the hardware completes
    /// nothing any more, so every outstanding request of the QPs completing here is completed
    /// in software as flushed, send queues first, then receive queues; up to `wc.len()`.
    pub(crate) fn poll_flushed(&self, wc: &mut [WorkCompletion]) -> usize {
        let inner = self.inner.lock();
        let mut n = 0;
        for send in [true, false] {
            for (_, qp, r) in inner.qps.iter() {
                let Some(rest) = wc.get_mut(n..) else {
                    return n;
                };
                n += match (send, r.send, r.recv) {
                    (true, true, _) => qp.flush_sq(rest),
                    (false, _, true) => qp.flush_rq(rest),
                    _ => 0,
                };
            }
        }
        n
    }

    /// Removes a QP from the CQ's table and drops its CQEs still in the ring.
    pub(crate) fn remove_qp(&self, qpn: u32) {
        let mut inner = self.inner.lock();
        // Clean first: the QP's entry finds the SRQ of its dropped receives.
        self.clean_locked(&mut inner, qpn);
        inner.qps.retain(|(n, _, _)| *n != qpn);
    }

    /// Drops the CQEs of QP `qpn` still in the ring (C's `__mlx5_ib_cq_clean`).
    pub(crate) fn clean(&self, qpn: u32) {
        let mut inner = self.inner.lock();
        self.clean_locked(&mut inner, qpn);
    }

    fn clean_locked(&self, inner: &mut CqInner, qpn: u32) {
        let ci = inner.cons_index;
        let ring = &inner.ring;
        let mut prod = ci;
        while ring.sw_owned(prod) {
            prod = prod.wrapping_add(1);
            if prod.wrapping_sub(ci) == ring.entries - 1 {
                break;
            }
        }
        mb(Read);
        let srq = inner
            .qps
            .iter()
            .find(|(q, _, _)| *q == qpn)
            .map(|(_, qp, _)| qp.clone());
        let mut freed = 0u32;
        let mut raw = [0u8; CQE_SIZE];
        while prod != ci {
            prod = prod.wrapping_sub(1);
            if ring.buf.read(ring.offset(prod), &mut raw).is_err() {
                return;
            }
            let entry: Cqe64 = zerocopy::transmute!(raw);
            let c = cqe::decode(&entry);
            if c.qpn == qpn {
                // A dropped receive of an SRQ gives its WQE back (C's `__mlx5_ib_cq_clean`).
                if let Some(srq) = srq.as_ref().and_then(|q| q.srq()) {
                    if !matches!(c.opcode, op::REQ | op::REQ_ERR) {
                        srq.free(c.wqe_counter);
                    }
                }
                freed += 1;
            } else if freed != 0 {
                let dest = ring.offset(prod.wrapping_add(freed));
                let owner = ring.buf.read_u8(dest + OP_OWN).unwrap_or(0) & 1;
                raw[OP_OWN] = (raw[OP_OWN] & !1) | owner;
                let _ = ring.buf.write(dest, &raw);
            }
        }
        if freed != 0 {
            inner.cons_index = ci.wrapping_add(freed);
            mb(Write);
            self.db.set(SET_CI, inner.cons_index & 0xff_ffff);
        }
    }

    /// Polls up to `wc.len()` completions. Each entry is read in place: its ownership byte,
    /// then (after the read barrier) only the fields its completion needs.
    #[inline]
    pub(crate) fn poll(&self, wc: &mut [WorkCompletion]) -> Result<usize> {
        let mut guard = self.inner.lock();
        // Through a plain reference, so that the entry read in the ring and the consumer index
        // borrow apart.
        let inner = &mut *guard;
        let start = inner.cons_index;
        let mut n = 0;
        while n < wc.len() {
            let ci = inner.cons_index;
            let ring = &inner.ring;
            let e = InPlace(ring.buf.view::<Cqe64>(ring.offset(ci))?);
            let op_own = e.op_own();
            if !cqe::sw_owned(op_own, ci, ring.entries) {
                break;
            }
            inner.cons_index = ci.wrapping_add(1);
            // Read the entry only after its ownership (C's `rmb`).
            mb(Read);
            let opcode = op_own >> 4;
            if opcode == op::RESIZE_CQ {
                // The old ring ends here; the device goes on in the new one, at the next index
                // (C's `mlx5_poll_one`). Without a resize under way the entry is skipped.
                if let Some(new) = inner.resize.take() {
                    let old = core::mem::replace(&mut inner.ring, new);
                    inner.retired = Some(old);
                }
                continue;
            }
            let qpn = e.qpn();
            let Some(qp) = inner
                .qps
                .iter()
                .find(|(q, _, _)| *q == qpn)
                .map(|(_, qp, _)| qp)
            else {
                // A QP this CQ does not know (destroyed): skip its CQE.
                continue;
            };
            let Some(w) = wc.get_mut(n) else { break };
            *w = WorkCompletion {
                qp_num: qpn,
                ..WorkCompletion::default()
            };
            match opcode {
                op::REQ => {
                    let (opcode, has_len) = cqe::req_opcode(e.send_opcode());
                    w.opcode = opcode;
                    if has_len {
                        w.byte_len = e.byte_cnt();
                    }
                    w.wr_id = qp.sq_complete(e.wqe_counter());
                }
                op::RESP_WR_IMM | op::RESP_SEND | op::RESP_SEND_IMM | op::RESP_SEND_INV => {
                    let (opcode, imm) = cqe::resp_opcode(opcode);
                    let (src_qp, sl, grh) = cqe::split_flags_rqpn(e.flags_rqpn());
                    w.opcode = opcode;
                    w.imm_data = imm.then(|| e.imm());
                    w.byte_len = e.byte_cnt();
                    w.src_qp = src_qp;
                    w.slid = e.slid();
                    w.sl = sl;
                    w.grh = grh;
                    w.dlid_path_bits = e.ml_path();
                    w.wr_id = qp.rq_complete(e.wqe_counter());
                }
                op::REQ_ERR | op::RESP_ERR => {
                    let (syndrome, vendor) = e.syndromes();
                    w.status = cqe::error_status(syndrome);
                    w.vendor_err = vendor.into();
                    w.wr_id = if opcode == op::REQ_ERR {
                        qp.sq_complete(e.wqe_counter())
                    } else {
                        qp.rq_complete(e.wqe_counter())
                    };
                }
                _ => {
                    // Not a CQE a kernel RC QP produces: report it as C's default would not
                    // touch the rings; a general error.
                    w.status = WcStatus::GeneralErr;
                }
            }
            n += 1;
        }
        if inner.cons_index != start {
            self.db.set(SET_CI, inner.cons_index & 0xff_ffff);
        }
        Ok(n)
    }

    /// Resizes the CQ to hold `cqe` completions (C's `mlx5_ib_resize_cq` for a kernel CQ):
    /// `EINVAL` past `log_max_cq_sz`, nothing to do when the ring has that size already. The
    /// completions not polled yet are kept. Process context.
    pub(crate) fn resize(&self, dev: &Mlx5Device, log_max_cq_sz: u32, cqe: u32) -> Result {
        let entries = cq_entries(cqe, log_max_cq_sz)?;
        let _one_at_a_time = self.resizing.lock();
        if entries == self.entries() {
            return Ok(());
        }
        let retired = {
            let mut inner = self.inner.lock();
            if inner.resize.is_some() {
                // A resize whose switch failed is still under way: the device writes its ring.
                return Err(EBUSY);
            }
            inner.retired.take()
        };
        drop(retired);
        let ring = Ring::new(dev, entries)?;
        let pas = coherent_page_list(ring.buf.dma(), ring.buf.len())?;
        let mut input = ModifyCqIn::new();
        input.set_op_mod(CQ_OPMOD_RESIZE.into())?;
        input.set_cqn(self.cqn().into())?;
        input.set_resize_field_select(
            cq_resize_select::LOG_SIZE | cq_resize_select::PG_OFFSET | cq_resize_select::PG_SIZE,
        )?;
        input.set_cqe_sz(0)?;
        input.set_page_offset(0)?;
        input.set_log_page_size(0)?;
        input.set_log_cq_size(entries.trailing_zeros().into())?;
        // The new ring is in place before the command: a poll that meets the old ring's
        // RESIZE_CQ entry switches to it.
        self.inner.lock().resize = Some(ring);
        if let Err(e) = dev.exec_var_large::<ModifyCq>(&input, &pas, 0) {
            let ring = self.inner.lock().resize.take();
            // A timed-out MODIFY_CQ may have given the device the new ring: never freed then.
            if e == ETIMEDOUT {
                core::mem::forget(ring);
            }
            return Err(e);
        }
        let old = {
            let mut inner = self.inner.lock();
            if inner.resize.is_some() {
                // As C, a failed switch leaves the resize under way: a poll meeting the
                // RESIZE_CQ entry completes it.
                let _ = Self::switch_ring(&mut inner, self.cqn());
            }
            self.entries.store(entries, Relaxed);
            inner.retired.take()
        };
        drop(old);
        Ok(())
    }

    /// Moves the entries not polled yet from the old ring to the new one, each one index on,
    /// up to the old ring's RESIZE_CQ entry, and switches to the new ring (C's
    /// `copy_resize_cqes`; C indexes the new ring with `& nent` rather than `& (nent - 1)`,
    /// which these bounded ring offsets do not copy). `EINVAL` if an entry before the
    /// RESIZE_CQ one is not there, `ENOMEM` if the old ring has none.
    fn switch_ring(inner: &mut CqInner, cqn: u32) -> Result {
        let Some(new) = inner.resize.as_ref() else {
            return Ok(());
        };
        let old = &inner.ring;
        let start = inner.cons_index;
        let mut i = start;
        let mut raw = [0u8; CQE_SIZE];
        loop {
            let op_own = old.op_own(i)?;
            if !cqe::sw_owned(op_own, i, old.entries) {
                pr_warn!("expected cqe in sw ownership\n");
                return Err(EINVAL);
            }
            mb(Read);
            if op_own >> 4 == op::RESIZE_CQ {
                break;
            }
            old.buf.read(old.offset(i), &mut raw)?;
            let to = i.wrapping_add(1);
            raw[OP_OWN] = (raw[OP_OWN] & !1) | u8::from(to & new.entries != 0);
            new.buf.write(new.offset(to), &raw)?;
            i = to;
            if i.wrapping_sub(start) >= old.entries {
                pr_warn!("resize CQ failed to get resize CQE, CQN {:#x}\n", cqn);
                return Err(ENOMEM);
            }
        }
        inner.cons_index = start.wrapping_add(1);
        if let Some(new) = inner.resize.take() {
            inner.retired = Some(core::mem::replace(&mut inner.ring, new));
        }
        Ok(())
    }

    /// Arms the CQ (C's `mlx5_cq_arm`): the arm word in the doorbell record, then the UAR
    /// doorbell with the CQ number.
    pub(crate) fn arm(&self, dev: &Mlx5Device, solicited: bool) -> Result {
        let sn = self.events.arm_sn.load(Relaxed) & 3;
        let ci = self.inner.lock().cons_index & 0xff_ffff;
        let cmd = if solicited { CQ_DB_REQ_NOT_SOL } else { 0 };
        let word = (sn << 28) | cmd | ci;
        self.db.set(ARM, word);
        // The record before the doorbell.
        mb(Write);
        let mut bytes = [0u8; 8];
        bytes[..4].copy_from_slice(&word.to_be_bytes());
        bytes[4..].copy_from_slice(&self.cqn().to_be_bytes());
        dev.uar().write64(CQ_DOORBELL, bytes)
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_ib_cq)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_as_c() -> Result {
        assert_eq!(cq_entries(64, 22)?, 128);
        assert_eq!(cq_entries(63, 22)?, 64);
        assert_eq!(cq_entries(0, 22)?, 1);
        assert_eq!(cq_entries(64, 6).err(), Some(EINVAL));
        assert_eq!(cq_entries(u32::MAX, 22).err(), Some(EINVAL));
        Ok(())
    }

    #[test]
    fn page_list_entries() -> Result {
        let p = coherent_page_list(0x1_0000_0000, 8192 + 1)?;
        assert_eq!(p.len(), 24);
        assert_eq!(&p[8..16], &0x1_0000_1000u64.to_be_bytes());
        assert_eq!(&p[16..24], &0x1_0000_2000u64.to_be_bytes());
        Ok(())
    }
}
