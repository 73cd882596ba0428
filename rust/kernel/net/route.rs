// SPDX-License-Identifier: GPL-2.0

//! IP routes and neighbours: which net device reaches a destination, from which source
//! address, through a gateway or not, and the link-layer address of the next hop.
//!
//! C headers: [`include/net/route.h`](srctree/include/net/route.h),
//! [`include/net/ip6_route.h`](srctree/include/net/ip6_route.h),
//! [`include/net/dst.h`](srctree/include/net/dst.h),
//! [`include/net/neighbour.h`](srctree/include/net/neighbour.h)

use crate::{bindings, error::from_err_ptr, net::namespace::Net, prelude::*, sync::rcu};
use core::ptr::NonNull;

/// `MAX_ADDR_LEN`: the size of a net device's hardware address buffers.
pub const MAX_ADDR_LEN: usize = 32;

/// `RTF_LOCAL` (`include/uapi/linux/ipv6_route.h`): an IPv6 route to a local address.
const RTF_LOCAL: u32 = 0x8000_0000;

/// A route the kernel chose for a destination: a held `dst_entry`, released when dropped.
///
/// # Invariants
///
/// `dst` is a `dst_entry` this value holds a reference on; for [`Family::V4`] it is the `dst`
/// of a `struct rtable`, for [`Family::V6`] of a `struct rt6_info`.
pub struct Route {
    dst: NonNull<bindings::dst_entry>,
    family: Family,
}

// SAFETY: A held `dst_entry` may be used and released from any task.
unsafe impl Send for Route {}

// SAFETY: The accessors only read fields that are fixed once the route is returned (its type,
// flags, metrics) or read the device under RCU, as C does.
unsafe impl Sync for Route {}

/// The address family of a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// IPv4 (`struct rtable`).
    V4,
    /// IPv6 (`struct rt6_info`).
    V6,
}

impl Route {
    /// The IPv4 output route from `src` (network order; 0 lets the kernel choose) to `dst`,
    /// out of interface `oif` (0: any), in `net` (C's `ip_route_output_key`). Returns the route
    /// and the source address it uses; the lookup's errno (`ENETUNREACH`, `EHOSTUNREACH`, ...)
    /// otherwise.
    pub fn output_v4(net: &Net, src: u32, dst: u32, oif: i32) -> Result<(Self, u32)> {
        let mut fl4 = bindings::flowi4::default();
        fl4.daddr = dst;
        fl4.saddr = src;
        fl4.__fl_common.flowic_oif = oif;
        // SAFETY: `net` is live (`Net`'s invariant), `fl4` a valid flow key; a route returned
        // is held for the caller.
        let rt = from_err_ptr(unsafe {
            bindings::ip_route_output_flow(net.as_raw(), &mut fl4, core::ptr::null())
        })?;
        let dst = NonNull::new(rt.cast::<bindings::dst_entry>()).ok_or(EHOSTUNREACH)?;
        // INVARIANT: a held route, the `dst` at the start of its `rtable`.
        Ok((
            Self {
                dst,
                family: Family::V4,
            },
            fl4.saddr,
        ))
    }

    /// The IPv6 output route from `src` (all zero lets the kernel choose) to `dst`, out of
    /// interface `oif` (0: any), in `net` (C's `ip6_dst_lookup_flow`). Returns the route and the
    /// source address it uses; the lookup's errno otherwise.
    pub fn output_v6(
        net: &Net,
        src: &bindings::in6_addr,
        dst: &bindings::in6_addr,
        oif: i32,
    ) -> Result<(Self, bindings::in6_addr)> {
        let mut fl6 = bindings::flowi6::default();
        fl6.daddr = *dst;
        fl6.saddr = *src;
        fl6.__fl_common.flowic_oif = oif;
        // SAFETY: `net` is live, `fl6` a valid flow key; no socket, no final destination.
        let d = from_err_ptr(unsafe {
            bindings::ip6_dst_lookup_flow(
                net.as_raw(),
                core::ptr::null(),
                &mut fl6,
                core::ptr::null(),
            )
        })?;
        let dst = NonNull::new(d).ok_or(EHOSTUNREACH)?;
        // INVARIANT: a held IPv6 route.
        Ok((
            Self {
                dst,
                family: Family::V6,
            },
            fl6.saddr,
        ))
    }

    /// The route's family.
    pub fn family(&self) -> Family {
        self.family
    }

    fn dst(&self) -> *mut bindings::dst_entry {
        self.dst.as_ptr()
    }

    /// The IPv6 route's flags (`rt6i_flags`).
    fn rt6_flags(&self) -> u32 {
        // SAFETY: For `V6` the `dst` is the first field of a live `rt6_info` (invariant).
        unsafe { (*self.dst().cast::<bindings::rt6_info>()).rt6i_flags }
    }

    /// Whether the destination is an address of this host (C's `RTN_LOCAL` / `RTF_LOCAL`).
    pub fn is_local(&self) -> bool {
        match self.family {
            Family::V4 => {
                // SAFETY: For `V4` the `dst` is the first field of a live `rtable` (invariant).
                let t = unsafe { (*self.dst().cast::<bindings::rtable>()).rt_type };
                u32::from(t) == bindings::RTN_LOCAL
            }
            Family::V6 => self.rt6_flags() & RTF_LOCAL != 0,
        }
    }

    /// Whether the next hop is a gateway (C's `rt_uses_gateway` / `RTF_GATEWAY`).
    pub fn has_gateway(&self) -> bool {
        match self.family {
            Family::V4 => {
                // SAFETY: As in `is_local`.
                unsafe { (*self.dst().cast::<bindings::rtable>()).rt_uses_gateway != 0 }
            }
            Family::V6 => self.rt6_flags() & bindings::RTF_GATEWAY != 0,
        }
    }

    /// The hop limit (TTL) of packets on this route (C's `ip4_dst_hoplimit` /
    /// `ip6_dst_hoplimit`).
    pub fn hop_limit(&self) -> i32 {
        match self.family {
            // SAFETY: A held IPv4 route.
            Family::V4 => unsafe { bindings::ip4_dst_hoplimit(self.dst()) },
            // SAFETY: A held IPv6 route.
            Family::V6 => unsafe { bindings::ip6_dst_hoplimit(self.dst()) },
        }
    }

    /// The net device the route goes out of, valid for the read section `_rcu` (C reads
    /// `dst->dev` with `READ_ONCE`; a device going away is replaced by the blackhole device and
    /// freed after a grace period).
    pub fn device_rcu<'a>(&self, _rcu: &'a rcu::Guard) -> &'a NetDevice {
        // SAFETY: The route is held; its device pointer is read once and, by the above, points
        // to a device that lives through the read section.
        unsafe {
            let dev = core::ptr::addr_of!((*self.dst()).__bindgen_anon_1.dev).read_volatile();
            &*dev.cast::<NetDevice>()
        }
    }

    /// The link-layer address of the neighbour `daddr` (4 or 16 bytes, network order: the
    /// destination's IP address) on this route, into `ha` (C's `dst_fetch_ha`). `ENODATA` while
    /// it is not known; the kernel has then been asked to find it (a solicitation is sent, and
    /// a netevent `NEIGH_UPDATE` announces the answer).
    pub fn neighbour_address(&self, daddr: &[u8], ha: &mut [u8; MAX_ADDR_LEN]) -> Result {
        // SAFETY: The route is held; `daddr` holds the family's address.
        let n = unsafe { bindings::dst_neigh_lookup(self.dst(), daddr.as_ptr().cast()) };
        if n.is_null() {
            return Err(ENODATA);
        }
        // SAFETY: `n` is a neighbour the lookup holds a reference on, released below; its state
        // is read under its lock, and its address snapshot taken under it too, as C does. The
        // device's address length is at most `MAX_ADDR_LEN`, the size of `ha`.
        let ret = unsafe {
            bindings::rdma_rs_neigh_read_lock_bh(n);
            let valid = (*n).nud_state & crate::net::netevent::NUD_VALID != 0;
            if valid {
                let guard = rcu::read_lock();
                let dev = self.device_rcu(&guard);
                bindings::neigh_ha_snapshot(ha.as_mut_ptr().cast(), n, dev.as_raw());
                drop(guard);
            }
            bindings::rdma_rs_neigh_read_unlock_bh(n);
            if !valid {
                bindings::neigh_event_send(n, core::ptr::null_mut());
            }
            bindings::neigh_release(n);
            if valid {
                Ok(())
            } else {
                Err(ENODATA)
            }
        };
        ret
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        // SAFETY: The reference this value holds (invariant), released once.
        unsafe { bindings::dst_release(self.dst()) };
    }
}

/// A net device (`struct net_device`), seen through a reference whose provider keeps it alive.
#[repr(transparent)]
pub struct NetDevice(crate::types::Opaque<bindings::net_device>);

impl NetDevice {
    /// Wraps a raw device pointer.
    ///
    /// # Safety
    ///
    /// `ptr` points to a `struct net_device` that stays alive for `'a`.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a NetDevice {
        // SAFETY: Transparent wrapper; the caller guarantees the lifetime.
        unsafe { &*ptr.cast::<NetDevice>() }
    }

    /// The raw pointer.
    pub fn as_raw(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// The device's hardware type (`ARPHRD_*`).
    pub fn hw_type(&self) -> u16 {
        // SAFETY: The device is alive (type invariant of the reference).
        unsafe { (*self.as_raw()).type_ }
    }

    /// The namespace the device is in (C's `dev_net`), valid while the device is.
    pub fn net(&self) -> &Net {
        // SAFETY: A live device's namespace outlives it.
        unsafe { Net::from_raw(bindings::rdma_rs_dev_net(self.as_raw())) }
    }

    /// The device's name (`IFNAMSIZ` bytes at most, without the NUL), as read now: a rename
    /// under RTNL may change it afterwards.
    pub fn name(&self) -> &[u8] {
        // SAFETY: The device is alive; its name buffer is always NUL-terminated.
        let name = unsafe { &(*self.as_raw()).name };
        // SAFETY: `c_char` and `u8` have one layout.
        let bytes: &[u8] = unsafe { &*(core::ptr::from_ref(name) as *const [u8; 16]) };
        let n = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        &bytes[..n]
    }

    /// The device's interface index (`ifindex`).
    pub fn ifindex(&self) -> i32 {
        // SAFETY: The device is alive; the index does not change while it is registered.
        unsafe { (*self.as_raw()).ifindex }
    }

    /// The device's hardware address (`dev_addr`, `addr_len` bytes).
    pub fn hw_addr(&self) -> &[u8] {
        // SAFETY: The device is alive; `dev_addr` holds at least `addr_len` bytes.
        unsafe {
            let d = self.as_raw();
            let len = usize::from((*d).addr_len).min(MAX_ADDR_LEN);
            core::slice::from_raw_parts((*d).dev_addr, len)
        }
    }

    /// Whether the device is up with its carrier on (C's `ib_get_curr_port_state` reads an
    /// active port from it).
    pub fn is_running_with_carrier(&self) -> bool {
        // SAFETY: The device is alive.
        unsafe { bindings::rdma_rs_netif_running_with_carrier(self.as_raw()) }
    }

    /// The device's IPv4 addresses (network order), in its list's order, as many as fit in
    /// `out`; returns how many it has (more than `out` holds when it has more).
    pub fn ipv4_addrs(&self, out: &mut [[u8; 4]]) -> usize {
        let max = i32::try_from(out.len()).unwrap_or(i32::MAX);
        // SAFETY: The device is alive; `out` holds `max` addresses of 4 bytes (`__be32`).
        let n = unsafe {
            bindings::rdma_rs_netdev_ipv4_addrs(self.as_raw(), out.as_mut_ptr().cast(), max)
        };
        usize::try_from(n).unwrap_or(0)
    }

    /// The device's IPv6 addresses, in its list's order, as many as fit in `out`; returns how
    /// many it has.
    #[cfg(CONFIG_IPV6)]
    pub fn ipv6_addrs(&self, out: &mut [[u8; 16]]) -> usize {
        let max = i32::try_from(out.len()).unwrap_or(i32::MAX);
        // SAFETY: The device is alive; `out` holds `max` addresses of 16 bytes (`in6_addr`).
        let n = unsafe {
            bindings::rdma_rs_netdev_ipv6_addrs(self.as_raw(), out.as_mut_ptr().cast(), max)
        };
        usize::try_from(n).unwrap_or(0)
    }

    /// Whether the device is being unregistered or gone (`reg_state` past registered).
    pub fn is_unregistering(&self) -> bool {
        // SAFETY: The device is alive; a racing change gives the old or the new state.
        unsafe {
            (*self.as_raw()).reg_state >= bindings::netdev_reg_state_NETREG_UNREGISTERING as u8
        }
    }

    /// The device's MTU.
    pub fn mtu(&self) -> u32 {
        // SAFETY: The device is alive; a racing MTU change gives the old or the new value.
        unsafe { (*self.as_raw()).mtu }
    }
}

// SAFETY: `dev_hold` and `dev_put` keep a net device alive; any thread may take or drop a
// reference.
unsafe impl crate::sync::aref::AlwaysRefCounted for NetDevice {
    fn inc_ref(&self) {
        // SAFETY: The device is alive (a reference exists).
        unsafe { bindings::dev_hold(self.as_raw()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller gives back a reference it held.
        unsafe { bindings::dev_put(obj.cast::<bindings::net_device>().as_ptr()) };
    }
}

// SAFETY: A net device is not tied to a thread; its fields read here are read by any CPU.
unsafe impl Send for NetDevice {}
// SAFETY: As above.
unsafe impl Sync for NetDevice {}
