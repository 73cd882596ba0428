// SPDX-License-Identifier: GPL-2.0

//! What `ib_core` owns while it is loaded: its workqueues, the `infiniband` device class, the
//! RDMA netlink sockets and nldev, set up in C's order (`ib_core_init`) and torn down in
//! reverse (`ib_core_cleanup`).

use crate::device::workqueues::CoreWorkqueues;
use kernel::{class, prelude::*};

/// The loaded `ib_core` module. Fields are declared in the order C's `ib_core_cleanup` releases
/// them (the reverse of `ib_core_init`, which the initializer follows).
#[pin_data(PinnedDrop)]
pub(crate) struct IbCore {
    /// The SA client, on the MAD layer (C's `ib_sa_init`, right after `ib_mad_init`).
    #[pin]
    sa: crate::device::registry::ClientRegistration<crate::sa::SaClient>,
    /// The MAD layer, a client of every device (C's `ib_mad_init`).
    #[pin]
    mad: crate::device::registry::ClientRegistration<crate::mad::MadClient>,
    /// RDMA netlink local services (C's `rdma_nl_register(RDMA_NL_LS, ...)`).
    ls: crate::netlink::ls::Registration,
    /// nldev's commands (C's `nldev_init`).
    nldev: crate::netlink::nldev::Registration,
    /// A `NETLINK_RDMA` kernel socket in every network namespace (C's
    /// `register_pernet_device(&rdma_dev_net_ops)`).
    #[pin]
    sockets: crate::netlink::Sockets,
    /// The neighbour watch of address resolution (`NETEVENT_NEIGH_UPDATE`): resolutions waiting
    /// for a next hop try again.
    #[pin]
    neighbours: crate::addr::requests::Registration,
    /// The IP address watch of RoCE GID tables (C's inetaddr and inet6addr notifiers).
    #[pin]
    addresses: crate::device::gid_events::Registration,
    /// `/sys/class/infiniband`.
    #[pin]
    class: class::Registration,
    workqueues: CoreWorkqueues,
}

impl kernel::InPlaceModule for IbCore {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        // SAFETY: Called once, at module load, before any device or client can register and
        // before the netlink sockets exist.
        unsafe {
            crate::device::registry::init();
            crate::netlink::init(crate::netlink::NamespaceWatch {
                added: crate::device::registry::net_added,
                removed: crate::device::registry::net_removed,
            });
            crate::mad::init();
            crate::sa::init();
            crate::addr::requests::init();
            crate::c_abi::driver::registration::init();
            crate::c_abi::driver::netdev::init();
            crate::c_abi::driver::link::init();
            crate::device::gid_events::init();
        }
        try_pin_init!(Self {
            workqueues: CoreWorkqueues::new()?,
            class <- class::Registration::new_net_with_name_uevent(c"infiniband"),
            neighbours <- crate::addr::requests::register(),
            addresses <- crate::device::gid_events::register(),
            sockets <- crate::netlink::Sockets::new(),
            nldev: crate::netlink::nldev::Registration::new(),
            ls: crate::netlink::ls::Registration::new(),
            mad <- crate::device::registry::ClientRegistration::new(crate::mad::MadClient),
            sa <- crate::device::registry::ClientRegistration::new(crate::sa::SaClient),
        })
        .pin_chain(|this| {
            // SAFETY: The class is in the module's pinned data; it is removed at unload before
            // the class is unregistered.
            unsafe { crate::device::class::set_class(Some(&this.class)) };
            // SAFETY: The workqueues are in the module's pinned data; they are removed at unload,
            // when no device is left, before they are destroyed.
            unsafe { crate::device::workqueues::install(Some(&this.workqueues)) };
            pr_info!("infiniband class registered, workqueues ready, RDMA netlink up\n");
            Ok(())
        })
    }
}

#[pinned_drop]
impl PinnedDrop for IbCore {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: Removing the class and the workqueues is always allowed.
        unsafe {
            crate::device::class::set_class(None);
            crate::device::workqueues::install(None);
        }
        crate::device::registry::clear();
        crate::c_abi::driver::registration::clear();
        crate::c_abi::driver::netdev::clear();
        crate::c_abi::driver::link::clear();
        crate::device::gid_events::clear();
        crate::sa::clear();
        crate::addr::requests::clear();
        crate::mad::clear();
        pr_info!("unloading\n");
    }
}
