// SPDX-License-Identifier: GPL-2.0

//! C drivers' user-verbs buffers (C's `ib_core_uverbs.c`): `_ib_copy_validate_udata_in` and
//! `_ib_respond_udata`, over the core's [`Udata`] (the same rules the core's drivers get).

use crate::user::udata::Udata;
use kernel::{
    bindings,
    ffi::{c_int, c_void},
    prelude::*,
};

/// The core's view of C's `struct ib_udata`.
///
/// # Safety
///
/// `udata` points to a readable `struct ib_udata`.
unsafe fn udata_of(udata: *const bindings::ib_udata) -> Udata {
    // SAFETY: The caller's contract.
    let u = unsafe { &*udata };
    Udata::new(u.inbuf as usize, u.inlen, u.outbuf as usize, u.outlen)
}

/// C's `_ib_copy_validate_udata_in`: the driver's request into `req` (`kernel_size` bytes):
/// `-EINVAL` when user space sent less than `minimum_size`, the rest of `req` zeroed when it
/// sent less than `kernel_size`, `-EOPNOTSUPP` when it sent more and the extra bytes are not
/// zero, `-EFAULT` when its buffer cannot be read.
///
/// # Safety
///
/// `udata` points to a readable `struct ib_udata` of a command in progress; `req` to
/// `kernel_size` writable bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn _ib_copy_validate_udata_in(
    udata: *mut bindings::ib_udata,
    req: *mut c_void,
    kernel_size: usize,
    minimum_size: usize,
) -> c_int {
    // SAFETY: The caller's contract.
    let u = unsafe { udata_of(udata) };
    let req: &mut [u8] = if kernel_size == 0 {
        &mut []
    } else {
        // SAFETY: The caller's contract: `kernel_size` writable bytes.
        unsafe { core::slice::from_raw_parts_mut(req.cast::<u8>(), kernel_size) }
    };
    match u.read_in_validated(req, minimum_size) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// C's `_ib_respond_udata`: the driver's answer `src` (`len` bytes) into the response buffer,
/// cut to its size, and the rest of the buffer zeroed; `-EFAULT` when it cannot be written.
///
/// # Safety
///
/// `udata` points to a readable `struct ib_udata` of a command in progress; `src` to `len`
/// readable bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn _ib_respond_udata(
    udata: *mut bindings::ib_udata,
    src: *const c_void,
    len: usize,
) -> c_int {
    // SAFETY: The caller's contract.
    let u = unsafe { udata_of(udata) };
    let src: &[u8] = if len == 0 {
        &[]
    } else {
        // SAFETY: The caller's contract: `len` readable bytes.
        unsafe { core::slice::from_raw_parts(src.cast::<u8>(), len) }
    };
    match u.respond(src) {
        Ok(()) => 0,
        Err(_) => EFAULT.to_errno(),
    }
}
