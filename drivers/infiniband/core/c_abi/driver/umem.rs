// SPDX-License-Identifier: GPL-2.0

//! User memory of C drivers' memory regions (C's `umem.c`): `ib_umem_get_attr_or_va` pins the
//! calling process's pages (the core's [`PinnedPages`]: the same limits, charge and errnos as
//! the core's own drivers get), lists them in the `struct ib_umem`'s append table as C does
//! (whole pages, merged into segments as large as the device takes) and maps it for the device
//! (a software device's virtual addresses, C's `ib_dma_virt_map_sg`, or its DMA device's
//! mappings); `ib_umem_release` undoes it; `ib_umem_check_rereg`.
//!
//! Not served: on-demand paging (`IB_ACCESS_ON_DEMAND`, `-EOPNOTSUPP` as C without ODP) and
//! dma-buf memory; the bundles the core passes to drivers carry no attribute, so memory is
//! always named by address.

use crate::c_abi::object::err_ptr;
use kernel::{
    bindings,
    ffi::{c_int, c_uint},
    page::PAGE_SIZE,
    prelude::*,
    user_pages::{Charge, PinnedPages},
};

/// C's `struct ib_umem` as the core makes it: the C structure first (what drivers get), then
/// what undoing it needs.
///
/// # Invariants
///
/// Once `charge` is set: `umem.sgt_append` lists pages pinned by the core, each once, in
/// entries of whole pages (offset 0), pinned writable iff `umem.writable`; the table is mapped
/// for `dma_dev` (with the umem's `dma_attrs`) when that is not null, else its DMA addresses
/// are the pages' kernel addresses; `charge` is the process's charge for the pages. Before, the
/// umem owns nothing but its memory.
#[repr(C)]
struct CoreUmem {
    umem: bindings::ib_umem,
    dma_dev: *mut bindings::device,
    charge: Option<Charge>,
}

/// The next entry of a scatter list, or null.
///
/// # Safety
///
/// `sg` is an entry of a live table.
unsafe fn next(sg: *mut bindings::scatterlist) -> *mut bindings::scatterlist {
    // SAFETY: The caller's contract.
    unsafe { bindings::sg_next(sg) }
}

/// Calls `f` on the first `n` entries from `sg` on.
///
/// # Safety
///
/// `sg` is the first entry of a live table with at least `n` entries.
unsafe fn for_each_sg(
    mut sg: *mut bindings::scatterlist,
    n: c_uint,
    mut f: impl FnMut(*mut bindings::scatterlist),
) {
    for _ in 0..n {
        if sg.is_null() {
            break;
        }
        f(sg);
        // SAFETY: `sg` is an entry of the live table (contract).
        sg = unsafe { next(sg) };
    }
}

impl Drop for CoreUmem {
    fn drop(&mut self) {
        if self.charge.is_none() {
            // Not built: the pages, if any, are still the caller's `PinnedPages`.
            return;
        }
        let sgt = &raw mut self.umem.sgt_append.sgt;
        if !self.dma_dev.is_null() {
            // SAFETY: The table was mapped for this device with these attributes (type
            // invariant); the device's driver keeps it bound while its MRs live.
            unsafe {
                bindings::dma_unmap_sgtable(
                    self.dma_dev,
                    sgt,
                    bindings::dma_data_direction::DMA_BIDIRECTIONAL,
                    self.umem.dma_attrs,
                )
            };
        }
        let dirty = self.umem.writable() != 0;
        // SAFETY: The table's entries are whole pinned pages, each pinned once (type
        // invariant): each entry's range is unpinned here, once (C's `__ib_umem_release`).
        unsafe {
            for_each_sg((*sgt).sgl, (*sgt).orig_nents, |sg| {
                bindings::unpin_user_page_range_dirty_lock(
                    bindings::rdma_rs_sg_page(sg),
                    ((*sg).length as usize).div_ceil(PAGE_SIZE),
                    dirty,
                )
            })
        };
        // SAFETY: The table is unmapped and its pages unpinned; freed once, here. The charge
        // goes back after this, when the field drops.
        unsafe { bindings::sg_free_append_table(&raw mut self.umem.sgt_append) };
    }
}

/// C's `ib_access_writable`: whether the device writes the memory.
fn writable(access: c_int) -> bool {
    let w = bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE
        | bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE
        | bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC
        | bindings::ib_access_flags_IB_ACCESS_MW_BIND;
    (access as u32) & w != 0
}

/// Pins and maps `size` bytes at `addr` of the calling process for `device`.
///
/// # Safety
///
/// `device` is a registered C driver's structure; called in the task whose memory it is.
unsafe fn get(
    device: *mut bindings::ib_device,
    addr: u64,
    size: usize,
    access: c_int,
) -> Result<KBox<CoreUmem>> {
    // SAFETY: The caller's contract.
    let dev = unsafe { &*device };
    if dev.cc_dma_bounce() != 0 {
        return Err(EOPNOTSUPP);
    }
    if (access as u32) & bindings::ib_access_flags_IB_ACCESS_ON_DEMAND != 0 {
        return Err(EOPNOTSUPP);
    }
    let addr = usize::try_from(addr).map_err(|_| EINVAL)?;
    let w = writable(access);
    let pinned = PinnedPages::pin(addr, size, w)?;
    let dma_dev = dev.dma_device;
    // C's `ib_dma_max_seg_size`: a software device takes any size.
    let max_seg = if dma_dev.is_null() {
        u32::MAX
    } else {
        // SAFETY: The driver's DMA device, bound while the driver is.
        unsafe { bindings::rdma_rs_dma_max_seg_size(dma_dev) }
    };
    let mut attrs = bindings::DMA_ATTR_REQUIRE_COHERENT as usize;
    if (access as u32) & bindings::ib_access_flags_IB_ACCESS_RELAXED_ORDERING != 0 {
        attrs |= bindings::DMA_ATTR_WEAK_ORDERING as usize;
    }
    let mut u = KBox::new(
        CoreUmem {
            // SAFETY: A plain C structure: all zeroes is valid (an empty table).
            umem: unsafe { core::mem::zeroed() },
            dma_dev: core::ptr::null_mut(),
            charge: None,
        },
        GFP_KERNEL,
    )?;
    let pages = pinned.pages();
    let count = c_uint::try_from(pages.len()).map_err(|_| EINVAL)?;
    // SAFETY: The table is empty; `pages` holds `count` pinned pages, listed whole.
    let r = unsafe {
        bindings::sg_alloc_append_table_from_pages(
            &raw mut u.umem.sgt_append,
            pages.as_ptr().cast_mut(),
            count,
            0,
            pages.len() * PAGE_SIZE,
            max_seg,
            0,
            bindings::GFP_KERNEL,
        )
    };
    if r != 0 {
        // SAFETY: Whatever the failed call allocated is freed; no page of it is unpinned here
        // (`pinned` unpins them all when it drops; the umem, not built, owns none).
        unsafe { bindings::sg_free_append_table(&raw mut u.umem.sgt_append) };
        return Err(Error::from_errno(r));
    }
    let sgt = &raw mut u.umem.sgt_append.sgt;
    if dma_dev.is_null() {
        // SAFETY: `device` has no DMA device: its addresses are kernel addresses.
        unsafe { ib_dma_virt_map_sg(device, (*sgt).sgl, (*sgt).orig_nents as c_int) };
        // SAFETY: The table is live.
        unsafe { (*sgt).nents = (*sgt).orig_nents };
    } else {
        // SAFETY: The table is live; the DMA device is bound while its driver is.
        let r = unsafe {
            bindings::dma_map_sgtable(
                dma_dev,
                sgt,
                bindings::dma_data_direction::DMA_BIDIRECTIONAL,
                attrs,
            )
        };
        if r != 0 {
            // SAFETY: Not mapped; freed once. `pinned` unpins the pages when it drops.
            unsafe { bindings::sg_free_append_table(&raw mut u.umem.sgt_append) };
            return Err(Error::from_errno(r));
        }
        u.dma_dev = dma_dev;
    }
    // SAFETY: From here the umem unpins each page once, per table entry (`Drop`), which covers
    // every pinned page as whole pages.
    let charge = unsafe { pinned.into_pins() };
    u.umem.owning_mm = charge.mm();
    u.charge = Some(charge);
    u.umem.ibdev = device;
    u.umem.iova = addr as u64;
    u.umem.length = size;
    u.umem.address = addr;
    u.umem.dma_attrs = attrs;
    u.umem.set_writable(u32::from(w));
    // INVARIANT: Built above.
    Ok(u)
}

/// C's `ib_umem_get_attr_or_va`: pins `size` bytes at user address `addr` of the calling
/// process for a C driver's memory region and maps them for its device. An `ERR_PTR` on
/// failure: `-EINVAL` for an empty or wrapping range, `-EFAULT` for memory not mapped,
/// `-ENOMEM` past the process's locked-memory limit, `-EPERM` with no locking allowed,
/// `-EOPNOTSUPP` for on-demand paging.
///
/// # Safety
///
/// `device` is a registered C driver's structure; called in the process whose memory it is.
/// `attrs` is null or a bundle the core made (never with attributes).
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_umem_get_attr_or_va(
    device: *mut bindings::ib_device,
    _attrs: *const bindings::uverbs_attr_bundle,
    _attr_id: u16,
    addr: u64,
    size: usize,
    access: c_int,
) -> *mut bindings::ib_umem {
    // SAFETY: The caller's contract.
    match unsafe { get(device, addr, size, access) } {
        // The C structure is the first field: its address is the box's.
        Ok(u) => KBox::into_raw(u).cast(),
        Err(e) => err_ptr(e),
    }
}

/// C's `ib_umem_release`: unmaps, unpins and frees a umem of [`ib_umem_get_attr_or_va`];
/// nothing for null or an `ERR_PTR`.
///
/// # Safety
///
/// `umem` is null, an `ERR_PTR`, or came from [`ib_umem_get_attr_or_va`] and is released once,
/// once the device no longer uses it.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_umem_release(umem: *mut bindings::ib_umem) {
    if umem.is_null() || (umem as usize) >= (-4095isize) as usize {
        return;
    }
    // SAFETY: Made by `ib_umem_get_attr_or_va` as the first field of a boxed `CoreUmem`
    // (contract); released once.
    drop(unsafe { KBox::from_raw(umem.cast::<CoreUmem>()) });
}

/// C's `ib_dma_virt_map_sg`: a software device's DMA addresses are its kernel addresses: each
/// of the `nents` entries from `sg` gets its data's address and length. Returns `nents`.
///
/// # Safety
///
/// `sg` is the first entry of a live table with at least `nents` entries of kernel pages.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_dma_virt_map_sg(
    _dev: *mut bindings::ib_device,
    sg: *mut bindings::scatterlist,
    nents: c_int,
) -> c_int {
    // SAFETY: The caller's contract.
    unsafe {
        for_each_sg(sg, nents.max(0) as c_uint, |s| {
            bindings::rdma_rs_sg_set_dma(
                s,
                bindings::rdma_rs_sg_virt(s) as bindings::dma_addr_t,
                (*s).length,
            )
        })
    };
    nents
}

/// C's `ib_umem_check_rereg`: whether a re-registration with `flags` and `new_access_flags`
/// may keep `umem`: 0 for none; `-EOPNOTSUPP` for a dma-buf; `-EACCES` when the access
/// becomes writable without a new translation on memory pinned read-only.
///
/// # Safety
///
/// `umem` is null or a readable `struct ib_umem`.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_umem_check_rereg(
    umem: *mut bindings::ib_umem,
    flags: c_int,
    new_access_flags: c_int,
) -> c_int {
    if umem.is_null() {
        return 0;
    }
    // SAFETY: The caller's contract.
    let u = unsafe { &*umem };
    if u.is_dmabuf() != 0 {
        return EOPNOTSUPP.to_errno();
    }
    let rereg_access = bindings::ib_mr_rereg_flags_IB_MR_REREG_ACCESS as c_int;
    let rereg_trans = bindings::ib_mr_rereg_flags_IB_MR_REREG_TRANS as c_int;
    if flags & rereg_access != 0
        && flags & rereg_trans == 0
        && writable(new_access_flags)
        && u.writable() == 0
    {
        return EACCES.to_errno();
    }
    0
}
