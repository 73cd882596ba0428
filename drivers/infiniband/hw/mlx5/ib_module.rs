// SPDX-License-Identifier: GPL-2.0

//! The loaded `mlx5_ib` module. It links against both `ib_core` and `mlx5_core` (so it cannot be
//! loaded without them), checks at load that the core is ready, and attaches to every mlx5
//! function through `mlx5_core`'s interface registry, registering an RDMA device for each.

use crate::ib_device;
use kernel::prelude::*;
use mlx5_core::interface::{Event, Interface, Mlx5Device, Registration};

/// `mlx5_ib` as an mlx5 interface.
pub(crate) struct IbInterface;

/// What `mlx5_ib` keeps per function: its registered RDMA device.
pub(crate) struct IbFunction {
    ports: u8,
    device: ib_core::device::Registration,
}

impl Interface for IbInterface {
    type Context = IbFunction;

    fn add(&self, dev: &Mlx5Device) -> Result<IbFunction> {
        let device = ib_device::register(dev).inspect_err(|e| {
            pr_err!(
                "{}: no RDMA device registered: err {}\n",
                dev.name(),
                e.to_errno()
            );
        })?;
        pr_info!(
            "attached to {} ({} port(s)) as {}\n",
            dev.name(),
            dev.ports(),
            kernel::str::BStr::from_bytes(&device.device().name())
        );
        Ok(IbFunction {
            ports: dev.ports(),
            device,
        })
    }

    fn remove(&self, dev: &Mlx5Device, ctx: IbFunction) {
        let name = ctx.device.device().name();
        // Unregisters the RDMA device (its clients first), before the function goes.
        drop(ctx.device);
        pr_info!(
            "detached from {} ({} port(s)); {} unregistered\n",
            dev.name(),
            ctx.ports,
            kernel::str::BStr::from_bytes(&name)
        );
    }

    fn event(&self, dev: &Mlx5Device, _ctx: &mut IbFunction, event: Event) {
        match event {
            Event::PortDown(p) => pr_info!("{}: port {p} down\n", dev.name()),
            Event::PortActive(p) => pr_info!("{}: port {p} active\n", dev.name()),
            Event::PortChange(..) => {}
        }
    }
}

/// The loaded `mlx5_ib` module.
#[pin_data(PinnedDrop)]
pub(crate) struct Mlx5Ib {
    #[pin]
    registration: Registration<IbInterface>,
}

impl kernel::InPlaceModule for Mlx5Ib {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        pin_init::pin_init_scope(|| {
            if !ib_core::class_registered() {
                pr_err!("ib_core has no infiniband class registered\n");
                return Err(ENODEV);
            }
            pr_info!(
                "loaded; ib_core ready, {} mlx5 function(s) bound\n",
                mlx5_core::bound_functions()
            );
            Ok(try_pin_init!(Self {
                registration <- Registration::new(IbInterface),
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
