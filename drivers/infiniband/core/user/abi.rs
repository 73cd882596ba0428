// SPDX-License-Identifier: GPL-2.0

//! The user ABI's structures as the kernel's headers define them (`rdma/ib_user_verbs.h`,
//! `rdma/mlx5-abi.h`, ... through 7.3's `uapi` crate, bindgen), wrapped by [`crate::user_abi!`]
//! so that requests are read and responses written as typed values (`FromBytes`, `AsBytes`)
//! instead of by byte offsets: the core's commands (ib_uverbs) and the drivers' data
//! ([`crate::user::udata::Udata::read_in_as`], [`crate::user::udata::Udata::respond_as`]).

/// Declares wrappers of structures of the `uapi` crate, in the calling crate:
/// `$name = $c;` makes `$name`, `#[repr(transparent)]` over `kernel::uapi::$c`, `FromBytes`
/// and `AsBytes`, dereferencing to the C structure. Its size is the C structure's (`sizeof`),
/// a flexible `driver_data[]` member counting nothing, as in C.
///
/// Only for structures of the user ABI: integers and arrays of integers (or unions of them),
/// laid out by the uapi rules with explicit padding members (no implicit padding), so that
/// every byte pattern is a valid value and every byte of a value is initialised.
#[macro_export]
macro_rules! user_abi {
    ($($(#[$doc:meta])* $name:ident = $c:ident;)*) => {$(
        $(#[$doc])*
        #[repr(transparent)]
        pub(crate) struct $name(pub(crate) ::kernel::uapi::$c);

        // SAFETY: `uapi::$c` is a structure of the user ABI (the macro's rule): any byte
        // pattern is a valid value, and the wrapper is transparent.
        unsafe impl ::kernel::transmute::FromBytes for $name {}

        // SAFETY: `uapi::$c` has no implicit padding (the macro's rule), so all its bytes are
        // initialised; the wrapper is transparent.
        unsafe impl ::kernel::transmute::AsBytes for $name {}

        impl ::core::ops::Deref for $name {
            type Target = ::kernel::uapi::$c;

            fn deref(&self) -> &::kernel::uapi::$c {
                &self.0
            }
        }

        impl ::core::ops::DerefMut for $name {
            fn deref_mut(&mut self) -> &mut ::kernel::uapi::$c {
                &mut self.0
            }
        }
    )*};
}
