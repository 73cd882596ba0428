// SPDX-License-Identifier: GPL-2.0

//! Device events for RDMA netlink listeners (`RDMA_NLDEV_CMD_MONITOR` multicast to the
//! `RDMA_NL_GROUP_NOTIFY` group), sent by [`crate::nldev::notify`].

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

/// Tells listeners about `event` on `dev`. As in C, a failure is reported in the kernel log
/// and does not stop what the device is doing.
pub(crate) fn device_event(dev: &IbDevice, event: Event) {
    let _ = crate::nldev::notify(dev, event);
}
