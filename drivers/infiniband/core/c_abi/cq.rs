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
        object::{ptr_or_err, Faced},
    },
    device::events::{EventHandler, EventType},
    restrack::KernName,
    verbs::{types::CqInit, CompletionHandler, Cq},
};
use core::{
    ptr::{self, NonNull},
    sync::atomic::{AtomicI32, AtomicPtr, Ordering},
};
use kernel::{
    bindings,
    ffi::{c_char, c_int, c_void},
    new_spinlock_irq,
    prelude::*,
    sync::{Arc, SpinLockIrq},
};

/// The core's part of a CQ made for a C module.
#[pin_data]
pub(crate) struct CCq {
    /// The CQ.
    pub(crate) cq: Arc<Cq>,
    /// The C structure, for the handlers (null once it is being freed).
    this: Arc<AtomicPtr<bindings::ib_cq>>,
    /// The C modules' QPs completing on the CQ (number, `struct ib_qp` address): what a work
    /// completion's `qp` names.
    #[pin]
    qps: SpinLockIrq<KVec<(u32, usize)>>,
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
        let find = |qpn: u32| {
            qps.iter()
                .find(|(n, _)| *n == qpn)
                .map_or(ptr::null_mut(), |(_, p)| *p as *mut bindings::ib_qp)
        };
        f(&find)
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

/// C's `atomic_t` as an atomic.
///
/// # Safety
///
/// `a` points to a live `atomic_t` that C code only reaches with atomic operations.
pub(crate) unsafe fn atomic<'a>(a: *mut bindings::atomic_t) -> &'a AtomicI32 {
    // SAFETY: `atomic_t` is an `int` accessed atomically (contract); the field is aligned.
    unsafe { AtomicI32::from_ptr((&raw mut (*a).counter).cast()) }
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

/// The event handler of the core's CQ: the C `event_handler(event, cq_context)`.
fn event_handler(this: &Arc<AtomicPtr<bindings::ib_cq>>) -> Result<EventHandler> {
    let this = this.clone();
    Ok(KBox::new(
        move |e: EventType| {
            let c = this.load(Ordering::Acquire);
            if c.is_null() {
                return;
            }
            // SAFETY: As in `completion_handler`; the event is a plain structure.
            unsafe {
                if let Some(f) = (*c).event_handler {
                    let mut ev: bindings::ib_event = core::mem::zeroed();
                    ev.device = (*c).device;
                    ev.element.cq = c;
                    ev.event = e as bindings::ib_event_type;
                    f(&mut ev, (*c).cq_context);
                }
            }
        },
        GFP_KERNEL,
    )?)
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
    };
    let cq = Cq::create_with_event_handler(
        &dev,
        &init,
        Some(completion_handler(&this)?),
        Some(event_handler(&this)?),
        name,
    )?;
    let cqe = cq.cqe();
    let handle = this.clone();
    let c = CqObject::alloc(try_pin_init!(CCq {
        cq,
        this: handle,
        qps <- new_spinlock_irq!(KVec::new(), "ib_core::c_abi::cq::CCq::qps"),
    }))?;
    // SAFETY: `c` is the zeroed structure just allocated, not yet handed out.
    let p = unsafe { &mut *c.as_ptr() };
    p.device = device;
    p.comp_handler = comp_handler;
    p.event_handler = event;
    p.cq_context = cq_context;
    p.cqe = c_int::try_from(cqe).unwrap_or(c_int::MAX);
    p.comp_vector = attr.comp_vector;
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
    unsafe { cq_of(cq) }
        .this
        .store(ptr::null_mut(), Ordering::Release);
    // SAFETY: Freed once (contract); dropping the core's CQ destroys the driver's, after which
    // its handlers are not called.
    unsafe { CqObject::free(cq) };
    0
}
