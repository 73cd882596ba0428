// SPDX-License-Identifier: GPL-2.0

//! Device events for RDMA netlink listeners (`RDMA_NLDEV_CMD_MONITOR` multicast to the
//! `RDMA_NL_GROUP_NOTIFY` group), as C's `rdma_nl_notify_event`; device registration sends
//! them.

use crate::{
    device::ib_device::IbDevice,
    netlink,
    netlink::uapi::{self, attr, cmd, event},
};
use kernel::{
    net::netlink_protocol::{Message, NLMSG_DEFAULT_SIZE},
    prelude::*,
};

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
    let _ = notify(dev, event);
}

/// Tells `RDMA_NL_GROUP_NOTIFY` listeners about `event` on `dev` (C's
/// `rdma_nl_notify_event` for device events).
fn notify(dev: &IbDevice, ev: Event) -> Result {
    let kind = match ev {
        Event::Register => event::REGISTER_EVENT,
        Event::Unregister => event::UNREGISTER_EVENT,
        Event::Rename => event::RENAME_EVENT,
    };
    let mut msg = Message::new(NLMSG_DEFAULT_SIZE, GFP_KERNEL).map_err(|_| ENOMEM)?;
    let built = msg
        .put(
            0,
            0,
            uapi::msg_type(uapi::client::NLDEV, cmd::CMD_MONITOR),
            0,
        )
        .and_then(|mut w| {
            // C's `fill_nldev_handle`.
            w.put_u32(attr::ATTR_DEV_INDEX, dev.index())?;
            w.put_string(attr::ATTR_DEV_NAME, &dev.name())?;
            w.put_u8(attr::ATTR_EVENT_TYPE, kind)?;
            w.end();
            Ok(())
        });
    let sent = built.and_then(|()| match netlink::multicast(msg, uapi::GROUP_NOTIFY) {
        Err(e) if e == ESRCH => Ok(()),
        r => r,
    });
    if let Err(e) = sent {
        let what = match ev {
            Event::Register => "register device",
            Event::Unregister => "unregister device",
            Event::Rename => "rename device",
        };
        pr_warn!(
            "{}: Failed to send RDMA monitor {} event ({})\n",
            kernel::str::BStr::from_bytes(&dev.name()),
            what,
            e.to_errno()
        );
        return Err(e);
    }
    Ok(())
}
