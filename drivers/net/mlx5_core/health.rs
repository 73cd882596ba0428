// SPDX-License-Identifier: GPL-2.0

//! Device health: a timer polls the health counter, the NIC interface state and the syndrome in
//! the init segment, as the C driver's `poll_health` does. A syndrome is logged with its name; a
//! counter that stopped moving is logged (C files a devlink health report then). C's fatal
//! sensors, in its order: a device that reads all ones (gone from the bus, 1), the NIC
//! interface disabled (3) or in a software reset (4), a syndrome with recovery required (5);
//! each puts the device in the internal-error state, in which the command queue fails commands at
//! once (and lets teardown commands "succeed", so unload completes), and the function's drivers
//! are told (`Event::SysError`, C's `MLX5_DEV_EVENT_SYS_ERROR`) from a work item on the
//! function's health workqueue, in process context as C's `mlx5_enter_error_state` tells them.

use crate::device_state::DeviceState;
use crate::eq::notifiers::{Event, Notifiers};
use crate::init_segment::{self, Bar0, HealthRegs};
use kernel::{
    device, impl_has_hr_timer, new_work,
    owned_workqueue::{Flags, OwnedQueue},
    pci::DevresBar,
    prelude::*,
    sync::{
        aref::ARef,
        atomic::{Atomic, Relaxed},
        Arc, ArcBorrow,
    },
    time::{
        hrtimer::{
            ArcHrTimerHandle, HrTimer, HrTimerCallback, HrTimerCallbackContext, HrTimerPointer,
            HrTimerRestart, RelativeMode,
        },
        Delta, Monotonic,
    },
    workqueue::{Work, WorkItem},
};

/// How often the health registers are read (the C driver's default).
const POLL_INTERVAL: Delta = Delta::from_millis(2000);
/// Polls with an unchanged counter before the device is declared unresponsive (as in C).
const MAX_MISSES: u32 = 3;

/// The name the C driver gives a health syndrome.
pub(crate) fn syndrome_name(synd: u8) -> &'static str {
    match synd {
        0x1 => "firmware internal error",
        0x7 => "irisc not responding",
        0x8 => "unrecoverable hardware error",
        0x9 => "firmware CRC error",
        0xa => "ICM fetch PCI error",
        0xb => "HW fatal error",
        0xc => "async EQ buffer overrun",
        0xd => "EQ error",
        0xe => "Invalid EQ referenced",
        0xf => "FFSER error",
        0x10 => "High temperature",
        0x12 => "ICM fetch PCI data poisoned error",
        0x13 => "Trust lockdown error",
        _ => "unrecognized error",
    }
}

/// What one poll concludes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Nothing new.
    Healthy,
    /// A new non-zero syndrome, not fatal.
    Syndrome(u8),
    /// Fatal: the sensor number the C driver reports (1: PCI communication, 3: NIC interface
    /// disabled, 4: NIC in software reset, 5: firmware syndrome with recovery required; C's
    /// 2, the PCI channel offline after an AER error, is not checked: no AER here yet).
    Fatal(u32),
    /// The counter stopped.
    Unresponsive,
}

/// Judges one reading given the previous counter, the misses so far and the last syndrome seen.
/// The sensors come in C's order (`check_fatal_sensors`).
pub(crate) fn judge(regs: HealthRegs, prev: u32, misses: u32, last_synd: u8) -> (Verdict, u32) {
    if regs.gone {
        return (Verdict::Fatal(1), misses);
    }
    if regs.nic_ifc == init_segment::NIC_IFC_DISABLED {
        return (Verdict::Fatal(3), misses);
    }
    if regs.nic_ifc == init_segment::NIC_IFC_SW_RESET {
        return (Verdict::Fatal(4), misses);
    }
    if regs.rfr && regs.synd != 0 {
        return (Verdict::Fatal(5), misses);
    }
    let misses = if regs.counter == prev { misses + 1 } else { 0 };
    if misses == MAX_MISSES {
        return (Verdict::Unresponsive, misses);
    }
    if regs.synd != 0 && regs.synd != last_synd {
        return (Verdict::Syndrome(regs.synd), misses);
    }
    (Verdict::Healthy, misses)
}

/// Tells the function's drivers that the device is in the internal-error state, from a work
/// item (the health poll runs in a timer, and notifiers are called in process context).
#[pin_data]
pub(crate) struct FatalReport {
    notifiers: Arc<Notifiers>,
    #[pin]
    work: Work<FatalReport>,
}

kernel::impl_has_work! {
    impl HasWork<Self> for FatalReport { self.work }
}

impl WorkItem for FatalReport {
    type Pointer = Arc<FatalReport>;

    fn run(this: Arc<FatalReport>) {
        this.notifiers.call(Event::SysError);
    }
}

/// The workqueue the fatal report runs on (C's `mlx5_health<function>` queue): the function
/// owns it and drops it after the health poll's timer, which waits for the report.
pub(crate) fn new_health_queue() -> Result<Arc<OwnedQueue>> {
    Ok(Arc::new(
        OwnedQueue::new(c"mlx5_health", Flags::UNBOUND, 1)?,
        GFP_KERNEL,
    )?)
}

/// The health poll of one function.
#[pin_data]
pub(crate) struct HealthPoller {
    #[pin]
    timer: HrTimer<Self>,
    bar: Arc<DevresBar<{ init_segment::SIZE }>>,
    dev: ARef<device::Device>,
    state: Arc<DeviceState>,
    prev: Atomic<u32>,
    misses: Atomic<u32>,
    synd: Atomic<u32>,
    /// Queued once the device is in error.
    fatal: Arc<FatalReport>,
    /// Where `fatal` is queued.
    queue: Arc<OwnedQueue>,
}

impl HealthPoller {
    /// Starts polling `bar` for `dev`; dropping the handle stops it. A fatal error is reported
    /// to `notifiers` on `queue`.
    pub(crate) fn start(
        dev: &device::Device,
        bar: Arc<DevresBar<{ init_segment::SIZE }>>,
        state: Arc<DeviceState>,
        notifiers: Arc<Notifiers>,
        queue: Arc<OwnedQueue>,
    ) -> Result<ArcHrTimerHandle<Self>> {
        let fatal = Arc::pin_init(
            pin_init!(FatalReport {
                notifiers,
                work <- new_work!("mlx5_core::health::FatalReport::work"),
            }),
            GFP_KERNEL,
        )?;
        let poller = Arc::pin_init(
            pin_init!(Self {
                timer <- HrTimer::new(),
                bar,
                dev: dev.into(),
                state,
                prev: Atomic::new(0),
                misses: Atomic::new(0),
                synd: Atomic::new(0),
                fatal,
                queue,
            }),
            GFP_KERNEL,
        )?;
        Ok(poller.start(POLL_INTERVAL))
    }

    fn poll(&self, bar: &Bar0<'_>) -> bool {
        if self.state.in_error() {
            return false;
        }
        let regs = init_segment::health(bar);
        let last_synd = self.synd.load(Relaxed) as u8;
        let (verdict, misses) = judge(
            regs,
            self.prev.load(Relaxed),
            self.misses.load(Relaxed),
            last_synd,
        );
        self.prev.store(regs.counter, Relaxed);
        self.misses.store(misses, Relaxed);
        self.synd.store(regs.synd.into(), Relaxed);
        match verdict {
            Verdict::Healthy => true,
            Verdict::Syndrome(s) => {
                dev_err!(self.dev, "synd {:#x}: {}\n", s, syndrome_name(s));
                true
            }
            Verdict::Unresponsive => {
                dev_err!(
                    self.dev,
                    "device's health compromised - reached miss count\n"
                );
                true
            }
            Verdict::Fatal(sensor) => {
                if self.state.set_error() {
                    dev_err!(self.dev, "Fatal error {} detected\n", sensor);
                    if regs.synd != 0 && !regs.gone {
                        dev_err!(
                            self.dev,
                            "synd {:#x}: {}\n",
                            regs.synd,
                            syndrome_name(regs.synd)
                        );
                    }
                    dev_err!(
                        self.dev,
                        "device in internal error state: commands fail from now on\n"
                    );
                    let _ = self.queue.enqueue(self.fatal.clone());
                }
                false
            }
        }
    }
}

impl HrTimerCallback for HealthPoller {
    type Pointer<'a> = Arc<Self>;

    fn run(this: ArcBorrow<'_, Self>, mut ctx: HrTimerCallbackContext<'_, Self>) -> HrTimerRestart {
        // After unbind the BAR is revoked: stop.
        let again = this
            .bar
            .try_access_with(|bar| this.poll(bar))
            .unwrap_or(false);
        if again {
            ctx.forward_now(POLL_INTERVAL);
            HrTimerRestart::Restart
        } else {
            HrTimerRestart::NoRestart
        }
    }
}

impl_has_hr_timer! {
    impl HasHrTimer<Self> for HealthPoller {
        mode: RelativeMode<Monotonic>, field: self.timer
    }
}

#[kernel::macros::kunit_tests(rdma_rs_mlx5_health)]
mod tests {
    use super::*;

    fn regs(counter: u32, synd: u8, rfr: bool) -> HealthRegs {
        HealthRegs {
            counter,
            nic_ifc: 0,
            synd,
            rfr,
            gone: false,
        }
    }

    #[test]
    fn a_moving_counter_is_healthy_a_stopped_one_is_not() {
        assert_eq!(judge(regs(5, 0, false), 4, 0, 0), (Verdict::Healthy, 0));
        assert_eq!(judge(regs(5, 0, false), 5, 1, 0), (Verdict::Healthy, 2));
        assert_eq!(
            judge(regs(5, 0, false), 5, 2, 0),
            (Verdict::Unresponsive, 3)
        );
    }

    #[test]
    fn syndromes_are_reported_once_and_fatal_ones_stop_the_device() {
        assert_eq!(judge(regs(6, 8, false), 5, 0, 0), (Verdict::Syndrome(8), 0));
        assert_eq!(judge(regs(7, 8, false), 6, 0, 8), (Verdict::Healthy, 0));
        assert_eq!(judge(regs(7, 8, true), 6, 0, 8).0, Verdict::Fatal(5));
        let gone = HealthRegs {
            counter: u32::MAX,
            nic_ifc: 7,
            synd: 0xff,
            rfr: true,
            gone: true,
        };
        assert_eq!(judge(gone, 1, 0, 0).0, Verdict::Fatal(1));
        // The NIC interface state comes before the syndrome, as in C.
        let disabled = HealthRegs {
            nic_ifc: init_segment::NIC_IFC_DISABLED,
            ..regs(7, 8, true)
        };
        assert_eq!(judge(disabled, 6, 0, 0).0, Verdict::Fatal(3));
        let sw_reset = HealthRegs {
            nic_ifc: init_segment::NIC_IFC_SW_RESET,
            ..regs(7, 0, false)
        };
        assert_eq!(judge(sw_reset, 6, 0, 0).0, Verdict::Fatal(4));
        // Other states (e.g. 2, no DRAM NIC) are not fatal.
        let no_dram = HealthRegs {
            nic_ifc: 2,
            ..regs(7, 0, false)
        };
        assert_eq!(judge(no_dram, 6, 0, 0).0, Verdict::Healthy);
        assert_eq!(syndrome_name(8), "unrecoverable hardware error");
    }
}
