// SPDX-License-Identifier: GPL-2.0

//! A C driver's completion queue as the core's CQ object ([`DriverCq`]): the `struct ib_cq` of
//! the driver's size, its `create_cq`, `poll_cq`, `req_notify_cq` and `destroy_cq`, the
//! driver's completion and error callbacks passed on to the consumer (C's `__ib_create_cq`
//! fields), and the completions it writes read as the core's. A user CQ (made in a user
//! context, its ring mapped by the driver into the process) is the same object with the
//! context's user data passed to the driver's ops.

use crate::{
    c_abi::driver::{
        bundle::{self, DriverUdata},
        object::DriverObject,
    },
    device::events::EventType,
    user::udata::Udata,
    verbs::ops::CqObject,
    verbs::types::{CqInit, CqNotifier},
    verbs::wr::{WcOpcode, WcStatus, WorkCompletion},
};
use core::{any::Any, ffi::c_void, ptr::NonNull};
use kernel::{bindings, ffi::c_int, prelude::*};

/// A driver's CQ-creating op (`create_cq`, `create_user_cq`).
type CreateCq = unsafe extern "C" fn(
    *mut bindings::ib_cq,
    *const bindings::ib_cq_init_attr,
    *mut bindings::uverbs_attr_bundle,
) -> c_int;

/// A C driver's CQ.
///
/// # Invariants
///
/// `cq` was made by the driver's `create_cq` on the structure `ib` (alive while the device is
/// registered, which outlives its CQs); its `cq_context` points to `_notifier`, which does not
/// move (boxed) and lives as long as the CQ. `uctx` is null for a kernel CQ, or the driver's
/// user context the CQ was made in, which outlives it.
pub(crate) struct DriverCq {
    ib: NonNull<bindings::ib_device>,
    uctx: *mut bindings::ib_ucontext,
    _notifier: KBox<CqNotifier>,
    cq: DriverObject<bindings::ib_cq>,
}

// SAFETY: C drivers' objects are used from any thread (their ops are called in any context the
// core calls them in); the structure pointer is only read.
unsafe impl Send for DriverCq {}
// SAFETY: As above.
unsafe impl Sync for DriverCq {}

/// The driver's completion callback: `cq_context` is the consumer's notifier.
///
/// # Safety
///
/// Called by the driver with a CQ of [`DriverCq::create`] and its context.
unsafe extern "C" fn completion(_cq: *mut bindings::ib_cq, ctx: *mut c_void) {
    // SAFETY: The context is the CQ's boxed notifier (type invariant of `DriverCq`), alive
    // while the driver may call this.
    unsafe { (*ctx.cast::<CqNotifier>()).completion() };
}

/// The driver's asynchronous event callback of a CQ: an overrun reaches the consumer.
///
/// # Safety
///
/// As for [`completion`]; `ev` is the driver's event.
unsafe extern "C" fn event(ev: *mut bindings::ib_event, ctx: *mut c_void) {
    // SAFETY: As for `completion`; `ev` is readable.
    unsafe {
        if EventType::from_number((*ev).event) == Some(EventType::CqErr) {
            (*ctx.cast::<CqNotifier>()).error();
        }
    }
}

impl DriverCq {
    /// A CQ of the C driver's structure `ib` as `init` asks, reporting to `notifier`.
    ///
    /// # Safety
    ///
    /// `ib` is a registered C driver's structure that outlives the CQ.
    pub(crate) unsafe fn create(
        ib: NonNull<bindings::ib_device>,
        init: &CqInit,
        notifier: &CqNotifier,
    ) -> Result<Self> {
        let attr = bindings::ib_cq_init_attr {
            cqe: init.cqe,
            comp_vector: init.comp_vector,
            flags: init.flags,
        };
        // SAFETY: The caller's contract.
        let create = unsafe { (*ib.as_ptr()).ops.create_cq }.ok_or(EOPNOTSUPP)?;
        // SAFETY: The caller's contract; a kernel CQ has no context.
        unsafe { Self::make(ib, core::ptr::null_mut(), create, &attr, None, notifier) }
    }

    /// A user CQ of the C driver's structure `ib` in its user context `uctx`, as `init` asks
    /// with the driver's request and response in `udata` (C's `UVERBS_METHOD_CQ_CREATE`).
    ///
    /// # Safety
    ///
    /// `ib` is a registered C driver's structure that outlives the CQ; `uctx` a live context of
    /// it that outlives the CQ.
    pub(crate) unsafe fn create_user(
        ib: NonNull<bindings::ib_device>,
        uctx: *mut bindings::ib_ucontext,
        init: &CqInit,
        udata: &Udata,
        notifier: &CqNotifier,
    ) -> Result<Self> {
        let attr = bindings::ib_cq_init_attr {
            cqe: init.cqe,
            comp_vector: init.comp_vector,
            flags: init.flags,
        };
        // SAFETY: The caller's contract.
        let ops = unsafe { &(*ib.as_ptr()).ops };
        // C's CQ method: the driver's user op if it has one, and only with a destroying op.
        ops.destroy_cq.ok_or(EOPNOTSUPP)?;
        let create = ops.create_user_cq.or(ops.create_cq).ok_or(EOPNOTSUPP)?;
        let mut u = DriverUdata::new(udata, uctx);
        // SAFETY: The caller's contract.
        unsafe { Self::make(ib, uctx, create, &attr, Some(&mut u), notifier) }
    }

    /// The driver's CQ-creating op `create` with `attr`, and `u`'s bundle for a user CQ (null
    /// for a kernel one, as C's kernel callers pass).
    ///
    /// # Safety
    ///
    /// As [`Self::create_user`] (`uctx` null for a kernel CQ); `create` is an op of `ib`'s.
    unsafe fn make(
        ib: NonNull<bindings::ib_device>,
        uctx: *mut bindings::ib_ucontext,
        create: CreateCq,
        attr: &bindings::ib_cq_init_attr,
        u: Option<&mut DriverUdata>,
        notifier: &CqNotifier,
    ) -> Result<Self> {
        // SAFETY: The caller's contract.
        let ops = unsafe { &(*ib.as_ptr()).ops };
        let cq = DriverObject::<bindings::ib_cq>::alloc(ops.size_ib_cq, GFP_KERNEL)?;
        let notifier = KBox::new(notifier.clone(), GFP_KERNEL)?;
        let c = cq.raw();
        // SAFETY: `c` is the zeroed structure just allocated, ours until the driver gets it.
        unsafe {
            (*c).device = ib.as_ptr();
            (*c).comp_handler = Some(completion);
            (*c).event_handler = Some(event);
            (*c).cq_context = core::ptr::from_ref::<CqNotifier>(&notifier)
                .cast_mut()
                .cast();
            // C's restrack marks a user object (siw tells user CQs from kernel ones by it:
            // `rdma_is_kernel_res`).
            (*c).res.user = !uctx.is_null();
        }
        let bundle = u.map_or(core::ptr::null_mut(), |u| u.bundle());
        // SAFETY: The driver's op with its own structure's new CQ (C's `__ib_create_cq`, or
        // the CQ method's handler with its bundle).
        kernel::error::to_result(unsafe { create(c, attr, bundle) })?;
        // INVARIANT: Made above; the context is the boxed notifier kept with it; `uctx` as the
        // caller promised.
        Ok(Self {
            ib,
            uctx,
            _notifier: notifier,
            cq,
        })
    }

    /// The C structure.
    pub(crate) fn raw(&self) -> *mut bindings::ib_cq {
        self.cq.raw()
    }

    fn ops(&self) -> &bindings::ib_device_ops {
        // SAFETY: The structure outlives the CQ (type invariant).
        unsafe { &(*self.ib.as_ptr()).ops }
    }
}

impl Drop for DriverCq {
    fn drop(&mut self) {
        if let Some(destroy) = self.ops().destroy_cq {
            let mut u = bundle::for_destroy(self.uctx);
            // SAFETY: The CQ was made by the driver and is destroyed once; nothing uses it
            // any more (the core destroys a CQ after its QPs).
            let r = unsafe { destroy(self.cq.raw(), bundle::udata_ptr(&mut u)) };
            if r != 0 {
                pr_warn!("destroy_cq of a C driver failed: {}\n", r);
            }
        }
        // The notifier and the memory go after this, once the driver is done with them.
    }
}

/// The core's completion status of C's number (general error for an unknown one).
fn status_from_c(s: u32) -> WcStatus {
    use WcStatus::*;
    const ALL: [WcStatus; 22] = [
        Success,
        LocLenErr,
        LocQpOpErr,
        LocEecOpErr,
        LocProtErr,
        WrFlushErr,
        MwBindErr,
        BadRespErr,
        LocAccessErr,
        RemInvReqErr,
        RemAccessErr,
        RemOpErr,
        RetryExcErr,
        RnrRetryExcErr,
        LocRddViolErr,
        RemInvRdReqErr,
        RemAbortErr,
        InvEecnErr,
        InvEecStateErr,
        FatalErr,
        RespTimeoutErr,
        GeneralErr,
    ];
    ALL.get(s as usize).copied().unwrap_or(GeneralErr)
}

/// The core's completion opcode of C's number (`Send` for one the core does not name).
fn opcode_from_c(o: u32) -> WcOpcode {
    match o {
        bindings::ib_wc_opcode_IB_WC_RDMA_WRITE => WcOpcode::RdmaWrite,
        bindings::ib_wc_opcode_IB_WC_RDMA_READ => WcOpcode::RdmaRead,
        bindings::ib_wc_opcode_IB_WC_COMP_SWAP => WcOpcode::CompSwap,
        bindings::ib_wc_opcode_IB_WC_FETCH_ADD => WcOpcode::FetchAdd,
        bindings::ib_wc_opcode_IB_WC_LOCAL_INV => WcOpcode::LocalInv,
        bindings::ib_wc_opcode_IB_WC_REG_MR => WcOpcode::RegMr,
        bindings::ib_wc_opcode_IB_WC_RECV => WcOpcode::Recv,
        bindings::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM => WcOpcode::RecvRdmaWithImm,
        _ => WcOpcode::Send,
    }
}

/// The core's completion of C's `ib_wc` (the inverse of `c_abi::wr::wc_to_c`).
fn wc_from_c(c: &bindings::ib_wc) -> WorkCompletion {
    let flags = c.wc_flags as u32;
    // SAFETY: The union's `wr_id` is what the driver copied from the work request.
    let wr_id = unsafe { c.__bindgen_anon_1.wr_id };
    let qp_num = if c.qp.is_null() {
        0
    } else {
        // SAFETY: A completion names a live QP of the driver.
        unsafe { (*c.qp).qp_num }
    };
    WorkCompletion {
        wr_id,
        status: status_from_c(c.status),
        opcode: opcode_from_c(c.opcode),
        vendor_err: c.vendor_err,
        byte_len: c.byte_len,
        // SAFETY: `imm_data` is the union's member with immediate data (the flag says so).
        imm_data: (flags & bindings::ib_wc_flags_IB_WC_WITH_IMM != 0)
            .then(|| u32::from_be(unsafe { c.ex.imm_data })),
        // SAFETY: Both members of the union are 32-bit integers; the key is used only when the
        // flag says the driver wrote it.
        invalidated_rkey: (flags & bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE != 0)
            .then_some(unsafe { c.ex.invalidate_rkey }),
        qp_num,
        src_qp: c.src_qp,
        slid: c.slid as u16,
        sl: c.sl,
        port_num: c.port_num as u8,
        grh: flags & bindings::ib_wc_flags_IB_WC_GRH != 0,
        pkey_index: c.pkey_index,
        dlid_path_bits: c.dlid_path_bits,
    }
}

/// Completions read per driver call.
const POLL_BATCH: usize = 8;

impl CqObject for DriverCq {
    fn req_notify(&self, solicited: bool) -> Result {
        let notify = self.ops().req_notify_cq.ok_or(EOPNOTSUPP)?;
        let flags = if solicited {
            bindings::ib_cq_notify_flags_IB_CQ_SOLICITED
        } else {
            bindings::ib_cq_notify_flags_IB_CQ_NEXT_COMP
        };
        // SAFETY: The driver's op on its live CQ (callable in any context, as in C).
        let r = unsafe { notify(self.raw(), flags) };
        if r < 0 {
            return Err(Error::from_errno(r));
        }
        Ok(())
    }

    fn poll(&self, wc: &mut [WorkCompletion]) -> Result<usize> {
        let poll = self.ops().poll_cq.ok_or(EOPNOTSUPP)?;
        let mut done = 0;
        while done < wc.len() {
            // SAFETY: Plain C structures: all zeroes is valid.
            let mut batch: [bindings::ib_wc; POLL_BATCH] = unsafe { core::mem::zeroed() };
            let want = (wc.len() - done).min(POLL_BATCH);
            // SAFETY: The driver's op on its live CQ, with room for `want` completions.
            let n = unsafe { poll(self.raw(), want as c_int, batch.as_mut_ptr()) };
            if n < 0 {
                return if done > 0 {
                    Ok(done)
                } else {
                    Err(Error::from_errno(n))
                };
            }
            let n = (n as usize).min(want);
            for (d, c) in wc[done..].iter_mut().zip(&batch[..n]) {
                *d = wc_from_c(c);
            }
            done += n;
            if n < want {
                break;
            }
        }
        Ok(done)
    }

    fn size(&self) -> Option<u32> {
        // SAFETY: The CQ is live; the driver set its size at creation.
        u32::try_from(unsafe { (*self.raw()).cqe }).ok()
    }

    /// A user CQ's resize (C's `resize_user_cq` with the command's buffers); C's 7.3 has no
    /// kernel resize verb left, so a kernel CQ's is `EOPNOTSUPP`.
    fn resize(&self, cqe: u32, udata: Option<&Udata>) -> Result {
        let udata = udata.ok_or(EOPNOTSUPP)?;
        let resize = self.ops().resize_user_cq.ok_or(EOPNOTSUPP)?;
        let mut u = DriverUdata::new(udata, self.uctx);
        // SAFETY: The driver's op on its live CQ with the command's buffers.
        kernel::error::to_result(unsafe { resize(self.raw(), cqe, u.udata()) })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
