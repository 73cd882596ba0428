// SPDX-License-Identifier: GPL-2.0

//! A test-only auxiliary driver of mlx5 functions: it binds the `mlx5_core.rdma.<N>` devices
//! `mlx5_core` creates (as `mlx5_ib` does) and logs `add` (probe), each event (through a notifier
//! on the function) and `remove` (unbind), so VM scenarios can check `mlx5_core`'s side of the
//! auxiliary bus without `mlx5_ib`.
//!
//! It matches the same devices as `mlx5_ib`: a device binds whichever of the two is loaded first,
//! or, left free (`mlx5_ib` unbound through sysfs), the one loaded next; the other can take it
//! over through sysfs (`unbind` from one driver, `bind` to the other under
//! `/sys/bus/auxiliary/drivers/`). Scenarios load one of them, or free the device first.
//!
//! With `nop_commands=N`, `add` also starts N NOP commands at once, each from its own work item
//! through the function's command handle, and logs how long each took (`rust-cmd-concurrency`);
//! `remove` waits for them.
//!
//! With `completion=1`, `add` also exercises `mlx5_core`'s completion side the way `mlx5_ib`
//! uses it, and logs what it got: the EQ of every completion vector (creating each vector's
//! interrupt, `mlx5_comp<i>@pci:<function>` in `/proc/interrupts`), doorbell records, a
//! coherent buffer, three blue-flame registers (the third from a new UAR page), and a CQ and a
//! QP handler registration kept until `remove`.

use kernel::{
    auxiliary,
    auxiliary_named::{NamedAdapter, NamedDriver},
    device::Core,
    driver, new_condvar, new_mutex,
    owned_workqueue::{Flags, OwnedQueue},
    prelude::*,
    str::CString,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, CondVar, Mutex,
    },
    time::{Instant, Monotonic},
    workqueue::{Work, WorkItem},
};
use mlx5_core::{
    auxdev::{
        self, CqHandler, CqRegistration, Event, EventNotifier, Mlx5Device, NotifierRegistration,
        Resource, ResourceHandler, ResourceRegistration,
    },
    cmd::commands::Commands,
    ifc::{Nop, PlainIn},
};

/// The driver.
struct TestDriver;

kernel::auxiliary_device_table!(
    AUX_TABLE,
    <TestDriver as auxiliary::Driver>::IdInfo,
    [(auxdev::RDMA_ID, ())]
);

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

/// Counts and logs a function's events.
struct EventLog {
    /// The function's PCI name.
    name: CString,
    /// Events seen so far.
    count: Atomic<u32>,
}

impl EventNotifier for EventLog {
    fn notify(&self, event: Event) {
        self.count.fetch_add(1, Relaxed);
        match event {
            Event::PortDown(p) => pr_info!("event {}: port {p} down\n", &*self.name),
            Event::PortActive(p) => pr_info!("event {}: port {p} active\n", &*self.name),
            Event::PortChange(p, s) => {
                pr_info!("event {}: port {p} change {s}\n", &*self.name)
            }
            Event::SysError => pr_info!("event {}: system error\n", &*self.name),
        }
    }
}

/// Counts the completion and async events of the CQ and QP it is registered for.
struct QueueEvents(Atomic<u32>);

impl CqHandler for QueueEvents {
    fn completion(&self) {
        self.0.fetch_add(1, Relaxed);
    }
    fn event(&self, _event_type: u8) {
        self.0.fetch_add(1, Relaxed);
    }
}

impl ResourceHandler for QueueEvents {
    fn event(&self, _event_type: u8) {
        self.0.fetch_add(1, Relaxed);
    }
}

/// The CQ number the test registers (no such CQ exists: nothing is dispatched to it).
const TEST_CQN: u32 = 0x00ab_cdef;

/// Uses every part of the completion side once; returns the registrations to keep.
fn exercise_completion(dev: &Mlx5Device) -> Result<(CqRegistration, ResourceRegistration)> {
    let n = dev.comp_vectors();
    pr_info!("completion {}: {n} completion vector(s)\n", dev.name());
    for v in 0..n {
        let eqn = dev.comp_eqn(v)?;
        // Asked again, the same EQ (created once).
        if dev.comp_eqn(v)? != eqn {
            return Err(EINVAL);
        }
        pr_info!("completion {}: vector {v}: EQ {eqn}\n", dev.name());
    }
    if dev.comp_eqn(n).err() != Some(EINVAL) {
        return Err(EINVAL);
    }
    // Two doorbell records: neighbours in one page, zeroed, words kept big-endian.
    let a = dev.alloc_db()?;
    let b = dev.alloc_db()?;
    a.set(0, 0x1234_5678);
    a.set(1, 7);
    if b.dma().abs_diff(a.dma()) != 64 || a.get(0) != 0x1234_5678 || a.get(1) != 7 || b.get(0) != 0
    {
        return Err(EINVAL);
    }
    // A coherent buffer, rounded up to pages.
    let buf = dev.alloc_coherent(5000)?;
    buf.write_be32(4996, 0xdead_beef)?;
    if buf.len() != 8192 || buf.read_be32(4996)? != 0xdead_beef || buf.read_u8(4996)? != 0xde {
        return Err(EINVAL);
    }
    if buf.read_be64(8190).err() != Some(EINVAL) {
        return Err(EINVAL);
    }
    // Blue-flame registers: two from the function's UAR page, the third from a new one.
    let r0 = dev.alloc_bfreg()?;
    let r1 = dev.alloc_bfreg()?;
    let r2 = dev.alloc_bfreg()?;
    pr_info!(
        "completion {}: UAR {}, bfregs on UARs {} {} {}, doorbell records {} bytes apart\n",
        dev.name(),
        dev.uar().index(),
        r0.uar_index(),
        r1.uar_index(),
        r2.uar_index(),
        b.dma().abs_diff(a.dma())
    );
    drop((r0, r1, r2, a, b, buf));
    let h = Arc::new(QueueEvents(Atomic::new(0)), GFP_KERNEL)?;
    let cq = dev.register_cq(TEST_CQN, h.clone())?;
    if dev.register_cq(TEST_CQN, h.clone()).err() != Some(EEXIST) {
        return Err(EINVAL);
    }
    let qp = dev.register_resource(Resource::Qp(0x42), h)?;
    pr_info!("completion {}: ok\n", dev.name());
    Ok((cq, qp))
}

/// What it keeps per bound function. Dropped after unbind: the notifier goes first, then the
/// NOPs are waited for, then their queue.
struct PerFunction {
    /// The CQ and QP registrations of `completion=1`.
    queues: Option<(CqRegistration, ResourceRegistration)>,
    notifier: Option<NotifierRegistration>,
    events: Arc<EventLog>,
    nops: Arc<Outstanding>,
    /// Where the NOPs run. Destroying it waits until every work item has returned (a NOP
    /// reports itself done before it leaves this module's code).
    queue: Option<OwnedQueue>,
}

impl Drop for PerFunction {
    fn drop(&mut self) {
        drop(self.queues.take());
        drop(self.notifier.take());
        self.nops.wait();
        drop(self.queue.take());
        pr_info!(
            "remove {} after {} event(s)\n",
            &*self.events.name,
            self.events.count.load(Relaxed)
        );
    }
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

impl auxiliary::Driver for TestDriver {
    type IdInfo = ();
    type Data<'bound> = PerFunction;

    const ID_TABLE: auxiliary::IdTable<Self::IdInfo> = &AUX_TABLE;

    fn probe<'bound>(
        adev: &'bound auxiliary::Device<Core<'_>>,
        _info: &'bound Self::IdInfo,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        let dev = auxdev::device_data(adev)?;
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
        let events = Arc::new(
            EventLog {
                name: CString::try_from_fmt(fmt!("{}", dev.name()))?,
                count: Atomic::new(0),
            },
            GFP_KERNEL,
        )?;
        let mut function = PerFunction {
            queues: None,
            notifier: None,
            events: events.clone(),
            nops: start_nops(&dev, &queue, n)?,
            queue: Some(queue),
        };
        // On failure `function` drops: the NOPs are waited for.
        function.notifier = Some(dev.register_notifier(events)?);
        if module_parameters::completion.value() != 0 {
            match exercise_completion(&dev) {
                Ok(q) => function.queues = Some(q),
                Err(e) => {
                    pr_info!("completion {}: error {}\n", dev.name(), e.to_errno());
                    return Err(e);
                }
            }
        }
        Ok(function)
    }
}

impl NamedDriver for TestDriver {
    const NAME: &'static CStr = c"rdma";
}

/// The module: the auxiliary driver (`mlx5_test_interface.rdma`) for its lifetime.
#[pin_data]
struct TestModule {
    #[pin]
    driver: driver::Registration<NamedAdapter<TestDriver>>,
}

impl kernel::InPlaceModule for TestModule {
    fn init(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            driver <- driver::Registration::new(c"mlx5_test_interface", module),
        })
    }
}

module! {
    type: TestModule,
    name: "mlx5_test_interface",
    authors: ["rdma-rs developers"],
    description: "Test-only mlx5 auxiliary driver that logs add, events and remove",
    license: "GPL",
    params: {
        nop_commands: u32 {
            default: 0,
            description: "NOP commands to start at once on each function at add (at most 64)",
        },
        completion: u32 {
            default: 0,
            description: "1: exercise the completion side of each function at add",
        },
    },
}
