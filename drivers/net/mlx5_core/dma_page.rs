// SPDX-License-Identifier: GPL-2.0

//! A 4 KiB page of coherent DMA memory shared with the device: the command queue, mailbox blocks
//! and the pages lent to firmware.

use kernel::{device, dma::Coherent, prelude::*};

/// Size of a page as the device sees it.
pub(crate) const PAGE: usize = 4096;

/// One page of coherent memory.
///
/// The device reads and writes it concurrently with the CPU, so every access is a copy through
/// raw pointers with volatile semantics, never a reference into the page.
pub(crate) struct DmaPage {
    mem: Coherent<[u8; PAGE]>,
}

impl DmaPage {
    /// A zeroed page mapped for `dev`.
    pub(crate) fn new(dev: &device::Device<device::Bound>) -> Result<Self> {
        Ok(Self {
            mem: Coherent::zeroed(dev, GFP_KERNEL)?,
        })
    }

    /// The address the device uses for byte 0.
    pub(crate) fn dma_address(&self) -> u64 {
        self.mem.dma_address()
    }

    fn ptr(&self, off: usize, len: usize) -> Result<*mut u8> {
        let end = off.checked_add(len).ok_or(EINVAL)?;
        if end > PAGE {
            return Err(EINVAL);
        }
        // SAFETY: `off + len <= PAGE`, so the pointer stays inside the allocation.
        Ok(unsafe { self.mem.as_mut_ptr().cast::<u8>().add(off) })
    }

    /// Copies `buf.len()` bytes at `off` out of the page.
    pub(crate) fn read(&self, off: usize, buf: &mut [u8]) -> Result {
        let p = self.ptr(off, buf.len())?;
        for (i, b) in buf.iter_mut().enumerate() {
            // SAFETY: `p + i` is inside the page (checked by `ptr`); the page is plain bytes the
            // device may write at any time, hence the volatile read.
            *b = unsafe { core::ptr::read_volatile(p.add(i)) };
        }
        Ok(())
    }

    /// Copies `buf` into the page at `off`.
    pub(crate) fn write(&self, off: usize, buf: &[u8]) -> Result {
        let p = self.ptr(off, buf.len())?;
        for (i, b) in buf.iter().enumerate() {
            // SAFETY: as in `read`; the write is volatile so it is not elided or merged.
            unsafe { core::ptr::write_volatile(p.add(i), *b) };
        }
        Ok(())
    }

    /// Fills `len` bytes at `off` with zero.
    pub(crate) fn zero(&self, off: usize, len: usize) -> Result {
        let p = self.ptr(off, len)?;
        for i in 0..len {
            // SAFETY: as in `write`.
            unsafe { core::ptr::write_volatile(p.add(i), 0) };
        }
        Ok(())
    }
}
