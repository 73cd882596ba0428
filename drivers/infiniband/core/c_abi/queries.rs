// SPDX-License-Identifier: GPL-2.0

//! Device and port queries with C's names and signatures (C's
//! `drivers/infiniband/core/device.c`): `ib_query_port`, `ib_query_pkey`, `ib_find_pkey`,
//! `ib_find_gid`, `ib_get_device_fw_str`, `rdma_dev_access_netns`, and `ib_modify_port`; and
//! `rdma_node_get_transport` (`verbs.c`).

use crate::netlink;
use crate::{
    attrs::{LinkLayer, PortAttr, CORE_CAP_PROT_IB},
    c_abi::face::{int, CFace},
};
use kernel::{bindings, ffi::c_int, net::namespace::Net, prelude::*};

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
    // SAFETY: `device` is a face's or a C driver's structure (contract).
    if unsafe { crate::c_abi::face::is_driver_device(device) } {
        // A C driver asks about its own device, maybe while registering it (rxe's
        // `get_port_immutable` does): its op answers, as in C.
        // SAFETY: The caller's contract.
        return unsafe { driver_query_port(device, port_num, port_attr) };
    }
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

/// [`ib_query_port`] on a C driver's own structure: its `query_port` into the zeroed
/// `port_attr` (C's `__ib_query_port`; an InfiniBand port's subnet prefix from the core's
/// cache once the device is registered, when the driver left it 0).
///
/// # Safety
///
/// `device` is a C driver's structure; `port_attr` is writable.
unsafe fn driver_query_port(
    device: *mut bindings::ib_device,
    port_num: u32,
    port_attr: *mut bindings::ib_port_attr,
) -> c_int {
    // SAFETY: The caller's contract.
    if !unsafe { crate::c_abi::face::port_valid(device, port_num) } {
        return EINVAL.to_errno();
    }
    // SAFETY: As above.
    let c = unsafe { &*device };
    let Some(query) = c.ops.query_port else {
        return EOPNOTSUPP.to_errno();
    };
    // SAFETY: `port_attr` is writable (contract); the driver's op on its own structure.
    let r = unsafe {
        core::ptr::write_bytes(port_attr, 0, 1);
        query(device, port_num, port_attr)
    };
    // SAFETY: As above.
    let out = unsafe { &mut *port_attr };
    if r != 0 || out.subnet_prefix != 0 {
        return r;
    }
    // SAFETY: The caller's contract: the structure is alive.
    if let Some(dev) = unsafe { CFace::owner(device) } {
        if dev.link_layer(port_num) == Some(LinkLayer::Infiniband) {
            if let Some(gid) = dev.cached_gid(port_num, 0) {
                let mut prefix = [0u8; 8];
                prefix.copy_from_slice(&gid.0[..8]);
                out.subnet_prefix = u64::from_be_bytes(prefix);
            }
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

/// C's `ib_query_pkey`: P_Key `index` of `port_num` as the driver reads it (not the cache)
/// into `pkey`; `-EINVAL` for a port the device does not have, `-EOPNOTSUPP` for a driver
/// without P_Keys, the driver's errno otherwise. Sleeps.
///
/// # Safety
///
/// `device` is a face handed to the caller and not yet removed; `pkey` is writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_query_pkey(
    device: *mut bindings::ib_device,
    port_num: u32,
    index: u16,
    pkey: *mut u16,
) -> c_int {
    // SAFETY: The caller's contract.
    let dev = match unsafe { CFace::owner_on_port(device, port_num) } {
        Ok(d) => d,
        Err(e) => return e,
    };
    match dev.ops().query_pkey(port_num, index) {
        Ok(p) => {
            // SAFETY: `pkey` is writable (contract).
            unsafe { *pkey = p };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// C's `ib_find_pkey`: the index of `pkey` in `port_num`'s table as the driver reads it,
/// matching the low 15 bits, into `index`: a full member's entry first, else the first limited
/// one; `-ENOENT` for none, the first query's error. Sleeps.
///
/// # Safety
///
/// `device` is a face handed to the caller and not yet removed; `index` is writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_find_pkey(
    device: *mut bindings::ib_device,
    port_num: u32,
    pkey: u16,
    index: *mut u16,
) -> c_int {
    // SAFETY: The caller's contract.
    let dev = match unsafe { CFace::owner_on_port(device, port_num) } {
        Ok(d) => d,
        Err(e) => return e,
    };
    let len = dev.port_immutable(port_num).map_or(0, |i| i.pkey_tbl_len);
    let mut partial = None;
    for i in 0..len {
        let p = match dev.ops().query_pkey(port_num, i) {
            Ok(p) => p,
            Err(e) => return e.to_errno(),
        };
        if p & 0x7fff != pkey & 0x7fff {
            continue;
        }
        if p & 0x8000 != 0 {
            // SAFETY: `index` is writable (contract).
            unsafe { *index = i };
            return 0;
        }
        partial.get_or_insert(i);
    }
    match partial {
        Some(i) => {
            // SAFETY: As above.
            unsafe { *index = i };
            0
        }
        None => ENOENT.to_errno(),
    }
}

/// C's `ib_find_gid`: the port (InfiniBand ports only) and table index where `gid` is, into
/// `port_num` and `index` (which may be null); `-ENOENT` when no port has it.
///
/// # Safety
///
/// `device` is a face handed to the caller and not yet removed; `gid` is readable,
/// `port_num` writable, `index` null or writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_find_gid(
    device: *mut bindings::ib_device,
    gid: *const bindings::ib_gid,
    port_num: *mut u32,
    index: *mut u16,
) -> c_int {
    // SAFETY: The caller's contract.
    let Some(dev) = (unsafe { CFace::owner(device) }) else {
        return ENODEV.to_errno();
    };
    // SAFETY: `gid` is readable (contract); every bit pattern is its raw bytes.
    let want = unsafe { (*gid).raw };
    for port in 1..=dev.port_count() {
        let Some(imm) = dev.port_immutable(port) else {
            continue;
        };
        if imm.core_cap_flags & CORE_CAP_PROT_IB == 0 {
            continue;
        }
        // C leaves zero GIDs out of its table: they are not found.
        let found = (0..imm.gid_tbl_len).find(|&i| {
            dev.cached_gid(port, i)
                .is_some_and(|g| g.0 == want && g.0 != [0; 16])
        });
        if let Some(i) = found {
            // SAFETY: The caller's contract.
            unsafe {
                *port_num = port;
                if !index.is_null() {
                    *index = i as u16;
                }
            }
            return 0;
        }
    }
    ENOENT.to_errno()
}

/// C's `ib_get_device_fw_str`: the firmware version, as sysfs's `fw_ver` shows it, into
/// `str` (empty for a driver that has none).
///
/// # Safety
///
/// `dev` is a face handed to the caller and not yet removed; `str` holds
/// `IB_FW_VERSION_NAME_MAX` bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_get_device_fw_str(
    dev: *mut bindings::ib_device,
    str: *mut core::ffi::c_char,
) {
    // SAFETY: The caller's contract.
    let text = unsafe { CFace::owner(dev) }.map(|d| d.fw_version());
    let bytes = text.as_ref().map_or(&[][..], |t| t.as_bytes());
    let n = bytes
        .len()
        .min(bindings::IB_FW_VERSION_NAME_MAX as usize - 1);
    // SAFETY: `str` holds `IB_FW_VERSION_NAME_MAX` bytes (contract); `n` is below that.
    unsafe {
        core::ptr::copy_nonoverlapping(bytes.as_ptr(), str.cast::<u8>(), n);
        *str.add(n) = 0;
    }
}
