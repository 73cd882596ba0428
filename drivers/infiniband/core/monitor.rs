// SPDX-License-Identifier: GPL-2.0

//! Device events for RDMA netlink listeners (`RDMA_NLDEV_CMD_MONITOR` multicast to the
//! `RDMA_NL_GROUP_NOTIFY` group).
//!
//! Placeholder with the interface the device code calls; the netlink side is being written
//! (issue 4). Until then the events go nowhere.

use crate::device::IbDevice;

/// What happened to a device (`enum rdma_nl_notify_event_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The device registered (`RDMA_REGISTER_EVENT`).
    Register,
    /// The device unregistered (`RDMA_UNREGISTER_EVENT`).
    Unregister,
    /// The device was renamed (`RDMA_RENAME_EVENT`).
    Rename,
}

/// Tells listeners about `event` on `dev`.
pub(crate) fn device_event(_dev: &IbDevice, _event: Event) {}
