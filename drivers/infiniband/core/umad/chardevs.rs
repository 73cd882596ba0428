// SPDX-License-Identifier: GPL-2.0

//! The device numbers of `umadN` and `issmN` (C's numbering).
//!
//! Port N (numbered over all devices, lowest free first) gets 231:N for `umadN` and 231:64+N
//! for `issmN` while N < 64; later ports numbers of a major the kernel picks, `umadN` in its
//! first half and `issmN` in its second (C's `IB_UMAD_NUM_FIXED_MINOR` and dynamic region).

use kernel::{chrdev::Numbers, prelude::*};

/// The historical major of umad (C's `IB_UMAD_MAJOR`).
const MAJOR: u32 = 231;
/// Ports with historical numbers (C's `IB_UMAD_NUM_FIXED_MINOR`).
const FIXED: u32 = 64;
/// Ports at most (C's `IB_UMAD_MAX_PORTS`, `RDMA_MAX_PORTS`).
const MAX_PORTS: u32 = 8192;

/// The character device of a port: `umadN` ([`UMAD`]) or `issmN` ([`ISSM`]).
pub(crate) const UMAD: u32 = 0;
/// See [`UMAD`].
pub(crate) const ISSM: u32 = 1;

/// Reserves the numbers (C's `ib_umad_init`: 128 fixed numbers, then twice the dynamic ports).
pub(crate) fn reserve() -> Result<Numbers> {
    Numbers::reserve(c"infiniband_mad", MAJOR, 0, FIXED, MAX_PORTS, 2)
}
