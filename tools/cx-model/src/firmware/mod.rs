//! The firmware behind the command interface: HCA state, pages, capabilities, resources, and the
//! dispatch of each command to its handler.
//!
//! Handlers take the gathered input and return the full output (header included) or a status
//! with a syndrome. Commands the model does not implement answer bad-operation and are logged.

#[cfg(test)]
mod bringup_tests;
pub mod caps;
pub mod datapath;
pub mod eq;
pub mod faults;
pub mod hca;
pub mod mkey;
pub mod objects;
pub mod pages;
pub mod pma;
pub mod port;
pub mod q_counters;
pub mod registers;
pub mod resources;
pub mod sma;

use crate::command::{CommandLog, Status};
use crate::guest_memory::GuestMemory;
use crate::ifc::{self, header, Field};
use crate::init_segment::FwVersion;
use crate::opcodes::{self, opcode_name};
use faults::{Faults, Injected};
use log::{debug, info, warn};

/// What can be chosen about an instance's firmware.
#[derive(Debug, Clone)]
pub struct FirmwareConfig {
    /// Firmware version.
    pub fw: FwVersion,
    /// Number of physical ports (InfiniBand).
    pub ports: u8,
    /// Seed from which GUIDs and the LID derive, so two instances differ.
    pub guid_seed: u64,
    /// Board id (PSID) reported by QUERY_ADAPTER.
    pub psid: String,
    /// MSI-X vectors of the function.
    pub msix_vectors: u16,
    /// A managed fabric: ports come up INIT without a LID and wait for a subnet manager (else
    /// each port configures itself ACTIVE with a LID derived from the seed).
    pub managed: bool,
}

impl Default for FirmwareConfig {
    fn default() -> Self {
        Self {
            fw: FwVersion {
                major: 16,
                minor: 35,
                subminor: 2000,
            },
            ports: 1,
            guid_seed: 0x1,
            psid: "MT_0000000008".into(),
            msix_vectors: crate::pci_config::MSIX_VECTORS,
            managed: false,
        }
    }
}

/// A flood of events the control channel asked for.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EqeFlood {
    /// Events still to post.
    pub remaining: u64,
    /// Events posted so far.
    pub posted: u64,
}

/// A command failure: the status and syndrome the output carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmdError {
    /// Command status.
    pub status: Status,
    /// Syndrome identifying the cause.
    pub syndrome: u32,
}

impl CmdError {
    /// A failure with `status` and `syndrome`.
    pub const fn new(status: Status, syndrome: u32) -> Self {
        Self { status, syndrome }
    }
}

/// Result of a handler: the output (header space included) or a failure.
pub type CmdResult = Result<Vec<u8>, CmdError>;

/// A command's gathered input.
pub struct Input<'a> {
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    /// Wraps the input bytes.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    /// Reads a field (zero past the end).
    pub fn get(&self, f: Field) -> u64 {
        ifc::get(self.bytes, f)
    }

    /// Reads the big-endian 64-bit word at byte `off` (zero past the end).
    pub fn be64(&self, off: usize) -> u64 {
        ifc::get(self.bytes, Field::new(off * 8, 64))
    }

    /// Input length in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the input is empty.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The raw bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Opcode modifier.
    pub fn op_mod(&self) -> u16 {
        self.get(header::OP_MOD) as u16
    }
}

/// What happened to a command.
#[derive(Debug, PartialEq, Eq)]
pub enum Execution {
    /// The command completed with this output (status set) to be written back.
    Complete(Vec<u8>),
    /// The command never completes (an injected fault): the entry stays owned by hardware.
    Hang,
    /// The command completed with this output, to be handed back only after the delay (an
    /// injected fault): the slot stays busy meanwhile.
    Later(Vec<u8>, std::time::Duration),
}

/// Life cycle of the HCA as the driver drives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HcaState {
    /// After reset, before ENABLE_HCA.
    Disabled,
    /// After ENABLE_HCA.
    Enabled,
    /// After INIT_HCA.
    Initialized,
}

/// The firmware of one function.
pub struct Firmware {
    /// Instance configuration.
    pub config: FirmwareConfig,
    /// HCA state.
    pub state: HcaState,
    /// Interface step-sequence id the driver chose.
    pub issi: u16,
    /// Pages the driver gave.
    pub pages: pages::PageBank,
    /// Capabilities (current and maximum).
    pub caps: caps::Caps,
    /// Allocated UAR indices.
    pub uars: resources::IdPool,
    /// Protection domains.
    pub pds: resources::IdPool,
    /// Transport domains.
    pub tds: resources::IdPool,
    /// Event queues.
    pub eqs: eq::EqTable,
    /// Memory keys, CQs, QPs, SRQs, XRC domains.
    pub objects: objects::Objects,
    /// Node and port identity and state.
    pub node: port::Node,
    /// Work queue progress, completions, packets in flight, counters.
    pub datapath: datapath::DataPath,
    /// Queue counter sets (Q counters).
    pub q_counters: q_counters::QCounters,
    /// Fault injection.
    pub faults: Faults,
    /// Commands seen.
    pub log: CommandLog,
    /// MSI-X vectors to fire after the current operation.
    pub irqs: Vec<u16>,
    /// An event flood in progress (control `eqe-flood`).
    pub flood: EqeFlood,
    /// A fatal error (health "recovery required") stopped the device: it executes no more work
    /// requests and writes no more completions, events or data into guest memory, so that a
    /// driver may free what the device pointed to (C frees its queues with faked destroy
    /// commands then). A reset starts it again.
    pub halted: bool,
    /// The transaction id of the last trap the port agents sent.
    pub trap_tid: u32,
}

impl Firmware {
    /// Firmware fresh from reset.
    pub fn new(config: FirmwareConfig) -> Self {
        let caps = caps::Caps::new(&config);
        let node = port::Node::new(&config);
        Self {
            node,
            objects: objects::Objects::default(),
            datapath: datapath::DataPath::default(),
            q_counters: q_counters::QCounters::default(),
            config,
            state: HcaState::Disabled,
            issi: 0,
            pages: pages::PageBank::default(),
            flood: EqeFlood::default(),
            caps,
            uars: resources::IdPool::new(resources::FIRST_UAR, 1 << 16),
            pds: resources::IdPool::new(1, 1 << 24),
            tds: resources::IdPool::new(1, 1 << 24),
            eqs: eq::EqTable::default(),
            faults: Faults::default(),
            log: CommandLog::default(),
            irqs: Vec::new(),
            halted: false,
            trap_tid: 0,
        }
    }

    /// Function-level reset: everything the driver set up is forgotten, including the pages it
    /// gave (a reset hands them back implicitly).
    pub fn reset(&mut self) {
        let pages = self.pages.outstanding();
        if pages != 0 {
            info!("reset with {pages} firmware pages still held; they are dropped");
        }
        let faults = std::mem::take(&mut self.faults);
        let log = std::mem::take(&mut self.log);
        let wire = self.datapath.wire;
        *self = Self::new(self.config.clone());
        self.datapath.wire = wire;
        self.faults = faults;
        self.log = log;
    }

    /// Runs one command.
    pub fn execute(&mut self, mem: &mut dyn GuestMemory, input: &[u8]) -> Execution {
        let input = Input::new(input);
        let op = input.get(header::OPCODE) as u16;
        let name = opcode_name(op).unwrap_or("UNKNOWN");
        let injected = self.faults.on_command(op);
        let delay = match injected {
            Some(Injected::Delay(ms)) => {
                warn!("fault: {name}({op:#x}) completes in {ms} ms");
                Some(std::time::Duration::from_millis(u64::from(ms)))
            }
            _ => None,
        };
        let result = match injected {
            Some(Injected::Hang) => {
                warn!("fault: {name}({op:#x}) will never complete");
                self.log.record(op, input.op_mod(), true);
                return Execution::Hang;
            }
            Some(Injected::Status(status, syndrome)) => {
                warn!("fault: {name}({op:#x}) answered with status {status:#x} syndrome {syndrome:#x}");
                Err(CmdError::new(
                    Status::from_u8(status).unwrap_or(Status::InternalError),
                    syndrome,
                ))
            }
            Some(Injected::Delay(_)) | None if input.len() < header::LEN => {
                Err(CmdError::new(Status::BadInputLength, 0x1e0_0000))
            }
            Some(Injected::Delay(_)) | None => match self.dispatch(mem, op, &input) {
                Some(r) => r,
                None => {
                    warn!(
                        "command {name}({op:#x}) op_mod {:#x}: not implemented, answering bad operation",
                        input.op_mod()
                    );
                    self.log.record(op, input.op_mod(), false);
                    return Execution::Complete(failure(CmdError::new(
                        Status::BadOperation,
                        crate::command::not_implemented_syndrome(op),
                    )));
                }
            },
        };
        self.log.record(op, input.op_mod(), true);
        let out = match result {
            Ok(mut out) => {
                if out.len() < header::LEN {
                    out.resize(header::LEN, 0);
                }
                ifc::set(&mut out, header::STATUS, 0);
                debug!("command {name}({op:#x}) op_mod {:#x}: ok", input.op_mod());
                out
            }
            Err(e) => {
                info!(
                    "command {name}({op:#x}) op_mod {:#x}: status {:#x} syndrome {:#x}",
                    input.op_mod(),
                    e.status as u8,
                    e.syndrome
                );
                failure(e)
            }
        };
        match delay {
            Some(d) => Execution::Later(out, d),
            None => Execution::Complete(out),
        }
    }

    /// The handler for `op`, run; `None` if the model does not implement it.
    fn dispatch(&mut self, mem: &mut dyn GuestMemory, op: u16, input: &Input) -> Option<CmdResult> {
        use opcodes::op;
        let handler = handler(op)?;
        if self.state == HcaState::Disabled && op != op::ENABLE_HCA && op != op::QUERY_ISSI {
            return Some(Err(CmdError::new(Status::BadSystemState, 0x5e0_0001)));
        }
        Some(handler(self, mem, input))
    }

    /// Posts an event to the queue that takes its type, queueing the interrupt if one is due.
    pub fn post_event(&mut self, mem: &mut dyn GuestMemory, ty: u8, sub_type: u8, data: &[u8]) {
        if self.halted {
            debug!("event type {ty:#x} not posted: the device is halted");
            return;
        }
        if let Some(v) = self.eqs.post(mem, ty, sub_type, data) {
            self.irqs.push(v);
        }
    }

    /// Starts a flood of `n` PORT_CHANGE events (sub-type 0, which drivers ignore): as many as
    /// the queue has room for now, the rest as the driver consumes them (each EQ doorbell refills
    /// the queue), as a device with a burst of events to report would. Returns how many were
    /// posted at once.
    pub fn start_flood(&mut self, mem: &mut dyn GuestMemory, n: u64) -> u64 {
        self.flood.remaining += n;
        let before = self.flood.posted;
        self.fill_flood(mem);
        self.flood.posted - before
    }

    /// Posts flood events while the queue that takes them has room.
    fn fill_flood(&mut self, mem: &mut dyn GuestMemory) {
        while self.flood.remaining > 0 && self.eqs.room(eq::event::PORT_CHANGE) > 0 {
            let mut data = [0u8; 28];
            data[8] = 1 << 4; // port 1
            self.post_event(mem, eq::event::PORT_CHANGE, 0, &data);
            self.flood.remaining -= 1;
            self.flood.posted += 1;
        }
    }

    /// A doorbell write of `data` (big-endian, 4 or 8 bytes) into UAR page `uar` at `offset`.
    pub fn uar_write(&mut self, mem: &mut dyn GuestMemory, uar: u32, offset: u64, data: &[u8]) {
        if self.halted {
            debug!("UAR {uar} doorbell at {offset:#x} ignored: the device is halted");
            return;
        }
        let word = |i: usize| {
            data.get(i..i + 4)
                .map_or(0, |w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
        };
        match offset {
            eq::DOORBELL_ARM | eq::DOORBELL_UPDATE => {
                if let Some(v) = self.eqs.doorbell(uar, offset, word(0)) {
                    self.irqs.push(v);
                }
                if self.flood.remaining > 0 {
                    self.fill_flood(mem);
                }
            }
            CQ_DOORBELL if data.len() == 8 => {
                // Arm request: sequence number, command and consumer index, then the CQ number.
                let (cmd, cqn) = (word(0), word(4) & 0x00ff_ffff);
                debug!("CQ {cqn:#x} arm request {cmd:#010x}");
                datapath::arm_cq(self, mem, cqn, cmd & 0x00ff_ffff);
            }
            BF_OFFSET..=BF_END if data.len() == 8 => {
                // Send doorbell: the first eight bytes of the WQE's control segment.
                let qpn = word(4) >> 8;
                datapath::send_doorbell(self, mem, qpn);
            }
            _ => warn!("UAR {uar} write at {offset:#x} <- {data:02x?}: not implemented"),
        }
    }
}

/// A command handler.
type Handler = fn(&mut Firmware, &mut dyn GuestMemory, &Input) -> CmdResult;

/// The handler of each command the model implements.
fn handler(op: u16) -> Option<Handler> {
    use opcodes::op;
    Some(match op {
        op::ENABLE_HCA => |fw, _, i| hca::enable_hca(fw, i),
        op::DISABLE_HCA => |fw, _, i| hca::disable_hca(fw, i),
        op::QUERY_ISSI => |fw, _, i| hca::query_issi(fw, i),
        op::SET_ISSI => |fw, _, i| hca::set_issi(fw, i),
        op::INIT_HCA => |fw, _, i| hca::init_hca(fw, i),
        op::TEARDOWN_HCA => |fw, _, i| hca::teardown_hca(fw, i),
        op::SET_DRIVER_VERSION => |fw, _, i| hca::set_driver_version(fw, i),
        op::QUERY_ADAPTER => |fw, _, i| hca::query_adapter(fw, i),
        op::NOP => |_, _, _| Ok(vec![0; header::LEN]),
        op::QUERY_PAGES => |fw, _, i| pages::query_pages(fw, i),
        op::MANAGE_PAGES => |fw, m, i| pages::manage_pages(fw, m, i),
        op::QUERY_HCA_CAP => |fw, _, i| caps::query_hca_cap(fw, i),
        op::SET_HCA_CAP => |fw, _, i| caps::set_hca_cap(fw, i),
        op::ACCESS_REG => |fw, _, i| registers::access_reg(fw, i),
        op::ALLOC_UAR => |fw, _, i| resources::alloc_uar(fw, i),
        op::DEALLOC_UAR => |fw, _, i| resources::dealloc_uar(fw, i),
        op::ALLOC_PD => |fw, _, i| resources::alloc_pd(fw, i),
        op::DEALLOC_PD => |fw, _, i| resources::dealloc_pd(fw, i),
        op::ALLOC_TRANSPORT_DOMAIN => |fw, _, i| resources::alloc_transport_domain(fw, i),
        op::DEALLOC_TRANSPORT_DOMAIN => |fw, _, i| resources::dealloc_transport_domain(fw, i),
        op::CREATE_EQ => |fw, _, i| eq::create_eq(fw, i),
        op::DESTROY_EQ => |fw, _, i| eq::destroy_eq(fw, i),
        op::MAD_IFC => |fw, m, i| port::mad_ifc(fw, m, i),
        op::QUERY_HCA_VPORT_CONTEXT => |fw, _, i| port::query_hca_vport_context(fw, i),
        op::QUERY_VPORT_STATE => |fw, _, i| port::query_vport_state(fw, i),
        op::ALLOC_XRCD => |fw, _, i| objects::alloc_xrcd(fw, i),
        op::DEALLOC_XRCD => |fw, _, i| objects::dealloc_xrcd(fw, i),
        op::CREATE_MKEY => |fw, _, i| objects::create_mkey(fw, i),
        op::DESTROY_MKEY => |fw, _, i| objects::destroy_mkey(fw, i),
        op::CREATE_CQ => |fw, _, i| objects::create_cq(fw, i),
        op::DESTROY_CQ => |fw, _, i| objects::destroy_cq(fw, i),
        op::MODIFY_CQ => |fw, m, i| datapath::modify_cq(fw, m, i),
        op::CREATE_QP => |fw, _, i| objects::create_qp(fw, i),
        op::DESTROY_QP => |fw, _, i| objects::destroy_qp(fw, i),
        op::QUERY_QP => |fw, _, i| objects::query_qp(fw, i),
        op::ATTACH_TO_MCG => |fw, _, i| datapath::attach_to_mcg(fw, i),
        op::DETACH_FROM_MCG => |fw, _, i| datapath::detach_from_mcg(fw, i),
        op::CREATE_XRC_SRQ => |fw, _, i| objects::create_srq(fw, objects::Kind::XrcSrq, i),
        op::DESTROY_XRC_SRQ => |fw, _, i| objects::destroy_kind(fw, objects::Kind::XrcSrq, i),
        op::CREATE_SRQ => |fw, _, i| objects::create_srq(fw, objects::Kind::Srq, i),
        op::DESTROY_SRQ => |fw, _, i| objects::destroy_kind(fw, objects::Kind::Srq, i),
        op::CREATE_RMP => |fw, _, i| objects::create_rmp(fw, i),
        op::MODIFY_RMP => |fw, _, i| objects::modify_rmp(fw, i),
        op::DESTROY_RMP => |fw, _, i| objects::destroy_kind(fw, objects::Kind::Rmp, i),
        op::QUERY_RMP => |fw, _, i| objects::query_rmp(fw, i),
        op::ALLOC_Q_COUNTER => |fw, _, i| q_counters::alloc_q_counter(fw, i),
        op::DEALLOC_Q_COUNTER => |fw, _, i| q_counters::dealloc_q_counter(fw, i),
        op::QUERY_Q_COUNTER => |fw, _, i| q_counters::query_q_counter(fw, i),
        _ if objects::transition(op).is_some() => |fw, m, i| {
            let out = objects::modify_qp(fw, i)?;
            let qpn = i.get(objects::NUMBER) as u32;
            if let Some(state) = fw.objects.get(objects::Kind::Qp, qpn).map(|q| q.qp_state) {
                datapath::qp_modified(fw, m, qpn, state);
            }
            Ok(out)
        },
        _ => return None,
    })
}

/// UAR offset of the CQ arm doorbell.
const CQ_DOORBELL: u64 = 0x20;
/// UAR offsets of the send doorbell (BlueFlame) registers.
const BF_OFFSET: u64 = 0x800;
const BF_END: u64 = 0xfff;

/// The output of a failed command: the header with status and syndrome.
pub fn failure(e: CmdError) -> Vec<u8> {
    let mut out = vec![0u8; header::LEN];
    ifc::set(&mut out, header::STATUS, e.status as u64);
    ifc::set(&mut out, header::SYNDROME, u64::from(e.syndrome));
    out
}

/// A zeroed output of `len` bytes.
pub fn output(len: usize) -> Vec<u8> {
    vec![0u8; len.max(header::LEN)]
}
