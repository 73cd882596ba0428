// SPDX-License-Identifier: GPL-2.0

//! The ioctl interface's tree (C's `uverbs_core_api`, `uverbs_std_types_*.c`): objects, their
//! methods and each method's attributes, with C's ids, kinds, sizes and mandatory flags, as
//! `docs/uverbs-c-facts.md` §3.1 lists them. A request for an (object, method) not here gets
//! C's answer for one it does not know, `EPROTONOSUPPORT`; so does a method C has that is not
//! written yet.

use crate::{ioctl::IoctlBundle, ioctl_device};
use kernel::prelude::*;

/// `UVERBS_OBJECT_DEVICE`.
pub(crate) const OBJECT_DEVICE: u16 = 0;
/// `UVERBS_OBJECT_PD`.
pub(crate) const OBJECT_PD: u16 = 1;
/// `UVERBS_OBJECT_MR`.
pub(crate) const OBJECT_MR: u16 = 7;
/// `UVERBS_OBJECT_ASYNC_EVENT`.
pub(crate) const OBJECT_ASYNC_EVENT: u16 = 16;
/// `UVERBS_ATTR_UHW_IN` and `UVERBS_ATTR_UHW_OUT`: the driver's request and response.
pub(crate) const ATTR_UHW_IN: u16 = 0x1000;
pub(crate) const ATTR_UHW_OUT: u16 = 0x1001;

/// What an attribute carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Data from user space: `min..=max` bytes; with `zero_trailing`, longer is accepted when
    /// the bytes past `max` are zero (C's `UVERBS_ATTR_STRUCT`).
    PtrIn {
        min: u16,
        max: u16,
        zero_trailing: bool,
    },
    /// A buffer user space gets data in, sized as `PtrIn`.
    PtrOut {
        min: u16,
        max: u16,
        zero_trailing: bool,
    },
    /// A new file descriptor of an fd object (C's `UVERBS_ATTR_FD` with `UVERBS_ACCESS_NEW`).
    FdNew,
    /// The handle of an object of type `object` the method destroys (C's `UVERBS_ATTR_IDR`
    /// with `UVERBS_ACCESS_DESTROY`).
    IdrDestroy { object: u16 },
}

/// C's `UVERBS_ATTR_CONST_IN`: exactly 8 bytes, inline.
const CONST_IN: Kind = Kind::PtrIn {
    min: 8,
    max: 8,
    zero_trailing: false,
};
/// C's `UVERBS_ATTR_FLAGS_IN`: 4 or 8 bytes.
const FLAGS_IN: Kind = Kind::PtrIn {
    min: 4,
    max: 8,
    zero_trailing: false,
};
/// C's `UVERBS_ATTR_MIN_SIZE(n)` for input.
const fn min_in(n: u16) -> Kind {
    Kind::PtrIn {
        min: n,
        max: u16::MAX,
        zero_trailing: false,
    }
}
/// C's `UVERBS_ATTR_MIN_SIZE(n)` for output.
const fn min_out(n: u16) -> Kind {
    Kind::PtrOut {
        min: n,
        max: u16::MAX,
        zero_trailing: false,
    }
}
/// C's `UVERBS_ATTR_TYPE(T)` for output: exactly `n` bytes.
const fn type_out(n: u16) -> Kind {
    Kind::PtrOut {
        min: n,
        max: n,
        zero_trailing: false,
    }
}
/// C's `UVERBS_ATTR_STRUCT(T, last)` for output: at least `min`, `max` is `sizeof(T)`.
const fn struct_out(min: u16, max: u16) -> Kind {
    Kind::PtrOut {
        min,
        max,
        zero_trailing: true,
    }
}

/// One attribute of a method.
#[derive(Debug)]
pub(crate) struct AttrSpec {
    /// Its id.
    pub(crate) id: u16,
    /// What it carries.
    pub(crate) kind: Kind,
    /// Required.
    pub(crate) mandatory: bool,
}

const fn attr(id: u16, kind: Kind, mandatory: bool) -> AttrSpec {
    AttrSpec {
        id,
        kind,
        mandatory,
    }
}

/// C's `UVERBS_ATTR_UHW()`: the driver's optional request and response.
const UHW_IN: AttrSpec = attr(ATTR_UHW_IN, min_in(0), false);
const UHW_OUT: AttrSpec = attr(ATTR_UHW_OUT, min_out(0), false);

/// An ioctl method handler.
pub(crate) type IoctlHandler = fn(&mut IoctlBundle<'_>) -> Result;

/// One method.
pub(crate) struct MethodSpec {
    /// Its object's id.
    pub(crate) object: u16,
    /// Its id in the object.
    pub(crate) method: u16,
    /// Its attributes (at most [`MAX_ATTRS`]).
    pub(crate) attrs: &'static [AttrSpec],
    /// The driver's request and response come as `UHW_IN`/`UHW_OUT`.
    pub(crate) has_udata: bool,
    /// What it does.
    pub(crate) handler: IoctlHandler,
}

/// The most attributes a method here has.
pub(crate) const MAX_ATTRS: usize = 8;

/// `UVERBS_METHOD_INVOKE_WRITE`'s attributes.
pub(crate) mod invoke_write {
    pub(crate) const CORE_IN: u16 = 0;
    pub(crate) const CORE_OUT: u16 = 1;
    pub(crate) const WRITE_CMD: u16 = 2;
}

/// `UVERBS_METHOD_GET_CONTEXT`'s attributes.
pub(crate) mod get_context {
    pub(crate) const NUM_COMP_VECTORS: u16 = 0;
    pub(crate) const CORE_SUPPORT: u16 = 1;
    pub(crate) const FD_ARR: u16 = 2;
}

/// `UVERBS_METHOD_QUERY_PORT`'s attributes.
pub(crate) mod query_port {
    pub(crate) const PORT_NUM: u16 = 0;
    pub(crate) const RESP: u16 = 1;
}

/// `UVERBS_METHOD_QUERY_GID_ENTRY`'s attributes.
pub(crate) mod query_gid_entry {
    pub(crate) const PORT: u16 = 0;
    pub(crate) const GID_INDEX: u16 = 1;
    pub(crate) const FLAGS: u16 = 2;
    pub(crate) const RESP_ENTRY: u16 = 3;
}

/// `UVERBS_METHOD_ASYNC_EVENT_ALLOC`'s attribute.
pub(crate) mod async_event_alloc {
    pub(crate) const FD_HANDLE: u16 = 0;
}

/// `UVERBS_METHOD_PD_DESTROY`'s attribute.
pub(crate) mod pd_destroy {
    pub(crate) const HANDLE: u16 = 0;
}

/// `UVERBS_METHOD_MR_DESTROY`'s attribute.
pub(crate) mod mr_destroy {
    pub(crate) const HANDLE: u16 = 0;
}

/// The methods written so far.
pub(crate) static METHODS: &[MethodSpec] = &[
    MethodSpec {
        object: OBJECT_DEVICE,
        method: 0,
        attrs: &[
            attr(invoke_write::CORE_IN, min_in(4), false),
            attr(invoke_write::CORE_OUT, min_out(0), false),
            attr(invoke_write::WRITE_CMD, CONST_IN, true),
            UHW_IN,
            UHW_OUT,
        ],
        has_udata: true,
        handler: ioctl_device::invoke_write,
    },
    MethodSpec {
        object: OBJECT_DEVICE,
        method: 2,
        attrs: &[
            attr(query_port::PORT_NUM, CONST_IN, true),
            // `struct ib_uverbs_query_port_resp_ex` up to `active_speed_ex`: 48 bytes.
            attr(query_port::RESP, struct_out(48, 48), true),
        ],
        has_udata: false,
        handler: ioctl_device::query_port,
    },
    MethodSpec {
        object: OBJECT_DEVICE,
        method: 3,
        attrs: &[
            attr(get_context::NUM_COMP_VECTORS, type_out(4), false),
            attr(get_context::CORE_SUPPORT, type_out(8), false),
            attr(get_context::FD_ARR, min_in(4), false),
            UHW_IN,
            UHW_OUT,
        ],
        has_udata: true,
        handler: ioctl_device::get_context,
    },
    MethodSpec {
        object: OBJECT_DEVICE,
        method: 6,
        attrs: &[
            attr(query_gid_entry::PORT, CONST_IN, true),
            attr(query_gid_entry::GID_INDEX, CONST_IN, true),
            attr(query_gid_entry::FLAGS, FLAGS_IN, true),
            // `struct ib_uverbs_gid_entry` up to `netdev_ifindex`: 32 bytes.
            attr(query_gid_entry::RESP_ENTRY, struct_out(32, 32), true),
        ],
        has_udata: false,
        handler: ioctl_device::query_gid_entry,
    },
    MethodSpec {
        object: OBJECT_PD,
        method: 0,
        attrs: &[attr(
            pd_destroy::HANDLE,
            Kind::IdrDestroy { object: OBJECT_PD },
            true,
        )],
        has_udata: false,
        handler: crate::cmd_pd::destroy_pd,
    },
    MethodSpec {
        object: OBJECT_MR,
        method: 1,
        attrs: &[attr(
            mr_destroy::HANDLE,
            Kind::IdrDestroy { object: OBJECT_MR },
            true,
        )],
        has_udata: false,
        handler: crate::cmd_mr::destroy_mr,
    },
    MethodSpec {
        object: OBJECT_ASYNC_EVENT,
        method: 0,
        attrs: &[attr(async_event_alloc::FD_HANDLE, Kind::FdNew, true)],
        has_udata: false,
        handler: ioctl_device::async_event_alloc,
    },
];

/// The method (`object`, `method`), `EPROTONOSUPPORT` when there is none.
pub(crate) fn lookup(object: u16, method: u16) -> Result<&'static MethodSpec> {
    METHODS
        .iter()
        .find(|m| m.object == object && m.method == method)
        .ok_or(EPROTONOSUPPORT)
}
