// SPDX-License-Identifier: GPL-2.0

//! The device numbers of `uverbsN` (C's numbering).
//!
//! Devices 0..31 get the historical numbers 231:192..223; later ones numbers of a major the
//! kernel picks (C's `IB_UVERBS_BASE_DEV` and its dynamic region). A device number is free
//! again once its device has left the table (`device.rs`) and its character device is removed.

use kernel::{
    chrdev::{DevT, Region},
    prelude::*,
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
