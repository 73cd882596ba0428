// SPDX-License-Identifier: GPL-2.0

//! Workqueues that a module allocates for itself and destroys when it is done with them.
//!
//! [`crate::workqueue`] covers the system workqueues; this adds `alloc_workqueue` and
//! `destroy_workqueue`.
//!
//! C header: [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h)

use crate::{bindings, prelude::*, workqueue::Queue};
use core::{ops::BitOr, ptr::NonNull};

/// Flags for [`OwnedQueue::new`] (`WQ_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flags(u32);

impl Flags {
    /// Work items may run on any CPU (`WQ_UNBOUND`).
    pub const UNBOUND: Self = Self(bindings::wq_flags_WQ_UNBOUND);
    /// May be used in memory reclaim paths; keeps a rescuer thread (`WQ_MEM_RECLAIM`).
    pub const MEM_RECLAIM: Self = Self(bindings::wq_flags_WQ_MEM_RECLAIM);
    /// Served by high-priority workers (`WQ_HIGHPRI`).
    pub const HIGHPRI: Self = Self(bindings::wq_flags_WQ_HIGHPRI);
    /// Visible in `/sys/bus/workqueue/devices` (`WQ_SYSFS`).
    pub const SYSFS: Self = Self(bindings::wq_flags_WQ_SYSFS);
    /// Work items run on the CPU that queued them (`WQ_PERCPU`).
    pub const PERCPU: Self = Self(bindings::wq_flags_WQ_PERCPU);
    /// One work item at a time, in the order queued (`alloc_ordered_workqueue`: with
    /// [`Flags::UNBOUND`] and a `max_active` of 1).
    pub const ORDERED: Self = Self(bindings::wq_flags___WQ_ORDERED);
}

impl BitOr for Flags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// A workqueue owned by its creator; destroying it drains it first.
///
/// # Invariants
///
/// `ptr` was returned by `alloc_workqueue` and is destroyed only by `Drop`.
pub struct OwnedQueue {
    ptr: NonNull<bindings::workqueue_struct>,
}

// SAFETY: A workqueue may be used and destroyed from any thread.
unsafe impl Send for OwnedQueue {}

// SAFETY: Queueing work is thread-safe in the C implementation.
unsafe impl Sync for OwnedQueue {}

impl OwnedQueue {
    /// The largest `max_active` an unbound workqueue accepts (`WQ_UNBOUND_MAX_ACTIVE`).
    pub const UNBOUND_MAX_ACTIVE: i32 = 2048;

    /// Allocates a workqueue called `name`. `max_active` 0 picks the default.
    pub fn new(name: &'static CStr, flags: Flags, max_active: i32) -> Result<Self> {
        // SAFETY: The format string takes exactly one `%s` argument, a NUL-terminated string that
        // outlives the call (the workqueue copies its name).
        let raw = unsafe {
            bindings::alloc_workqueue_noprof(
                c"%s".as_char_ptr(),
                flags.0,
                max_active,
                name.as_char_ptr(),
            )
        };
        // INVARIANT: a non-null result came from `alloc_workqueue`.
        Ok(Self {
            ptr: NonNull::new(raw).ok_or(ENOMEM)?,
        })
    }
}

impl core::ops::Deref for OwnedQueue {
    type Target = Queue;

    fn deref(&self) -> &Queue {
        // SAFETY: `ptr` is a live workqueue until `self` is dropped, which outlives the borrow.
        unsafe { Queue::from_raw(self.ptr.as_ptr()) }
    }
}

impl Drop for OwnedQueue {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_workqueue` and is destroyed exactly once, here; this
        // drains pending work first.
        unsafe { bindings::destroy_workqueue(self.ptr.as_ptr()) };
    }
}

#[macros::kunit_tests(rdma_rs_owned_workqueue)]
mod tests {
    use super::*;
    use crate::sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    };

    #[test]
    fn destroy_drains_queued_work() {
        let queue = OwnedQueue::new(c"rdma-rs-kunit", Flags::UNBOUND, 0);
        assert!(queue.is_ok());
        let Ok(queue) = queue else { return };
        let runs = Arc::new(Atomic::new(0i32), GFP_KERNEL);
        assert!(runs.is_ok());
        let Ok(runs) = runs else { return };
        for _ in 0..8 {
            let r = runs.clone();
            assert!(queue
                .try_spawn(GFP_KERNEL, move || r.add(1, Relaxed))
                .is_ok());
        }
        // Destroying the queue waits for every queued item.
        drop(queue);
        assert_eq!(runs.load(Relaxed), 8);
    }

    #[test]
    fn flags_combine() {
        let f = Flags::UNBOUND | Flags::HIGHPRI;
        assert_eq!(
            f.0,
            bindings::wq_flags_WQ_UNBOUND | bindings::wq_flags_WQ_HIGHPRI
        );
    }
}
