// SPDX-License-Identifier: GPL-2.0

//! The data path of C modules: the device's ops table entries that C's inline `ib_post_send`,
//! `ib_post_recv`, `ib_post_srq_recv`, `ib_poll_cq` and `ib_req_notify_cq` call
//! (`qp->device->ops.post_send`, ...) for the QPs, SRQs and CQs made through `c_abi/`. Each
//! reads C's structures in place (`c_abi/wr.rs`) and calls the core's [`Qp`], [`Srq`] or
//! [`Cq`] verbs, which reach the driver: a chain is posted in runs of up to [`RUN`] per
//! driver call (one lock and one doorbell per run). These may be called in any context, as
//! C's.
//!
//! [`Qp`]: crate::verbs::Qp
//! [`Srq`]: crate::verbs::Srq
//! [`Cq`]: crate::verbs::Cq

use crate::{
    c_abi::{
        cq::cq_of,
        qp::qp_of,
        srq::srq_of,
        wr::{inline_bytes, recv_chain, send_wr_from_c, wc_to_c, MAX_INLINE_SGE, RUN},
    },
    verbs::wr::{send_flags, PostError, SendWr, WorkCompletion},
};
use core::{ptr, slice};
use kernel::{bindings, ffi::c_int, prelude::*};

/// Work completions polled per call of the core's `poll`.
const POLL_RUN: usize = 16;

/// The ops table's `post_send` for QPs made for C modules (C's `ib_post_send`).
///
/// # Safety
///
/// C's contract: `qp` was made by `ib_create_qp_kernel` and is live, `wr` is a chain of
/// well-formed send work requests, `bad_wr` is writable.
pub(crate) unsafe extern "C" fn post_send(
    qp: *mut bindings::ib_qp,
    wr: *const bindings::ib_send_wr,
    bad_wr: *mut *const bindings::ib_send_wr,
) -> c_int {
    // SAFETY: `qp` is live (contract).
    let (core, qp_type) = unsafe { (qp_of(qp), (*qp).qp_type) };
    let fail = |at: *const bindings::ib_send_wr, e: Error| {
        // SAFETY: `bad_wr` is writable (contract).
        unsafe { *bad_wr = at };
        e.to_errno()
    };
    let mut next = wr;
    while !next.is_null() {
        let mut run = [SendWr::default(); RUN];
        let mut at = [ptr::null::<bindings::ib_send_wr>(); RUN];
        let mut n = 0;
        let mut stop = None;
        while n < RUN && !next.is_null() {
            // SAFETY: `next` is a request of the chain (contract).
            let w = unsafe { &*next };
            if w.send_flags as u32 & send_flags::INLINE != 0 {
                // An inline request goes alone, with its slices here.
                if n > 0 {
                    break;
                }
                let mut slices: [&[u8]; MAX_INLINE_SGE] = [&[]; MAX_INLINE_SGE];
                // SAFETY: As `post_send`'s contract; an inline request's entries name readable
                // kernel memory.
                let one = unsafe { send_wr_from_c(w, qp_type) }.and_then(|mut one| {
                    // SAFETY: As above.
                    let n = unsafe { inline_bytes(one.sg_list, &mut slices) }?;
                    one.inline_data = &slices[..n];
                    Ok(one)
                });
                let one = match one {
                    Ok(one) => one,
                    Err(e) => return fail(next, e),
                };
                if let Err(e) = core.post_send(slice::from_ref(&one)) {
                    return fail(next, e.err);
                }
                next = w.next;
                continue;
            }
            // SAFETY: As `post_send`'s contract.
            match unsafe { send_wr_from_c(w, qp_type) } {
                Ok(one) => {
                    run[n] = one;
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
            if let Err(PostError { first_bad, err }) = core.post_send(&run[..n]) {
                return fail(at[first_bad.min(n - 1)], err);
            }
        }
        if let Some((at, e)) = stop {
            return fail(at, e);
        }
    }
    0
}

/// The ops table's `post_recv` for QPs made for C modules (C's `ib_post_recv`).
///
/// # Safety
///
/// C's contract: `qp` was made by `ib_create_qp_kernel` and is live, `wr` is a chain of
/// well-formed receive work requests, `bad_wr` is writable.
pub(crate) unsafe extern "C" fn post_recv(
    qp: *mut bindings::ib_qp,
    wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
) -> c_int {
    // SAFETY: `qp` is live (contract).
    let core = unsafe { qp_of(qp) };
    // SAFETY: As this function's contract.
    unsafe { recv_chain(wr, bad_wr, |run| core.post_recv(run)) }
}

/// The ops table's `post_srq_recv` (C's `ib_post_srq_recv`).
///
/// # Safety
///
/// C's contract: `srq` was made by [`ib_create_srq_user`] and is live, `wr` is a chain of
/// well-formed receive work requests, `bad_wr` is writable.
pub(crate) unsafe extern "C" fn post_srq_recv(
    srq: *mut bindings::ib_srq,
    wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
) -> c_int {
    // SAFETY: `srq` is live (contract).
    let core = unsafe { srq_of(srq) };
    // SAFETY: As this function's contract.
    unsafe { recv_chain(wr, bad_wr, |run| core.post_recv(run)) }
}

/// The ops table's `poll_cq` for CQs made for C modules (C's `ib_poll_cq`): up to
/// `num_entries` completions into `wc`, oldest first; how many, or the driver's errno when it
/// fails before the first.
///
/// # Safety
///
/// C's contract: `cq` was made by `__ib_create_cq` and is live, `wc` has room for
/// `num_entries` completions; polls of one CQ are not concurrent.
pub(crate) unsafe extern "C" fn poll_cq(
    cq: *mut bindings::ib_cq,
    num_entries: c_int,
    wc: *mut bindings::ib_wc,
) -> c_int {
    // SAFETY: `cq` is live (contract).
    let core = unsafe { cq_of(cq) };
    let want = usize::try_from(num_entries).unwrap_or(0);
    let mut done = 0;
    let mut run = [WorkCompletion::default(); POLL_RUN];
    while done < want {
        let room = (want - done).min(POLL_RUN);
        let n = match core.cq.poll(&mut run[..room]) {
            Ok(n) => n,
            Err(e) if done == 0 => return e.to_errno(),
            Err(_) => break,
        };
        core.with_qps(|find| {
            for (i, w) in run[..n].iter().enumerate() {
                // SAFETY: `wc` has room for `want` entries and `done + i < want` (contract).
                let out = unsafe { &mut *wc.add(done + i) };
                wc_to_c(w, find(w.qp_num), out);
            }
        });
        done += n;
        if n < room {
            break;
        }
    }
    c_int::try_from(done).unwrap_or(c_int::MAX)
}

/// The ops table's `req_notify_cq` for CQs made for C modules (C's `ib_req_notify_cq`):
/// arms the CQ for its next completion (`IB_CQ_NEXT_COMP`) or next solicited one
/// (`IB_CQ_SOLICITED`); 0 or the driver's errno. With `IB_CQ_REPORT_MISSED_EVENTS` it answers
/// 0 as C's mlx5 does when it holds no completions of its own making: the arm names the
/// consumer index, so the device raises an event for a completion already there.
///
/// # Safety
///
/// C's contract: `cq` was made by `__ib_create_cq` and is live.
pub(crate) unsafe extern "C" fn req_notify_cq(
    cq: *mut bindings::ib_cq,
    flags: bindings::ib_cq_notify_flags,
) -> c_int {
    let solicited = flags & bindings::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK
        == bindings::ib_cq_notify_flags_IB_CQ_SOLICITED;
    // SAFETY: `cq` is live (contract).
    match unsafe { cq_of(cq) }.cq.req_notify(solicited) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Fills the entries of a device's ops table that C modules call directly (for a device with
/// kernel verbs): the data path, and `get_dma_mr`; and `create_srq` for a device with SRQs,
/// which C's inline `ib_create_srq` checks.
pub(crate) fn fill_ops(ops: &mut bindings::ib_device_ops, has_srq: bool) {
    ops.post_send = Some(post_send);
    ops.post_recv = Some(post_recv);
    ops.poll_cq = Some(poll_cq);
    ops.req_notify_cq = Some(req_notify_cq);
    ops.post_srq_recv = Some(post_srq_recv);
    ops.get_dma_mr = Some(crate::c_abi::mr::get_dma_mr);
    if has_srq {
        ops.create_srq = Some(crate::c_abi::srq::create_srq);
    }
}
