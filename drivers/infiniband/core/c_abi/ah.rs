// SPDX-License-Identifier: GPL-2.0

//! Address handles for C modules: `rdma_create_ah` and `rdma_destroy_ah_user` (C's
//! `rdma_destroy_ah`), with C's names and signatures (C's `drivers/infiniband/core/verbs.c`),
//! and the conversions between C's `struct rdma_ah_attr` and the core's [`AhAttr`] that QP
//! modifies and queries use too. The `struct ib_ah` C code holds (`device`, `pd`, `type`) stands
//! for an [`Ah`] of the core, which a UD work request naming it reaches (`c_abi/data_path.rs`).

use crate::{
    attrs::Gid,
    c_abi::{
        object::{atomic, ptr_or_err, Faced},
        pd::{hold, pd_of, release},
    },
    verbs::{
        types::{AhAttr, GlobalRoute},
        Ah,
    },
};
use core::{ptr::NonNull, sync::atomic::Ordering};
use kernel::{
    alloc::Flags,
    bindings,
    ffi::{c_int, c_uint},
    prelude::*,
    sync::Arc,
};

/// The core's part of an AH made for a C module.
pub(crate) struct CAh {
    /// The AH.
    pub(crate) ah: Arc<Ah>,
}

/// An AH as C holds it.
pub(crate) type AhObject = Faced<CAh, bindings::ib_ah>;

/// The core's AH behind `ah`.
///
/// # Safety
///
/// `ah` was returned by [`rdma_create_ah`] and not destroyed.
pub(crate) unsafe fn ah_of<'a>(ah: *mut bindings::ib_ah) -> &'a Arc<Ah> {
    // SAFETY: The caller's contract.
    unsafe { &AhObject::core(ah).ah }
}

/// The address an InfiniBand or RoCE `rdma_ah_attr` holds (`EINVAL` for another type, or a
/// RoCE address without its global route, which RoCE needs).
pub(crate) fn ah_attr_from_c(a: &bindings::rdma_ah_attr) -> Result<AhAttr> {
    let roce = match a.type_ {
        bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB => false,
        bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE => true,
        _ => return Err(EINVAL),
    };
    let ib = if roce {
        bindings::ib_ah_attr::default()
    } else {
        // SAFETY: The union's `ib` member is the one an InfiniBand address fills.
        unsafe { a.__bindgen_anon_1.ib }
    };
    // SAFETY: The union's `roce` member is the one a RoCE address fills.
    let dmac = roce.then_some(unsafe { a.__bindgen_anon_1.roce.dmac });
    let grh = if u32::from(a.ah_flags) & bindings::ib_ah_flags_IB_AH_GRH != 0 {
        Some(GlobalRoute {
            // SAFETY: Every bit pattern of the GID union is its raw bytes.
            dgid: Gid(unsafe { a.grh.dgid.raw }),
            flow_label: a.grh.flow_label,
            sgid_index: a.grh.sgid_index,
            hop_limit: a.grh.hop_limit,
            traffic_class: a.grh.traffic_class,
            roce_dmac: dmac,
        })
    } else if roce {
        return Err(EINVAL);
    } else {
        None
    };
    Ok(AhAttr {
        dlid: ib.dlid,
        sl: a.sl,
        src_path_bits: ib.src_path_bits,
        static_rate: a.static_rate,
        port_num: u8::try_from(a.port_num).map_err(|_| EINVAL)?,
        grh,
    })
}

/// Writes `attr` into `out` as C's `rdma_ah_attr`: a RoCE address when its global route names
/// a next hop's MAC, else an InfiniBand one (no source GID attribute).
pub(crate) fn ah_attr_to_c(attr: &AhAttr, out: &mut bindings::rdma_ah_attr) {
    out.sl = attr.sl;
    out.static_rate = attr.static_rate;
    out.port_num = attr.port_num.into();
    match attr.grh.and_then(|g| g.roce_dmac) {
        Some(dmac) => {
            out.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE;
            out.__bindgen_anon_1.roce = bindings::roce_ah_attr { dmac };
        }
        None => {
            out.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB;
            out.__bindgen_anon_1.ib = bindings::ib_ah_attr {
                dlid: attr.dlid,
                src_path_bits: attr.src_path_bits,
            };
        }
    }
    out.grh.sgid_attr = core::ptr::null();
    match &attr.grh {
        Some(g) => {
            out.ah_flags = bindings::ib_ah_flags_IB_AH_GRH as u8;
            out.grh.dgid.raw = g.dgid.0;
            out.grh.flow_label = g.flow_label;
            out.grh.sgid_index = g.sgid_index;
            out.grh.hop_limit = g.hop_limit;
            out.grh.traffic_class = g.traffic_class;
        }
        None => out.ah_flags = 0,
    }
}

/// Makes the AH and its C structure.
///
/// # Safety
///
/// As for [`rdma_create_ah`].
unsafe fn create(
    pd: *mut bindings::ib_pd,
    ah_attr: *const bindings::rdma_ah_attr,
    flags: Flags,
) -> Result<NonNull<bindings::ib_ah>> {
    // SAFETY: `ah_attr` is readable (contract).
    let attr = ah_attr_from_c(unsafe { &*ah_attr })?;
    // SAFETY: `pd` is a live PD of ours (contract).
    let ah = Ah::create_with(unsafe { pd_of(pd) }, &attr, flags)?;
    let c = AhObject::alloc_with(CAh { ah }, flags)?;
    // SAFETY: `c` is the zeroed structure just allocated, not yet handed out; `pd` is live.
    unsafe {
        let p = &mut *c.as_ptr();
        p.device = (*pd).device;
        p.pd = pd;
        p.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB;
        atomic(&raw mut (*pd).usecnt).fetch_add(1, Ordering::Relaxed);
        // `rdma_destroy_ah` reads the PD: it lives until then.
        hold(pd);
    }
    Ok(c)
}

/// C's `rdma_create_ah`: an AH in `pd` for `ah_attr`; `ERR_PTR(-EINVAL)` for an address that is
/// not InfiniBand or names a port the device does not have, the driver's errno otherwise.
/// `flags` says whether the caller may sleep (`RDMA_CREATE_AH_SLEEPABLE`): without it (ib_cm
/// makes the AH of each MAD under a spinlock) nothing here sleeps and memory comes from
/// `GFP_ATOMIC`, as in C.
///
/// # Safety
///
/// `pd` was returned by `__ib_alloc_pd` and not deallocated; `ah_attr` is readable.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_create_ah(
    pd: *mut bindings::ib_pd,
    ah_attr: *mut bindings::rdma_ah_attr,
    flags: c_uint,
) -> *mut bindings::ib_ah {
    let gfp = if flags & bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE != 0 {
        GFP_KERNEL
    } else {
        GFP_ATOMIC
    };
    // SAFETY: The caller's contract.
    ptr_or_err(unsafe { create(pd, ah_attr, gfp) })
}

/// C's `rdma_destroy_ah_user` (C's `rdma_destroy_ah` passes no `udata`): destroys the AH; 0,
/// `-EINVAL` for user data.
///
/// # Safety
///
/// `ah` was returned by [`rdma_create_ah`]; it is not used again, nor posted in a work request
/// still queued.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_destroy_ah_user(
    ah: *mut bindings::ib_ah,
    flags: u32,
    udata: *mut bindings::ib_udata,
) -> c_int {
    if !udata.is_null() {
        return EINVAL.to_errno();
    }
    // C callers destroy AHs under spinlocks (ib_cm, flags 0): the driver is told whether it may
    // sleep.
    let sleepable = flags & bindings::rdma_destroy_ah_flags_RDMA_DESTROY_AH_SLEEPABLE != 0;
    // SAFETY: `ah` is live (contract).
    unsafe {
        AhObject::core(ah)
            .ah
            .driver()
            .set_destroy_sleepable(sleepable)
    };
    // SAFETY: `ah` is live (contract); so is its PD, which it holds.
    unsafe {
        let pd = (*ah).pd;
        atomic(&raw mut (*pd).usecnt).fetch_sub(1, Ordering::Relaxed);
        AhObject::free(ah);
        release(pd);
    }
    0
}
