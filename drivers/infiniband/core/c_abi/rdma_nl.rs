// SPDX-License-Identifier: GPL-2.0

//! RDMA netlink for C modules: `rdma_nl_register`, `rdma_nl_unregister`, `ibnl_put_msg`,
//! `ibnl_put_attr`, `rdma_nl_unicast`, `rdma_nl_unicast_wait` and `rdma_nl_multicast`, with
//! C's names and signatures (C's `drivers/infiniband/core/netlink.c`): what iw_cm's iWARP port
//! mapper client uses. A C table is served by the core's dispatcher (`netlink.rs`) as C serves
//! it; messages C builds go out through the core's kernel socket of their namespace.

use crate::{
    c_abi::object::alloc_flags,
    netlink::{self, uapi},
};
use core::ptr::NonNull;
use kernel::{
    alloc::Flags,
    bindings,
    ffi::{c_int, c_uint, c_void},
    net::{
        namespace::Net,
        netlink_protocol::{c_buffer, Message},
    },
    prelude::*,
};

/// C's `rdma_nl_register`: serves client `index`'s messages with `cb_table` (one entry per op
/// of the client) until [`rdma_nl_unregister`]. A client that does not exist or already has a
/// table is refused with a warning, as C's `WARN_ON`.
///
/// # Safety
///
/// `cb_table` has an entry per op of the client, valid with its callbacks until
/// [`rdma_nl_unregister`] returns.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_nl_register(
    index: c_uint,
    cb_table: *const bindings::rdma_nl_cbs,
) {
    let registered = match NonNull::new(cb_table.cast_mut()) {
        // SAFETY: The caller's contract.
        Some(t) => unsafe { netlink::register_c(index, t) },
        None => false,
    };
    if !registered {
        pr_warn!("rdma_nl_register: client {index} cannot be registered\n");
    }
}

/// C's `rdma_nl_unregister`: client `index` is served no more; once this returns no callback
/// of its table runs.
#[no_mangle]
pub(crate) extern "C" fn rdma_nl_unregister(index: c_uint) {
    netlink::unregister(index);
}

/// C's `ibnl_put_msg`: starts a message of `client`'s `op` in `skb` (port 0, `seq`, a
/// `len`-byte payload, `flags`), sets `*nlh` to it and returns its payload; null (and `*nlh`
/// null) when it does not fit.
///
/// # Safety
///
/// `skb` is a netlink buffer the caller owns; `nlh` is writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibnl_put_msg(
    skb: *mut bindings::sk_buff,
    nlh: *mut *mut bindings::nlmsghdr,
    seq: c_int,
    len: c_int,
    client: c_int,
    op: c_int,
    flags: c_int,
) -> *mut c_void {
    let msg_type = uapi::msg_type(client as u32, op as u32);
    // SAFETY: The caller's contract; C passes these as `nlmsg_put` takes them.
    let h = unsafe { c_buffer::put_msg(skb, seq as u32, msg_type, len, flags as u16) };
    // SAFETY: `nlh` is writable (contract).
    unsafe { *nlh = h.map_or(core::ptr::null_mut(), NonNull::as_ptr) };
    h.map_or(core::ptr::null_mut(), |h| c_buffer::payload(h).cast())
}

/// C's `ibnl_put_attr`: appends attribute `type_` with `len` bytes at `data` to the message
/// `nlh` of `skb`; 0, or `-EMSGSIZE` with the whole message removed when it does not fit.
///
/// # Safety
///
/// `nlh` is the last message of `skb`, a netlink buffer the caller owns; `data` is readable
/// for `len` bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn ibnl_put_attr(
    skb: *mut bindings::sk_buff,
    nlh: *mut bindings::nlmsghdr,
    len: c_int,
    data: *mut c_void,
    type_: c_int,
) -> c_int {
    let Ok(n) = usize::try_from(len) else {
        return EINVAL.to_errno();
    };
    let bytes = if n == 0 {
        &[][..]
    } else {
        // SAFETY: `data` is readable for `len` bytes (contract).
        unsafe { core::slice::from_raw_parts(data.cast::<u8>(), n) }
    };
    // SAFETY: The caller's contract.
    match unsafe { c_buffer::put_attr_or_cancel(skb, nlh, type_ as u16, bytes) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Where a buffer C built goes.
enum Dest {
    /// Port `pid`, without blocking.
    Unicast(u32),
    /// Port `pid`, waiting for room in its queue.
    UnicastWait(u32),
    /// Multicast group `group`, allocating with the flags.
    Multicast(u32, Flags),
}

/// Sends C's buffer `skb` to `dest` in `net` through the core's socket there; 0 or the errno.
/// The buffer is consumed in every case.
///
/// # Safety
///
/// `net` is alive; `skb` is a netlink buffer the caller owns and gives up.
unsafe fn send(net: *mut bindings::net, skb: *mut bindings::sk_buff, dest: Dest) -> c_int {
    let Some(skb) = NonNull::new(skb) else {
        return EINVAL.to_errno();
    };
    // SAFETY: The buffer is the caller's to give (contract).
    let msg = unsafe { Message::from_raw(skb) };
    // SAFETY: `net` is alive (contract); the caller is a C module that depends on the core.
    let Some(sk) = (unsafe { netlink::socket_of(Net::from_raw(net)) }) else {
        return ENODEV.to_errno();
    };
    let sent = match dest {
        Dest::Unicast(pid) => sk.unicast(msg, pid),
        Dest::UnicastWait(pid) => sk.unicast_wait(msg, pid),
        Dest::Multicast(group, flags) => sk.multicast(msg, group, flags),
    };
    match sent {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// C's `rdma_nl_unicast`: sends `skb` to port `pid` of `net` without blocking; 0 or the errno
/// (`-ECONNREFUSED` for a port nobody holds). The buffer is consumed in every case.
///
/// # Safety
///
/// `net` is alive; `skb` is a netlink buffer the caller owns and gives up.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_nl_unicast(
    net: *mut bindings::net,
    skb: *mut bindings::sk_buff,
    pid: u32,
) -> c_int {
    // SAFETY: The caller's contract.
    unsafe { send(net, skb, Dest::Unicast(pid)) }
}

/// C's `rdma_nl_unicast_wait`: as [`rdma_nl_unicast`], waiting for room in the receiver's
/// queue up to the socket's send timeout.
///
/// # Safety
///
/// As for [`rdma_nl_unicast`]; the caller may sleep.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_nl_unicast_wait(
    net: *mut bindings::net,
    skb: *mut bindings::sk_buff,
    pid: u32,
) -> c_int {
    // SAFETY: The caller's contract.
    unsafe { send(net, skb, Dest::UnicastWait(pid)) }
}

/// C's `rdma_nl_multicast`: sends `skb` to multicast `group` of `net`; 0, or `-ESRCH` when
/// nobody listens. The buffer is consumed in every case.
///
/// # Safety
///
/// `net` is alive; `skb` is a netlink buffer the caller owns and gives up; `flags` says
/// whether the caller may sleep.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_nl_multicast(
    net: *mut bindings::net,
    skb: *mut bindings::sk_buff,
    group: c_uint,
    flags: bindings::gfp_t,
) -> c_int {
    // SAFETY: The caller's contract.
    unsafe { send(net, skb, Dest::Multicast(group, alloc_flags(flags))) }
}
