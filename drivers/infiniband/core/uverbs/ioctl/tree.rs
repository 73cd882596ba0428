// SPDX-License-Identifier: GPL-2.0

//! The ioctl interface's tree (C's `uverbs_core_api`, `uverbs_std_types_*.c`): objects, their
//! methods and each method's attributes, with C's ids, kinds, sizes and mandatory flags, as
//! `docs/uverbs-c-facts.md` §3.1 lists them. A request for an (object, method) not here gets
//! C's answer for one it does not know, `EPROTONOSUPPORT`; so does a method C has that is not
//! written yet.

use crate::{
    cmd::cq::create_attr as cq,
    cmd::qp::create_attr as qp,
    cmd::srq::create_attr as srq,
    file::ufile::Ufile,
    ioctl,
    ioctl::bundle::{IoctlBundle, Specs},
    ioctl::ids::{
        async_event_alloc, get_context, invoke_write, mr_destroy, pd_destroy, query_context,
        query_gid_entry, query_mr, query_port, OBJECT_ASYNC_EVENT, OBJECT_COMP_CHANNEL, OBJECT_CQ,
        OBJECT_DEVICE, OBJECT_MR, OBJECT_PD, OBJECT_QP, OBJECT_RWQ_IND_TBL, OBJECT_SRQ,
        OBJECT_XRCD,
    },
};
pub(crate) use ib_core::user::spec::{
    attr, min_in, min_out, struct_in, struct_out, type_in, type_out, AttrSpec, DriverMethod, Kind,
    ATTR_UHW_IN, ATTR_UHW_OUT, CONST_IN, FLAGS_IN, UHW_IN, UHW_OUT,
};
use kernel::prelude::*;

/// An ioctl method handler.
pub(crate) type IoctlHandler = fn(&mut IoctlBundle<'_>) -> Result;

/// One method.
pub(crate) struct MethodSpec {
    /// Its object's id.
    pub(crate) object: u16,
    /// Its id in the object.
    pub(crate) method: u16,
    /// Its attributes (at most `ioctl::bundle::MAX_ATTRS`).
    pub(crate) attrs: &'static [AttrSpec],
    /// The driver's request and response come as `UHW_IN`/`UHW_OUT`.
    pub(crate) has_udata: bool,
    /// What it does.
    pub(crate) handler: IoctlHandler,
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
        handler: ioctl::device::invoke_write,
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
        handler: ioctl::device::query_port,
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
        handler: ioctl::device::get_context,
    },
    MethodSpec {
        object: OBJECT_DEVICE,
        method: 4,
        attrs: &[
            attr(query_context::NUM_COMP_VECTORS, type_out(4), false),
            attr(query_context::CORE_SUPPORT, type_out(8), false),
        ],
        has_udata: false,
        handler: ioctl::device::query_context,
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
        handler: ioctl::device::query_gid_entry,
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
        handler: crate::cmd::pd::destroy_pd,
    },
    MethodSpec {
        object: OBJECT_CQ,
        method: 0,
        attrs: &[
            attr(cq::HANDLE, Kind::IdrNew { object: OBJECT_CQ }, true),
            attr(cq::CQE, type_in(4), true),
            attr(cq::USER_HANDLE, type_in(8), true),
            attr(
                cq::COMP_CHANNEL,
                Kind::FdRead {
                    object: OBJECT_COMP_CHANNEL,
                },
                false,
            ),
            attr(cq::COMP_VECTOR, type_in(4), true),
            attr(cq::FLAGS, FLAGS_IN, false),
            attr(cq::RESP_CQE, type_out(4), true),
            attr(
                cq::EVENT_FD,
                Kind::FdRead {
                    object: OBJECT_ASYNC_EVENT,
                },
                false,
            ),
            attr(cq::BUFFER_VA, type_in(8), false),
            attr(cq::BUFFER_LENGTH, type_in(8), false),
            attr(cq::BUFFER_FD, Kind::RawFd, false),
            attr(cq::BUFFER_OFFSET, type_in(8), false),
            // `struct ib_uverbs_buffer_desc`: 32 bytes.
            attr(cq::BUF_UMEM, type_in(32), false),
            UHW_IN,
            UHW_OUT,
        ],
        has_udata: true,
        handler: crate::cmd::cq::create_ioctl,
    },
    MethodSpec {
        object: OBJECT_CQ,
        method: 1,
        attrs: &[
            attr(
                crate::cmd::cq::destroy_attr::HANDLE,
                Kind::IdrDestroy { object: OBJECT_CQ },
                true,
            ),
            // `struct ib_uverbs_destroy_cq_resp`: 8 bytes.
            attr(crate::cmd::cq::destroy_attr::RESP, type_out(8), true),
        ],
        has_udata: false,
        handler: crate::cmd::cq::destroy_ioctl,
    },
    MethodSpec {
        object: OBJECT_QP,
        method: 0,
        attrs: &[
            attr(qp::HANDLE, Kind::IdrNew { object: OBJECT_QP }, true),
            attr(
                qp::XRCD_HANDLE,
                Kind::IdrRead {
                    object: OBJECT_XRCD,
                },
                false,
            ),
            attr(qp::PD_HANDLE, Kind::IdrRead { object: OBJECT_PD }, false),
            attr(qp::SRQ_HANDLE, Kind::IdrRead { object: OBJECT_SRQ }, false),
            attr(
                qp::SEND_CQ_HANDLE,
                Kind::IdrRead { object: OBJECT_CQ },
                false,
            ),
            attr(
                qp::RECV_CQ_HANDLE,
                Kind::IdrRead { object: OBJECT_CQ },
                false,
            ),
            attr(
                qp::IND_TABLE_HANDLE,
                Kind::IdrRead {
                    object: OBJECT_RWQ_IND_TBL,
                },
                false,
            ),
            attr(qp::USER_HANDLE, type_in(8), true),
            // `struct ib_uverbs_qp_cap` up to `max_inline_data`: 20 bytes.
            attr(qp::CAP, struct_in(20, 20), true),
            attr(qp::TYPE, CONST_IN, true),
            attr(qp::FLAGS, FLAGS_IN, false),
            attr(qp::SOURCE_QPN, type_in(4), false),
            attr(
                qp::EVENT_FD,
                Kind::FdRead {
                    object: OBJECT_ASYNC_EVENT,
                },
                false,
            ),
            attr(qp::RESP_CAP, struct_out(20, 20), true),
            attr(qp::RESP_QP_NUM, type_out(4), true),
            // `struct ib_uverbs_buffer_desc`: 32 bytes.
            attr(qp::BUF_UMEM, type_in(32), false),
            attr(qp::RQ_BUF_UMEM, type_in(32), false),
            attr(qp::SQ_BUF_UMEM, type_in(32), false),
            UHW_IN,
            UHW_OUT,
        ],
        has_udata: true,
        handler: crate::cmd::qp::create_ioctl,
    },
    MethodSpec {
        object: OBJECT_QP,
        method: 1,
        attrs: &[
            attr(
                crate::cmd::qp::destroy_attr::HANDLE,
                Kind::IdrDestroy { object: OBJECT_QP },
                true,
            ),
            // `struct ib_uverbs_destroy_qp_resp`: 4 bytes.
            attr(crate::cmd::qp::destroy_attr::RESP, type_out(4), true),
        ],
        has_udata: false,
        handler: crate::cmd::qp::destroy_ioctl,
    },
    MethodSpec {
        object: OBJECT_SRQ,
        method: 0,
        attrs: &[
            attr(srq::HANDLE, Kind::IdrNew { object: OBJECT_SRQ }, true),
            attr(srq::PD_HANDLE, Kind::IdrRead { object: OBJECT_PD }, true),
            attr(srq::TYPE, CONST_IN, true),
            attr(srq::USER_HANDLE, type_in(8), true),
            attr(srq::MAX_WR, type_in(4), true),
            attr(srq::MAX_SGE, type_in(4), true),
            attr(srq::LIMIT, type_in(4), true),
            attr(
                srq::XRCD_HANDLE,
                Kind::IdrRead {
                    object: OBJECT_XRCD,
                },
                false,
            ),
            attr(srq::CQ_HANDLE, Kind::IdrRead { object: OBJECT_CQ }, false),
            attr(srq::MAX_NUM_TAGS, type_in(4), false),
            attr(
                srq::EVENT_FD,
                Kind::FdRead {
                    object: OBJECT_ASYNC_EVENT,
                },
                false,
            ),
            attr(srq::RESP_MAX_WR, type_out(4), true),
            attr(srq::RESP_MAX_SGE, type_out(4), true),
            attr(srq::RESP_SRQ_NUM, type_out(4), false),
            // `struct ib_uverbs_buffer_desc`: 32 bytes.
            attr(srq::BUF_UMEM, type_in(32), false),
            UHW_IN,
            UHW_OUT,
        ],
        has_udata: true,
        handler: crate::cmd::srq::create_ioctl,
    },
    MethodSpec {
        object: OBJECT_SRQ,
        method: 1,
        attrs: &[
            attr(
                crate::cmd::srq::destroy_attr::HANDLE,
                Kind::IdrDestroy { object: OBJECT_SRQ },
                true,
            ),
            // `struct ib_uverbs_destroy_srq_resp`: 4 bytes.
            attr(crate::cmd::srq::destroy_attr::RESP, type_out(4), true),
        ],
        has_udata: false,
        handler: crate::cmd::srq::destroy_ioctl,
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
        handler: crate::cmd::mr::destroy_mr,
    },
    MethodSpec {
        object: OBJECT_MR,
        method: 3,
        attrs: &[
            attr(query_mr::HANDLE, Kind::IdrRead { object: OBJECT_MR }, true),
            attr(query_mr::RESP_LKEY, type_out(4), true),
            attr(query_mr::RESP_RKEY, type_out(4), true),
            attr(query_mr::RESP_LENGTH, type_out(8), true),
            attr(query_mr::RESP_IOVA, type_out(8), false),
        ],
        has_udata: false,
        handler: crate::cmd::mr::query_mr,
    },
    MethodSpec {
        object: OBJECT_ASYNC_EVENT,
        method: 0,
        attrs: &[attr(async_event_alloc::FD_HANDLE, Kind::FdNew, true)],
        has_udata: false,
        handler: ioctl::device::async_event_alloc,
    },
];

/// A method of the tree.
#[derive(Clone, Copy)]
pub(crate) enum Method {
    /// One of the core's, with the attributes the device's driver added to it.
    Core(&'static MethodSpec, &'static [AttrSpec]),
    /// One of the device's driver's, run by the driver in the file's context.
    Driver(&'static DriverMethod),
}

impl Method {
    /// Its attributes.
    pub(crate) fn attrs(&self) -> Specs<'static> {
        match self {
            Method::Core(m, added) => Specs::new(m.attrs, added),
            Method::Driver(m) => m.attrs.into(),
        }
    }

    /// Whether the driver's request and response come as `UHW_IN`/`UHW_OUT`.
    pub(crate) fn has_udata(&self) -> bool {
        match self {
            Method::Core(m, _) => m.has_udata,
            Method::Driver(_) => false,
        }
    }
}

/// The core's method (`object`, `method`), `EPROTONOSUPPORT` when there is none.
pub(crate) fn lookup_core(object: u16, method: u16) -> Result<&'static MethodSpec> {
    METHODS
        .iter()
        .find(|m| m.object == object && m.method == method)
        .ok_or(EPROTONOSUPPORT)
}

/// The method (`object`, `method`) of `ufile`'s device: the core's (with the attributes the
/// driver added to it), else its driver's; `EPROTONOSUPPORT` when there is none. Once the
/// RDMA device has gone, its driver's methods are `EIO` (C disables their handlers then).
pub(crate) fn lookup(ufile: &Ufile, object: u16, method: u16) -> Result<Method> {
    let ib = ufile.device().ib_device();
    if let Ok(m) = lookup_core(object, method) {
        let added = ib
            .as_ref()
            .and_then(|ib| {
                ib.driver_attrs()
                    .iter()
                    .find(|d| d.object == object && d.method == method)
            })
            .map_or(&[][..], |d| d.attrs);
        return Ok(Method::Core(m, added));
    }
    let ib = ib.ok_or(EIO)?;
    ib.driver_methods()
        .iter()
        .find(|m| m.object == object && m.method == method)
        .map(Method::Driver)
        .ok_or(EPROTONOSUPPORT)
}
