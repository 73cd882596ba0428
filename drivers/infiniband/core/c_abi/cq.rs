// SPDX-License-Identifier: GPL-2.0

//! Completion queues for C modules: `__ib_create_cq` (what C's `ib_create_cq` macro calls with
//! the caller's `KBUILD_MODNAME`) and `ib_destroy_cq_user` (C's `ib_destroy_cq`), with C's
//! names and signatures (C's `drivers/infiniband/core/verbs.c`). The `struct ib_cq` C code
//! reads (`device`, `cqe`, `cq_context`, `comp_handler`, `usecnt`) stands for a [`Cq`] of the
//! core: its completion events call the C `comp_handler(cq, cq_context)`, its asynchronous
//! events (`IB_EVENT_CQ_ERR`) the C `event_handler(event, cq_context)`, from the context the
//! driver reports them in, as C's drivers call them. Polling and arming go through the
//! device's ops table (`c_abi/data_path.rs`).

use crate::{
    c_abi::{
        face::CFace,
        object::{atomic, new_event, ptr_or_err, relay_events, Faced},
        restrack::{track, untrack},
        wr::wc_to_c,
    },
    device::events::EventType,
    restrack::KernName,
    verbs::{
        cq_poll::{CqDone, PollCtx, PolledCq},
        types::CqInit,
        wr::WorkCompletion,
        CompletionHandler, Cq,
    },
};
use core::{
    ptr::{self, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{
    bindings,
    ffi::{c_char, c_int, c_void},
    new_spinlock_irq,
    prelude::*,
    sync::{Arc, SpinLockIrq},
};

/// The C modules' QPs completing on a CQ (number, `struct ib_qp` address): what a work
/// completion's `qp` names.
type Qps = SpinLockIrq<KVec<(u32, usize)>>;

/// The C QP numbered `qpn` in `qps`, null for one not made through the C API.
fn find(qps: &[(u32, usize)], qpn: u32) -> *mut bindings::ib_qp {
    qps.iter()
        .find(|(n, _)| *n == qpn)
        .map_or(ptr::null_mut(), |(_, p)| *p as *mut bindings::ib_qp)
}

/// The core's part of a CQ made for a C module.
pub(crate) struct CCq {
    /// The CQ.
    pub(crate) cq: Arc<Cq>,
    /// The core's poller, for a CQ from `__ib_alloc_cq`.
    polled: Option<PolledCq>,
    /// The C structure, for the handlers (null once it is being freed).
    this: Arc<AtomicPtr<bindings::ib_cq>>,
    /// The QPs completing on the CQ.
    qps: Arc<Qps>,
}

impl CCq {
    /// Lists the C QP `qp`, numbered `qpn`, as completing on the CQ.
    pub(crate) fn add_qp(&self, qpn: u32, qp: *mut bindings::ib_qp) -> Result {
        let mut qps = self.qps.lock();
        if !qps.iter().any(|(n, _)| *n == qpn) {
            qps.push((qpn, qp as usize), GFP_ATOMIC)?;
        }
        Ok(())
    }

    /// Unlists the C QP numbered `qpn`.
    pub(crate) fn remove_qp(&self, qpn: u32) {
        self.qps.lock().retain(|(n, _)| *n != qpn);
    }

    /// Calls `f` with the lookup of a C QP by number (null for a QP not made through the C
    /// API), under the list's lock (taken once per poll).
    pub(crate) fn with_qps<R>(
        &self,
        f: impl FnOnce(&dyn Fn(u32) -> *mut bindings::ib_qp) -> R,
    ) -> R {
        let qps = self.qps.lock();
        f(&|qpn| find(&qps, qpn))
    }
}

/// A CQ as C holds it.
pub(crate) type CqObject = Faced<CCq, bindings::ib_cq>;

/// The core's part of the CQ `cq`.
///
/// # Safety
///
/// `cq` was returned by [`__ib_create_cq`] and not destroyed.
pub(crate) unsafe fn cq_of<'a>(cq: *mut bindings::ib_cq) -> &'a CCq {
    // SAFETY: The caller's contract.
    unsafe { CqObject::core(cq) }
}

/// The completion handler of the core's CQ: the C `comp_handler(cq, cq_context)`.
fn completion_handler(this: &Arc<AtomicPtr<bindings::ib_cq>>) -> Result<CompletionHandler> {
    let this = this.clone();
    Ok(KBox::new(
        move || {
            let c = this.load(Ordering::Acquire);
            if c.is_null() {
                return;
            }
            // SAFETY: A non-null `this` is the live C structure: it is nulled before the
            // structure is freed, and the core's CQ (which calls this) is destroyed first.
            unsafe {
                if let Some(f) = (*c).comp_handler {
                    f(c, (*c).cq_context);
                }
            }
        },
        GFP_KERNEL,
    )?)
}

/// Raises `e` on the CQ `c`: the C `event_handler(event, cq_context)`.
///
/// # Safety
///
/// `c` is a live CQ made here.
unsafe fn raise(c: *mut bindings::ib_cq, e: EventType) {
    // SAFETY: `c` is live (contract).
    unsafe {
        if let Some(f) = (*c).event_handler {
            let mut ev = new_event((*c).device, e);
            ev.element.cq = c;
            f(&mut ev, (*c).cq_context);
        }
    }
}

/// An empty list of QPs. Not generic nor inlined: one lock class for every CQ.
#[inline(never)]
fn new_qps() -> Result<Arc<Qps>> {
    Arc::pin_init(
        new_spinlock_irq!(KVec::new(), "ib_core::c_abi::cq::CCq::qps"),
        GFP_KERNEL,
    )
}

/// Makes the CQ and its C structure.
///
/// # Safety
///
/// As for [`__ib_create_cq`].
unsafe fn create(
    device: *mut bindings::ib_device,
    comp_handler: bindings::ib_comp_handler,
    event: Option<unsafe extern "C" fn(*mut bindings::ib_event, *mut c_void)>,
    cq_context: *mut c_void,
    attr: *const bindings::ib_cq_init_attr,
    caller: *const c_char,
) -> Result<NonNull<bindings::ib_cq>> {
    // SAFETY: `attr` is readable (contract).
    let attr = unsafe { &*attr };
    if attr.cqe == 0 {
        return Err(EINVAL);
    }
    // Kernel CQs take no creation flags here (C's mlx5 would take timestamping).
    if attr.flags != 0 {
        return Err(EOPNOTSUPP);
    }
    // SAFETY: `device` is a face handed to the caller (contract).
    let dev = unsafe { CFace::owner_arc(device) }.ok_or(ENODEV)?;
    // SAFETY: `caller` is the module's name (contract).
    let name = unsafe { KernName::from_c(caller) };
    let this = Arc::new(AtomicPtr::new(ptr::null_mut()), GFP_KERNEL)?;
    let init = CqInit {
        cqe: attr.cqe,
        comp_vector: attr.comp_vector,
        flags: attr.flags,
    };
    let cq = Cq::create_with_event_handler(
        &dev,
        &init,
        Some(completion_handler(&this)?),
        Some(relay_events(&this, raise)?),
        name,
    )?;
    // SAFETY: `device` and `caller` as the caller's contract says.
    unsafe {
        finish(
            CCq {
                cq,
                polled: None,
                this,
                qps: new_qps()?,
            },
            device,
            caller,
            |p| {
                p.comp_handler = comp_handler;
                p.event_handler = event;
                p.cq_context = cq_context;
                p.comp_vector = attr.comp_vector;
            },
        )
    }
}

/// Allocates the CQ `core` made, fills its C structure (the device, the driver's size, what
/// `fill` sets), lists it under `caller`'s name and lets its handlers reach C code.
///
/// # Safety
///
/// `device` is the live face `core`'s CQ is on; `caller` is null or outlives the CQ.
unsafe fn finish(
    core: CCq,
    device: *mut bindings::ib_device,
    caller: *const c_char,
    fill: impl FnOnce(&mut bindings::ib_cq),
) -> Result<NonNull<bindings::ib_cq>> {
    let (cqe, this) = (core.cq.cqe(), core.this.clone());
    let c = CqObject::alloc(core)?;
    // SAFETY: `c` is the zeroed structure just allocated, not yet handed out.
    let p = unsafe { &mut *c.as_ptr() };
    p.device = device;
    p.cqe = c_int::try_from(cqe).unwrap_or(c_int::MAX);
    fill(p);
    // SAFETY: The entry is the new CQ's; its device is live (contract).
    unsafe {
        track(
            &raw mut p.res,
            bindings::rdma_restrack_type_RDMA_RESTRACK_CQ,
            caller,
        )
    };
    // Filled: the handlers may call C code from now on.
    this.store(c.as_ptr(), Ordering::Release);
    Ok(c)
}

/// C's `__ib_create_cq`: a CQ of at least `cq_attr->cqe` entries on `device` for the module
/// `caller` names, `cq->cqe` what the driver made; `comp_handler` and `event_handler` are
/// called with `cq_context`. `ERR_PTR(-EINVAL)` for 0 entries or more than the device has,
/// `-EOPNOTSUPP` for creation flags, `-ENODEV` for a device no longer registered, the
/// driver's errno otherwise.
///
/// # Safety
///
/// `device` was handed to the caller by a client's `add` and not yet removed; `cq_attr` is
/// readable; `caller` is null or the module's name; the handlers may be called with
/// `cq_context` until the CQ is destroyed.
#[no_mangle]
pub(crate) unsafe extern "C" fn __ib_create_cq(
    device: *mut bindings::ib_device,
    comp_handler: bindings::ib_comp_handler,
    event_handler: Option<unsafe extern "C" fn(*mut bindings::ib_event, *mut c_void)>,
    cq_context: *mut c_void,
    cq_attr: *const bindings::ib_cq_init_attr,
    caller: *const c_char,
) -> *mut bindings::ib_cq {
    // SAFETY: The caller's contract.
    ptr_or_err(unsafe {
        create(
            device,
            comp_handler,
            event_handler,
            cq_context,
            cq_attr,
            caller,
        )
    })
}

/// C's `ib_destroy_cq_user` (C's `ib_destroy_cq` passes no `udata`): destroys the CQ; 0, or
/// `-EBUSY` while a QP completes on it (C's `usecnt`), `-EINVAL` for user data. Once it
/// returns 0 no handler of the CQ runs any more.
///
/// # Safety
///
/// `cq` was returned by [`__ib_create_cq`]; on success it is not used again.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_destroy_cq_user(
    cq: *mut bindings::ib_cq,
    udata: *mut bindings::ib_udata,
) -> c_int {
    if !udata.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: `cq` is live (contract); C's QPs count themselves in `usecnt`.
    if unsafe { atomic(&raw mut (*cq).usecnt) }.load(Ordering::Relaxed) != 0 {
        return EBUSY.to_errno();
    }
    // SAFETY: As above.
    unsafe {
        untrack(&raw mut (*cq).res);
        cq_of(cq).this.store(ptr::null_mut(), Ordering::Release);
    }
    // SAFETY: Freed once (contract); dropping the core's CQ destroys the driver's, after which
    // its handlers are not called.
    unsafe { CqObject::free(cq) };
    0
}

/// The completion callback of a polled CQ: each completion, as C's `ib_wc`, to the `done` of
/// the `ib_cqe` its work request named (`wr_cqe`), as C's `__ib_process_cq` hands it.
fn done_handler(this: &Arc<AtomicPtr<bindings::ib_cq>>, qps: &Arc<Qps>) -> Result<CqDone> {
    let (this, qps) = (this.clone(), qps.clone());
    Ok(KBox::new(
        move |w: &WorkCompletion| {
            let c = this.load(Ordering::Acquire);
            if c.is_null() {
                return;
            }
            let qp = find(&qps.lock(), w.qp_num);
            // SAFETY: `ib_wc` is a plain structure; every field is written below.
            let mut wc: bindings::ib_wc = unsafe { core::mem::zeroed() };
            wc_to_c(w, qp, &mut wc);
            // SAFETY: The work request's identifier is its `ib_cqe` (C's contract for CQs from
            // `ib_alloc_cq`), live until its completion is handed over; a non-null `this` is
            // the live C structure (the polling stops before it is freed).
            unsafe {
                let cqe = wc.__bindgen_anon_1.wr_cqe;
                if let Some(done) = cqe.as_ref().and_then(|e| e.done) {
                    done(c, &mut wc);
                }
            }
        },
        GFP_KERNEL,
    )?)
}

/// Makes the polled CQ and its C structure.
///
/// # Safety
///
/// As for [`__ib_alloc_cq`].
unsafe fn alloc_polled(
    dev: *mut bindings::ib_device,
    private: *mut c_void,
    nr_cqe: c_int,
    comp_vector: c_int,
    poll_ctx: bindings::ib_poll_context,
    caller: *const c_char,
) -> Result<NonNull<bindings::ib_cq>> {
    let ctx = match poll_ctx {
        bindings::ib_poll_context_IB_POLL_SOFTIRQ => PollCtx::Softirq,
        bindings::ib_poll_context_IB_POLL_WORKQUEUE => PollCtx::Workqueue,
        bindings::ib_poll_context_IB_POLL_UNBOUND_WORKQUEUE => PollCtx::UnboundWorkqueue,
        bindings::ib_poll_context_IB_POLL_DIRECT => PollCtx::Direct,
        _ => return Err(EINVAL),
    };
    let nr_cqe = u32::try_from(nr_cqe).map_err(|_| EINVAL)?;
    let comp_vector = u32::try_from(comp_vector).map_err(|_| EINVAL)?;
    // SAFETY: `dev` is a face handed to the caller (contract).
    let owner = unsafe { CFace::owner_arc(dev) }.ok_or(ENODEV)?;
    // SAFETY: `caller` is the module's name (contract).
    let name = unsafe { KernName::from_c(caller) };
    let this = Arc::new(AtomicPtr::new(ptr::null_mut()), GFP_KERNEL)?;
    let qps = new_qps()?;
    let polled = PolledCq::alloc(
        &owner,
        nr_cqe,
        comp_vector,
        ctx,
        done_handler(&this, &qps)?,
        name,
    )?;
    let cq = polled.cq().clone();
    // SAFETY: `dev` and `caller` as the caller's contract says.
    unsafe {
        finish(
            CCq {
                cq,
                polled: Some(polled),
                this,
                qps,
            },
            dev,
            caller,
            |p| {
                p.cq_context = private;
                p.poll_ctx = poll_ctx;
                p.comp_vector = comp_vector;
            },
        )
    }
}

/// C's `__ib_alloc_cq` (what C's `ib_alloc_cq` macro calls with the caller's `KBUILD_MODNAME`):
/// a CQ of `nr_cqe` entries on `dev` that the core polls as `poll_ctx` says (from a work item
/// for `IB_POLL_SOFTIRQ`, `IB_POLL_WORKQUEUE` and `IB_POLL_UNBOUND_WORKQUEUE`; for
/// `IB_POLL_DIRECT` only in `ib_process_cq_direct`), handing each completion to the `done` of
/// the `ib_cqe` its work request names; `cq_context` is `private`. `ERR_PTR(-EINVAL)` for a
/// size or context C refuses, `-ENODEV` for a device no longer registered, the driver's errno
/// otherwise.
///
/// # Safety
///
/// `dev` was handed to the caller by a client's `add` and not yet removed; `caller` is null or
/// the module's name; every work request on the CQ's QPs names a live `ib_cqe`.
#[no_mangle]
pub(crate) unsafe extern "C" fn __ib_alloc_cq(
    dev: *mut bindings::ib_device,
    private: *mut c_void,
    nr_cqe: c_int,
    comp_vector: c_int,
    poll_ctx: bindings::ib_poll_context,
    caller: *const c_char,
) -> *mut bindings::ib_cq {
    // SAFETY: The caller's contract.
    ptr_or_err(unsafe { alloc_polled(dev, private, nr_cqe, comp_vector, poll_ctx, caller) })
}

/// C's `ib_free_cq`: stops the polling (no `done` runs once it returns) and destroys the CQ. A
/// CQ still used by a QP is a bug of the caller (C warns, then frees it); it is logged and
/// freed here too, the core's CQ then living on with the QP.
///
/// # Safety
///
/// `cq` was returned by [`__ib_alloc_cq`]; it is not used again.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_free_cq(cq: *mut bindings::ib_cq) {
    // SAFETY: `cq` is live (contract).
    if unsafe { (*cq).shared() } != 0 {
        // A CQ of the device's pool is given back with `ib_cq_pool_put` (C warns and keeps it).
        pr_warn!("ib_free_cq of a shared CQ\n");
        return;
    }
    // SAFETY: `cq` is live (contract).
    if unsafe { atomic(&raw mut (*cq).usecnt) }.load(Ordering::Relaxed) != 0 {
        pr_warn!("ib_free_cq of a CQ still in use\n");
    }
    // SAFETY: As above; freed once.
    unsafe {
        untrack(&raw mut (*cq).res);
        let core = cq_of(cq);
        if let Some(p) = &core.polled {
            p.stop();
        }
        core.this.store(ptr::null_mut(), Ordering::Release);
        CqObject::free(cq);
    }
}

/// C's `ib_process_cq_direct`: polls up to `budget` completions (all there are for a negative
/// budget) of an `IB_POLL_DIRECT` CQ, handing each to its `done`; how many. 0 for a CQ the core
/// does not poll.
///
/// # Safety
///
/// `cq` was returned by [`__ib_alloc_cq`] and not freed; process context.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_process_cq_direct(
    cq: *mut bindings::ib_cq,
    budget: c_int,
) -> c_int {
    // SAFETY: `cq` is live (contract).
    let Some(p) = (unsafe { &cq_of(cq).polled }) else {
        return 0;
    };
    let n = p.process_direct(usize::try_from(budget).ok());
    c_int::try_from(n).unwrap_or(c_int::MAX)
}
