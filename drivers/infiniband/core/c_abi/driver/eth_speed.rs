// SPDX-License-Identifier: GPL-2.0

//! The speed of a C driver's Ethernet port (C's `verbs.c`): `ib_get_eth_speed`, from its net
//! device's link settings.

use crate::{
    attrs::LinkLayer,
    c_abi::driver::{netdev::ib_device_get_netdev, ops::link_layer_of},
};
use core::ptr::NonNull;
use kernel::{bindings, ffi::c_int, net::route::NetDevice, prelude::*, sync::aref::ARef};

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
    if unsafe { link_layer_of(dev, port_num) } != LinkLayer::Ethernet {
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
