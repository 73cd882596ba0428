// SPDX-License-Identifier: GPL-2.0

//! The calling task's credentials, compared with a file's: C's `ib_safe_file_access` refuses a
//! write from a task whose credentials are not the opener's (a set-uid program handed the file
//! must not be made to write to it).
//!
//! C header: [`include/linux/cred.h`](srctree/include/linux/cred.h)

use crate::{bindings, cred::Credential, ffi::c_int};

/// Whether `cred` is the calling task's current credential (the same object, as C's
/// `filp->f_cred == current_cred()`).
pub fn is_current(cred: &Credential) -> bool {
    // SAFETY: Reading the current task's credential pointer is always valid in task context;
    // it is only compared, never dereferenced.
    let current = unsafe { bindings::rdma_rs_current_cred() };
    core::ptr::eq(current, cred.as_ptr())
}

/// Whether the calling task has capability `cap` (e.g. `bindings::CAP_NET_RAW`) in the initial
/// user namespace (C's `capable`, which also marks the task as having used it). A number that
/// is no capability is `false`.
pub fn capable(cap: u32) -> bool {
    let Ok(cap) = c_int::try_from(cap) else {
        return false;
    };
    // SAFETY: `capable` only reads the calling task's credentials; any number is accepted.
    unsafe { bindings::capable(cap) }
}
