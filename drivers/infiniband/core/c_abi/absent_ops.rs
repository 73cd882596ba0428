// SPDX-License-Identifier: GPL-2.0

//! C's exports that only pass a call to an optional driver op, for the ops no Rust driver has
//! yet (the Rust `DeviceOps` has no entry for them): each answers as C's does for a driver
//! without the op, after the checks C makes first. With C's names and signatures (C's
//! `drivers/infiniband/core/verbs.c`):
//! - SR-IOV: `ib_get_vf_config`, `ib_get_vf_stats`, `ib_set_vf_guid`, `ib_get_vf_guid`,
//!   `ib_set_vf_link_state`: `-EOPNOTSUPP`;
//! - `rdma_set_cq_moderation` (the driver's `modify_cq`): `-EOPNOTSUPP`;
//! - offloaded ULP net devices, `rdma_alloc_netdev` / `rdma_init_netdev` (the driver's
//!   `rdma_netdev_get_params`): `-EOPNOTSUPP`, which IPoIB takes as "use the verbs".
//!
//! Not as C's mlx5_ib, which has all of these ops (the VF ones for a physical function with
//! virtual functions; CQ moderation; enhanced IPoIB where the firmware offers it).

use kernel::{
    bindings,
    ffi::{c_char, c_int, c_uchar},
    prelude::*,
};

/// C's `ib_get_vf_config`: `-EOPNOTSUPP` (no driver here has the op).
#[no_mangle]
pub(crate) extern "C" fn ib_get_vf_config(
    _device: *mut bindings::ib_device,
    _vf: c_int,
    _port: u32,
    _info: *mut bindings::ifla_vf_info,
) -> c_int {
    EOPNOTSUPP.to_errno()
}

/// C's `ib_get_vf_stats`: `-EOPNOTSUPP` (no driver here has the op).
#[no_mangle]
pub(crate) extern "C" fn ib_get_vf_stats(
    _device: *mut bindings::ib_device,
    _vf: c_int,
    _port: u32,
    _stats: *mut bindings::ifla_vf_stats,
) -> c_int {
    EOPNOTSUPP.to_errno()
}

/// C's `ib_set_vf_guid`: `-EOPNOTSUPP` (no driver here has the op).
#[no_mangle]
pub(crate) extern "C" fn ib_set_vf_guid(
    _device: *mut bindings::ib_device,
    _vf: c_int,
    _port: u32,
    _guid: u64,
    _type: c_int,
) -> c_int {
    EOPNOTSUPP.to_errno()
}

/// C's `ib_get_vf_guid`: `-EOPNOTSUPP` (no driver here has the op).
#[no_mangle]
pub(crate) extern "C" fn ib_get_vf_guid(
    _device: *mut bindings::ib_device,
    _vf: c_int,
    _port: u32,
    _node_guid: *mut bindings::ifla_vf_guid,
    _port_guid: *mut bindings::ifla_vf_guid,
) -> c_int {
    EOPNOTSUPP.to_errno()
}

/// C's `ib_set_vf_link_state`: `-EOPNOTSUPP` (no driver here has the op).
#[no_mangle]
pub(crate) extern "C" fn ib_set_vf_link_state(
    _device: *mut bindings::ib_device,
    _vf: c_int,
    _port: u32,
    _state: c_int,
) -> c_int {
    EOPNOTSUPP.to_errno()
}

/// C's `rdma_set_cq_moderation`: `-EOPNOTSUPP` (a shared CQ, or no `modify_cq` op, which no
/// driver here has).
#[no_mangle]
pub(crate) extern "C" fn rdma_set_cq_moderation(
    _cq: *mut bindings::ib_cq,
    _cq_count: u16,
    _cq_period: u16,
) -> c_int {
    EOPNOTSUPP.to_errno()
}

/// The setup callback of a ULP net device.
type NetdevSetup = Option<unsafe extern "C" fn(*mut bindings::net_device)>;

/// C's `rdma_alloc_netdev`: `ERR_PTR(-EOPNOTSUPP)` (no driver here offers offloaded net
/// devices).
#[no_mangle]
pub(crate) extern "C" fn rdma_alloc_netdev(
    _device: *mut bindings::ib_device,
    _port_num: u32,
    _type: bindings::rdma_netdev_t,
    _name: *const c_char,
    _name_assign_type: c_uchar,
    _setup: NetdevSetup,
) -> *mut bindings::net_device {
    crate::c_abi::object::err_ptr(EOPNOTSUPP)
}

/// C's `rdma_init_netdev`: `-EOPNOTSUPP` (no driver here offers offloaded net devices).
#[no_mangle]
pub(crate) extern "C" fn rdma_init_netdev(
    _device: *mut bindings::ib_device,
    _port_num: u32,
    _type: bindings::rdma_netdev_t,
    _name: *const c_char,
    _name_assign_type: c_uchar,
    _setup: NetdevSetup,
    _netdev: *mut bindings::net_device,
) -> c_int {
    EOPNOTSUPP.to_errno()
}
