// SPDX-License-Identifier: GPL-2.0

//! Bring-up and teardown of the HCA, in the C driver's order: ENABLE_HCA, ISSI negotiation, boot
//! pages, host endianness, capabilities, init pages, INIT_HCA, driver version, capability and
//! adapter queries, a UAR and the event queues (async events, page requests); and on removal
//! the event queues, TEARDOWN_HCA, page reclaim, DISABLE_HCA.

use crate::cmd::events::{CmdEvents, EVENT_CMD};
use crate::cmd::queue::CmdQueue;
use crate::device_state::DeviceState;
use crate::eq::{event, EventQueue, Uar};
use crate::ifc::{
    AccessReg, AccessRegIn, AtomicCaps, DisableHca, EnableHca, Eqe, FunctionIn, GeneralCaps,
    InitHca, PlainIn, QueryAdapter, QueryHcaCap, QueryIssi, SetDriverVersion, SetDriverVersionIn,
    SetHcaCap, SetIssi, SetIssiIn, TeardownHca, TeardownHcaIn,
};
use crate::init_segment::Bar0;
use crate::memory::pages::{FwPages, PageRequest};
use kernel::{device, prelude::*, sync::Arc};

/// Size of a capability page.
const CAP_SIZE: usize = 4096;
/// Capability type: general device capabilities.
const CAP_GENERAL: u64 = 0;
/// Capability type: atomic operations.
const CAP_ATOMIC: u64 = 3;
/// Access register id: host endianness.
const REG_HOST_ENDIANNESS: u64 = 0x7004;
/// The largest `log_max_qp` this driver asks for (the C driver's default profile).
const PROFILE_LOG_MAX_QP: u64 = 18;

/// The MSI-X vector of the control event queues.
pub(crate) const CONTROL_VECTOR: u16 = 0;

/// A brought-up HCA: its command queue, the pages lent to firmware, what it reported, and its
/// event queues.
pub(crate) struct Hca {
    cmd: Arc<CmdQueue>,
    pages: FwPages,
    caps: HcaCaps,
    board_id: [u8; 16],
    uar: Option<Uar>,
    async_eq: Option<EventQueue>,
    pages_eq: Option<EventQueue>,
    /// The command EQ, kept outside the HCA lock for the event handler.
    cmd_events: Arc<CmdEvents>,
}

/// The current capability pages the HCA reported after INIT_HCA (`MLX5_CAP_GEN` and
/// `MLX5_CAP_ATOMIC` of the C driver), for the protocol interfaces.
pub struct HcaCaps {
    /// The general capabilities (`cmd_hca_cap`, 4096 bytes).
    pub general: KVec<u8>,
    /// The atomic capabilities (`atomic_caps`); empty when the HCA has no atomics.
    pub atomic: KVec<u8>,
}

impl HcaCaps {
    /// A copy (for an interface, or an interface's device).
    pub fn try_clone(&self) -> Result<Self> {
        let mut general = KVec::with_capacity(self.general.len(), GFP_KERNEL)?;
        general.extend_from_slice(&self.general, GFP_KERNEL)?;
        let mut atomic = KVec::with_capacity(self.atomic.len(), GFP_KERNEL)?;
        atomic.extend_from_slice(&self.atomic, GFP_KERNEL)?;
        Ok(Self { general, atomic })
    }
}

/// A port state change, to pass on to the protocol interfaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PortEvent {
    /// Port number (1-based).
    pub(crate) port: u8,
    /// Event sub-type: 1 down, 4 active, others as the interface defines.
    pub(crate) sub_type: u8,
}

fn cap_query(
    cmd: &CmdQueue,
    dev: &device::Device<device::Bound>,
    bar: &Bar0<'_>,
    cur: bool,
) -> Result<KVec<u8>> {
    cap_query_type(cmd, dev, bar, CAP_GENERAL, cur)
}

fn cap_query_type(
    cmd: &CmdQueue,
    dev: &device::Device<device::Bound>,
    bar: &Bar0<'_>,
    ty: u64,
    cur: bool,
) -> Result<KVec<u8>> {
    let q = PlainIn::new().op_mod((ty << 1) | u64::from(cur))?;
    let (_, cap) = cmd.exec_var::<QueryHcaCap>(dev, bar, None, &q, &[], CAP_SIZE)?;
    Ok(cap)
}

/// Writes the fields of `layout` (a prefix of a capability page) back into `page`.
/// TEARDOWN_HCA; `false` (logged as C does) if it failed: the device then keeps its pages, which
/// must not be freed.
fn teardown_hca(cmd: &CmdQueue, dev: &device::Device<device::Bound>, bar: &Bar0<'_>) -> bool {
    let torn_down = TeardownHcaIn::new()
        .profile(0)
        .and_then(|t| cmd.exec::<TeardownHca>(dev, bar, &t));
    if torn_down.is_err() {
        dev_err!(dev, "tear_down_hca failed, skip cleanup\n");
    }
    torn_down.is_ok()
}

fn store_caps(page: &mut [u8], layout: &[u8]) -> Result {
    page.get_mut(..layout.len())
        .ok_or(EINVAL)?
        .copy_from_slice(layout);
    Ok(())
}

impl Hca {
    /// The command queue, for commands run outside the HCA lock.
    pub(crate) fn command_queue(&self) -> Arc<CmdQueue> {
        self.cmd.clone()
    }

    /// Brings the function up to an initialized HCA. On failure after ENABLE_HCA, the pages
    /// already lent are reclaimed and the function disabled, as the C driver does.
    pub(crate) fn bring_up(
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
        state: Arc<DeviceState>,
        cmd_events: Arc<CmdEvents>,
        before_events: &mut dyn FnMut(&HcaCaps) -> Result,
    ) -> Result<Self> {
        let cmd = CmdQueue::new(dev, bar, state)?;
        if let Err(e) = cmd.exec::<EnableHca>(dev, bar, &FunctionIn::new()) {
            dev_err!(dev, "enable hca failed\n");
            return Err(e);
        }
        let mut pages = match FwPages::new() {
            Ok(p) => p,
            Err(e) => {
                let _ = cmd.exec::<DisableHca>(dev, bar, &FunctionIn::new());
                return Err(e);
            }
        };
        let mut initialized = false;
        match Self::init(&cmd, &mut pages, dev, bar, &mut initialized) {
            Ok((caps, board_id)) => {
                let mut hca = Self {
                    cmd,
                    pages,
                    caps,
                    board_id,
                    uar: None,
                    async_eq: None,
                    pages_eq: None,
                    cmd_events,
                };
                // The MSI-X vectors are allocated here, once the capabilities are known and
                // before the first EQ (as C's `mlx5_irq_table_create` in `mlx5_load`).
                match before_events(&hca.caps).and_then(|()| hca.events_up(dev, bar)) {
                    Ok(()) => Ok(hca),
                    Err(e) => {
                        hca.tear_down(dev, bar);
                        Err(e)
                    }
                }
            }
            Err(e) => {
                // After INIT_HCA the device gives its pages back only once torn down.
                if initialized && !teardown_hca(&cmd, dev, bar) {
                    core::mem::forget(pages);
                    return Err(e);
                }
                pages.reclaim_all(&cmd, dev, bar);
                let _ = cmd.exec::<DisableHca>(dev, bar, &FunctionIn::new());
                Err(e)
            }
        }
    }

    /// Everything between ENABLE_HCA and a usable HCA; `initialized` is set once INIT_HCA
    /// succeeded (a failure after it needs TEARDOWN_HCA).
    fn init(
        cmd: &CmdQueue,
        pages: &mut FwPages,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
        initialized: &mut bool,
    ) -> Result<(HcaCaps, [u8; 16])> {
        // ISSI: use 1 when offered, else stay at 0.
        let issi = cmd.exec::<QueryIssi>(dev, bar, &PlainIn::new())?;
        let supported = issi.supported_issi_dw0();
        if supported & 0b10 != 0 {
            cmd.exec::<SetIssi>(dev, bar, &SetIssiIn::new().current_issi(1)?)?;
        } else if supported & 0b1 == 0 && supported != 0 {
            dev_err!(
                dev,
                "firmware supports no ISSI this driver knows ({supported:#x})\n"
            );
            return Err(EOPNOTSUPP);
        }
        pages.satisfy(cmd, dev, bar, PageRequest::Boot)?;

        // Tell the device the host is little-endian (the register is all zeroes then).
        let mut he = AccessRegIn::new();
        he.set_op_mod(0)?;
        he.set_register_id(REG_HOST_ENDIANNESS)?;
        cmd.exec::<AccessReg>(dev, bar, &he)?;

        // General capabilities: current, then maximum; set what the driver needs.
        let mut cur = cap_query(cmd, dev, bar, true)?;
        let max = GeneralCaps::from_bytes(&cap_query(cmd, dev, bar, false)?);
        let mut want = GeneralCaps::from_bytes(&cur);
        want.set_pkey_table_size(0)?; // 128 entries
        want.set_log_max_qp(max.log_max_qp().min(PROFILE_LOG_MAX_QP))?;
        want.set_cmdif_checksum(0)?; // off
        want.set_log_uar_page_sz(0)?; // 4 KiB pages
        store_caps(&mut cur, want.as_bytes())?;
        let set_general = PlainIn::new().op_mod(CAP_GENERAL << 1)?;
        cmd.exec_var::<SetHcaCap>(dev, bar, None, &set_general, &cur, 0)?;

        // Atomics, as the C driver does: read their capabilities (current, then maximum) and,
        // when the device offers it, ask for operands in host byte order.
        let atomic = want.atomic() != 0;
        if atomic {
            let acur = cap_query_type(cmd, dev, bar, CAP_ATOMIC, true)?;
            let _amax = cap_query_type(cmd, dev, bar, CAP_ATOMIC, false)?;
            if AtomicCaps::from_bytes(&acur).supported_atomic_req_8b_endianness_mode_1() != 0 {
                let mut page = KVec::with_capacity(CAP_SIZE, GFP_KERNEL)?;
                page.resize(CAP_SIZE, 0, GFP_KERNEL)?;
                let mut set = AtomicCaps::new();
                set.set_atomic_req_8b_endianness_mode(1)?;
                store_caps(&mut page, set.as_bytes())?;
                let set_atomic = PlainIn::new().op_mod(CAP_ATOMIC << 1)?;
                cmd.exec_var::<SetHcaCap>(dev, bar, None, &set_atomic, &page, 0)?;
            }
        }

        pages.satisfy(cmd, dev, bar, PageRequest::Init)?;
        if let Err(e) = cmd.exec::<InitHca>(dev, bar, &PlainIn::new()) {
            dev_err!(dev, "init hca failed\n");
            return Err(e);
        }
        *initialized = true;

        // As in C: the driver-version capability comes from the capabilities just set.
        if want.driver_version() != 0 {
            let mut v = SetDriverVersionIn::new();
            let text = b"Linux,mlx5_core,7.3.4,rust";
            v.driver_version_mut()[..text.len()].copy_from_slice(text);
            // The C driver ignores the result too.
            let _ = cmd.exec::<SetDriverVersion>(dev, bar, &v);
        }
        let general = cap_query(cmd, dev, bar, true)?;
        let atomic = if atomic {
            cap_query_type(cmd, dev, bar, CAP_ATOMIC, true)?
        } else {
            KVec::new()
        };
        let adapter = cmd.exec::<QueryAdapter>(dev, bar, &PlainIn::new())?;
        let mut board_id = [0u8; 16];
        board_id.copy_from_slice(adapter.vsd_contd_psid());
        Ok((HcaCaps { general, atomic }, board_id))
    }

    /// A UAR for doorbells, then the asynchronous event queue (port changes) and the page
    /// request queue, both on the control vector. They are armed by the first
    /// [`Self::take_events`], once the interrupt handler is in place.
    fn events_up(&mut self, dev: &device::Device<device::Bound>, bar: &Bar0<'_>) -> Result {
        let uar = self.uar.insert(Uar::alloc(&self.cmd, dev, bar)?);
        // The command EQ first; from then on commands complete in event mode, as in C.
        let cmd_eq = EventQueue::create(
            &self.cmd,
            dev,
            bar,
            uar.index(),
            CONTROL_VECTOR,
            1 << EVENT_CMD,
            "cmd",
        )?;
        self.cmd_events.set_eq(cmd_eq);
        self.cmd.use_events(self.cmd_events.clone());
        self.async_eq = Some(EventQueue::create(
            &self.cmd,
            dev,
            bar,
            uar.index(),
            CONTROL_VECTOR,
            (1 << event::PORT_CHANGE) | crate::eq::resources::event::mask(),
            "async",
        )?);
        self.pages_eq = Some(EventQueue::create(
            &self.cmd,
            dev,
            bar,
            uar.index(),
            CONTROL_VECTOR,
            1 << event::PAGE_REQUEST,
            "pages",
        )?);
        Ok(())
    }

    /// Consumes the event queues (at most [`crate::eq::POLL_BUDGET`] entries of each per call)
    /// and re-arms them, always, also after an error. Page requests are answered here; port
    /// changes are returned for the interfaces (which are called without the HCA locked).
    /// Errors are reported here; what was taken before one is still handled.
    pub(crate) fn take_events(
        &mut self,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
    ) -> (KVec<PortEvent>, KVec<Eqe>) {
        let mut eqes = KVec::new();
        for eq in [self.pages_eq.as_mut(), self.async_eq.as_mut()]
            .into_iter()
            .flatten()
        {
            // Each queue is polled (and so re-armed) whatever happened to the other.
            if let Err(e) = eq.poll(bar, &mut eqes) {
                dev_err!(dev, "event queue error: err {}\n", e.to_errno());
            }
        }
        let mut ports = KVec::new();
        let mut resources = KVec::new();
        let mut dropped = 0u32;
        for e in eqes.iter() {
            match e.event_type() as u8 {
                event::PAGE_REQUEST => {
                    let function_id = e.page_function_id();
                    // Two's complement: negative asks for pages back.
                    let num = e.page_num_pages() as u32 as i32;
                    if let Err(err) = self.pages.on_request(&self.cmd, dev, bar, function_id, num) {
                        dev_err!(
                            dev,
                            "page request for {num} pages failed: err {}\n",
                            err.to_errno()
                        );
                    }
                }
                event::PORT_CHANGE => {
                    let p = PortEvent {
                        port: e.port_num() as u8,
                        sub_type: e.event_sub_type() as u8,
                    };
                    if ports.push(p, GFP_KERNEL).is_err() {
                        dropped += 1;
                    }
                }
                ty if ty < 64 && crate::eq::resources::event::mask() & (1u64 << ty) != 0 => {
                    if resources.push(e.clone(), GFP_KERNEL).is_err() {
                        dropped += 1;
                    }
                }
                ty => dev_warn!(dev, "unexpected event type {ty:#x}\n"),
            }
        }
        if dropped != 0 {
            dev_err!(
                dev,
                "{dropped} port or resource event(s) not passed on: out of memory\n"
            );
        }
        (ports, resources)
    }

    /// Tears the HCA down: the event queues and UAR, TEARDOWN_HCA, page reclaim, DISABLE_HCA.
    /// If the teardown command fails, the pages stay with the device and the function stays
    /// enabled (as in C).
    pub(crate) fn tear_down(mut self, dev: &device::Device<device::Bound>, bar: &Bar0<'_>) {
        for eq in [self.pages_eq.take(), self.async_eq.take()]
            .into_iter()
            .flatten()
        {
            eq.destroy(&self.cmd, dev, bar);
        }
        // Back to polling before the command EQ goes.
        self.cmd.use_polling();
        if let Some(eq) = self.cmd_events.take_eq() {
            eq.destroy(&self.cmd, dev, bar);
        }
        if let Some(uar) = self.uar.take() {
            uar.free(&self.cmd, dev, bar);
        }
        if !teardown_hca(&self.cmd, dev, bar) {
            core::mem::forget(self.pages);
            return;
        }
        self.pages.reclaim_all(&self.cmd, dev, bar);
        let _ = self.cmd.exec::<DisableHca>(dev, bar, &FunctionIn::new());
        let (given, reclaimed) = self.pages.totals();
        dev_info!(
            dev,
            "HCA torn down; {given} firmware pages given, {reclaimed} reclaimed\n"
        );
    }

    /// The index of the function's UAR page (C's `mdev->priv.uar`), once the EQs are up.
    pub(crate) fn uar_index(&self) -> Option<u32> {
        self.uar.as_ref().map(|u| u.index())
    }

    /// The board id (PSID) the adapter reported.
    pub(crate) fn board_id(&self) -> &[u8] {
        let end = self
            .board_id
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.board_id.len());
        &self.board_id[..end]
    }

    /// Number of ports and whether they are InfiniBand.
    pub(crate) fn ports(&self) -> (u64, bool) {
        let c = GeneralCaps::from_bytes(&self.caps.general);
        (c.num_ports(), c.port_type() == 0)
    }

    /// The capability pages.
    pub(crate) fn caps(&self) -> &HcaCaps {
        &self.caps
    }

    /// The count of pages the firmware holds, kept up to date (for debugfs).
    pub(crate) fn pages_counter(&self) -> Arc<kernel::sync::atomic::Atomic<u32>> {
        self.pages.held_counter()
    }

    /// Firmware pages the device holds.
    pub(crate) fn pages_outstanding(&self) -> usize {
        self.pages.outstanding()
    }
}
