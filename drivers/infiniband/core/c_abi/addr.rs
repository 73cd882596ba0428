// SPDX-License-Identifier: GPL-2.0

//! IP addresses to RDMA device addresses, as C modules ask for them (C's
//! `drivers/infiniband/core/addr.c`): `rdma_copy_src_l2_addr`, `rdma_translate_ip` (the local
//! net device of an address), `rdma_resolve_ip` and `rdma_addr_cancel`, with C's names and
//! signatures. rdma_cm calls them for IP-addressed connections; its AF_IB connections need
//! none but the cancel (docs/rdma-cm-c-facts.md).
//!
//! Not as C: `rdma_resolve_ip` (the route, the neighbour and the asynchronous answer) is not
//! done by this core yet. It refuses every request at once with `-EADDRNOTAVAIL` and never
//! calls the callback, which C's callers take as a failed resolution (rdma_cm's
//! `rdma_resolve_addr` returns the error); so no request is ever pending, and
//! `rdma_addr_cancel` finds none, as C's does for an address without one.

use core::ffi::c_void;
use kernel::{
    bindings,
    ffi::{c_int, c_ulong},
    prelude::*,
};

/// `MAX_ADDR_LEN`: the size of a net device's hardware and broadcast addresses.
const MAX_ADDR_LEN: usize = 32;

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
    // SAFETY: The caller's contract; a net device's `dev_addr` points to `MAX_ADDR_LEN` bytes
    // (C copies as many).
    unsafe {
        let a = &mut *dev_addr;
        a.dev_type = (*dev).type_;
        core::ptr::copy_nonoverlapping((*dev).dev_addr, a.src_dev_addr.as_mut_ptr(), MAX_ADDR_LEN);
        a.broadcast = (*dev).broadcast;
        a.bound_dev_if = (*dev).ifindex;
    }
}

/// The first net device of `net`, in the namespace's device list order, that has the local
/// address `addr` (an IPv4 or IPv6 socket address); `EADDRNOTAVAIL` for none, or for another
/// family.
///
/// # Safety
///
/// The caller is in an RCU read section; `net` is live; `addr` holds a socket address of its
/// family's size.
unsafe fn local_device_rcu(
    net: *mut bindings::net,
    addr: *const bindings::sockaddr,
) -> Result<*mut bindings::net_device> {
    // SAFETY: `addr` is readable (contract).
    let family = u32::from(unsafe { (*addr).sa_family });
    if family == bindings::AF_INET {
        // SAFETY: An AF_INET address is a `sockaddr_in` (contract); `net` is live.
        let dev = unsafe {
            let ip = (*addr.cast::<bindings::sockaddr_in>()).sin_addr.s_addr;
            bindings::__ip_dev_find(net, ip, false)
        };
        return if dev.is_null() {
            Err(EADDRNOTAVAIL)
        } else {
            Ok(dev)
        };
    }
    if family == bindings::AF_INET6 {
        // SAFETY: An AF_INET6 address is a `sockaddr_in6` (contract).
        let ip = unsafe { &raw const (*addr.cast::<bindings::sockaddr_in6>()).sin6_addr };
        // SAFETY: `net` is live and its device list is walked under RCU (contract), reading
        // each link once, as `for_each_netdev_rcu`; every listed device is live in the
        // section.
        unsafe {
            let head = &raw mut (*net).dev_base_head;
            let mut link = core::ptr::read_volatile(&raw const (*head).next);
            while link != head {
                let dev = kernel::container_of!(link, bindings::net_device, dev_list);
                if bindings::ipv6_chk_addr(net, ip, dev, 1) != 0 {
                    return Ok(dev);
                }
                link = core::ptr::read_volatile(&raw const (*link).next);
            }
        }
    }
    Err(EADDRNOTAVAIL)
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
    let (net, bound) = unsafe { ((*dev_addr).net, (*dev_addr).bound_dev_if) };
    if bound != 0 {
        // SAFETY: `net` is live (contract); the device found is held until `dev_put`.
        unsafe {
            let dev = bindings::dev_get_by_index(net, bound);
            if dev.is_null() {
                return ENODEV.to_errno();
            }
            rdma_copy_src_l2_addr(dev_addr, dev);
            bindings::dev_put(dev);
        }
        return 0;
    }
    // SAFETY: The read section covers the walk and the copy from the device found.
    unsafe {
        bindings::rcu_read_lock();
        let found = local_device_rcu(net, addr);
        if let Ok(dev) = found {
            rdma_copy_src_l2_addr(dev_addr, dev);
        }
        bindings::rcu_read_unlock();
        match found {
            Ok(_) => 0,
            Err(e) => e.to_errno(),
        }
    }
}

/// C's `rdma_resolve_ip` callback.
type ResolveCallback = Option<
    unsafe extern "C" fn(
        status: c_int,
        src_addr: *mut bindings::sockaddr,
        addr: *mut bindings::rdma_dev_addr,
        context: *mut c_void,
    ),
>;

/// C's `rdma_resolve_ip`: not done by this core yet (see the module's note): `-EADDRNOTAVAIL`
/// at once, the callback never called, `addr` untouched.
#[no_mangle]
pub(crate) extern "C" fn rdma_resolve_ip(
    _src_addr: *mut bindings::sockaddr,
    _dst_addr: *const bindings::sockaddr,
    _addr: *mut bindings::rdma_dev_addr,
    _timeout_ms: c_ulong,
    _callback: ResolveCallback,
    _resolve_by_gid_attr: bool,
    _context: *mut c_void,
) -> c_int {
    EADDRNOTAVAIL.to_errno()
}

/// C's `rdma_addr_cancel`: cancels the pending resolution for `addr`; none is ever pending
/// here (`rdma_resolve_ip` queues nothing), so it returns at once, as C's does for an address
/// without one.
#[no_mangle]
pub(crate) extern "C" fn rdma_addr_cancel(_addr: *mut bindings::rdma_dev_addr) {}
