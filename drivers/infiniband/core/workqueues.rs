// SPDX-License-Identifier: GPL-2.0

//! The core's workqueues, with the names and flags the C core gives them (so `ps` and
//! `/sys/bus/workqueue` look the same whichever core is loaded).

use kernel::{
    owned_workqueue::{Flags, OwnedQueue},
    prelude::*,
};

/// Workqueues `ib_core` allocates at load and destroys at unload.
#[expect(
    dead_code,
    reason = "held so they exist while the core is loaded; device and CQ code will queue work on them"
)]
pub(crate) struct CoreWorkqueues {
    /// General work (`infiniband`).
    pub(crate) general: OwnedQueue,
    /// Deferred device unregistration (`ib-unreg-wq`).
    pub(crate) unregister: OwnedQueue,
    /// Completion processing for CQs polled in a workqueue (`ib-comp-wq`).
    pub(crate) completion: OwnedQueue,
    /// Completion processing not bound to a CPU (`ib-comp-unb-wq`).
    pub(crate) completion_unbound: OwnedQueue,
}

impl CoreWorkqueues {
    /// Allocates all four; on failure the ones already made are destroyed.
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
        })
    }
}
