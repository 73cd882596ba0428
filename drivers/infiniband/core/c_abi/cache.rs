// SPDX-License-Identifier: GPL-2.0

//! The core's caches for C modules, with C's names and signatures (C's
//! `drivers/infiniband/core/cache.c`): `ib_get_cached_pkey`, `ib_find_cached_pkey`,
//! `ib_get_cached_port_state`. Each answers from the caches the core filled at registration
//! and refreshes at port events, as C's do; `-EINVAL` for a port the device does not have.

use crate::c_abi::face::CFace;
use kernel::{bindings, ffi::c_int, prelude::*};

/// C's `ib_get_cached_pkey`: P_Key `index` of `port_num` into `pkey`; `-EINVAL` for an index
/// outside the table.
///
/// # Safety
///
/// `device` is a device handed to the caller by a client's `add` and not yet removed from it;
/// `pkey` points to a writable `u16`.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_get_cached_pkey(
    device: *mut bindings::ib_device,
    port_num: u32,
    index: c_int,
    pkey: *mut u16,
) -> c_int {
    // SAFETY: The caller's contract.
    let dev = match unsafe { CFace::owner_on_port(device, port_num) } {
        Ok(d) => d,
        Err(e) => return e,
    };
    let Ok(index) = u32::try_from(index) else {
        return EINVAL.to_errno();
    };
    match dev.cached_pkey(port_num, index) {
        Some(p) => {
            // SAFETY: `pkey` is writable (contract).
            unsafe { pkey.write(p) };
            0
        }
        None => EINVAL.to_errno(),
    }
}

/// C's `ib_find_cached_pkey`: the index of `pkey` in `port_num`'s table into `index`, matching
/// the low 15 bits; a full member's entry is preferred, else the last limited one. `-ENOENT`
/// when there is none (`index` is then `0xffff`, as C leaves it).
///
/// # Safety
///
/// `device` is a device handed to the caller by a client's `add` and not yet removed from it;
/// `index` points to a writable `u16`.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_find_cached_pkey(
    device: *mut bindings::ib_device,
    port_num: u32,
    pkey: u16,
    index: *mut u16,
) -> c_int {
    // SAFETY: The caller's contract.
    let dev = match unsafe { CFace::owner_on_port(device, port_num) } {
        Ok(d) => d,
        Err(e) => return e,
    };
    let (rc, at) = match dev.find_cached_pkey(port_num, pkey) {
        Some(i) => (0, i),
        None => (ENOENT.to_errno(), u16::MAX),
    };
    // SAFETY: `index` is writable (contract).
    unsafe { index.write(at) };
    rc
}

/// C's `ib_get_cached_port_state`: `port_num`'s state as last read into `port_state`.
///
/// # Safety
///
/// `device` is a device handed to the caller by a client's `add` and not yet removed from it;
/// `port_state` points to a writable `enum ib_port_state`.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_get_cached_port_state(
    device: *mut bindings::ib_device,
    port_num: u32,
    port_state: *mut bindings::ib_port_state,
) -> c_int {
    // SAFETY: The caller's contract.
    let dev = match unsafe { CFace::owner_on_port(device, port_num) } {
        Ok(d) => d,
        Err(e) => return e,
    };
    let state = dev.cached_port_state(port_num).unwrap_or_default();
    // SAFETY: `port_state` is writable (contract).
    unsafe { port_state.write(state as bindings::ib_port_state) };
    0
}
