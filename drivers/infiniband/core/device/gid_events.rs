// SPDX-License-Identifier: GPL-2.0

//! RoCE GID tables following their net devices' IP addresses (C's `roce_gid_mgmt.c` address
//! notifiers): an address added to or removed from a net device becomes a GID added to or
//! freed from the table of every RoCE port on that device, from the core's ordered GID cache
//! workqueue (C's `gid-cache-wq`: changes apply in the order they happened).

use crate::{
    attrs::Gid,
    device::{gid_table::ipv4_gid, registry},
};
use kernel::{
    net::{
        addr_notifier::{AddrHandler, IpAddress},
        route::NetDevice,
    },
    prelude::*,
    sync::aref::ARef,
};

/// The address watch ib_core keeps registered while it is loaded.
pub(crate) struct AddrWatch;

/// The registered watch.
pub(crate) type Registration = kernel::net::addr_notifier::Registration<AddrWatch>;

/// Registers the watch.
pub(crate) fn register() -> impl PinInit<Registration, Error> {
    Registration::new(AddrWatch)
}

impl AddrHandler for AddrWatch {
    fn address(&self, ndev: &NetDevice, addr: IpAddress, up: bool) {
        let gid = match addr {
            // C's `rdma_ip2gid`.
            IpAddress::V4(a) => ipv4_gid(&a),
            IpAddress::V6(a) => Gid(a),
        };
        let Some(queues) = crate::device::workqueues::queues() else {
            return;
        };
        // Held until the work has run (IPv6 notifications come in atomic context).
        let ndev: ARef<NetDevice> = ndev.into();
        let _ = queues.gid_cache.try_spawn(GFP_ATOMIC, move || {
            if let Ok(devices) = registry::devices() {
                for d in devices.iter() {
                    d.address_changed(&ndev, gid, up);
                }
            }
        });
    }
}
