// SPDX-License-Identifier: GPL-2.0

//! Event mode of the command interface: once the command EQ exists, the device reports each
//! completed command slot with a CMD event; the control vector's handler consumes the command EQ
//! (without the HCA lock, which the command's issuer holds) and wakes the issuer. The issuer also
//! rechecks the ownership bit on every wake-up, so a lost event costs latency, not the command.
//!
//! The issuer sleeps uninterruptibly, as C's `wait_func` (`wait_for_completion_timeout`): a
//! command handed to the device cannot be called back, so a signal takes effect when the command
//! ends (at the latest at its timeout). An interruptible sleep would return at once, again and
//! again, while a signal is pending: a busy loop for up to the whole command timeout.

use crate::cmd::queue::CompletionSource;
use crate::eq::EventQueue;
use crate::ifc::Eqe;
use crate::init_segment::Bar0;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    new_mutex, new_wait_queue,
    prelude::*,
    sync::{Arc, Mutex},
    time::msecs_to_jiffies,
    wait_queue::WaitQueue,
};

/// Event type of a command completion.
pub(crate) const EVENT_CMD: u8 = 0x0a;

/// The command EQ.
pub(crate) struct CmdEventState {
    eq: Option<EventQueue>,
    /// Completions reported by events since load.
    reported: u64,
}

/// Shared between the command queue (waits) and the event handler (wakes).
#[pin_data]
pub(crate) struct CmdEvents {
    #[pin]
    state: Mutex<CmdEventState>,
    /// Slots reported complete and not yet consumed by their waiter.
    completed: AtomicU32,
    #[pin]
    done: WaitQueue,
}

/// The slots a CMD event reports complete.
pub(crate) fn completed_slots(e: &Eqe) -> u32 {
    e.cmd_vector() as u32
}

impl CmdEvents {
    /// No command EQ yet.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                state <- new_mutex!(CmdEventState {
                    eq: None,
                    reported: 0,
                }),
                completed: AtomicU32::new(0),
                done <- new_wait_queue!("mlx5_cmd_events"),
            }),
            GFP_KERNEL,
        )
    }

    /// Installs the command EQ.
    pub(crate) fn set_eq(&self, eq: EventQueue) {
        self.state.lock().eq = Some(eq);
    }

    /// Removes the command EQ (to destroy it).
    pub(crate) fn take_eq(&self) -> Option<EventQueue> {
        self.state.lock().eq.take()
    }

    /// Consumes the command EQ, re-arms it and wakes the issuers of completed slots.
    pub(crate) fn poll(&self, bar: &Bar0<'_>) -> Result {
        let mut eqes = KVec::new();
        let mut st = self.state.lock();
        let Some(eq) = st.eq.as_mut() else {
            return Ok(());
        };
        eq.poll(bar, &mut eqes)?;
        let slots = eqes
            .iter()
            .filter(|e| e.event_type() == u64::from(EVENT_CMD))
            .fold(0, |acc, e| acc | completed_slots(e));
        if slots != 0 {
            st.reported += u64::from(slots.count_ones());
            drop(st);
            self.completed.fetch_or(slots, Ordering::AcqRel);
            self.done.wake_up_all();
        }
        Ok(())
    }

    /// How many command completions came as events.
    pub(crate) fn reported(&self) -> u64 {
        self.state.lock().reported
    }
}

impl CompletionSource for CmdEvents {
    /// Forgets an earlier completion of `slot` (before the slot is reused).
    fn clear(&self, slot: u32) {
        self.completed.fetch_and(!(1 << slot), Ordering::AcqRel);
    }

    /// Waits (uninterruptibly, sleeping) until `slot` is reported complete or `ms` milliseconds
    /// pass; true if reported.
    fn wait(&self, slot: u32, ms: u32) -> bool {
        let bit = 1u32 << slot;
        let jiffies = c_long::try_from(msecs_to_jiffies(ms)).unwrap_or(c_long::MAX);
        self.done.wait_uninterruptible_timeout(jiffies, || {
            self.completed.load(Ordering::Acquire) & bit != 0
        });
        self.completed.fetch_and(!bit, Ordering::AcqRel) & bit != 0
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_cmd_events)]
mod tests {
    use super::*;

    #[test]
    fn a_cmd_event_names_its_slots() {
        let mut raw = [0u8; 0x40];
        raw[1] = EVENT_CMD;
        raw[0x20..0x24].copy_from_slice(&0x8000_0005u32.to_be_bytes());
        let e = Eqe::from_bytes(&raw);
        assert_eq!(e.event_type(), u64::from(EVENT_CMD));
        assert_eq!(completed_slots(&e), 0x8000_0005);
    }
}
