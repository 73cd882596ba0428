// SPDX-License-Identifier: GPL-2.0

//! Command statuses and delivery statuses, their names and the errnos the C driver maps them to;
//! and the names of the commands this driver issues, for logs.

use kernel::prelude::*;

/// A command status (`MLX5_CMD_STAT_*`), as the output header reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// `OK`.
    Ok,
    /// `MLX5_CMD_STAT_INT_ERR`.
    InternalError,
    /// `MLX5_CMD_STAT_BAD_OP_ERR`.
    BadOperation,
    /// `MLX5_CMD_STAT_BAD_PARAM_ERR`.
    BadParameter,
    /// `MLX5_CMD_STAT_BAD_SYS_STATE_ERR`.
    BadSystemState,
    /// `MLX5_CMD_STAT_BAD_RES_ERR`.
    BadResource,
    /// `MLX5_CMD_STAT_RES_BUSY`.
    ResourceBusy,
    /// `MLX5_CMD_STAT_NOT_READY`.
    NotReady,
    /// `MLX5_CMD_STAT_LIM_ERR`.
    LimitsExceeded,
    /// `MLX5_CMD_STAT_BAD_RES_STATE_ERR`.
    BadResourceState,
    /// `MLX5_CMD_STAT_IX_ERR`.
    BadIndex,
    /// `MLX5_CMD_STAT_NO_RES_ERR`.
    NoResources,
    /// `MLX5_CMD_STAT_BAD_QP_STATE_ERR`.
    BadQpState,
    /// `MLX5_CMD_STAT_BAD_PKT_ERR`.
    BadPacket,
    /// `MLX5_CMD_STAT_BAD_SIZE_OUTS_CQES_ERR`.
    BadSizeOutstandingCqes,
    /// `MLX5_CMD_STAT_BAD_INP_LEN_ERR`.
    BadInputLength,
    /// `MLX5_CMD_STAT_BAD_OUTP_LEN_ERR`.
    BadOutputLength,
    /// A value this driver does not know.
    Unknown(u8),
}

impl Status {
    /// The status of the raw `status` byte.
    pub fn from_raw(status: u8) -> Self {
        match status {
            0x0 => Self::Ok,
            0x1 => Self::InternalError,
            0x2 => Self::BadOperation,
            0x3 => Self::BadParameter,
            0x4 => Self::BadSystemState,
            0x5 => Self::BadResource,
            0x6 => Self::ResourceBusy,
            0x7 => Self::NotReady,
            0x8 => Self::LimitsExceeded,
            0x9 => Self::BadResourceState,
            0xa => Self::BadIndex,
            0xf => Self::NoResources,
            0x10 => Self::BadQpState,
            0x30 => Self::BadPacket,
            0x40 => Self::BadSizeOutstandingCqes,
            0x50 => Self::BadInputLength,
            0x51 => Self::BadOutputLength,
            other => Self::Unknown(other),
        }
    }

    /// The raw value.
    pub fn raw(self) -> u8 {
        match self {
            Self::Ok => 0x0,
            Self::InternalError => 0x1,
            Self::BadOperation => 0x2,
            Self::BadParameter => 0x3,
            Self::BadSystemState => 0x4,
            Self::BadResource => 0x5,
            Self::ResourceBusy => 0x6,
            Self::NotReady => 0x7,
            Self::LimitsExceeded => 0x8,
            Self::BadResourceState => 0x9,
            Self::BadIndex => 0xa,
            Self::NoResources => 0xf,
            Self::BadQpState => 0x10,
            Self::BadPacket => 0x30,
            Self::BadSizeOutstandingCqes => 0x40,
            Self::BadInputLength => 0x50,
            Self::BadOutputLength => 0x51,
            Self::Unknown(v) => v,
        }
    }

    /// The name the C driver prints.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ok => "OK",
            Self::InternalError => "internal error",
            Self::BadOperation => "bad operation",
            Self::BadParameter => "bad parameter",
            Self::BadSystemState => "bad system state",
            Self::BadResource => "bad resource",
            Self::ResourceBusy => "resource busy",
            Self::NotReady => "not ready",
            Self::LimitsExceeded => "limits exceeded",
            Self::BadResourceState => "bad resource state",
            Self::BadIndex => "bad index",
            Self::NoResources => "no resources",
            Self::BadQpState => "bad QP state",
            Self::BadPacket => "bad packet (discarded)",
            Self::BadSizeOutstandingCqes => "bad size too many outstanding CQEs",
            Self::BadInputLength => "bad input length",
            Self::BadOutputLength => "bad output length",
            Self::Unknown(_) => "unknown status code",
        }
    }

    /// The errno the C driver maps the status to (`Ok` is `Ok(())`).
    pub fn to_result(self) -> Result {
        match self {
            Self::Ok => Ok(()),
            Self::InternalError
            | Self::BadSystemState
            | Self::BadInputLength
            | Self::BadOutputLength => Err(EIO),
            Self::ResourceBusy => Err(EBUSY),
            Self::NotReady | Self::NoResources => Err(EAGAIN),
            Self::LimitsExceeded => Err(ENOMEM),
            _ => Err(EINVAL),
        }
    }
}

/// The errno a delivery status becomes.
pub(crate) fn delivery_errno(delivery: u8) -> Error {
    match delivery {
        0x1 | 0x2 => EBADR,
        0x3..=0x5 => EFAULT,
        0x6 => EIO,
        _ => ENOMSG,
    }
}

/// Command opcodes (`MLX5_CMD_OP_*`) this driver and its interfaces issue.
pub mod op {
    /// `MLX5_CMD_OP_QUERY_HCA_CAP`.
    pub const QUERY_HCA_CAP: u16 = 0x100;
    /// `MLX5_CMD_OP_QUERY_ADAPTER`.
    pub const QUERY_ADAPTER: u16 = 0x101;
    /// `MLX5_CMD_OP_INIT_HCA`.
    pub const INIT_HCA: u16 = 0x102;
    /// `MLX5_CMD_OP_TEARDOWN_HCA`.
    pub const TEARDOWN_HCA: u16 = 0x103;
    /// `MLX5_CMD_OP_ENABLE_HCA`.
    pub const ENABLE_HCA: u16 = 0x104;
    /// `MLX5_CMD_OP_DISABLE_HCA`.
    pub const DISABLE_HCA: u16 = 0x105;
    /// `MLX5_CMD_OP_QUERY_PAGES`.
    pub const QUERY_PAGES: u16 = 0x107;
    /// `MLX5_CMD_OP_MANAGE_PAGES`.
    pub const MANAGE_PAGES: u16 = 0x108;
    /// `MLX5_CMD_OP_SET_HCA_CAP`.
    pub const SET_HCA_CAP: u16 = 0x109;
    /// `MLX5_CMD_OP_QUERY_ISSI`.
    pub const QUERY_ISSI: u16 = 0x10a;
    /// `MLX5_CMD_OP_SET_ISSI`.
    pub const SET_ISSI: u16 = 0x10b;
    /// `MLX5_CMD_OP_SET_DRIVER_VERSION`.
    pub const SET_DRIVER_VERSION: u16 = 0x10d;
    /// `MLX5_CMD_OP_CREATE_EQ`.
    pub const CREATE_EQ: u16 = 0x301;
    /// `MLX5_CMD_OP_DESTROY_EQ`.
    pub const DESTROY_EQ: u16 = 0x302;
    /// `MLX5_CMD_OP_ALLOC_UAR`.
    pub const ALLOC_UAR: u16 = 0x802;
    /// `MLX5_CMD_OP_DEALLOC_UAR`.
    pub const DEALLOC_UAR: u16 = 0x803;
    /// `MLX5_CMD_OP_ACCESS_REG`.
    pub const ACCESS_REG: u16 = 0x805;
    /// `MLX5_CMD_OP_MAD_IFC`.
    pub const MAD_IFC: u16 = 0x50d;
    /// `MLX5_CMD_OP_QUERY_HCA_VPORT_CONTEXT`.
    pub const QUERY_HCA_VPORT_CONTEXT: u16 = 0x762;
    /// `MLX5_CMD_OP_NOP`.
    pub const NOP: u16 = 0x80d;
    /// `MLX5_CMD_OP_CREATE_MKEY`.
    pub const CREATE_MKEY: u16 = 0x200;
    /// `MLX5_CMD_OP_DESTROY_MKEY`.
    pub const DESTROY_MKEY: u16 = 0x202;
    /// `MLX5_CMD_OP_CREATE_CQ`.
    pub const CREATE_CQ: u16 = 0x400;
    /// `MLX5_CMD_OP_DESTROY_CQ`.
    pub const DESTROY_CQ: u16 = 0x401;
    /// `MLX5_CMD_OP_MODIFY_CQ`.
    pub const MODIFY_CQ: u16 = 0x403;
    /// `MLX5_CMD_OP_CREATE_QP`.
    pub const CREATE_QP: u16 = 0x500;
    /// `MLX5_CMD_OP_DESTROY_QP`.
    pub const DESTROY_QP: u16 = 0x501;
    /// `MLX5_CMD_OP_RST2INIT_QP`.
    pub const RST2INIT_QP: u16 = 0x502;
    /// `MLX5_CMD_OP_INIT2RTR_QP`.
    pub const INIT2RTR_QP: u16 = 0x503;
    /// `MLX5_CMD_OP_RTR2RTS_QP`.
    pub const RTR2RTS_QP: u16 = 0x504;
    /// `MLX5_CMD_OP_RTS2RTS_QP`.
    pub const RTS2RTS_QP: u16 = 0x505;
    /// `MLX5_CMD_OP_2ERR_QP`.
    pub const QP_2ERR: u16 = 0x507;
    /// `MLX5_CMD_OP_INIT2INIT_QP`.
    pub const INIT2INIT_QP: u16 = 0x50e;
    /// `MLX5_CMD_OP_2RST_QP`.
    pub const QP_2RST: u16 = 0x50a;
    /// `MLX5_CMD_OP_QUERY_QP`.
    pub const QUERY_QP: u16 = 0x50b;
    /// `MLX5_CMD_OP_ATTACH_TO_MCG`.
    pub const ATTACH_TO_MCG: u16 = 0x806;
    /// `MLX5_CMD_OP_DETACH_FROM_MCG`.
    pub const DETACH_FROM_MCG: u16 = 0x807;
    /// `MLX5_CMD_OP_ALLOC_PD`.
    pub const ALLOC_PD: u16 = 0x800;
    /// `MLX5_CMD_OP_DEALLOC_PD`.
    pub const DEALLOC_PD: u16 = 0x801;
}

/// Name of a command opcode, as the C driver prints it.
pub(crate) fn opcode_name(opcode: u16) -> &'static str {
    match opcode {
        op::QUERY_HCA_CAP => "QUERY_HCA_CAP",
        op::CREATE_EQ => "CREATE_EQ",
        op::DESTROY_EQ => "DESTROY_EQ",
        op::ALLOC_UAR => "ALLOC_UAR",
        op::DEALLOC_UAR => "DEALLOC_UAR",
        op::QUERY_ADAPTER => "QUERY_ADAPTER",
        op::INIT_HCA => "INIT_HCA",
        op::TEARDOWN_HCA => "TEARDOWN_HCA",
        op::ENABLE_HCA => "ENABLE_HCA",
        op::DISABLE_HCA => "DISABLE_HCA",
        op::QUERY_PAGES => "QUERY_PAGES",
        op::MANAGE_PAGES => "MANAGE_PAGES",
        op::SET_HCA_CAP => "SET_HCA_CAP",
        op::QUERY_ISSI => "QUERY_ISSI",
        op::SET_ISSI => "SET_ISSI",
        op::SET_DRIVER_VERSION => "SET_DRIVER_VERSION",
        op::ACCESS_REG => "ACCESS_REG",
        op::MAD_IFC => "MAD_IFC",
        op::QUERY_HCA_VPORT_CONTEXT => "QUERY_HCA_VPORT_CONTEXT",
        op::NOP => "NOP",
        op::CREATE_MKEY => "CREATE_MKEY",
        op::DESTROY_MKEY => "DESTROY_MKEY",
        op::CREATE_CQ => "CREATE_CQ",
        op::DESTROY_CQ => "DESTROY_CQ",
        op::MODIFY_CQ => "MODIFY_CQ",
        op::CREATE_QP => "CREATE_QP",
        op::DESTROY_QP => "DESTROY_QP",
        op::RST2INIT_QP => "RST2INIT_QP",
        op::INIT2RTR_QP => "INIT2RTR_QP",
        op::RTR2RTS_QP => "RTR2RTS_QP",
        op::RTS2RTS_QP => "RTS2RTS_QP",
        op::QP_2ERR => "2ERR_QP",
        op::INIT2INIT_QP => "INIT2INIT_QP",
        op::QP_2RST => "2RST_QP",
        op::QUERY_QP => "QUERY_QP",
        op::ATTACH_TO_MCG => "ATTACH_TO_MCG",
        op::DETACH_FROM_MCG => "DETACH_FROM_MCG",
        op::ALLOC_PD => "ALLOC_PD",
        op::DEALLOC_PD => "DEALLOC_PD",
        _ => "unknown command opcode",
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_status)]
mod tests {
    use super::*;

    fn errno(status: u8) -> Option<Error> {
        Status::from_raw(status).to_result().err()
    }

    #[test]
    fn statuses_map_as_in_the_c_driver() {
        assert_eq!(errno(0x0), None);
        assert_eq!(errno(0x2), Some(EINVAL));
        assert_eq!(errno(0x4), Some(EIO));
        assert_eq!(errno(0x6), Some(EBUSY));
        assert_eq!(errno(0x7), Some(EAGAIN));
        assert_eq!(errno(0x8), Some(ENOMEM));
        assert_eq!(errno(0xf), Some(EAGAIN));
        assert_eq!(errno(0x50), Some(EIO));
        assert_eq!(errno(0x77), Some(EINVAL));
        assert_eq!(Status::from_raw(0x2).name(), "bad operation");
        assert_eq!(Status::from_raw(0x4), Status::BadSystemState);
        assert_eq!(Status::from_raw(0x77).name(), "unknown status code");
        for raw in 0..=u8::MAX {
            assert_eq!(Status::from_raw(raw).raw(), raw);
        }
    }

    #[test]
    fn deliveries_map_as_in_the_c_driver() {
        assert_eq!(delivery_errno(0x1), EBADR);
        assert_eq!(delivery_errno(0x3), EFAULT);
        assert_eq!(delivery_errno(0x6), EIO);
        assert_eq!(delivery_errno(0x10), ENOMSG);
    }

    #[test]
    fn opcode_names() {
        assert_eq!(opcode_name(op::ENABLE_HCA), "ENABLE_HCA");
        assert_eq!(opcode_name(0x7fff), "unknown command opcode");
    }
}
