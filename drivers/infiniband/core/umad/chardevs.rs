// SPDX-License-Identifier: GPL-2.0

//! The device numbers of `umadN` and `issmN` (C's numbering).
//!
//! Port N (numbered over all devices, lowest free first) gets 231:N for `umadN` and 231:64+N
//! for `issmN` while N < 64; later ports numbers of a major the kernel picks, `umadN` in its
//! first half and `issmN` in its second (C's `IB_UMAD_NUM_FIXED_MINOR` and dynamic region).

use kernel::{
    chrdev::{DevT, Region},
    prelude::*,
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
