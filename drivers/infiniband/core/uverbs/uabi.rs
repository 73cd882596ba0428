// SPDX-License-Identifier: GPL-2.0

//! The core's user ABI structures (`rdma/ib_user_verbs.h`, `rdma/ib_user_ioctl_verbs.h`) that
//! ib_uverbs reads and writes, as `ib_core::user_abi!` wrappers.

use ib_core::user_abi;

user_abi! {
    /// A write() command's header (`struct ib_uverbs_cmd_hdr`).
    CmdHdr = ib_uverbs_cmd_hdr;
    /// An extended write() command's second header (`struct ib_uverbs_ex_cmd_hdr`).
    ExCmdHdr = ib_uverbs_ex_cmd_hdr;
    /// An ioctl's header (`struct ib_uverbs_ioctl_hdr`), followed by its attributes.
    IoctlHdr = ib_uverbs_ioctl_hdr;
    /// One attribute of an ioctl (`struct ib_uverbs_attr`).
    AttrAbi = ib_uverbs_attr;
    /// ALLOC_PD's request (`struct ib_uverbs_alloc_pd`).
    AllocPd = ib_uverbs_alloc_pd;
    /// ALLOC_PD's response (`struct ib_uverbs_alloc_pd_resp`).
    AllocPdResp = ib_uverbs_alloc_pd_resp;
    /// DEALLOC_PD's request (`struct ib_uverbs_dealloc_pd`).
    DeallocPd = ib_uverbs_dealloc_pd;
    /// REG_MR's request (`struct ib_uverbs_reg_mr`).
    RegMr = ib_uverbs_reg_mr;
    /// REG_MR's response (`struct ib_uverbs_reg_mr_resp`).
    RegMrResp = ib_uverbs_reg_mr_resp;
    /// REREG_MR's request (`struct ib_uverbs_rereg_mr`).
    ReregMr = ib_uverbs_rereg_mr;
    /// REREG_MR's response (`struct ib_uverbs_rereg_mr_resp`).
    ReregMrResp = ib_uverbs_rereg_mr_resp;
    /// DEREG_MR's request (`struct ib_uverbs_dereg_mr`).
    DeregMr = ib_uverbs_dereg_mr;
    /// CREATE_CQ's request (`struct ib_uverbs_create_cq`).
    CreateCq = ib_uverbs_create_cq;
    /// CREATE_CQ's response (`struct ib_uverbs_create_cq_resp`).
    CreateCqResp = ib_uverbs_create_cq_resp;
    /// EX_CREATE_CQ's request (`struct ib_uverbs_ex_create_cq`).
    ExCreateCq = ib_uverbs_ex_create_cq;
    /// EX_CREATE_CQ's response (`struct ib_uverbs_ex_create_cq_resp`).
    ExCreateCqResp = ib_uverbs_ex_create_cq_resp;
    /// DESTROY_CQ's request (`struct ib_uverbs_destroy_cq`).
    DestroyCq = ib_uverbs_destroy_cq;
    /// DESTROY_CQ's response and the CQ DESTROY method's (`struct ib_uverbs_destroy_cq_resp`).
    DestroyCqResp = ib_uverbs_destroy_cq_resp;
    /// CREATE_AH's request (`struct ib_uverbs_create_ah`).
    CreateAh = ib_uverbs_create_ah;
    /// CREATE_AH's response (`struct ib_uverbs_create_ah_resp`).
    CreateAhResp = ib_uverbs_create_ah_resp;
    /// DESTROY_AH's request (`struct ib_uverbs_destroy_ah`).
    DestroyAh = ib_uverbs_destroy_ah;
    /// REQ_NOTIFY_CQ's request (`struct ib_uverbs_req_notify_cq`).
    ReqNotifyCq = ib_uverbs_req_notify_cq;
    /// POST_SEND's response (`struct ib_uverbs_post_send_resp`).
    PostSendResp = ib_uverbs_post_send_resp;
    /// RESIZE_CQ's request (`struct ib_uverbs_resize_cq`).
    ResizeCq = ib_uverbs_resize_cq;
    /// RESIZE_CQ's response (`struct ib_uverbs_resize_cq_resp`).
    ResizeCqResp = ib_uverbs_resize_cq_resp;
    /// CREATE_SRQ's request (`struct ib_uverbs_create_srq`).
    CreateSrq = ib_uverbs_create_srq;
    /// CREATE_XSRQ's request (`struct ib_uverbs_create_xsrq`).
    CreateXsrq = ib_uverbs_create_xsrq;
    /// CREATE_SRQ's and CREATE_XSRQ's response (`struct ib_uverbs_create_srq_resp`).
    CreateSrqResp = ib_uverbs_create_srq_resp;
    /// MODIFY_SRQ's request (`struct ib_uverbs_modify_srq`).
    ModifySrq = ib_uverbs_modify_srq;
    /// QUERY_SRQ's request (`struct ib_uverbs_query_srq`).
    QuerySrq = ib_uverbs_query_srq;
    /// QUERY_SRQ's response (`struct ib_uverbs_query_srq_resp`).
    QuerySrqResp = ib_uverbs_query_srq_resp;
    /// DESTROY_SRQ's request (`struct ib_uverbs_destroy_srq`).
    DestroySrq = ib_uverbs_destroy_srq;
    /// DESTROY_SRQ's response (`struct ib_uverbs_destroy_srq_resp`).
    DestroySrqResp = ib_uverbs_destroy_srq_resp;
    /// A QP's sizes (`struct ib_uverbs_qp_cap`), the QP CREATE method's `CAP` attributes.
    QpCapAbi = ib_uverbs_qp_cap;
    /// MODIFY_QP's request (`struct ib_uverbs_modify_qp`).
    ModifyQp = ib_uverbs_modify_qp;
    /// EX_MODIFY_QP's request (`struct ib_uverbs_ex_modify_qp`).
    ExModifyQp = ib_uverbs_ex_modify_qp;
    /// EX_MODIFY_QP's response (`struct ib_uverbs_ex_modify_qp_resp`).
    ExModifyQpResp = ib_uverbs_ex_modify_qp_resp;
    /// QUERY_QP's request (`struct ib_uverbs_query_qp`).
    QueryQp = ib_uverbs_query_qp;
    /// QUERY_QP's response (`struct ib_uverbs_query_qp_resp`).
    QueryQpResp = ib_uverbs_query_qp_resp;
    /// DESTROY_QP's request (`struct ib_uverbs_destroy_qp`).
    DestroyQp = ib_uverbs_destroy_qp;
    /// DESTROY_QP's response (`struct ib_uverbs_destroy_qp_resp`).
    DestroyQpResp = ib_uverbs_destroy_qp_resp;
    /// GET_CONTEXT's request (`struct ib_uverbs_get_context`).
    GetContext = ib_uverbs_get_context;
    /// GET_CONTEXT's response (`struct ib_uverbs_get_context_resp`).
    GetContextResp = ib_uverbs_get_context_resp;
    /// QUERY_DEVICE's request (`struct ib_uverbs_query_device`).
    QueryDevice = ib_uverbs_query_device;
    /// QUERY_DEVICE's response (`struct ib_uverbs_query_device_resp`).
    QueryDeviceResp = ib_uverbs_query_device_resp;
    /// EX_QUERY_DEVICE's request (`struct ib_uverbs_ex_query_device`).
    ExQueryDevice = ib_uverbs_ex_query_device;
    /// EX_QUERY_DEVICE's response (`struct ib_uverbs_ex_query_device_resp`).
    ExQueryDeviceResp = ib_uverbs_ex_query_device_resp;
    /// QUERY_PORT's request (`struct ib_uverbs_query_port`).
    QueryPort = ib_uverbs_query_port;
    /// QUERY_PORT's response (`struct ib_uverbs_query_port_resp`).
    QueryPortResp = ib_uverbs_query_port_resp;
    /// The QUERY_PORT method's response (`struct ib_uverbs_query_port_resp_ex`).
    QueryPortRespEx = ib_uverbs_query_port_resp_ex;
    /// One GID table entry (`struct ib_uverbs_gid_entry`).
    GidEntry = ib_uverbs_gid_entry;
    /// An async event as read() gives it (`struct ib_uverbs_async_event_desc`); a completion
    /// event is its first member (`struct ib_uverbs_comp_event_desc`).
    AsyncEventDesc = ib_uverbs_async_event_desc;
    /// CREATE_COMP_CHANNEL's request (`struct ib_uverbs_create_comp_channel`).
    CreateCompChannel = ib_uverbs_create_comp_channel;
    /// CREATE_COMP_CHANNEL's response (`struct ib_uverbs_create_comp_channel_resp`).
    CreateCompChannelResp = ib_uverbs_create_comp_channel_resp;
}
