//! The initialization segment at the start of BAR0: big-endian registers through which the driver
//! learns the firmware revision, programs the command queue and rings the command doorbell.

/// Firmware revision: `[15:0]` major, `[31:16]` minor.
pub const FW_REV: u64 = 0x000;
/// `[15:0]` firmware sub-minor, `[31:16]` command interface revision.
pub const CMDIF_REV_FW_SUB: u64 = 0x004;
/// High 32 bits of the command queue address.
pub const CMDQ_ADDR_H: u64 = 0x010;
/// Low 32 bits of the command queue address; reads return log size/stride and NIC state.
pub const CMDQ_ADDR_L_SZ: u64 = 0x014;
/// Command doorbell: the driver writes `1 << slot`.
pub const CMD_DBELL: u64 = 0x018;
/// Bit 31 set while firmware initializes.
pub const INITIALIZING: u64 = 0x1fc;
/// Health buffer (64 bytes).
pub const HEALTH: u64 = 0x200;
/// Free-running health counter; the driver's poll expects it to move.
pub const HEALTH_COUNTER: u64 = 0x1010;
/// End of the init segment proper; UAR pages follow from the next page.
pub const SIZE: u64 = 0x1000 * 2;

/// The only command interface revision the mlx5 drivers accept.
pub const CMDIF_REV: u16 = 5;
/// log2 of the number of command queue entries (32).
pub const LOG_CMDQ_SIZE: u32 = 5;
/// log2 of the command queue entry stride (64 bytes).
pub const LOG_CMDQ_STRIDE: u32 = 6;

/// Firmware version the device reports, `major.minor.subminor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FwVersion {
    /// Major number (16 for ConnectX-5).
    pub major: u16,
    /// Minor number.
    pub minor: u16,
    /// Sub-minor number.
    pub subminor: u16,
}

impl FwVersion {
    /// Parses `"16.35.2000"`.
    pub fn parse(s: &str) -> Option<Self> {
        let mut it = s.split('.').map(|p| p.parse::<u16>().ok());
        let v = Self {
            major: it.next()??,
            minor: it.next()??,
            subminor: it.next()??,
        };
        it.next().is_none().then_some(v)
    }
}

impl std::fmt::Display for FwVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.subminor)
    }
}

/// Human name of an init-segment offset, for the access log.
pub fn register_name(off: u64) -> &'static str {
    match off {
        FW_REV => "fw_rev",
        CMDIF_REV_FW_SUB => "cmdif_rev_fw_sub",
        CMDQ_ADDR_H => "cmdq_addr_h",
        CMDQ_ADDR_L_SZ => "cmdq_addr_l_sz",
        CMD_DBELL => "cmd_dbell",
        INITIALIZING => "initializing",
        HEALTH..=0x23f => "health",
        0xff8 => "cmd_exec_to",
        0xffc => "cmd_q_init_to",
        0x1000..=0x1007 => "internal_timer",
        HEALTH_COUNTER => "health_counter",
        _ => "reserved",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_fw_version() {
        assert_eq!(
            FwVersion::parse("16.35.2000"),
            Some(FwVersion {
                major: 16,
                minor: 35,
                subminor: 2000
            })
        );
        assert_eq!(FwVersion::parse("16.35"), None);
        assert_eq!(FwVersion::parse("16.35.1.2"), None);
        assert_eq!(FwVersion::parse("a.b.c"), None);
    }
}
