// SPDX-License-Identifier: GPL-2.0

//! The network devices of C drivers' ports (C's `device.c`): `ib_device_set_netdev`,
//! `ib_device_get_netdev`, `ib_device_get_by_netdev`, and `ib_get_eth_speed` (`verbs.c`).
//!
//! A C driver (rxe, siw) names the net device of each port, before or after registering; the
//! core holds it until the driver names another or none, or the device is unregistered or
//! freed (C's `free_netdevs`). rxe finds its device from a received packet's net device, in
//! softirq: the associations sit under an IRQ-safe spinlock, as C's hash under its spinlock and
//! RCU.

use crate::c_abi::{driver::ops::CDriverOps, face};
use crate::{attrs::LinkLayer, c_abi::face::CFace};
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

/// Whether `port` is a port of the C structure `ib` (C's `rdma_is_port_valid`: from 1, or 0
/// for a switch, to the port count).
///
/// # Safety
///
/// `ib` is a live device structure.
unsafe fn port_valid(ib: *mut bindings::ib_device, port: u32) -> bool {
    // SAFETY: The caller's contract.
    let c = unsafe { &*ib };
    let start = u32::from(c.node_type == bindings::RDMA_NODE_IB_SWITCH as u8);
    (start..=c.phys_port_cnt).contains(&port)
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
    if !unsafe { port_valid(ib_dev, port) } {
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
    if !unsafe { port_valid(ib_dev, port) } {
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

/// C's `ib_get_width_and_speed`: an Ethernet speed in Mb/s over `lanes` as an InfiniBand width
/// and per-lane speed; without a lane count, C's table by the speed alone.
fn width_and_speed(netdev_speed: u32, lanes: u32) -> (u8, u16) {
    use bindings::{
        ib_port_speed_IB_SPEED_DDR as DDR, ib_port_speed_IB_SPEED_EDR as EDR,
        ib_port_speed_IB_SPEED_FDR as FDR, ib_port_speed_IB_SPEED_FDR10 as FDR10,
        ib_port_speed_IB_SPEED_HDR as HDR, ib_port_speed_IB_SPEED_NDR as NDR,
        ib_port_speed_IB_SPEED_SDR as SDR, ib_port_width_IB_WIDTH_12X as W12,
        ib_port_width_IB_WIDTH_1X as W1, ib_port_width_IB_WIDTH_2X as W2,
        ib_port_width_IB_WIDTH_4X as W4, ib_port_width_IB_WIDTH_8X as W8,
    };
    let (width, speed) = if lanes == 0 {
        match netdev_speed {
            0..=1_000 => (W1, SDR),
            1_001..=10_000 => (W1, FDR10),
            10_001..=20_000 => (W4, DDR),
            20_001..=25_000 => (W1, EDR),
            25_001..=40_000 => (W4, FDR10),
            40_001..=50_000 => (W2, EDR),
            50_001..=100_000 => (W4, EDR),
            100_001..=200_000 => (W4, HDR),
            _ => (W4, NDR),
        }
    } else {
        let width = match lanes {
            2 => W2,
            4 => W4,
            8 => W8,
            12 => W12,
            _ => W1,
        };
        let speed = match netdev_speed / lanes {
            5_000 => DDR,
            10_000 => FDR10,
            14_000 => FDR,
            25_000 => EDR,
            50_000 => HDR,
            100_000 => NDR,
            _ => SDR,
        };
        (width, speed)
    };
    (width as u8, speed as u16)
}

/// C's `ib_get_eth_speed`: the width and speed of an Ethernet port from its net device's link
/// settings (1000 Mb/s when the device does not say, with C's warning when it fails). 0;
/// `-EINVAL` for a port that is not Ethernet; `-ENODEV` without a registered net device.
///
/// # Safety
///
/// `dev` is a C driver's device structure; `speed` and `width` are writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_get_eth_speed(
    dev: *mut bindings::ib_device,
    port_num: u32,
    speed: *mut u16,
    width: *mut u8,
) -> c_int {
    // SAFETY: The caller's contract: a live structure with its ops.
    let ops = unsafe { CDriverOps::new(NonNull::new_unchecked(dev)) };
    if crate::verbs::ops::DynOps::link_layer(&ops, port_num) != LinkLayer::Ethernet {
        return EINVAL.to_errno();
    }
    // SAFETY: As above.
    let ndev = unsafe { ib_device_get_netdev(dev, port_num) };
    let Some(ndev) = NonNull::new(ndev) else {
        return ENODEV.to_errno();
    };
    // SAFETY: `ib_device_get_netdev` returned a held device; the reference is the `ARef`'s.
    let ndev: ARef<NetDevice> = unsafe { ARef::from_raw(ndev.cast()) };
    // SAFETY: A plain C structure: all zeroes is valid.
    let mut ks: bindings::ethtool_link_ksettings = unsafe { core::mem::zeroed() };
    // SAFETY: RTNL is what C takes around the query; the device is held.
    let rc = unsafe {
        bindings::rtnl_lock();
        if (*ndev.as_raw()).reg_state != bindings::netdev_reg_state_NETREG_REGISTERED as u8 {
            bindings::rtnl_unlock();
            return ENODEV.to_errno();
        }
        let rc = bindings::__ethtool_get_link_ksettings(ndev.as_raw(), &mut ks);
        bindings::rtnl_unlock();
        rc
    };
    let netdev_speed = if rc == 0 && ks.base.speed != bindings::SPEED_UNKNOWN as u32 {
        ks.base.speed
    } else {
        if rc != 0 {
            pr_warn!(
                "{} speed is unknown, defaulting to {}\n",
                kernel::str::BStr::from_bytes(ndev.name()),
                bindings::SPEED_1000
            );
        }
        bindings::SPEED_1000
    };
    let (w, s) = width_and_speed(netdev_speed, ks.lanes);
    // SAFETY: Writable (contract).
    unsafe {
        *speed = s;
        *width = w;
    }
    0
}
