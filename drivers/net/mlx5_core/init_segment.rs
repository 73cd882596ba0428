// SPDX-License-Identifier: GPL-2.0

//! The initialization segment at the start of BAR0: firmware revision, command interface
//! revision, command queue address and doorbell, the `initializing` flag and the health buffer.
//! All registers are big-endian 32-bit words.

use kernel::{
    io::{register, register::Register, Io},
    pci::{self, DevresBar},
    prelude::*,
    sync::Arc,
    time::{delay::fsleep, Delta, Instant, Monotonic},
};

/// BAR0 mapping with at least the init segment in it.
pub(crate) type Bar0<'a> = pci::Bar<'a, { SIZE }>;

/// BAR0 as a bound function keeps it: device-managed, shared by the command handles, the
/// health poll and the event handler.
pub(crate) type SharedBar = Arc<DevresBar<{ SIZE }>>;

/// Size of the init segment the driver touches.
pub(crate) const SIZE: usize = 0x2000;

register! {
    /// `fw_rev`: the firmware version.
    pub(crate) FW_REV(u32) @ 0x000 {
        /// Minor version.
        31:16 minor;
        /// Major version.
        15:0 major;
    }

    /// `cmdif_rev_fw_sub`: command interface revision and firmware sub-minor version.
    pub(crate) CMDIF_REV_FW_SUB(u32) @ 0x004 {
        /// Command interface revision.
        31:16 cmdif;
        /// Firmware sub-minor version.
        15:0 subminor;
    }

    /// `cmdq_addr_h`: high half of the command queue address.
    pub(crate) CMDQ_ADDR_H(u32) @ 0x010 {
        /// Address bits 63:32.
        31:0 addr;
    }

    /// `cmdq_addr_l_sz`: low half of the command queue address (4 KiB aligned); reads give the
    /// queue's geometry.
    pub(crate) CMDQ_ADDR_L_SZ(u32) @ 0x014 {
        /// Address bits 31:12.
        31:12 addr;
        /// State of the NIC interface (`MLX5_INITIAL_SEG_NIC_INTERFACE_*`; 0: full driver).
        10:8 nic_ifc;
        /// Log2 of the number of entries.
        7:4 log_size;
        /// Log2 of the entry stride.
        3:0 log_stride;
    }

    /// `cmd_dbell`: `1 << slot` submits the entry in that slot.
    pub(crate) CMD_DBELL(u32) @ 0x018 {
        /// One bit per slot.
        31:0 slots;
    }

    /// `initializing`: set while firmware initializes.
    pub(crate) INITIALIZING(u32) @ 0x1fc {
        /// Firmware is still initializing.
        31:31 initializing => bool;
    }

    /// Health buffer word with the recover-flow-required bit.
    pub(crate) HEALTH_RFR(u32) @ 0x238 {
        /// Recovery flow required: the error is fatal.
        31:31 rfr => bool;
    }

    /// Health buffer word with the syndrome.
    pub(crate) HEALTH_SYND(u32) @ 0x23c {
        /// The health syndrome (0: healthy).
        23:16 synd;
    }

    /// `health_counter`: advances while firmware is alive.
    pub(crate) HEALTH_COUNTER(u32) @ 0x1010 {
        /// The free-running counter.
        31:0 counter;
    }
}

/// The only command interface revision this driver speaks.
pub(crate) const SUPPORTED_CMDIF_REV: u16 = 5;

/// Reads a register. The init segment is big-endian and the kernel's MMIO accessors read
/// little-endian words, so the word is swapped before it is decoded (a register that cannot be
/// read, which the fixed offsets rule out, reads as all ones, as a vanished device does).
fn read_reg<R: Register>(bar: &Bar0<'_>) -> R
where
    u32: Into<R>,
{
    bar.try_read32(R::OFFSET)
        .map_or(u32::MAX, u32::swap_bytes)
        .into()
}

/// Writes a register (big-endian, see [`read_reg`]).
fn write_reg<R: Register>(bar: &Bar0<'_>, r: R)
where
    u32: From<R>,
{
    let v: u32 = r.into();
    // A failure would mean an offset outside the mapping, which the fixed offsets rule out.
    let _ = bar.try_write32(v.swap_bytes(), R::OFFSET);
}

/// The command queue's log2 number of entries and log2 entry stride.
pub(crate) fn cmdq_geometry(bar: &Bar0<'_>) -> (u32, u32) {
    let r: CMDQ_ADDR_L_SZ = read_reg(bar);
    (r.log_size().get(), r.log_stride().get())
}

/// Programs the command queue's DMA address (high half first; the page is 4 KiB aligned).
pub(crate) fn set_cmdq_address(bar: &Bar0<'_>, addr: u64) {
    write_reg(bar, CMDQ_ADDR_H::from((addr >> 32) as u32));
    write_reg(bar, CMDQ_ADDR_L_SZ::from(addr as u32 & !0xfff));
}

/// `MLX5_INITIAL_SEG_NIC_INTERFACE_DISABLED`: the NIC interface is off.
pub(crate) const NIC_IFC_DISABLED: u8 = 1;
/// `MLX5_INITIAL_SEG_NIC_INTERFACE_SW_RESET`: the device is in a software reset.
pub(crate) const NIC_IFC_SW_RESET: u8 = 7;

/// What the health buffer and counter say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HealthRegs {
    /// The free-running counter.
    pub(crate) counter: u32,
    /// The NIC interface state (C's `mlx5_get_nic_state`).
    pub(crate) nic_ifc: u8,
    /// The syndrome (0: healthy).
    pub(crate) synd: u8,
    /// Recovery flow required: the error is fatal.
    pub(crate) rfr: bool,
    /// Every register reads all ones: the device is gone from the bus.
    pub(crate) gone: bool,
}

/// Reads the health registers.
pub(crate) fn health(bar: &Bar0<'_>) -> HealthRegs {
    let l_sz = read_reg::<CMDQ_ADDR_L_SZ>(bar);
    let addr: u32 = l_sz.into();
    let counter = read_reg::<HEALTH_COUNTER>(bar).counter().get();
    HealthRegs {
        counter,
        nic_ifc: l_sz.nic_ifc().get() as u8,
        synd: read_reg::<HEALTH_SYND>(bar).synd().get() as u8,
        rfr: read_reg::<HEALTH_RFR>(bar).rfr(),
        gone: addr == u32::MAX && counter == u32::MAX,
    }
}

/// Submits the command queue entry in `slot` (slots are below 32: the queue has at most 32).
pub(crate) fn ring_command_doorbell(bar: &Bar0<'_>, slot: u32) {
    write_reg(bar, CMD_DBELL::from(1u32.checked_shl(slot).unwrap_or(0)));
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
    /// Decodes the `fw_rev` and `cmdif_rev_fw_sub` registers.
    pub(crate) fn from_regs(fw_rev: FW_REV, cmdif_rev_fw_sub: CMDIF_REV_FW_SUB) -> Self {
        Self {
            major: fw_rev.major().get() as u16,
            minor: fw_rev.minor().get() as u16,
            subminor: cmdif_rev_fw_sub.subminor().get() as u16,
            cmdif: cmdif_rev_fw_sub.cmdif().get() as u16,
        }
    }

    /// Reads the revision from the init segment.
    pub(crate) fn read(bar: &Bar0<'_>) -> Self {
        Self::from_regs(read_reg(bar), read_reg(bar))
    }
}

/// Whether the `initializing` word says firmware is still initializing.
pub(crate) fn is_initializing(word: u32) -> bool {
    INITIALIZING::from(word).initializing()
}

/// Waits until firmware clears `initializing`, polling every `poll_ms`, for at most `timeout`.
/// Returns `EBUSY` if it never does, as the C driver does for its pre-init wait.
pub(crate) fn wait_fw_init(bar: &Bar0<'_>, timeout: Delta, poll: Delta) -> Result<Delta> {
    let start = Instant::<Monotonic>::now();
    loop {
        if !is_initializing(read_reg::<INITIALIZING>(bar).into()) {
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
        let r = FwRevision::from_regs(
            FW_REV::from((35 << 16) | 16),
            CMDIF_REV_FW_SUB::from((5 << 16) | 2000),
        );
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

    #[test]
    fn register_fields() {
        let g = CMDQ_ADDR_L_SZ::from(0x1234_5053);
        assert_eq!((g.log_size().get(), g.log_stride().get()), (5, 3));
        assert_eq!(g.addr().get(), 0x12345);
        assert_eq!(HEALTH_SYND::from(0x00ab_0000).synd().get(), 0xab);
        assert!(HEALTH_RFR::from(0x8000_0000).rfr());
        assert_eq!(CMDQ_ADDR_L_SZ::OFFSET, 0x14);
        assert_eq!(HEALTH_COUNTER::OFFSET, 0x1010);
    }
}
