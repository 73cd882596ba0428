// SPDX-License-Identifier: GPL-2.0

//! Memory a device can reach, for kernel consumers' work requests.
//!
//! A C consumer maps its own memory with `ib_dma_map_single()` on the device's DMA device (or,
//! for software devices, takes the kernel address as is). Rust consumers have no safe way to do
//! either, so the driver allocates the memory instead ([`crate::verbs::ops::DeviceOps::alloc_dma_buffer`]:
//! coherent DMA memory on the PCI function for hardware, plain memory for software devices) and
//! the consumer reads and writes it through [`DmaBuffer`], with bounds checked here.

pub use crate::verbs::ops::DmaMemory;
use crate::{
    device::ib_device::{DeviceRef, IbDevice},
    verbs::wr::Sge,
};
use kernel::{prelude::*, sync::Arc};

/// Largest buffer a consumer may ask for.
pub const DMA_BUFFER_MAX: usize = 4 << 20;

/// A buffer of device-reachable memory. It keeps its device registered while it lives.
pub struct DmaBuffer {
    // Dropped before the device reference: the driver frees it while the device is there.
    mem: KBox<dyn DmaMemory>,
    _dev: DeviceRef,
}

impl DmaBuffer {
    /// Allocates `len` bytes (1 to [`DMA_BUFFER_MAX`], `EINVAL` otherwise) on `dev`
    /// (`EOPNOTSUPP` if its driver cannot, `ENODEV` if it is unregistering).
    pub fn alloc(dev: &Arc<IbDevice>, len: usize) -> Result<Self> {
        if len == 0 || len > DMA_BUFFER_MAX {
            return Err(EINVAL);
        }
        let dev = dev.try_get().ok_or(ENODEV)?;
        let mem = dev.ops().alloc_dma_buffer(len)?;
        if mem.len() < len {
            return Err(EIO);
        }
        Ok(Self { mem, _dev: dev })
    }

    /// The device address of byte 0.
    pub fn dma_addr(&self) -> u64 {
        self.mem.dma_addr()
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.mem.len()
    }

    /// Whether the buffer is empty (never, once allocated).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn check(&self, offset: usize, len: usize) -> Result {
        match offset.checked_add(len) {
            Some(end) if end <= self.len() => Ok(()),
            _ => Err(EINVAL),
        }
    }

    /// Copies bytes at `offset` into `out` (`EINVAL` past the end).
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result {
        self.check(offset, out.len())?;
        self.mem.read(offset, out)
    }

    /// Copies `data` to `offset` (`EINVAL` past the end).
    pub fn write(&self, offset: usize, data: &[u8]) -> Result {
        self.check(offset, data.len())?;
        self.mem.write(offset, data)
    }

    /// A scatter/gather entry for `len` bytes at `offset`, under memory region key `lkey`
    /// (`EINVAL` past the end).
    pub fn sge(&self, offset: usize, len: u32, lkey: u32) -> Result<Sge> {
        self.check(offset, len as usize)?;
        Ok(Sge {
            addr: self.dma_addr() + offset as u64,
            length: len,
            lkey,
        })
    }
}
