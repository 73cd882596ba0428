// SPDX-License-Identifier: GPL-2.0

//! The core's workqueues, with the names and flags the C core gives them (so `ps` and
//! `/sys/bus/workqueue` look the same whichever core is loaded).

use kernel::{
    owned_workqueue::{Flags, OwnedQueue},
    prelude::*,
    sync::atomic::{Acquire, Atomic, Release},
};

/// The loaded module's workqueues (null otherwise), for CQ polling ([`install`]).
static QUEUES: Atomic<*const CoreWorkqueues> = Atomic::new(core::ptr::null());

/// Installs the workqueues CQ polling uses (`None`: removes them).
///
/// # Safety
///
/// Installed workqueues stay at the same address until they are removed, which happens at
/// module unload, once every device (and so every CQ) is gone: drivers hold a reference on
/// `ib_core`. Destroying them afterwards waits for work still queued.
pub(crate) unsafe fn install(queues: Option<&CoreWorkqueues>) {
    QUEUES.store(
        queues.map_or(core::ptr::null(), core::ptr::from_ref),
        Release,
    );
}

/// The module's workqueues, while it is loaded.
pub(crate) fn queues() -> Option<&'static CoreWorkqueues> {
    // SAFETY: Installed workqueues are valid until removed (`install`'s contract); CQs, which
    // use them, exist only while devices do, so while the module is loaded.
    unsafe { QUEUES.load(Acquire).as_ref() }
}

/// Workqueues `ib_core` allocates at load and destroys at unload.
pub(crate) struct CoreWorkqueues {
    /// General work (`infiniband`).
    pub(crate) general: OwnedQueue,
    /// Deferred device unregistration (`ib-unreg-wq`).
    pub(crate) unregister: OwnedQueue,
    /// Completion processing for CQs polled in a workqueue (`ib-comp-wq`).
    pub(crate) completion: OwnedQueue,
    /// Completion processing not bound to a CPU (`ib-comp-unb-wq`).
    pub(crate) completion_unbound: OwnedQueue,
    /// Multicast groups' joins and leaves (`ib_mcast`, ordered as C's).
    pub(crate) multicast: OwnedQueue,
    /// Address resolutions and their callbacks (`ib_addr`).
    pub(crate) addr: OwnedQueue,
}

impl CoreWorkqueues {
    /// Allocates them all; on failure the ones already made are destroyed.
    pub(crate) fn new() -> Result<Self> {
        let reclaim_hi = Flags::HIGHPRI | Flags::MEM_RECLAIM | Flags::SYSFS;
        Ok(Self {
            general: OwnedQueue::new(c"infiniband", Flags::PERCPU, 0)?,
            unregister: OwnedQueue::new(
                c"ib-unreg-wq",
                Flags::UNBOUND,
                OwnedQueue::UNBOUND_MAX_ACTIVE,
            )?,
            completion: OwnedQueue::new(c"ib-comp-wq", reclaim_hi | Flags::PERCPU, 0)?,
            completion_unbound: OwnedQueue::new(
                c"ib-comp-unb-wq",
                reclaim_hi | Flags::UNBOUND,
                OwnedQueue::UNBOUND_MAX_ACTIVE,
            )?,
            multicast: OwnedQueue::new(
                c"ib_mcast",
                Flags::UNBOUND | Flags::ORDERED | Flags::MEM_RECLAIM,
                1,
            )?,
            addr: OwnedQueue::new(c"ib_addr", Flags::UNBOUND, 0)?,
        })
    }
}
