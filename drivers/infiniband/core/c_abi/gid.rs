// SPDX-License-Identifier: GPL-2.0

//! GIDs and address attributes for C modules: `rdma_query_gid`, `rdma_get_gid_attr`,
//! `rdma_read_gid_attr_ndev_rcu`, `roce_gid_type_mask_support`, `rdma_find_gid`,
//! `rdma_find_gid_by_port`, `rdma_put_gid_attr`, `rdma_destroy_ah_attr`, `rdma_move_ah_attr`,
//! `ib_init_ah_attr_from_wc` and `ib_create_ah_from_wc`, with C's names and signatures (C's
//! `drivers/infiniband/core/cache.c` and `verbs.c`). The GIDs are the core's GID cache's (an
//! InfiniBand port's table as the driver reported it; C leaves zero GIDs out of its table, so
//! they are not entries here either). A `struct ib_gid_attr` C code holds is counted: the core
//! makes one per `rdma_find_gid` (or per address a completion's GRH names) and frees it at the
//! last `rdma_put_gid_attr`, as C's table entry is held and put. On a RoCE port (a C software
//! driver's), a completion's address is read from its packet's network header (a GRH, or RoCE
//! v2's IPv4 or IPv6 header) and answered through the IP stack's next hop, as C does.

use crate::{
    attrs::{Gid, GidType, CORE_CAP_PROT_ROCE, CORE_CAP_PROT_ROCE_UDP_ENCAP},
    c_abi::{
        ah::rdma_create_ah,
        face::CFace,
        object::{err_ptr, Faced},
    },
    device::gid_table::GidEntry,
    device::ib_device::IbDevice,
};
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicU32, Ordering},
};
use kernel::{
    bindings,
    ffi::{c_int, c_uint},
    net::route::NetDevice,
    prelude::*,
    sync::aref::ARef,
};

/// The count of a GID attribute C code holds, and the net device its entry names (held while
/// the attribute is).
pub(crate) struct CGid {
    refs: AtomicU32,
    _ndev: Option<ARef<NetDevice>>,
}

/// A GID attribute as C holds it.
type GidObject = Faced<CGid, bindings::ib_gid_attr>;

/// The entry `index` of `port`'s GID table, if it holds a GID (C leaves zero GIDs out).
fn entry(dev: &IbDevice, port: u32, index: u32) -> Option<GidEntry> {
    dev.gid_entry(port, index).filter(|e| !e.is_empty())
}

/// The index of the first entry of `port`'s table holding `gid` of type `kind` (and, when
/// given, on the net device `ndev`), as C's `find_gid` with its masks.
fn index_of(
    dev: &IbDevice,
    port: u32,
    gid: &Gid,
    kind: GidType,
    ndev: *mut bindings::net_device,
) -> Option<u32> {
    let len = dev.port_immutable(port)?.gid_tbl_len;
    (0..len).find(|&i| {
        entry(dev, port, i).is_some_and(|e| {
            e.gid == *gid
                && e.kind == kind
                && (ndev.is_null() || e.ndev.as_ref().map(|n| n.as_raw()) == Some(ndev))
        })
    })
}

/// The GID type C names `t`, if it is one.
fn gid_type_from_c(t: bindings::ib_gid_type) -> Option<GidType> {
    match t {
        bindings::ib_gid_type_IB_GID_TYPE_IB => Some(GidType::Ib),
        bindings::ib_gid_type_IB_GID_TYPE_ROCE => Some(GidType::RoceV1),
        bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP => Some(GidType::RoceV2),
        _ => None,
    }
}

/// A held GID attribute for entry `index` of `port` of the device structure `device`.
fn new_attr(
    device: *mut bindings::ib_device,
    port: u32,
    index: u32,
    e: GidEntry,
) -> Result<NonNull<bindings::ib_gid_attr>> {
    let ndev = e
        .ndev
        .as_ref()
        .map_or(core::ptr::null_mut(), |n| n.as_raw());
    // Atomic: C looks GIDs up under its own spinlocks (ib_cm's `rdma_find_gid` under its
    // device list's lock), where C's cache only takes a reference.
    let c = GidObject::alloc_with(
        CGid {
            refs: AtomicU32::new(1),
            _ndev: e.ndev,
        },
        GFP_ATOMIC,
    )?;
    // SAFETY: `c` is the zeroed structure just allocated, not yet handed out.
    let a = unsafe { &mut *c.as_ptr() };
    a.device = device;
    a.gid.raw = e.gid.0;
    a.gid_type = e.kind as bindings::ib_gid_type;
    a.ndev = ndev;
    a.index = u16::try_from(index).map_err(|_| EINVAL)?;
    a.port_num = port;
    Ok(c)
}

/// C's `rdma_query_gid`: copies entry `index` of `port_num`'s GID table into `gid`; 0,
/// `-EINVAL` for a port the device does not have or an index past the table, `-ENOENT` for an
/// entry without a GID.
///
/// # Safety
///
/// `device` is a face handed to the caller and not yet removed; `gid` is writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_query_gid(
    device: *mut bindings::ib_device,
    port_num: u32,
    index: c_int,
    gid: *mut bindings::ib_gid,
) -> c_int {
    // SAFETY: The caller's contract.
    let dev = match unsafe { CFace::owner_on_port(device, port_num) } {
        Ok(d) => d,
        Err(e) => return e,
    };
    let len = dev.port_immutable(port_num).map_or(0, |i| i.gid_tbl_len);
    let Some(index) = u32::try_from(index).ok().filter(|&i| i < len) else {
        return EINVAL.to_errno();
    };
    match entry(dev, port_num, index) {
        Some(e) => {
            // SAFETY: `gid` is writable (contract).
            unsafe { (*gid).raw = e.gid.0 };
            0
        }
        None => ENOENT.to_errno(),
    }
}

/// C's `rdma_get_gid_attr`: the attribute of entry `index` of `port_num`'s GID table, held
/// for the caller until its `rdma_put_gid_attr`; `ERR_PTR(-EINVAL)` for a port the device
/// does not have or an index outside the table, `ERR_PTR(-ENODATA)` for an entry without a
/// GID. Does not sleep.
///
/// # Safety
///
/// `device` is a face handed to the caller and not yet removed.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_get_gid_attr(
    device: *mut bindings::ib_device,
    port_num: u32,
    index: c_int,
) -> *const bindings::ib_gid_attr {
    // SAFETY: The caller's contract.
    let dev = match unsafe { CFace::owner_on_port(device, port_num) } {
        Ok(d) => d,
        Err(_) => return err_ptr(EINVAL),
    };
    let len = dev.port_immutable(port_num).map_or(0, |i| i.gid_tbl_len);
    let Some(index) = u32::try_from(index).ok().filter(|&i| i < len) else {
        return err_ptr(EINVAL);
    };
    let Some(e) = entry(dev, port_num, index) else {
        return err_ptr(ENODATA);
    };
    match new_attr(device, port_num, index, e) {
        Ok(a) => a.as_ptr(),
        Err(e) => err_ptr(e),
    }
}

/// C's `rdma_read_gid_attr_ndev_rcu`: the net device of the held attribute `attr`, valid in
/// the caller's RCU read section. This core's entries are InfiniBand ones, which have none:
/// `ERR_PTR(-ENODEV)`, as C answers for them.
///
/// # Safety
///
/// `attr` is held (made by this core); the caller is in an RCU read section.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_read_gid_attr_ndev_rcu(
    attr: *const bindings::ib_gid_attr,
) -> *mut bindings::net_device {
    // SAFETY: `attr` is live (contract).
    let ndev = unsafe { (*attr).ndev };
    if ndev.is_null() {
        err_ptr(ENODEV)
    } else {
        ndev
    }
}

/// C's `roce_gid_type_mask_support`: the GID types `port` supports, as bits of
/// `1 << ib_gid_type`: `IB_GID_TYPE_IB` on a port without RoCE; on a RoCE port RoCE v1 and
/// v2 by its capabilities. (C does not check the port; neither does this, beyond answering
/// `IB_GID_TYPE_IB` for one the device lacks.)
///
/// # Safety
///
/// `ib_dev` is a face handed to the caller and not yet removed.
#[no_mangle]
pub(crate) unsafe extern "C" fn roce_gid_type_mask_support(
    ib_dev: *mut bindings::ib_device,
    port: u32,
) -> core::ffi::c_ulong {
    let ib_only = 1 << bindings::ib_gid_type_IB_GID_TYPE_IB;
    // SAFETY: The caller's contract.
    let Some(dev) = (unsafe { CFace::owner(ib_dev) }) else {
        return ib_only;
    };
    let caps = dev.port_immutable(port).map_or(0, |i| i.core_cap_flags);
    if caps & (CORE_CAP_PROT_ROCE | CORE_CAP_PROT_ROCE_UDP_ENCAP) == 0 {
        return ib_only;
    }
    let mut mask = 0;
    if caps & CORE_CAP_PROT_ROCE != 0 {
        mask |= 1 << bindings::ib_gid_type_IB_GID_TYPE_ROCE;
    }
    if caps & CORE_CAP_PROT_ROCE_UDP_ENCAP != 0 {
        mask |= 1 << bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP;
    }
    mask
}

/// C's `rdma_find_gid`: the attribute of the first entry, port by port, holding `gid` (an
/// InfiniBand GID: `gid_type` `IB_GID_TYPE_IB`, no `ndev`), held for the caller until its
/// `rdma_put_gid_attr`; `ERR_PTR(-ENOENT)` when no port has it.
///
/// # Safety
///
/// `device` is a face handed to the caller and not yet removed; `gid` is readable.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_find_gid(
    device: *mut bindings::ib_device,
    gid: *const bindings::ib_gid,
    gid_type: bindings::ib_gid_type,
    ndev: *mut bindings::net_device,
) -> *const bindings::ib_gid_attr {
    // SAFETY: The caller's contract.
    let Some(dev) = (unsafe { CFace::owner(device) }) else {
        return err_ptr(ENODEV);
    };
    let Some(kind) = gid_type_from_c(gid_type) else {
        return err_ptr(ENOENT);
    };
    // SAFETY: `gid` is readable (contract); every bit pattern is its raw bytes.
    let want = Gid(unsafe { (*gid).raw });
    for port in 1..=dev.port_count() {
        if let Some(i) = index_of(dev, port, &want, kind, ndev) {
            let Some(e) = entry(dev, port, i) else {
                continue;
            };
            return match new_attr(device, port, i, e) {
                Ok(a) => a.as_ptr(),
                Err(e) => err_ptr(e),
            };
        }
    }
    err_ptr(ENOENT)
}

/// C's `rdma_find_gid_by_port`: the attribute of the entry of `port` holding `gid` of
/// `gid_type` (with `ndev`, one on that net device: an InfiniBand entry has none), held for the
/// caller until its `rdma_put_gid_attr`; `ERR_PTR(-ENOENT)` when the port has none or the
/// device has no such port.
///
/// # Safety
///
/// `ib_dev` is a face handed to the caller and not yet removed; `gid` is readable.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_find_gid_by_port(
    ib_dev: *mut bindings::ib_device,
    gid: *const bindings::ib_gid,
    gid_type: bindings::ib_gid_type,
    port: u32,
    ndev: *mut bindings::net_device,
) -> *const bindings::ib_gid_attr {
    // SAFETY: The caller's contract.
    let dev = match unsafe { CFace::owner_on_port(ib_dev, port) } {
        Ok(d) => d,
        Err(e) if e == ENODEV.to_errno() => return err_ptr(ENODEV),
        Err(_) => return err_ptr(ENOENT),
    };
    let Some(kind) = gid_type_from_c(gid_type) else {
        return err_ptr(ENOENT);
    };
    // SAFETY: `gid` is readable (contract); every bit pattern is its raw bytes.
    let want = Gid(unsafe { (*gid).raw });
    match find_on_port(ib_dev, dev, port, &want, kind, ndev) {
        Ok(a) => a.as_ptr(),
        Err(e) => err_ptr(e),
    }
}

/// The held attribute of the entry of `port` of `dev` (whose face is `device`) holding `gid`
/// of type `kind` (on `ndev` when not null); `ENOENT` when none does.
pub(crate) fn find_on_port(
    device: *mut bindings::ib_device,
    dev: &IbDevice,
    port: u32,
    gid: &Gid,
    kind: GidType,
    ndev: *mut bindings::net_device,
) -> Result<NonNull<bindings::ib_gid_attr>> {
    let i = index_of(dev, port, gid, kind, ndev).ok_or(ENOENT)?;
    let e = entry(dev, port, i).ok_or(ENOENT)?;
    new_attr(device, port, i, e)
}

/// C's `rdma_hold_gid_attr`: one more hold of `attr` (made by this core).
///
/// # Safety
///
/// `attr` came from [`rdma_find_gid`] or an address attribute this core filled, and is held.
pub(crate) unsafe fn hold_gid_attr(attr: *const bindings::ib_gid_attr) {
    // SAFETY: `attr` is live and held (contract).
    unsafe { GidObject::core(attr.cast_mut()) }
        .refs
        .fetch_add(1, Ordering::Relaxed);
}

/// C's `rdma_put_gid_attr`: drops the caller's hold of `attr` (made by this core); the last
/// one frees it.
///
/// # Safety
///
/// `attr` came from [`rdma_find_gid`] or an address attribute this core filled, and the
/// caller's hold is not used again.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_put_gid_attr(attr: *const bindings::ib_gid_attr) {
    let a = attr.cast_mut();
    // SAFETY: `attr` is live and held (contract).
    let last = unsafe { GidObject::core(a) }
        .refs
        .fetch_sub(1, Ordering::AcqRel)
        == 1;
    if last {
        // SAFETY: The last hold went: nothing uses it any more; freed once.
        unsafe { GidObject::free(a) };
    }
}

/// C's `rdma_destroy_ah_attr`: drops the source GID attribute `ah_attr` holds, if any (safe to
/// call again, or on a zeroed attribute).
///
/// # Safety
///
/// `ah_attr` is writable; its `grh.sgid_attr` is null or held.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_destroy_ah_attr(ah_attr: *mut bindings::rdma_ah_attr) {
    // SAFETY: The caller's contract.
    unsafe {
        let s = (*ah_attr).grh.sgid_attr;
        if !s.is_null() {
            rdma_put_gid_attr(s);
            (*ah_attr).grh.sgid_attr = core::ptr::null();
        }
    }
}

/// C's `rdma_move_ah_attr`: `dest` (its hold dropped first) becomes `src`, which loses its
/// hold to it.
///
/// # Safety
///
/// Both are writable, valid address attributes.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_move_ah_attr(
    dest: *mut bindings::rdma_ah_attr,
    src: *mut bindings::rdma_ah_attr,
) {
    // SAFETY: The caller's contract.
    unsafe {
        rdma_destroy_ah_attr(dest);
        *dest = *src;
        (*src).grh.sgid_attr = core::ptr::null();
    }
}

/// `IB_SA_WELL_KNOWN_GUID`: a GRH to it is answered from GID index 0.
const SA_WELL_KNOWN_GUID: u64 = (1 << 57) | 2;

/// C's `ib_init_ah_attr_from_wc`: the address that answers a completion `wc` received on
/// `port_num` (its sender's LID, SL and path bits; with a GRH, the sender's GID as
/// destination and, as source, the entry of this port holding the GID the packet went to,
/// held in `grh.sgid_attr`); 0, or `-ENOENT` when no entry holds that GID, `-EINVAL` for a
/// port the device does not have.
///
/// # Safety
///
/// `device` is a face handed to the caller and not yet removed; `wc` is readable, `grh` too
/// when the completion says it has one; `ah_attr` is writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_init_ah_attr_from_wc(
    device: *mut bindings::ib_device,
    port_num: u32,
    wc: *const bindings::ib_wc,
    grh: *const bindings::ib_grh,
    ah_attr: *mut bindings::rdma_ah_attr,
) -> c_int {
    // SAFETY: The caller's contract.
    let dev = match unsafe { CFace::owner_on_port(device, port_num) } {
        Ok(d) => d,
        Err(e) => return e,
    };
    // SAFETY: The caller's contract.
    let (w, out) = unsafe { (&*wc, &mut *ah_attr) };
    // SAFETY: `rdma_ah_attr` is a plain structure: all zeroes is valid (C's memset).
    *out = unsafe { core::mem::zeroed() };
    out.sl = w.sl;
    out.port_num = port_num;
    let roce = dev.port_immutable(port_num).is_some_and(|i| {
        i.core_cap_flags & (CORE_CAP_PROT_ROCE | CORE_CAP_PROT_ROCE_UDP_ENCAP) != 0
    });
    if roce {
        // SAFETY: The caller's contract (the GRH area is read only with the flag).
        return match unsafe { roce_from_wc(dev, device, port_num, w, grh, out) } {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        };
    }
    out.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB;
    out.__bindgen_anon_1.ib = bindings::ib_ah_attr {
        dlid: w.slid as u16,
        src_path_bits: w.dlid_path_bits,
    };
    if w.wc_flags as u32 & bindings::ib_wc_flags_IB_WC_GRH == 0 {
        return 0;
    }
    // SAFETY: A completion with a GRH comes with it (contract).
    let g = unsafe { &*grh };
    // SAFETY: Every bit pattern of the GID unions is their raw bytes.
    let (sgid, dgid) = unsafe { (Gid(g.sgid.raw), Gid(g.dgid.raw)) };
    let interface_id = u64::from_be_bytes([
        dgid.0[8], dgid.0[9], dgid.0[10], dgid.0[11], dgid.0[12], dgid.0[13], dgid.0[14],
        dgid.0[15],
    ]);
    let found = if interface_id != SA_WELL_KNOWN_GUID {
        index_of(dev, port_num, &dgid, GidType::Ib, core::ptr::null_mut())
            .and_then(|i| Some((i, entry(dev, port_num, i)?)))
    } else {
        entry(dev, port_num, 0).map(|e| (0, e))
    };
    let Some((index, own)) = found else {
        return ENOENT.to_errno();
    };
    let attr = match new_attr(device, port_num, index, own) {
        Ok(a) => a,
        Err(e) => return e.to_errno(),
    };
    let flow_class = u32::from_be(g.version_tclass_flow);
    out.ah_flags = bindings::ib_ah_flags_IB_AH_GRH as u8;
    out.grh.dgid.raw = sgid.0;
    out.grh.flow_label = flow_class & 0xf_ffff;
    out.grh.sgid_index = index as u8;
    out.grh.hop_limit = 0xff;
    out.grh.traffic_class = ((flow_class >> 20) & 0xff) as u8;
    out.grh.sgid_attr = attr.as_ptr();
    0
}

/// The network header of a RoCE packet (C's `rdma_network_type`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum NetType {
    /// RoCE v1: a GRH.
    RoceV1,
    /// RoCE v2 over IPv4: the IPv4 header in the last 20 bytes of the GRH area.
    Ipv4,
    /// RoCE v2 over IPv6: the IPv6 header in the GRH area.
    Ipv6,
}

/// C's `ib_get_rdma_header_version`: 4 when the GRH area holds a RoCE v2 IPv4 header (version
/// 4, no options, a right checksum, or an area whose first byte is not IPv6's), else 6.
fn header_version(area: &[u8; 40]) -> u8 {
    let ip4 = &area[20..40];
    if area[0] >> 4 != 6 {
        return if ip4[0] >> 4 == 4 { 4 } else { 0 };
    }
    if ip4[0] & 0xf != 5 {
        return 6;
    }
    // The IPv4 header checksum: one's complement sum of its ten 16-bit words, `check` as 0.
    let mut sum = 0u32;
    for (i, w) in ip4.chunks_exact(2).enumerate() {
        if i != 5 {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    if !(sum as u16) == u16::from_be_bytes([ip4[10], ip4[11]]) {
        4
    } else {
        6
    }
}

/// The network type of a RoCE completion (C's, from the completion's flag, else from its
/// header: `ib_get_net_type_by_grh`); `None` for a type C does not know.
fn net_type(w: &bindings::ib_wc, area: &[u8; 40]) -> Option<NetType> {
    if w.wc_flags as u32 & bindings::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE != 0 {
        return match u32::from(w.network_hdr_type) {
            bindings::rdma_network_type_RDMA_NETWORK_ROCE_V1 => Some(NetType::RoceV1),
            bindings::rdma_network_type_RDMA_NETWORK_IPV4 => Some(NetType::Ipv4),
            bindings::rdma_network_type_RDMA_NETWORK_IPV6 => Some(NetType::Ipv6),
            _ => None,
        };
    }
    if header_version(area) == 4 {
        Some(NetType::Ipv4)
    } else if area[6] == bindings::IPPROTO_UDP as u8 {
        // The GRH's next header.
        Some(NetType::Ipv6)
    } else {
        Some(NetType::RoceV1)
    }
}

/// The source and destination GIDs of a RoCE packet's header (C's
/// `ib_get_gids_from_rdma_hdr`): IPv4 addresses as IPv4-mapped GIDs.
fn gids_of(area: &[u8; 40], t: NetType) -> (Gid, Gid) {
    let mut s = [0u8; 16];
    let mut d = [0u8; 16];
    if t == NetType::Ipv4 {
        s[10] = 0xff;
        s[11] = 0xff;
        d[10] = 0xff;
        d[11] = 0xff;
        // The IPv4 header's source and destination, at 12 and 16 of its 20 bytes.
        s[12..].copy_from_slice(&area[32..36]);
        d[12..].copy_from_slice(&area[36..40]);
    } else {
        s.copy_from_slice(&area[8..24]);
        d.copy_from_slice(&area[24..40]);
    }
    (Gid(s), Gid(d))
}

/// The RoCE half of [`ib_init_ah_attr_from_wc`] (C's): the sender's GID from the packet's
/// network header as destination, the entry holding the GID the packet went to (of the
/// header's type) as source, held, and the next hop's MAC and hop limit from the IP stack.
///
/// # Safety
///
/// As [`ib_init_ah_attr_from_wc`]; `out` is zeroed.
unsafe fn roce_from_wc(
    dev: &IbDevice,
    device: *mut bindings::ib_device,
    port_num: u32,
    w: &bindings::ib_wc,
    grh: *const bindings::ib_grh,
    out: &mut bindings::rdma_ah_attr,
) -> Result {
    out.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE;
    if w.wc_flags as u32 & bindings::ib_wc_flags_IB_WC_GRH == 0 {
        return Err(EPROTOTYPE);
    }
    let mut area = [0u8; 40];
    // SAFETY: A completion with a GRH comes with its 40-byte area (contract).
    unsafe { core::ptr::copy_nonoverlapping(grh.cast::<u8>(), area.as_mut_ptr(), 40) };
    let t = net_type(w, &area).ok_or(EINVAL)?;
    let kind = if t == NetType::RoceV1 {
        GidType::RoceV1
    } else {
        GidType::RoceV2
    };
    let (sgid, dgid) = gids_of(&area, t);
    // C's `get_sgid_attr_from_eth` with no VLAN: the entry of that GID and type.
    let index = index_of(dev, port_num, &dgid, kind, core::ptr::null_mut()).ok_or(ENOENT)?;
    let own = entry(dev, port_num, index).ok_or(ENOENT)?;
    let (dmac, hop_limit) = crate::addr::l2_eth::resolve_eth_dmac(&own, &sgid.0)?;
    let attr = new_attr(device, port_num, index, own)?;
    let flow_class = u32::from_be_bytes([area[0], area[1], area[2], area[3]]);
    out.ah_flags = bindings::ib_ah_flags_IB_AH_GRH as u8;
    out.grh.dgid.raw = sgid.0;
    out.grh.flow_label = flow_class & 0xf_ffff;
    out.grh.sgid_index = index as u8;
    out.grh.hop_limit = hop_limit.unwrap_or(0xff);
    out.grh.traffic_class = ((flow_class >> 20) & 0xff) as u8;
    out.grh.sgid_attr = attr.as_ptr();
    out.__bindgen_anon_1.roce.dmac = dmac;
    Ok(())
}

/// C's `ib_create_ah_from_wc`: an AH in `pd` that answers the completion `wc` received on
/// `port_num` ([`ib_init_ah_attr_from_wc`], then `rdma_create_ah`); `ERR_PTR` of the first
/// error.
///
/// # Safety
///
/// `pd` was returned by `__ib_alloc_pd` and not deallocated; `wc` and `grh` as for
/// [`ib_init_ah_attr_from_wc`].
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_create_ah_from_wc(
    pd: *mut bindings::ib_pd,
    wc: *const bindings::ib_wc,
    grh: *const bindings::ib_grh,
    port_num: u32,
) -> *mut bindings::ib_ah {
    // SAFETY: `rdma_ah_attr` is a plain structure: all zeroes is valid.
    let mut attr: bindings::rdma_ah_attr = unsafe { core::mem::zeroed() };
    // SAFETY: `pd` is live, its device a face (contract); `attr` is ours.
    let ret = unsafe { ib_init_ah_attr_from_wc((*pd).device, port_num, wc, grh, &mut attr) };
    if ret != 0 {
        return err_ptr(Error::from_errno(ret));
    }
    // SAFETY: As above.
    let ah = unsafe {
        rdma_create_ah(
            pd,
            &mut attr,
            bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE as c_uint,
        )
    };
    // SAFETY: `attr` holds its source GID attribute, if any.
    unsafe { rdma_destroy_ah_attr(&mut attr) };
    ah
}

#[kernel::macros::kunit_tests(rdma_rs_ib_c_gid_roce)]
mod tests {
    use super::*;

    /// A GRH area holding an IPv4 header (192.168.0.1 to 192.168.0.199, checksum 0xb861) after
    /// `first` and 19 zero bytes.
    fn ipv4_area(first: u8, checksum: [u8; 2]) -> [u8; 40] {
        let mut a = [0u8; 40];
        a[0] = first;
        a[20..40].copy_from_slice(&[
            0x45,
            0x00,
            0x00,
            0x73,
            0x00,
            0x00,
            0x40,
            0x00,
            0x40,
            0x11,
            checksum[0],
            checksum[1],
            0xc0,
            0xa8,
            0x00,
            0x01,
            0xc0,
            0xa8,
            0x00,
            0xc7,
        ]);
        a
    }

    #[test]
    fn the_header_version_is_read_as_c_reads_it() {
        // An IPv4 header after bytes that are not an IPv6 header's.
        assert_eq!(header_version(&ipv4_area(0, [0xb8, 0x61])), 4);
        // After bytes that look like an IPv6 header's: believed for its checksum alone.
        assert_eq!(header_version(&ipv4_area(0x60, [0xb8, 0x61])), 4);
        assert_eq!(header_version(&ipv4_area(0x60, [0xb8, 0x62])), 6);
    }

    #[test]
    fn the_network_type_and_gids_of_a_packet() {
        // SAFETY: A plain C structure: all zeroes is valid (no flags).
        let wc: bindings::ib_wc = unsafe { core::mem::zeroed() };
        let v4 = ipv4_area(0, [0xb8, 0x61]);
        assert!(net_type(&wc, &v4) == Some(NetType::Ipv4));
        let (s, d) = gids_of(&v4, NetType::Ipv4);
        assert_eq!(
            s.0,
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 0, 1]
        );
        assert_eq!(
            d.0,
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 0, 199]
        );
        // An IPv6 header (a bad IPv4 checksum behind it): UDP next is RoCE v2, else v1.
        let mut v6 = ipv4_area(0x60, [0, 0]);
        v6[6] = bindings::IPPROTO_UDP as u8;
        assert!(net_type(&wc, &v6) == Some(NetType::Ipv6));
        v6[6] = 0x1b;
        assert!(net_type(&wc, &v6) == Some(NetType::RoceV1));
        v6[8..24].copy_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
        let (s, _) = gids_of(&v6, NetType::RoceV1);
        assert_eq!(s.0[0], 0xfe);
        assert_eq!(s.0[15], 8);
    }
}
