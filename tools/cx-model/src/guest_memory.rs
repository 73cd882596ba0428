//! Guest physical memory as the device sees it through DMA.
//!
//! QEMU hands the server each RAM region as `dma_map` with an fd of the guest's shared memfd; the
//! model maps it and reads and writes guest memory directly. Tests use [`FakeMemory`] instead.

use std::fmt;
use std::fs::File;
use std::os::fd::AsRawFd;

/// A DMA access that falls outside every region the guest mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaFault {
    /// Guest physical (IOVA) address of the access.
    pub iova: u64,
    /// Length of the access in bytes.
    pub len: usize,
}

impl fmt::Display for DmaFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DMA to unmapped guest memory at {:#x} (+{})",
            self.iova, self.len
        )
    }
}

impl std::error::Error for DmaFault {}

/// Byte-addressed access to guest memory by IOVA.
pub trait GuestMemory {
    /// Copies `buf.len()` bytes at `iova` into `buf`.
    fn read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaFault>;
    /// Copies `buf` to guest memory at `iova`.
    fn write(&mut self, iova: u64, buf: &[u8]) -> Result<(), DmaFault>;
}

/// One region of guest RAM mapped into the model's address space.
struct Mapping {
    iova: u64,
    size: u64,
    ptr: *mut u8,
}

/// The guest RAM regions QEMU mapped with `dma_map`.
#[derive(Default)]
pub struct MappedMemory {
    maps: Vec<Mapping>,
}

// SAFETY: the raw pointers are private mmap()ed regions owned by this value; nothing else aliases
// them in this process, so moving the owner to another thread is sound.
unsafe impl Send for MappedMemory {}

impl MappedMemory {
    /// Maps `size` bytes of `fd` at file `offset` as guest addresses `iova..iova+size`.
    pub fn map(&mut self, iova: u64, size: u64, fd: &File, offset: u64) -> std::io::Result<()> {
        let len = usize::try_from(size).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        let off =
            libc::off_t::try_from(offset).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: a fresh shared mapping of a file the caller owns; the kernel picks the address, so
        // no existing memory of this process is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                off,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        self.maps.push(Mapping {
            iova,
            size,
            ptr: p.cast(),
        });
        Ok(())
    }

    /// Unmaps the region that starts at `iova`; returns whether there was one.
    pub fn unmap(&mut self, iova: u64) -> bool {
        let before = self.maps.len();
        self.maps.retain(|m| {
            if m.iova != iova {
                return true;
            }
            // SAFETY: `ptr`/`size` describe a mapping made by `map` and not yet unmapped; it is
            // removed from the list in the same step, so it is never used again.
            unsafe { libc::munmap(m.ptr.cast(), m.size as usize) };
            false
        });
        before != self.maps.len()
    }

    /// Number of mapped regions.
    pub fn regions(&self) -> usize {
        self.maps.len()
    }

    fn locate(&self, iova: u64, len: usize) -> Result<*mut u8, DmaFault> {
        let fault = DmaFault { iova, len };
        let end = iova.checked_add(len as u64).ok_or(fault)?;
        let m = self
            .maps
            .iter()
            .find(|m| iova >= m.iova && end <= m.iova + m.size)
            .ok_or(fault)?;
        // SAFETY: `iova - m.iova < m.size`, so the result stays inside the mapping.
        Ok(unsafe { m.ptr.add((iova - m.iova) as usize) })
    }
}

impl GuestMemory for MappedMemory {
    fn read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        let p = self.locate(iova, buf.len())?;
        // SAFETY: `locate` checked that `buf.len()` bytes at `p` lie inside a live mapping; guest
        // memory is plain bytes and `buf` cannot overlap it.
        unsafe { std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    fn write(&mut self, iova: u64, buf: &[u8]) -> Result<(), DmaFault> {
        let p = self.locate(iova, buf.len())?;
        // SAFETY: as in `read`; the mapping is writable.
        unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), p, buf.len()) };
        Ok(())
    }
}

impl Drop for MappedMemory {
    fn drop(&mut self) {
        for m in self.maps.drain(..) {
            // SAFETY: each mapping was made by `map` and is unmapped exactly once, here.
            unsafe { libc::munmap(m.ptr.cast(), m.size as usize) };
        }
    }
}

/// Guest memory backed by a plain buffer, for tests that drive the model without QEMU.
pub struct FakeMemory {
    base: u64,
    bytes: Vec<u8>,
}

impl FakeMemory {
    /// `size` zeroed bytes at guest addresses `base..base+size`.
    pub fn new(base: u64, size: usize) -> Self {
        Self {
            base,
            bytes: vec![0; size],
        }
    }

    fn range(&self, iova: u64, len: usize) -> Result<std::ops::Range<usize>, DmaFault> {
        let fault = DmaFault { iova, len };
        let start = iova.checked_sub(self.base).ok_or(fault)? as usize;
        let end = start.checked_add(len).ok_or(fault)?;
        if end > self.bytes.len() {
            return Err(fault);
        }
        Ok(start..end)
    }
}

impl GuestMemory for FakeMemory {
    fn read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        let r = self.range(iova, buf.len())?;
        buf.copy_from_slice(&self.bytes[r]);
        Ok(())
    }

    fn write(&mut self, iova: u64, buf: &[u8]) -> Result<(), DmaFault> {
        let r = self.range(iova, buf.len())?;
        self.bytes[r].copy_from_slice(buf);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_memory_bounds() {
        let mut m = FakeMemory::new(0x1000, 0x100);
        m.write(0x1010, &[1, 2, 3]).unwrap();
        let mut b = [0u8; 3];
        m.read(0x1010, &mut b).unwrap();
        assert_eq!(b, [1, 2, 3]);
        assert!(m.read(0xfff, &mut b).is_err());
        assert!(m.read(0x10fe, &mut b).is_err());
        assert!(m.write(u64::MAX, &b).is_err());
    }

    #[test]
    fn memfd_mapping_round_trip() {
        // SAFETY: memfd_create with a valid NUL-terminated name.
        let fd = unsafe { libc::memfd_create(c"cx-model-test".as_ptr(), 0) };
        assert!(fd >= 0);
        // SAFETY: fd was just created and is owned by nobody else.
        let file = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        file.set_len(0x2000).unwrap();
        let mut mem = MappedMemory::default();
        mem.map(0x4000_0000, 0x1000, &file, 0x1000).unwrap();
        mem.write(0x4000_0ff0, &[0xab; 16]).unwrap();
        let mut b = [0u8; 16];
        mem.read(0x4000_0ff0, &mut b).unwrap();
        assert_eq!(b, [0xab; 16]);
        assert!(
            mem.read(0x4000_0ff8, &mut b).is_err(),
            "read past the region end must fault"
        );
        assert!(mem.unmap(0x4000_0000));
        assert!(mem.read(0x4000_0000, &mut b).is_err());
    }
}
