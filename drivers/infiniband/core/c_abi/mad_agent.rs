// SPDX-License-Identifier: GPL-2.0

//! The MAD agent API for C modules (ib_cm, the SA client): `ib_register_mad_agent`,
//! `ib_unregister_mad_agent`, `ib_create_send_mad`, `ib_free_send_mad`, `ib_post_send_mad`,
//! `ib_modify_mad` and `ib_free_recv_mad` with C's names and signatures (C's `drivers/infiniband/core/mad.c`),
//! over the core's MAD layer ([`MadAgent`]), which does the work: registration rules,
//! transaction ids, sends on QP0/QP1 with their response timeouts and retries, receives
//! dispatched by class and method.
//!
//! The `struct ib_mad_agent` C code reads (`device`, `qp`, `port_num`, `hi_tid`, `context`,
//! the handlers) stands for a [`MadAgent`]; its `qp` is a C view of the port's MAD QP (its
//! number, type, port, and a `struct ib_pd` of the port's PD, in which C modules create the
//! AHs of their sends: ib_cm's `rdma_create_ah(mad_agent->qp->pd, ...)`). A received MAD is
//! handed to the C `recv_handler` as C's `ib_mad_recv_wc` (its `ib_wc`, GRH and 256-byte MAD,
//! and for a response the request's `ib_mad_send_buf`), freed by `ib_free_recv_mad`; a send's
//! end reaches the C `send_handler` as C's `ib_mad_send_wc`. RMPP is not in the core's MAD
//! layer yet: RMPP sends are refused (`-EINVAL`), as an agent registered without RMPP.
//!
//! C modules send, cancel and re-time under spinlocks (ib_cm does all three under a
//! connection's lock): `ib_create_send_mad` honours its `gfp_mask`, and posts and changes are
//! queued for the MAD layer without sleeping ([`Deferred`]).

use crate::{
    c_abi::{
        ah::ah_of,
        face::CFace,
        object::{alloc_flags, err_ptr, init_list, ptr_or_err, Faced},
        pd::{release, CPd, PdObject},
    },
    mad::{
        agent::MadRegReq,
        types::{Mad, GRH_SIZE, MAD_SIZE},
        MadAgent, MadHandler, MadSend, ReceivedMad, SendDone,
    },
    verbs::{types::QpType, wr::WcOpcode},
};
use core::{
    ptr::{self, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{
    alloc::Flags,
    bindings,
    ffi::{c_int, c_void},
    new_mutex, new_spinlock_irq, new_work,
    prelude::*,
    sync::{Arc, Mutex, SpinLockIrq},
    types::Opaque,
    workqueue::{Work, WorkItem},
};

/// The core's part of an agent registered by a C module. Its PD view stays while AHs made in
/// it do (a C module may destroy an AH after its agent unregistered).
pub(crate) struct CAgent {
    /// The agent.
    agent: Arc<MadAgent>,
    /// The C structure, for the handlers (null once unregistered).
    this: Arc<AtomicPtr<bindings::ib_mad_agent>>,
    /// The sends and changes of sends waiting for process context.
    deferred: Arc<Deferred>,
    /// The C view of the port's MAD QP that `qp` points to (kept for it).
    _qp: KBox<Opaque<bindings::ib_qp>>,
    /// The C view of the port's PD that the QP view names (freed with the agent).
    pd: NonNull<bindings::ib_pd>,
}

// SAFETY: `pd` is a PD object of this core's, owned by the agent and freed once, in
// `ib_unregister_mad_agent`; the QP view is read-only after registration.
unsafe impl Send for CAgent {}
// SAFETY: As above.
unsafe impl Sync for CAgent {}

/// An agent as C holds it.
type AgentObject = Faced<CAgent, bindings::ib_mad_agent>;

/// What a send's `ib_mad_send_buf` stands for: its MAD buffer and where it goes.
pub(crate) struct CSend {
    /// The MAD C fills (`send_buf->mad`).
    mad: KBox<Opaque<Mad>>,
    remote_qpn: u32,
    pkey_index: u16,
}

/// A send as C holds it.
type SendObject = Faced<CSend, bindings::ib_mad_send_buf>;

/// A received MAD as C's `ib_mad_recv_wc` holds it.
pub(crate) struct CRecv {
    /// The MAD and what came with it.
    mad: KBox<ReceivedMad>,
    /// Its completion, as C's `ib_wc` (`recv_wc->wc`).
    wc: KBox<Opaque<bindings::ib_wc>>,
    /// Its GRH (`recv_buf.grh`).
    grh: KBox<Opaque<[u8; GRH_SIZE]>>,
}

/// A received MAD as C holds it.
type RecvObject = Faced<CRecv, bindings::ib_mad_recv_wc>;

/// The core's MAD handler of a C agent: calls the C handlers with C's structures.
struct CHandler {
    this: Arc<AtomicPtr<bindings::ib_mad_agent>>,
}

/// C's `ib_mad_recv_wc` for `r`, received by the agent `a` (a C structure of ours).
fn recv_wc(
    a: *mut bindings::ib_mad_agent,
    r: KBox<ReceivedMad>,
) -> Result<NonNull<bindings::ib_mad_recv_wc>> {
    let core = CRecv {
        mad: r,
        wc: KBox::new(Opaque::zeroed(), GFP_KERNEL)?,
        grh: KBox::new(Opaque::zeroed(), GFP_KERNEL)?,
    };
    let (wc, grh, mad) = (core.wc.get(), core.grh.get(), core.mad.mad.as_ptr());
    let has_grh = core.mad.grh.is_some();
    if let Some(g) = &core.mad.grh {
        // SAFETY: `grh` is the zeroed GRH just allocated, ours alone.
        unsafe { *grh = *g };
    }
    let w = core.mad.wc;
    let c = RecvObject::alloc(core)?;
    // SAFETY: `c` and `wc` are zeroed structures just allocated, ours alone; `a` is a live agent
    // of ours (its `qp` view and port number are set at registration).
    unsafe {
        let ib = &mut *wc;
        ib.status = bindings::ib_wc_status_IB_WC_SUCCESS;
        ib.opcode = WcOpcode::Recv as u32;
        ib.byte_len = (MAD_SIZE + GRH_SIZE) as u32;
        ib.qp = (*a).qp;
        ib.src_qp = w.src_qp;
        ib.slid = w.slid.into();
        ib.sl = w.sl;
        ib.pkey_index = w.pkey_index;
        ib.dlid_path_bits = w.dlid_path_bits;
        ib.port_num = (*a).port_num.into();
        if has_grh {
            ib.wc_flags = bindings::ib_wc_flags_IB_WC_GRH as c_int;
        }
        let p = &mut *c.as_ptr();
        p.wc = wc;
        p.recv_buf.grh = grh.cast();
        p.recv_buf.__bindgen_anon_1.mad = mad.cast_mut().cast();
        init_list(&mut p.recv_buf.list);
        init_list(&mut p.rmpp_list);
        p.mad_len = MAD_SIZE as c_int;
        p.mad_seg_size = MAD_SIZE;
    }
    Ok(c)
}

impl MadHandler for CHandler {
    fn recv(&self, _agent: &Arc<MadAgent>, mad: KBox<ReceivedMad>) {
        let a = self.this.load(Ordering::Acquire);
        if a.is_null() {
            return;
        }
        // The request a response answers: its `ib_mad_send_buf` (the send's context).
        let send_buf = mad
            .request
            .map_or(ptr::null_mut(), |c| c as usize as *mut _);
        if mad.mad_len > MAD_SIZE {
            // The C view of a message in several segments (`rmpp_list`) is not built yet.
            pr_err!(
                "an RMPP message of {} bytes for a C agent: dropped\n",
                mad.mad_len
            );
            return;
        }
        let Ok(wc) = recv_wc(a, mad) else {
            pr_err!("no memory for a received MAD: dropped\n");
            return;
        };
        // SAFETY: A non-null `this` is the live C agent (cleared after the core's agent stopped
        // calling handlers, before the structure goes); the C handler owns `wc` until it calls
        // `ib_free_recv_mad`.
        unsafe {
            match (*a).recv_handler {
                Some(f) => f(a, send_buf, wc.as_ptr()),
                None => ib_free_recv_mad(wc.as_ptr()),
            }
        }
    }

    fn send_done(&self, _agent: &Arc<MadAgent>, done: SendDone) {
        let a = self.this.load(Ordering::Acquire);
        if a.is_null() {
            return;
        }
        let mut wc = bindings::ib_mad_send_wc {
            // The send's context is its `ib_mad_send_buf` (`ib_post_send_mad`).
            send_buf: done.context as usize as *mut bindings::ib_mad_send_buf,
            status: done.status as u32,
            vendor_err: 0,
        };
        // SAFETY: As in `recv`; the send buffer is the caller's until this returns.
        unsafe {
            // As C leaves it: how many times it went again (ib_cm counts them).
            (*wc.send_buf).retries = c_int::try_from(done.retried).unwrap_or(c_int::MAX);
            if let Some(f) = (*a).send_handler {
                f(a, &mut wc);
            }
        }
    }
}

/// What a C module asked of its agent, for the MAD layer.
enum Op {
    /// `ib_post_send_mad` of one buffer.
    Post(MadSend),
    /// `ib_modify_mad` (0: `ib_cancel_mad`) of the send with this context.
    Modify { context: u64, timeout_ms: u32 },
}

/// The queued operations, and whether the agent is going.
struct Queue {
    ops: KVec<Op>,
    closed: bool,
}

/// Sends and changes of sends a C module asked for, done in order in process context.
///
/// C modules post, cancel and re-time their sends under spinlocks (ib_cm holds a connection's
/// lock around each, with interrupts off), where the core's MAD layer cannot be called: it
/// allocates with `GFP_KERNEL` and takes its port's mutex. So the calls check what C checks at
/// once, queue the operation (memory from `GFP_ATOMIC`), and the agent's work item hands them to
/// the MAD layer in the order they came. A send the MAD layer then refuses ends at once
/// through the agent's `send_handler` with `IB_WC_GENERAL_ERR` (C would have returned the errno
/// from `ib_post_send_mad`; its callers free the buffer in either case).
#[pin_data]
struct Deferred {
    agent: Arc<MadAgent>,
    this: Arc<AtomicPtr<bindings::ib_mad_agent>>,
    #[pin]
    queue: SpinLockIrq<Queue>,
    /// Held while operations are handed over, so that unregistration waits for it.
    #[pin]
    runner: Mutex<()>,
    #[pin]
    work: Work<Deferred>,
}

kernel::impl_has_work! {
    impl HasWork<Self> for Deferred { self.work }
}

impl Deferred {
    fn new(
        agent: Arc<MadAgent>,
        this: Arc<AtomicPtr<bindings::ib_mad_agent>>,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                agent,
                this,
                queue <- new_spinlock_irq!(
                    Queue { ops: KVec::new(), closed: false },
                    "ib_core::c_abi::mad_agent::Deferred::queue"
                ),
                runner <- new_mutex!((), "ib_core::c_abi::mad_agent::Deferred::runner"),
                work <- new_work!("ib_core::c_abi::mad_agent::Deferred::work"),
            }),
            GFP_KERNEL,
        )
    }

    /// Queues `op` and the work that hands it over; `ENOMEM`, or `ENODEV` once the agent is
    /// going. Never sleeps.
    fn push(self: &Arc<Self>, op: Op) -> Result {
        {
            let mut q = self.queue.lock();
            if q.closed {
                return Err(ENODEV);
            }
            q.ops.push(op, GFP_ATOMIC)?;
        }
        let q = crate::device::workqueues::queues().ok_or(ENODEV)?;
        // Already queued: that run takes this operation too.
        let _ = q.general.enqueue(self.clone());
        Ok(())
    }

    /// Ends the send with `context` (its `ib_mad_send_buf`), which never reached the MAD
    /// layer, through the agent's `send_handler`.
    fn end_unsent(&self, context: u64, status: u32) {
        let a = self.this.load(Ordering::Acquire);
        if a.is_null() {
            return;
        }
        let mut wc = bindings::ib_mad_send_wc {
            send_buf: context as usize as *mut bindings::ib_mad_send_buf,
            status,
            vendor_err: 0,
        };
        // SAFETY: A non-null `this` is the live C agent (cleared once unregistration has ended
        // every send); the send buffer is the caller's until this returns.
        unsafe {
            if let Some(f) = (*a).send_handler {
                f(a, &mut wc);
            }
        }
    }

    /// Hands the queued operations to the MAD layer, in order, until none is left.
    fn run_queued(&self) {
        let _running = self.runner.lock();
        loop {
            let ops = {
                let mut q = self.queue.lock();
                if q.closed {
                    return;
                }
                core::mem::replace(&mut q.ops, KVec::new())
            };
            if ops.is_empty() {
                return;
            }
            for op in ops {
                match op {
                    Op::Post(send) => {
                        let context = send.context;
                        if self.agent.send(send).is_err() {
                            self.end_unsent(context, bindings::ib_wc_status_IB_WC_GENERAL_ERR);
                        }
                    }
                    Op::Modify {
                        context,
                        timeout_ms,
                    } => {
                        let _ = self.agent.modify_send(context, timeout_ms);
                    }
                }
            }
        }
    }

    /// Stops taking operations and waits for a hand-over running; the posts still queued end
    /// with `IB_WC_WR_FLUSH_ERR`, as sends flushed by the unregistration.
    fn close(&self) {
        let left = {
            let mut q = self.queue.lock();
            q.closed = true;
            core::mem::replace(&mut q.ops, KVec::new())
        };
        drop(self.runner.lock());
        for op in left.iter() {
            if let Op::Post(send) = op {
                self.end_unsent(send.context, bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR);
            }
        }
    }
}

impl WorkItem for Deferred {
    type Pointer = Arc<Deferred>;

    fn run(this: Arc<Deferred>) {
        this.run_queued();
    }
}

/// The registration request C's `ib_mad_reg_req` holds.
fn reg_from_c(r: &bindings::ib_mad_reg_req) -> MadRegReq {
    let mut mask = [0u64; 2];
    for (m, w) in mask.iter_mut().zip(r.method_mask.iter()) {
        *m = *w as u64;
    }
    MadRegReq {
        mgmt_class: r.mgmt_class,
        class_version: r.mgmt_class_version,
        oui: r.oui,
        method_mask: mask,
    }
}

/// Registers the agent and makes its C structure.
///
/// # Safety
///
/// As for [`ib_register_mad_agent`].
#[allow(clippy::too_many_arguments)]
unsafe fn register(
    device: *mut bindings::ib_device,
    port_num: u32,
    qp_type: bindings::ib_qp_type,
    mad_reg_req: *mut bindings::ib_mad_reg_req,
    rmpp_version: u8,
    send_handler: bindings::ib_mad_send_handler,
    recv_handler: bindings::ib_mad_recv_handler,
    context: *mut c_void,
    flags: u32,
) -> Result<NonNull<bindings::ib_mad_agent>> {
    let qp_type = match qp_type {
        bindings::ib_qp_type_IB_QPT_SMI => QpType::Smi,
        bindings::ib_qp_type_IB_QPT_GSI => QpType::Gsi,
        _ => return Err(EINVAL),
    };
    // SAFETY: `device` is a face handed to the caller (contract).
    let dev = unsafe { CFace::owner_arc(device) }.ok_or(ENODEV)?;
    // SAFETY: A registration request, if any, is readable (contract).
    let reg = (!mad_reg_req.is_null()).then(|| reg_from_c(unsafe { &*mad_reg_req }));
    let this = Arc::new(AtomicPtr::new(ptr::null_mut()), GFP_KERNEL)?;
    let handler = Arc::new(CHandler { this: this.clone() }, GFP_KERNEL)?;
    let agent = MadAgent::register(
        &dev,
        port_num,
        qp_type,
        reg.as_ref(),
        rmpp_version,
        flags,
        handler,
    )?;
    let made = (|| {
        let pd = PdObject::alloc(CPd::new(agent.pd().clone()))?;
        let qp = KBox::new(Opaque::<bindings::ib_qp>::zeroed(), GFP_KERNEL).inspect_err(|_| {
            // SAFETY: `pd` was allocated above and not handed out.
            unsafe { PdObject::free(pd.as_ptr()) }
        })?;
        Ok::<_, Error>((pd, qp))
    })();
    let (pd, qp) = match made {
        Ok(v) => v,
        Err(e) => {
            agent.unregister();
            return Err(e);
        }
    };
    // SAFETY: Both views are zeroed structures just allocated, ours alone.
    unsafe {
        let p = &mut *pd.as_ptr();
        p.device = device;
        p.local_dma_lkey = agent.pd().local_dma_lkey();
        let q = &mut *qp.get();
        q.device = device;
        q.pd = pd.as_ptr();
        q.qp_num = if qp_type == QpType::Smi { 0 } else { 1 };
        q.qp_type = qp_type as bindings::ib_qp_type;
        q.port = port_num;
        q.real_qp = qp.get();
    }
    let (hi_tid, qp_ptr) = (agent.hi_tid(), qp.get());
    let deferred = match Deferred::new(agent.clone(), this.clone()) {
        Ok(d) => d,
        Err(e) => {
            agent.unregister();
            // SAFETY: `pd` was allocated above and not handed out.
            unsafe { PdObject::free(pd.as_ptr()) };
            return Err(e);
        }
    };
    let core = CAgent {
        agent: agent.clone(),
        this: this.clone(),
        deferred,
        _qp: qp,
        pd,
    };
    let pd_raw = pd.as_ptr();
    let c = match AgentObject::alloc(core) {
        Ok(c) => c,
        Err(e) => {
            agent.unregister();
            // SAFETY: The PD view was allocated above and never handed out.
            unsafe { PdObject::free(pd_raw) };
            return Err(e);
        }
    };
    // SAFETY: `c` is the zeroed structure just allocated, not yet handed out.
    let p = unsafe { &mut *c.as_ptr() };
    p.device = device;
    p.qp = qp_ptr;
    p.recv_handler = recv_handler;
    p.send_handler = send_handler;
    p.context = context;
    p.hi_tid = hi_tid;
    p.port_num = port_num as u8;
    p.rmpp_version = rmpp_version;
    init_list(&mut p.mad_agent_sec_list);
    // The handlers may reach C code from now on.
    this.store(c.as_ptr(), Ordering::Release);
    Ok(c)
}

/// C's `ib_register_mad_agent`: an agent on port `port_num`'s SMI (`IB_QPT_SMI`) or GSI QP for
/// the class and methods `mad_reg_req` names (null: it only sends and gets the responses to its
/// requests), its handlers called with `context`; C's checks and errnos through the core's
/// MAD layer (`ERR_PTR(-EINVAL)` for a bad registration or a method another agent owns,
/// `-EPROTONOSUPPORT` for a QP the port lacks, `-ENODEV` without MAD services, `-EBUSY` when
/// every transaction id prefix is taken). Of `registration_flags` only `IB_MAD_USER_RMPP`
/// counts (the rest were C's snooping, which is gone).
///
/// # Safety
///
/// `device` was handed to the caller by a client's `add` and not yet removed; `mad_reg_req`
/// is null or readable; the handlers may be called with the agent until
/// `ib_unregister_mad_agent` returns.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn ib_register_mad_agent(
    device: *mut bindings::ib_device,
    port_num: u32,
    qp_type: bindings::ib_qp_type,
    mad_reg_req: *mut bindings::ib_mad_reg_req,
    rmpp_version: u8,
    send_handler: bindings::ib_mad_send_handler,
    recv_handler: bindings::ib_mad_recv_handler,
    context: *mut c_void,
    registration_flags: u32,
) -> *mut bindings::ib_mad_agent {
    // SAFETY: The caller's contract.
    ptr_or_err(unsafe {
        register(
            device,
            port_num,
            qp_type,
            mad_reg_req,
            rmpp_version,
            send_handler,
            recv_handler,
            context,
            registration_flags & crate::mad::agent::USER_RMPP,
        )
    })
}

/// C's `ib_unregister_mad_agent`: the agent's sends end (`IB_WC_WR_FLUSH_ERR` to its
/// `send_handler`), its methods are free again, and once this returns no handler of it runs.
///
/// # Safety
///
/// `mad_agent` was returned by [`ib_register_mad_agent`]; it is not used again.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_unregister_mad_agent(mad_agent: *mut bindings::ib_mad_agent) {
    // SAFETY: `mad_agent` is live (contract).
    let core = unsafe { AgentObject::core(mad_agent) };
    // Sends still queued for the MAD layer end first, flushed, as those it has.
    core.deferred.close();
    core.agent.unregister();
    core.this.store(ptr::null_mut(), Ordering::Release);
    // SAFETY: The agent's hold of its PD view goes once (AHs made in it hold it until they
    // go); the agent is freed once (contract).
    unsafe {
        release(core.pd.as_ptr());
        AgentObject::free(mad_agent);
    }
}

/// Makes the send buffer.
///
/// # Safety
///
/// As for [`ib_create_send_mad`].
#[allow(clippy::too_many_arguments)]
unsafe fn create_send(
    mad_agent: *mut bindings::ib_mad_agent,
    remote_qpn: u32,
    pkey_index: u16,
    rmpp_active: c_int,
    hdr_len: c_int,
    data_len: c_int,
    base_version: u8,
    flags: Flags,
) -> Result<NonNull<bindings::ib_mad_send_buf>> {
    // Only InfiniBand MADs of one segment: no OPA MADs, no RMPP in the core's MAD layer yet.
    if base_version != 1 || rmpp_active != 0 {
        return Err(EINVAL);
    }
    let hdr = usize::try_from(hdr_len).map_err(|_| EINVAL)?;
    let data = usize::try_from(data_len).map_err(|_| EINVAL)?;
    if hdr.checked_add(data).is_none_or(|n| n > MAD_SIZE) {
        return Err(EINVAL);
    }
    let mad = KBox::new(Opaque::<Mad>::zeroed(), flags)?;
    let buf = mad.get();
    let c = SendObject::alloc_with(
        CSend {
            mad,
            remote_qpn,
            pkey_index,
        },
        flags,
    )?;
    // SAFETY: `c` is the zeroed structure just allocated, not yet handed out.
    let p = unsafe { &mut *c.as_ptr() };
    p.mad = buf.cast();
    p.mad_agent = mad_agent;
    p.hdr_len = hdr_len;
    p.data_len = data_len;
    p.seg_size = (MAD_SIZE - hdr) as c_int;
    p.seg_rmpp_size = p.seg_size;
    Ok(c)
}

/// C's `ib_create_send_mad`: a send buffer of the agent for a MAD of `hdr_len` + `data_len`
/// bytes (zeroed, padded to 256) to QP `remote_qpn` with P_Key index `pkey_index`; C fills
/// `mad`, `ah`, `timeout_ms`, `retries` and `context`, then posts it. `ERR_PTR(-EINVAL)` for
/// an RMPP send (not in the core's MAD layer yet), an OPA MAD, or more than 256 bytes.
///
/// # Safety
///
/// `mad_agent` was returned by [`ib_register_mad_agent`] and not unregistered.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn ib_create_send_mad(
    mad_agent: *mut bindings::ib_mad_agent,
    remote_qpn: u32,
    pkey_index: u16,
    rmpp_active: c_int,
    hdr_len: c_int,
    data_len: c_int,
    gfp_mask: bindings::gfp_t,
    base_version: u8,
) -> *mut bindings::ib_mad_send_buf {
    if mad_agent.is_null() {
        return err_ptr(EINVAL);
    }
    let flags = alloc_flags(gfp_mask);
    // SAFETY: The caller's contract.
    ptr_or_err(unsafe {
        create_send(
            mad_agent,
            remote_qpn,
            pkey_index,
            rmpp_active,
            hdr_len,
            data_len,
            base_version,
            flags,
        )
    })
}

/// C's `ib_free_send_mad`: frees a send buffer (not posted, or whose `send_handler` ran).
///
/// # Safety
///
/// `send_buf` was returned by [`ib_create_send_mad`]; it is not used again.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_free_send_mad(send_buf: *mut bindings::ib_mad_send_buf) {
    // SAFETY: Freed once (contract).
    unsafe { SendObject::free(send_buf) };
}

/// Posts one send buffer.
///
/// # Safety
///
/// As for [`ib_post_send_mad`], for `b`.
unsafe fn post_one(b: *mut bindings::ib_mad_send_buf) -> Result {
    // SAFETY: `b` is a live send buffer of a live agent, with a live AH of ours (contract).
    let (buf, core, agent) =
        unsafe { (&*b, SendObject::core(b), AgentObject::core((*b).mad_agent)) };
    // SAFETY: As above: the agent's C structure is live.
    let a = unsafe { &*buf.mad_agent };
    // C's check: a send needs a send handler. One awaiting an answer needs no receive handler
    // (ib_cm sends its REPs, answered by an RTU to another agent, from an agent without one).
    if a.send_handler.is_none() {
        return Err(EINVAL);
    }
    if buf.ah.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: The AH is live (contract).
    let ah = *unsafe { ah_of(buf.ah) }.attr();
    // SAFETY: The MAD buffer is the caller's, filled before the post.
    let mad = KBox::new(unsafe { *core.mad.get() }, GFP_ATOMIC)?;
    let send = MadSend {
        mad,
        ah,
        remote_qpn: core.remote_qpn,
        pkey_index: core.pkey_index,
        timeout_ms: u32::try_from(buf.timeout_ms).unwrap_or(0),
        retries: u32::try_from(buf.retries).unwrap_or(0),
        context: b as usize as u64,
        rmpp_data: KVec::new(),
    };
    agent.deferred.push(Op::Post(send))?;
    // As C: from the post on, `retries` counts the sends again ([`CHandler::send_done`]).
    // SAFETY: The buffer is the caller's (contract).
    unsafe { (*b).retries = 0 };
    Ok(())
}

/// C's `ib_post_send_mad`: posts the chain of send buffers (`next`); 0, or the errno of the
/// first that could not be posted, with `*bad_send_buf` at it. Each posted buffer's end
/// reaches its agent's `send_handler`. It never sleeps (C modules post under spinlocks): the
/// sends reach the MAD layer from process context, in order ([`Deferred`]).
///
/// # Safety
///
/// Each buffer was made by [`ib_create_send_mad`], has its `ah` set to a live AH of the
/// agent's device, and stays allocated until its `send_handler` call; `bad_send_buf` is null
/// or writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_post_send_mad(
    send_buf: *mut bindings::ib_mad_send_buf,
    bad_send_buf: *mut *mut bindings::ib_mad_send_buf,
) -> c_int {
    let mut b = send_buf;
    while !b.is_null() {
        // SAFETY: The caller's contract; `next` is read before the send may end.
        let next = unsafe { (*b).next };
        // SAFETY: As above.
        if let Err(e) = unsafe { post_one(b) } {
            if !bad_send_buf.is_null() {
                // SAFETY: Writable (contract).
                unsafe { *bad_send_buf = b };
            }
            return e.to_errno();
        }
        b = next;
    }
    0
}

/// C's `ib_free_recv_mad`: frees a received MAD handed to a `recv_handler`.
///
/// # Safety
///
/// `mad_recv_wc` was handed to a `recv_handler` by this core; it is not used again.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_free_recv_mad(mad_recv_wc: *mut bindings::ib_mad_recv_wc) {
    // SAFETY: Freed once (contract).
    unsafe { RecvObject::free(mad_recv_wc) };
}

/// C's `ib_modify_mad`: the posted send `send_buf` waits `timeout_ms` for its response (from
/// now if its send completed, from its completion otherwise); 0 cancels it (C's inline
/// `ib_cancel_mad`): its `send_handler` gets `IB_WC_WR_FLUSH_ERR`. 0, or `-EINVAL` for a null
/// buffer. It never sleeps (ib_cm cancels under spinlocks): the change reaches the MAD layer
/// after the posts before it ([`Deferred`]); a send no longer going is left as it is (where C
/// returns `-EINVAL`, which its callers do not act on but for an MRA's new timeout).
///
/// # Safety
///
/// `send_buf` is null or was made by [`ib_create_send_mad`] of a live agent.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_modify_mad(
    send_buf: *mut bindings::ib_mad_send_buf,
    timeout_ms: u32,
) -> c_int {
    if send_buf.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: `send_buf` and its agent are live (contract).
    let agent = unsafe { AgentObject::core((*send_buf).mad_agent) };
    let op = Op::Modify {
        context: send_buf as usize as u64,
        timeout_ms,
    };
    match agent.deferred.push(op) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
