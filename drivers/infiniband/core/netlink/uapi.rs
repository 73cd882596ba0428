// SPDX-License-Identifier: GPL-2.0

//! The numbers of the RDMA netlink user API (`include/uapi/rdma/rdma_netlink.h`), taken from
//! the kernel's own header through the bindings, under short names.

use kernel::bindings as b;

/// Netlink clients (`RDMA_NL_*`): the top six bits of a message type.
pub mod client {
    use super::b;

    /// The iWARP port mapper.
    pub const IWCM: u32 = b::RDMA_NL_IWCM;
    /// Local services (SA path records).
    pub const LS: u32 = b::RDMA_NL_LS;
    /// The device interface (`nldev`).
    pub const NLDEV: u32 = b::RDMA_NL_NLDEV;
    /// Number of client slots.
    pub const NUM: u32 = b::RDMA_NL_NUM_CLIENTS;
    /// Number of ops of the iWARP port mapper.
    pub const IWPM_NUM_OPS: u32 = b::RDMA_NL_IWPM_NUM_OPS;
    /// Number of ops of local services.
    pub const LS_NUM_OPS: u32 = b::RDMA_NL_LS_NUM_OPS;
}

/// Multicast group of device events (`RDMA_NL_GROUP_NOTIFY`).
pub const GROUP_NOTIFY: u32 = b::RDMA_NL_GROUP_NOTIFY;

/// `RDMA_NL_GET_TYPE(client, op)`.
pub const fn msg_type(client: u32, op: u32) -> u16 {
    ((client << 10) + op) as u16
}

/// `RDMA_NL_GET_CLIENT(type)`.
pub const fn client_of(msg_type: u16) -> u32 {
    ((msg_type as u32) >> 10) & 0x3f
}

/// `RDMA_NL_GET_OP(type)`.
pub const fn op_of(msg_type: u16) -> u32 {
    (msg_type as u32) & 0x3ff
}

macro_rules! consts {
    ($prefix:ident, $ty:ty, $doc:literal: $($name:ident),* $(,)?) => {
        kernel::macros::paste! {
            $(
                #[doc = $doc]
                #[doc = concat!(" `", stringify!($name), "`.")]
                pub const $name: $ty = b::[<$prefix $name>] as $ty;
            )*
        }
    };
}

/// nldev commands (`enum rdma_nldev_command`).
pub mod cmd {
    use super::b;

    consts!(rdma_nldev_command_RDMA_NLDEV_, u32, "nldev command":
        CMD_GET, CMD_SET, CMD_NEWLINK, CMD_DELLINK, CMD_PORT_GET, CMD_SYS_GET, CMD_SYS_SET,
        CMD_RES_GET, CMD_RES_QP_GET, CMD_RES_CM_ID_GET, CMD_RES_CQ_GET, CMD_RES_MR_GET,
        CMD_RES_PD_GET, CMD_GET_CHARDEV, CMD_STAT_SET, CMD_STAT_GET, CMD_STAT_DEL,
        CMD_RES_QP_GET_RAW, CMD_RES_CQ_GET_RAW, CMD_RES_MR_GET_RAW, CMD_RES_CTX_GET,
        CMD_RES_SRQ_GET, CMD_STAT_GET_STATUS, CMD_RES_SRQ_GET_RAW, CMD_NEWDEV, CMD_DELDEV,
        CMD_MONITOR, CMD_FRMR_POOLS_GET, CMD_FRMR_POOLS_SET, NUM_OPS,
    );
}

/// nldev attributes (`enum rdma_nldev_attr`).
pub mod attr {
    use super::b;

    consts!(rdma_nldev_attr_RDMA_NLDEV_, u16, "nldev attribute":
        ATTR_PAD, ATTR_DEV_INDEX, ATTR_DEV_NAME, ATTR_PORT_INDEX, ATTR_CAP_FLAGS,
        ATTR_FW_VERSION, ATTR_NODE_GUID, ATTR_SYS_IMAGE_GUID, ATTR_SUBNET_PREFIX, ATTR_LID,
        ATTR_SM_LID, ATTR_LMC, ATTR_PORT_STATE, ATTR_PORT_PHYS_STATE, ATTR_DEV_NODE_TYPE,
        ATTR_RES_SUMMARY, ATTR_RES_SUMMARY_ENTRY, ATTR_RES_SUMMARY_ENTRY_NAME,
        ATTR_RES_SUMMARY_ENTRY_CURR, ATTR_RES_QP, ATTR_RES_QP_ENTRY, ATTR_RES_LQPN,
        ATTR_RES_RQPN, ATTR_RES_RQ_PSN, ATTR_RES_SQ_PSN, ATTR_RES_PATH_MIG_STATE, ATTR_RES_TYPE,
        ATTR_RES_STATE, ATTR_RES_PID, ATTR_RES_KERN_NAME, ATTR_RES_CM_ID, ATTR_RES_CM_ID_ENTRY,
        ATTR_RES_PS, ATTR_RES_SRC_ADDR, ATTR_RES_DST_ADDR, ATTR_RES_CQ, ATTR_RES_CQ_ENTRY,
        ATTR_RES_CQE, ATTR_RES_USECNT, ATTR_RES_POLL_CTX, ATTR_RES_MR, ATTR_RES_MR_ENTRY,
        ATTR_RES_RKEY, ATTR_RES_LKEY, ATTR_RES_IOVA, ATTR_RES_MRLEN, ATTR_RES_PD,
        ATTR_RES_PD_ENTRY, ATTR_RES_LOCAL_DMA_LKEY, ATTR_RES_UNSAFE_GLOBAL_RKEY,
        ATTR_NDEV_INDEX, ATTR_NDEV_NAME, ATTR_DRIVER, ATTR_DRIVER_ENTRY, ATTR_DRIVER_STRING,
        ATTR_DRIVER_PRINT_TYPE, ATTR_DRIVER_S32, ATTR_DRIVER_U32, ATTR_DRIVER_S64,
        ATTR_DRIVER_U64, ATTR_RES_PDN, ATTR_RES_CQN, ATTR_RES_MRN, ATTR_RES_CM_IDN,
        ATTR_RES_CTXN, ATTR_LINK_TYPE, SYS_ATTR_NETNS_MODE, ATTR_DEV_PROTOCOL, NET_NS_FD,
        ATTR_CHARDEV_TYPE, ATTR_CHARDEV_NAME, ATTR_CHARDEV_ABI, ATTR_CHARDEV,
        ATTR_UVERBS_DRIVER_ID, ATTR_STAT_MODE, ATTR_STAT_RES, ATTR_STAT_AUTO_MODE_MASK,
        ATTR_STAT_COUNTER, ATTR_STAT_COUNTER_ENTRY, ATTR_STAT_COUNTER_ID, ATTR_STAT_HWCOUNTERS,
        ATTR_STAT_HWCOUNTER_ENTRY, ATTR_STAT_HWCOUNTER_ENTRY_NAME,
        ATTR_STAT_HWCOUNTER_ENTRY_VALUE, ATTR_DEV_DIM, ATTR_RES_RAW, ATTR_RES_CTX,
        ATTR_RES_CTX_ENTRY, ATTR_RES_SRQ, ATTR_RES_SRQ_ENTRY, ATTR_RES_SRQN, ATTR_MIN_RANGE,
        ATTR_MAX_RANGE, SYS_ATTR_COPY_ON_FORK, ATTR_STAT_HWCOUNTER_INDEX,
        ATTR_STAT_HWCOUNTER_DYNAMIC, SYS_ATTR_PRIVILEGED_QKEY_MODE, ATTR_DRIVER_DETAILS,
        ATTR_RES_SUBTYPE, ATTR_DEV_TYPE, ATTR_PARENT_NAME, ATTR_NAME_ASSIGN_TYPE,
        ATTR_EVENT_TYPE, SYS_ATTR_MONITOR_MODE, ATTR_STAT_OPCOUNTER_ENABLED, ATTR_FRMR_POOLS,
        ATTR_FRMR_POOL_ENTRY, ATTR_FRMR_POOL_KEY, ATTR_FRMR_POOL_KEY_ATS,
        ATTR_FRMR_POOL_KEY_ACCESS_FLAGS, ATTR_FRMR_POOL_KEY_VENDOR_KEY,
        ATTR_FRMR_POOL_KEY_NUM_DMA_BLOCKS, ATTR_FRMR_POOL_QUEUE_HANDLES,
        ATTR_FRMR_POOL_MAX_IN_USE, ATTR_FRMR_POOL_IN_USE, ATTR_FRMR_POOLS_AGING_PERIOD,
        ATTR_FRMR_POOL_PINNED_HANDLES, ATTR_FRMR_POOL_KEY_KERNEL_VENDOR_KEY,
        ATTR_RES_SUMMARY_ENTRY_MAX, ATTR_MAX,
    );
}

/// Device events (`enum rdma_nl_notify_event_type`).
pub mod event {
    use super::b;

    consts!(rdma_nl_notify_event_type_RDMA_, u8, "event":
        REGISTER_EVENT, UNREGISTER_EVENT, RENAME_EVENT,
    );
}

/// Empty-string length limit nldev's policy uses for strings it only sends
/// (`RDMA_NLDEV_ATTR_EMPTY_STRING`).
pub const EMPTY_STRING: u16 = 1;

/// Longest chardev client name with its NUL (`RDMA_NLDEV_ATTR_CHARDEV_TYPE_SIZE`).
pub const CHARDEV_TYPE_SIZE: usize = 32;

/// `IFNAMSIZ`.
pub const IFNAMSIZ: u16 = b::IFNAMSIZ as u16;
