// SPDX-License-Identifier: GPL-2.0

//! User memory the device uses (C's `ib_umem`): the rings and doorbell records of user CQs,
//! QPs and SRQs, and user memory regions, pinned and mapped for the function's PCI device, described to the firmware 4 KiB page
//! by 4 KiB page; and the same page lists of the driver's own coherent buffers.

use kernel::{
    dma::DataDirection,
    page::PAGE_SIZE,
    prelude::*,
    user_pages::{DmaMappedPages, PinnedPages},
};
use mlx5_core::auxdev::Mlx5Device;

/// The ring's offset in its first 4 KiB page in 64-byte units (C's quantized page offset):
/// a ring that does not start on a 64-byte boundary is `EINVAL`.
pub(crate) fn page_offset(addr: u64) -> Result<u64> {
    if addr % 64 != 0 {
        return Err(EINVAL);
    }
    Ok((addr & 0xfff) / 64)
}

/// Pinned user memory the device uses: the pages, mapped for it.
pub(crate) struct UserMemory<'bound>(DmaMappedPages<'bound>);

impl<'bound> UserMemory<'bound> {
    /// Pins and maps `len` bytes at user address `addr` for `dev` (C's `ib_umem_get`), for
    /// writing when the device writes it: a range that wraps, or whose page-aligned end does,
    /// is `EINVAL` ([`PinnedPages::pin`]). The mapping lives no longer than the function's
    /// binding (`'bound`).
    pub(crate) fn pin(
        dev: &'bound Mlx5Device,
        addr: u64,
        len: usize,
        writable: bool,
    ) -> Result<Self> {
        let start = usize::try_from(addr).map_err(|_| EINVAL)?;
        let pinned = PinnedPages::pin(start, len, writable)?;
        let mapped = DmaMappedPages::map(
            dev.bound_parent(),
            pinned,
            start & (PAGE_SIZE - 1),
            len,
            DataDirection::Bidirectional,
        )?;
        Ok(Self(mapped))
    }

    /// The device address of byte 0.
    pub(crate) fn first_dma(&self) -> u64 {
        let mut first = None;
        self.0.for_each_dma_page(|a| {
            if first.is_none() {
                first = Some(a);
            }
        });
        first.unwrap_or(0) + self.0.offset() as u64
    }

    /// The page list CREATE_CQ takes: one big-endian entry per 4 KiB page.
    pub(crate) fn page_list(&self) -> Result<KVVec<u8>> {
        self.translation_table(0, self.0.page_count())
    }

    /// The translation table of the memory as the device reads it: one big-endian entry per
    /// 4 KiB page with `flags` or-ed in, `entries` of them (zeros past the mapping's pages; a
    /// mapping of more pages than that is `EINVAL`). Written in place, one pass (C's
    /// `mlx5_ib_populate_pas`).
    pub(crate) fn translation_table(&self, flags: u64, entries: usize) -> Result<KVVec<u8>> {
        let bytes = entries.checked_mul(8).ok_or(EINVAL)?;
        let mut pas = KVVec::from_elem(0u8, bytes, GFP_KERNEL)?;
        let mut chunks = pas.chunks_exact_mut(8);
        let mut fits = true;
        self.0.for_each_dma_page(|a| match chunks.next() {
            Some(entry) => entry.copy_from_slice(&(a | flags).to_be_bytes()),
            None => fits = false,
        });
        if !fits {
            return Err(EINVAL);
        }
        Ok(pas)
    }
}

/// The adapter page size (`MLX5_ADAPTER_PAGE_SHIFT`).
const ADAPTER_PAGE_SHIFT: u32 = 12;

/// The page list of a coherent buffer of `len` bytes at `dma` (contiguous: one entry per 4 KiB
/// adapter page).
pub(crate) fn coherent_page_list(dma: u64, len: usize) -> Result<KVec<u8>> {
    let pages = len.div_ceil(1 << ADAPTER_PAGE_SHIFT);
    let mut v = KVec::with_capacity(pages * 8, GFP_KERNEL)?;
    for i in 0..pages {
        let a = dma.wrapping_add((i as u64) << ADAPTER_PAGE_SHIFT);
        v.extend_from_slice(&a.to_be_bytes(), GFP_KERNEL)?;
    }
    Ok(v)
}
