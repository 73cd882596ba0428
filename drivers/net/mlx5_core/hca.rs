// SPDX-License-Identifier: GPL-2.0

//! Bring-up and teardown of the HCA, in the C driver's order: ENABLE_HCA, ISSI negotiation, boot
//! pages, host endianness, capabilities, init pages, INIT_HCA, driver version, capability and
//! adapter queries, a UAR and the event queues (async events, page requests); and on removal
//! the event queues, TEARDOWN_HCA, page reclaim, DISABLE_HCA.

use crate::cmd_events::{CmdEvents, EVENT_CMD};
use crate::cmdq::CmdQueue;
use crate::eq::{event, EventQueue, Uar};
use crate::health::DeviceState;
use crate::ifc::{layout, set_bits};
use crate::init_segment::Bar0;
use crate::pages::{FwPages, PageRequest};
use crate::status::op;
use kernel::{device, prelude::*, sync::Arc};

/// Size of a capability page.
const CAP_SIZE: usize = 4096;
/// Byte offset of the capability in QUERY_HCA_CAP output and SET_HCA_CAP input.
const CAP_OFFSET: usize = 0x10;
/// Capability type: general device capabilities.
const CAP_GENERAL: u64 = 0;
/// Capability type: atomic operations.
const CAP_ATOMIC: u64 = 3;
/// Atomic capability fields: requester endianness mode (settable) and whether host order
/// (mode 1) is supported.
const ATOMIC_REQ_8B_ENDIANNESS_MODE: (usize, usize) = (0x40, 2);
const ATOMIC_SUPPORTED_MODE_1: (usize, usize) = (0x46, 1);
/// Access register id: host endianness.
const REG_HOST_ENDIANNESS: u64 = 0x7004;
/// The largest `log_max_qp` this driver asks for (the C driver's default profile).
const PROFILE_LOG_MAX_QP: u64 = 18;

layout! {
    /// Input of the commands that carry only a function id (ENABLE_HCA, DISABLE_HCA).
    input FunctionIn[16] {
        opcode: 0x00, 16;
        op_mod: 0x30, 16;
        function_id: 0x50, 16;
    }
    /// Input of commands with nothing but the header.
    input PlainIn[16] {
        opcode: 0x00, 16;
        op_mod: 0x30, 16;
    }
    /// QUERY_ISSI output.
    output QueryIssiOut[0x70] {
        current_issi: 0x50, 16;
        supported_issi_dw0: 0x360, 32;
    }
    /// SET_ISSI input.
    input SetIssiIn[16] {
        opcode: 0x00, 16;
        current_issi: 0x50, 16;
    }
    /// ACCESS_REG input with a 16-byte register.
    input AccessRegIn[0x20] {
        opcode: 0x00, 16;
        op_mod: 0x30, 16;
        register_id: 0x50, 16;
        argument: 0x60, 32;
    }
    /// TEARDOWN_HCA input.
    input TeardownHcaIn[16] {
        opcode: 0x00, 16;
        profile: 0x50, 16;
    }
    /// SET_DRIVER_VERSION input (the version string follows the header).
    input SetDriverVersionIn[0x50] {
        opcode: 0x00, 16;
    }
    /// General capability fields this driver reads or sets (offsets within the page; the
    /// layout covers the page as far as its last field).
    output GeneralCaps[0xa0] {
        log_max_qp: 0x9b, 5;
        pkey_table_size: 0x190, 16;
        port_type: 0x1b6, 2;
        num_ports: 0x1b8, 8;
        atomic: 0x21e, 1;
        cmdif_checksum: 0x210, 2;
        driver_version: 0x261, 1;
        log_uar_page_sz: 0x490, 16;
    }
    /// QUERY_ADAPTER output: the board id.
    output QueryAdapterOut[0x110] {
        ieee_vendor_id: 0x148, 24;
    }
}

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
    let q = PlainIn::new()
        .opcode(op::QUERY_HCA_CAP.into())
        .op_mod((ty << 1) | u64::from(cur));
    let out = cmd.exec(dev, bar, q.as_bytes(), CAP_OFFSET + CAP_SIZE)?;
    let mut cap = KVec::with_capacity(CAP_SIZE, GFP_KERNEL)?;
    cap.extend_from_slice(&out[CAP_OFFSET..CAP_OFFSET + CAP_SIZE], GFP_KERNEL)?;
    Ok(cap)
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
    ) -> Result<Self> {
        let cmd = CmdQueue::new(dev, bar, state)?;
        let enable = FunctionIn::new().opcode(op::ENABLE_HCA.into());
        if let Err(e) = cmd.exec(dev, bar, enable.as_bytes(), 16) {
            dev_err!(dev, "enable hca failed\n");
            return Err(e);
        }
        let mut pages = FwPages::new()?;
        match Self::init(&cmd, &mut pages, dev, bar) {
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
                match hca.events_up(dev, bar) {
                    Ok(()) => Ok(hca),
                    Err(e) => {
                        hca.tear_down(dev, bar);
                        Err(e)
                    }
                }
            }
            Err(e) => {
                pages.reclaim_all(&cmd, dev, bar);
                let disable = FunctionIn::new().opcode(op::DISABLE_HCA.into());
                let _ = cmd.exec(dev, bar, disable.as_bytes(), 16);
                Err(e)
            }
        }
    }

    /// Everything between ENABLE_HCA and a usable HCA.
    fn init(
        cmd: &CmdQueue,
        pages: &mut FwPages,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
    ) -> Result<(HcaCaps, [u8; 16])> {
        // ISSI: use 1 when offered, else stay at 0.
        let q = PlainIn::new().opcode(op::QUERY_ISSI.into());
        let issi =
            QueryIssiOut::from_bytes(&cmd.exec(dev, bar, q.as_bytes(), QueryIssiOut::SIZE)?);
        let supported = issi.supported_issi_dw0();
        if supported & 0b10 != 0 {
            cmd.exec(
                dev,
                bar,
                SetIssiIn::new()
                    .opcode(op::SET_ISSI.into())
                    .current_issi(1)
                    .as_bytes(),
                16,
            )?;
        } else if supported & 0b1 == 0 && supported != 0 {
            dev_err!(
                dev,
                "firmware supports no ISSI this driver knows ({supported:#x})\n"
            );
            return Err(EOPNOTSUPP);
        }
        pages.satisfy(cmd, dev, bar, PageRequest::Boot)?;

        // Tell the device the host is little-endian (the register is all zeroes then).
        let he = AccessRegIn::new()
            .opcode(op::ACCESS_REG.into())
            .op_mod(0)
            .register_id(REG_HOST_ENDIANNESS);
        cmd.exec(dev, bar, he.as_bytes(), 0x20)?;

        // General capabilities: current, then maximum; set what the driver needs.
        let mut cur = cap_query(cmd, dev, bar, true)?;
        let max = GeneralCaps::from_bytes(&cap_query(cmd, dev, bar, false)?);
        set_bits(&mut cur, 0x190, 16, 0); // pkey_table_size: 128 entries
        set_bits(&mut cur, 0x9b, 5, max.log_max_qp().min(PROFILE_LOG_MAX_QP));
        set_bits(&mut cur, 0x210, 2, 0); // cmdif_checksum off
        set_bits(&mut cur, 0x490, 16, 0); // log_uar_page_sz: 4 KiB pages
        let mut set = KVec::with_capacity(CAP_OFFSET + CAP_SIZE, GFP_KERNEL)?;
        set.extend_from_slice(
            PlainIn::new().opcode(op::SET_HCA_CAP.into()).as_bytes(),
            GFP_KERNEL,
        )?;
        set.extend_from_slice(&cur, GFP_KERNEL)?;
        cmd.exec(dev, bar, &set, 16)?;

        // Atomics, as the C driver does: read their capabilities (current, then maximum) and,
        // when the device offers it, ask for operands in host byte order.
        let atomic = GeneralCaps::from_bytes(&cur).atomic() != 0;
        if atomic {
            let acur = cap_query_type(cmd, dev, bar, CAP_ATOMIC, true)?;
            let _amax = cap_query_type(cmd, dev, bar, CAP_ATOMIC, false)?;
            let (bit, width) = ATOMIC_SUPPORTED_MODE_1;
            if crate::ifc::get_bits(&acur, bit, width) != 0 {
                let mut set = KVec::with_capacity(CAP_OFFSET + CAP_SIZE, GFP_KERNEL)?;
                set.extend_from_slice(
                    PlainIn::new()
                        .opcode(op::SET_HCA_CAP.into())
                        .op_mod(CAP_ATOMIC << 1)
                        .as_bytes(),
                    GFP_KERNEL,
                )?;
                set.resize(CAP_OFFSET + CAP_SIZE, 0, GFP_KERNEL)?;
                let (bit, width) = ATOMIC_REQ_8B_ENDIANNESS_MODE;
                set_bits(&mut set[CAP_OFFSET..], bit, width, 1);
                cmd.exec(dev, bar, &set, 16)?;
            }
        }

        pages.satisfy(cmd, dev, bar, PageRequest::Init)?;
        if let Err(e) = cmd.exec(
            dev,
            bar,
            PlainIn::new().opcode(op::INIT_HCA.into()).as_bytes(),
            16,
        ) {
            dev_err!(dev, "init hca failed\n");
            return Err(e);
        }

        // As in C: the driver-version capability comes from the capabilities just set.
        if GeneralCaps::from_bytes(&cur).driver_version() != 0 {
            let mut v = SetDriverVersionIn::new().opcode(op::SET_DRIVER_VERSION.into());
            let text = b"Linux,mlx5_core,7.3.4,rust";
            v.as_bytes_mut()[0x10..0x10 + text.len()].copy_from_slice(text);
            // The C driver ignores the result too.
            let _ = cmd.exec(dev, bar, v.as_bytes(), 16);
        }
        let general = cap_query(cmd, dev, bar, true)?;
        let atomic = if atomic {
            cap_query_type(cmd, dev, bar, CAP_ATOMIC, true)?
        } else {
            KVec::new()
        };
        let q = PlainIn::new().opcode(op::QUERY_ADAPTER.into());
        let adapter = cmd.exec(dev, bar, q.as_bytes(), QueryAdapterOut::SIZE)?;
        let mut board_id = [0u8; 16];
        board_id.copy_from_slice(&adapter[0x100..0x110]);
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
            uar,
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
            uar,
            CONTROL_VECTOR,
            1 << event::PORT_CHANGE,
            "async",
        )?);
        self.pages_eq = Some(EventQueue::create(
            &self.cmd,
            dev,
            bar,
            uar,
            CONTROL_VECTOR,
            1 << event::PAGE_REQUEST,
            "pages",
        )?);
        Ok(())
    }

    /// Consumes the event queues and re-arms them. Page requests are answered here; port
    /// changes are returned for the interfaces (which are called without the HCA locked).
    pub(crate) fn take_events(
        &mut self,
        dev: &device::Device<device::Bound>,
        bar: &Bar0<'_>,
    ) -> Result<KVec<PortEvent>> {
        let mut eqes = KVec::new();
        for eq in [self.pages_eq.as_mut(), self.async_eq.as_mut()]
            .into_iter()
            .flatten()
        {
            eq.poll(bar, &mut eqes)?;
        }
        let mut ports = KVec::new();
        for e in eqes.iter() {
            match e.ty {
                event::PAGE_REQUEST => {
                    let function_id = u16::from_be_bytes([e.data[2], e.data[3]]);
                    let num = i32::from_be_bytes([e.data[4], e.data[5], e.data[6], e.data[7]]);
                    if let Err(err) =
                        self.pages
                            .on_request(&self.cmd, dev, bar, function_id.into(), num)
                    {
                        dev_err!(
                            dev,
                            "page request for {num} pages failed: err {}\n",
                            err.to_errno()
                        );
                    }
                }
                event::PORT_CHANGE => ports.push(
                    PortEvent {
                        port: e.data[8] >> 4,
                        sub_type: e.sub_type,
                    },
                    GFP_KERNEL,
                )?,
                ty => dev_warn!(dev, "unexpected event type {ty:#x}\n"),
            }
        }
        Ok(ports)
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
        let t = TeardownHcaIn::new()
            .opcode(op::TEARDOWN_HCA.into())
            .profile(0);
        if self.cmd.exec(dev, bar, t.as_bytes(), 16).is_err() {
            dev_err!(dev, "tear_down_hca failed, skip cleanup\n");
            core::mem::forget(self.pages);
            return;
        }
        self.pages.reclaim_all(&self.cmd, dev, bar);
        let disable = FunctionIn::new().opcode(op::DISABLE_HCA.into());
        let _ = self.cmd.exec(dev, bar, disable.as_bytes(), 16);
        let (given, reclaimed) = self.pages.totals();
        dev_info!(
            dev,
            "HCA torn down; {given} firmware pages given, {reclaimed} reclaimed\n"
        );
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
