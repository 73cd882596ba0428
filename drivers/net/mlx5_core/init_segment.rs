// SPDX-License-Identifier: GPL-2.0

//! The initialization segment at the start of BAR0: firmware revision, command interface
//! revision, command queue address and doorbell, the `initializing` flag and the health buffer.
//! All registers are big-endian 32-bit words.

use kernel::{
    io::Io,
    pci::{self, DevresBar},
    prelude::*,
    sync::Arc,
    time::{delay::fsleep, Delta, Instant, Monotonic},
};

/// BAR0 mapping with at least the init segment in it.
pub(crate) type Bar0<'a> = pci::Bar<'a, { SIZE }>;

/// Size of the init segment the driver touches.
pub(crate) const SIZE: usize = 0x2000;

/// BAR0 as the function keeps it: device-managed, shared with the health poll and the command
/// handles drivers keep.
pub(crate) type SharedBar = Arc<DevresBar<SIZE>>;

/// `fw_rev`: `[15:0]` major, `[31:16]` minor.
const FW_REV: usize = 0x000;
/// `cmdif_rev_fw_sub`: `[15:0]` firmware sub-minor, `[31:16]` command interface revision.
const CMDIF_REV_FW_SUB: usize = 0x004;
/// `cmdq_addr_h`: high half of the command queue address.
const CMDQ_ADDR_H: usize = 0x010;
/// `cmdq_addr_l_sz`: low half of the address; reads give log size (7:4) and log stride (3:0).
const CMDQ_ADDR_L_SZ: usize = 0x014;
/// `cmd_dbell`: `1 << slot` submits the entry in that slot.
const CMD_DBELL: usize = 0x018;
/// `initializing`: bit 31 set while firmware initializes.
const INITIALIZING: usize = 0x1fc;
/// Health buffer word with the recover-flow-required bit (31).
const HEALTH_RFR: usize = 0x238;
/// Health buffer word with the syndrome (bits 23:16).
const HEALTH_SYND: usize = 0x23c;
/// `health_counter`: advances while firmware is alive.
const HEALTH_COUNTER: usize = 0x1010;

/// The only command interface revision this driver speaks.
pub(crate) const SUPPORTED_CMDIF_REV: u16 = 5;

/// Reads a big-endian register.
fn read_be32(bar: &Bar0<'_>, off: usize) -> u32 {
    // `read32` interprets the bytes as little-endian; the device stores them big-endian.
    bar.try_read32(off).map_or(u32::MAX, u32::swap_bytes)
}

/// Writes a big-endian register.
fn write_be32(bar: &Bar0<'_>, off: usize, v: u32) {
    // A failure would mean an offset outside the mapping, which the constants rule out.
    let _ = bar.try_write32(v.swap_bytes(), off);
}

/// The command queue's log2 number of entries and log2 entry stride.
pub(crate) fn cmdq_geometry(bar: &Bar0<'_>) -> (u32, u32) {
    let v = read_be32(bar, CMDQ_ADDR_L_SZ);
    ((v >> 4) & 0xf, v & 0xf)
}

/// Programs the command queue's DMA address (high half first; the page is 4 KiB aligned).
pub(crate) fn set_cmdq_address(bar: &Bar0<'_>, addr: u64) {
    write_be32(bar, CMDQ_ADDR_H, (addr >> 32) as u32);
    write_be32(bar, CMDQ_ADDR_L_SZ, addr as u32 & !0xfff);
}

/// What the health buffer and counter say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HealthRegs {
    /// The free-running counter.
    pub(crate) counter: u32,
    /// The syndrome (0: healthy).
    pub(crate) synd: u8,
    /// Recovery flow required: the error is fatal.
    pub(crate) rfr: bool,
    /// Every register reads all ones: the device is gone from the bus.
    pub(crate) gone: bool,
}

/// Reads the health registers.
pub(crate) fn health(bar: &Bar0<'_>) -> HealthRegs {
    let addr = read_be32(bar, CMDQ_ADDR_L_SZ);
    let counter = read_be32(bar, HEALTH_COUNTER);
    HealthRegs {
        counter,
        synd: (read_be32(bar, HEALTH_SYND) >> 16) as u8,
        rfr: read_be32(bar, HEALTH_RFR) & (1 << 31) != 0,
        gone: addr == u32::MAX && counter == u32::MAX,
    }
}

/// Submits the command queue entry in `slot`.
pub(crate) fn ring_command_doorbell(bar: &Bar0<'_>, slot: u32) {
    write_be32(bar, CMD_DBELL, 1 << slot);
}

/// The firmware version and command interface revision the device reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FwRevision {
    /// Major version.
    pub(crate) major: u16,
    /// Minor version.
    pub(crate) minor: u16,
    /// Sub-minor version.
    pub(crate) subminor: u16,
    /// Command interface revision.
    pub(crate) cmdif: u16,
}

impl FwRevision {
    /// Decodes the `fw_rev` and `cmdif_rev_fw_sub` words.
    pub(crate) fn from_words(fw_rev: u32, cmdif_rev_fw_sub: u32) -> Self {
        Self {
            major: (fw_rev & 0xffff) as u16,
            minor: (fw_rev >> 16) as u16,
            subminor: (cmdif_rev_fw_sub & 0xffff) as u16,
            cmdif: (cmdif_rev_fw_sub >> 16) as u16,
        }
    }

    /// Reads the revision from the init segment.
    pub(crate) fn read(bar: &Bar0<'_>) -> Self {
        Self::from_words(read_be32(bar, FW_REV), read_be32(bar, CMDIF_REV_FW_SUB))
    }
}

/// Whether the `initializing` word says firmware is still initializing.
pub(crate) fn is_initializing(word: u32) -> bool {
    word & (1 << 31) != 0
}

/// Waits until firmware clears `initializing`, polling every `poll_ms`, for at most `timeout`.
/// Returns `EBUSY` if it never does, as the C driver does for its pre-init wait.
pub(crate) fn wait_fw_init(bar: &Bar0<'_>, timeout: Delta, poll: Delta) -> Result<Delta> {
    let start = Instant::<Monotonic>::now();
    loop {
        if !is_initializing(read_be32(bar, INITIALIZING)) {
            return Ok(start.elapsed());
        }
        if start.elapsed() > timeout {
            return Err(EBUSY);
        }
        fsleep(poll);
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_init_segment)]
mod tests {
    use super::*;

    #[test]
    fn firmware_revision_fields() {
        // fw_rev: minor 35 in [31:16], major 16 in [15:0]; sub-minor 2000, cmdif 5.
        let r = FwRevision::from_words((35 << 16) | 16, (5 << 16) | 2000);
        assert_eq!(
            r,
            FwRevision {
                major: 16,
                minor: 35,
                subminor: 2000,
                cmdif: 5
            }
        );
        assert_eq!(r.cmdif, SUPPORTED_CMDIF_REV);
    }

    #[test]
    fn initializing_is_bit_31_only() {
        assert!(is_initializing(0x8000_0000));
        assert!(is_initializing(0xc000_0000));
        // Bit 30 means "firmware reset supported", not initializing.
        assert!(!is_initializing(0x4000_0000));
        assert!(!is_initializing(0));
    }
}
