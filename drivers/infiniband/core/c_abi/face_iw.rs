// SPDX-License-Identifier: GPL-2.0

//! The iWARP connection entries of a face's ops table (what C's iw_cm calls through
//! `cm_id->device`). A C driver's connection ops (siw's) read `cm_id->device` as their own
//! device structure, and C clients (rdma_cm) hand iw_cm the face: so an entry that starts a
//! connection or a listener hands the `iw_cm_id` over to the driver's structure (its `device`
//! becomes the driver's, as it would be on C, where there is one structure) and calls the
//! driver's op; from then on iw_cm calls the driver's ops directly, and the IDs a listener's
//! requests make are the driver's too. A QP number names the driver's own QP (`iw_get_qp` on
//! the driver's structure), which iw_cm holds (`iw_add_ref`) and modifies (`ib_modify_qp` on a
//! driver's QP reaches its op: `c_abi/driver/qp_relay.rs`). A device whose driver is not a C
//! driver's (none of the core's drivers is an RNIC) has no such structure: its requests are
//! refused with `-EOPNOTSUPP`.

use crate::c_abi::face::CFace;
use kernel::{
    bindings,
    ffi::{c_int, c_void},
    prelude::*,
};

/// The C driver's own structure behind the face `ib`, null when there is none.
///
/// # Safety
///
/// `ib` is a face handed to a C client (iw_cm holds it through the rdma_cm ID's device).
unsafe fn driver_of(ib: *mut bindings::ib_device) -> *mut bindings::ib_device {
    // SAFETY: The caller's contract.
    match unsafe { CFace::owner(ib) } {
        Some(dev) => dev.ops().c_structure(),
        None => core::ptr::null_mut(),
    }
}

/// Hands `cm_id` over to the driver's structure behind its face and returns that structure's
/// ops table; none (and `cm_id` untouched) when there is no such structure.
///
/// # Safety
///
/// `cm_id` is a live `iw_cm_id` whose `device` is a face or already a driver's structure.
unsafe fn hand_over<'a>(cm_id: *mut bindings::iw_cm_id) -> Option<&'a bindings::ib_device_ops> {
    // SAFETY: The caller's contract.
    let ib = unsafe { (*cm_id).device };
    // SAFETY: As above: a driver's structure is answered as it is; a face's driver looked up.
    let drv = if unsafe { crate::c_abi::face::is_driver_device(ib) } {
        ib
    } else {
        // SAFETY: `ib` is a face (contract).
        unsafe { driver_of(ib) }
    };
    if drv.is_null() {
        return None;
    }
    // SAFETY: `cm_id` is live; the driver's structure, its ops set, outlives the face's
    // registration and so the ID's use.
    unsafe {
        (*cm_id).device = drv;
        Some(&(*drv).ops)
    }
}

/// `iw_create_listen`: the driver's, on its structure.
extern "C" fn listen(cm_id: *mut bindings::iw_cm_id, backlog: c_int) -> c_int {
    // SAFETY: iw_cm passes a live ID whose device is the face it was made on.
    match unsafe { hand_over(cm_id) }.and_then(|o| o.iw_create_listen) {
        // SAFETY: The driver's op with an ID now on its structure.
        Some(f) => unsafe { f(cm_id, backlog) },
        None => EOPNOTSUPP.to_errno(),
    }
}

/// `iw_connect`: the driver's, on its structure.
extern "C" fn connect(
    cm_id: *mut bindings::iw_cm_id,
    param: *mut bindings::iw_cm_conn_param,
) -> c_int {
    // SAFETY: iw_cm passes a live ID whose device is the face it was made on.
    match unsafe { hand_over(cm_id) }.and_then(|o| o.iw_connect) {
        // SAFETY: The driver's op with an ID now on its structure and iw_cm's parameters.
        Some(f) => unsafe { f(cm_id, param) },
        None => EOPNOTSUPP.to_errno(),
    }
}

/// `iw_accept`: the driver's, on its structure (a request's ID is already the driver's: the
/// listener's was handed over).
extern "C" fn accept(
    cm_id: *mut bindings::iw_cm_id,
    param: *mut bindings::iw_cm_conn_param,
) -> c_int {
    // SAFETY: iw_cm passes a live ID whose device is the face it was made on.
    match unsafe { hand_over(cm_id) }.and_then(|o| o.iw_accept) {
        // SAFETY: As for `connect`.
        Some(f) => unsafe { f(cm_id, param) },
        None => EOPNOTSUPP.to_errno(),
    }
}

/// `iw_reject`: the driver's, on its structure.
extern "C" fn reject(cm_id: *mut bindings::iw_cm_id, pdata: *const c_void, len: u8) -> c_int {
    // SAFETY: iw_cm passes a live ID whose device is the face it was made on.
    match unsafe { hand_over(cm_id) }.and_then(|o| o.iw_reject) {
        // SAFETY: The driver's op with an ID now on its structure and iw_cm's private data.
        Some(f) => unsafe { f(cm_id, pdata, len) },
        None => EOPNOTSUPP.to_errno(),
    }
}

/// `iw_destroy_listen`: reached only for an ID never handed over (its listen refused), which
/// listens nowhere.
extern "C" fn destroy_listen(_cm_id: *mut bindings::iw_cm_id) -> c_int {
    0
}

/// `iw_get_qp`: the driver's QP numbered `qpn` (the face's QP of that number stands for it).
extern "C" fn get_qp(device: *mut bindings::ib_device, qpn: c_int) -> *mut bindings::ib_qp {
    // SAFETY: iw_cm passes the face of its ID.
    let drv = unsafe { driver_of(device) };
    if drv.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: A live driver structure, its ops set; its op looks the number up.
    match unsafe { (*drv).ops.iw_get_qp } {
        // SAFETY: As above.
        Some(f) => unsafe { f(drv, qpn) },
        None => core::ptr::null_mut(),
    }
}

/// `iw_add_ref`: the driver's, on its QP (what `get_qp` returned).
extern "C" fn add_ref(qp: *mut bindings::ib_qp) {
    // SAFETY: A live QP of the driver, whose device is its structure.
    if let Some(f) = unsafe { (*(*qp).device).ops.iw_add_ref } {
        // SAFETY: As above.
        unsafe { f(qp) };
    }
}

/// `iw_rem_ref`: the driver's, on its QP.
extern "C" fn rem_ref(qp: *mut bindings::ib_qp) {
    // SAFETY: As for `add_ref`.
    if let Some(f) = unsafe { (*(*qp).device).ops.iw_rem_ref } {
        // SAFETY: As above.
        unsafe { f(qp) };
    }
}

/// Fills the iWARP entries of an iWARP device's face, and what iw_cm reads of the device for
/// the port mapper (the driver's interface name and flags), from the driver's structure `drv`
/// (null for a device without one).
///
/// # Safety
///
/// `drv` is null or a live C driver's device structure.
pub(crate) unsafe fn fill(c: &mut bindings::ib_device, drv: *mut bindings::ib_device) {
    let ops = &mut c.ops;
    ops.iw_create_listen = Some(listen);
    ops.iw_destroy_listen = Some(destroy_listen);
    ops.iw_connect = Some(connect);
    ops.iw_accept = Some(accept);
    ops.iw_reject = Some(reject);
    ops.iw_get_qp = Some(get_qp);
    ops.iw_add_ref = Some(add_ref);
    ops.iw_rem_ref = Some(rem_ref);
    if !drv.is_null() {
        // SAFETY: A live structure (contract).
        unsafe {
            c.iw_ifname = (*drv).iw_ifname;
            c.iw_driver_flags = (*drv).iw_driver_flags;
        }
    }
}
