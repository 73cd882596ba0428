// SPDX-License-Identifier: GPL-2.0

//! A C driver's protection domain as the core's PD object ([`DriverPd`]), and what is made in
//! it: QPs ([`DriverQp`]), the DMA memory region ([`DriverMr`], C's `get_dma_mr`) and address
//! handles ([`DriverAh`], C's `rdma_create_ah`: on a RoCE port with the next hop's MAC the
//! caller resolved, as C's kernel callers do, and the source GID entry held). A user PD (made
//! in a user context) makes user QPs and memory regions of user memory (`reg_user_mr`), the
//! context's user data passed to the driver's ops.
//!
//! Not yet: SRQs.

use crate::{
    attrs::{CORE_CAP_PROT_IB, CORE_CAP_PROT_ROCE, CORE_CAP_PROT_ROCE_UDP_ENCAP},
    c_abi::{
        ah::ah_attr_to_c,
        driver::{
            bundle::{self, DriverUdata},
            cq::DriverCq,
            object::DriverObject,
            qp::DriverQp,
            sgid::SgidHold,
            ucontext::DriverUContext,
        },
    },
    device::events::EventNotifier,
    user::udata::Udata,
    verbs::ops::{CqObject, PdObject, QpObject, SrqObject, UContextObject},
    verbs::types::{AccessFlags, AhAttr, NewMr, NewQp, QpInitDriver, SrqAttr, UserMrInit},
    verbs::wr::{AhObject, MappedSg, MrObject},
};
use core::{
    any::Any,
    ptr::NonNull,
    sync::atomic::{AtomicBool, Ordering},
};
use kernel::{alloc::Flags, bindings, ffi::c_int, prelude::*, sync::Arc};

/// A driver's AH-creating op (`create_ah`, `create_user_ah`).
type CreateAh = unsafe extern "C" fn(
    *mut bindings::ib_ah,
    *mut bindings::rdma_ah_init_attr,
    *mut bindings::ib_udata,
) -> c_int;

/// A C driver's PD.
///
/// # Invariants
///
/// `pd` was made by the driver's `alloc_pd` on the structure `ib`, which outlives it. `uctx` is
/// null for a kernel PD, or the driver's user context the PD was made in, which outlives it.
pub(crate) struct DriverPd {
    ib: NonNull<bindings::ib_device>,
    uctx: *mut bindings::ib_ucontext,
    pd: DriverObject<bindings::ib_pd>,
}

// SAFETY: C drivers' objects are used from any thread; the structure pointer is only read.
unsafe impl Send for DriverPd {}
// SAFETY: As above.
unsafe impl Sync for DriverPd {}

impl DriverPd {
    /// A PD of the C driver's structure `ib` (C's `__ib_alloc_pd` up to the driver's op; the
    /// core then gives it its local DMA lkey).
    ///
    /// # Safety
    ///
    /// `ib` is a registered C driver's structure that outlives the PD.
    pub(crate) unsafe fn alloc(ib: NonNull<bindings::ib_device>) -> Result<Self> {
        // SAFETY: The caller's contract; a kernel PD has no context.
        unsafe { Self::make(ib, core::ptr::null_mut(), None) }
    }

    /// A PD of the C driver's structure `ib` in its user context `uctx`, the driver answering
    /// `udata` (C's `ib_uverbs_alloc_pd`).
    ///
    /// # Safety
    ///
    /// `ib` is a registered C driver's structure that outlives the PD; `uctx` a live context of
    /// it that outlives the PD.
    pub(crate) unsafe fn alloc_user(
        ib: NonNull<bindings::ib_device>,
        uctx: *mut bindings::ib_ucontext,
        udata: &Udata,
    ) -> Result<Self> {
        let mut u = DriverUdata::new(udata, uctx);
        // SAFETY: The caller's contract.
        unsafe { Self::make(ib, uctx, Some(&mut u)) }
    }

    /// The driver's `alloc_pd`, with `u` for a user PD.
    ///
    /// # Safety
    ///
    /// As [`Self::alloc_user`] (`uctx` null for a kernel PD).
    unsafe fn make(
        ib: NonNull<bindings::ib_device>,
        uctx: *mut bindings::ib_ucontext,
        u: Option<&mut DriverUdata>,
    ) -> Result<Self> {
        // SAFETY: The caller's contract.
        let ops = unsafe { &(*ib.as_ptr()).ops };
        let alloc = ops.alloc_pd.ok_or(EOPNOTSUPP)?;
        let pd = DriverObject::<bindings::ib_pd>::alloc(ops.size_ib_pd, GFP_KERNEL)?;
        // SAFETY: The zeroed structure just allocated, ours until the driver gets it; C's
        // restrack marks a user object.
        unsafe {
            (*pd.raw()).device = ib.as_ptr();
            (*pd.raw()).res.user = !uctx.is_null();
        }
        let udata = u.map_or(core::ptr::null_mut(), |u| u.udata());
        // SAFETY: The driver's op with its own structure's new PD.
        kernel::error::to_result(unsafe { alloc(pd.raw(), udata) })?;
        // INVARIANT: Made above; `uctx` as the caller promised.
        Ok(Self { ib, uctx, pd })
    }

    fn ops(&self) -> &bindings::ib_device_ops {
        // SAFETY: The structure outlives the PD (type invariant).
        unsafe { &(*self.ib.as_ptr()).ops }
    }

    /// The MR the driver's op answered `mr` with (null or an `ERR_PTR` on failure), of `type_`,
    /// with the range `user` of a user MR, as the core's object.
    ///
    /// # Safety
    ///
    /// `mr` is what an MR-making op of this PD's driver returned, on this PD.
    unsafe fn own_mr(
        &self,
        mr: *mut bindings::ib_mr,
        type_: bindings::ib_mr_type,
        user: Option<(u64, u64)>,
    ) -> Result<NewMr<KBox<dyn MrObject>>> {
        if mr.is_null() {
            return Err(ENOMEM);
        }
        let mr = kernel::error::from_err_ptr(mr)?;
        // The box is made first: once the core owns the MR, nothing may fail.
        let slot = KBox::<DriverMr>::new_uninit(GFP_KERNEL);
        // SAFETY: The driver's new MR (the caller's contract); C fills these after the op.
        let (lkey, rkey) = unsafe {
            (*mr).device = self.ib.as_ptr();
            (*mr).pd = self.pd.raw();
            (*mr).type_ = type_;
            (*mr).res.user = user.is_some();
            if let Some((iova, length)) = user {
                (*mr).iova = iova;
                (*mr).length = length;
            }
            ((*mr).lkey, (*mr).rkey)
        };
        // INVARIANT: Returned by the driver's op; the structure outlives it, and the context,
        // for a user MR.
        let owned = DriverMr {
            ib: self.ib,
            uctx: if user.is_some() {
                self.uctx
            } else {
                core::ptr::null_mut()
            },
            // SAFETY: Checked not null above.
            mr: unsafe { NonNull::new_unchecked(mr) },
        };
        // On failure to box it, dropping `owned` deregisters the MR.
        let made: KBox<DriverMr> = KBox::write(slot?, owned);
        Ok(NewMr {
            mr: made,
            lkey,
            rkey,
        })
    }

    /// An AH of this PD for `attr` by the driver's op `create` (`create_ah`, or
    /// `create_user_ah` with `u`), its memory allocated with `flags`.
    fn make_ah(
        &self,
        attr: &AhAttr,
        flags: Flags,
        create: CreateAh,
        u: Option<&mut DriverUdata>,
    ) -> Result<KBox<dyn AhObject>> {
        // SAFETY: The structure outlives its PDs; its port data exists once registered.
        let caps = unsafe {
            let ib = &*self.ib.as_ptr();
            if ib.port_data.is_null() || u32::from(attr.port_num) > ib.phys_port_cnt {
                return Err(EINVAL);
            }
            (*ib.port_data.add(attr.port_num.into()))
                .immutable
                .core_cap_flags
        };
        if caps & (CORE_CAP_PROT_IB | CORE_CAP_PROT_ROCE | CORE_CAP_PROT_ROCE_UDP_ENCAP) == 0 {
            // An iWARP port has no address handles.
            return Err(EOPNOTSUPP);
        }
        let ah = DriverObject::<bindings::ib_ah>::alloc(self.ops().size_ib_ah, flags)?;
        // The box is made first: once the driver made the AH, nothing may fail.
        let slot = KBox::<DriverAh>::new_uninit(flags)?;
        // SAFETY: A plain C structure: all zeroes is valid.
        let mut c_attr: bindings::rdma_ah_attr = unsafe { core::mem::zeroed() };
        ah_attr_to_c(attr, &mut c_attr);
        // C's `rdma_fill_sgid_attr`: the source GID entry, held while the AH is.
        let sgid = match &attr.grh {
            // SAFETY: The structure is registered (type invariant of the PD's device).
            Some(g) => Some(unsafe {
                SgidHold::get(self.ib.as_ptr(), attr.port_num.into(), g.sgid_index)?
            }),
            None => None,
        };
        c_attr.grh.sgid_attr = sgid.as_ref().map_or(core::ptr::null(), |s| s.raw());
        // SAFETY: The zeroed structure just allocated, ours until the driver gets it.
        unsafe {
            let a = &mut *ah.raw();
            a.device = self.ib.as_ptr();
            a.pd = self.pd.raw();
            a.type_ = c_attr.type_;
            a.sgid_attr = c_attr.grh.sgid_attr;
        }
        let mut init = bindings::rdma_ah_init_attr {
            ah_attr: &mut c_attr,
            flags: if flags == GFP_KERNEL {
                bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE
            } else {
                0
            },
            xmit_slave: core::ptr::null_mut(),
        };
        let udata = u.map_or(core::ptr::null_mut(), |u| u.udata());
        // SAFETY: The driver's op with its own structure's new AH.
        kernel::error::to_result(unsafe { create(ah.raw(), &mut init, udata) })?;
        // INVARIANT: Made above.
        let made: KBox<DriverAh> = KBox::write(
            slot,
            DriverAh {
                ib: self.ib,
                ah,
                sleepable: AtomicBool::new(false),
                _sgid: sgid,
            },
        );
        Ok(made)
    }
}

impl Drop for DriverPd {
    fn drop(&mut self) {
        if let Some(dealloc) = self.ops().dealloc_pd {
            let mut u = bundle::for_destroy(self.uctx);
            // SAFETY: Made by the driver, freed once, after every object in it.
            let r = unsafe { dealloc(self.pd.raw(), bundle::udata_ptr(&mut u)) };
            if r != 0 {
                pr_warn!("dealloc_pd of a C driver failed: {}\n", r);
            }
        }
    }
}

/// A C driver's memory region (the driver allocates it: `get_dma_mr`).
///
/// # Invariants
///
/// `mr` was returned by the driver's op on the structure `ib`, which outlives it; `uctx` is
/// null, or the user context of its PD, which outlives it.
pub(crate) struct DriverMr {
    ib: NonNull<bindings::ib_device>,
    uctx: *mut bindings::ib_ucontext,
    mr: NonNull<bindings::ib_mr>,
}

// SAFETY: As for `DriverPd`.
unsafe impl Send for DriverMr {}
// SAFETY: As above.
unsafe impl Sync for DriverMr {}

impl MrObject for DriverMr {
    /// The MR's C structure, which a registration work request names (`DriverQp`'s posts).
    fn state(&self) -> *const () {
        self.mr.as_ptr().cast_const().cast()
    }

    unsafe fn map_sg(
        &self,
        sg: *mut bindings::scatterlist,
        nents: u32,
        offset: *mut u32,
        page_size: u32,
    ) -> Result<MappedSg> {
        // SAFETY: The structure outlives the MR (type invariant).
        let map = unsafe { (*self.ib.as_ptr()).ops.map_mr_sg }.ok_or(EOPNOTSUPP)?;
        let mr = self.mr.as_ptr();
        let nents = c_int::try_from(nents).map_err(|_| EINVAL)?;
        // SAFETY: The driver's live MR; C's `ib_map_mr_sg` sets the page size before the op,
        // which maps the caller's DMA-mapped list (the caller's contract).
        let n = unsafe {
            (*mr).page_size = page_size;
            map(mr, sg, nents, offset)
        };
        if n < 0 {
            return Err(Error::from_errno(n));
        }
        // SAFETY: The driver's live MR, its range set by the op (`ib_sg_to_pages`).
        let (iova, length) = unsafe { ((*mr).iova, (*mr).length) };
        Ok(MappedSg {
            count: n as u32,
            iova,
            length,
        })
    }
}

impl Drop for DriverMr {
    fn drop(&mut self) {
        // SAFETY: The structure outlives the MR (type invariant).
        if let Some(dereg) = unsafe { (*self.ib.as_ptr()).ops.dereg_mr } {
            let mut u = bundle::for_destroy(self.uctx);
            // SAFETY: Made by the driver, deregistered once (the driver frees it).
            let r = unsafe { dereg(self.mr.as_ptr(), bundle::udata_ptr(&mut u)) };
            if r != 0 {
                pr_warn!("dereg_mr of a C driver failed: {}\n", r);
            }
        }
    }
}

/// A C driver's address handle.
///
/// # Invariants
///
/// `ah` was made by the driver's `create_ah` on the structure `ib`, which outlives it.
pub(crate) struct DriverAh {
    ib: NonNull<bindings::ib_device>,
    ah: DriverObject<bindings::ib_ah>,
    /// Whether the driver's `destroy_ah` may sleep: only when the last destroyer said so (a
    /// C caller's flags); the core's own drops may come from any context.
    sleepable: AtomicBool,
    /// The source GID entry, held while the AH is (dropped after the driver destroyed it).
    _sgid: Option<SgidHold>,
}

// SAFETY: As for `DriverPd`.
unsafe impl Send for DriverAh {}
// SAFETY: As above.
unsafe impl Sync for DriverAh {}

impl AhObject for DriverAh {
    /// The AH's C structure, which a UD work request names (`DriverQp`'s posts).
    fn state(&self) -> *const () {
        self.ah.raw().cast_const().cast()
    }

    fn set_destroy_sleepable(&self, sleepable: bool) {
        self.sleepable.store(sleepable, Ordering::Relaxed);
    }
}

impl Drop for DriverAh {
    fn drop(&mut self) {
        // SAFETY: The structure outlives the AH (type invariant).
        if let Some(destroy) = unsafe { (*self.ib.as_ptr()).ops.destroy_ah } {
            let flags = if self.sleepable.load(Ordering::Relaxed) {
                bindings::rdma_destroy_ah_flags_RDMA_DESTROY_AH_SLEEPABLE
            } else {
                0
            };
            // SAFETY: Made by the driver, destroyed once, sleeping only when allowed.
            unsafe { destroy(self.ah.raw(), flags) };
        }
    }
}

impl PdObject for DriverPd {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn create_qp(
        &self,
        init: &QpInitDriver<'_, dyn CqObject, dyn SrqObject>,
    ) -> Result<NewQp<KBox<dyn QpObject>>> {
        if init.srq.is_some() {
            return Err(EOPNOTSUPP);
        }
        fn cq_of(c: &dyn CqObject) -> Result<&DriverCq> {
            c.as_any().downcast_ref::<DriverCq>().ok_or(EINVAL)
        }
        let (send_cq, recv_cq) = (cq_of(init.send_cq)?, cq_of(init.recv_cq)?);
        // SAFETY: The structure outlives its PDs (type invariant); the PD is live.
        let qp = unsafe { DriverQp::create(self.ib, self.pd.raw(), init, send_cq, recv_cq)? };
        let (qp_num, cap) = (qp.qp_num(), qp.made_cap());
        Ok(NewQp {
            qp: KBox::new(qp, GFP_KERNEL)?,
            qp_num,
            cap,
        })
    }

    fn get_dma_mr(&self, access: AccessFlags) -> Result<NewMr<KBox<dyn MrObject>>> {
        let get = self.ops().get_dma_mr.ok_or(EOPNOTSUPP)?;
        // SAFETY: The driver's op on its live PD.
        let mr = unsafe { get(self.pd.raw(), u32::from(access) as c_int) };
        // SAFETY: The driver's answer; C's `ib_get_dma_mr` fills these after the op.
        unsafe { self.own_mr(mr, bindings::ib_mr_type_IB_MR_TYPE_DMA, None) }
    }

    fn reg_user_mr(&self, init: &UserMrInit, udata: &Udata) -> Result<NewMr<KBox<dyn MrObject>>> {
        let reg = self.ops().reg_user_mr.ok_or(EOPNOTSUPP)?;
        let mut u = DriverUdata::new(udata, self.uctx);
        // SAFETY: The driver's op on its live PD, with the command's range, access and
        // buffers (C's `ib_uverbs_reg_mr`; no DMA handle).
        let mr = unsafe {
            reg(
                self.pd.raw(),
                init.start,
                init.length,
                init.iova,
                u32::from(init.access) as c_int,
                core::ptr::null_mut(),
                u.udata(),
            )
        };
        // SAFETY: The driver's answer; C's `ib_uverbs_reg_mr` fills these after the op.
        unsafe {
            self.own_mr(
                mr,
                bindings::ib_mr_type_IB_MR_TYPE_USER,
                Some((init.iova, init.length)),
            )
        }
    }

    fn alloc_mr(&self, max_num_sg: u32) -> Result<NewMr<KBox<dyn MrObject>>> {
        let alloc = self.ops().alloc_mr.ok_or(EOPNOTSUPP)?;
        // SAFETY: The driver's op on its live PD (C's `ib_alloc_mr`).
        let mr = unsafe {
            alloc(
                self.pd.raw(),
                bindings::ib_mr_type_IB_MR_TYPE_MEM_REG,
                max_num_sg,
            )
        };
        // SAFETY: The driver's answer; C's `ib_alloc_mr` fills these after the op.
        unsafe { self.own_mr(mr, bindings::ib_mr_type_IB_MR_TYPE_MEM_REG, None) }
    }

    fn create_srq(
        &self,
        _attr: &SrqAttr,
        _events: &EventNotifier,
        _user: Option<(&dyn UContextObject, &Udata)>,
    ) -> Result<(KBox<dyn SrqObject>, SrqAttr)> {
        Err(EOPNOTSUPP)
    }

    fn create_ah(&self, attr: &AhAttr, flags: Flags) -> Result<KBox<dyn AhObject>> {
        let create = self.ops().create_ah.ok_or(EOPNOTSUPP)?;
        self.make_ah(attr, flags, create, None)
    }

    fn create_user_ah(
        &self,
        ctx: &dyn UContextObject,
        attr: &AhAttr,
        udata: &Udata,
    ) -> Result<KBox<dyn AhObject>> {
        let create = self.ops().create_user_ah.ok_or(EOPNOTSUPP)?;
        let mut u = DriverUdata::new(udata, DriverUContext::of(ctx)?.raw());
        self.make_ah(attr, GFP_KERNEL, create, Some(&mut u))
    }

    fn create_user_qp(
        &self,
        ctx: &dyn UContextObject,
        init: &QpInitDriver<'_, dyn CqObject, dyn SrqObject>,
        udata: &Udata,
    ) -> Result<NewQp<Arc<dyn QpObject>>> {
        if init.srq.is_some() {
            return Err(EOPNOTSUPP);
        }
        let uctx = DriverUContext::of(ctx)?.raw();
        fn cq_of(c: &dyn CqObject) -> Result<&DriverCq> {
            c.as_any().downcast_ref::<DriverCq>().ok_or(EINVAL)
        }
        let (send_cq, recv_cq) = (cq_of(init.send_cq)?, cq_of(init.recv_cq)?);
        let kernel_init = QpInitDriver {
            qp_type: init.qp_type,
            port: init.port,
            send_cq: send_cq as &dyn CqObject,
            recv_cq: recv_cq as &dyn CqObject,
            cap: init.cap,
            sq_sig_all: init.sq_sig_all,
            srq: None,
            events: init.events,
        };
        // SAFETY: The structure outlives its PDs (type invariant); the PD is live; the context
        // is the driver's and outlives the QP (the core destroys a context's objects first).
        let qp = unsafe {
            DriverQp::create_user(
                self.ib,
                self.pd.raw(),
                uctx,
                &kernel_init,
                send_cq,
                recv_cq,
                udata,
            )?
        };
        let (qp_num, cap) = (qp.qp_num(), qp.made_cap());
        let qp: Arc<dyn QpObject> = Arc::new(qp, GFP_KERNEL)?;
        Ok(NewQp { qp, qp_num, cap })
    }
}
