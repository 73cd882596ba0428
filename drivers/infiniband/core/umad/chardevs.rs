// SPDX-License-Identifier: GPL-2.0

//! The device numbers of `umadN` and `issmN` (C's numbering) and the table open() finds ports
//! in.
//!
//! Port N (numbered over all devices, lowest free first) gets 231:N for `umadN` and 231:64+N
//! for `issmN` while N < 64; later ports numbers of a major the kernel picks, `umadN` in its
//! first half and `issmN` in its second (C's `IB_UMAD_NUM_FIXED_MINOR` and dynamic region).

use crate::port::UmadPort;
use kernel::{
    chrdev::{DevT, Region},
    prelude::*,
    sync::{global_lock, Arc},
};

/// The historical major of umad (C's `IB_UMAD_MAJOR`).
const MAJOR: u32 = 231;
/// Ports with historical numbers (C's `IB_UMAD_NUM_FIXED_MINOR`).
const FIXED: u32 = 64;
/// Ports at most (C's `IB_UMAD_MAX_PORTS`, `RDMA_MAX_PORTS`).
pub(crate) const MAX_PORTS: u32 = 8192;
/// Ports with numbers of the dynamic region.
const DYNAMIC: u32 = MAX_PORTS - FIXED;

/// The two ranges of device numbers, reserved while the module is loaded.
pub(crate) struct Numbers {
    fixed: Region,
    dynamic: Region,
}

impl Numbers {
    /// Reserves both ranges (C's `ib_umad_init`: 128 fixed numbers, then twice the dynamic
    /// ports).
    pub(crate) fn reserve() -> Result<Self> {
        let fixed = Region::register(MAJOR, 0, 2 * FIXED, c"infiniband_mad")?;
        let dynamic = Region::alloc(2 * DYNAMIC, c"infiniband_mad")?;
        Ok(Self { fixed, dynamic })
    }

    /// The numbers of `umadN` and `issmN` for port number `n`.
    pub(crate) fn devts(&self, n: u32) -> Option<(DevT, DevT)> {
        if n < FIXED {
            Some((self.fixed.devt(n)?, self.fixed.devt(FIXED + n)?))
        } else {
            let d = n - FIXED;
            Some((self.dynamic.devt(d)?, self.dynamic.devt(DYNAMIC + d)?))
        }
    }
}

/// The ports open() can reach.
pub(crate) struct Table {
    ports: KVec<Arc<UmadPort>>,
}

global_lock! {
    // SAFETY: Initialized by the module initializer before the client registers.
    pub(crate) unsafe(uninit) static TABLE: Mutex<Table> = Table { ports: KVec::new() };
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

/// The lowest port number no port holds (C's `ida_alloc_max`), `ENOSPC` when all are taken.
pub(crate) fn free_number() -> Result<u32> {
    let t = TABLE.lock();
    (0..MAX_PORTS)
        .find(|n| !t.ports.iter().any(|p| p.number() == *n))
        .ok_or(ENOSPC)
}

/// Makes `port` reachable by open().
pub(crate) fn insert(port: Arc<UmadPort>) -> Result {
    TABLE.lock().ports.push(port, GFP_KERNEL)?;
    Ok(())
}

/// Makes port number `n` unreachable by open(); its number is free again.
pub(crate) fn remove(n: u32) {
    let mut t = TABLE.lock();
    if let Some(k) = t.ports.iter().position(|p| p.number() == n) {
        let _ = t.ports.remove(k);
    }
}

/// The port whose `umadN` (`issm` false) or `issmN` is numbered `devt`.
pub(crate) fn find(devt: DevT, issm: bool) -> Option<Arc<UmadPort>> {
    TABLE
        .lock()
        .ports
        .iter()
        .find(|p| p.devt(issm) == devt)
        .cloned()
}

/// Frees the table's memory at unload (every port has left it already).
pub(crate) fn clear() {
    TABLE.lock().ports = KVec::new();
}
