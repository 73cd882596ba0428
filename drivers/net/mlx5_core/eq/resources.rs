// SPDX-License-Identifier: GPL-2.0

//! The resource table (C's QP and SRQ tables as far as events go): which handler gets the
//! asynchronous events of a QP or an SRQ. The async EQ's interrupt thread routes them by
//! resource number and type as C's `mlx5_eq_async_int` and the QP/SRQ event notifiers do: the
//! QP events (path migrated, communication established, SQ drained, last WQE reached,
//! catastrophic error, path migration failed, invalid request, access error) go to the QP named
//! by the EQE (its queue type must be a QP's), the SRQ events (catastrophic error, limit
//! reached) to the SRQ.
//!
//! In 7.3 C these tables live in `mlx5_ib` (`qpc.c`, `srq_cmd.c`), fed by `mlx5_core`'s event
//! notifier chain; here `mlx5_core` keeps them (the contract with `mlx5_ib`). As in C, an event
//! for a resource nobody registered is dropped silently.
//!
//! Handlers are called with the table's lock released (a reference taken under it), so a
//! registration's drop waits for the control vector's thread to finish a dispatch in flight
//! (`synchronize_irq` of the control vector).

use kernel::{
    irq_vector::{IrqVector, IrqVectorSlot},
    new_spinlock,
    prelude::*,
    rbtree::{RBTree, RBTreeNodeReservation},
    sync::{Arc, SpinLock},
};

/// Async event types that concern a resource (C's `MLX5_EVENT_TYPE_*`).
pub mod event {
    /// Path migrated.
    pub const PATH_MIG: u8 = 0x01;
    /// Communication established.
    pub const COMM_EST: u8 = 0x02;
    /// SQ drained.
    pub const SQ_DRAINED: u8 = 0x03;
    /// CQ error (to the CQ's handler).
    pub const CQ_ERROR: u8 = 0x04;
    /// Catastrophic error on a work queue.
    pub const WQ_CATAS_ERROR: u8 = 0x05;
    /// Path migration failed.
    pub const PATH_MIG_FAILED: u8 = 0x07;
    /// Invalid request on a work queue.
    pub const WQ_INVAL_REQ_ERROR: u8 = 0x10;
    /// Access error on a work queue.
    pub const WQ_ACCESS_ERROR: u8 = 0x11;
    /// Catastrophic error on an SRQ.
    pub const SRQ_CATAS_ERROR: u8 = 0x12;
    /// Last WQE reached (a QP attached to an SRQ).
    pub const SRQ_LAST_WQE: u8 = 0x13;
    /// SRQ limit reached.
    pub const SRQ_RQ_LIMIT: u8 = 0x14;

    /// Events delivered to a QP.
    pub(crate) const QP_EVENTS: [u8; 8] = [
        PATH_MIG,
        COMM_EST,
        SQ_DRAINED,
        WQ_CATAS_ERROR,
        PATH_MIG_FAILED,
        WQ_INVAL_REQ_ERROR,
        WQ_ACCESS_ERROR,
        SRQ_LAST_WQE,
    ];
    /// Events delivered to an SRQ.
    pub(crate) const SRQ_EVENTS: [u8; 2] = [SRQ_CATAS_ERROR, SRQ_RQ_LIMIT];

    /// The async EQ's mask bits for resource and CQ error events (C's
    /// `MLX5_ASYNC_EVENT_MASK` without the port change bit).
    pub(crate) const fn mask() -> u64 {
        let mut m = 1u64 << CQ_ERROR;
        let mut i = 0;
        while i < QP_EVENTS.len() {
            m |= 1 << QP_EVENTS[i];
            i += 1;
        }
        i = 0;
        while i < SRQ_EVENTS.len() {
            m |= 1 << SRQ_EVENTS[i];
            i += 1;
        }
        m
    }
}

/// Resource numbers are 24 bits.
const RSN_MASK: u32 = 0x00ff_ffff;
/// The EQE queue type of a QP (C's `MLX5_EVENT_QUEUE_TYPE_QP`).
const QUEUE_TYPE_QP: u8 = 0;

/// A resource whose events a driver handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// A QP, by number.
    Qp(u32),
    /// An SRQ, by number.
    Srq(u32),
}

impl Resource {
    /// The table key: the kind above the 24-bit number (`EINVAL` for a wider number).
    fn key(self) -> Result<u64> {
        let (kind, n) = match self {
            Resource::Qp(n) => (1u64, n),
            Resource::Srq(n) => (2u64, n),
        };
        if n & !RSN_MASK != 0 {
            return Err(EINVAL);
        }
        Ok((kind << 32) | u64::from(n))
    }

    /// The resource an async event is about, from the EQE's type, queue type and number
    /// (bounded to 24 bits); `None` for an event that is not a resource's, or for a queue type
    /// that is not a QP's (RQ, SQ, DCT: no kernel handler here).
    pub(crate) fn of_event(event_type: u8, queue_type: u8, number: u32) -> Option<Self> {
        let n = number & RSN_MASK;
        if event::SRQ_EVENTS.contains(&event_type) {
            return Some(Resource::Srq(n));
        }
        if event::QP_EVENTS.contains(&event_type) && queue_type == QUEUE_TYPE_QP {
            return Some(Resource::Qp(n));
        }
        None
    }
}

/// A QP's or SRQ's async event handler.
pub trait ResourceHandler: Send + Sync {
    /// An async event for the resource (the EQE's event type), from the control vector's
    /// interrupt thread: never sleep (other events wait behind it).
    fn event(&self, event_type: u8);
}

/// The registered resources of a function.
#[pin_data]
pub(crate) struct ResourceTable {
    #[pin]
    tree: SpinLock<RBTree<u64, Arc<dyn ResourceHandler>>>,
    /// The control vector (empty before it is known), waited for at unregistration.
    irq: IrqVectorSlot,
}

impl ResourceTable {
    /// An empty table.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                tree <- new_spinlock!(RBTree::new()),
                irq: IrqVectorSlot::new(),
            }),
            GFP_KERNEL,
        )
    }

    /// Notes the vector whose interrupt thread dispatches.
    pub(crate) fn set_vector(&self, vector: IrqVector) {
        self.irq.set(vector);
    }

    /// Registers `handler` for `res` until the registration drops (`EEXIST` if it has one).
    pub(crate) fn register(
        self: &Arc<Self>,
        res: Resource,
        handler: Arc<dyn ResourceHandler>,
    ) -> Result<ResourceRegistration> {
        let key = res.key()?;
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?.into_node(key, handler);
        let mut tree = self.tree.lock();
        if tree.get(&key).is_some() {
            return Err(EEXIST);
        }
        tree.insert(node);
        drop(tree);
        Ok(ResourceRegistration {
            table: self.clone(),
            key,
        })
    }

    /// Passes an async event to the handler of the resource it names. Returns whether one got
    /// it.
    pub(crate) fn dispatch(&self, event_type: u8, queue_type: u8, number: u32) -> bool {
        let Some(key) =
            Resource::of_event(event_type, queue_type, number).and_then(|r| r.key().ok())
        else {
            return false;
        };
        let handler = self.tree.lock().get(&key).cloned();
        match handler {
            Some(h) => {
                h.event(event_type);
                true
            }
            None => false,
        }
    }
}

/// A resource's registration: its handler gets the resource's async events until this is
/// dropped (process context). Once the drop returns, the handler is not running and is never
/// called again.
pub struct ResourceRegistration {
    table: Arc<ResourceTable>,
    key: u64,
}

impl Drop for ResourceRegistration {
    fn drop(&mut self) {
        let removed = self.table.tree.lock().remove(&self.key);
        // The control vector is registered until the function is torn down, which deletes the
        // auxiliary device (whose driver owns every registration) first. Drops run in process
        // context, not in that vector's thread.
        self.table.irq.synchronize();
        drop(removed);
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_resources)]
mod tests {
    use super::*;
    use kernel::sync::atomic::{Atomic, Relaxed};

    struct Last(Atomic<u32>);

    impl ResourceHandler for Last {
        fn event(&self, event_type: u8) {
            self.0.store(0x100 | u32::from(event_type), Relaxed);
        }
    }

    #[test]
    fn events_route_by_number_and_type() -> Result {
        let t = ResourceTable::new()?;
        let qp = Arc::new(Last(Atomic::new(0)), GFP_KERNEL)?;
        let srq = Arc::new(Last(Atomic::new(0)), GFP_KERNEL)?;
        let rq = t.register(Resource::Qp(9), qp.clone())?;
        let rs = t.register(Resource::Srq(9), srq.clone())?;
        assert_eq!(t.register(Resource::Qp(9), qp.clone()).err(), Some(EEXIST));
        assert!(t.dispatch(event::COMM_EST, 0, 9));
        assert_eq!(qp.0.load(Relaxed), 0x102);
        assert!(t.dispatch(event::SRQ_RQ_LIMIT, 0, 0xff00_0009));
        assert_eq!(srq.0.load(Relaxed), 0x114);
        // An RQ-type queue event is not the QP's; CQ errors are not resources'.
        assert!(!t.dispatch(event::WQ_CATAS_ERROR, 1, 9));
        assert!(!t.dispatch(event::CQ_ERROR, 0, 9));
        assert!(t.dispatch(event::SRQ_LAST_WQE, 0, 9));
        assert_eq!(qp.0.load(Relaxed), 0x113);
        drop(rq);
        assert!(!t.dispatch(event::COMM_EST, 0, 9));
        drop(rs);
        assert!(!t.dispatch(event::SRQ_CATAS_ERROR, 0, 9));
        // The mask is C's MLX5_ASYNC_EVENT_MASK without PORT_CHANGE (0x9).
        assert_eq!(event::mask() | (1 << 9), 0x1f_02be);
        Ok(())
    }
}
