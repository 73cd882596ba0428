// SPDX-License-Identifier: GPL-2.0

//! Coherent DMA memory on a function's PCI device for its drivers' rings and buffers (C's
//! `mlx5_frag_buf_alloc_node`, here one contiguous `dma_alloc_coherent` region).

use kernel::{
    device::{self, Bound},
    dma::{Coherent, CoherentView},
    io::{io_project, Io},
    prelude::*,
};

/// Granularity of the allocations.
pub const PAGE_SIZE: usize = 4096;

/// A zeroed region of coherent memory the device may read and write concurrently with the CPU.
///
/// It is only reached through volatile, bounds-checked copies and typed views ([`Self::view`]:
/// volatile loads and stores of a `#[repr(C)]` layout in place), never through a reference into
/// the region. The accessors are `#[inline]`: the rings of `mlx5_ib` use them on every post
/// and poll. Dropping it frees the memory: drop it only once the device no longer uses it
/// (after the destroy command of the ring that points to it succeeded; after a timeout, leak it
/// with `core::mem::forget`, as C does). Drop it in process context (`dma_free_coherent`).
pub struct CoherentBuf {
    mem: Coherent<[u8]>,
}

impl CoherentBuf {
    /// `len` bytes (rounded up to whole pages; `EINVAL` for 0) mapped for `dev`.
    pub(crate) fn new(dev: &device::Device<Bound>, len: usize) -> Result<Self> {
        if len == 0 {
            return Err(EINVAL);
        }
        let len = len.checked_next_multiple_of(PAGE_SIZE).ok_or(EINVAL)?;
        Ok(Self {
            mem: Coherent::zeroed_slice(dev, len, GFP_KERNEL)?,
        })
    }

    /// The device address of byte 0.
    #[inline]
    pub fn dma(&self) -> u64 {
        self.mem.dma_address()
    }

    /// The CPU address of byte 0, for typed stores whose bounds are proven once (`WqBuf`).
    #[inline(always)]
    pub(crate) fn as_mut_ptr(&self) -> *mut u8 {
        self.mem.as_mut_ptr().cast::<u8>()
    }

    /// The size in bytes (a whole number of pages).
    #[inline]
    pub fn len(&self) -> usize {
        self.mem.len()
    }

    /// Never true: a buffer has at least one page.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The end of `n` bytes at `off`, `EINVAL` past the buffer.
    #[inline]
    fn end(&self, off: usize, n: usize) -> Result<usize> {
        off.checked_add(n)
            .filter(|&e| e <= self.len())
            .ok_or(EINVAL)
    }

    /// Copies `out.len()` bytes at `off` out of the buffer.
    #[inline]
    pub fn read(&self, off: usize, out: &mut [u8]) -> Result {
        let end = self.end(off, out.len())?;
        io_project!(&self.mem, [try: off..end]).copy_to_slice(out);
        Ok(())
    }

    /// Copies `data` into the buffer at `off`.
    #[inline]
    pub fn write(&self, off: usize, data: &[u8]) -> Result {
        let end = self.end(off, data.len())?;
        io_project!(&self.mem, [try: off..end]).copy_from_slice(data);
        Ok(())
    }

    /// The byte at `off`.
    #[inline]
    pub fn read_u8(&self, off: usize) -> Result<u8> {
        Ok(self.view::<u8>(off)?.read_val())
    }

    /// The big-endian 32-bit word at `off`.
    #[inline]
    pub fn read_be32(&self, off: usize) -> Result<u32> {
        let mut b = [0u8; 4];
        self.read(off, &mut b)?;
        Ok(u32::from_be_bytes(b))
    }

    /// The big-endian 64-bit word at `off`.
    #[inline]
    pub fn read_be64(&self, off: usize) -> Result<u64> {
        let mut b = [0u8; 8];
        self.read(off, &mut b)?;
        Ok(u64::from_be_bytes(b))
    }

    /// Stores `v` big-endian at `off`.
    #[inline]
    pub fn write_be32(&self, off: usize, v: u32) -> Result {
        self.write(off, &v.to_be_bytes())
    }

    /// Stores `v` big-endian at `off`.
    #[inline]
    pub fn write_be64(&self, off: usize, v: u64) -> Result {
        self.write(off, &v.to_be_bytes())
    }

    /// The `T` at byte `off`, as a view for volatile field loads and stores in place
    /// (`kernel::io::{io_read, io_write}` or `Io::{copy_read, copy_write}`): one bounds and
    /// alignment check for the view, none per field. `EINVAL` past the buffer or for an offset
    /// not aligned for `T`.
    #[inline]
    pub fn view<T: FromBytes + IntoBytes>(&self, off: usize) -> Result<CoherentView<'_, T>> {
        let end = self.end(off, size_of::<T>())?;
        io_project!(&self.mem, [try: off..end]).try_cast::<T>()
    }
}
