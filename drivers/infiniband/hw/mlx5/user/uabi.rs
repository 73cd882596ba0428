// SPDX-License-Identifier: GPL-2.0

//! mlx5's driver data in user verbs commands (`rdma/mlx5-abi.h`): libmlx5's requests and this
//! driver's responses, as `ib_core::user_abi!` wrappers of the `uapi` crate's structures.

use ib_core::user_abi;

user_abi! {
    /// CREATE_CQ's driver request (`struct mlx5_ib_create_cq`).
    CreateCqReq = mlx5_ib_create_cq;
    /// CREATE_CQ's driver response (`struct mlx5_ib_create_cq_resp`).
    CreateCqResp = mlx5_ib_create_cq_resp;
    /// RESIZE_CQ's driver request (`struct mlx5_ib_resize_cq`).
    ResizeCqReq = mlx5_ib_resize_cq;
    /// CREATE_SRQ's driver request (`struct mlx5_ib_create_srq`).
    CreateSrqReq = mlx5_ib_create_srq;
    /// CREATE_SRQ's driver response (`struct mlx5_ib_create_srq_resp`).
    CreateSrqResp = mlx5_ib_create_srq_resp;
    /// CREATE_QP's driver request (`struct mlx5_ib_create_qp`).
    CreateQpReq = mlx5_ib_create_qp;
    /// CREATE_QP's driver response (`struct mlx5_ib_create_qp_resp`).
    CreateQpResp = mlx5_ib_create_qp_resp;
    /// GET_CONTEXT's driver request, version 2 (`struct mlx5_ib_alloc_ucontext_req_v2`).
    AllocUcontextReq = mlx5_ib_alloc_ucontext_req_v2;
    /// GET_CONTEXT's driver response (`struct mlx5_ib_alloc_ucontext_resp`).
    AllocUcontextResp = mlx5_ib_alloc_ucontext_resp;
    /// QUERY_PORT's response (`struct mlx5_ib_uapi_query_port`).
    QueryPortResp = mlx5_ib_uapi_query_port;
}
