//! PCI configuration space of the emulated ConnectX-5 function.

/// Mellanox Technologies.
pub const VENDOR_ID: u16 = 0x15b3;
/// ConnectX-5 physical function.
pub const DEVICE_ID: u16 = 0x1017;
/// Size of BAR0: init segment, then UAR pages.
pub const BAR0_SIZE: u64 = 32 << 20;
/// Number of MSI-X vectors the function offers.
pub const MSIX_VECTORS: u16 = 64;
/// MSI-X table offset in BAR0, where ConnectX-4/5 place it (QEMU emulates the table itself).
pub const MSIX_TABLE_OFFSET: u32 = 0x2000;
/// MSI-X pending-bit array offset in BAR0.
pub const MSIX_PBA_OFFSET: u32 = 0x3000;

const CAP_PCIE: u8 = 0x60;
const CAP_MSIX: u8 = 0x9c;

/// The 4 KiB configuration space, with the few writable bits real hardware has.
pub struct ConfigSpace {
    bytes: [u8; 4096],
}

impl Default for ConfigSpace {
    fn default() -> Self {
        Self::new()
    }
}

impl ConfigSpace {
    /// Config space of a ConnectX-5 PF: Ethernet-class function with a PCIe v2 endpoint capability
    /// and an MSI-X capability.
    pub fn new() -> Self {
        let mut c = Self { bytes: [0; 4096] };
        c.put16(0x00, VENDOR_ID);
        c.put16(0x02, DEVICE_ID);
        c.put16(0x06, 0x0010); // status: capabilities list
        c.put32(0x08, 0x0207_0000); // class: network / InfiniBand controller, revision 0
        c.put32(0x10, 0x0000_000c); // BAR0: memory, 64-bit, prefetchable
        c.put16(0x2c, VENDOR_ID); // subsystem vendor
        c.put16(0x2e, 0x0007); // subsystem id
        c.bytes[0x34] = CAP_PCIE;
        // PCI Express capability, version 2, endpoint.
        let p = CAP_PCIE as usize;
        c.bytes[p] = 0x10;
        c.bytes[p + 1] = CAP_MSIX;
        c.put16(p + 2, 0x0002);
        c.put32(p + 4, 0x1000_8001); // devcap: max payload 256, FLR capable
        c.put32(p + 0x0c, 0x0000_0103 | (16 << 4)); // linkcap: 8 GT/s, x16
        c.put16(p + 0x12, 0x0003 | (16 << 4)); // linksta: 8 GT/s, x16
                                               // MSI-X capability: table and PBA in BAR0.
        let m = CAP_MSIX as usize;
        c.bytes[m] = 0x11;
        c.bytes[m + 1] = 0x00;
        c.put16(m + 2, MSIX_VECTORS - 1);
        c.put32(m + 4, MSIX_TABLE_OFFSET);
        c.put32(m + 8, MSIX_PBA_OFFSET);
        c
    }

    fn put16(&mut self, off: usize, v: u16) {
        self.bytes[off..off + 2].copy_from_slice(&v.to_le_bytes());
    }

    fn put32(&mut self, off: usize, v: u32) {
        self.bytes[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }

    /// Reads `data.len()` bytes at `off`; bytes past the end read as ones, like an absent register.
    pub fn read(&self, off: u64, data: &mut [u8]) {
        for (i, d) in data.iter_mut().enumerate() {
            *d = usize::try_from(off)
                .ok()
                .and_then(|o| o.checked_add(i))
                .and_then(|o| self.bytes.get(o))
                .copied()
                .unwrap_or(0xff);
        }
    }

    /// Writes config space. Only the command register is writable here; QEMU virtualises BARs and
    /// the MSI-X control itself.
    pub fn write(&mut self, off: u64, data: &[u8]) {
        for (i, &d) in data.iter().enumerate() {
            let o = off as usize + i;
            if (0x04..0x06).contains(&o) {
                self.bytes[o] = d;
            }
        }
    }

    /// The PCI command register (memory space, bus master bits).
    pub fn command(&self) -> u16 {
        u16::from_le_bytes([self.bytes[4], self.bytes[5]])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_capability_chain() {
        let c = ConfigSpace::new();
        let mut b = [0u8; 4];
        c.read(0, &mut b);
        assert_eq!(u16::from_le_bytes([b[0], b[1]]), VENDOR_ID);
        assert_eq!(u16::from_le_bytes([b[2], b[3]]), DEVICE_ID);
        // Walk the capability list: PCIe (0x10) then MSI-X (0x11), then the end.
        let mut ids = vec![];
        let mut p = [0u8; 1];
        c.read(0x34, &mut p);
        let mut ptr = p[0];
        while ptr != 0 {
            let mut cap = [0u8; 2];
            c.read(ptr as u64, &mut cap);
            ids.push(cap[0]);
            ptr = cap[1];
        }
        assert_eq!(ids, vec![0x10, 0x11]);
    }

    #[test]
    fn command_register_is_writable_and_ids_are_not() {
        let mut c = ConfigSpace::new();
        c.write(0, &[0, 0, 0, 0]);
        c.write(4, &[0x06, 0x00]);
        assert_eq!(c.command(), 0x0006);
        let mut b = [0u8; 2];
        c.read(0, &mut b);
        assert_eq!(u16::from_le_bytes(b), VENDOR_ID);
    }
}
