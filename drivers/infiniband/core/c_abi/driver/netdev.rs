// SPDX-License-Identifier: GPL-2.0

//! The network devices of C drivers' ports (C's `device.c`): `ib_device_set_netdev`,
//! `ib_device_get_netdev`, `ib_device_get_by_netdev`.
//!
//! A C driver (rxe, siw) names the net device of each port, before or after registering; the
//! core holds it until the driver names another or none, or the device is unregistered or
//! freed (C's `free_netdevs`). rxe finds its device from a received packet's net device, in
//! softirq: the associations sit under an IRQ-safe spinlock, as C's hash under its spinlock and
//! RCU.

use crate::c_abi::face::{self, CFace};
use core::ptr::{self, NonNull};
use kernel::{
    bindings,
    ffi::c_int,
    net::route::NetDevice,
    prelude::*,
    sync::{aref::ARef, global_lock},
};

/// One port's net device.
struct Association {
    /// The C driver's device structure.
    ib: *mut bindings::ib_device,
    port: u32,
    ndev: ARef<NetDevice>,
}

// SAFETY: `ib` is only compared and, under the list's lock, read while the structure is alive
// (an association is removed before its structure is freed).
unsafe impl Send for Association {}

global_lock! {
    // SAFETY: Initialized by the module initializer before the core's exports can be called.
    unsafe(uninit) static NETDEVS: SpinLockIrq<KVec<Association>> = KVec::new();
}

/// Initializes the associations.
///
/// # Safety
///
/// Called once, at module load, before any C module can call the exports.
pub(crate) unsafe fn init() {
    // SAFETY: As this function's contract.
    unsafe { NETDEVS.init() };
}

/// Frees the list's memory at unload (every C driver's device is gone by then).
pub(crate) fn clear() {
    let left = core::mem::replace(&mut *NETDEVS.lock(), KVec::new());
    drop(left);
}

/// The net device associated with `port` of the C driver's structure `ib`, held.
pub(crate) fn port_netdev(ib: *mut bindings::ib_device, port: u32) -> Option<ARef<NetDevice>> {
    NETDEVS
        .lock()
        .iter()
        .find(|a| a.ib == ib && a.port == port)
        .map(|a| a.ndev.clone())
}

/// Drops every association of `ib` (C's `free_netdevs`: at unregistration and when the
/// structure is freed).
pub(crate) fn free_netdevs(ib: *mut bindings::ib_device) {
    let mut gone = KVec::new();
    {
        let mut list = NETDEVS.lock();
        let mut i = 0;
        while i < list.len() {
            if list[i].ib == ib {
                // The reference is dropped after the lock, to keep the critical section short
                // (a failed push drops it here instead).
                if let Ok(a) = list.remove(i) {
                    let _ = gone.push(a, GFP_ATOMIC);
                }
            } else {
                i += 1;
            }
        }
    }
    drop(gone);
}

/// C's `ib_device_set_netdev`: associates `ndev` (null: none) with `port` of the C driver's
/// device `ib_dev`, holding it. 0; `-EINVAL` for a port the device does not have; `-ENOMEM`.
///
/// # Safety
///
/// `ib_dev` is a C driver's device structure (`_ib_alloc_device`); `ndev` is null or a live
/// net device that is not being unregistered (C's contract).
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_device_set_netdev(
    ib_dev: *mut bindings::ib_device,
    ndev: *mut bindings::net_device,
    port: u32,
) -> c_int {
    // SAFETY: The caller's contract.
    if !unsafe { face::port_valid(ib_dev, port) } {
        return EINVAL.to_errno();
    }
    // SAFETY: The caller's contract: a driver's structure, set up by its own (serialised)
    // registration path.
    if unsafe { face::is_driver_device(ib_dev) } {
        // SAFETY: As above.
        if let Err(e) = unsafe { face::ensure_port_data(ib_dev) } {
            return e.to_errno();
        }
    } else {
        // The core's faces stand for its own drivers' devices, which have no net device.
        return EINVAL.to_errno();
    }
    let new = NonNull::new(ndev).map(|n| {
        // SAFETY: A live net device (contract); the reference taken is the association's.
        let d = unsafe { NetDevice::from_raw(n.as_ptr()) };
        ARef::from(d)
    });
    let mut old = None;
    let r = {
        let mut list = NETDEVS.lock();
        let at = list.iter().position(|a| a.ib == ib_dev && a.port == port);
        match (at, new) {
            (Some(i), Some(n)) => {
                old = Some(core::mem::replace(&mut list[i].ndev, n));
                Ok(())
            }
            (Some(i), None) => {
                old = list.remove(i).ok().map(|a| a.ndev);
                Ok(())
            }
            (None, Some(n)) => list.push(
                Association {
                    ib: ib_dev,
                    port,
                    ndev: n,
                },
                GFP_ATOMIC,
            ),
            (None, None) => Ok(()),
        }
    };
    drop(old);
    match r {
        Ok(()) => 0,
        Err(_) => ENOMEM.to_errno(),
    }
}

/// C's `ib_device_get_netdev`: the net device of `port` of `ib_dev`, held (the caller drops it
/// with `dev_put`), or null: for a port the device does not have, or without one. The
/// driver's `get_netdev` op answers when it has one, as in C.
///
/// # Safety
///
/// `ib_dev` is a C driver's device structure, or a face handed to the caller and not removed.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_device_get_netdev(
    ib_dev: *mut bindings::ib_device,
    port: u32,
) -> *mut bindings::net_device {
    // SAFETY: The caller's contract.
    if !unsafe { face::port_valid(ib_dev, port) } {
        return ptr::null_mut();
    }
    // SAFETY: As above.
    let held = if unsafe { face::is_driver_device(ib_dev) } {
        // SAFETY: As above.
        if let Some(get) = unsafe { (*ib_dev).ops.get_netdev } {
            // SAFETY: The driver's op, on its own structure.
            return unsafe { get(ib_dev, port) };
        }
        port_netdev(ib_dev, port)
    } else {
        // SAFETY: A face handed to the caller (contract).
        unsafe { CFace::owner(ib_dev) }.and_then(|d| d.port_netdev(port))
    };
    held.map_or(ptr::null_mut(), |n| ARef::into_raw(n).as_ptr().cast())
}

/// C's `ib_device_get_by_netdev`: the C driver's device structure a port of which is
/// associated with `ndev`, of driver `driver_id` (`RDMA_DRIVER_UNKNOWN`: any), with a
/// reference the caller drops with `ib_device_put`; null when none, or when the device is not
/// registered (its count is 0). Callable in any context.
///
/// # Safety
///
/// `ndev` is a live net device.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_device_get_by_netdev(
    ndev: *mut bindings::net_device,
    driver_id: bindings::rdma_driver_id,
) -> *mut bindings::ib_device {
    let list = NETDEVS.lock();
    for a in list.iter() {
        if a.ndev.as_raw() != ndev {
            continue;
        }
        // SAFETY: An associated structure is alive (removed from the list before it is freed).
        let c = unsafe { &mut *a.ib };
        if driver_id != bindings::rdma_driver_id_RDMA_DRIVER_UNKNOWN && c.ops.driver_id != driver_id
        {
            continue;
        }
        // SAFETY: C's `ib_device_try_get`: the count is only changed atomically.
        if unsafe { bindings::rdma_rs_refcount_inc_not_zero(&raw mut c.refcount) } {
            return a.ib;
        }
    }
    ptr::null_mut()
}
