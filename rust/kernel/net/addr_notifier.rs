// SPDX-License-Identifier: GPL-2.0

//! Notifications of IP addresses added to and removed from net devices
//! (`register_inetaddr_notifier`, `register_inet6addr_notifier`): a subsystem that derives
//! something from a device's addresses (the RDMA core's RoCE GIDs) follows them.
//!
//! C headers: [`include/linux/inetdevice.h`](srctree/include/linux/inetdevice.h),
//! [`include/net/addrconf.h`](srctree/include/net/addrconf.h)

use crate::{bindings, error::to_result, net::route::NetDevice, prelude::*, types::Opaque};
use core::ffi::{c_int, c_void};

/// An IP address of a net device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpAddress {
    /// An IPv4 address, in network order.
    V4([u8; 4]),
    /// An IPv6 address.
    V6([u8; 16]),
}

/// What a subsystem does when a device's addresses change.
pub trait AddrHandler: Send + Sync {
    /// `addr` was added to `ndev` (`up`) or removed from it. IPv6 notifications come in atomic
    /// context (the chain is atomic): this must not sleep; `ndev` is alive for the call.
    fn address(&self, ndev: &NetDevice, addr: IpAddress, up: bool);
}

/// The registered notifiers (IPv4 and IPv6); unregistered when dropped.
///
/// # Invariants
///
/// `v4` is registered with the inetaddr chain and `v6` with the inet6addr chain, with this
/// type's callbacks, from initialisation until drop.
#[pin_data(PinnedDrop)]
pub struct Registration<H: AddrHandler> {
    handler: H,
    #[pin]
    v4: Opaque<bindings::notifier_block>,
    #[pin]
    v6: Opaque<bindings::notifier_block>,
}

// SAFETY: The notifier blocks are only touched by their chains, which serialise registration;
// `H` is `Send`.
unsafe impl<H: AddrHandler> Send for Registration<H> {}

// SAFETY: `&Registration` only gives out `&H`, which is `Sync`.
unsafe impl<H: AddrHandler> Sync for Registration<H> {}

/// Whether a chain's event says an address came up (`NETDEV_UP`) or went (`NETDEV_DOWN`).
fn up_or_down(event: usize) -> Option<bool> {
    match event as u32 {
        bindings::netdev_cmd_NETDEV_UP => Some(true),
        bindings::netdev_cmd_NETDEV_DOWN => Some(false),
        _ => None,
    }
}

impl<H: AddrHandler + 'static> Registration<H> {
    /// Registers `handler` for the address changes of every net device.
    pub fn new(handler: H) -> impl PinInit<Self, Error> {
        // A zeroed notifier block is valid; its callback is set before it is registered.
        try_pin_init!(Self {
            handler,
            v4: Opaque::zeroed(),
            v6: Opaque::zeroed(),
        }? Error)
        .pin_chain(|this| {
            let (v4, v6) = (this.v4.get(), this.v6.get());
            // SAFETY: Both blocks are pinned inside `this`, whose drop unregisters them; the
            // handler is initialised. On an error nothing stays registered (and the value is not
            // dropped: the blocks are not unregistered twice).
            unsafe {
                (*v4).notifier_call = Some(Self::call_v4);
                (*v6).notifier_call = Some(Self::call_v6);
                to_result(bindings::register_inetaddr_notifier(v4))?;
                if let Err(e) = to_result(bindings::register_inet6addr_notifier(v6)) {
                    bindings::unregister_inetaddr_notifier(v4);
                    return Err(e);
                }
            }
            // INVARIANT: Both registered.
            Ok(())
        })
    }

    /// The IPv4 chain's callback.
    ///
    /// # Safety
    ///
    /// `nb` is the `v4` field of a live `Registration<H>`; `ctx` is the chain's `struct
    /// in_ifaddr`.
    unsafe extern "C" fn call_v4(
        nb: *mut bindings::notifier_block,
        event: usize,
        ctx: *mut c_void,
    ) -> c_int {
        // SAFETY: The function's contract (`Opaque` is `repr(transparent)`).
        let this = unsafe {
            &*crate::container_of!(nb.cast::<Opaque<bindings::notifier_block>>(), Self, v4)
        };
        if let (Some(up), false) = (up_or_down(event), ctx.is_null()) {
            let ifa = ctx.cast::<bindings::in_ifaddr>();
            // SAFETY: The chain passes a live address of a live device (contract).
            unsafe {
                let in_dev = (*ifa).ifa_dev;
                if !in_dev.is_null() && !(*in_dev).dev.is_null() {
                    let ndev = NetDevice::from_raw((*in_dev).dev);
                    let a = (*ifa).ifa_address.to_ne_bytes();
                    this.handler.address(ndev, IpAddress::V4(a), up);
                }
            }
        }
        bindings::NOTIFY_DONE as c_int
    }

    /// The IPv6 chain's callback.
    ///
    /// # Safety
    ///
    /// `nb` is the `v6` field of a live `Registration<H>`; `ctx` is the chain's `struct
    /// inet6_ifaddr`.
    unsafe extern "C" fn call_v6(
        nb: *mut bindings::notifier_block,
        event: usize,
        ctx: *mut c_void,
    ) -> c_int {
        // SAFETY: The function's contract.
        let this = unsafe {
            &*crate::container_of!(nb.cast::<Opaque<bindings::notifier_block>>(), Self, v6)
        };
        if let (Some(up), false) = (up_or_down(event), ctx.is_null()) {
            let ifp = ctx.cast::<bindings::inet6_ifaddr>();
            // SAFETY: The chain passes a live address of a live device (contract); the address
            // is plain bytes.
            unsafe {
                let idev = (*ifp).idev;
                if !idev.is_null() && !(*idev).dev.is_null() {
                    let ndev = NetDevice::from_raw((*idev).dev);
                    let a = (*ifp).addr.in6_u.u6_addr8;
                    this.handler.address(ndev, IpAddress::V6(a), up);
                }
            }
        }
        bindings::NOTIFY_DONE as c_int
    }
}

#[pinned_drop]
impl<H: AddrHandler> PinnedDrop for Registration<H> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: Both blocks are registered by the type invariants and unregistered only here;
        // the chains wait for running callbacks.
        unsafe {
            bindings::unregister_inet6addr_notifier(self.v6.get());
            bindings::unregister_inetaddr_notifier(self.v4.get());
        }
    }
}
