// SPDX-License-Identifier: GPL-2.0

//! The device numbers of `uverbsN` (C's numbering) and the table open() finds devices in.
//!
//! Devices 0..31 get the historical numbers 231:192..223; later ones numbers of a major the
//! kernel picks (C's `IB_UVERBS_BASE_DEV` and its dynamic region). A device number is free
//! again once its device has left the table and its character device is removed.

use crate::device::UverbsDevice;
use kernel::{
    chrdev::{DevT, Region},
    prelude::*,
    sync::{global_lock, Arc},
};

/// The historical major of uverbs (C's `IB_UVERBS_MAJOR`).
const MAJOR: u32 = 231;
/// Its first minor (C's `IB_UVERBS_BASE_MINOR`).
const BASE_MINOR: u32 = 192;
/// Devices with historical numbers (C's `IB_UVERBS_NUM_FIXED_MINOR`).
const FIXED: u32 = 32;
/// Devices at most (C's `IB_UVERBS_MAX_DEVICES`, `RDMA_MAX_PORTS`).
pub(crate) const MAX_DEVICES: u32 = 8192;

/// The two ranges of device numbers, reserved while the module is loaded.
pub(crate) struct Numbers {
    fixed: Region,
    dynamic: Region,
}

impl Numbers {
    /// Reserves both ranges (C's `ib_uverbs_init`: the fixed one, then the dynamic one).
    pub(crate) fn reserve() -> Result<Self> {
        let fixed = Region::register(MAJOR, BASE_MINOR, FIXED, c"infiniband_verbs")?;
        let dynamic = Region::alloc(MAX_DEVICES - FIXED, c"infiniband_verbs")?;
        Ok(Self { fixed, dynamic })
    }

    /// The number of device `devnum`.
    pub(crate) fn devt(&self, devnum: u32) -> Option<DevT> {
        if devnum < FIXED {
            self.fixed.devt(devnum)
        } else {
            self.dynamic.devt(devnum - FIXED)
        }
    }
}

/// The devices open() can reach, by device number.
pub(crate) struct Table {
    devices: KVec<Arc<UverbsDevice>>,
}

global_lock! {
    // SAFETY: Initialized by the module initializer before the client registers.
    pub(crate) unsafe(uninit) static TABLE: Mutex<Table> = Table { devices: KVec::new() };
}

/// Initializes the table.
///
/// # Safety
///
/// Called once, at module load, before any other function of this module.
pub(crate) unsafe fn init() {
    // SAFETY: As this function's contract.
    unsafe { TABLE.init() };
}

/// The lowest device number no device holds (C's `ida_alloc_max`), `ENOMEM` when all are taken.
pub(crate) fn free_devnum() -> Result<u32> {
    let t = TABLE.lock();
    (0..MAX_DEVICES)
        .find(|n| !t.devices.iter().any(|d| d.devnum() == *n))
        .ok_or(ENOMEM)
}

/// Makes `dev` reachable by open().
pub(crate) fn insert(dev: Arc<UverbsDevice>) -> Result {
    TABLE.lock().devices.push(dev, GFP_KERNEL)?;
    Ok(())
}

/// Makes the device numbered `devnum` unreachable by open().
pub(crate) fn remove(devnum: u32) {
    let mut t = TABLE.lock();
    if let Some(k) = t.devices.iter().position(|d| d.devnum() == devnum) {
        let _ = t.devices.remove(k);
    }
}

/// The device with number `devt`.
pub(crate) fn find(devt: DevT) -> Option<Arc<UverbsDevice>> {
    TABLE
        .lock()
        .devices
        .iter()
        .find(|d| d.devt() == devt)
        .cloned()
}

/// Frees the table's memory at unload (every device has left it already).
pub(crate) fn clear() {
    TABLE.lock().devices = KVec::new();
}
