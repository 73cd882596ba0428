// SPDX-License-Identifier: GPL-2.0

//! A 4 KiB page of coherent DMA memory shared with the device: the command queue, mailbox blocks,
//! event queues and the pages lent to firmware.

use crate::ifc::Layout;
use crate::memory::word_copy::{copy_from_dma, copy_to_dma};
use kernel::{
    device,
    dma::Coherent,
    io::{io_project, Io},
    prelude::*,
};

/// Size of a page as the device sees it.
pub(crate) const PAGE: usize = 4096;

/// One page of coherent memory.
///
/// The device reads and writes it concurrently with the CPU, so it is only reached through the
/// kernel's I/O projections of coherent memory (bounds-checked views, copied with volatile
/// semantics) and bounds-checked volatile word copies (`word_copy`), never through a reference
/// into the page.
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

    /// Copies `buf.len()` bytes at `off` out of the page (`ERANGE` past its end), a word at a
    /// time (`word_copy`).
    pub(crate) fn read(&self, off: usize, buf: &mut [u8]) -> Result {
        Self::range(off, buf.len())?;
        // SAFETY: `off..off + buf.len()` is inside the page (checked above), which lives as long
        // as `self`; the page is only reached through raw accesses (the type's invariant).
        unsafe { copy_from_dma(buf, self.mem.as_ptr().cast::<u8>().add(off)) };
        Ok(())
    }

    /// Copies `buf` into the page at `off` (`ERANGE` past its end), a word at a time
    /// (`word_copy`).
    pub(crate) fn write(&self, off: usize, buf: &[u8]) -> Result {
        Self::range(off, buf.len())?;
        // SAFETY: as in `read`.
        unsafe { copy_to_dma(self.mem.as_mut_ptr().cast::<u8>().add(off), buf) };
        Ok(())
    }

    /// `ERANGE` unless `len` bytes at `off` are inside the page.
    fn range(off: usize, len: usize) -> Result {
        match off.checked_add(len) {
            Some(end) if end <= PAGE => Ok(()),
            _ => Err(ERANGE),
        }
    }

    /// Stores `v` big-endian at `off` (4-byte aligned) with one volatile 32-bit store, no copy
    /// (`EINVAL` past the page's end or unaligned).
    #[inline]
    pub(crate) fn write_be32(&self, off: usize, v: u32) -> Result {
        let end = off.checked_add(4).ok_or(EINVAL)?;
        io_project!(&self.mem, [try: off..end])
            .try_cast::<u32>()?
            .write_val(v.to_be());
        Ok(())
    }

    /// The big-endian 32-bit word at `off` (4-byte aligned), one volatile load.
    #[inline]
    pub(crate) fn read_be32(&self, off: usize) -> Result<u32> {
        let end = off.checked_add(4).ok_or(EINVAL)?;
        Ok(u32::from_be(
            io_project!(&self.mem, [try: off..end])
                .try_cast::<u32>()?
                .read_val(),
        ))
    }

    /// Reads the layout `L` at `off`.
    pub(crate) fn read_layout<L: Layout>(&self, off: usize) -> Result<L> {
        let mut l = L::zeroed();
        self.read(off, l.as_bytes_mut())?;
        Ok(l)
    }

    /// Writes the layout `l` at `off`.
    pub(crate) fn write_layout<L: Layout>(&self, off: usize, l: &L) -> Result {
        self.write(off, l.as_bytes())
    }
}
