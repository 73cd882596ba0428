// SPDX-License-Identifier: GPL-2.0

//! Wait queues whose waiters sleep uninterruptibly with a timeout, on a condition that needs no
//! lock.
//!
//! [`crate::sync::CondVar`] waits under a lock guard and offers only an interruptible wait with a
//! timeout. A firmware command handed to a device cannot be called back, so its issuer must sleep
//! through signals (C's `wait_for_completion_timeout`); an interruptible sleep returns at once,
//! again and again, while a signal is pending, which is a busy loop. [`WaitQueue`] is the C
//! pattern `prepare_to_wait` / check / `schedule_timeout` / `finish_wait` with
//! `TASK_UNINTERRUPTIBLE`, the condition checked after the waiter is queued so that no wake-up is
//! lost.
//!
//! C header: [`include/linux/wait.h`](srctree/include/linux/wait.h)

use crate::{bindings, prelude::*, sync::LockClassKey, task::TASK_UNINTERRUPTIBLE, types::Opaque};

/// Creates a [`WaitQueue`] initialiser with a static lock class and the given name (or one made
/// from the file and line).
#[macro_export]
macro_rules! new_wait_queue {
    ($($name:literal)?) => {
        $crate::wait_queue::WaitQueue::new(
            $crate::optional_name!($($name)?),
            $crate::static_lock_class!(),
        )
    };
}
pub use new_wait_queue;

/// A `struct wait_queue_head` on which tasks sleep uninterruptibly until a condition holds.
///
/// # Invariants
///
/// `head` is an initialised wait queue head for as long as the value lives.
#[pin_data]
pub struct WaitQueue {
    #[pin]
    head: Opaque<bindings::wait_queue_head>,
}

// SAFETY: A `wait_queue_head` may be used from any thread; the kernel serialises it with its own
// spinlock.
unsafe impl Send for WaitQueue {}
// SAFETY: As above: every operation on the head takes its internal lock.
unsafe impl Sync for WaitQueue {}

impl WaitQueue {
    /// An initialiser for a wait queue with this name and lock class (see [`new_wait_queue!`]).
    pub fn new(name: &'static CStr, key: Pin<&'static LockClassKey>) -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `slot` is valid memory for a wait queue head while the closure runs; the
            // name and the lock class key are static.
            head <- Opaque::ffi_init(|slot| unsafe {
                bindings::__init_waitqueue_head(slot, name.as_char_ptr(), key.as_ptr())
            }),
        })
    }

    /// Sleeps uninterruptibly until `done()` holds or `jiffies` pass; returns the last value of
    /// `done()`. `done` runs with the task queued and in `TASK_UNINTERRUPTIBLE`: it must not
    /// sleep (read an atomic, not a mutex).
    pub fn wait_uninterruptible_timeout(&self, jiffies: c_long, done: impl Fn() -> bool) -> bool {
        let entry = Opaque::<bindings::wait_queue_entry>::uninit();
        // SAFETY: `entry` is valid memory that lives until `finish_wait` below.
        unsafe { bindings::init_wait(entry.get()) };
        let mut left = jiffies;
        let hit = loop {
            // SAFETY: `head` is initialised (type invariant) and `entry` was above; both outlive
            // the wait.
            unsafe {
                bindings::prepare_to_wait(self.head.get(), entry.get(), TASK_UNINTERRUPTIBLE)
            };
            if done() {
                break true;
            }
            if left <= 0 {
                break false;
            }
            // SAFETY: The task is queued on `head`; any timeout value is valid.
            left = unsafe { bindings::schedule_timeout(left) };
        };
        // SAFETY: `head` and `entry` are valid; this dequeues `entry` and sets the task running.
        unsafe { bindings::finish_wait(self.head.get(), entry.get()) };
        hit
    }

    /// Wakes every waiter. May be called from any context, hard IRQ included.
    pub fn wake_up_all(&self) {
        // SAFETY: `head` is initialised (type invariant); a null key wakes every waiter.
        unsafe {
            bindings::__wake_up(
                self.head.get(),
                bindings::TASK_NORMAL,
                0,
                core::ptr::null_mut(),
            )
        };
    }
}
