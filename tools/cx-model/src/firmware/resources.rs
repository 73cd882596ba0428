//! Numbered resources the driver allocates (UARs, PDs, transport domains) and their commands.

use super::objects::Kind;
use super::{output, CmdError, CmdResult, Firmware, Input};
use crate::command::Status;
use crate::ifc::{self, Field};
use std::collections::BTreeSet;

/// First UAR index handed out: pages below it hold the init segment, the health counter and the
/// MSI-X table, so a doorbell page never aliases them.
pub const FIRST_UAR: u32 = 8;

/// The 24-bit object number in the alloc outputs and dealloc inputs of UAR, PD and TD.
const OBJECT: Field = Field::new(0x48, 24);

/// An allocator of numbers in `first..limit`, lowest free first.
#[derive(Debug, Clone)]
pub struct IdPool {
    first: u32,
    limit: u32,
    used: BTreeSet<u32>,
}

impl IdPool {
    /// Numbers `first..limit`.
    pub fn new(first: u32, limit: u32) -> Self {
        Self {
            first,
            limit,
            used: BTreeSet::new(),
        }
    }

    /// Takes the lowest free number.
    pub fn alloc(&mut self) -> Option<u32> {
        let mut n = self.first;
        for &u in self.used.range(self.first..) {
            if u != n {
                break;
            }
            n += 1;
        }
        (n < self.limit).then(|| {
            self.used.insert(n);
            n
        })
    }

    /// Returns `n`; false if it was not allocated.
    pub fn free(&mut self, n: u32) -> bool {
        self.used.remove(&n)
    }

    /// Whether `n` is allocated.
    pub fn contains(&self, n: u32) -> bool {
        self.used.contains(&n)
    }

    /// Number allocated.
    pub fn len(&self) -> usize {
        self.used.len()
    }

    /// Whether none is allocated.
    pub fn is_empty(&self) -> bool {
        self.used.is_empty()
    }
}

fn alloc(pool: &mut IdPool, syndrome: u32) -> CmdResult {
    let n = pool.alloc().ok_or(CmdError::new(Status::NoResources, syndrome))?;
    let mut out = output(16);
    ifc::set(&mut out, OBJECT, u64::from(n));
    Ok(out)
}

fn dealloc(pool: &mut IdPool, input: &Input, syndrome: u32) -> CmdResult {
    if pool.free(input.get(OBJECT) as u32) {
        Ok(output(16))
    } else {
        Err(CmdError::new(Status::BadResource, syndrome))
    }
}

/// ALLOC_UAR.
pub fn alloc_uar(fw: &mut Firmware, _input: &Input) -> CmdResult {
    alloc(&mut fw.uars, 0x0a4_0001)
}

/// DEALLOC_UAR.
pub fn dealloc_uar(fw: &mut Firmware, input: &Input) -> CmdResult {
    dealloc(&mut fw.uars, input, 0x0a4_0002)
}

/// ALLOC_PD.
pub fn alloc_pd(fw: &mut Firmware, _input: &Input) -> CmdResult {
    alloc(&mut fw.pds, 0x0b4_0001)
}

/// DEALLOC_PD: refused while a memory key, QP, SRQ or RMP still lives in the PD, as the
/// model refuses to destroy any object in use (the C driver never frees a PD before what is in
/// it).
pub fn dealloc_pd(fw: &mut Firmware, input: &Input) -> CmdResult {
    let pd = input.get(OBJECT) as u32;
    if fw.pds.contains(pd) && fw.objects.users_of(Kind::Pd, pd) != 0 {
        return Err(CmdError::new(Status::ResourceBusy, 0x0b4_0003));
    }
    dealloc(&mut fw.pds, input, 0x0b4_0002)
}

/// ALLOC_TRANSPORT_DOMAIN.
pub fn alloc_transport_domain(fw: &mut Firmware, _input: &Input) -> CmdResult {
    alloc(&mut fw.tds, 0x0c4_0001)
}

/// DEALLOC_TRANSPORT_DOMAIN.
pub fn dealloc_transport_domain(fw: &mut Firmware, input: &Input) -> CmdResult {
    dealloc(&mut fw.tds, input, 0x0c4_0002)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_free_first_and_bounds() {
        let mut p = IdPool::new(8, 11);
        assert_eq!(p.alloc(), Some(8));
        assert_eq!(p.alloc(), Some(9));
        assert!(p.free(8));
        assert!(!p.free(8));
        assert_eq!(p.alloc(), Some(8));
        assert_eq!(p.alloc(), Some(10));
        assert_eq!(p.alloc(), None);
        assert_eq!(p.len(), 3);
    }
}
