//! Memory keys: translating (key, address, length) into guest-physical runs, with the checks the
//! device makes: the key exists and its variant byte matches, it belongs to the QP's PD, the
//! range lies inside the region, and the region allows the access.

use super::buffer::be64;
use crate::firmware::objects::Kind;
use crate::firmware::Firmware;
use crate::guest_memory::GuestMemory;
use crate::ifc;

/// `mkc` fields of CREATE_MKEY input, and where its translation entries start.
mod mkc {
    use crate::ifc::Field;
    pub const ATOMIC: Field = Field::new(0x91, 1);
    pub const REMOTE_WRITE: Field = Field::new(0x92, 1);
    pub const REMOTE_READ: Field = Field::new(0x93, 1);
    pub const LOCAL_WRITE: Field = Field::new(0x94, 1);
    pub const ACCESS_MODE: Field = Field::new(0x96, 2);
    pub const KEY: Field = Field::new(0xb8, 8);
    pub const LENGTH64: Field = Field::new(0xe0, 1);
    pub const PD: Field = Field::new(0xe8, 24);
    pub const START_ADDR: Field = Field::new(0x100, 64);
    pub const LEN: Field = Field::new(0x140, 64);
    pub const LOG_PAGE_SIZE: Field = Field::new(0x25a, 6);
    pub const MTT: usize = 0x110;
}

/// Access modes: physical addresses, or a table of pages.
const ACCESS_PA: u64 = 0;
const ACCESS_MTT: u64 = 1;

/// The lkey that ends a receive WQE's scatter list.
pub const TERMINATE_LKEY: u32 = 0x100;

/// What an access does with the memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The device reads local memory (send data, write source).
    LocalRead,
    /// The device writes local memory (receive, read response, atomic result).
    LocalWrite,
    /// A remote peer reads (RDMA read).
    RemoteRead,
    /// A remote peer writes (RDMA write).
    RemoteWrite,
    /// A remote peer runs an atomic.
    RemoteAtomic,
}

/// Why a key refused an access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyError {
    /// No such key, or its variant byte does not match.
    Invalid,
    /// The key belongs to another protection domain.
    Pd,
    /// The range is outside the region.
    Bounds,
    /// The region does not allow this access.
    Access,
    /// The translation points at memory the guest did not map.
    Dma,
}

/// Translates `len` bytes at `addr` through memory key `key`, for a QP of protection domain
/// `pd`, into guest-physical runs.
pub fn translate(
    fw: &Firmware,
    key: u32,
    pd: u32,
    addr: u64,
    len: u64,
    access: Access,
) -> Result<Vec<(u64, usize)>, KeyError> {
    let mkey = fw.objects.get(Kind::Mkey, key >> 8).ok_or(KeyError::Invalid)?;
    let c = &mkey.context;
    if ifc::get(c, mkc::KEY) != u64::from(key & 0xff) {
        return Err(KeyError::Invalid);
    }
    if ifc::get(c, mkc::PD) != u64::from(pd) {
        return Err(KeyError::Pd);
    }
    let allowed = match access {
        Access::LocalRead => true,
        Access::LocalWrite => ifc::get(c, mkc::LOCAL_WRITE) == 1,
        Access::RemoteRead => ifc::get(c, mkc::REMOTE_READ) == 1,
        Access::RemoteWrite => ifc::get(c, mkc::REMOTE_WRITE) == 1,
        Access::RemoteAtomic => ifc::get(c, mkc::ATOMIC) == 1,
    };
    if !allowed {
        return Err(KeyError::Access);
    }
    let start = ifc::get(c, mkc::START_ADDR);
    let size = ifc::get(c, mkc::LEN);
    let end = addr.checked_add(len).ok_or(KeyError::Bounds)?;
    let unbounded = ifc::get(c, mkc::LENGTH64) == 1;
    if !unbounded && (addr < start || end > start.checked_add(size).ok_or(KeyError::Bounds)?) {
        return Err(KeyError::Bounds);
    }
    match ifc::get(c, mkc::ACCESS_MODE) {
        ACCESS_PA => Ok(vec![(addr, len as usize)]),
        ACCESS_MTT => {
            let psz = 1u64 << ifc::get(c, mkc::LOG_PAGE_SIZE).min(40);
            let base = start & !(psz - 1);
            let mut runs = vec![];
            let mut a = addr;
            while a < end {
                let page = (a - base) / psz;
                let entry = be64(c, mkc::MTT + page as usize * 8) & !0x7;
                let take = (psz - a % psz).min(end - a);
                runs.push((entry + a % psz, take as usize));
                a += take;
            }
            Ok(runs)
        }
        _ => Err(KeyError::Invalid),
    }
}

/// Reads `len` bytes at `addr` through `key`.
pub fn read(
    fw: &Firmware,
    mem: &dyn GuestMemory,
    key: u32,
    pd: u32,
    addr: u64,
    len: u64,
    access: Access,
) -> Result<Vec<u8>, KeyError> {
    let mut out = vec![0u8; len as usize];
    let mut at = 0;
    for (pa, n) in translate(fw, key, pd, addr, len, access)? {
        mem.read(pa, &mut out[at..at + n]).map_err(|_| KeyError::Dma)?;
        at += n;
    }
    Ok(out)
}

/// Writes `data` at `addr` through `key`.
pub fn write(
    fw: &Firmware,
    mem: &mut dyn GuestMemory,
    key: u32,
    pd: u32,
    addr: u64,
    data: &[u8],
    access: Access,
) -> Result<(), KeyError> {
    let mut at = 0;
    for (pa, n) in translate(fw, key, pd, addr, data.len() as u64, access)? {
        mem.write(pa, &data[at..at + n]).map_err(|_| KeyError::Dma)?;
        at += n;
    }
    Ok(())
}

/// A data segment: `len` bytes at `addr` through `key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sge {
    /// Byte count.
    pub len: u32,
    /// Local key.
    pub key: u32,
    /// Virtual address.
    pub addr: u64,
}

/// Why a scatter failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScatterError {
    /// A key refused the write.
    Key(KeyError),
    /// The list is shorter than the data.
    TooSmall,
}

/// Writes `data` into the scatter list `sges`; the list must hold all of it.
pub fn scatter(
    fw: &Firmware,
    mem: &mut dyn GuestMemory,
    pd: u32,
    sges: &[Sge],
    data: &[u8],
) -> Result<(), ScatterError> {
    let room: u64 = sges.iter().map(|s| u64::from(s.len)).sum();
    if room < data.len() as u64 {
        return Err(ScatterError::TooSmall);
    }
    let mut done = 0;
    for s in sges {
        if done == data.len() {
            break;
        }
        let n = (s.len as usize).min(data.len() - done);
        write(
            fw,
            mem,
            s.key,
            pd,
            s.addr,
            &data[done..done + n],
            Access::LocalWrite,
        )
        .map_err(ScatterError::Key)?;
        done += n;
    }
    Ok(())
}

/// Parses the data segments of a receive WQE (16 bytes each), up to the terminating key or a
/// zero-length entry.
pub fn receive_sges(segs: &[u8]) -> Vec<Sge> {
    segs.chunks_exact(16)
        .map(|s| Sge {
            len: u32::from_be_bytes([s[0], s[1], s[2], s[3]]),
            key: u32::from_be_bytes([s[4], s[5], s[6], s[7]]),
            addr: be64(s, 8),
        })
        .take_while(|s| s.key != TERMINATE_LKEY && s.len != 0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ifc::Field;

    #[test]
    fn receive_list_ends_at_the_terminating_key() {
        let mut segs = [0u8; 48];
        segs[0..4].copy_from_slice(&64u32.to_be_bytes());
        segs[4..8].copy_from_slice(&0x300u32.to_be_bytes());
        segs[8..16].copy_from_slice(&0x1000u64.to_be_bytes());
        segs[16..20].copy_from_slice(&0u32.to_be_bytes());
        segs[20..24].copy_from_slice(&TERMINATE_LKEY.to_be_bytes());
        segs[32..36].copy_from_slice(&64u32.to_be_bytes());
        let l = receive_sges(&segs);
        assert_eq!(
            l,
            vec![Sge {
                len: 64,
                key: 0x300,
                addr: 0x1000
            }]
        );
    }

    #[test]
    fn field_offsets_match_create_mkey() {
        // mkc starts at bit 0x80 of CREATE_MKEY input; `a` is its bit 0x11.
        assert_eq!(mkc::ATOMIC, Field::new(0x80 + 0x11, 1));
        assert_eq!(mkc::KEY, Field::new(0x80 + 0x38, 8));
        assert_eq!(mkc::PD, Field::new(0x80 + 0x68, 24));
    }
}
