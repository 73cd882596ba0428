// SPDX-License-Identifier: GPL-2.0

//! The Ethernet address a RoCE path's packets go to (C's `ib_resolve_eth_dmac` and
//! `rdma_addr_find_l2_eth_by_grh`): what the core fills in when user space moves a connected
//! QP on a RoCE port to a new path, since user space gives only GIDs (kernel callers resolve it
//! themselves, as rdma_cm does).
//!
//! A multicast GID maps to its IPv4 or IPv6 multicast MAC; a link-local GID of a RoCE v1 entry
//! carries its MAC (EUI-64); any other GID is resolved through the IP stack from the source
//! entry's net device, waiting for the next hop's neighbour entry up to a second (C's timeout),
//! which also gives the route's hop limit.

use super::{in4_mut, in6_mut, requests, SockAddr};
use crate::{attrs::GidType, device::gid_table::GidEntry};
use core::pin::Pin;
use kernel::{
    bindings,
    ffi::{c_int, c_void},
    net::namespace::Net,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Completion,
    },
};

/// How long the IP stack may take to find the next hop (C's 1000 ms).
const TIMEOUT_MS: u32 = 1000;

/// Where a resolution's result goes.
#[pin_data]
struct Waiter {
    #[pin]
    done: Completion,
    status: Atomic<i32>,
}

/// The resolution's callback: records the outcome and wakes the waiter.
///
/// # Safety
///
/// `ctx` is the [`Waiter`] [`find_l2_eth`] passed, alive until it was woken.
unsafe extern "C" fn finished(
    status: c_int,
    _src: *mut bindings::sockaddr,
    _addr: *mut bindings::rdma_dev_addr,
    ctx: *mut c_void,
) {
    // SAFETY: The caller's contract.
    let w = unsafe { &*ctx.cast::<Waiter>() };
    w.status.store(status, Relaxed);
    w.done.complete_all();
}

/// The socket address of a GID: IPv4 for an IPv4-mapped one, else IPv6 (C's `rdma_gid2ip`).
pub(crate) fn gid_to_ip(gid: &[u8; 16]) -> SockAddr {
    let mut a = SockAddr::zeroed();
    if gid[..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff {
        let s = in4_mut(&mut a);
        s.sin_family = bindings::AF_INET as u16;
        s.sin_addr.s_addr = u32::from_ne_bytes([gid[12], gid[13], gid[14], gid[15]]);
    } else {
        let s = in6_mut(&mut a);
        s.sin6_family = bindings::AF_INET6 as u16;
        s.sin6_addr.in6_u.u6_addr8 = *gid;
    }
    a
}

/// Whether `gid` is a multicast address (C's `rdma_is_multicast_addr`): an IPv4-mapped one
/// by its IPv4 address.
fn is_multicast(gid: &[u8; 16]) -> bool {
    if gid[..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff {
        gid[12] & 0xf0 == 0xe0
    } else {
        gid[0] == 0xff
    }
}

/// The multicast MAC of a multicast `gid` (C's `ip_eth_mc_map`, `ipv6_eth_mc_map`).
fn multicast_mac(gid: &[u8; 16]) -> [u8; 6] {
    if gid[..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff {
        [0x01, 0x00, 0x5e, gid[13] & 0x7f, gid[14], gid[15]]
    } else {
        [0x33, 0x33, gid[12], gid[13], gid[14], gid[15]]
    }
}

/// Whether `gid` is an IPv6 link-local address (C's `rdma_link_local_addr`: fe80::/64).
fn is_link_local(gid: &[u8; 16]) -> bool {
    gid[0] == 0xfe && gid[1] == 0x80 && gid[2..8].iter().all(|&b| b == 0)
}

/// The MAC inside a link-local GID's EUI-64 interface id (C's `rdma_get_ll_mac`).
fn link_local_mac(gid: &[u8; 16]) -> [u8; 6] {
    [gid[8] ^ 2, gid[9], gid[10], gid[13], gid[14], gid[15]]
}

/// The next hop's MAC for a path from the source GID entry `sgid` to `dgid`, and the hop limit
/// of the route when the IP stack was asked (C's `ib_resolve_eth_dmac`; `None` keeps the
/// path's own). `EINVAL` for an entry without a net device. Sleeps.
pub(crate) fn resolve_eth_dmac(sgid: &GidEntry, dgid: &[u8; 16]) -> Result<([u8; 6], Option<u8>)> {
    if is_multicast(dgid) {
        return Ok((multicast_mac(dgid), None));
    }
    if is_link_local(dgid) && sgid.kind == GidType::RoceV1 {
        return Ok((link_local_mac(dgid), None));
    }
    let ndev = sgid.ndev.as_ref().ok_or(EINVAL)?;
    let (dmac, hop_limit) = find_l2_eth(&sgid.gid.0, dgid, ndev.ifindex())?;
    Ok((dmac, Some(hop_limit)))
}

/// C's `rdma_addr_find_l2_eth_by_grh`: the MAC and hop limit of the next hop from `sgid` out
/// of the net device numbered `ifindex` to `dgid`, in the initial namespace (C takes both from
/// the source GID entry).
fn find_l2_eth(sgid: &[u8; 16], dgid: &[u8; 16], ifindex: i32) -> Result<([u8; 6], u8)> {
    let src = gid_to_ip(sgid);
    let dst = gid_to_ip(dgid);
    // SAFETY: A plain C structure: all zeroes is valid.
    let mut dev_addr: bindings::rdma_dev_addr = unsafe { core::mem::zeroed() };
    dev_addr.net = Net::init_net().as_raw();
    dev_addr.bound_dev_if = ifindex;
    let waiter: Pin<KBox<Waiter>> = KBox::pin_init(
        pin_init!(Waiter {
            done <- Completion::new(),
            status: Atomic::new(0),
        }),
        GFP_KERNEL,
    )?;
    let ctx: *mut c_void = core::ptr::from_ref::<Waiter>(&waiter).cast_mut().cast();
    // SAFETY: Both addresses are storages of their families; `dev_addr` (its namespace the
    // initial one, which lives forever) and `waiter` stay until the callback has run (waited
    // for below).
    unsafe {
        requests::resolve_ip(
            super::as_sockaddr(&src),
            super::as_sockaddr(&dst),
            &mut dev_addr,
            TIMEOUT_MS,
            Some(finished),
            false,
            ctx,
        )?
    };
    waiter.done.wait_for_completion();
    kernel::error::to_result(waiter.status.load(Relaxed))?;
    let mut dmac = [0u8; 6];
    dmac.copy_from_slice(&dev_addr.dst_dev_addr[..6]);
    Ok((dmac, dev_addr.hoplimit as u8))
}

#[kernel::macros::kunit_tests(rdma_rs_ib_addr_l2_eth)]
mod tests {
    use super::*;

    #[test]
    fn multicast_gids_map_to_their_macs() {
        let v4: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 129, 2, 3];
        assert!(is_multicast(&v4));
        assert_eq!(multicast_mac(&v4), [0x01, 0x00, 0x5e, 0x01, 2, 3]);
        let v6: [u8; 16] = [
            0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0x12, 0x34, 0x56,
        ];
        assert!(is_multicast(&v6));
        assert_eq!(multicast_mac(&v6), [0x33, 0x33, 0xff, 0x12, 0x34, 0x56]);
        let unicast: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 2, 15];
        assert!(!is_multicast(&unicast));
    }

    #[test]
    fn a_link_local_gid_carries_its_mac() {
        let ll: [u8; 16] = [
            0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56,
        ];
        assert!(is_link_local(&ll));
        assert_eq!(link_local_mac(&ll), [0x52, 0x54, 0x00, 0x12, 0x34, 0x56]);
        let global: [u8; 16] = [0x20, 0x01, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        assert!(!is_link_local(&global));
    }
}
