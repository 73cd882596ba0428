// SPDX-License-Identifier: GPL-2.0

//! SA queries asked from a task that cannot sleep (C's callers passing `GFP_ATOMIC`: IPoIB asks
//! for a path under its device lock, from its transmit path). Sending a query sleeps here (the
//! port is queried for its SM, the MAD layer's send takes mutexes), so such a query gets its id
//! at once and is sent from the core's `infiniband` workqueue.
//!
//! Not as C, which sends from the caller's task: an error C returns at once (no SM yet, no SA
//! on the port) comes through the callback instead, a moment later. A cancel before the send
//! ends the query with `EINTR`, as a cancel of a query under way does. The list of waiting
//! queries is taken with interrupts off (IPoIB asks from its transmit path, in softirq).

use super::query::{self, QueryCallback, Request};
use crate::device::ib_device::IbDevice;
use kernel::{
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        global_lock, Arc, SpinLock,
    },
    workqueue::{Work, WorkItem},
};

/// A query waiting to be sent.
#[pin_data]
struct Deferred {
    #[pin]
    work: Work<Deferred>,
    id: u32,
    dev: Arc<IbDevice>,
    port: u32,
    method: u8,
    attr_id: u16,
    comp_mask: u64,
    data: KVec<u8>,
    timeout_ms: u32,
    /// Taken once, when the work runs.
    #[pin]
    done: SpinLock<Option<QueryCallback>>,
    /// Set by [`cancel`] before the work runs (then it ends the query with `EINTR`).
    cancelled: Atomic<u32>,
}

kernel::impl_has_work! {
    impl HasWork<Self> for Deferred { self.work }
}

global_lock! {
    // SAFETY: Initialized by the module initializer before the SA client registers.
    unsafe(uninit) static WAITING: SpinLockIrq<KVec<Arc<Deferred>>> = KVec::new();
}

/// Initializes the list of queries waiting to be sent.
///
/// # Safety
///
/// Called once, at module load, before the SA client registers.
pub(crate) unsafe fn init() {
    // SAFETY: As this function's contract.
    unsafe { WAITING.init() };
}

/// Frees the list's memory at unload (every query was sent or ended by then: the workqueue is
/// flushed first).
pub(crate) fn clear() {
    *WAITING.lock() = KVec::new();
}

impl WorkItem for Deferred {
    type Pointer = Arc<Deferred>;

    fn run(this: Arc<Deferred>) {
        {
            let mut waiting = WAITING.lock();
            if let Some(i) = waiting.iter().position(|d| core::ptr::eq(&**d, &*this)) {
                let _ = waiting.remove(i);
            }
        }
        let Some(mut done) = this.done.lock().take() else {
            return;
        };
        if this.cancelled.load(Relaxed) != 0 {
            (*done)(Err(EINTR), None);
            return;
        }
        let request = Request {
            method: this.method,
            attr_id: this.attr_id,
            comp_mask: this.comp_mask,
            data: &this.data,
        };
        if let Err((e, mut done)) = query::send(
            &this.dev,
            this.port,
            request,
            this.timeout_ms,
            done,
            this.id,
        ) {
            (*done)(Err(e), None);
        }
    }
}

/// [`query::query`] from a task that cannot sleep: allocates with `GFP_ATOMIC`, queues the send
/// and returns the query's id (`ENOMEM`, or `ENODEV` when the core's workqueues are gone: the
/// callback is not called then). Every other error reaches `done`.
pub fn query(
    dev: Arc<IbDevice>,
    port: u32,
    request: Request<'_>,
    timeout_ms: u32,
    done: QueryCallback,
) -> Result<u32> {
    let queues = crate::device::workqueues::queues().ok_or(ENODEV)?;
    let mut data = KVec::with_capacity(request.data.len(), GFP_ATOMIC)?;
    data.extend_from_slice(request.data, GFP_ATOMIC)?;
    let id = query::new_id();
    let d = Arc::pin_init(
        pin_init!(Deferred {
            work <- kernel::new_work!("ib_core::sa::deferred::Deferred::work"),
            id,
            dev,
            port,
            method: request.method,
            attr_id: request.attr_id,
            comp_mask: request.comp_mask,
            data,
            timeout_ms,
            done <- kernel::new_spinlock!(Some(done), "ib_core::sa::deferred::Deferred::done"),
            cancelled: Atomic::new(0),
        }),
        GFP_ATOMIC,
    )?;
    WAITING.lock().push(d.clone(), GFP_ATOMIC)?;
    let _ = queues.general.enqueue(d);
    Ok(id)
}

/// Marks query `id` cancelled if it waits to be sent; whether it did.
pub(crate) fn cancel(id: u32) -> bool {
    match WAITING.lock().iter().find(|d| d.id == id) {
        Some(d) => {
            d.cancelled.store(1, Relaxed);
            true
        }
        None => false,
    }
}
