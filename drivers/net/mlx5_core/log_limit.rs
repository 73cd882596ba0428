// SPDX-License-Identifier: GPL-2.0

//! A log rate limit for lines an interrupt handler writes (port changes, events for unknown
//! CQs): a flood of events cannot flood the kernel log.

use kernel::{
    sync::atomic::{Atomic, Relaxed},
    time::{Instant, Monotonic},
};

/// A log rate limit: at most [`LogLimit::PER_SECOND`] lines in a second; the lines left out are
/// counted and reported once logging is allowed again. Lock-free: callers on several CPUs (the
/// control vector's thread, completion vectors) may race, which at worst lets a line more or
/// less through.
pub(crate) struct LogLimit {
    /// When the limit was made: windows are measured from it.
    base: Instant<Monotonic>,
    /// Start of the current one-second window, in ms since `base`.
    window_ms: Atomic<i64>,
    /// Lines logged in the window.
    logged: Atomic<u32>,
    /// Lines left out and not reported yet.
    suppressed: Atomic<u32>,
}

impl LogLimit {
    /// Lines allowed per second.
    pub(crate) const PER_SECOND: u32 = 10;

    /// A fresh limit.
    pub(crate) fn new() -> Self {
        Self {
            base: Instant::now(),
            window_ms: Atomic::new(i64::MIN),
            logged: Atomic::new(0),
            suppressed: Atomic::new(0),
        }
    }

    /// Whether one more line may be logged now (counted when not).
    pub(crate) fn allow(&self) -> bool {
        let ok = self.take_slot();
        if !ok {
            self.suppressed.fetch_add(1, Relaxed);
        }
        ok
    }

    /// Takes one of the window's lines if one is left.
    fn take_slot(&self) -> bool {
        let now = self.base.elapsed().as_millis();
        if now.saturating_sub(self.window_ms.load(Relaxed)) >= 1000 {
            self.window_ms.store(now, Relaxed);
            self.logged.store(0, Relaxed);
        }
        if self.logged.load(Relaxed) < Self::PER_SECOND {
            self.logged.fetch_add(1, Relaxed);
            true
        } else {
            false
        }
    }

    /// The lines left out since the last report, once a line may be logged again.
    pub(crate) fn take_suppressed(&self) -> u32 {
        if self.suppressed.load(Relaxed) == 0 || !self.take_slot() {
            return 0;
        }
        self.suppressed.xchg(0, Relaxed)
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_log_limit)]
mod tests {
    use super::*;

    #[test]
    fn port_lines_are_rate_limited_and_the_rest_counted() {
        let l = LogLimit::new();
        for _ in 0..LogLimit::PER_SECOND {
            assert!(l.allow());
        }
        // A flood within the same second: counted, not logged, and not reported yet.
        for _ in 0..1000 {
            assert!(!l.allow());
        }
        assert_eq!(l.take_suppressed(), 0);
        assert_eq!(l.suppressed.load(Relaxed), 1000);
    }
}
