// SPDX-License-Identifier: GPL-2.0

//! Device and port queries with C's names and signatures (C's
//! `drivers/infiniband/core/device.c`): `ib_query_port`, `rdma_dev_access_netns`, and
//! `ib_modify_port`; and `rdma_node_get_transport` (`verbs.c`).

use crate::netlink;
use crate::{
    attrs::{LinkLayer, PortAttr},
    c_abi::face::{int, CFace},
};
use kernel::{bindings, ffi::c_int, net::namespace::Net};

/// C's `struct ib_port_attr` from what the driver reported.
fn fill_port_attr(c: &mut bindings::ib_port_attr, a: &PortAttr) {
    c.state = a.state as bindings::ib_port_state;
    c.max_mtu = a.max_mtu.into();
    c.active_mtu = a.active_mtu.into();
    c.gid_tbl_len = int(a.gid_tbl_len);
    c.port_cap_flags = a.port_cap_flags;
    c.max_msg_sz = a.max_msg_sz;
    c.bad_pkey_cntr = a.bad_pkey_cntr;
    c.qkey_viol_cntr = a.qkey_viol_cntr;
    c.pkey_tbl_len = a.pkey_tbl_len;
    c.sm_lid = a.sm_lid;
    c.lid = a.lid;
    c.lmc = a.lmc;
    c.max_vl_num = a.max_vl_num;
    c.sm_sl = a.sm_sl;
    c.subnet_timeout = a.subnet_timeout;
    c.init_type_reply = a.init_type_reply;
    c.active_width = a.active_width;
    c.active_speed = a.active_speed;
    c.phys_state = a.phys_state;
    c.port_cap_flags2 = a.port_cap_flags2;
}

/// C's `ib_query_port`: the attributes of `port_num` of `device` into `port_attr` (zeroed
/// first); on an InfiniBand port the subnet prefix comes from the GID cache, as C's does.
/// `-EINVAL` for a port the device does not have, `-ENODEV` for a device no longer registered,
/// else the driver's error.
///
/// # Safety
///
/// `device` is a device handed to the caller by a client's `add` and not yet removed from it;
/// `port_attr` points to a writable `struct ib_port_attr`.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_query_port(
    device: *mut bindings::ib_device,
    port_num: u32,
    port_attr: *mut bindings::ib_port_attr,
) -> c_int {
    // SAFETY: `device` is a face's structure, referenced by the caller (contract).
    let dev = match unsafe { CFace::owner_on_port(device, port_num) } {
        Ok(d) => d,
        Err(e) => return e,
    };
    // SAFETY: `port_attr` is writable (contract); C zeroes it before the driver fills it.
    let out = unsafe {
        core::ptr::write_bytes(port_attr, 0, 1);
        &mut *port_attr
    };
    let attr = match dev.query_port(port_num) {
        Ok(a) => a,
        Err(e) => return e.to_errno(),
    };
    fill_port_attr(out, &attr);
    if dev.link_layer(port_num) == Some(LinkLayer::Infiniband) {
        if let Some(gid) = dev.cached_gid(port_num, 0) {
            let mut prefix = [0u8; 8];
            prefix.copy_from_slice(&gid.0[..8]);
            out.subnet_prefix = u64::from_be_bytes(prefix);
        }
    }
    0
}

/// C's `rdma_dev_access_netns`: whether a request from `net` may use `dev` (devices shared by
/// all namespaces, or `net` is the device's: every device lives in the initial namespace here).
///
/// # Safety
///
/// `net` points to a live network namespace (`dev` is not read: where it lives is known).
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_dev_access_netns(
    _dev: *const bindings::ib_device,
    net: *const bindings::net,
) -> bool {
    // SAFETY: `net` is live (contract).
    netlink::net_sees_devices(unsafe { Net::from_raw(net.cast_mut()) })
}

/// C's `ib_modify_port`: sets `port_modify->set_port_cap_mask` and clears
/// `clr_port_cap_mask` in `port_num`'s capability bits through the driver (what ib_cm does
/// with `IB_PORT_CM_SUP`); `port_modify_mask` is not used, as C's mlx5 does not. 0,
/// `-EINVAL` for a port the device does not have, `-ENODEV` for a device no longer registered,
/// `-EOPNOTSUPP` when the driver cannot, or its error.
///
/// # Safety
///
/// `device` was handed to the caller and not yet removed; `port_modify` is readable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_modify_port(
    device: *mut bindings::ib_device,
    port_num: u32,
    _port_modify_mask: c_int,
    port_modify: *mut bindings::ib_port_modify,
) -> c_int {
    // SAFETY: The caller's contract.
    let dev = match unsafe { CFace::owner_on_port(device, port_num) } {
        Ok(d) => d,
        Err(e) => return e,
    };
    // SAFETY: `port_modify` is readable (contract).
    let m = unsafe { &*port_modify };
    match dev.modify_port_caps(port_num, m.set_port_cap_mask, m.clr_port_cap_mask) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// C's `rdma_node_get_transport`: the transport of a node type (`RDMA_NODE_*`): iWARP for an
/// RNIC, the usNIC transports for usNIC nodes, unspecified for an unspecified node, InfiniBand
/// for every other number (CA, switch, router and unknown ones alike, as C answers).
#[no_mangle]
pub(crate) extern "C" fn rdma_node_get_transport(
    node_type: kernel::ffi::c_uint,
) -> bindings::rdma_transport_type {
    match node_type {
        bindings::RDMA_NODE_USNIC => bindings::rdma_transport_type_RDMA_TRANSPORT_USNIC,
        bindings::RDMA_NODE_USNIC_UDP => bindings::rdma_transport_type_RDMA_TRANSPORT_USNIC_UDP,
        bindings::RDMA_NODE_RNIC => bindings::rdma_transport_type_RDMA_TRANSPORT_IWARP,
        bindings::RDMA_NODE_UNSPECIFIED => bindings::rdma_transport_type_RDMA_TRANSPORT_UNSPECIFIED,
        _ => bindings::rdma_transport_type_RDMA_TRANSPORT_IB,
    }
}
