// SPDX-License-Identifier: GPL-2.0

//! The user ABI's structures as the kernel's headers define them (`rdma/ib_user_verbs.h`
//! through 7.3's `uapi` crate, bindgen), wrapped so that requests are read and responses
//! written as typed values ([`FromBytes`], [`AsBytes`]) instead of by byte offsets.
//!
//! A wrapper is `#[repr(transparent)]` over the C structure and dereferences to it. Its size is
//! the C structure's (`sizeof`), a flexible `driver_data[]` member counting nothing, as in C.

use core::ops::{Deref, DerefMut};
use kernel::{
    transmute::{AsBytes, FromBytes},
    uapi,
};

/// Declares `$name`, a wrapper of `uapi::$c`.
///
/// Only for structures of the user ABI: integers and arrays of integers, laid out by the uapi
/// rules with explicit padding members (no implicit padding), so that every byte pattern is a
/// valid value and every byte of a value is initialised.
macro_rules! user_abi {
    ($($(#[$doc:meta])* $name:ident = $c:ident;)*) => {$(
        $(#[$doc])*
        #[repr(transparent)]
        pub(crate) struct $name(pub(crate) uapi::$c);

        // SAFETY: `uapi::$c` is a structure of the user ABI (the macro's rule): any byte
        // pattern is a valid value, and the wrapper is transparent.
        unsafe impl FromBytes for $name {}

        // SAFETY: `uapi::$c` has no implicit padding (the macro's rule), so all its bytes are
        // initialised; the wrapper is transparent.
        unsafe impl AsBytes for $name {}

        impl Deref for $name {
            type Target = uapi::$c;

            fn deref(&self) -> &uapi::$c {
                &self.0
            }
        }

        impl DerefMut for $name {
            fn deref_mut(&mut self) -> &mut uapi::$c {
                &mut self.0
            }
        }
    )*};
}

user_abi! {
    /// ALLOC_PD's request (`struct ib_uverbs_alloc_pd`).
    AllocPd = ib_uverbs_alloc_pd;
    /// ALLOC_PD's response (`struct ib_uverbs_alloc_pd_resp`).
    AllocPdResp = ib_uverbs_alloc_pd_resp;
    /// DEALLOC_PD's request (`struct ib_uverbs_dealloc_pd`).
    DeallocPd = ib_uverbs_dealloc_pd;
}
