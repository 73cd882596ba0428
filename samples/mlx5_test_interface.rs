// SPDX-License-Identifier: GPL-2.0

//! A test-only mlx5 interface: it attaches to every function `mlx5_core` binds and logs `add`,
//! each event and `remove`, so VM scenarios can check the interface registry.

use kernel::prelude::*;
use mlx5_core::interface::{Event, Interface, Mlx5Device, Registration};

/// The interface.
struct TestInterface;

/// What it keeps per function.
struct PerFunction {
    events: u32,
}

impl Interface for TestInterface {
    type Context = PerFunction;

    fn add(&self, dev: &Mlx5Device) -> Result<PerFunction> {
        pr_info!(
            "add {} (function {}, {} port(s))\n",
            dev.name(),
            dev.id(),
            dev.ports()
        );
        Ok(PerFunction { events: 0 })
    }

    fn remove(&self, dev: &Mlx5Device, ctx: PerFunction) {
        pr_info!("remove {} after {} event(s)\n", dev.name(), ctx.events);
    }

    fn event(&self, dev: &Mlx5Device, ctx: &mut PerFunction, event: Event) {
        ctx.events += 1;
        match event {
            Event::PortDown(p) => pr_info!("event {}: port {p} down\n", dev.name()),
            Event::PortActive(p) => pr_info!("event {}: port {p} active\n", dev.name()),
            Event::PortChange(p, s) => {
                pr_info!("event {}: port {p} change {s}\n", dev.name())
            }
        }
    }
}

/// The module: one registration for its lifetime.
#[pin_data]
struct TestModule {
    #[pin]
    registration: Registration<TestInterface>,
}

impl kernel::InPlaceModule for TestModule {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            registration <- Registration::new(TestInterface),
        })
    }
}

module! {
    type: TestModule,
    name: "mlx5_test_interface",
    authors: ["rdma-rs developers"],
    description: "Test-only mlx5 interface that logs add, events and remove",
    license: "GPL",
}
