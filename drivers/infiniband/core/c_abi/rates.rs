// SPDX-License-Identifier: GPL-2.0

//! Static rates as C modules convert them: `ib_rate_to_mbps` with C's name, signature and table
//! (C's `drivers/infiniband/core/verbs.c`): the data rate of an `enum ib_rate`, in Mb/s, as the
//! link's signalling rate less its encoding; -1 for a value that is not a rate.

use kernel::{bindings, ffi::c_int};

/// C's `ib_rate_to_mbps`.
#[no_mangle]
pub(crate) extern "C" fn ib_rate_to_mbps(rate: bindings::ib_rate) -> c_int {
    match rate {
        bindings::ib_rate_IB_RATE_2_5_GBPS => 2500,
        bindings::ib_rate_IB_RATE_5_GBPS => 5000,
        bindings::ib_rate_IB_RATE_10_GBPS => 10000,
        bindings::ib_rate_IB_RATE_20_GBPS => 20000,
        bindings::ib_rate_IB_RATE_30_GBPS => 30000,
        bindings::ib_rate_IB_RATE_40_GBPS => 40000,
        bindings::ib_rate_IB_RATE_60_GBPS => 60000,
        bindings::ib_rate_IB_RATE_80_GBPS => 80000,
        bindings::ib_rate_IB_RATE_120_GBPS => 120000,
        bindings::ib_rate_IB_RATE_14_GBPS => 14062,
        bindings::ib_rate_IB_RATE_56_GBPS => 56250,
        bindings::ib_rate_IB_RATE_112_GBPS => 112500,
        bindings::ib_rate_IB_RATE_168_GBPS => 168750,
        bindings::ib_rate_IB_RATE_25_GBPS => 25781,
        bindings::ib_rate_IB_RATE_100_GBPS => 103125,
        bindings::ib_rate_IB_RATE_200_GBPS => 206250,
        bindings::ib_rate_IB_RATE_300_GBPS => 309375,
        bindings::ib_rate_IB_RATE_28_GBPS => 28125,
        bindings::ib_rate_IB_RATE_50_GBPS => 53125,
        bindings::ib_rate_IB_RATE_400_GBPS => 425000,
        bindings::ib_rate_IB_RATE_600_GBPS => 637500,
        bindings::ib_rate_IB_RATE_800_GBPS => 850000,
        bindings::ib_rate_IB_RATE_1600_GBPS => 1700000,
        _ => -1,
    }
}
