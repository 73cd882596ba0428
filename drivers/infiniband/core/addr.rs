// SPDX-License-Identifier: GPL-2.0

//! IP addresses to RDMA device addresses (C's `addr.c`): the local net device of an address,
//! and the resolution of a destination (the route, the source address and device, the next
//! hop's link-layer address) into a `struct rdma_dev_addr`, the structure rdma_cm keeps per
//! connection. [`requests`] runs the asynchronous form C's `rdma_resolve_ip` offers.
//!
//! Not as C: a destination behind a gateway on an InfiniBand network, whose link-layer address
//! C asks user space for (ibacm, through the `RDMA_NL_LS` netlink group), is refused with
//! `-EADDRNOTAVAIL`, which is C's answer when no ibacm listens.

pub(crate) mod l2_eth;
pub(crate) mod requests;

use kernel::{
    bindings,
    net::{
        namespace::Net,
        route::{self, NetDevice, Route},
    },
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        rcu,
    },
};

/// The first net device of `net`, in the namespace's device list order, that has the local
/// address `addr` (an IPv4 or IPv6 socket address) (C's `rdma_find_ndev_for_src_ip_rcu`);
/// `EADDRNOTAVAIL` for none, or for another family.
///
/// # Safety
///
/// The caller is in an RCU read section, the device found used only inside it; `net` is live;
/// `addr` holds a socket address of its family's size.
pub(crate) unsafe fn local_device_rcu(
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

/// `dev_addr` takes the type, hardware address, broadcast address and index of the net device
/// `dev` (C's `rdma_copy_src_l2_addr`).
///
/// # Safety
///
/// `dev_addr` is writable; `dev` is a live net device for the call.
pub(crate) unsafe fn copy_src_l2_addr(
    dev_addr: *mut bindings::rdma_dev_addr,
    dev: *const bindings::net_device,
) {
    // SAFETY: The caller's contract; a net device's `dev_addr` points to `MAX_ADDR_LEN` bytes
    // (C copies as many).
    unsafe {
        let a = &mut *dev_addr;
        a.dev_type = (*dev).type_;
        core::ptr::copy_nonoverlapping(
            (*dev).dev_addr,
            a.src_dev_addr.as_mut_ptr(),
            route::MAX_ADDR_LEN,
        );
        a.broadcast = (*dev).broadcast;
        a.bound_dev_if = (*dev).ifindex;
    }
}

/// `dev_addr` takes the layer-2 address of the net device it is bound to (`ENODEV` if that is
/// gone), or else of the first net device of its namespace that has the local address `addr`
/// (`EADDRNOTAVAIL` for none, or an address that is not IPv4 or IPv6) (C's
/// `rdma_translate_ip`). Does not sleep.
///
/// # Safety
///
/// `dev_addr` is writable, its `net` live; `addr` holds a socket address of its family's size.
pub(crate) unsafe fn translate_ip(
    addr: *const bindings::sockaddr,
    dev_addr: *mut bindings::rdma_dev_addr,
) -> Result {
    // SAFETY: The caller's contract.
    let (net, bound) = unsafe { ((*dev_addr).net, (*dev_addr).bound_dev_if) };
    if bound != 0 {
        // SAFETY: `net` is live (contract); the device found is held until `dev_put`.
        unsafe {
            let dev = bindings::dev_get_by_index(net, bound);
            if dev.is_null() {
                return Err(ENODEV);
            }
            copy_src_l2_addr(dev_addr, dev);
            bindings::dev_put(dev);
        }
        return Ok(());
    }
    let guard = rcu::read_lock();
    // SAFETY: The read section covers the walk and the copy from the device found; the
    // caller's contract for the rest.
    let found = unsafe { local_device_rcu(net, addr) };
    if let Ok(dev) = found {
        // SAFETY: `dev` is live in the read section.
        unsafe { copy_src_l2_addr(dev_addr, dev) };
    }
    drop(guard);
    found.map(|_| ())
}

/// A source or destination of a resolution: a socket address of any family (`struct
/// sockaddr_storage`).
#[repr(transparent)]
pub(crate) struct SockAddr(bindings::__kernel_sockaddr_storage);

// SAFETY: Plain bytes (the pointer in its C union only aligns it).
unsafe impl Send for SockAddr {}

// SAFETY: As for `Send`.
unsafe impl Sync for SockAddr {}

impl SockAddr {
    /// All zero: family 0.
    pub(crate) fn zeroed() -> Self {
        // SAFETY: Every bit pattern is a valid storage.
        Self(unsafe { core::mem::zeroed() })
    }
}

/// The family of `a`.
pub(crate) fn family(a: &SockAddr) -> u32 {
    // SAFETY: Every storage starts with its family; all bit patterns are valid.
    u32::from(unsafe { (*core::ptr::from_ref(a).cast::<bindings::sockaddr>()).sa_family })
}

/// `a` as a `struct sockaddr` pointer.
pub(crate) fn as_sockaddr(a: &SockAddr) -> *const bindings::sockaddr {
    core::ptr::from_ref(a).cast()
}

/// An IPv4 storage's address (network order).
fn in4(a: &SockAddr) -> &bindings::sockaddr_in {
    // SAFETY: A storage is larger than, and aligned for, a `sockaddr_in`; every bit pattern is
    // one.
    unsafe { &*core::ptr::from_ref(a).cast::<bindings::sockaddr_in>() }
}

fn in4_mut(a: &mut SockAddr) -> &mut bindings::sockaddr_in {
    // SAFETY: As `in4`.
    unsafe { &mut *core::ptr::from_mut(a).cast::<bindings::sockaddr_in>() }
}

fn in6(a: &SockAddr) -> &bindings::sockaddr_in6 {
    // SAFETY: As `in4`, for a `sockaddr_in6`.
    unsafe { &*core::ptr::from_ref(a).cast::<bindings::sockaddr_in6>() }
}

fn in6_mut(a: &mut SockAddr) -> &mut bindings::sockaddr_in6 {
    // SAFETY: As `in4`, for a `sockaddr_in6`.
    unsafe { &mut *core::ptr::from_mut(a).cast::<bindings::sockaddr_in6>() }
}

/// Whether a missing namespace was reported already (C rate-limits the warning).
static WARNED_NO_NET: Atomic<u32> = Atomic::new(0);

/// The route from `src` to `dst` in `net` out of interface `oif`, by `src`'s family (IPv4, or
/// else IPv6 as C takes it); the source address the route uses replaces an IPv4 `src`, and a
/// wildcard IPv6 one (C's `addr4_resolve` / `addr6_resolve`).
fn route(net: &Net, src: &mut SockAddr, dst: &SockAddr, oif: i32) -> Result<Route> {
    if family(src) == bindings::AF_INET {
        let (r, saddr) =
            Route::output_v4(net, in4(src).sin_addr.s_addr, in4(dst).sin_addr.s_addr, oif)?;
        in4_mut(src).sin_addr.s_addr = saddr;
        Ok(r)
    } else {
        let (r, saddr) = Route::output_v6(net, &in6(src).sin6_addr, &in6(dst).sin6_addr, oif)?;
        // SAFETY: Every bit pattern of an `in6_addr` is a valid `[u8; 16]`.
        let any = unsafe { in6(src).sin6_addr.in6_u.u6_addr8 } == [0u8; 16];
        if any {
            in6_mut(src).sin6_addr = saddr;
        }
        Ok(r)
    }
}

/// The source device and network type (C's `rdma_set_src_addr_rcu`): for a local destination
/// the device that has that address (`ENODEV` for none) through [`translate_ip`], else the
/// route's device; the network is IPv4/IPv6 behind a gateway on a device that is not
/// InfiniBand (RoCE v2), else IB.
///
/// # Safety
///
/// `a` is writable with a live `net`; `dst` is a socket address of its family's size.
unsafe fn set_src_addr_rcu(
    a: *mut bindings::rdma_dev_addr,
    dst: &SockAddr,
    r: &Route,
    guard: &rcu::Guard,
) -> Result {
    let mut ndev: &NetDevice = r.device_rcu(guard);
    if r.is_local() {
        // SAFETY: In the read section; the device's namespace is live with it.
        let found = unsafe { local_device_rcu(ndev.net().as_raw(), as_sockaddr(dst)) };
        // SAFETY: The device found is live in the read section.
        ndev = unsafe { NetDevice::from_raw(found.map_err(|_| ENODEV)?) };
        // SAFETY: The caller's contract.
        unsafe { translate_ip(as_sockaddr(dst), a)? };
    } else {
        // SAFETY: `a` is writable; the route's device is live in the read section.
        unsafe { copy_src_l2_addr(a, ndev.as_raw()) };
    }
    let network = if r.has_gateway() && u32::from(ndev.hw_type()) != bindings::ARPHRD_INFINIBAND {
        if family(dst) == bindings::AF_INET {
            bindings::rdma_network_type_RDMA_NETWORK_IPV4
        } else {
            bindings::rdma_network_type_RDMA_NETWORK_IPV6
        }
    } else {
        bindings::rdma_network_type_RDMA_NETWORK_IB
    };
    // SAFETY: `a` is writable (contract).
    unsafe { (*a).network = network };
    Ok(())
}

/// The next hop's link-layer address into `dst_dev_addr` (C's `addr_resolve_neigh`): a local
/// destination is the source device itself; `ENODATA` while the neighbour is being found.
///
/// # Safety
///
/// `a` is writable.
unsafe fn resolve_neighbour(a: *mut bindings::rdma_dev_addr, dst: &SockAddr, r: &Route) -> Result {
    // SAFETY: `a` is writable (contract).
    let a = unsafe { &mut *a };
    if r.is_local() {
        a.dst_dev_addr = a.src_dev_addr;
        return Ok(());
    }
    if r.has_gateway() && a.network == bindings::rdma_network_type_RDMA_NETWORK_IB {
        // C asks ibacm over netlink here (`ib_nl_fetch_ha`); see the module's note.
        return Err(EADDRNOTAVAIL);
    }
    let daddr: &[u8] = if family(dst) == bindings::AF_INET {
        // SAFETY: A `u32`'s bytes, in place.
        unsafe {
            core::slice::from_raw_parts(
                (&raw const in4(dst).sin_addr.s_addr).cast::<u8>(),
                core::mem::size_of::<u32>(),
            )
        }
    } else {
        // SAFETY: Every bit pattern of an `in6_addr` is a valid `[u8; 16]`.
        unsafe { &in6(dst).sin6_addr.in6_u.u6_addr8 }
    };
    r.neighbour_address(daddr, &mut a.dst_dev_addr)
}

/// Resolves `dst` from `src` into `*a` (C's `addr_resolve`): the route (its source address
/// written back into `src`), the source device's addresses and the network type, the hop
/// limit, and with `neighbour` the next hop's link-layer address (`ENODATA` while it is being
/// found). With `by_gid_attr` the namespace and interface come from `a`'s source GID entry
/// (its net device), and are reset to the initial namespace afterwards, as C does. Sleeps.
///
/// # Safety
///
/// `a` is writable; its `net`, if set, is live; its `sgid_attr`, if set, is a held GID entry.
pub(crate) unsafe fn resolve(
    src: &mut SockAddr,
    dst: &SockAddr,
    a: *mut bindings::rdma_dev_addr,
    neighbour: bool,
    by_gid_attr: bool,
) -> Result {
    // SAFETY: `a` is readable (contract).
    if unsafe { (*a).net }.is_null() {
        if WARNED_NO_NET.xchg(1, Relaxed) == 0 {
            pr_warn!("addr_resolve: missing namespace\n");
        }
        return Err(EINVAL);
    }
    let guard = rcu::read_lock();
    // SAFETY: `a` is writable, its GID entry held (contract); in the read section.
    let ret = unsafe { resolve_rcu(src, dst, a, by_gid_attr, &guard) };
    drop(guard);
    let ret = ret.and_then(|r| {
        if neighbour {
            // SAFETY: `a` is writable (contract).
            unsafe { resolve_neighbour(a, dst, &r) }
        } else {
            Ok(())
        }
    });
    if by_gid_attr {
        // SAFETY: `a` is writable (contract); the initial namespace lives forever.
        unsafe {
            (*a).net = Net::init_net().as_raw();
            (*a).bound_dev_if = 0;
        }
    }
    ret
}

/// The part of [`resolve`] in the read section: the namespace from the GID entry, the route,
/// the hop limit, the source addresses.
///
/// # Safety
///
/// As [`resolve`], with `a`'s `net` set.
unsafe fn resolve_rcu(
    src: &mut SockAddr,
    dst: &SockAddr,
    a: *mut bindings::rdma_dev_addr,
    by_gid_attr: bool,
    guard: &rcu::Guard,
) -> Result<Route> {
    if by_gid_attr {
        // SAFETY: `a` is readable (contract).
        let attr = unsafe { (*a).sgid_attr };
        if attr.is_null() {
            pr_warn!("addr_resolve: missing gid_attr\n");
            return Err(EINVAL);
        }
        // SAFETY: `attr` is held (contract): its net device, if any, is live in the read
        // section (C's `rdma_read_gid_attr_ndev_rcu`; none on InfiniBand: `ENODEV`).
        let ndev = unsafe { (*attr).ndev };
        if ndev.is_null() {
            return Err(ENODEV);
        }
        // SAFETY: The GID entry's device is live in the read section; its namespace and index
        // are stable there (a namespace change synchronises RCU first); `a` is writable.
        unsafe {
            let dev = NetDevice::from_raw(ndev);
            (*a).net = dev.net().as_raw();
            (*a).bound_dev_if = (*ndev).ifindex;
        }
    }
    // SAFETY: `a`'s namespace is set and live (contract, or just taken from a live device).
    let (net, oif) = unsafe { (Net::from_raw((*a).net), (*a).bound_dev_if) };
    let r = route(net, src, dst, oif)?;
    // SAFETY: `a` is writable (contract).
    unsafe { (*a).hoplimit = r.hop_limit() };
    // SAFETY: As this function's contract; `dst` is a storage, large enough for any family.
    unsafe { set_src_addr_rcu(a, dst, &r, guard)? };
    Ok(r)
}
