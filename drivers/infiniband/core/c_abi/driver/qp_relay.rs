// SPDX-License-Identifier: GPL-2.0

//! What a C driver's QP structure carries for the core: its event handler, which relays the
//! driver's events to the QP's owner ([`event`]), and which tells such a structure from the
//! faces C consumers get ([`is_driver_qp`]): C code may hold a driver's own structure (iw_cm
//! gets siw's from the driver's `iw_get_qp` and moves it to the error state on disconnect),
//! where C's core calls the driver's op directly ([`modify`]).

use crate::device::events::{EventNotifier, EventType};
use core::ffi::c_void;
use kernel::{bindings, ffi::c_int};

/// The driver's asynchronous event callback of a QP: passed on to the QP's owner.
///
/// # Safety
///
/// Called by the driver with an event of a QP whose context is an [`EventNotifier`] that lives
/// as long as the QP (a `DriverQp`'s).
pub(crate) unsafe extern "C" fn event(ev: *mut bindings::ib_event, ctx: *mut c_void) {
    // SAFETY: The context is the QP's notifier (contract); `ev` is readable.
    unsafe {
        if let Some(e) = EventType::from_number((*ev).event) {
            (*ctx.cast::<EventNotifier>()).raise(e);
        }
    }
}

/// Whether `qp` is a C driver's own QP structure (a `DriverQp`'s) rather than a face the core
/// made for a C consumer: only the former carries [`event`] as its handler.
///
/// # Safety
///
/// `qp` is a live `struct ib_qp` of either kind.
pub(crate) unsafe fn is_driver_qp(qp: *const bindings::ib_qp) -> bool {
    const RELAY: unsafe extern "C" fn(*mut bindings::ib_event, *mut c_void) = event;
    // SAFETY: The caller's contract.
    unsafe { (*qp).event_handler }.is_some_and(|h| core::ptr::fn_addr_eq(h, RELAY))
}

/// C's `ib_modify_qp` on a C driver's own QP structure: the driver's `modify_qp`, without user
/// data (`-EOPNOTSUPP` for a driver without it).
///
/// # Safety
///
/// `qp` is a live QP structure of a registered C driver's device ([`is_driver_qp`]); `attr` is
/// readable.
pub(crate) unsafe fn modify(
    qp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    mask: c_int,
) -> c_int {
    // SAFETY: The caller's contract: the device structure outlives its QPs.
    match unsafe { (*(*qp).device).ops.modify_qp } {
        // SAFETY: The driver's op on its own live QP.
        Some(m) => unsafe { m(qp, attr, mask, core::ptr::null_mut()) },
        None => kernel::error::code::EOPNOTSUPP.to_errno(),
    }
}
