// SPDX-License-Identifier: GPL-2.0

//! The source GID attribute of a C driver's address ([`SgidHold`]): C's `rdma_fill_sgid_attr`
//! puts the GID table entry an address's `sgid_index` names into its `grh.sgid_attr`, held
//! while the AH, or the QP's path, uses it (rxe reads the entry's type and net device from it).

use crate::c_abi::gid::{rdma_get_gid_attr, rdma_put_gid_attr};
use core::ptr::NonNull;
use kernel::{bindings, prelude::*};

/// A held GID attribute, put when dropped.
///
/// # Invariants
///
/// `0` is a GID attribute this value holds one reference on.
pub(crate) struct SgidHold(NonNull<bindings::ib_gid_attr>);

// SAFETY: A held attribute may be put from any thread; it is only read.
unsafe impl Send for SgidHold {}
// SAFETY: As above.
unsafe impl Sync for SgidHold {}

impl SgidHold {
    /// Entry `index` of `port` of the C driver's registered structure `ib`, held;
    /// `EINVAL`/`ENODATA` as C's `rdma_get_gid_attr`.
    ///
    /// # Safety
    ///
    /// `ib` is a registered C driver's structure.
    pub(crate) unsafe fn get(ib: *mut bindings::ib_device, port: u32, index: u8) -> Result<Self> {
        // SAFETY: The caller's contract.
        let a = unsafe { rdma_get_gid_attr(ib, port, index.into()) };
        let a = kernel::error::from_err_ptr(a.cast_mut())?;
        // INVARIANT: `rdma_get_gid_attr` returned a held attribute.
        NonNull::new(a).map(Self).ok_or(EINVAL)
    }

    /// The attribute.
    pub(crate) fn raw(&self) -> *const bindings::ib_gid_attr {
        self.0.as_ptr()
    }
}

impl Drop for SgidHold {
    fn drop(&mut self) {
        // SAFETY: The reference is ours (type invariant), put once.
        unsafe { rdma_put_gid_attr(self.0.as_ptr()) };
    }
}
