// SPDX-License-Identifier: GPL-2.0

//! The names C modules print and parse, with C's names, signatures and texts: events
//! (`ib_event_msg`) and completion statuses (`ib_wc_status_msg`) as C's `verbs.c` words them,
//! GID types (`ib_cache_gid_type_str`, `ib_cache_gid_parse_type_str`) as C's `cache.c` does
//! (what sysfs' `gid_attrs/types` shows and rdma_cm's configfs takes). The texts are part of
//! what C modules log and user space reads, so they are C's.

use kernel::{bindings, ffi::c_char, ffi::c_int, prelude::*};

/// The events' texts, by `enum ib_event_type` value (`None`: no text, as C's table's hole).
const EVENTS: [Option<&CStr>; 21] = [
    Some(c"CQ error"),
    Some(c"QP fatal error"),
    Some(c"QP request error"),
    Some(c"QP access error"),
    Some(c"communication established"),
    Some(c"send queue drained"),
    Some(c"path migration successful"),
    Some(c"path migration error"),
    Some(c"device fatal error"),
    Some(c"port active"),
    Some(c"port error"),
    Some(c"LID change"),
    Some(c"P_key change"),
    Some(c"SM change"),
    Some(c"SRQ error"),
    Some(c"SRQ limit reached"),
    Some(c"last WQE reached"),
    Some(c"client reregister"),
    Some(c"GID changed"),
    // IB_EVENT_WQ_FATAL has none in C.
    None,
    Some(c"device speed change"),
];

/// The completion statuses' texts, by `enum ib_wc_status` value.
const WC_STATUSES: [&CStr; 22] = [
    c"success",
    c"local length error",
    c"local QP operation error",
    c"local EE context operation error",
    c"local protection error",
    c"WR flushed",
    c"memory bind operation error",
    c"bad response error",
    c"local access error",
    c"remote invalid request error",
    c"remote access error",
    c"remote operation error",
    c"transport retry counter exceeded",
    c"RNR retry counter exceeded",
    c"local RDD violation error",
    c"remote invalid RD request",
    c"operation aborted",
    c"invalid EE context number",
    c"invalid EE context state",
    c"fatal error",
    c"response timeout error",
    c"general error",
];

/// The GID types' texts, by `enum ib_gid_type` value (IB and RoCE v1 share one, for user
/// space's sake, as in C).
const GID_TYPES: [&CStr; 3] = [c"IB/RoCE v1", c"IB/RoCE v1", c"RoCE v2"];

/// C's `ib_event_msg`: the text of `event`, or "unrecognized event".
#[no_mangle]
pub(crate) extern "C" fn ib_event_msg(event: bindings::ib_event_type) -> *const c_char {
    usize::try_from(event)
        .ok()
        .and_then(|i| EVENTS.get(i).copied().flatten())
        .unwrap_or(c"unrecognized event")
        .as_char_ptr()
}

/// C's `ib_wc_status_msg`: the text of `status`, or "unrecognized status".
#[no_mangle]
pub(crate) extern "C" fn ib_wc_status_msg(status: bindings::ib_wc_status) -> *const c_char {
    usize::try_from(status)
        .ok()
        .and_then(|i| WC_STATUSES.get(i).copied())
        .unwrap_or(c"unrecognized status")
        .as_char_ptr()
}

/// C's `ib_cache_gid_type_str`: the text of `gid_type`, or "Invalid GID type".
#[no_mangle]
pub(crate) extern "C" fn ib_cache_gid_type_str(gid_type: bindings::ib_gid_type) -> *const c_char {
    usize::try_from(gid_type)
        .ok()
        .and_then(|i| GID_TYPES.get(i).copied())
        .unwrap_or(c"Invalid GID type")
        .as_char_ptr()
}

/// The GID type `text` names (one trailing newline ignored, as sysfs writes end), the first in
/// C's order; `EINVAL` for an empty or unknown text.
fn parse_gid_type(text: &[u8]) -> Result<usize> {
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    if text.is_empty() {
        return Err(EINVAL);
    }
    GID_TYPES
        .iter()
        .position(|t| t.to_bytes() == text)
        .ok_or(EINVAL)
}

/// C's `ib_cache_gid_parse_type_str`: the GID type `buf` names, or `-EINVAL`.
///
/// # Safety
///
/// `buf` points to a NUL-terminated string.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_cache_gid_parse_type_str(buf: *const c_char) -> c_int {
    // SAFETY: `buf` is a NUL-terminated string (contract).
    let text = unsafe { CStr::from_char_ptr(buf) };
    match parse_gid_type(text.to_bytes()) {
        Ok(i) => c_int::try_from(i).unwrap_or(c_int::MAX),
        Err(e) => e.to_errno(),
    }
}
