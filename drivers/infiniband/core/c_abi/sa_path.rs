// SPDX-License-Identifier: GPL-2.0

//! Address attributes from SA path records: `ib_init_ah_attr_from_path`, with C's name and
//! signature (C's `sa_query.c`), which ib_cm and rdma_cm use for a connection's primary and
//! alternate paths. InfiniBand and OPA records on InfiniBand ports; RoCE records (a C software
//! driver's port), whose route is resolved from the source GID's net device and whose MAC the
//! record carries.

use crate::{
    addr::{self, l2_eth::gid_to_ip},
    attrs::{Gid, GidType, LinkLayer},
    c_abi::{
        face::CFace,
        gid::{find_on_port, hold_gid_attr},
    },
};
use kernel::{bindings, ffi::c_int, prelude::*};

/// The source path bits a path's source LID keeps: C's SA client takes them from the port's
/// LMC when it makes its SM address handle (`update_sm_ah`), 0x7f before it has one.
fn src_path_mask(lmc: Option<u8>) -> u8 {
    match lmc {
        Some(l) if l < 8 => ((1u16 << l) - 1) as u8,
        _ => 0x7f,
    }
}

/// C's `ib_init_ah_attr_from_path`: `ah_attr` (zeroed first) addresses the path `rec` from
/// `port_num`: its SL, static rate, destination LID and source path bits, and, when the
/// record has a hop limit, a GRH to its destination GID whose source is `gid_attr` (held once
/// more) or the entry of the port holding the record's source GID (held); the caller drops the
/// hold with `rdma_destroy_ah_attr`. 0; `-EINVAL` for a port the device does not have or a
/// RoCE record; `-ENODEV` for a device no longer registered; `-ENOENT` when no entry of the
/// port holds the source GID.
///
/// # Safety
///
/// `device` was handed to the caller and not yet removed; `rec` is readable; `ah_attr` is
/// writable; `gid_attr` is null or held by the caller.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_init_ah_attr_from_path(
    device: *mut bindings::ib_device,
    port_num: u32,
    rec: *mut bindings::sa_path_rec,
    ah_attr: *mut bindings::rdma_ah_attr,
    gid_attr: *const bindings::ib_gid_attr,
) -> c_int {
    // SAFETY: The caller's contract.
    let dev = match unsafe { CFace::owner_on_port(device, port_num) } {
        Ok(d) => d,
        Err(e) => return e,
    };
    // SAFETY: The caller's contract.
    let (r, out) = unsafe { (&mut *rec, &mut *ah_attr) };
    // SAFETY: `rdma_ah_attr` is a plain structure: all zeroes is valid (C's memset).
    *out = unsafe { core::mem::zeroed() };
    if r.rec_type == bindings::sa_path_rec_type_SA_PATH_REC_TYPE_ROCE_V1
        || r.rec_type == bindings::sa_path_rec_type_SA_PATH_REC_TYPE_ROCE_V2
    {
        // SAFETY: The caller's contract.
        return match unsafe { roce_from_path(device, dev, port_num, r, out, gid_attr) } {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        };
    }
    if dev.link_layer(port_num) != Some(LinkLayer::Infiniband) {
        return EINVAL.to_errno();
    }
    out.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB;
    out.sl = r.sl;
    out.port_num = port_num;
    out.static_rate = r.rate;
    // SAFETY: The union member read is the one `rec_type` names.
    let (dlid, slid) = unsafe {
        match r.rec_type {
            bindings::sa_path_rec_type_SA_PATH_REC_TYPE_IB => (
                u32::from(u16::from_be(r.__bindgen_anon_1.ib.dlid)),
                u32::from(u16::from_be(r.__bindgen_anon_1.ib.slid)),
            ),
            bindings::sa_path_rec_type_SA_PATH_REC_TYPE_OPA => (
                u32::from_be(r.__bindgen_anon_1.opa.dlid),
                u32::from_be(r.__bindgen_anon_1.opa.slid),
            ),
            _ => return EINVAL.to_errno(),
        }
    };
    let lmc = dev.query_port(port_num).ok().map(|a| a.lmc);
    // C's setters for an InfiniBand address keep the low 16 bits of the LID (an OPA record's
    // permissive LID only matters to an OPA address).
    out.__bindgen_anon_1.ib = bindings::ib_ah_attr {
        dlid: dlid as u16,
        src_path_bits: (slid as u8) & src_path_mask(lmc),
    };
    if r.hop_limit == 0 {
        return 0;
    }
    // SAFETY: The caller's contract.
    match unsafe { path_grh(device, dev, port_num, r, GidType::Ib, gid_attr, out) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The GRH of a path's address (C's `init_ah_attr_grh_fields`): to the record's destination
/// GID, from `gid_attr` (held once more) or the port's entry holding the record's source GID
/// of type `kind` (held); the caller's `rdma_destroy_ah_attr` puts it.
///
/// # Safety
///
/// As [`ib_init_ah_attr_from_path`].
unsafe fn path_grh(
    device: *mut bindings::ib_device,
    dev: &crate::device::ib_device::IbDevice,
    port_num: u32,
    r: &bindings::sa_path_rec,
    kind: GidType,
    gid_attr: *const bindings::ib_gid_attr,
    out: &mut bindings::rdma_ah_attr,
) -> Result {
    let sgid = if gid_attr.is_null() {
        // SAFETY: Every bit pattern of the GID union is its raw bytes.
        let want = Gid(unsafe { r.sgid.raw });
        find_on_port(device, dev, port_num, &want, kind, core::ptr::null_mut())?
            .as_ptr()
            .cast_const()
    } else {
        // SAFETY: Held by the caller (contract); the new hold is the address attribute's.
        unsafe { hold_gid_attr(gid_attr) };
        gid_attr
    };
    out.ah_flags = bindings::ib_ah_flags_IB_AH_GRH as u8;
    out.grh.dgid = r.dgid;
    out.grh.flow_label = u32::from_be(r.flow_label);
    // SAFETY: `sgid` is held (above).
    out.grh.sgid_index = unsafe { (*sgid).index } as u8;
    out.grh.hop_limit = r.hop_limit;
    out.grh.traffic_class = r.traffic_class;
    out.grh.sgid_attr = sgid;
    Ok(())
}

/// C's `roce_resolve_route_from_path`: a RoCE record's route, from its source GID's net device
/// (`gid_attr`, which must be given) to its destination: `-EINVAL` for GIDs of two families, no
/// entry or one without a net device, or a v1 record whose route is an IP one; the route's
/// errors. Marks the record resolved (then nothing is asked again).
///
/// # Safety
///
/// `gid_attr` is null or held by the caller.
unsafe fn roce_resolve_route(
    r: &mut bindings::sa_path_rec,
    gid_attr: *const bindings::ib_gid_attr,
) -> Result {
    // SAFETY: The RoCE member is the one a RoCE record's type names.
    if unsafe { r.__bindgen_anon_1.roce.route_resolved } {
        return Ok(());
    }
    // SAFETY: Every bit pattern of the GID union is its raw bytes.
    let (sgid, dgid) = unsafe { (r.sgid.raw, r.dgid.raw) };
    let mut src = gid_to_ip(&sgid);
    let dst = gid_to_ip(&dgid);
    if addr::family(&src) != addr::family(&dst) {
        return Err(EINVAL);
    }
    // SAFETY: Held by the caller (contract) when not null.
    if gid_attr.is_null() || unsafe { (*gid_attr).ndev }.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: A plain C structure: all zeroes is valid.
    let mut dev_addr: bindings::rdma_dev_addr = unsafe { core::mem::zeroed() };
    dev_addr.net = kernel::net::namespace::Net::init_net().as_raw();
    dev_addr.sgid_attr = gid_attr;
    // SAFETY: `dev_addr` is ours, its namespace the initial one, its GID entry held (contract).
    unsafe { addr::resolve(&mut src, &dst, &mut dev_addr, false, true)? };
    let ip = dev_addr.network == bindings::rdma_network_type_RDMA_NETWORK_IPV4
        || dev_addr.network == bindings::rdma_network_type_RDMA_NETWORK_IPV6;
    if ip && r.rec_type != bindings::sa_path_rec_type_SA_PATH_REC_TYPE_ROCE_V2 {
        return Err(EINVAL);
    }
    r.__bindgen_anon_1.roce.route_resolved = true;
    Ok(())
}

/// The RoCE half of [`ib_init_ah_attr_from_path`] (C's): a RoCE address with the record's SL,
/// rate and MAC once its route resolves, and a GRH to its destination GID from `gid_attr` (held
/// once more) or the port's entry of the record's source GID and type (held).
///
/// # Safety
///
/// As [`ib_init_ah_attr_from_path`]; `out` is zeroed.
unsafe fn roce_from_path(
    device: *mut bindings::ib_device,
    dev: &crate::device::ib_device::IbDevice,
    port_num: u32,
    r: &mut bindings::sa_path_rec,
    out: &mut bindings::rdma_ah_attr,
    gid_attr: *const bindings::ib_gid_attr,
) -> Result {
    out.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE;
    out.sl = r.sl;
    out.port_num = port_num;
    out.static_rate = r.rate;
    // SAFETY: The caller's contract.
    unsafe { roce_resolve_route(r, gid_attr)? };
    // SAFETY: The RoCE member is the one a RoCE record's type names.
    out.__bindgen_anon_1.roce.dmac = unsafe { r.__bindgen_anon_1.roce.dmac };
    let kind = if r.rec_type == bindings::sa_path_rec_type_SA_PATH_REC_TYPE_ROCE_V1 {
        GidType::RoceV1
    } else {
        GidType::RoceV2
    };
    // SAFETY: The caller's contract.
    unsafe { path_grh(device, dev, port_num, r, kind, gid_attr, out) }
}

#[kernel::macros::kunit_tests(rdma_rs_ib_c_sa_path)]
mod tests {
    use super::*;

    #[test]
    fn path_bits_follow_the_lmc() {
        assert_eq!(src_path_mask(Some(0)), 0);
        assert_eq!(src_path_mask(Some(2)), 3);
        assert_eq!(src_path_mask(Some(7)), 0x7f);
        assert_eq!(src_path_mask(None), 0x7f);
    }
}
