// SPDX-License-Identifier: GPL-2.0

//! C drivers' mmap entries of user contexts (C's `ib_core_uverbs.c`):
//! `rdma_user_mmap_entry_insert`, `rdma_user_mmap_entry_get`, `rdma_user_mmap_entry_put`,
//! `rdma_user_mmap_entry_remove` (siw's queues are mapped through them).
//!
//! Not yet: the core makes no user context for a C driver (their devices get no uverbs
//! device), so no context reaches these; until it does they answer as C's do without user
//! access (`CONFIG_INFINIBAND_USER_ACCESS` off): an insert is `-EINVAL`, a lookup finds
//! nothing, put and remove do nothing.

use kernel::{bindings, ffi::c_int, prelude::*};

/// C's `rdma_user_mmap_entry_insert`: `-EINVAL` (see the module's documentation).
///
/// # Safety
///
/// Callable with any arguments: none is read.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_user_mmap_entry_insert(
    _ucontext: *mut bindings::ib_ucontext,
    _entry: *mut bindings::rdma_user_mmap_entry,
    _length: usize,
) -> c_int {
    EINVAL.to_errno()
}

/// C's `rdma_user_mmap_entry_get`: none (see the module's documentation).
///
/// # Safety
///
/// Callable with any arguments: none is read.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_user_mmap_entry_get(
    _ucontext: *mut bindings::ib_ucontext,
    _vma: *mut bindings::vm_area_struct,
) -> *mut bindings::rdma_user_mmap_entry {
    core::ptr::null_mut()
}

/// C's `rdma_user_mmap_entry_put`: nothing to drop (no entry is ever inserted yet).
///
/// # Safety
///
/// Callable with any argument: it is not read.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_user_mmap_entry_put(
    _entry: *mut bindings::rdma_user_mmap_entry,
) {
}

/// C's `rdma_user_mmap_entry_remove`: nothing to remove (no entry is ever inserted yet).
///
/// # Safety
///
/// Callable with any argument: it is not read.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_user_mmap_entry_remove(
    _entry: *mut bindings::rdma_user_mmap_entry,
) {
}
