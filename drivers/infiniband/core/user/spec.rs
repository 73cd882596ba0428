// SPDX-License-Identifier: GPL-2.0

//! The vocabulary of the uverbs ioctl interface's tree (C's `uverbs_attr_spec`, the
//! `UVERBS_ATTR_*` macros): what each attribute of a method carries, with C's size rules. The
//! core's methods live in `ib_uverbs`; a driver adds its own objects and methods (C's driver
//! `uapi_definition`s, mlx5's UAR object) as [`DriverMethod`]s, and runs them with what
//! [`MethodAttrs`] gives it.

use kernel::prelude::*;

/// `UVERBS_ATTR_UHW_IN` and `UVERBS_ATTR_UHW_OUT`: the driver's request and response.
pub const ATTR_UHW_IN: u16 = 0x1000;
/// See [`ATTR_UHW_IN`].
pub const ATTR_UHW_OUT: u16 = 0x1001;

/// What an attribute carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Data from user space: `min..=max` bytes; with `zero_trailing`, longer is accepted when
    /// the bytes past `max` are zero (C's `UVERBS_ATTR_STRUCT`).
    PtrIn {
        /// Fewest bytes.
        min: u16,
        /// Most bytes.
        max: u16,
        /// Longer accepted when zero past `max`.
        zero_trailing: bool,
    },
    /// A buffer user space gets data in, sized as `PtrIn`.
    PtrOut {
        /// Fewest bytes.
        min: u16,
        /// Most bytes.
        max: u16,
        /// Longer accepted.
        zero_trailing: bool,
    },
    /// A new file descriptor of an fd object (C's `UVERBS_ATTR_FD` with `UVERBS_ACCESS_NEW`).
    FdNew,
    /// The file descriptor of an fd object of type `object` the method reads (C's
    /// `UVERBS_ATTR_FD` with `UVERBS_ACCESS_READ`): a file of this uverbs file's context.
    FdRead {
        /// Its type.
        object: u16,
    },
    /// A file descriptor the method uses as it is (C's `UVERBS_ATTR_RAW_FD`): an `int` given in
    /// the data, length 0.
    RawFd,
    /// The handle of an object of type `object` the method uses (C's `UVERBS_ATTR_IDR` with
    /// `UVERBS_ACCESS_READ`): it must exist (`ENOENT`) and be of that type (`EINVAL`).
    IdrRead {
        /// Its type.
        object: u16,
    },
    /// The handle of a new object of type `object`, written back when the attribute is
    /// processed (C's `UVERBS_ATTR_IDR` with `UVERBS_ACCESS_NEW`).
    IdrNew {
        /// Its type.
        object: u16,
    },
    /// The handle of an object of type `object` the method destroys (C's `UVERBS_ATTR_IDR`
    /// with `UVERBS_ACCESS_DESTROY`).
    IdrDestroy {
        /// Its type.
        object: u16,
    },
}

/// C's `UVERBS_ATTR_CONST_IN`: exactly 8 bytes, inline.
pub const CONST_IN: Kind = Kind::PtrIn {
    min: 8,
    max: 8,
    zero_trailing: false,
};

/// C's `UVERBS_ATTR_FLAGS_IN`: 4 or 8 bytes.
pub const FLAGS_IN: Kind = Kind::PtrIn {
    min: 4,
    max: 8,
    zero_trailing: false,
};

/// C's `UVERBS_ATTR_MIN_SIZE(n)` for input.
pub const fn min_in(n: u16) -> Kind {
    Kind::PtrIn {
        min: n,
        max: u16::MAX,
        zero_trailing: false,
    }
}

/// C's `UVERBS_ATTR_MIN_SIZE(n)` for output.
pub const fn min_out(n: u16) -> Kind {
    Kind::PtrOut {
        min: n,
        max: u16::MAX,
        zero_trailing: false,
    }
}

/// C's `UVERBS_ATTR_TYPE(T)` for input: exactly `n` bytes.
pub const fn type_in(n: u16) -> Kind {
    Kind::PtrIn {
        min: n,
        max: n,
        zero_trailing: false,
    }
}

/// C's `UVERBS_ATTR_TYPE(T)` for output: exactly `n` bytes.
pub const fn type_out(n: u16) -> Kind {
    Kind::PtrOut {
        min: n,
        max: n,
        zero_trailing: false,
    }
}

/// C's `UVERBS_ATTR_STRUCT(T, last)` for input: at least `min`, `max` is `sizeof(T)`, longer
/// accepted when zero past it.
pub const fn struct_in(min: u16, max: u16) -> Kind {
    Kind::PtrIn {
        min,
        max,
        zero_trailing: true,
    }
}

/// C's `UVERBS_ATTR_STRUCT(T, last)` for output: at least `min`, `max` is `sizeof(T)`.
pub const fn struct_out(min: u16, max: u16) -> Kind {
    Kind::PtrOut {
        min,
        max,
        zero_trailing: true,
    }
}

/// One attribute of a method.
#[derive(Debug)]
pub struct AttrSpec {
    /// Its id.
    pub id: u16,
    /// What it carries.
    pub kind: Kind,
    /// Required.
    pub mandatory: bool,
}

/// An attribute spec.
pub const fn attr(id: u16, kind: Kind, mandatory: bool) -> AttrSpec {
    AttrSpec {
        id,
        kind,
        mandatory,
    }
}

/// C's `UVERBS_ATTR_UHW()`: the driver's optional request.
pub const UHW_IN: AttrSpec = attr(ATTR_UHW_IN, min_in(0), false);
/// C's `UVERBS_ATTR_UHW()`: the driver's optional response.
pub const UHW_OUT: AttrSpec = attr(ATTR_UHW_OUT, min_out(0), false);

/// A driver's method (ids from `UVERBS_ID_NS_MASK` up, or a driver object's).
#[derive(Debug)]
pub struct DriverMethod {
    /// Its object's id.
    pub object: u16,
    /// Its id in the object.
    pub method: u16,
    /// Its attributes. A method with an [`Kind::IdrNew`] attribute makes an object; one with
    /// an [`Kind::IdrDestroy`] attribute has the core destroy that object once it succeeded.
    pub attrs: &'static [AttrSpec],
}

/// Attributes a driver adds to one of the core's methods (C's `ADD_UVERBS_ATTRIBUTES_SIMPLE`:
/// mlx5's context response on QUERY_CONTEXT). The core's handler hands them to the driver.
#[derive(Debug)]
pub struct DriverAttrs {
    /// The core method's object.
    pub object: u16,
    /// The core method's id.
    pub method: u16,
    /// The attributes added (ids from `UVERBS_ID_NS_MASK` up).
    pub attrs: &'static [AttrSpec],
}

/// What a driver method reads and writes (C's `uverbs_attr_bundle` accessors).
pub trait MethodAttrs {
    /// The constant `id` (C's `uverbs_get_const`): `ENOENT` when absent, `EINVAL` above `max`.
    fn get_const(&self, id: u16, max: u64) -> Result<u64>;
    /// Input `id` into `to` (C's `uverbs_copy_from`): `ENOENT` when absent, `EINVAL` when it
    /// holds more than `to`; `to` is filled from the start, the rest left as it was.
    fn copy_from(&self, id: u16, to: &mut [u8]) -> Result;
    /// The length user space gave attribute `id` (C's `uverbs_attr_get_len`): `ENOENT` when
    /// absent.
    fn len(&self, id: u16) -> Result<usize>;
    /// Writes `from` to output `id` (C's `uverbs_copy_to`): `ENOENT` when absent.
    fn copy_to(&self, id: u16, from: &[u8]) -> Result;
    /// Writes `from` to output `id` and zeroes the rest of a longer buffer (C's
    /// `uverbs_copy_to_struct_or_zero`): `ENOENT` when absent.
    fn copy_to_struct_or_zero(&self, id: u16, from: &[u8]) -> Result;
    /// The driver's state of the PD handle `id` names (checked by the core to be a PD of the
    /// file, C's `uverbs_attr_get_obj`), for `ib_core`'s typed accessor; `EINVAL` when the
    /// method has no such attribute.
    fn pd_object(&self, id: u16) -> Result<&dyn core::any::Any>;
}

/// A driver's object of user space (mlx5: a UAR): the driver frees it when it is dropped.
pub type DriverUObject = KBox<dyn Send + Sync>;
