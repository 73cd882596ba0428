// SPDX-License-Identifier: GPL-2.0

//! C modules' device event handlers: `ib_register_event_handler` and
//! `ib_unregister_event_handler` with C's names and signatures (C's
//! `drivers/infiniband/core/device.c`). A C handler joins the device's handlers after those
//! already registered, Rust or C (C's `event_handler_list` order), and is called with a
//! `struct ib_event` (the device's C structure, the port, C's event number) for every event the
//! device's driver dispatches, in process context, as C calls it from its work item. C drivers
//! dispatch their device's events with `ib_dispatch_event` (any context).

use crate::{
    c_abi::face::CFace, device::events::EventType, device::ib_device::DeviceEventRegistration,
};
use kernel::{bindings, prelude::*};

/// Calls the C handler at `handler` for `event` on `port`.
///
/// # Safety
///
/// `handler` is the address of a registered `struct ib_event_handler` (valid until its
/// `ib_unregister_event_handler`, which removes the registration that calls this first).
unsafe fn call(handler: usize, event: EventType, port: u32) {
    let h = handler as *mut bindings::ib_event_handler;
    // SAFETY: `h` is valid (contract); the event is a plain structure, zeroed then filled.
    unsafe {
        let mut ev: bindings::ib_event = core::mem::zeroed();
        ev.device = (*h).device;
        ev.element.port_num = port;
        ev.event = event as bindings::ib_event_type;
        if let Some(f) = (*h).handler {
            f(h, &mut ev);
        }
    }
}

/// C's `ib_register_event_handler`: `event_handler->handler` is called for the events of
/// `event_handler->device` until `ib_unregister_event_handler`. A handler for a device that is
/// no longer registered, or without memory for its entry, is not registered (C's cannot fail;
/// the first cannot happen under C's contract, the second is logged).
///
/// # Safety
///
/// `event_handler` points to a `struct ib_event_handler` (C's `INIT_IB_EVENT_HANDLER`) whose
/// `device` was handed to the caller by a client's `add` and not yet removed from it; it stays
/// valid until `ib_unregister_event_handler(event_handler)` returns.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_register_event_handler(
    event_handler: *mut bindings::ib_event_handler,
) {
    // SAFETY: `event_handler` is valid and its device a face's (contract).
    let Some((dev, handlers)) = (unsafe { CFace::owner_and_handlers((*event_handler).device) })
    else {
        return;
    };
    let key = event_handler as usize;
    let mut list = handlers.lock();
    if let Err(e) = list.reserve(1, GFP_KERNEL) {
        pr_err!("no memory to register an event handler ({e:?})\n");
        return;
    }
    // SAFETY: The handler stays registered (and `key` valid) until its unregistration, which
    // drops this registration first (contract).
    let handler = KBox::new(
        move |event, port| unsafe { call(key, event, port) },
        GFP_KERNEL,
    );
    let registered = handler
        .map_err(Error::from)
        .and_then(|h| DeviceEventRegistration::new(&dev, h));
    match registered {
        Ok(r) => {
            // Within the capacity reserved above.
            let _ = list.push_within_capacity((key, r));
        }
        Err(e) => pr_err!("no memory to register an event handler ({e:?})\n"),
    }
}

/// C's `ib_unregister_event_handler`: `event_handler` is called no more once this returns.
///
/// # Safety
///
/// `event_handler` was registered with [`ib_register_event_handler`] and its device is still
/// the caller's (between the client's `add` and the end of its `remove`).
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_unregister_event_handler(
    event_handler: *mut bindings::ib_event_handler,
) {
    // SAFETY: As this function's contract.
    let Some((_dev, handlers)) = (unsafe { CFace::owner_and_handlers((*event_handler).device) })
    else {
        return;
    };
    let key = event_handler as usize;
    let gone = {
        let mut list = handlers.lock();
        match list.iter().position(|(k, _)| *k == key) {
            Some(i) => list.remove(i).ok(),
            None => None,
        }
    };
    // Dropping the registration removes it from the device's handlers (waiting for a dispatch
    // in progress), outside the list's lock.
    drop(gone);
}

/// C's `ib_dispatch_event`: tells the device's event handlers, Rust and C, about a device or
/// port event, later, from the core's workqueue (C's `ib_wq`), as the core's own drivers'
/// events reach them ([`crate::device::ib_device::IbDevice::dispatch_event`]: the port's
/// cached state refreshed first for the events that change it). Callable in any context.
/// Dropped: an event of a CQ, QP, SRQ or WQ (their own handlers get those), an unknown event
/// or port, a device being unregistered, no memory (C drops the last too).
///
/// # Safety
///
/// `event` points to a `struct ib_event` whose `device` is registered (C's contract: a driver
/// dispatches events of its own registered device).
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_dispatch_event(event: *const bindings::ib_event) {
    // SAFETY: `event` is valid (contract); for a device or port event `element` is the port.
    let (ib, number, port) =
        unsafe { ((*event).device, (*event).event, (*event).element.port_num) };
    let Some(kind) = EventType::from_number(number).filter(|e| e.is_device_event()) else {
        return;
    };
    // SAFETY: `ib` is a registered device's (contract).
    let Some(dev) = (unsafe { CFace::owner_arc(ib) }) else {
        return;
    };
    // A device event concerns no port (0, as the core's drivers dispatch it).
    let port = if kind == EventType::DeviceFatal {
        0
    } else if (1..=dev.port_count()).contains(&port) {
        port
    } else {
        return;
    };
    let Some(queues) = crate::device::workqueues::queues() else {
        return;
    };
    let _ = queues.general.try_spawn(GFP_ATOMIC, move || {
        // Not once unregistration began: its handlers are going (C flushes its queue then).
        if let Some(held) = dev.try_get() {
            held.dispatch_event(kind, port);
        }
    });
}
