// SPDX-License-Identifier: GPL-2.0

//! A test-only mlx5 interface: it attaches to every function `mlx5_core` binds and logs `add`,
//! each event and `remove`, so VM scenarios can check the interface registry.
//!
//! With `nop_commands=N`, `add` also starts N NOP commands at once, each from its own work item
//! through the function's command handle, and logs how long each took (`rust-cmd-concurrency`);
//! `remove` waits for them.

use kernel::{
    new_condvar, new_mutex,
    owned_workqueue::{Flags, OwnedQueue},
    prelude::*,
    sync::{Arc, CondVar, Mutex},
    time::{Instant, Monotonic},
    workqueue::{Work, WorkItem},
};
use mlx5_core::{
    commands::Commands,
    ifc::{Nop, PlainIn},
    interface::{Event, Interface, Mlx5Device, Registration},
};

/// The interface.
struct TestInterface;

/// NOP commands still running.
#[pin_data]
struct Outstanding {
    #[pin]
    count: Mutex<u32>,
    #[pin]
    zero: CondVar,
}

impl Outstanding {
    fn done(&self) {
        let mut c = self.count.lock();
        *c -= 1;
        if *c == 0 {
            self.zero.notify_all();
        }
    }

    fn wait(&self) {
        let mut c = self.count.lock();
        while *c > 0 {
            self.zero.wait(&mut c);
        }
    }
}

/// One NOP command, run from a work item.
#[pin_data]
struct NopWork {
    #[pin]
    work: Work<NopWork>,
    number: u32,
    commands: Commands,
    outstanding: Arc<Outstanding>,
}

kernel::impl_has_work! {
    impl HasWork<Self> for NopWork { self.work }
}

impl WorkItem for NopWork {
    type Pointer = Arc<NopWork>;

    fn run(this: Arc<NopWork>) {
        let start = Instant::<Monotonic>::now();
        let r = this.commands.exec::<Nop>(&PlainIn::new());
        let ms = start.elapsed().as_millis();
        match r {
            Ok(_) => pr_info!("nop {}: ok in {} ms\n", this.number, ms),
            Err(e) => pr_info!(
                "nop {}: error {} after {} ms\n",
                this.number,
                e.to_errno(),
                ms
            ),
        }
        this.outstanding.done();
    }
}

/// What it keeps per function.
struct PerFunction {
    events: u32,
    nops: Arc<Outstanding>,
    /// Where the NOPs run. Destroying it in `remove` waits until every work item has returned
    /// (a NOP reports itself done before it leaves this module's code).
    queue: OwnedQueue,
}

/// Starts `n` NOP commands at once on `dev`.
fn start_nops(dev: &Mlx5Device, queue: &OwnedQueue, n: u32) -> Result<Arc<Outstanding>> {
    let outstanding = Arc::pin_init(
        pin_init!(Outstanding {
            count <- new_mutex!(0),
            zero <- new_condvar!(),
        }),
        GFP_KERNEL,
    )?;
    for number in 0..n.min(64) {
        let mine = outstanding.clone();
        let work = Arc::pin_init(
            pin_init!(NopWork {
                work <- kernel::new_work!("mlx5_test_interface::nop"),
                number,
                commands: dev.commands().clone(),
                outstanding: mine,
            }),
            GFP_KERNEL,
        )?;
        *outstanding.count.lock() += 1;
        if queue.enqueue(work).is_err() {
            outstanding.done();
        }
    }
    Ok(outstanding)
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
        let n = module_parameters::nop_commands.value();
        if n > 0 {
            pr_info!("starting {n} NOP command(s) at once on {}\n", dev.name());
        }
        let queue = OwnedQueue::new(c"mlx5_test_nops", Flags::UNBOUND, 0)?;
        Ok(PerFunction {
            events: 0,
            nops: start_nops(dev, &queue, n)?,
            queue,
        })
    }

    fn remove(&self, dev: &Mlx5Device, ctx: PerFunction) {
        ctx.nops.wait();
        drop(ctx.queue);
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
    params: {
        nop_commands: u32 {
            default: 0,
            description: "NOP commands to start at once on each function at add (at most 64)",
        },
    },
}
