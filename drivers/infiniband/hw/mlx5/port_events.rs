// SPDX-License-Identifier: GPL-2.0

//! A function's port changes, turned into `ib_core` events as C's `mlx5_ib_event` and
//! `mlx5_ib_handle_event` do. mlx5_core calls the notifier in atomic context (its EQ's
//! interrupt thread, under a spinlock), so the notifier only records the event and queues a
//! work item; the work item maps it to IB events and dispatches them through `ib_core`, which
//! refreshes its port cache (a port query, a firmware command) and logs a change of state as C
//! does (`mlx5_0: Port: 1 Link DOWN`).
//!
//! The mapping is C's `handle_port_change`: ACTIVE gives `PORT_ACTIVE`, DOWN and INITIALIZED
//! give `PORT_ERR`, each after a device-wide `DEVICE_SPEED_CHANGE` (on an Ethernet port those
//! three give only the speed change: netdev events report RoCE links in C); LID, P_Key, GUID
//! and client-reregister changes give their events. Other sub-types give nothing.
//!
//! The device's internal-error state (`SysError`, once) is handled as C's
//! `mlx5_ib_handle_sys_error_event`: the completion handlers of the CQs with work outstanding
//! are called (their consumers poll and get that work back flushed), `DEVICE_FATAL` is
//! dispatched for port 1, and the device dispatches no event after it (C's `ib_active`).
//!
//! Events are kept in a bounded list drained in order by one work item (a work item never runs
//! on two CPUs at once, so the order the device reported is the order dispatched); when the list
//! is full an event is dropped, as C drops one when its atomic allocation fails.

use crate::cq::DeviceCqs;
use ib_core::{attrs::LinkLayer, device::events::EventType, device::ib_device::IbDevice};
use kernel::{
    new_spinlock,
    owned_workqueue::{Flags, OwnedQueue},
    prelude::*,
    str::CString,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, SpinLock,
    },
    workqueue::{Work, WorkItem},
};
use mlx5_core::auxdev::{Event, EventNotifier};

/// Events waiting for the work item at most (C queues one allocation per event).
const PENDING_MAX: usize = 64;

/// PORT_CHANGE sub-types (C's `MLX5_PORT_CHANGE_SUBTYPE_*`).
const SUBTYPE_INITIALIZED: u8 = 5;
const SUBTYPE_LID: u8 = 6;
const SUBTYPE_PKEY: u8 = 7;
const SUBTYPE_GUID: u8 = 8;
const SUBTYPE_CLIENT_REREG: u8 = 9;

/// What the notifier recorded: a port and what changed on it.
#[derive(Clone, Copy)]
enum PortChange {
    /// The link went up.
    Active,
    /// The link went down or back to initialized.
    Down,
    /// Another change, as its IB event.
    Other(EventType),
    /// The device entered the internal-error state.
    Fatal,
}

/// A function's port-event notifier and the work item that dispatches its events.
#[pin_data]
pub(crate) struct PortEvents {
    /// The function's PCI name.
    name: CString,
    /// The device's port count.
    ports: u8,
    /// Port events received on existing ports.
    count: Arc<Atomic<u32>>,
    /// The RDMA device the events are for.
    dev: Arc<IbDevice>,
    /// Its CQs (the internal-error handling calls their completion handlers).
    cqs: Arc<DeviceCqs>,
    /// Whether events are still dispatched (C's `ib_active`): not after the internal error.
    active: Atomic<u32>,
    /// Events not yet dispatched, oldest first (capacity reserved at creation: the notifier
    /// runs in atomic context and does not allocate).
    #[pin]
    pending: SpinLock<KVec<(u8, PortChange)>>,
    #[pin]
    work: Work<PortEvents>,
}

kernel::impl_has_work! {
    impl HasWork<Self> for PortEvents { self.work }
}

impl PortEvents {
    /// The notifier of a function called `name` with `ports` ports, for `dev`; `count` counts
    /// the events received on existing ports.
    pub(crate) fn new(
        name: CString,
        ports: u8,
        count: Arc<Atomic<u32>>,
        dev: Arc<IbDevice>,
        cqs: Arc<DeviceCqs>,
    ) -> Result<Arc<Self>> {
        let pending = KVec::with_capacity(PENDING_MAX, GFP_KERNEL)?;
        Arc::pin_init(
            pin_init!(Self {
                name,
                ports,
                count,
                dev,
                cqs,
                active: Atomic::new(1),
                pending <- new_spinlock!(pending, "mlx5_ib::port_events::PortEvents::pending"),
                work <- kernel::new_work!("mlx5_ib::port_events::PortEvents::work"),
            }),
            GFP_KERNEL,
        )
    }

    /// The queue the work item runs on (C's `mlx5_ib_event_wq`), one per function: dropping
    /// it, after the notifier's registration, waits for the work item.
    pub(crate) fn new_queue() -> Result<OwnedQueue> {
        OwnedQueue::new(c"mlx5_ib_event_wq", Flags::UNBOUND, 0)
    }

    /// Records an event and queues the work item. Atomic context.
    fn record(self: &Arc<Self>, port: u8, change: PortChange, queue: &OwnedQueue) {
        if self
            .pending
            .lock()
            .push_within_capacity((port, change))
            .is_err()
        {
            return;
        }
        let _ = queue.enqueue(self.clone());
    }

    /// Dispatches one event (process context).
    fn dispatch(&self, port: u8, change: PortChange) {
        let port = u32::from(port);
        if let PortChange::Fatal = change {
            // The consumers' CQs first, then the event, as C.
            let _ = self.cqs.internal_error();
            if self.active.xchg(0, Relaxed) == 1 {
                self.dev.dispatch_event(EventType::DeviceFatal, port);
            }
            return;
        }
        if self.active.load(Relaxed) == 0 {
            return;
        }
        let event = match change {
            PortChange::Active | PortChange::Down => {
                self.dev.dispatch_event(EventType::DeviceSpeedChange, 0);
                if self.dev.link_layer(port) == Some(LinkLayer::Ethernet) {
                    return;
                }
                if matches!(change, PortChange::Active) {
                    EventType::PortActive
                } else {
                    EventType::PortErr
                }
            }
            PortChange::Other(e) => e,
            PortChange::Fatal => return,
        };
        self.dev.dispatch_event(event, port);
    }
}

impl WorkItem for PortEvents {
    type Pointer = Arc<PortEvents>;

    fn run(this: Arc<PortEvents>) {
        loop {
            let next = {
                let mut pending = this.pending.lock();
                if pending.is_empty() {
                    None
                } else {
                    pending.remove(0).ok()
                }
            };
            let Some((port, change)) = next else {
                return;
            };
            // The device is registered while events can come (the notifier's registration and
            // this queue go before the device); a reference keeps unregistration waiting.
            let Some(_user) = this.dev.try_get() else {
                return;
            };
            this.dispatch(port, change);
        }
    }
}

/// The notifier as mlx5_core calls it, with the queue its events go to.
pub(crate) struct Notifier {
    /// The events' state.
    pub(crate) events: Arc<PortEvents>,
    /// The queue of the events' work item; it outlives the notifier's registration.
    pub(crate) queue: Arc<OwnedQueue>,
}

impl EventNotifier for Notifier {
    fn notify(&self, event: Event) {
        let (port, change) = match event {
            // C's SYS_ERROR carries port 1.
            Event::SysError => (1, Some(PortChange::Fatal)),
            Event::PortDown(p) => (p, Some(PortChange::Down)),
            Event::PortActive(p) => (p, Some(PortChange::Active)),
            Event::PortChange(p, s) => (
                p,
                match s {
                    SUBTYPE_INITIALIZED => Some(PortChange::Down),
                    SUBTYPE_LID => Some(PortChange::Other(EventType::LidChange)),
                    SUBTYPE_PKEY => Some(PortChange::Other(EventType::PkeyChange)),
                    SUBTYPE_GUID => Some(PortChange::Other(EventType::GidChange)),
                    SUBTYPE_CLIENT_REREG => Some(PortChange::Other(EventType::ClientReregister)),
                    _ => None,
                },
            ),
        };
        let events = &self.events;
        // As C's `rdma_is_port_valid`: ports are numbered from 1.
        if port == 0 || port > events.ports {
            pr_warn!("{}: warning: event on port {port}\n", &*events.name);
            return;
        }
        if event != Event::SysError {
            events.count.fetch_add(1, Relaxed);
        }
        if let Some(change) = change {
            events.record(port, change, &self.queue);
        }
    }
}
