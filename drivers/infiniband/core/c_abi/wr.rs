// SPDX-License-Identifier: GPL-2.0

//! C's work requests and completions as the core's: a C chain of send or receive work
//! requests read in place (the core's [`Sge`] has `ib_sge`'s layout, so a scatter list is not
//! copied; the rest of each request is described for the driver on the stack) and posted in
//! runs of up to [`RUN`], and the core's completions written as C's `ib_wc`. Nothing here
//! allocates: the data path may be called in any context, as C's. A request the core cannot
//! express (an opcode other than SEND, RDMA WRITE/READ, the two atomics, with or without
//! immediate data, SEND with invalidate, LOCAL_INV and REG_MR) is refused with `EINVAL`, as a
//! driver refusing it would.

use crate::{
    c_abi::{ah::ah_of, mr::mr_of},
    verbs::{
        types::AccessFlags,
        wr::{PostError, RecvWr, RegWr, SendOpcode, SendWr, Sge, UdWr, WorkCompletion},
    },
};
use core::{mem::offset_of, ptr, slice};
use kernel::{bindings, ffi::c_int, prelude::*};

/// Work requests posted per call of the core's verbs.
pub(crate) const RUN: usize = 8;
/// Scatter entries of one inline send (the devices' `max_send_sge` is smaller).
pub(crate) const MAX_INLINE_SGE: usize = 32;

// The core's `Sge` is read in place of C's `ib_sge`.
const _: () = {
    assert!(size_of::<Sge>() == size_of::<bindings::ib_sge>());
    assert!(offset_of!(Sge, addr) == offset_of!(bindings::ib_sge, addr));
    assert!(offset_of!(Sge, length) == offset_of!(bindings::ib_sge, length));
    assert!(offset_of!(Sge, lkey) == offset_of!(bindings::ib_sge, lkey));
};

/// The scatter list of a C work request, in place.
///
/// # Safety
///
/// `list` points to `num` readable entries (or `num` is 0) that outlive `'a`.
unsafe fn sges<'a>(list: *mut bindings::ib_sge, num: c_int) -> Result<&'a [Sge]> {
    let n = usize::try_from(num).map_err(|_| EINVAL)?;
    if n == 0 || list.is_null() {
        return if n == 0 { Ok(&[]) } else { Err(EINVAL) };
    }
    // SAFETY: `n` entries of `ib_sge`'s layout, which `Sge` has (checked above), live for `'a`
    // (contract).
    Ok(unsafe { slice::from_raw_parts(list.cast::<Sge>(), n) })
}

/// The opcode of a C send work request the core can express.
fn opcode_from_c(op: bindings::ib_wr_opcode) -> Result<SendOpcode> {
    Ok(match op {
        bindings::ib_wr_opcode_IB_WR_RDMA_WRITE => SendOpcode::RdmaWrite,
        bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM => SendOpcode::RdmaWriteWithImm,
        bindings::ib_wr_opcode_IB_WR_SEND => SendOpcode::Send,
        bindings::ib_wr_opcode_IB_WR_SEND_WITH_IMM => SendOpcode::SendWithImm,
        bindings::ib_wr_opcode_IB_WR_RDMA_READ => SendOpcode::RdmaRead,
        bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP => SendOpcode::AtomicCmpAndSwp,
        bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => SendOpcode::AtomicFetchAndAdd,
        bindings::ib_wr_opcode_IB_WR_LOCAL_INV => SendOpcode::LocalInv,
        bindings::ib_wr_opcode_IB_WR_SEND_WITH_INV => SendOpcode::SendWithInv,
        bindings::ib_wr_opcode_IB_WR_REG_MR => SendOpcode::RegMr,
        _ => return Err(EINVAL),
    })
}

/// The core's description of the C send work request `w` on a QP of type `qp_type` (for an
/// inline one, without its bytes: [`inline_bytes`]).
///
/// # Safety
///
/// `w` is a send work request as C's contract has it: its container (`ib_rdma_wr`,
/// `ib_atomic_wr`, `ib_ud_wr`, `ib_reg_wr`) is the one its opcode and the QP's type say, its
/// scatter list is readable for `'a`, and a UD request's AH and a registration's MR are live.
pub(crate) unsafe fn send_wr_from_c<'a>(
    w: &'a bindings::ib_send_wr,
    qp_type: bindings::ib_qp_type,
) -> Result<SendWr<'a>> {
    let opcode = opcode_from_c(w.opcode)?;
    let flags = w.send_flags as u32;
    // SAFETY: The scatter list is readable for `'a` (contract).
    let sg_list = unsafe { sges(w.sg_list, w.num_sge) }?;
    let p: *const bindings::ib_send_wr = w;
    let mut wr = SendWr {
        // SAFETY: Both members of the union are 64 bits; the identifier is returned as given.
        wr_id: unsafe { w.__bindgen_anon_1.wr_id },
        opcode,
        sg_list,
        send_flags: flags,
        ..Default::default()
    };
    if matches!(
        opcode,
        SendOpcode::RdmaWriteWithImm | SendOpcode::SendWithImm
    ) {
        // SAFETY: With-immediate opcodes carry `imm_data` (big endian, as on the wire).
        wr.imm_data = u32::from_be(unsafe { w.ex.imm_data });
    }
    match opcode {
        SendOpcode::RdmaWrite | SendOpcode::RdmaWriteWithImm | SendOpcode::RdmaRead => {
            // SAFETY: An RDMA request is the `wr` of an `ib_rdma_wr` (contract).
            let r = unsafe { &*kernel::container_of!(p, bindings::ib_rdma_wr, wr) };
            wr.remote_addr = r.remote_addr;
            wr.rkey = r.rkey;
        }
        SendOpcode::AtomicCmpAndSwp | SendOpcode::AtomicFetchAndAdd => {
            // SAFETY: An atomic request is the `wr` of an `ib_atomic_wr` (contract).
            let a = unsafe { &*kernel::container_of!(p, bindings::ib_atomic_wr, wr) };
            wr.remote_addr = a.remote_addr;
            wr.rkey = a.rkey;
            wr.compare_add = a.compare_add;
            wr.swap = a.swap;
        }
        SendOpcode::LocalInv | SendOpcode::SendWithInv => {
            // SAFETY: These opcodes carry the key in the union's `invalidate_rkey`.
            wr.invalidate_rkey = unsafe { w.ex.invalidate_rkey };
        }
        SendOpcode::RegMr => {
            // SAFETY: A registration is the `wr` of an `ib_reg_wr` (contract).
            let g = unsafe { &*kernel::container_of!(p, bindings::ib_reg_wr, wr) };
            if g.mr.is_null() {
                return Err(EINVAL);
            }
            wr.reg = Some(RegWr {
                // SAFETY: The MR is a live MR made through this core (contract).
                mr: unsafe { mr_of(g.mr) }.handle(),
                key: g.key,
                access: AccessFlags::from_ib_bits(g.access as u32),
            });
        }
        SendOpcode::Send | SendOpcode::SendWithImm => {}
    }
    if matches!(
        qp_type,
        bindings::ib_qp_type_IB_QPT_UD
            | bindings::ib_qp_type_IB_QPT_GSI
            | bindings::ib_qp_type_IB_QPT_SMI
    ) {
        // SAFETY: A datagram QP's request is the `wr` of an `ib_ud_wr` (contract).
        let u = unsafe { &*kernel::container_of!(p, bindings::ib_ud_wr, wr) };
        if u.ah.is_null() {
            return Err(EINVAL);
        }
        wr.ud = Some(UdWr {
            // SAFETY: The AH is live (contract).
            ah: unsafe { ah_of(u.ah) },
            remote_qpn: u.remote_qpn,
            remote_qkey: u.remote_qkey,
        });
    }
    Ok(wr)
}

/// The bytes of an inline request's scatter list `sg_list` (C passes kernel virtual
/// addresses), as slices in `out`; how many.
///
/// # Safety
///
/// Every entry names readable bytes that outlive `'a` (C's contract for inline sends).
pub(crate) unsafe fn inline_bytes<'a>(
    sg_list: &[Sge],
    out: &mut [&'a [u8]; MAX_INLINE_SGE],
) -> Result<usize> {
    if sg_list.len() > MAX_INLINE_SGE {
        return Err(EINVAL);
    }
    for (slot, s) in out.iter_mut().zip(sg_list) {
        *slot = if s.length == 0 {
            &[]
        } else {
            // SAFETY: Readable bytes live for `'a` (contract).
            unsafe { slice::from_raw_parts(s.addr as usize as *const u8, s.length as usize) }
        };
    }
    Ok(sg_list.len())
}

/// Posts the C chain of receive work requests `wr` in runs through `post` (a QP's or an SRQ's
/// receive queue); 0, or the errno with `*bad_wr` at the first request not posted.
///
/// # Safety
///
/// C's contract: `wr` is a chain of well-formed receive work requests, `bad_wr` is writable.
pub(crate) unsafe fn recv_chain(
    wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
    post: impl Fn(&[RecvWr<'_>]) -> Result<(), PostError>,
) -> c_int {
    let fail = |at: *const bindings::ib_recv_wr, e: Error| {
        // SAFETY: `bad_wr` is writable (contract).
        unsafe { *bad_wr = at };
        e.to_errno()
    };
    let mut next = wr;
    while !next.is_null() {
        let mut run = [RecvWr::default(); RUN];
        let mut at = [ptr::null::<bindings::ib_recv_wr>(); RUN];
        let mut n = 0;
        let mut stop = None;
        while n < RUN && !next.is_null() {
            // SAFETY: `next` is a request of the chain; its scatter list is readable (contract).
            let w = unsafe { &*next };
            // SAFETY: As above.
            match unsafe { sges(w.sg_list, w.num_sge) } {
                Ok(sg_list) => {
                    run[n] = RecvWr {
                        // SAFETY: Both members of the union are 64 bits.
                        wr_id: unsafe { w.__bindgen_anon_1.wr_id },
                        sg_list,
                    };
                    at[n] = next;
                    n += 1;
                    next = w.next;
                }
                Err(e) => {
                    stop = Some((next, e));
                    break;
                }
            }
        }
        if n > 0 {
            if let Err(PostError { first_bad, err }) = post(&run[..n]) {
                return fail(at[first_bad.min(n - 1)], err);
            }
        }
        if let Some((at, e)) = stop {
            return fail(at, e);
        }
    }
    0
}

/// Writes the core's completion `w` as C's `ib_wc`, naming the C QP `qp`.
pub(crate) fn wc_to_c(w: &WorkCompletion, qp: *mut bindings::ib_qp, out: &mut bindings::ib_wc) {
    out.__bindgen_anon_1.wr_id = w.wr_id;
    out.status = w.status as u32;
    out.opcode = w.opcode as u32;
    out.vendor_err = w.vendor_err;
    out.byte_len = w.byte_len;
    out.qp = qp;
    let mut flags = 0;
    out.ex.imm_data = match w.imm_data {
        Some(imm) => {
            flags |= bindings::ib_wc_flags_IB_WC_WITH_IMM;
            imm.to_be()
        }
        None => 0,
    };
    if let Some(key) = w.invalidated_rkey {
        flags |= bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE;
        out.ex.invalidate_rkey = key;
    }
    if w.grh {
        flags |= bindings::ib_wc_flags_IB_WC_GRH;
    }
    out.src_qp = w.src_qp;
    out.slid = w.slid.into();
    out.wc_flags = flags as c_int;
    out.pkey_index = w.pkey_index;
    out.sl = w.sl;
    out.dlid_path_bits = w.dlid_path_bits;
    out.port_num = w.port_num.into();
    out.smac = [0; 6];
    out.vlan_id = 0;
    out.network_hdr_type = 0;
}
