//! Queue buffers in guest memory: the page list a create command gave, and ring geometry.

use crate::guest_memory::{DmaFault, GuestMemory};
use crate::ifc::{self, Field};

/// Byte offset of the physical address list in CREATE_QP, CREATE_CQ and CREATE_RMP inputs.
pub const PAS: usize = 0x110;

/// Reads the big-endian 64-bit word at byte `off` of `buf` (zero past its end).
pub fn be64(buf: &[u8], off: usize) -> u64 {
    buf.get(off..off + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_be_bytes)
}

/// Reads the big-endian 32-bit word at byte `off` of `buf` (zero past its end).
pub fn be32(buf: &[u8], off: usize) -> u32 {
    buf.get(off..off + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_be_bytes)
}

/// Where a queue's buffer lives: pages of `page_size` bytes, starting `start` bytes into the
/// first one (user buffers need not be page aligned; the offset is given in units of a 64th of
/// the page size).
#[derive(Debug, Clone)]
pub struct Buffer {
    pages: Vec<u64>,
    page_size: u64,
    start: u64,
}

impl Buffer {
    /// The buffer of `bytes` bytes described by a create command's context. Only the page
    /// addresses the command carries are used: a queue larger than its page list (a driver that
    /// told the device a bigger queue than it gave memory for) has no pages past the list, and
    /// an access there is a DMA fault, not a read of guest page 0.
    pub fn from_context(ctx: &[u8], log_page_size: Field, page_offset: Field, bytes: u64) -> Self {
        let page_size = 4096u64 << ifc::get(ctx, log_page_size).min(32);
        let start = ifc::get(ctx, page_offset) * (page_size / 64);
        let n = (start.saturating_add(bytes)).div_ceil(page_size).max(1) as usize;
        let given = ctx.len().saturating_sub(PAS) / 8;
        let pages = (0..n.min(given)).map(|i| be64(ctx, PAS + i * 8)).collect();
        Self {
            pages,
            page_size,
            start,
        }
    }

    /// Guest address of byte `off` of the buffer.
    pub fn addr(&self, off: u64) -> Option<u64> {
        let off = off + self.start;
        Some(self.pages.get((off / self.page_size) as usize)? + off % self.page_size)
    }

    /// Reads `out.len()` bytes at `off`, which may cross pages.
    pub fn read(&self, mem: &dyn GuestMemory, off: u64, out: &mut [u8]) -> Result<(), DmaFault> {
        let mut done = 0;
        while done < out.len() {
            let at = off + done as u64;
            let addr = self.addr(at).ok_or(DmaFault {
                iova: at,
                len: out.len() - done,
            })?;
            let in_page = (self.page_size - (at + self.start) % self.page_size) as usize;
            let n = in_page.min(out.len() - done);
            mem.read(addr, &mut out[done..done + n])?;
            done += n;
        }
        Ok(())
    }

    /// Writes `data` at `off`, which may cross pages.
    pub fn write(&self, mem: &mut dyn GuestMemory, off: u64, data: &[u8]) -> Result<(), DmaFault> {
        let mut done = 0;
        while done < data.len() {
            let at = off + done as u64;
            let addr = self.addr(at).ok_or(DmaFault {
                iova: at,
                len: data.len() - done,
            })?;
            let in_page = (self.page_size - (at + self.start) % self.page_size) as usize;
            let n = in_page.min(data.len() - done);
            mem.write(addr, &data[done..done + n])?;
            done += n;
        }
        Ok(())
    }
}

/// A ring of `entries` (a power of two) entries of `stride` bytes at `base` in a buffer.
#[derive(Debug, Clone)]
pub struct Ring {
    /// The buffer the ring lives in.
    pub buf: Buffer,
    /// Byte offset of entry 0 in the buffer.
    pub base: u64,
    /// Number of entries.
    pub entries: u64,
    /// Entry size in bytes.
    pub stride: u64,
}

impl Ring {
    /// Byte offset in the buffer of entry `index` (any counter value; it wraps).
    pub fn offset(&self, index: u64) -> u64 {
        self.base + index % self.entries * self.stride
    }

    /// Reads entry `index`.
    pub fn read(&self, mem: &dyn GuestMemory, index: u64) -> Result<Vec<u8>, DmaFault> {
        let mut e = vec![0u8; self.stride as usize];
        self.buf.read(mem, self.offset(index), &mut e)?;
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest_memory::FakeMemory;

    #[test]
    fn buffer_reads_across_pages_and_rings_wrap() {
        let mut ctx = vec![0u8; PAS + 16];
        ctx[PAS..PAS + 8].copy_from_slice(&0x3000u64.to_be_bytes());
        ctx[PAS + 8..PAS + 16].copy_from_slice(&0x1000u64.to_be_bytes());
        let lps = Field::new(0, 5);
        let po = Field::new(8, 6);
        ifc::set(&mut ctx, po, 32); // half a page in
        let b = Buffer::from_context(&ctx, lps, po, 4096);
        assert_eq!(b.addr(0), Some(0x3800));
        assert_eq!(b.addr(0x800), Some(0x1000));
        assert_eq!(b.addr(0x1800), None);
        let mut mem = FakeMemory::new(0, 0x5000);
        let data: Vec<u8> = (0..64).collect();
        b.write(&mut mem, 0x7f0, &data).unwrap();
        let mut back = [0u8; 64];
        b.read(&mem, 0x7f0, &mut back).unwrap();
        assert_eq!(&back[..], &data[..]);
        let mut tail = [0u8; 16];
        mem.read(0x3ff0, &mut tail).unwrap();
        assert_eq!(&tail[..], &data[..16]);
        let r = Ring {
            buf: b,
            base: 0x100,
            entries: 8,
            stride: 64,
        };
        assert_eq!(r.offset(7), 0x100 + 7 * 64);
        assert_eq!(r.offset(8), 0x100, "index 8 wraps to entry 0");
        assert_eq!(
            r.offset(0xffff + 1),
            0x100,
            "a 16-bit counter wraps with the ring"
        );
    }

    #[test]
    fn a_queue_past_its_page_list_faults_instead_of_reading_page_0() {
        // One page address given for a 3-page queue (a receive stride the pinned memory
        // does not cover).
        let mut ctx = vec![0u8; PAS + 8];
        ctx[PAS..PAS + 8].copy_from_slice(&0x3000u64.to_be_bytes());
        let b = Buffer::from_context(&ctx, Field::new(0, 5), Field::new(8, 6), 3 * 4096);
        assert_eq!(b.addr(0xfff), Some(0x3fff));
        assert_eq!(b.addr(0x1000), None);
        let mem = FakeMemory::new(0, 0x5000);
        let mut out = [0u8; 64];
        assert!(b.read(&mem, 0x1000, &mut out).is_err());
    }
}
