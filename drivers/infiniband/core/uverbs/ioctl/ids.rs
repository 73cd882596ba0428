// SPDX-License-Identifier: GPL-2.0

//! The ioctl interface's numbers (C's `ib_user_ioctl_cmds.h`): object ids, and the attribute ids
//! of the methods whose handlers read attributes by name.

/// `UVERBS_OBJECT_DEVICE`.
pub(crate) const OBJECT_DEVICE: u16 = 0;
/// `UVERBS_OBJECT_PD`.
pub(crate) const OBJECT_PD: u16 = 1;
/// `UVERBS_OBJECT_CQ`.
pub(crate) const OBJECT_CQ: u16 = 3;
/// `UVERBS_OBJECT_COMP_CHANNEL`.
pub(crate) const OBJECT_COMP_CHANNEL: u16 = 2;
/// `UVERBS_OBJECT_QP`.
pub(crate) const OBJECT_QP: u16 = 4;
/// `UVERBS_OBJECT_SRQ`.
pub(crate) const OBJECT_SRQ: u16 = 5;
/// `UVERBS_OBJECT_XRCD`.
pub(crate) const OBJECT_XRCD: u16 = 10;
/// `UVERBS_OBJECT_RWQ_IND_TBL`.
pub(crate) const OBJECT_RWQ_IND_TBL: u16 = 11;
/// `UVERBS_OBJECT_AH`.
pub(crate) const OBJECT_AH: u16 = 6;
/// `UVERBS_OBJECT_MR`.
pub(crate) const OBJECT_MR: u16 = 7;
/// `UVERBS_OBJECT_ASYNC_EVENT`.
pub(crate) const OBJECT_ASYNC_EVENT: u16 = 16;

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

/// `UVERBS_METHOD_QUERY_CONTEXT`'s attributes.
pub(crate) mod query_context {
    pub(crate) const NUM_COMP_VECTORS: u16 = 0;
    pub(crate) const CORE_SUPPORT: u16 = 1;
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

/// `UVERBS_METHOD_QUERY_MR`'s attributes.
pub(crate) mod query_mr {
    pub(crate) const HANDLE: u16 = 0;
    pub(crate) const RESP_LKEY: u16 = 1;
    pub(crate) const RESP_RKEY: u16 = 2;
    pub(crate) const RESP_LENGTH: u16 = 3;
    pub(crate) const RESP_IOVA: u16 = 4;
}
