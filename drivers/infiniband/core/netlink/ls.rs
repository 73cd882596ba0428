// SPDX-License-Identifier: GPL-2.0

//! RDMA netlink local services (`RDMA_NL_LS`), as C's `ibnl_ls_cb_table`: user space (ibacm)
//! answers the kernel's path-record and IP-resolution requests without `NLM_F_REQUEST`, and
//! sets their timeout with it. All three ops need `CAP_NET_ADMIN`.
//!
//! This core sends no such request yet (it has no SA client and no address resolution), so an
//! answer never matches a pending one and is dropped, as C drops an answer it does not wait
//! for; the timeout is kept for when it does.

use crate::netlink::{self as rdma_nl, Op};
use kernel::{
    bindings,
    net::netlink_protocol::{flags, AttrPolicy, Policy, Request, Validation},
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
};

/// `IB_SA_LOCAL_SVC_TIMEOUT_MIN`.
const TIMEOUT_MIN_MS: i32 = 100;
/// `IB_SA_LOCAL_SVC_TIMEOUT_DEFAULT`.
const TIMEOUT_DEFAULT_MS: i32 = 2000;
/// `IB_SA_LOCAL_SVC_TIMEOUT_MAX`.
const TIMEOUT_MAX_MS: i32 = 200_000;

/// How long a path query waits for user space (C's `sa_local_svc_timeout_ms`).
static TIMEOUT_MS: Atomic<i32> = Atomic::new(TIMEOUT_DEFAULT_MS);

/// `sizeof(struct ib_path_rec_data)`.
const PATH_REC_DATA_SIZE: u16 = 72;
/// `sizeof(struct rdma_nla_ls_gid)`.
const LS_GID_SIZE: u16 = 16;

/// C's `ib_nl_policy`.
static POLICY: Policy<{ bindings::LS_NLA_TYPE_MAX as usize }> = Policy::new()
    .with(
        bindings::LS_NLA_TYPE_PATH_RECORD as u16,
        AttrPolicy::binary(PATH_REC_DATA_SIZE),
    )
    .with(bindings::LS_NLA_TYPE_TIMEOUT as u16, AttrPolicy::U32)
    .with(bindings::LS_NLA_TYPE_SERVICE_ID as u16, AttrPolicy::U64)
    .with(
        bindings::LS_NLA_TYPE_DGID as u16,
        AttrPolicy::binary(LS_GID_SIZE),
    )
    .with(
        bindings::LS_NLA_TYPE_SGID as u16,
        AttrPolicy::binary(LS_GID_SIZE),
    )
    .with(bindings::LS_NLA_TYPE_TCLASS as u16, AttrPolicy::U8)
    .with(bindings::LS_NLA_TYPE_PKEY as u16, AttrPolicy::U16)
    .with(bindings::LS_NLA_TYPE_QOS_CLASS as u16, AttrPolicy::U16);

fn is_request(req: &Request<'_>) -> bool {
    req.msg().flags() & flags::REQUEST != 0
}

/// `RESOLVE`: a path-record answer (C's `ib_nl_handle_resolve_resp`).
fn resolve_resp(req: &mut Request<'_>) -> Result {
    if is_request(req) {
        return Err(EPERM);
    }
    // No path query waits for this sequence number.
    Ok(())
}

/// `SET_TIMEOUT` (C's `ib_nl_handle_set_timeout`): a request; a timeout outside
/// 100..=200000 ms is clamped, a message without one changes nothing.
fn set_timeout(req: &mut Request<'_>) -> Result {
    if !is_request(req) {
        return Err(EPERM);
    }
    // C parses liberally, without an extended acknowledgement.
    if let Ok(attrs) = req.msg().parse(&POLICY, Validation::Liberal) {
        if let Some(t) = attrs.u32(bindings::LS_NLA_TYPE_TIMEOUT as u16) {
            let t = (t as i32).clamp(TIMEOUT_MIN_MS, TIMEOUT_MAX_MS);
            // No query is pending whose deadline would move with it.
            TIMEOUT_MS.store(t, Relaxed);
        }
    }
    Ok(())
}

/// `IP_RESOLVE`: an address-resolution answer (C's `ib_nl_handle_ip_res_resp`).
fn ip_resolve_resp(req: &mut Request<'_>) -> Result {
    if is_request(req) {
        return Err(EPERM);
    }
    // No address resolution waits for this sequence number.
    Ok(())
}

const fn admin(f: rdma_nl::Callback) -> Op {
    Op {
        doit: Some(f),
        dump: None,
        admin: true,
    }
}

/// The ops, by `RDMA_NL_LS_OP_*`.
static OPS: [Op; crate::netlink::uapi::client::LS_NUM_OPS as usize] = {
    let mut t = [Op::NONE; crate::netlink::uapi::client::LS_NUM_OPS as usize];
    t[bindings::RDMA_NL_LS_OP_RESOLVE as usize] = admin(resolve_resp);
    t[bindings::RDMA_NL_LS_OP_SET_TIMEOUT as usize] = admin(set_timeout);
    t[bindings::RDMA_NL_LS_OP_IP_RESOLVE as usize] = admin(ip_resolve_resp);
    t
};

/// Local services registered with RDMA netlink (C's `rdma_nl_register(RDMA_NL_LS, ...)` in
/// `ib_core_init`); unregistered when dropped.
pub(crate) struct Registration;

impl Registration {
    /// Registers the ops.
    pub(crate) fn new() -> Self {
        rdma_nl::register(crate::netlink::uapi::client::LS, &OPS);
        Self
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        rdma_nl::unregister(crate::netlink::uapi::client::LS);
    }
}
