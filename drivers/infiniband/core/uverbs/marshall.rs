// SPDX-License-Identifier: GPL-2.0

//! The kernel's address, QP and path attributes in the user ABI's layout, for C modules that
//! answer user space themselves (rdma_ucm): `ib_copy_ah_attr_to_user`, `ib_copy_qp_attr_to_user`
//! and `ib_copy_path_rec_to_user` with C's names, signatures and field-by-field results (C's
//! `drivers/infiniband/core/uverbs_marshall.c`), exported by `ib_uverbs_exports.c`.
//!
//! Not as C: OPA attributes (whose LIDs may need 32 bits) are not converted into an
//! InfiniBand GID, as C converts them; their LIDs are copied cut to 16 bits. No OPA device
//! registers on this core.

use kernel::bindings;

/// The destination LID and source path bits of `attr` by its type (C's `rdma_ah_get_dlid`
/// and `rdma_ah_get_path_bits`: zero for a RoCE address).
fn lid_and_path_bits(attr: &bindings::rdma_ah_attr) -> (u16, u8) {
    match attr.type_ {
        // SAFETY: The type says which member of the union is in use.
        bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB => unsafe {
            let ib = attr.__bindgen_anon_1.ib;
            (ib.dlid, ib.src_path_bits)
        },
        // SAFETY: As above.
        bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_OPA => unsafe {
            let opa = attr.__bindgen_anon_1.opa;
            (opa.dlid as u16, opa.src_path_bits)
        },
        _ => (0, 0),
    }
}

/// Fills `dst` from `src` (C's `ib_copy_ah_attr_to_user`).
fn ah_attr_to_user(dst: &mut bindings::ib_uverbs_ah_attr, src: &bindings::rdma_ah_attr) {
    let (dlid, path_bits) = lid_and_path_bits(src);
    let global = u32::from(src.ah_flags) & bindings::ib_ah_flags_IB_AH_GRH != 0;
    dst.grh = bindings::ib_uverbs_global_route::default();
    if global {
        let g = &src.grh;
        // SAFETY: Every bit pattern of the GID union is its raw bytes.
        dst.grh.dgid = unsafe { g.dgid.raw };
        dst.grh.flow_label = g.flow_label;
        dst.grh.sgid_index = g.sgid_index;
        dst.grh.hop_limit = g.hop_limit;
        dst.grh.traffic_class = g.traffic_class;
    }
    dst.dlid = dlid;
    dst.sl = src.sl;
    dst.src_path_bits = path_bits;
    dst.static_rate = src.static_rate;
    dst.is_global = u8::from(global);
    dst.port_num = src.port_num as u8;
    dst.reserved = 0;
}

/// C's `ib_copy_ah_attr_to_user`: `dst` takes the user ABI's view of the address `ah_attr`
/// (the global route zeroed unless the address has one).
///
/// # Safety
///
/// `dst` is writable, `ah_attr` readable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_copy_ah_attr_to_user(
    _device: *mut bindings::ib_device,
    dst: *mut bindings::ib_uverbs_ah_attr,
    ah_attr: *mut bindings::rdma_ah_attr,
) {
    // SAFETY: The caller's contract.
    unsafe { ah_attr_to_user(&mut *dst, &*ah_attr) };
}

/// C's `ib_copy_qp_attr_to_user`: `dst` takes the user ABI's view of the QP attributes `src`,
/// both addresses included (its attribute mask is left as it was, as C leaves it).
///
/// # Safety
///
/// `dst` is writable, `src` readable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_copy_qp_attr_to_user(
    _device: *mut bindings::ib_device,
    dst: *mut bindings::ib_uverbs_qp_attr,
    src: *mut bindings::ib_qp_attr,
) {
    // SAFETY: The caller's contract.
    let (d, s) = unsafe { (&mut *dst, &*src) };
    d.qp_state = s.qp_state;
    d.cur_qp_state = s.cur_qp_state;
    d.path_mtu = s.path_mtu;
    d.path_mig_state = s.path_mig_state;
    d.qkey = s.qkey;
    d.rq_psn = s.rq_psn;
    d.sq_psn = s.sq_psn;
    d.dest_qp_num = s.dest_qp_num;
    d.qp_access_flags = s.qp_access_flags as u32;
    d.max_send_wr = s.cap.max_send_wr;
    d.max_recv_wr = s.cap.max_recv_wr;
    d.max_send_sge = s.cap.max_send_sge;
    d.max_recv_sge = s.cap.max_recv_sge;
    d.max_inline_data = s.cap.max_inline_data;
    ah_attr_to_user(&mut d.ah_attr, &s.ah_attr);
    ah_attr_to_user(&mut d.alt_ah_attr, &s.alt_ah_attr);
    d.pkey_index = s.pkey_index;
    d.alt_pkey_index = s.alt_pkey_index;
    d.en_sqd_async_notify = s.en_sqd_async_notify;
    d.sq_draining = s.sq_draining;
    d.max_rd_atomic = s.max_rd_atomic;
    d.max_dest_rd_atomic = s.max_dest_rd_atomic;
    d.min_rnr_timer = s.min_rnr_timer;
    d.port_num = s.port_num as u8;
    d.timeout = s.timeout;
    d.retry_cnt = s.retry_cnt;
    d.rnr_retry = s.rnr_retry;
    d.alt_port_num = s.alt_port_num as u8;
    d.alt_timeout = s.alt_timeout;
    d.reserved = [0; 5];
}

/// C's `ib_copy_path_rec_to_user`: `dst` takes the user ABI's view of the path record `src`
/// (LIDs and raw traffic from the record's InfiniBand or OPA part, zero for RoCE).
///
/// # Safety
///
/// `dst` is writable, `src` readable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_copy_path_rec_to_user(
    dst: *mut bindings::ib_user_path_rec,
    src: *mut bindings::sa_path_rec,
) {
    // SAFETY: The caller's contract.
    let (d, s) = unsafe { (&mut *dst, &*src) };
    let (dlid, slid, raw_traffic) = match s.rec_type {
        // SAFETY: The type says which member of the union is in use.
        bindings::sa_path_rec_type_SA_PATH_REC_TYPE_IB => unsafe {
            let ib = s.__bindgen_anon_1.ib;
            (ib.dlid, ib.slid, ib.raw_traffic)
        },
        // SAFETY: As above; the LIDs are big-endian, cut to their low 16 bits.
        bindings::sa_path_rec_type_SA_PATH_REC_TYPE_OPA => unsafe {
            let opa = s.__bindgen_anon_1.opa;
            (
                (u32::from_be(opa.dlid) as u16).to_be(),
                (u32::from_be(opa.slid) as u16).to_be(),
                opa.raw_traffic,
            )
        },
        _ => (0, 0, 0),
    };
    // SAFETY: Every bit pattern of the GID unions is their raw bytes.
    unsafe {
        d.dgid = s.dgid.raw;
        d.sgid = s.sgid.raw;
    }
    d.dlid = dlid;
    d.slid = slid;
    d.raw_traffic = u32::from(raw_traffic);
    d.flow_label = s.flow_label;
    d.hop_limit = s.hop_limit;
    d.traffic_class = s.traffic_class;
    d.reversible = u32::from(s.reversible);
    d.numb_path = s.numb_path;
    d.pkey = s.pkey;
    d.sl = s.sl;
    d.mtu_selector = s.mtu_selector;
    d.mtu = u32::from(s.mtu);
    d.rate_selector = s.rate_selector;
    d.rate = s.rate;
    d.packet_life_time = s.packet_life_time;
    d.preference = s.preference;
    d.packet_life_time_selector = s.packet_life_time_selector;
}
