// SPDX-License-Identifier: GPL-2.0

//! A 4 KiB page of coherent DMA memory shared with the device: the command queue, mailbox blocks,
//! event queues and the pages lent to firmware.

use crate::ifc::Layout;
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
/// semantics), never through a reference into the page.
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

    /// Copies `buf.len()` bytes at `off` out of the page (`ERANGE` past its end).
    pub(crate) fn read(&self, off: usize, buf: &mut [u8]) -> Result {
        let end = off.checked_add(buf.len()).ok_or(ERANGE)?;
        // The view is `buf.len()` bytes long, as the copy requires.
        io_project!(&self.mem, [try: off..end]).copy_to_slice(buf);
        Ok(())
    }

    /// Copies `buf` into the page at `off` (`ERANGE` past its end).
    pub(crate) fn write(&self, off: usize, buf: &[u8]) -> Result {
        let end = off.checked_add(buf.len()).ok_or(ERANGE)?;
        io_project!(&self.mem, [try: off..end]).copy_from_slice(buf);
        Ok(())
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
