// SPDX-License-Identifier: GPL-2.0

//! User memory of C drivers' memory regions (C's `umem.c`): `ib_umem_get_attr_or_va`,
//! `ib_umem_release`, `ib_umem_check_rereg`.
//!
//! Not yet: C drivers' user verbs are not served (their devices get no uverbs device), so no
//! command reaches a C driver's `reg_user_mr`; until they are, pinning user memory for one is
//! refused with `-EOPNOTSUPP` (C's answer without `CONFIG_INFINIBAND_USER_MEM`).

use crate::c_abi::object::err_ptr;
use kernel::{bindings, ffi::c_int, prelude::*};

/// C's `ib_umem_get_attr_or_va`: pins user memory for a C driver. Refused (`-EOPNOTSUPP`):
/// see the module's documentation.
///
/// # Safety
///
/// Callable with any arguments: none is read.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_umem_get_attr_or_va(
    _device: *mut bindings::ib_device,
    _attrs: *const bindings::uverbs_attr_bundle,
    _attr_id: u16,
    _addr: u64,
    _size: usize,
    _access: c_int,
) -> *mut bindings::ib_umem {
    err_ptr(EOPNOTSUPP)
}

/// C's `ib_umem_release`: nothing to release for a null `umem` (none is ever handed out yet).
///
/// # Safety
///
/// `umem` is null or came from [`ib_umem_get_attr_or_va`] (which hands none out).
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_umem_release(umem: *mut bindings::ib_umem) {
    if !umem.is_null() {
        pr_warn!("ib_umem_release: a user memory the core did not make\n");
    }
}

/// C's `ib_umem_check_rereg`: whether a re-registration with `flags` and `new_access_flags`
/// may keep `umem`: 0 for none; `-EOPNOTSUPP` for a dma-buf; `-EACCES` when the access
/// becomes writable without a new translation on memory pinned read-only.
///
/// # Safety
///
/// `umem` is null or a readable `struct ib_umem`.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_umem_check_rereg(
    umem: *mut bindings::ib_umem,
    flags: c_int,
    new_access_flags: c_int,
) -> c_int {
    if umem.is_null() {
        return 0;
    }
    // SAFETY: The caller's contract.
    let u = unsafe { &*umem };
    if u.is_dmabuf() != 0 {
        return EOPNOTSUPP.to_errno();
    }
    let writable_access = bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE
        | bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE
        | bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC
        | bindings::ib_access_flags_IB_ACCESS_MW_BIND;
    let rereg_access = bindings::ib_mr_rereg_flags_IB_MR_REREG_ACCESS as c_int;
    let rereg_trans = bindings::ib_mr_rereg_flags_IB_MR_REREG_TRANS as c_int;
    if flags & rereg_access != 0
        && flags & rereg_trans == 0
        && (new_access_flags as u32) & writable_access != 0
        && u.writable() == 0
    {
        return EACCES.to_errno();
    }
    0
}
