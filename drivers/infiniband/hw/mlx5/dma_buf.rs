// SPDX-License-Identifier: GPL-2.0

//! Memory for consumers' work requests (`DeviceOps::alloc_dma_buffer`): coherent DMA memory of
//! the PCI function, as the device reaches it through a DMA MR.

use ib_core::verbs::ops::DmaMemory;
use kernel::prelude::*;
use mlx5_core::auxdev::CoherentBuf;

/// A consumer's buffer: `len` bytes of a coherent allocation (rounded up to pages).
pub(crate) struct DmaBuf {
    buf: CoherentBuf,
    len: usize,
}

impl DmaBuf {
    /// Wraps `buf`, of which the consumer asked for `len` bytes (`EINVAL` if it is shorter).
    pub(crate) fn new(buf: CoherentBuf, len: usize) -> Result<Self> {
        if buf.len() < len {
            return Err(EINVAL);
        }
        Ok(Self { buf, len })
    }
}

impl DmaMemory for DmaBuf {
    fn dma_addr(&self) -> u64 {
        self.buf.dma()
    }

    fn len(&self) -> usize {
        self.len
    }

    fn read(&self, offset: usize, out: &mut [u8]) -> Result {
        self.buf.read(offset, out)
    }

    fn write(&self, offset: usize, data: &[u8]) -> Result {
        self.buf.write(offset, data)
    }
}
