// SPDX-License-Identifier: GPL-2.0

//! Doorbell records (C's `mlx5_db_alloc`): small blocks of coherent memory where a CQ or a work
//! queue publishes its consumer or producer counter for the device. As in C they come from
//! pages of coherent memory cut into cache-line-sized records (64 bytes on x86-64: 64 per page);
//! a new page is added when every page is full, a record is zeroed when it is given back, and a
//! page whose records are all free again is freed (the pool frees what is left when the
//! function goes, after its auxiliary device is deleted).

use crate::memory::dma_page::{DmaPage, PAGE};
use kernel::{
    device::{self, Bound},
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// Size of a record: the cache line (C's `cache_line_size()`, 64 on x86-64).
pub(crate) const RECORD: usize = 64;
/// Records per page.
pub(crate) const PER_PAGE: usize = PAGE / RECORD;
/// Every record of a page free.
const ALL_FREE: u64 = if PER_PAGE == 64 {
    u64::MAX
} else {
    (1u64 << PER_PAGE) - 1
};

/// The bookkeeping of a pool of pages cut into [`PER_PAGE`] blocks, independent of what a page
/// is (`P`): which blocks are free, pages in the order blocks are taken from.
pub(crate) struct Slots<P> {
    /// Id of the next page added.
    next_id: u64,
    /// Pages: id, the page, a bit per free block.
    pages: KVec<(u64, P, u64)>,
}

impl<P: Clone> Slots<P> {
    /// No pages.
    pub(crate) fn new() -> Self {
        Self {
            next_id: 0,
            pages: KVec::new(),
        }
    }

    /// The lowest free block of the first page that has one: page id, page, block.
    pub(crate) fn take(&mut self) -> Option<(u64, P, usize)> {
        let (id, page, free) = self.pages.iter_mut().find(|(_, _, f)| *f != 0)?;
        let block = free.trailing_zeros() as usize;
        *free &= !(1u64 << block);
        Some((*id, page.clone(), block))
    }

    /// Adds `page` (all blocks free), last, and takes its first block.
    pub(crate) fn add_and_take(&mut self, page: P) -> Result<(u64, P, usize)> {
        let id = self.next_id;
        self.pages
            .push((id, page.clone(), ALL_FREE & !1), GFP_KERNEL)?;
        self.next_id += 1;
        Ok((id, page, 0))
    }

    /// Gives block `block` of page `id` back. Returns the page when all its blocks are free now
    /// (it is no longer in the pool).
    pub(crate) fn put(&mut self, id: u64, block: usize) -> Option<P> {
        let i = self.pages.iter().position(|(pid, _, _)| *pid == id)?;
        let entry = self.pages.get_mut(i)?;
        entry.2 |= 1u64 << (block % PER_PAGE);
        if entry.2 == ALL_FREE {
            return self.pages.remove(i).ok().map(|(_, p, _)| p);
        }
        None
    }

    /// Number of pages (the KUnit suite's view).
    #[cfg(CONFIG_KUNIT)]
    pub(crate) fn pages(&self) -> usize {
        self.pages.len()
    }
}

/// A function's doorbell record pool.
#[pin_data]
pub(crate) struct DbPool {
    #[pin]
    slots: Mutex<Slots<Arc<DmaPage>>>,
}

impl DbPool {
    /// An empty pool.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                slots <- new_mutex!(Slots::new()),
            }),
            GFP_KERNEL,
        )
    }

    /// A zeroed record, from a new page (of `dev`) if every page is full.
    pub(crate) fn alloc(self: &Arc<Self>, dev: &device::Device<Bound>) -> Result<DoorbellRecord> {
        let mut slots = self.slots.lock();
        let (page_id, page, block) = match slots.take() {
            Some(t) => t,
            None => slots.add_and_take(Arc::new(DmaPage::new(dev)?, GFP_KERNEL)?)?,
        };
        Ok(DoorbellRecord {
            pool: self.clone(),
            page,
            page_id,
            block,
        })
    }
}

/// A doorbell record: two big-endian 32-bit words the device reads at [`Self::dma`]. Dropping
/// it gives it back to the pool (process context).
pub struct DoorbellRecord {
    pool: Arc<DbPool>,
    page: Arc<DmaPage>,
    page_id: u64,
    block: usize,
}

impl DoorbellRecord {
    /// Offset of word `i` in the page (`None` unless `i` is 0 or 1).
    #[inline]
    fn at(&self, i: usize) -> Option<usize> {
        (i < 2).then_some(self.block * RECORD + i * 4)
    }

    /// The device address of word 0.
    pub fn dma(&self) -> u64 {
        self.page.dma_address() + (self.block * RECORD) as u64
    }

    /// Stores `value` big-endian in word `i` (0 or 1; other indexes are ignored): one volatile
    /// 32-bit store, inline in the caller (the rings set a record on every post and poll).
    /// Never sleeps.
    #[inline]
    pub fn set(&self, i: usize, value: u32) {
        if let Some(off) = self.at(i) {
            // In the page and aligned by construction (`block < PER_PAGE`, words of 4 bytes).
            let _ = self.page.write_be32(off, value);
        }
    }

    /// Word `i` (0 or 1; 0 for other indexes). Never sleeps.
    #[inline]
    pub fn get(&self, i: usize) -> u32 {
        self.at(i)
            .and_then(|off| self.page.read_be32(off).ok())
            .unwrap_or(0)
    }
}

impl Drop for DoorbellRecord {
    fn drop(&mut self) {
        let freed = {
            let mut slots = self.pool.slots.lock();
            // Zeroed for its next user, as C does (unless the page goes).
            let _ = self.page.write(self.block * RECORD, &[0u8; RECORD]);
            slots.put(self.page_id, self.block)
        };
        // The pool's reference goes here, unlocked; the memory with this record's.
        drop(freed);
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_doorbell)]
mod tests {
    use super::*;

    #[test]
    fn records_fill_a_page_then_the_next_and_are_reused() -> Result {
        assert_eq!(PER_PAGE, 64);
        let mut s: Slots<u32> = Slots::new();
        assert!(s.take().is_none());
        let (p0, _, b0) = s.add_and_take(10)?;
        assert_eq!(b0, 0);
        for want in 1..PER_PAGE {
            let (id, page, b) = s.take().ok_or(EINVAL)?;
            assert_eq!((id, page, b), (p0, 10, want));
        }
        // The first page is full: a second one is needed.
        assert!(s.take().is_none());
        let (p1, page, b) = s.add_and_take(11)?;
        assert_ne!(p0, p1);
        assert_eq!((page, b), (11, 0));
        // A block given back is taken again before the second page's next one.
        assert!(s.put(p0, 5).is_none());
        assert_eq!(s.take().map(|(i, _, b)| (i, b)), Some((p0, 5)));
        assert_eq!(s.take().map(|(i, _, b)| (i, b)), Some((p1, 1)));
        // The second page goes once both its blocks are back; the first stays.
        assert!(s.put(p1, 0).is_none());
        assert_eq!(s.put(p1, 1), Some(11));
        assert_eq!(s.pages(), 1);
        // An unknown page is ignored.
        assert!(s.put(p1, 0).is_none());
        Ok(())
    }
}
