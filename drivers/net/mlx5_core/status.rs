// SPDX-License-Identifier: GPL-2.0

//! Command statuses and delivery statuses, their names and the errnos the C driver maps them to;
//! and the names of the commands this driver issues, for logs.

use kernel::prelude::*;

/// Name of a command status, as the C driver prints it.
pub(crate) fn status_name(status: u8) -> &'static str {
    match status {
        0x0 => "OK",
        0x1 => "internal error",
        0x2 => "bad operation",
        0x3 => "bad parameter",
        0x4 => "bad system state",
        0x5 => "bad resource",
        0x6 => "resource busy",
        0x7 => "not ready",
        0x8 => "limits exceeded",
        0x9 => "bad resource state",
        0xa => "bad index",
        0xf => "no resources",
        0x10 => "bad QP state",
        0x30 => "bad packet (discarded)",
        0x40 => "bad size too many outstanding CQEs",
        0x50 => "bad input length",
        0x51 => "bad output length",
        _ => "unknown status code",
    }
}

/// The errno a command status becomes.
pub(crate) fn status_errno(status: u8) -> Error {
    match status {
        0x1 | 0x4 | 0x50 | 0x51 => EIO,
        0x6 => EBUSY,
        0x7 | 0xf => EAGAIN,
        0x8 => ENOMEM,
        _ => EINVAL,
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
        _ => "unknown command opcode",
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_status)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_as_in_the_c_driver() {
        assert_eq!(status_errno(0x2), EINVAL);
        assert_eq!(status_errno(0x4), EIO);
        assert_eq!(status_errno(0x6), EBUSY);
        assert_eq!(status_errno(0x7), EAGAIN);
        assert_eq!(status_errno(0x8), ENOMEM);
        assert_eq!(status_errno(0xf), EAGAIN);
        assert_eq!(status_errno(0x50), EIO);
        assert_eq!(status_name(0x2), "bad operation");
        assert_eq!(status_name(0x4), "bad system state");
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
