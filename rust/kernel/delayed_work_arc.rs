// SPDX-License-Identifier: GPL-2.0

//! Re-timing and cancelling a delayed work item owned through an [`Arc`]: C's
//! `mod_delayed_work` and `cancel_delayed_work[_sync]`, which [`crate::workqueue`] lacks.
//!
//! A queued [`Arc`] work item holds one reference, taken by `Arc::into_raw` when it was queued
//! and given back to its `run`. These functions keep that count right: re-timing a pending item
//! queues no second reference, and cancelling a pending one takes its reference back.
//!
//! C header: [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h)

use crate::{
    bindings,
    sync::Arc,
    time::Jiffies,
    workqueue::{HasDelayedWork, Queue, Work, WorkItem},
};

/// The `struct delayed_work` of the item at `ptr`.
///
/// # Safety
///
/// `ptr` points to a live `T`.
unsafe fn raw_delayed_work<T, const ID: u64>(ptr: *const T) -> *mut bindings::delayed_work
where
    T: HasDelayedWork<T, ID>,
{
    // SAFETY: `ptr` points to a live `T` (contract); `HasDelayedWork` promises that its work
    // field is the `work` of a `delayed_work`.
    unsafe {
        let work = Work::raw_get(T::raw_get_work(ptr.cast_mut()));
        crate::container_of!(work, bindings::delayed_work, work)
    }
}

/// Makes `this` run on `queue` `delay` jiffies from now: queues it if it is idle (or running),
/// or moves the timer of its pending instance (C's `mod_delayed_work`). Callable from any
/// context, interrupts included.
pub fn mod_delayed<T, const ID: u64>(queue: &Queue, this: &Arc<T>, delay: Jiffies)
where
    T: WorkItem<ID, Pointer = Arc<T>> + HasDelayedWork<T, ID> + Send + Sync + 'static,
{
    // The reference the queue holds if this call queues the item.
    let ptr = Arc::into_raw(this.clone());
    // SAFETY: `ptr` is live (we hold a reference); `Queue` is a transparent wrapper of a live
    // `workqueue_struct`; the work's function is `T`'s `run`, which takes back the reference
    // given to the queue.
    let was_pending = unsafe {
        bindings::mod_delayed_work_on(
            bindings::wq_misc_consts_WORK_CPU_UNBOUND as i32,
            core::ptr::from_ref(queue).cast_mut().cast(),
            raw_delayed_work::<T, ID>(ptr),
            delay,
        )
    };
    if was_pending {
        // SAFETY: The pending instance already holds the queue's reference; ours, from
        // `into_raw` above, was not given to the queue.
        drop(unsafe { Arc::from_raw(ptr) });
    }
}

/// Cancels the pending instance of `this`, if any, and waits for a running one to finish
/// (C's `cancel_delayed_work_sync`); whether one was pending. May sleep.
pub fn cancel_delayed_sync<T, const ID: u64>(this: &Arc<T>) -> bool
where
    T: WorkItem<ID, Pointer = Arc<T>> + HasDelayedWork<T, ID>,
{
    cancel_with(this, bindings::cancel_delayed_work_sync)
}

/// Cancels the pending instance of `this`, if any, without waiting for a running one (C's
/// `cancel_delayed_work`); whether one was pending. Callable from atomic context.
pub fn cancel_delayed<T, const ID: u64>(this: &Arc<T>) -> bool
where
    T: WorkItem<ID, Pointer = Arc<T>> + HasDelayedWork<T, ID>,
{
    cancel_with(this, bindings::cancel_delayed_work)
}

/// Cancels `this` with C's `cancel` (one of the two above); when an instance was pending, takes
/// back the reference the queue held for it.
fn cancel_with<T, const ID: u64>(
    this: &Arc<T>,
    cancel: unsafe extern "C" fn(*mut bindings::delayed_work) -> bool,
) -> bool
where
    T: WorkItem<ID, Pointer = Arc<T>> + HasDelayedWork<T, ID>,
{
    let ptr = Arc::as_ptr(this);
    // SAFETY: `ptr` is live (we hold a reference); `cancel` is one of C's cancels, which take a
    // `delayed_work`.
    let was_pending = unsafe { cancel(raw_delayed_work::<T, ID>(ptr)) };
    if was_pending {
        // SAFETY: The cancelled instance held the reference the queue took when it was queued
        // (`into_raw`); its `run` will not give it back now.
        drop(unsafe { Arc::from_raw(ptr) });
    }
    was_pending
}

#[macros::kunit_tests(rdma_rs_delayed_work_arc)]
mod tests {
    use super::*;
    use crate::{
        owned_workqueue::{Flags, OwnedQueue},
        prelude::*,
        sync::atomic::{Atomic, Relaxed},
        workqueue::{impl_has_delayed_work, new_delayed_work, DelayedWork},
    };

    #[pin_data]
    struct Item {
        #[pin]
        work: DelayedWork<Item>,
        runs: Atomic<u32>,
    }

    impl_has_delayed_work! {
        impl HasDelayedWork<Self> for Item { self.work }
    }

    impl WorkItem for Item {
        type Pointer = Arc<Item>;
        fn run(this: Arc<Item>) {
            this.runs.add(1, Relaxed);
        }
    }

    fn item() -> Result<Arc<Item>> {
        Arc::pin_init(
            pin_init!(Item {
                work <- new_delayed_work!("rdma_rs_delayed_work_arc::Item::work"),
                runs: Atomic::new(0),
            }),
            GFP_KERNEL,
        )
    }

    /// An hour, in jiffies: never reached by a test.
    fn hour() -> Jiffies {
        crate::time::msecs_to_jiffies(3_600_000)
    }

    #[test]
    fn a_pending_item_moved_to_now_runs_once_and_gives_its_reference_back() -> Result {
        let queue = OwnedQueue::new(c"rdma-rs-kunit-dw", Flags::UNBOUND, 0)?;
        let it = item()?;
        mod_delayed(&queue, &it, hour());
        // Pending: moved, not queued twice.
        mod_delayed(&queue, &it, 0);
        drop(queue);
        assert_eq!(it.runs.load(Relaxed), 1);
        // Every reference the queue took was given back.
        assert!(Arc::into_unique_or_drop(it).is_some());
        Ok(())
    }

    #[test]
    fn cancelling_a_pending_item_takes_its_reference_back() -> Result {
        let queue = OwnedQueue::new(c"rdma-rs-kunit-dw", Flags::UNBOUND, 0)?;
        let it = item()?;
        mod_delayed(&queue, &it, hour());
        assert!(cancel_delayed_sync(&it));
        assert!(!cancel_delayed_sync(&it));
        mod_delayed(&queue, &it, hour());
        assert!(cancel_delayed(&it));
        assert!(!cancel_delayed(&it));
        drop(queue);
        assert_eq!(it.runs.load(Relaxed), 0);
        assert!(Arc::into_unique_or_drop(it).is_some());
        Ok(())
    }
}
