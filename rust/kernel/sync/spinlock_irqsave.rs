// SPDX-License-Identifier: GPL-2.0

//! A spinlock that saves the interrupt state on lock and restores it on unlock: C's
//! `spin_lock_irqsave` / `spin_unlock_irqrestore`, the lock C drivers take on their data paths
//! (mlx5's `post_send`, `poll_cq`).
//!
//! [`SpinLockIrq`](super::SpinLockIrq) disables interrupts through the per-CPU count of
//! `local_interrupt_disable`, which lets guards nest across interrupt-disabled sections but
//! costs a counter update and its checks on every lock and unlock. A lock that is only ever taken
//! and released in one scope, never handed a `LocalInterruptDisabled` token, needs none of that:
//! this backend keeps the saved flags in the guard, as C keeps them in a local variable.
//!
//! C header: [`include/linux/spinlock.h`](srctree/include/linux/spinlock.h)

use crate::bindings;
use crate::sync::lock::{Backend, Guard, Lock};

/// A spinlock taken with interrupts disabled and the previous interrupt state saved in the guard
/// (C's `spin_lock_irqsave`); usable from any context, interrupt handlers included.
///
/// Made with [`new_spinlock_irqsave!`](crate::new_spinlock_irqsave).
pub type SpinLockIrqSave<T> = Lock<T, SpinLockIrqSaveBackend>;

/// The guard of a [`SpinLockIrqSave`]: unlocks and restores the saved interrupt state when
/// dropped.
pub type SpinLockIrqSaveGuard<'a, T> = Guard<'a, T, SpinLockIrqSaveBackend>;

/// Makes a [`SpinLockIrqSave`] initialiser, with a lock class per call site (as
/// [`new_spinlock_irq!`](crate::new_spinlock_irq)).
#[macro_export]
macro_rules! new_spinlock_irqsave {
    ($inner:expr $(, $name:literal)? $(,)?) => {
        $crate::sync::spinlock_irqsave::SpinLockIrqSave::new(
            $inner, $crate::optional_name!($($name)?), $crate::static_lock_class!())
    };
}
pub use new_spinlock_irqsave;

/// The backend of [`SpinLockIrqSave`]: a kernel `spinlock_t`, the interrupt flags in the guard.
pub struct SpinLockIrqSaveBackend;

// SAFETY: The kernel `spinlock_t` gives mutual exclusion; the flags a lock returns are the ones
// its unlock restores (they live in the guard), and `relock` takes the lock again the same way,
// saving the state of the moment.
unsafe impl Backend for SpinLockIrqSaveBackend {
    type State = bindings::spinlock_t;
    type GuardState = crate::ffi::c_ulong;

    #[inline]
    unsafe fn init(
        ptr: *mut Self::State,
        name: *const crate::ffi::c_char,
        key: *mut bindings::lock_class_key,
    ) {
        // SAFETY: The caller gives a `ptr` valid for writes, and `name` and `key` valid for
        // reads for as long as the lock exists.
        unsafe { bindings::__spin_lock_init(ptr, name, key) }
    }

    #[inline]
    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: The caller gives an initialised lock.
        unsafe { bindings::rdma_rs_spin_lock_irqsave(ptr) }
    }

    #[inline]
    unsafe fn unlock(ptr: *mut Self::State, guard_state: &Self::GuardState) {
        // SAFETY: The caller holds the lock, taken by `lock` or `try_lock`, whose saved flags
        // `guard_state` are.
        unsafe { bindings::rdma_rs_spin_unlock_irqrestore(ptr, *guard_state) }
    }

    #[inline]
    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
        let mut flags: crate::ffi::c_ulong = 0;
        // SAFETY: The caller gives an initialised lock; `flags` is a local the helper writes.
        let taken = unsafe { bindings::rdma_rs_spin_trylock_irqsave(ptr, &mut flags) };
        (taken != 0).then_some(flags)
    }

    #[inline]
    unsafe fn assert_is_held(ptr: *mut Self::State) {
        // SAFETY: The caller gives an initialised lock.
        unsafe { bindings::spin_assert_is_held(ptr) }
    }
}
