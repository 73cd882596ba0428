// SPDX-License-Identifier: GPL-2.0

//! The CQ table (C's per-EQ `mlx5_cq_table`, here one per function): which handler gets the
//! completion events of a CQ number (from the completion EQs' hard-IRQ handlers) and its CQ
//! error events (from the async EQ's interrupt thread).
//!
//! The table is a red-black tree under an IRQ-safe spinlock. A handler is looked up and a
//! reference taken under the lock, then called with the lock released. A registration removes
//! its entry under the lock, then waits for every vector that may be dispatching (C's
//! `synchronize_irq` in `mlx5_eq_del_cq`): once its drop returns, the handler is not running
//! and is never called again. Insertion allocates the tree node before taking the lock.

use crate::log_limit::LogLimit;
use kernel::{
    device,
    irq_vector::{IrqVector, IrqVectorSlot},
    new_spinlock_irq,
    prelude::*,
    rbtree::{RBTree, RBTreeNodeReservation},
    sync::{aref::ARef, Arc, SpinLockIrq},
};

/// CQ numbers are 24 bits.
pub(crate) const CQN_MASK: u32 = 0x00ff_ffff;

/// A CQ's event handler.
pub trait CqHandler: Send + Sync {
    /// A completion event for the CQ. Runs in hard-IRQ context: keep it short, never sleep.
    fn completion(&self);
    /// A CQ error event (EQE type 0x04), from the async EQ's interrupt thread; never sleep
    /// either (other handlers wait behind it).
    fn event(&self, event_type: u8);
}

/// The registered CQs of a function.
#[pin_data]
pub(crate) struct CqTable {
    #[pin]
    tree: SpinLockIrq<RBTree<u32, Arc<dyn CqHandler>>>,
    /// The vectors that dispatch (completion vectors as they are created, the control
    /// vector); empty slots for none yet.
    irqs: KVec<IrqVectorSlot>,
    /// For the warnings about unknown CQs.
    dev: Option<ARef<device::Device>>,
    unknown_log: LogLimit,
}

impl CqTable {
    /// An empty table whose dispatching interrupts will take at most `vectors` slots.
    pub(crate) fn new(dev: Option<ARef<device::Device>>, vectors: usize) -> Result<Arc<Self>> {
        let mut irqs = KVec::with_capacity(vectors, GFP_KERNEL)?;
        for _ in 0..vectors {
            irqs.push(IrqVectorSlot::new(), GFP_KERNEL)?;
        }
        Arc::pin_init(
            pin_init!(Self {
                tree <- new_spinlock_irq!(RBTree::new()),
                irqs,
                dev,
                unknown_log: LogLimit::new(),
            }),
            GFP_KERNEL,
        )
    }

    /// Notes that `vector` dispatches for this table (in slot `slot`).
    pub(crate) fn set_vector(&self, slot: usize, vector: IrqVector) {
        if let Some(s) = self.irqs.get(slot) {
            s.set(vector);
        }
    }

    /// Registers `handler` for CQ `cqn` until the registration drops: `EINVAL` past 24 bits,
    /// `EEXIST` if the CQ has a handler.
    pub(crate) fn register(
        self: &Arc<Self>,
        cqn: u32,
        handler: Arc<dyn CqHandler>,
    ) -> Result<CqRegistration> {
        if cqn & !CQN_MASK != 0 {
            return Err(EINVAL);
        }
        // Allocated before the lock is taken.
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?.into_node(cqn, handler);
        let mut tree = self.tree.lock();
        if tree.get(&cqn).is_some() {
            return Err(EEXIST);
        }
        tree.insert(node);
        drop(tree);
        Ok(CqRegistration {
            table: self.clone(),
            cqn,
        })
    }

    /// The handler of `cqn`, if any (a reference, taken under the lock).
    fn handler(&self, cqn: u32) -> Option<Arc<dyn CqHandler>> {
        self.tree.lock().get(&cqn).cloned()
    }

    /// Passes a completion event for `cqn` (from the EQE, bounded here) to its handler; an
    /// unknown CQ gets a rate-limited warning. Returns whether a handler got it.
    pub(crate) fn completion(&self, cqn: u32) -> bool {
        let cqn = cqn & CQN_MASK;
        match self.handler(cqn) {
            Some(h) => {
                h.completion();
                true
            }
            None => {
                self.unknown(cqn, "Completion");
                false
            }
        }
    }

    /// Passes a CQ error event for `cqn` to its handler. Returns whether a handler got it.
    pub(crate) fn event(&self, cqn: u32, event_type: u8) -> bool {
        let cqn = cqn & CQN_MASK;
        match self.handler(cqn) {
            Some(h) => {
                h.event(event_type);
                true
            }
            None => {
                self.unknown(cqn, "Async");
                false
            }
        }
    }

    /// C's message for an event on a CQ nobody registered ("Completion event for bogus CQ" is
    /// a rate-limited debug line in C, "Async event for bogus CQ" a warning), rate-limited here.
    fn unknown(&self, cqn: u32, what: &str) {
        if !self.unknown_log.allow() {
            return;
        }
        match &self.dev {
            Some(dev) => dev_warn!(dev, "{what} event for bogus CQ {cqn:#x}\n"),
            None => pr_warn!("mlx5_core: {what} event for bogus CQ {cqn:#x}\n"),
        }
    }

    /// Removes `cqn`'s handler, then waits for the dispatching interrupts' handlers that may be
    /// running it.
    fn unregister(&self, cqn: u32) {
        let removed = self.tree.lock().remove(&cqn);
        // The vectors are the function's, allocated until after the auxiliary device (whose
        // driver owns every registration) is deleted. The wait sleeps; a registration is
        // dropped in process context, never from a vector's handler itself.
        for slot in self.irqs.iter() {
            slot.synchronize();
        }
        // The table's reference goes with no lock held and no dispatch running.
        drop(removed);
    }

    /// Number of registered CQs.
    #[cfg(CONFIG_KUNIT)]
    fn len(&self) -> usize {
        self.tree.lock().iter().count()
    }
}

/// A CQ's registration: its handler gets the CQ's events until this is dropped (process
/// context). Once the drop returns, the handler is not running and is never called again.
pub struct CqRegistration {
    table: Arc<CqTable>,
    cqn: u32,
}

impl CqRegistration {
    /// The CQ number.
    pub fn cqn(&self) -> u32 {
        self.cqn
    }
}

impl Drop for CqRegistration {
    fn drop(&mut self) {
        self.table.unregister(self.cqn);
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_cq_table)]
mod tests {
    use super::*;
    use kernel::sync::atomic::{Atomic, Relaxed};

    /// Counts what it gets.
    struct Counter {
        completions: Atomic<u32>,
        events: Atomic<u32>,
        last_event: Atomic<u32>,
    }

    impl CqHandler for Counter {
        fn completion(&self) {
            self.completions.fetch_add(1, Relaxed);
        }
        fn event(&self, event_type: u8) {
            self.events.fetch_add(1, Relaxed);
            self.last_event.store(u32::from(event_type), Relaxed);
        }
    }

    fn counter() -> Result<Arc<Counter>> {
        Ok(Arc::new(
            Counter {
                completions: Atomic::new(0),
                events: Atomic::new(0),
                last_event: Atomic::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    #[test]
    fn register_dispatch_unregister() -> Result {
        let t = CqTable::new(None, 2)?;
        let a = counter()?;
        let b = counter()?;
        let ra = t.register(5, a.clone())?;
        let rb = t.register(0x00ab_cdef, b.clone())?;
        assert_eq!(ra.cqn(), 5);
        // A second handler for the same CQ, or a CQN past 24 bits, is refused.
        assert_eq!(t.register(5, b.clone()).err(), Some(EEXIST));
        assert_eq!(t.register(0x0100_0000, b.clone()).err(), Some(EINVAL));
        assert!(t.completion(5));
        assert!(t.completion(5));
        // The EQE's CQN is bounded to 24 bits: high bits are ignored.
        assert!(t.completion(0xff00_0005));
        assert!(t.completion(0x00ab_cdef));
        assert!(t.event(0x00ab_cdef, 0x04));
        assert_eq!(a.completions.load(Relaxed), 3);
        assert_eq!(b.completions.load(Relaxed), 1);
        assert_eq!(b.events.load(Relaxed), 1);
        assert_eq!(b.last_event.load(Relaxed), 4);
        drop(ra);
        // Gone: no more calls, and the table no longer holds the handler.
        assert!(!t.completion(5));
        assert_eq!(a.completions.load(Relaxed), 3);
        assert_eq!(t.len(), 1);
        // The number can be registered again.
        let ra2 = t.register(5, a.clone())?;
        assert!(t.completion(5));
        assert_eq!(a.completions.load(Relaxed), 4);
        drop(ra2);
        drop(rb);
        assert_eq!(t.len(), 0);
        Ok(())
    }

    #[test]
    fn unknown_cqn_is_not_dispatched() -> Result {
        let t = CqTable::new(None, 1)?;
        let a = counter()?;
        let _r = t.register(7, a.clone())?;
        assert!(!t.completion(8));
        assert!(!t.event(6, 0x04));
        assert_eq!(a.completions.load(Relaxed) + a.events.load(Relaxed), 0);
        Ok(())
    }
}
