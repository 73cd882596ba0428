// SPDX-License-Identifier: GPL-2.0

//! Asynchronous events of verbs objects (C's `ib_event`): what a driver raises on a QP or an
//! SRQ (a limit reached, the last WQE of a QP attached to an SRQ, a fatal error) and the
//! handler the consumer gave when creating the object (C's `event_handler` of
//! `ib_qp_init_attr` and `ib_srq_init_attr`); and the events of a whole device or port, which
//! drivers dispatch with `device::Registration::dispatch_event` to the handlers consumers
//! registered (`ib_device::DeviceEventRegistration`, C's `ib_register_event_handler`). Values are C's
//! `enum ib_event_type`.

use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, Mutex,
    },
};

/// An asynchronous event (`enum ib_event_type`, C's values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum EventType {
    /// `IB_EVENT_CQ_ERR`: a CQ overrun or error.
    CqErr = 0,
    /// `IB_EVENT_QP_FATAL`.
    QpFatal = 1,
    /// `IB_EVENT_QP_REQ_ERR`.
    QpReqErr = 2,
    /// `IB_EVENT_QP_ACCESS_ERR`.
    QpAccessErr = 3,
    /// `IB_EVENT_COMM_EST`.
    CommEst = 4,
    /// `IB_EVENT_SQ_DRAINED`.
    SqDrained = 5,
    /// `IB_EVENT_PATH_MIG`.
    PathMig = 6,
    /// `IB_EVENT_PATH_MIG_ERR`.
    PathMigErr = 7,
    /// `IB_EVENT_DEVICE_FATAL`.
    DeviceFatal = 8,
    /// `IB_EVENT_PORT_ACTIVE`.
    PortActive = 9,
    /// `IB_EVENT_PORT_ERR`.
    PortErr = 10,
    /// `IB_EVENT_LID_CHANGE`.
    LidChange = 11,
    /// `IB_EVENT_PKEY_CHANGE`.
    PkeyChange = 12,
    /// `IB_EVENT_SM_CHANGE`.
    SmChange = 13,
    /// `IB_EVENT_SRQ_ERR`.
    SrqErr = 14,
    /// `IB_EVENT_SRQ_LIMIT_REACHED`: fewer receives than the armed limit remain on the SRQ
    /// (the limit is disarmed).
    SrqLimitReached = 15,
    /// `IB_EVENT_QP_LAST_WQE_REACHED`: a QP attached to an SRQ went to the error state and
    /// will take no more of its receives.
    QpLastWqeReached = 16,
    /// `IB_EVENT_CLIENT_REREGISTER`.
    ClientReregister = 17,
    /// `IB_EVENT_GID_CHANGE`.
    GidChange = 18,
    /// `IB_EVENT_WQ_FATAL`.
    WqFatal = 19,
    /// `IB_EVENT_DEVICE_SPEED_CHANGE`.
    DeviceSpeedChange = 20,
}

impl EventType {
    /// The event with C's number `n` (`enum ib_event_type`), if there is one.
    pub fn from_number(n: u32) -> Option<Self> {
        use EventType::*;
        Some(match n {
            0 => CqErr,
            1 => QpFatal,
            2 => QpReqErr,
            3 => QpAccessErr,
            4 => CommEst,
            5 => SqDrained,
            6 => PathMig,
            7 => PathMigErr,
            8 => DeviceFatal,
            9 => PortActive,
            10 => PortErr,
            11 => LidChange,
            12 => PkeyChange,
            13 => SmChange,
            14 => SrqErr,
            15 => SrqLimitReached,
            16 => QpLastWqeReached,
            17 => ClientReregister,
            18 => GidChange,
            19 => WqFatal,
            20 => DeviceSpeedChange,
            _ => return None,
        })
    }

    /// Whether the event concerns a whole device or one of its ports (what a device's event
    /// handlers get), rather than a CQ, QP, SRQ or WQ (what the object's own handler gets).
    pub fn is_device_event(self) -> bool {
        use EventType::*;
        matches!(
            self,
            DeviceFatal
                | PortActive
                | PortErr
                | LidChange
                | PkeyChange
                | SmChange
                | ClientReregister
                | GidChange
                | DeviceSpeedChange
        )
    }
}

/// A consumer's handler of an object's asynchronous events. Drivers may raise events in atomic
/// context (from their event queue's interrupt), so the handler must not sleep.
pub type EventHandler = KBox<dyn Fn(EventType) + Send + Sync>;

/// Where a driver raises the asynchronous events of one object (it keeps a clone).
#[derive(Clone)]
pub struct EventNotifier(Arc<Option<EventHandler>>);

impl EventNotifier {
    /// A notifier calling `handler` (nothing when `None`).
    pub(crate) fn new(handler: Option<EventHandler>) -> Result<Self> {
        Ok(Self(Arc::new(handler, GFP_KERNEL)?))
    }

    /// Raises `event`: calls the consumer's handler, if it has one.
    pub fn raise(&self, event: EventType) {
        if let Some(h) = self.0.as_ref() {
            h(event);
        }
    }
}

/// A consumer's handler of a device's events (C's `ib_event_handler`): the event and the port
/// it concerns (0 for the whole device). Called in process context.
pub type DeviceEventHandler = KBox<dyn Fn(EventType, u32) + Send + Sync>;

/// A device's event handlers (C's `event_handler_list`).
#[pin_data]
pub(crate) struct DeviceEvents {
    #[pin]
    handlers: Mutex<KVec<(u64, DeviceEventHandler)>>,
    next: Atomic<u64>,
}

impl DeviceEvents {
    /// No handler.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            handlers <- new_mutex!(KVec::new(), "ib_core::device::events::DeviceEvents::handlers"),
            next: Atomic::new(0),
        })
    }

    /// Adds `handler`; returns the id that [`DeviceEvents::remove`] takes.
    pub(crate) fn add(&self, handler: DeviceEventHandler) -> Result<u64> {
        let id = self.next.fetch_add(1, Relaxed);
        self.handlers.lock().push((id, handler), GFP_KERNEL)?;
        Ok(id)
    }

    /// Removes the handler [`DeviceEvents::add`] gave `id`.
    pub(crate) fn remove(&self, id: u64) {
        let mut handlers = self.handlers.lock();
        if let Some(i) = handlers.iter().position(|(h, _)| *h == id) {
            let _ = handlers.remove(i);
        }
    }

    /// Calls every handler, in registration order (C's `ib_dispatch_event`).
    pub(crate) fn dispatch(&self, event: EventType, port: u32) {
        for (_, h) in self.handlers.lock().iter() {
            h(event, port);
        }
    }
}
