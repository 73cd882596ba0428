// SPDX-License-Identifier: GPL-2.0

//! The loaded `mlx5_ib` module. It links against both `ib_core` and `mlx5_core` (so it cannot be
//! loaded without them), checks at load that the core is ready, and registers the auxiliary
//! driver of the `mlx5_core.rdma.<N>` devices `mlx5_core` creates for its functions (C's
//! `mlx5r_driver`, `mlx5_ib.rdma`): its probe registers an RDMA device for the function, its
//! unbind unregisters it.

use crate::{
    cq::DeviceCqs,
    ib_device,
    port_events::{Notifier, PortEvents},
};
use core::cell::Cell;
use ib_core::device::{names::Name, BoundRegistration};
use kernel::{
    auxiliary,
    auxiliary_named::{NamedAdapter, NamedDriver},
    device::Core,
    driver,
    owned_workqueue::OwnedQueue,
    prelude::*,
    str::{BStr, CString},
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
};
use mlx5_core::auxdev::{self, NotifierRegistration};

/// `mlx5_ib`'s auxiliary driver.
pub(crate) struct IbDriver;

kernel::auxiliary_device_table!(
    AUX_TABLE,
    <IbDriver as auxiliary::Driver>::IdInfo,
    [(auxdev::RDMA_ID, ())]
);

/// What `mlx5_ib` keeps per bound function: its registered RDMA device and its event notifier.
/// Dropped after unbind: the notifier goes first, then the RDMA device (the reverse of probe).
/// The device's operations borrow the function's `Mlx5Device` for the binding (`'bound`).
pub(crate) struct IbFunction<'bound> {
    events: Option<NotifierRegistration>,
    /// The queue of the port events' work item: dropped after the notifier's registration (no
    /// new event), before the device (it waits for the events being dispatched).
    event_queue: Option<Arc<OwnedQueue>>,
    device: Option<BoundRegistration<'bound>>,
    /// The function's PCI name.
    name: CString,
    /// The RDMA device's name (`mlx5_0`) for the log when it goes: read at probe, and again
    /// at unbind (it may have been renamed).
    ib_name: Cell<Name>,
    ports: u8,
    /// Port events the notifier received.
    port_events: Arc<Atomic<u32>>,
}

impl Drop for IbFunction<'_> {
    fn drop(&mut self) {
        drop(self.events.take());
        drop(self.event_queue.take());
        if let Some(device) = self.device.take() {
            // Unregisters the RDMA device (its clients first), before the function goes.
            drop(device);
            pr_info!(
                "detached from {} ({} port(s), {} port event(s)); {} unregistered\n",
                &*self.name,
                self.ports,
                self.port_events.load(Relaxed),
                BStr::from_bytes(&self.ib_name.get())
            );
        }
    }
}

impl auxiliary::Driver for IbDriver {
    type IdInfo = ();
    type Data<'bound> = IbFunction<'bound>;

    const ID_TABLE: auxiliary::IdTable<Self::IdInfo> = &AUX_TABLE;

    fn probe<'bound>(
        adev: &'bound auxiliary::Device<Core<'_>>,
        _info: &'bound Self::IdInfo,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        let dev = auxdev::device_data(adev)?.get_ref();
        let cqs = DeviceCqs::new()?;
        let device = ib_device::register(adev.as_ref(), dev, cqs.clone()).inspect_err(|e| {
            pr_err!(
                "{}: no RDMA device registered: err {}\n",
                dev.name(),
                e.to_errno()
            );
        })?;
        let ib_name = device.device(adev.as_ref())?.name();
        pr_info!(
            "attached to {} ({} port(s)) as {}\n",
            dev.name(),
            dev.ports(),
            BStr::from_bytes(&ib_name)
        );
        let port_events = Arc::new(Atomic::new(0), GFP_KERNEL)?;
        let mut function = IbFunction {
            events: None,
            event_queue: None,
            device: Some(device),
            name: CString::try_from_fmt(fmt!("{}", dev.name()))?,
            ports: dev.ports(),
            port_events: port_events.clone(),
            ib_name: Cell::new(ib_name),
        };
        // Taken after `function`, so dropped before it on a failure below: dropping the
        // registration (in `function`) waits until every reference to the device is gone.
        let ib_dev = function
            .device
            .as_ref()
            .ok_or(EINVAL)?
            .device(adev.as_ref())?
            .clone();
        let queue = Arc::new(PortEvents::new_queue()?, GFP_KERNEL)?;
        function.event_queue = Some(queue.clone());
        let notifier = Arc::new(
            Notifier {
                events: PortEvents::new(
                    CString::try_from_fmt(fmt!("{}", dev.name()))?,
                    dev.ports(),
                    port_events,
                    ib_dev,
                    cqs,
                )?,
                queue,
            },
            GFP_KERNEL,
        )?;
        // On failure `function` drops: the RDMA device is unregistered again.
        function.events = Some(dev.register_notifier(notifier)?);
        Ok(function)
    }

    /// The device's name for the log as it is now (the registration goes after this, when the
    /// driver's data is dropped).
    fn unbind<'bound>(adev: &'bound auxiliary::Device<Core<'_>>, this: Pin<&Self::Data<'bound>>) {
        if let Some(Ok(d)) = this.device.as_ref().map(|r| r.device(adev.as_ref())) {
            this.ib_name.set(d.name());
        }
    }
}

impl NamedDriver for IbDriver {
    const NAME: &'static CStr = c"rdma";
}

/// The loaded `mlx5_ib` module: its auxiliary driver.
#[pin_data(PinnedDrop)]
pub(crate) struct Mlx5Ib {
    #[pin]
    driver: driver::Registration<NamedAdapter<IbDriver>>,
}

impl kernel::InPlaceModule for Mlx5Ib {
    fn init(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        pin_init::pin_init_scope(move || {
            if !ib_core::class_registered() {
                pr_err!("ib_core has no infiniband class registered\n");
                return Err(ENODEV);
            }
            pr_info!(
                "loaded; ib_core ready, {} mlx5 function(s) bound\n",
                mlx5_core::bound_functions()
            );
            // `mlx5_ib.rdma`, as C's.
            Ok(try_pin_init!(Self {
                driver <- driver::Registration::new(c"mlx5_ib", module),
            }))
        })
    }
}

#[pinned_drop]
impl PinnedDrop for Mlx5Ib {
    fn drop(self: Pin<&mut Self>) {
        pr_info!("unloading\n");
    }
}
