// SPDX-License-Identifier: GPL-2.0

//! IP addresses to RDMA device addresses, as C modules ask for them (C's
//! `drivers/infiniband/core/addr.c`): `rdma_copy_src_l2_addr`, `rdma_translate_ip` (the local
//! net device of an address), `rdma_resolve_ip` (a destination's route, source device and next
//! hop, answered through a callback) and `rdma_addr_cancel`, with C's names and signatures,
//! over [`crate::addr`]. rdma_cm calls them for IP-addressed connections (over IPoIB here);
//! its AF_IB connections need none but the cancel (docs/rdma-cm-c-facts.md).

use crate::addr::{self, requests};
use core::ffi::c_void;
use kernel::{
    bindings,
    ffi::{c_int, c_ulong},
};

/// C's `rdma_copy_src_l2_addr`: `dev_addr` takes the type, hardware address, broadcast
/// address and index of the net device `dev`.
///
/// # Safety
///
/// `dev_addr` is writable; `dev` is a live net device (the caller keeps it so for the call).
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_copy_src_l2_addr(
    dev_addr: *mut bindings::rdma_dev_addr,
    dev: *const bindings::net_device,
) {
    // SAFETY: The caller's contract.
    unsafe { addr::copy_src_l2_addr(dev_addr, dev) }
}

/// C's `rdma_translate_ip`: `dev_addr` takes the layer-2 address of the net device it is
/// bound to (`-ENODEV` if that is gone), or else of the first net device of its namespace
/// that has the local address `addr` (`-EADDRNOTAVAIL` for none, or an address that is not
/// IPv4 or IPv6). Does not sleep.
///
/// # Safety
///
/// `dev_addr` is writable, its `net` live; `addr` holds a socket address of its family's size.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_translate_ip(
    addr: *const bindings::sockaddr,
    dev_addr: *mut bindings::rdma_dev_addr,
) -> c_int {
    // SAFETY: The caller's contract.
    match unsafe { addr::translate_ip(addr, dev_addr) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// C's `rdma_resolve_ip`: 0 when the resolution is under way (the callback then reports it,
/// from the `ib_addr` workqueue), else the errno, without a callback.
///
/// # Safety
///
/// As [`requests::resolve_ip`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_resolve_ip(
    src_addr: *mut bindings::sockaddr,
    dst_addr: *const bindings::sockaddr,
    addr: *mut bindings::rdma_dev_addr,
    timeout_ms: c_ulong,
    callback: Option<requests::Callback>,
    resolve_by_gid_attr: bool,
    context: *mut c_void,
) -> c_int {
    let timeout = u32::try_from(timeout_ms).unwrap_or(u32::MAX);
    // SAFETY: The caller's contract.
    let r = unsafe {
        requests::resolve_ip(
            src_addr,
            dst_addr,
            addr,
            timeout,
            callback,
            resolve_by_gid_attr,
            context,
        )
    };
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// C's `rdma_addr_cancel`: cancels the resolution under way for `addr`, if any; afterwards its
/// callback has run or never will. Sleeps.
#[no_mangle]
pub(crate) extern "C" fn rdma_addr_cancel(addr: *mut bindings::rdma_dev_addr) {
    requests::cancel(addr);
}
