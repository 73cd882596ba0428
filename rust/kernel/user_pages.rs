// SPDX-License-Identifier: GPL-2.0

//! User memory a device reads and writes: the calling process's pages pinned for as long as the
//! device may use them ([`PinnedPages`], C's `pin_user_pages_fast` with `FOLL_LONGTERM`, as
//! `ib_umem_get` pins memory registrations), and their DMA mapping for one device
//! ([`DmaMappedPages`], C's `sg_alloc_table_from_pages_segment` and `dma_map_sgtable`).
//!
//! # Lifetimes
//!
//! Pinned pages stay in memory (and at the same physical place) until the [`PinnedPages`] is
//! dropped, whatever the process does with its mapping meanwhile; pages pinned writable are
//! marked dirty when they are unpinned. A [`DmaMappedPages`] owns its pinned pages: it unmaps
//! them from the device, then unpins them, when it is dropped. The caller must drop it while the
//! device is still bound, and only once the device can no longer access the memory. Once mapped,
//! the pages are known by the scatter table alone (the page list is freed, as C's `ib_umem_get`
//! frees its own), and they are unpinned a contiguous range at a time, as C's
//! `__ib_umem_release` unpins them.
//!
//! C headers: [`include/linux/mm.h`](srctree/include/linux/mm.h),
//! [`include/linux/scatterlist.h`](srctree/include/linux/scatterlist.h)

use crate::{
    bindings,
    device::{Bound, Device},
    dma::DataDirection,
    error::to_result,
    page::PAGE_SIZE,
    prelude::*,
    types::Opaque,
};
use core::ptr::NonNull;

/// Most pages pinned by one call of `pin_user_pages_fast` (C's `ib_umem_get` asks for a page of
/// page pointers at a time).
const PIN_BATCH: usize = PAGE_SIZE / core::mem::size_of::<*mut bindings::page>();

/// The calling process's pages behind a range of its memory, pinned.
///
/// # Invariants
///
/// Every pointer in `pages` is a page pinned by `pin_user_pages_fast` (with `FOLL_WRITE` when
/// `writable`), unpinned only by `drop`.
pub struct PinnedPages {
    pages: KVVec<*mut bindings::page>,
    writable: bool,
    charged: Charge,
}

/// The process charged for pinned pages (`pinned_vm`, its mm grabbed) and how many pages were
/// charged; given back when dropped.
pub struct Charge(Option<(NonNull<bindings::mm_struct>, usize)>);

impl Charge {
    /// The charged process's memory (grabbed while the charge lives), null for no charge.
    pub fn mm(&self) -> *mut bindings::mm_struct {
        self.0.map_or(core::ptr::null_mut(), |(mm, _)| mm.as_ptr())
    }
}

// SAFETY: The charge is an mm reference and a count, given back from any thread.
unsafe impl Send for Charge {}
// SAFETY: `&Charge` gives nothing access.
unsafe impl Sync for Charge {}

impl Drop for Charge {
    fn drop(&mut self) {
        if let Some((mm, count)) = self.0.take() {
            // SAFETY: `mm` was grabbed with `count` pages charged by `PinnedPages::pin`; both
            // are given back once, here.
            unsafe { bindings::rdma_rs_pinned_vm_uncharge(mm.as_ptr(), count as _) };
        }
    }
}

// SAFETY: The pages are pinned, not tied to the pinning thread; unpinning may happen on any
// thread.
unsafe impl Send for PinnedPages {}
// SAFETY: `&PinnedPages` only reads the pointer list.
unsafe impl Sync for PinnedPages {}

impl PinnedPages {
    /// Pins the pages that hold the `len` bytes at user address `addr` of the calling process,
    /// for writing too when `writable` (C's `ib_umem_get`). An empty or wrapping range is
    /// `EINVAL`; memory that is not mapped (or not writable when asked to be) is `EFAULT`, as
    /// is any range for a task without user memory (a kernel thread). The pages are charged to
    /// the process's pinned memory until they are unpinned, as C charges them: past
    /// `RLIMIT_MEMLOCK`, a task without `CAP_IPC_LOCK` gets `ENOMEM`.
    pub fn pin(addr: usize, len: usize, writable: bool) -> Result<Self> {
        if len == 0 {
            return Err(EINVAL);
        }
        let end = addr.checked_add(len).ok_or(EINVAL)?;
        let first = addr & !(PAGE_SIZE - 1);
        let last = end.checked_next_multiple_of(PAGE_SIZE).ok_or(EINVAL)?;
        let count = (last - first) / PAGE_SIZE;
        // C's `ib_umem_get` refuses more pages than an `unsigned int` counts (umem.c:220).
        if count > c_uint::MAX as usize {
            return Err(EINVAL);
        }
        // A task without user memory (a kernel thread) has nothing to pin. (Asked of C: the
        // field offsets of 7.3's generated `task_struct` binding do not match the compiled
        // kernel's here, so `current!().mm()` reads the wrong field.)
        // SAFETY: Reads the calling task's own `mm` pointer; always valid in task context.
        if !unsafe { bindings::rdma_rs_current_has_mm() } {
            return Err(EFAULT);
        }
        // C's `ib_umem_get`: no memory locking at all for this task (a zero `RLIMIT_MEMLOCK`
        // without `CAP_IPC_LOCK`) is `EPERM`.
        // SAFETY: Reads the calling task's limits and capabilities.
        if !unsafe { bindings::can_do_mlock() } {
            return Err(EPERM);
        }
        let mut this = Self {
            pages: KVVec::new(),
            writable,
            charged: Charge(None),
        };
        let mut err: c_int = 0;
        // SAFETY: Called in task context; on success the helper returns the calling process's
        // mm, grabbed, with `count` pages charged, which `drop` gives back.
        let mm = unsafe { bindings::rdma_rs_pinned_vm_charge(count as _, &mut err) };
        match NonNull::new(mm) {
            Some(mm) => this.charged = Charge(Some((mm, count))),
            None => return Err(Error::from_errno(err)),
        }
        // The list grows with what is pinned (C pins in batches too): a range larger than the
        // memory mapped there fails with `EFAULT` where the mapping ends, without first asking
        // for a list of its full size (which past 2 GiB is a warning of the allocator).
        let mut pages = KVVec::new();
        let mut flags = bindings::FOLL_LONGTERM;
        if writable {
            flags |= bindings::FOLL_WRITE;
        }
        while pages.len() < count {
            let want = (count - pages.len()).min(PIN_BATCH);
            let start = first + pages.len() * PAGE_SIZE;
            if let Err(e) = pages.reserve(want, GFP_KERNEL) {
                this.pages = pages;
                return Err(e.into());
            }
            let spare = pages.spare_capacity_mut();
            // SAFETY: `spare` has room for at least `want` page pointers (reserved just
            // above); `pin_user_pages_fast` writes at most `want` of them.
            let got = unsafe {
                bindings::pin_user_pages_fast(
                    start,
                    want as c_int,
                    flags as u32,
                    spare.as_mut_ptr().cast(),
                )
            };
            if got <= 0 {
                // Nothing more could be pinned: what was pinned is unpinned when `this` drops.
                this.pages = pages;
                return Err(if got < 0 {
                    Error::from_errno(got)
                } else {
                    EFAULT
                });
            }
            // SAFETY: `pin_user_pages_fast` initialised `got` (at most `want`) more entries.
            unsafe { pages.inc_len(got as usize) };
        }
        // INVARIANT: every entry was pinned above.
        this.pages = pages;
        Ok(this)
    }

    /// How many pages are pinned.
    pub fn page_count(&self) -> usize {
        self.pages.len()
    }

    /// The pinned pages, in address order.
    pub fn pages(&self) -> &[*mut bindings::page] {
        &self.pages
    }

    /// Gives up the page list (its memory freed) but not the pins, nor the charge, which the
    /// caller takes (the charge is given back when it is dropped: after the pages are unpinned).
    ///
    /// # Safety
    ///
    /// The caller unpins every page of the list exactly once (dirty if [`Self::writable`]).
    pub unsafe fn into_pins(mut self) -> Charge {
        let charge = core::mem::replace(&mut self.charged, Charge(None));
        // The list goes; the pages stay pinned (the caller's contract): `drop` then has no page
        // to unpin and no charge to give back.
        self.pages = KVVec::new();
        charge
    }

    /// Whether the pages were pinned for writing.
    pub fn writable(&self) -> bool {
        self.writable
    }
}

impl Drop for PinnedPages {
    fn drop(&mut self) {
        if !self.pages.is_empty() {
            // SAFETY: The pages were pinned and are unpinned only here (type invariant);
            // writable ones are marked dirty, as C's `ib_umem_release`.
            unsafe {
                bindings::unpin_user_pages_dirty_lock(
                    self.pages.as_mut_ptr(),
                    self.pages.len() as _,
                    self.writable,
                )
            };
        }
    }
}

/// Pinned user pages mapped for DMA by one device, for as long as the device is bound
/// (`'a`: the mapping borrows the bound device, and is undone through its DMA operations when it
/// drops).
///
/// # Invariants
///
/// `sgt` holds a scatter list built from `page_count` pinned pages (pinned for writing when
/// `writable`) and mapped with `dma_map_sgtable(dev, sgt, dir, MAP_ATTRS)`; its entries
/// (`orig_nents`) cover each of those pages once ([`pages_of`]). The table is unmapped, its
/// pages unpinned and the table freed only by `drop`; `_charge` is the process's charge for them.
pub struct DmaMappedPages<'a> {
    sgt: KBox<Opaque<bindings::sg_table>>,
    dev: &'a Device<Bound>,
    dir: DataDirection,
    offset: usize,
    len: usize,
    page_count: usize,
    writable: bool,
    /// The process's charge for the pages, given back when the mapping drops, after `drop`.
    _charge: Charge,
}

/// How many pages scatter list entry `sg` spans: from its first page, its offset and length.
///
/// # Safety
///
/// `sg` is an entry of a live table.
unsafe fn pages_of(sg: *mut bindings::scatterlist) -> usize {
    // SAFETY: The caller's contract.
    let (offset, length) = unsafe { ((*sg).offset as usize, (*sg).length as usize) };
    (offset + length).div_ceil(PAGE_SIZE)
}

/// Calls `f` on the first `left` entries of a scatter list from `sg` on (a table's `orig_nents`
/// for the entries as built, `nents` for the DMA-mapped ones).
///
/// # Safety
///
/// `sg` is the first entry of a live table with at least `left` entries.
unsafe fn for_each_entry(
    mut sg: *mut bindings::scatterlist,
    mut left: c_uint,
    mut f: impl FnMut(*mut bindings::scatterlist),
) {
    while left > 0 && !sg.is_null() {
        f(sg);
        // SAFETY: `sg` is an entry of the table; `sg_next` gives the next one or NULL.
        sg = unsafe { bindings::sg_next(sg) };
        left -= 1;
    }
}

/// The attributes of every mapping: coherent DMA required (C's `ib_umem_get` maps user memory
/// with `DMA_ATTR_REQUIRE_COHERENT`). Memory a device reads and writes at any time while it is
/// registered cannot go through a bounce buffer, whose copies are made only at map and unmap
/// time: such a mapping fails instead, and unmapping has nothing to copy back.
const MAP_ATTRS: c_ulong = bindings::DMA_ATTR_REQUIRE_COHERENT as c_ulong;

// SAFETY: The mapping is a property of the device and the memory, not of a thread.
unsafe impl Send for DmaMappedPages<'_> {}
// SAFETY: `&DmaMappedPages` only reads the mapped list.
unsafe impl Sync for DmaMappedPages<'_> {}

impl<'a> DmaMappedPages<'a> {
    /// Maps `pinned` for `dev` in direction `dir`: the `len` bytes from `offset` in the first
    /// pinned page. The mapping cannot outlive the device's binding.
    pub fn map(
        dev: &'a Device<Bound>,
        pinned: PinnedPages,
        offset: usize,
        len: usize,
        dir: DataDirection,
    ) -> Result<Self> {
        if offset >= PAGE_SIZE || len == 0 || offset + len > pinned.page_count() * PAGE_SIZE {
            return Err(EINVAL);
        }
        // The table's page count is a C `unsigned int` (C's `ib_umem_get` refuses more,
        // umem.c:220): never truncated.
        let page_count = c_uint::try_from(pinned.page_count()).map_err(|_| EINVAL)?;
        let sgt = KBox::new(Opaque::<bindings::sg_table>::zeroed(), GFP_KERNEL)?;
        // SAFETY: `sgt` is a zeroed table; `pages` holds `page_count` valid page pointers,
        // which stay pinned while the table exists (`drop` unpins them, then frees it).
        to_result(unsafe {
            bindings::sg_alloc_table_from_pages_segment(
                sgt.get(),
                pinned.pages.as_ptr().cast_mut(),
                page_count,
                offset as c_uint,
                len as c_ulong,
                u32::MAX,
                GFP_KERNEL.as_raw(),
            )
        })?;
        // The entries must cover each pinned page once: they are what is unpinned at the end.
        let mut covered = 0;
        // SAFETY: `sgt` was just filled.
        unsafe {
            let t = sgt.get();
            for_each_entry((*t).sgl, (*t).orig_nents, |sg| covered += pages_of(sg));
        }
        let mapped = if covered == pinned.page_count() {
            // SAFETY: `sgt` was just filled; `dev` is bound (`&Device<Bound>`).
            to_result(unsafe {
                bindings::dma_map_sgtable(dev.as_raw(), sgt.get(), dir.into(), MAP_ATTRS)
            })
        } else {
            Err(EINVAL)
        };
        if let Err(e) = mapped {
            // SAFETY: The table was allocated above and is not mapped; `pinned` unpins its pages
            // when it drops.
            unsafe { bindings::sg_free_table(sgt.get()) };
            return Err(e);
        }
        let (page_count, writable) = (pinned.page_count(), pinned.writable());
        // SAFETY: `drop` unpins each page of the table's entries once, which are the pinned
        // pages (checked above), dirty if they were pinned writable.
        let charge = unsafe { pinned.into_pins() };
        // INVARIANT: mapped above; the table's entries cover the `page_count` pinned pages.
        Ok(Self {
            sgt,
            dev,
            dir,
            offset,
            len,
            page_count,
            writable,
            _charge: charge,
        })
    }

    /// How many pages are pinned for the mapping.
    pub fn page_count(&self) -> usize {
        self.page_count
    }

    /// The offset of the mapped range in its first page.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The length of the mapped range.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapped range is empty (never: [`DmaMappedPages::map`] refuses that).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Calls `f` with the device address of each page-sized, page-aligned block of the mapping,
    /// in order (what a device's translation table lists: C's `rdma_umem_for_each_dma_block`
    /// with `PAGE_SIZE` blocks).
    pub fn for_each_dma_page(&self, mut f: impl FnMut(u64)) {
        let t = self.sgt.get();
        // SAFETY: The table is mapped (type invariant): its first `nents` entries are the DMA
        // ones, read only here.
        unsafe {
            for_each_entry((*t).sgl, (*t).nents, |sg| {
                let (addr, len) = (
                    bindings::sg_dma_address(sg),
                    u64::from(bindings::sg_dma_len(sg)),
                );
                let page = PAGE_SIZE as u64;
                let mut a = addr & !(page - 1);
                while a < addr + len {
                    f(a);
                    a += page;
                }
            })
        }
    }
}

impl Drop for DmaMappedPages<'_> {
    fn drop(&mut self) {
        let sgt = self.sgt.get();
        // SAFETY: The table is mapped for `dev` (type invariant), which is still bound (the
        // mapping borrows it as `&'a Device<Bound>`); it is unmapped here, once.
        unsafe { bindings::dma_unmap_sgtable(self.dev.as_raw(), sgt, self.dir.into(), MAP_ATTRS) };
        let dirty = self.writable;
        // SAFETY: The table is live; its entries cover the pinned pages, each once (type
        // invariant): a range is unpinned per entry, dirty when written (C's
        // `__ib_umem_release`), and only here.
        unsafe {
            for_each_entry((*sgt).sgl, (*sgt).orig_nents, |sg| {
                bindings::unpin_user_page_range_dirty_lock(
                    bindings::rdma_rs_sg_page(sg),
                    pages_of(sg) as _,
                    dirty,
                )
            })
        };
        // SAFETY: The table is no longer mapped and its pages are unpinned; freed once, here.
        // The charge goes when the fields drop.
        unsafe { bindings::sg_free_table(sgt) };
    }
}

#[macros::kunit_tests(rdma_rs_user_pages)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_checked_before_pinning() {
        assert_eq!(PinnedPages::pin(0x1000, 0, false).err(), Some(EINVAL));
        assert_eq!(
            PinnedPages::pin(usize::MAX - 10, 100, true).err(),
            Some(EINVAL)
        );
    }

    #[test]
    fn a_kernel_thread_has_no_user_pages() {
        // KUnit runs in a kernel thread: no user memory, so nothing is pinned.
        assert_eq!(PinnedPages::pin(0x10000, 4096, false).err(), Some(EFAULT));
    }
}
