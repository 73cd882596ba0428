// SPDX-License-Identifier: GPL-2.0

//! The iWARP connection entries of a face's ops table (what C's iw_cm calls through
//! `cm_id->device`): an iWARP device's connections do not go through the core yet (its
//! driver's connection ops expect the driver's own structure, and C clients get the face), so
//! listening, connecting and accepting are refused with `-EOPNOTSUPP`, a QP number names no QP,
//! and the rest do nothing: iw_cm and rdma_cm then fail the request cleanly, where an empty
//! entry would be a call through a null pointer.

use kernel::{
    bindings,
    ffi::{c_int, c_void},
    prelude::*,
};

/// `iw_create_listen`: refused (no argument is read; so are the others').
extern "C" fn listen(_cm_id: *mut bindings::iw_cm_id, _backlog: c_int) -> c_int {
    EOPNOTSUPP.to_errno()
}

/// `iw_connect`, `iw_accept`: refused.
extern "C" fn connect(
    _cm_id: *mut bindings::iw_cm_id,
    _param: *mut bindings::iw_cm_conn_param,
) -> c_int {
    EOPNOTSUPP.to_errno()
}

/// `iw_reject`: refused.
extern "C" fn reject(_cm_id: *mut bindings::iw_cm_id, _pdata: *const c_void, _len: u8) -> c_int {
    EOPNOTSUPP.to_errno()
}

/// `iw_destroy_listen`: nothing listens.
extern "C" fn destroy_listen(_cm_id: *mut bindings::iw_cm_id) -> c_int {
    0
}

/// `iw_get_qp`: no QP (iw_cm answers `-EINVAL`).
extern "C" fn get_qp(_device: *mut bindings::ib_device, _qpn: c_int) -> *mut bindings::ib_qp {
    core::ptr::null_mut()
}

/// `iw_add_ref`, `iw_rem_ref`: no QP is ever handed out.
extern "C" fn qp_ref(_qp: *mut bindings::ib_qp) {}

/// Fills the iWARP entries of an iWARP device's face.
pub(crate) fn fill(ops: &mut bindings::ib_device_ops) {
    ops.iw_create_listen = Some(listen);
    ops.iw_destroy_listen = Some(destroy_listen);
    ops.iw_connect = Some(connect);
    ops.iw_accept = Some(connect);
    ops.iw_reject = Some(reject);
    ops.iw_get_qp = Some(get_qp);
    ops.iw_add_ref = Some(qp_ref);
    ops.iw_rem_ref = Some(qp_ref);
}
