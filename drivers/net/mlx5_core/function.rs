// SPDX-License-Identifier: GPL-2.0

//! The function's state shared between probe, unbind and the control vector's interrupt handler
//! (BAR0, the HCA, the event notifiers, the auxiliary device), and the handler itself: it
//! consumes the event queues in its thread, answers page requests and passes port changes to the
//! notifiers drivers registered.

use crate::auxdev::{AuxDevice, DeviceParts};
use crate::cmd::events::CmdEvents;
use crate::eq::completion::CompEqs;
use crate::eq::cq_table::CqTable;
use crate::eq::notifiers::{Event, Notifiers};
use crate::eq::resources::{event as rsc_event, ResourceTable};
use crate::hca::{Hca, PortEvent};
use crate::ifc::Eqe;
use crate::init_segment::SharedBar;
use crate::log_limit::LogLimit;
use kernel::{
    device::Bound,
    irq::{IrqReturn, ThreadedHandler},
    new_mutex, pci,
    prelude::*,
    sync::{Arc, Mutex},
};

/// Port change sub-types, as the C driver names them.
fn port_change_name(sub_type: u8) -> &'static str {
    match sub_type {
        1 => "down",
        4 => "active",
        5 => "initialized",
        6 => "LID changed",
        7 => "P_Key changed",
        8 => "GUID changed",
        9 => "client re-register",
        _ => "changed",
    }
}

/// A bound function: its BAR, its event notifiers and, until unbind, its HCA and its auxiliary
/// device. Dropping it deletes the device and tears the HCA down if unbind did not (a probe that
/// failed late).
#[pin_data(PinnedDrop)]
pub(crate) struct Function<'bound> {
    pdev: &'bound pci::Device<Bound>,
    bar: SharedBar,
    #[pin]
    hca: Mutex<Option<Hca>>,
    /// Command completions (event mode), consumed without the HCA lock.
    cmd_events: Arc<CmdEvents>,
    /// The drivers' event notifiers, called by the interrupt thread.
    notifiers: Arc<Notifiers>,
    /// The CQ table (CQ error events from the interrupt thread).
    cq_table: Arc<CqTable>,
    /// The QP/SRQ event handlers (called by the interrupt thread).
    resources: Arc<ResourceTable>,
    /// The completion vectors, torn down after the auxiliary device is deleted.
    comp: Arc<CompEqs>,
    /// `mlx5_core.rdma.<N>`, once published. Its lock is held only to put the device in or take
    /// it out (never while it is created or deleted, which probes or unbinds a driver), and the
    /// interrupt thread never takes it.
    #[pin]
    aux: Mutex<Option<AuxDevice<'bound>>>,
    /// Limits the port change lines a flood of events writes to the log.
    port_log: LogLimit,
}

impl<'bound> Function<'bound> {
    /// Shares `bar` for `pdev`, with no HCA yet ([`Self::adopt`] gives it one): a failure here
    /// leaves the caller's HCA with the caller, to tear down.
    pub(crate) fn new(
        pdev: &'bound pci::Device<Bound>,
        bar: SharedBar,
        cmd_events: Arc<CmdEvents>,
        cq_table: Arc<CqTable>,
        resources: Arc<ResourceTable>,
        comp: Arc<CompEqs>,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Self {
                pdev,
                bar,
                hca <- new_mutex!(None),
                cmd_events,
                notifiers: Notifiers::new()?,
                cq_table,
                resources,
                comp,
                aux <- new_mutex!(None),
                port_log: LogLimit::new(),
            }),
            GFP_KERNEL,
        )
    }

    /// The drivers' event notifiers.
    pub(crate) fn notifiers(&self) -> &Arc<Notifiers> {
        &self.notifiers
    }

    /// Takes ownership of the brought-up `hca`: from now on [`Self::tear_down`] (or dropping the
    /// function) tears it down. Cannot fail, so no HCA is lost between bring-up and here.
    pub(crate) fn adopt(&self, hca: Hca) {
        let old = self.hca.lock().replace(hca);
        if let Some(old) = old {
            // Adopted once per bind; were it not, the older HCA is torn down, not leaked.
            let dev = self.pdev.as_ref();
            let _ = self.bar.access_with(dev, |bar| old.tear_down(dev, bar));
        }
    }

    /// Consumes the event queues (answering page requests) and re-arms them, then reports the
    /// port changes with the HCA unlocked. Does nothing once the HCA is torn down.
    pub(crate) fn process_events(&self) {
        // Command completions first, and without the HCA lock: the issuer holds it.
        let dev = self.pdev.as_ref();
        if let Ok(Err(e)) = self.bar.access_with(dev, |bar| self.cmd_events.poll(bar)) {
            dev_err!(self.pdev, "command EQ error: err {}\n", e.to_errno());
        }
        let (ports, rsc): (KVec<PortEvent>, KVec<Eqe>) = {
            let mut guard = self.hca.lock();
            let Some(hca) = (*guard).as_mut() else {
                return;
            };
            let dev = self.pdev.as_ref();
            match self.bar.access_with(dev, |bar| hca.take_events(dev, bar)) {
                Ok(p) => p,
                Err(e) => {
                    dev_err!(self.pdev, "event queue error: err {}\n", e.to_errno());
                    return;
                }
            }
        };
        // Resource and CQ events, with no lock held (handlers take only their tables' locks).
        for e in rsc.iter() {
            let ty = e.event_type() as u8;
            if ty == rsc_event::CQ_ERROR {
                self.cq_table.event(e.cq_err_cqn() as u32, ty);
            } else {
                self.resources
                    .dispatch(ty, e.qp_srq_type() as u8, e.qp_srq_n() as u32);
            }
        }
        for p in ports.iter() {
            if self.port_log.allow() {
                dev_info!(
                    self.pdev,
                    "port {} state change: {}\n",
                    p.port,
                    port_change_name(p.sub_type)
                );
            }
            self.notifiers.call(Event::port_change(p.port, p.sub_type));
        }
        let quiet = self.port_log.take_suppressed();
        if quiet != 0 {
            dev_info!(
                self.pdev,
                "{quiet} port state change(s) not logged (more than {} a second)\n",
                LogLimit::PER_SECOND
            );
        }
    }

    /// Creates the function's auxiliary device (`mlx5_core.rdma.<N>`); a driver already loaded
    /// probes it before this returns.
    pub(crate) fn publish(&self, parts: DeviceParts) -> Result {
        let aux = AuxDevice::new(self.pdev.as_ref(), parts, self.notifiers.clone())?;
        let old = self.aux.lock().replace(aux);
        // Published once per bind; were it not, the older device goes here, unlocked.
        drop(old);
        Ok(())
    }

    /// Deletes the auxiliary device (its driver is unbound first), then tears the HCA down
    /// (once; later calls do nothing).
    pub(crate) fn tear_down(&self) {
        let aux = self.aux.lock().take();
        let bfregs = aux.as_ref().map(|a| a.bfregs.clone());
        // Unbinds the driver (it drops its notifiers and its queues) with the lock released.
        drop(aux);
        // Every blue-flame register back before BAR0 can go (they are leases on its mapping).
        if let Some(bfregs) = bfregs {
            bfregs.wait_returned();
        }
        // The completion vectors next (their EQs need the HCA), in reverse order.
        self.comp.tear_down(self.pdev.as_ref());
        let hca = self.hca.lock().take();
        if let Some(hca) = hca {
            let dev = self.pdev.as_ref();
            if self
                .bar
                .access_with(dev, |bar| hca.tear_down(dev, bar))
                .is_err()
            {
                dev_err!(self.pdev, "BAR0 no longer accessible; HCA not torn down\n");
            }
            dev_info!(
                self.pdev,
                "{} command completion(s) came as events\n",
                self.cmd_events.reported()
            );
        }
    }
}

#[pinned_drop]
impl PinnedDrop for Function<'_> {
    fn drop(self: Pin<&mut Self>) {
        self.tear_down();
    }
}

/// The control vector's handler: the hard part only wakes the thread.
pub(crate) struct EventHandler<'bound> {
    function: Arc<Function<'bound>>,
}

impl<'bound> EventHandler<'bound> {
    /// A handler for `function`'s event queues.
    pub(crate) fn new(function: Arc<Function<'bound>>) -> Self {
        Self { function }
    }
}

impl ThreadedHandler for EventHandler<'_> {
    fn handle_threaded(&self) -> IrqReturn {
        self.function.process_events();
        IrqReturn::Handled
    }
}
