// SPDX-License-Identifier: GPL-2.0

//! The PCI driver: the ConnectX ID table, probe and remove.

use crate::auxdev::{DeviceParts, FunctionInfo};
use crate::cmd::commands::Commands;
use crate::cmd::events::CmdEvents;
use crate::debugfs::FunctionDir;
use crate::device_state::DeviceState;
use crate::eq::cq_table::CqTable;
use crate::eq::resources::ResourceTable;
use crate::eq::{self, completion::CompEqs};
use crate::function::{EventHandler, Function};
use crate::hca::{Hca, HcaCaps, CONTROL_VECTOR};
use crate::health::{self, HealthPoller};
use crate::ifc::GeneralCaps;
use crate::init_segment::{self, Bar0, FwRevision, SharedBar};
use crate::memory::uar::{BfregPool, Uar};
use core::mem::ManuallyDrop;
use kernel::{
    device::{self, Core},
    dma::{Device as _, DmaMask},
    irq, irq_affinity,
    irq_vector::{IrqVector, ThreadedRegistration},
    owned_workqueue::OwnedQueue,
    pci,
    pci_enable::EnabledDevice,
    pci_irq_vectors::BoundIrqVectors,
    prelude::*,
    str::CString,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
    time::{hrtimer::ArcHrTimerHandle, Delta},
};

/// Number of functions currently bound to this driver.
static BOUND: Atomic<usize> = Atomic::new(0);

/// How many ConnectX functions this driver has bound.
pub fn bound_functions() -> usize {
    BOUND.load(Relaxed)
}

/// Function kinds in the ID table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FunctionKind {
    /// A physical function.
    Physical,
    /// An SR-IOV virtual function.
    Virtual,
}

const MLX: pci::Vendor = pci::Vendor::MELLANOX;

kernel::pci_device_table!(
    PCI_TABLE,
    <Mlx5PciDriver as pci::Driver>::IdInfo,
    [
        (pci::DeviceId::from_id(MLX, 0x1011), FunctionKind::Physical), // Connect-IB
        (pci::DeviceId::from_id(MLX, 0x1012), FunctionKind::Virtual),  // Connect-IB VF
        (pci::DeviceId::from_id(MLX, 0x1013), FunctionKind::Physical), // ConnectX-4
        (pci::DeviceId::from_id(MLX, 0x1014), FunctionKind::Virtual),  // ConnectX-4 VF
        (pci::DeviceId::from_id(MLX, 0x1015), FunctionKind::Physical), // ConnectX-4 Lx
        (pci::DeviceId::from_id(MLX, 0x1016), FunctionKind::Virtual),  // ConnectX-4 Lx VF
        (pci::DeviceId::from_id(MLX, 0x1017), FunctionKind::Physical), // ConnectX-5
        (pci::DeviceId::from_id(MLX, 0x1018), FunctionKind::Virtual),  // ConnectX-5 VF
        (pci::DeviceId::from_id(MLX, 0x1019), FunctionKind::Physical), // ConnectX-5 Ex
        (pci::DeviceId::from_id(MLX, 0x101a), FunctionKind::Virtual),  // ConnectX-5 Ex VF
        (pci::DeviceId::from_id(MLX, 0x101b), FunctionKind::Physical), // ConnectX-6
        (pci::DeviceId::from_id(MLX, 0x101c), FunctionKind::Virtual),  // ConnectX-6 VF
        (pci::DeviceId::from_id(MLX, 0x101d), FunctionKind::Physical), // ConnectX-6 Dx
        (pci::DeviceId::from_id(MLX, 0x101e), FunctionKind::Virtual),  // ConnectX family VF
        (pci::DeviceId::from_id(MLX, 0x101f), FunctionKind::Physical), // ConnectX-6 Lx
        (pci::DeviceId::from_id(MLX, 0x1021), FunctionKind::Physical), // ConnectX-7
        (pci::DeviceId::from_id(MLX, 0x1023), FunctionKind::Physical), // ConnectX-8
        (pci::DeviceId::from_id(MLX, 0x1025), FunctionKind::Physical), // ConnectX-9
        (pci::DeviceId::from_id(MLX, 0x1027), FunctionKind::Physical), // ConnectX-10
        (pci::DeviceId::from_id(MLX, 0x2101), FunctionKind::Physical), // ConnectX-10 NVLink-C2C
        (pci::DeviceId::from_id(MLX, 0xa2d2), FunctionKind::Physical), // BlueField
        (pci::DeviceId::from_id(MLX, 0xa2d3), FunctionKind::Virtual),  // BlueField VF
        (pci::DeviceId::from_id(MLX, 0xa2d6), FunctionKind::Physical), // BlueField-2
        (pci::DeviceId::from_id(MLX, 0xa2dc), FunctionKind::Physical), // BlueField-3
        (pci::DeviceId::from_id(MLX, 0xa2df), FunctionKind::Physical), // BlueField-4
    ]
);

/// How long firmware may take to finish initializing before probe gives up (the C driver's
/// pre-init timeout is of the same order).
const FW_PRE_INIT_TIMEOUT: Delta = Delta::from_millis(120_000);
/// Poll interval while waiting for firmware.
const FW_INIT_POLL: Delta = Delta::from_millis(20);

/// The driver.
pub(crate) struct Mlx5PciDriver;

/// Per-function state while bound.
///
/// Two orders matter, and they are opposite: on removal the fields drop in declaration order
/// (the health poll, then the interrupt handler, then the function state it used, then the
/// MSI-X vectors, and last bus mastering and the device's enable); on a probe that fails inside
/// the initializer, the fields already initialized drop in the reverse of the order in which
/// the initializer lists them, which is therefore the reverse of this declaration order (so the
/// handler is freed before the vectors then too).
#[pin_data(PinnedDrop)]
pub(crate) struct Mlx5Function<'bound> {
    /// The health poll's timer (stopped when the handle drops).
    health: ArcHrTimerHandle<HealthPoller>,
    /// The health poll's workqueue (its fatal report), dropped after the timer: that waits for
    /// a report still queued.
    _health_queue: Arc<OwnedQueue>,
    /// The control vector's handler: event queues. Named in `/proc/interrupts` as C's:
    /// `mlx5_async0@pci:<function>` (the registration owns the name).
    #[pin]
    irq: ThreadedRegistration<EventHandler<'bound>>,
    /// BAR0 and the HCA, shared with the handler.
    function: Arc<Function<'bound>>,
    /// `mlx5/<function>/` in debugfs.
    _debugfs: Pin<KBox<FunctionDir>>,
    /// The MSI-X vectors.
    vectors: BoundIrqVectors<'bound>,
    fw: FwRevision,
    /// Bus mastering off and the device disabled, last.
    _close: EnabledDevice<'bound>,
}

impl pci::Driver for Mlx5PciDriver {
    type IdInfo = FunctionKind;
    type Data<'bound> = Mlx5Function<'bound>;

    const ID_TABLE: pci::IdTable<Self::IdInfo> = &PCI_TABLE;

    fn probe<'bound>(
        pdev: &'bound pci::Device<Core<'_>>,
        info: Option<&'bound Self::IdInfo>,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        pin_init::pin_init_scope(move || {
            let kind = info.copied().unwrap_or(FunctionKind::Physical);
            // Memory access and bus mastering, undone when this guard drops (C's
            // `mlx5_pci_close`). From here every return drops what exists in reverse order,
            // this guard last.
            let close = EnabledDevice::new(pdev)?;
            let bar = pdev.iomap_region_sized::<{ init_segment::SIZE }>(0, c"mlx5_core")?;
            let fw = firmware_ready(pdev, &bar, kind)?;
            // SAFETY: probe runs before any DMA allocation or mapping for this device.
            unsafe { pdev.dma_set_mask_and_coherent(DmaMask::new::<64>())? };
            let state = DeviceState::new()?;
            let cmd_events = CmdEvents::new()?;
            // BAR0 is shared (command handle, health poll, interrupt handler) from here on.
            let bar = Arc::new(bar.into_devres()?, GFP_KERNEL)?;
            let dev = pdev.as_ref();
            // The MSI-X vectors, allocated by the bring-up once the capabilities are known.
            let mut vectors = None;
            let mut alloc_vectors = |caps: &HcaCaps| -> Result {
                let want = vectors_wanted(pdev, caps);
                // SAFETY: the vectors are kept in `Mlx5Function::vectors`. On removal the
                // control handler's registration (`irq`, declared before them) drops first,
                // and the completion vectors' registrations are dropped by `CompEqs::tear_down`
                // in `Function::tear_down` (unbind, and the drop of `function`, also declared
                // before them); on a failed probe the initializer, which lists `vectors` before
                // `irq`, drops `irq` first, and no completion vector exists before the
                // auxiliary device is published (the last step, torn down on failure); and
                // before the initializer, no handler exists (locals drop in reverse order, the
                // vectors after everything created later). The `IrqVector`s are used by the
                // registrations above, by `CompEqs` until its `tear_down`, and by the CQ and
                // resource tables only when a CQ, QP or SRQ registration drops: those belong to
                // the auxiliary device's driver, and `Function::tear_down` deletes the device
                // (unbinding the driver) before the completion vectors, so before the vectors.
                vectors = Some(unsafe { BoundIrqVectors::alloc_msix(pdev, 1, want)? });
                Ok(())
            };
            let hca = bar
                .access_with(dev, |b| {
                    Hca::bring_up(
                        dev,
                        b,
                        state.clone(),
                        cmd_events.clone(),
                        &mut alloc_vectors,
                    )
                })
                .and_then(|r| r)
                .inspect_err(|e| {
                    dev_err!(
                        pdev,
                        "mlx5 bring-up failed with error code {}\n",
                        e.to_errno()
                    );
                })?;
            let Some(vectors) = vectors else {
                // The bring-up calls the allocation before it succeeds.
                drop(PendingHca::new(hca, &bar, dev));
                return Err(EINVAL);
            };
            // From here until `Function` adopts it, a failure drops `hca`, which tears the HCA
            // down, before the vectors go (declared after them), as C destroys its EQs before
            // freeing the vectors.
            let hca = PendingHca::new(hca, &bar, dev);
            let max_eqs = {
                let c = GeneralCaps::from_bytes(&hca.caps().general);
                eq::completion::max_eqs(c.max_num_eqs(), c.log_max_eq())
            };
            let comp_count = eq::completion::comp_vectors_for(vectors.len(), max_eqs);
            let prepared = vectors.vector(CONTROL_VECTOR.into()).and_then(|control| {
                let parts = completion_side(pdev, &bar, &hca, &vectors, comp_count)?;
                Ok((control, parts))
            });
            let (control, (comp, cq_table, resources)) = prepared?;
            // The control vector's thread dispatches QP/SRQ events and CQ error events (the
            // CQ table's last slot): registrations wait for it too.
            resources.set_vector(control);
            cq_table.set_vector(comp_count as usize, control);
            let uar_index = hca.uar_index().unwrap_or(0);
            let log_bf = GeneralCaps::from_bytes(&hca.caps().general).log_bf_reg_size() as u8;
            let function = Function::new(
                pdev,
                bar.clone(),
                cmd_events,
                cq_table.clone(),
                resources.clone(),
                comp.clone(),
            )?;
            let (info, ports_u8) = function_info(pdev, &fw, &hca);
            let caps = hca.caps().try_clone();
            let pages_counter = hca.pages_counter();
            let queue = hca.command_queue();
            // `Function` owns the HCA from here (and tears it down when dropped).
            function.adopt(hca.into_inner());
            // Every `?` below drops `function`, which tears the HCA down.
            let caps = caps?;
            let commands = Commands::new(queue, bar.clone(), pdev.as_ref().into());
            let bfregs = BfregPool::new(commands.clone(), bar.clone(), uar_index, log_bf)?;
            let uar = Uar::new(uar_index, bar.clone());
            let health_queue = health::new_health_queue()?;
            let health = HealthPoller::start(
                pdev.as_ref(),
                bar,
                state,
                function.notifiers().clone(),
                health_queue.clone(),
            )?;
            let fw_pages = pages_counter.clone();
            let debugfs = FunctionDir::new(pdev.as_ref().name(), pages_counter)?;
            let handler: Result<EventHandler<'_>> = Ok(EventHandler::new(function.clone()));
            let irq_name = CString::try_from_fmt(fmt!("mlx5_async0@pci:{}", pdev.as_ref().name()))?;
            // Listed in the reverse of the declaration order: a failure drops what was
            // initialized in reverse (the handler first, the vectors and `close` last).
            Ok(try_pin_init!(Mlx5Function {
                _close: close,
                fw,
                vectors,
                _debugfs: debugfs,
                function: function.clone(),
                // SAFETY: the registration lives in the pinned driver data and is dropped with
                // it; nothing forgets it.
                irq <- unsafe {
                    ThreadedRegistration::new(control, irq::Flags::TRIGGER_NONE, irq_name, handler)
                },
                _health_queue: health_queue,
                health,
                _: {
                    // Events that came before the handler was there, and the first arming.
                    function.process_events();
                    // The auxiliary device comes last, with the function fully up (drivers
                    // already loaded probe it now).
                    let parts = DeviceParts {
                        ports: ports_u8,
                        commands,
                        info,
                        caps,
                        fw_pages,
                        comp,
                        cq_table,
                        resources,
                        uar,
                        bfregs,
                        bar_start: pdev.resource_start(0).unwrap_or(0),
                        bar_len: pdev.resource_len(0).unwrap_or(0),
                    };
                    if let Err(e) = function.publish(parts) {
                        function.tear_down();
                        return Err(e);
                    }
                    BOUND.fetch_add(1, Relaxed);
                },
            }? Error))
        })
    }

    fn unbind<'bound>(pdev: &'bound pci::Device<Core<'_>>, this: Pin<&Self::Data<'bound>>) {
        dev_info!(
            pdev,
            "unbinding (firmware {}.{}.{}, {} MSI-X vector(s))\n",
            this.fw.major,
            this.fw.minor,
            this.fw.subminor,
            this.vectors.len()
        );
        this.function.tear_down();
    }
}

/// The completion side of a brought-up function: its completion vectors (`count`, on MSI-X
/// An HCA brought up and not yet adopted by its [`Function`]: dropped (a probe failing in
/// between), it is torn down (C's `mlx5_init_one` unwinding to `err_teardown`).
/// Waits for the firmware to come out of initialization and checks its command interface
/// revision (C's `wait_fw_init` and `mlx5_cmd_init`'s check), logging both as C does.
fn firmware_ready(
    pdev: &pci::Device<Core<'_>>,
    bar: &Bar0<'_>,
    kind: FunctionKind,
) -> Result<FwRevision> {
    // Registers other than `initializing` are only meaningful once firmware is up.
    match init_segment::wait_fw_init(bar, FW_PRE_INIT_TIMEOUT, FW_INIT_POLL) {
        Ok(waited) => dev_info!(
            pdev,
            "firmware ready after {} ms ({:?} function)\n",
            waited.as_millis(),
            kind
        ),
        Err(e) => {
            dev_err!(
                pdev,
                "firmware still initializing after {} ms\n",
                FW_PRE_INIT_TIMEOUT.as_millis()
            );
            return Err(e);
        }
    }
    let fw = FwRevision::read(bar);
    dev_info!(
        pdev,
        "firmware version: {}.{}.{}\n",
        fw.major,
        fw.minor,
        fw.subminor
    );
    if fw.cmdif != init_segment::SUPPORTED_CMDIF_REV {
        dev_err!(
            pdev,
            "command interface revision {} is not supported (only {})\n",
            fw.cmdif,
            init_segment::SUPPORTED_CMDIF_REV
        );
        return Err(EINVAL);
    }
    Ok(fw)
}

/// How many MSI-X vectors to ask for, from the capabilities: the control vector and one
/// completion vector per online CPU, within the EQs and the MSI-X table.
fn vectors_wanted(pdev: &pci::Device<Core<'_>>, caps: &HcaCaps) -> u32 {
    let c = GeneralCaps::from_bytes(&caps.general);
    let max_eqs = eq::completion::max_eqs(c.max_num_eqs(), c.log_max_eq());
    let msix = BoundIrqVectors::msix_table_size(pdev).unwrap_or(1);
    eq::completion::vectors_wanted(
        c.num_ports() as u32,
        irq_affinity::online_cpus(),
        max_eqs,
        msix,
    )
}

/// What the auxiliary device tells its driver about the function, and the port count, logged
/// as the HCA comes up.
fn function_info(pdev: &pci::Device<Core<'_>>, fw: &FwRevision, hca: &Hca) -> (FunctionInfo, u8) {
    let (ports, ib) = hca.ports();
    dev_info!(
        pdev,
        "HCA initialized: board id {}, {} {} port(s), {} firmware pages lent\n",
        core::str::from_utf8(hca.board_id()).unwrap_or("?"),
        ports,
        if ib { "InfiniBand" } else { "Ethernet" },
        hca.pages_outstanding()
    );
    let mut board_id = [0u8; 16];
    let n = hca.board_id().len().min(board_id.len());
    board_id[..n].copy_from_slice(&hca.board_id()[..n]);
    let info = FunctionInfo {
        fw_major: fw.major,
        fw_minor: fw.minor,
        fw_subminor: fw.subminor,
        vendor_id: pdev.vendor_id().as_raw(),
        device_id: pdev.device_id(),
        revision: pdev.revision_id(),
        board_id,
    };
    (info, u8::try_from(ports).unwrap_or(u8::MAX))
}

struct PendingHca<'a> {
    hca: ManuallyDrop<Hca>,
    bar: &'a SharedBar,
    dev: &'a device::Device<device::Bound>,
}

impl<'a> PendingHca<'a> {
    /// `hca`, torn down through `bar` on `dev` unless [`PendingHca::into_inner`] takes it.
    fn new(hca: Hca, bar: &'a SharedBar, dev: &'a device::Device<device::Bound>) -> Self {
        Self {
            hca: ManuallyDrop::new(hca),
            bar,
            dev,
        }
    }

    /// The HCA, for its new owner.
    fn into_inner(self) -> Hca {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped, so `Drop::drop`, the only other place that takes
        // `hca`, does not run; `hca` is taken once, here.
        unsafe { ManuallyDrop::take(&mut this.hca) }
    }
}

impl core::ops::Deref for PendingHca<'_> {
    type Target = Hca;

    fn deref(&self) -> &Hca {
        &self.hca
    }
}

impl Drop for PendingHca<'_> {
    fn drop(&mut self) {
        // SAFETY: `drop` runs at most once, and never after `into_inner` took the HCA.
        let hca = unsafe { ManuallyDrop::take(&mut self.hca) };
        let dev = self.dev;
        if self
            .bar
            .access_with(dev, |b| hca.tear_down(dev, b))
            .is_err()
        {
            dev_err!(dev, "BAR0 no longer accessible; HCA not torn down\n");
        }
    }
}

/// vectors 1 and up), the CQ table and the resource table.
fn completion_side<'bound>(
    pdev: &'bound pci::Device<kernel::device::Bound>,
    bar: &crate::init_segment::SharedBar,
    hca: &Hca,
    vectors: &BoundIrqVectors<'bound>,
    count: u32,
) -> Result<(Arc<CompEqs>, Arc<CqTable>, Arc<ResourceTable>)> {
    // A slot per completion vector and one for the control vector.
    let cq_table = CqTable::new(Some(pdev.as_ref().into()), count as usize + 1)?;
    let resources = ResourceTable::new()?;
    let mut comp_vectors = KVec::<IrqVector>::with_capacity(count as usize, GFP_KERNEL)?;
    for i in 0..count {
        comp_vectors.push(vectors.vector(i + 1)?, GFP_KERNEL)?;
    }
    // `Function::tear_down` runs `CompEqs::tear_down` before the vectors are freed (see
    // `alloc_msix` in probe): the `CompEqs` goes to the function, created next.
    let comp = CompEqs::new(
        pdev.as_ref().into(),
        hca.command_queue(),
        bar.clone(),
        hca.uar_index().ok_or(EINVAL)?,
        cq_table.clone(),
        comp_vectors,
    )?;
    Ok((comp, cq_table, resources))
}

#[pinned_drop]
impl PinnedDrop for Mlx5Function<'_> {
    fn drop(self: Pin<&mut Self>) {
        BOUND.fetch_sub(1, Relaxed);
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_probe_order)]
mod tests {
    use super::*;

    /// Appends its id to `log` (as a decimal digit) when dropped.
    struct Rec<'a> {
        log: &'a Atomic<u32>,
        id: u32,
    }

    impl Drop for Rec<'_> {
        fn drop(&mut self) {
            let v = self.log.load(Relaxed);
            self.log.store(v * 10 + self.id, Relaxed);
        }
    }

    /// `Mlx5Function`'s pattern: declared handler, vectors, close; listed the other way round.
    #[pin_data]
    struct Order<'a> {
        irq: Rec<'a>,
        vectors: Rec<'a>,
        close: Rec<'a>,
    }

    fn build(log: &Atomic<u32>, fail: bool) -> Result<Pin<KBox<Order<'_>>>> {
        KBox::try_pin_init(
            try_pin_init!(Order {
                close: Rec { log, id: 3 },
                vectors: Rec { log, id: 2 },
                irq: Rec { log, id: 1 },
                _: {
                    if fail {
                        return Err(ENOMEM);
                    }
                },
            }? Error),
            GFP_KERNEL,
        )
    }

    #[test]
    fn handler_drops_before_vectors_on_remove_and_on_failed_probe() {
        let log = Atomic::new(0);
        assert!(build(&log, true).is_err());
        // A failure after every field: the handler first, then the vectors, `close` last.
        assert_eq!(log.load(Relaxed), 123);
        let log = Atomic::new(0);
        let o = build(&log, false);
        assert!(o.is_ok());
        drop(o);
        assert_eq!(log.load(Relaxed), 123);
    }
}
