// SPDX-License-Identifier: GPL-2.0

//! Device memory mapped into user space that can be taken back (C's `rdma_user_mmap_io`, the
//! `rdma_umap_ops` VMA operations and `uverbs_user_mmap_disassociate`).
//!
//! A file that lets user space map device pages (doorbell pages of an RDMA device) keeps a
//! [`UserMaps`]: every VMA mapped through it is tracked, with a reference to what it maps
//! (the driver's entry, freed when the last VMA mapping it goes). When the device goes away
//! while processes still have the pages mapped, [`UserMaps::zap_all`] clears every such VMA's
//! page table entries and drops the references; a later touch faults in a zero page (the
//! process sees its stores go nowhere instead of reaching a device that is gone), and new
//! mappings are refused.
//!
//! Lock order: the mmap lock of an `mm`, then the maps' lock (the VMA operations are called
//! with the mmap lock held).
//!
//! C header: [`include/linux/mm.h`](srctree/include/linux/mm.h)

use crate::{
    alloc::Flags,
    bindings,
    mm::{virt::flags, virt::VmaNew, Mm},
    new_mutex,
    page::Page,
    prelude::*,
    sync::{Arc, Mutex},
};

/// How the CPU writes the mapped pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caching {
    /// Write-combined (blue-flame doorbell pages).
    WriteCombine,
    /// Uncached (plain doorbell pages, clock registers).
    Uncached,
}

/// The page offset `vma` maps the file at (`vm_pgoff`: the byte offset given to `mmap`, in
/// pages), which says what a driver maps there.
pub fn pgoff(vma: &VmaNew) -> u64 {
    // SAFETY: `vma` is a live VMA being set up (the reference says so).
    unsafe { bindings::rdma_rs_vma_pgoff(vma.as_ptr()) as u64 }
}

/// What a mapping keeps alive until it is unmapped or zapped (the driver's entry).
pub type MapRef = Arc<dyn Send + Sync>;

/// One tracked VMA (C's `struct rdma_umap_priv`), its `vm_private_data`.
struct Tracked {
    maps: Arc<UserMaps>,
    vma: *mut bindings::vm_area_struct,
    /// The VMA's address space (constant for the VMA's life).
    mm: *mut bindings::mm_struct,
    entry: Option<MapRef>,
}

struct Inner {
    /// The tracked VMAs (boxes owned by their VMAs' private data).
    list: KVec<*mut Tracked>,
    /// Zapped: nothing may be mapped any more.
    gone: bool,
    /// The page writable VMAs fault in once zapped (allocated on the first such fault).
    zero_page: Option<Page>,
}

/// The device mappings of one file.
#[pin_data]
pub struct UserMaps {
    #[pin]
    inner: Mutex<Inner>,
}

// SAFETY: The raw pointers in the list are only dereferenced under the lock, while the VMAs
// they belong to exist (a VMA removes its entry under the lock before it is freed).
unsafe impl Send for UserMaps {}
// SAFETY: As for `Send`: all access to the list is under the lock.
unsafe impl Sync for UserMaps {}

impl UserMaps {
    /// No mappings yet.
    pub fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                inner <- new_mutex!(Inner {
                    list: KVec::new(),
                    gone: false,
                    zero_page: None,
                }, "UserMaps::inner"),
            }),
            GFP_KERNEL,
        )
    }

    /// Maps `size` bytes of I/O memory starting at page frame `pfn` over the whole of `vma`,
    /// which must be a shared mapping of exactly `size` bytes (`EINVAL`), and tracks it with
    /// `entry` (C's `rdma_user_mmap_io`). `EIO` once zapped; `EAGAIN` if the page tables
    /// cannot be set up.
    pub fn map_io(
        self: &Arc<Self>,
        vma: &VmaNew,
        pfn: usize,
        size: usize,
        caching: Caching,
        entry: Option<MapRef>,
    ) -> Result {
        if vma.flags() & flags::SHARED == 0 {
            return Err(EINVAL);
        }
        if vma.end() - vma.start() != size {
            return Err(EINVAL);
        }
        let raw = vma.as_ptr();
        let tracked = KBox::new(
            Tracked {
                maps: self.clone(),
                vma: raw,
                mm: vma.mm().as_raw(),
                entry,
            },
            GFP_KERNEL,
        )?;
        let mut inner = self.inner.lock();
        if inner.gone {
            return Err(EIO);
        }
        inner.list.reserve(1, GFP_KERNEL)?;
        // SAFETY: `vma` is being set up by its file's `mmap`, with the mmap lock held for
        // writing; the range is the whole VMA.
        let r =
            unsafe { bindings::rdma_rs_io_remap(raw, pfn, size, caching == Caching::WriteCombine) };
        if r != 0 {
            return Err(EAGAIN);
        }
        let ptr = KBox::into_raw(tracked);
        // Room was reserved above.
        let _ = inner.list.push_within_capacity(ptr);
        // SAFETY: `vma` is being set up (above); its private data is ours from now on and is
        // freed by `close`. The operations are static.
        unsafe { bindings::rdma_rs_vma_set_ops(raw, &VM_OPS, ptr.cast()) };
        Ok(())
    }

    /// Takes every mapping back (C's `uverbs_user_mmap_disassociate`): each tracked VMA's page
    /// table entries are cleared and its entry dropped, one address space at a time (its mmap
    /// lock before the maps' lock); from now on nothing can be mapped. Sleeps.
    pub fn zap_all(&self) {
        self.inner.lock().gone = true;
        loop {
            // An address space that still has tracked VMAs; entries of address spaces that are
            // exiting are dropped on the way (their VMAs go without our help).
            let mut dropped = KVec::new();
            let mm = {
                let mut inner = self.inner.lock();
                let mut found = None;
                while let Some(&t) = inner.list.first() {
                    // SAFETY: A listed pointer is a live `Tracked` (its VMA removes it under
                    // the lock before freeing it), and its mm outlives the VMA.
                    let mm = unsafe { Mm::from_raw((*t).mm) };
                    if let Some(user) = mm.mmget_not_zero() {
                        found = Some(user);
                        break;
                    }
                    let _ = inner.list.remove(0);
                    // SAFETY: As above; the entry is taken out under the lock.
                    if let Some(e) = unsafe { (*t).entry.take() } {
                        let _ = dropped.push(e, GFP_KERNEL);
                    }
                }
                found
            };
            // Entries are dropped without the lock: freeing one may issue a firmware command.
            drop(dropped);
            let Some(mm) = mm else {
                return;
            };
            let mut entries = KVec::new();
            {
                let _mmap = mm.mmap_read_lock();
                let mut inner = self.inner.lock();
                let mut i = 0;
                while i < inner.list.len() {
                    let t = inner.list[i];
                    // SAFETY: As above.
                    if unsafe { (*t).mm } != mm.as_raw() {
                        i += 1;
                        continue;
                    }
                    let _ = inner.list.remove(i);
                    // SAFETY: The VMA is live (listed) and its address space's mmap lock is
                    // held; the range is the whole VMA.
                    unsafe {
                        bindings::rdma_rs_zap_vma((*t).vma);
                        if let Some(e) = (*t).entry.take() {
                            let _ = entries.push(e, GFP_KERNEL);
                        }
                    }
                }
            }
            drop(entries);
        }
    }

    /// The page a zapped writable VMA faults in (allocated once).
    fn zero_page(&self, gfp: Flags) -> Option<*mut bindings::page> {
        let mut inner = self.inner.lock();
        if inner.zero_page.is_none() {
            inner.zero_page = Page::alloc_page(gfp | __GFP_ZERO).ok();
        }
        inner.zero_page.as_ref().map(|p| p.as_ptr())
    }
}

/// `VM_FAULT_SIGBUS`.
const SIGBUS: bindings::vm_fault_t =
    bindings::vm_fault_reason_VM_FAULT_SIGBUS as bindings::vm_fault_t;

/// The operations of a tracked VMA.
static VM_OPS: bindings::vm_operations_struct = bindings::vm_operations_struct {
    open: Some(vma_open),
    close: Some(vma_close),
    fault: Some(vma_fault),
    // SAFETY: All-zero is a valid `vm_operations_struct` (no further operations).
    ..unsafe { core::mem::zeroed() }
};

/// A copy of a tracked VMA (fork, or a split by `mprotect`/`munmap`): tracked too, with its own
/// reference to the entry; once zapped (or without memory), the copy is zapped at once and
/// untracked (C's `rdma_umap_open`).
///
/// # Safety
///
/// Called by the memory manager for a VMA whose private data `map_io` set (or that a previous
/// `open` gave a copy of), with the mmap lock held.
unsafe extern "C" fn vma_open(vma: *mut bindings::vm_area_struct) {
    // SAFETY: The copy's private data is the original's (contract): a live `Tracked`.
    let orig = unsafe { bindings::rdma_rs_vma_private(vma) }.cast::<Tracked>();
    if orig.is_null() {
        return;
    }
    // SAFETY: `orig` is owned by the VMA being copied (fork's `dup_mmap`, or a split by
    // `mprotect`/`munmap`), which exists for the whole call: the memory manager holds that
    // address space's mmap lock for writing, so the VMA cannot be closed meanwhile and `orig`
    // is not freed (only `vma_close` frees it). `maps` is never changed after `map_io`; the
    // new VMA's `vm_mm` is set before `open` is called.
    let (maps, mm) = unsafe { ((*orig).maps.clone(), (*vma).vm_mm) };
    let mut inner = maps.inner.lock();
    // SAFETY: As above; `entry` is only changed under the maps' lock (`zap_all`), held here.
    let entry = unsafe { (*orig).entry.clone() };
    let ok = !inner.gone && inner.list.reserve(1, GFP_KERNEL).is_ok();
    if ok {
        if let Ok(t) = KBox::new(
            Tracked {
                maps: maps.clone(),
                vma,
                mm,
                entry,
            },
            GFP_KERNEL,
        ) {
            let ptr = KBox::into_raw(t);
            let _ = inner.list.push_within_capacity(ptr);
            // SAFETY: The VMA is ours to set up (contract); `close` frees the box.
            unsafe { bindings::rdma_rs_vma_set_ops(vma, &VM_OPS, ptr.cast()) };
            return;
        }
    }
    drop(inner);
    // The copy may not keep the device's pages: clear them.
    // SAFETY: The VMA is live and its mmap lock held (contract); the range is the whole VMA.
    unsafe {
        bindings::rdma_rs_vma_clear_private(vma);
        bindings::rdma_rs_zap_vma(vma);
    }
}

/// A tracked VMA goes (C's `rdma_umap_close`): untracked, its reference dropped.
///
/// # Safety
///
/// Called by the memory manager, once, for a VMA set up by `map_io` or `vma_open`.
unsafe extern "C" fn vma_close(vma: *mut bindings::vm_area_struct) {
    // SAFETY: The private data is null or a `Tracked` box this VMA owns (contract).
    let ptr = unsafe { bindings::rdma_rs_vma_private(vma) }.cast::<Tracked>();
    if ptr.is_null() {
        return;
    }
    // SAFETY: As above; the VMA gives its box back.
    let tracked = unsafe { KBox::from_raw(ptr) };
    {
        let mut inner = tracked.maps.inner.lock();
        if let Some(i) = inner.list.iter().position(|p| *p == ptr) {
            let _ = inner.list.remove(i);
        }
    }
    // SAFETY: The VMA is live for the call (contract).
    unsafe { bindings::rdma_rs_vma_clear_private(vma) };
    drop(tracked);
}

/// A touch of a zapped VMA (C's `rdma_umap_fault`): read-only VMAs get the zero page,
/// writable ones the maps' own zeroed page; a VMA no longer tracked gets `SIGBUS`.
///
/// # Safety
///
/// Called by the memory manager for a fault in a VMA with these operations.
unsafe extern "C" fn vma_fault(vmf: *mut bindings::vm_fault) -> bindings::vm_fault_t {
    // SAFETY: `vmf` is valid for the call (contract), and so is its VMA.
    let vma = unsafe { bindings::rdma_rs_fault_vma(vmf) };
    // SAFETY: As above.
    let ptr = unsafe { bindings::rdma_rs_vma_private(vma) }.cast::<Tracked>();
    if ptr.is_null() {
        return SIGBUS;
    }
    // SAFETY: As above: a live VMA's flags.
    let vm_flags = unsafe { (*vma).__bindgen_anon_2.vm_flags };
    if vm_flags & (flags::WRITE | flags::MAYWRITE) == 0 {
        // SAFETY: `vmf` is valid; a null page means the zero page.
        return unsafe { bindings::rdma_rs_fault_page(vmf, core::ptr::null_mut()) };
    }
    // SAFETY: The VMA owns its `Tracked` for the fault's duration.
    let maps = unsafe { &(*ptr).maps };
    match maps.zero_page(GFP_KERNEL) {
        // SAFETY: `vmf` is valid; the page lives as long as the maps, and the page table takes
        // its own reference.
        Some(page) => unsafe { bindings::rdma_rs_fault_page(vmf, page) },
        None => SIGBUS,
    }
}

#[macros::kunit_tests(rdma_rs_user_mmap)]
mod tests {
    use super::*;

    #[test]
    fn zapped_maps_refuse_nothing_twice() -> Result {
        // Without VMAs (a test has no user mappings): zapping ends at once and is idempotent,
        // and the zero page is made once.
        let maps = UserMaps::new()?;
        maps.zap_all();
        maps.zap_all();
        assert!(maps.inner.lock().gone);
        let a = maps.zero_page(GFP_KERNEL);
        assert!(a.is_some());
        assert_eq!(a, maps.zero_page(GFP_KERNEL));
        Ok(())
    }
}
