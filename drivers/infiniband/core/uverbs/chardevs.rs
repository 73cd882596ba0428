// SPDX-License-Identifier: GPL-2.0

//! The device numbers of `uverbsN` (C's numbering).
//!
//! Devices 0..31 get the historical numbers 231:192..223; later ones numbers of a major the
//! kernel picks (C's `IB_UVERBS_BASE_DEV` and its dynamic region). A device takes the lowest
//! free index and gives it back once its character device is removed.

use kernel::{chrdev::Numbers, prelude::*};

/// The historical major of uverbs (C's `IB_UVERBS_MAJOR`).
const MAJOR: u32 = 231;
/// Its first minor (C's `IB_UVERBS_BASE_MINOR`).
const BASE_MINOR: u32 = 192;
/// Devices with historical numbers (C's `IB_UVERBS_NUM_FIXED_MINOR`).
const FIXED: u32 = 32;
/// Devices at most (C's `IB_UVERBS_MAX_DEVICES`, `RDMA_MAX_PORTS`).
const MAX_DEVICES: u32 = 8192;

/// Reserves the numbers (C's `ib_uverbs_init`: the fixed range, then the dynamic one).
pub(crate) fn reserve() -> Result<Numbers> {
    Numbers::reserve(
        c"infiniband_verbs",
        MAJOR,
        BASE_MINOR,
        FIXED,
        MAX_DEVICES,
        1,
    )
}
