// SPDX-License-Identifier: GPL-2.0

//! The files of `/dev/infiniband/umadN` (C's `umad_fops`) and `issmN` (C's `umad_sm_fops`).
//!
//! A `umadN` file holds up to 32 agents, registered with the `REGISTER_AGENT` ioctls; write()
//! sends one MAD through one of them, read() returns one received MAD, or a send that got no
//! response (status `ETIMEDOUT`), each after the user header. Every check, and its errno, is
//! C's. An `issmN` file only marks the port as having a subnet manager while it is open.

use crate::{
    hdr::{self, UmadHdr, HDR_NEW, HDR_OLD},
    port::UmadPort,
};
use ib_core::{
    attrs::Gid,
    chardev::open_files::OpenFile,
    mad::agent::{self, MadRegReq, USER_RMPP},
    mad::rmpp,
    mad::types::{get32, hdr as mh, Mad, MAD_HDR_SIZE, MAD_SIZE},
    mad::{MadAgent, MadHandler, MadSend, ReceivedMad, SendDone},
    verbs::types::{AhAttr, GlobalRoute, QpType},
    verbs::wr::WcStatus,
};
use kernel::{
    chrdev::FileOperations,
    fs::{file::flags::O_NONBLOCK, File},
    new_mutex, new_poll_condvar,
    prelude::*,
    sync::{
        poll::{PollCondVar, PollTable},
        Arc, Mutex,
    },
    uaccess::{UserPtr, UserSlice, UserSliceWriter},
};

/// Agents per file (`IB_UMAD_MAX_AGENTS`).
const MAX_AGENTS: usize = 32;
/// Received MADs a file queues at most (`MAX_UMAD_RECV_LIST_SIZE`).
const MAX_RECV_LIST: usize = 200_000;
/// `ETIMEDOUT`, the status of a send that got no response.
const STATUS_ETIMEDOUT: u32 = 110;
/// `IsSM` in the port capability mask (`IB_PORT_SM`).
const PORT_SM: u32 = 1 << 1;

/// The ioctls (`IB_USER_MAD_*`, magic 0x1b).
mod ioc {
    /// `_IOWR(0x1b, 1, struct ib_user_mad_reg_req)`.
    pub(super) const REGISTER_AGENT: u32 = 0xc01c_1b01;
    /// `_IOW(0x1b, 2, __u32)`.
    pub(super) const UNREGISTER_AGENT: u32 = 0x4004_1b02;
    /// `_IO(0x1b, 3)`.
    pub(super) const ENABLE_PKEY: u32 = 0x0000_1b03;
    /// `_IOWR(0x1b, 4, struct ib_user_mad_reg_req2)`.
    pub(super) const REGISTER_AGENT2: u32 = 0xc028_1b04;
}

/// Something read() returns (always boxed, so the variants' sizes do not matter).
#[expect(clippy::large_enum_variant, reason = "packets are boxed one by one")]
enum Packet {
    /// A received MAD, or an RMPP message: its first segment, and the data of the others
    /// (the header's length says how much of it there is).
    Recv {
        hdr: UmadHdr,
        mad: Mad,
        more: KVec<u8>,
    },
    /// A send that got no response: its header and the MAD's common header.
    Timeout {
        hdr: UmadHdr,
        head: [u8; MAD_HDR_SIZE],
    },
}

/// A send in flight, for the duplicate check and its timeout report.
struct Sent {
    context: u64,
    hdr: UmadHdr,
    head: [u8; MAD_HDR_SIZE],
}

impl Sent {
    fn tid(&self) -> u64 {
        ib_core::mad::types::get64(&self.head, mh::TID)
    }

    fn is_response(&self) -> bool {
        let mut m = [0u8; MAD_SIZE];
        m[..MAD_HDR_SIZE].copy_from_slice(&self.head);
        agent::is_response(&m)
    }
}

/// The state of a `umadN` file under its lock.
struct Inner {
    agents: [Option<Arc<MadAgent>>; MAX_AGENTS],
    /// Each agent's `REGISTER_AGENT2` flags (`USER_RMPP`: user space does RMPP itself).
    agent_flags: [u32; MAX_AGENTS],
    recv: KVec<KBox<Packet>>,
    sends: KVec<Sent>,
    use_pkey_index: bool,
    already_used: bool,
    agents_dead: bool,
    next_context: u64,
}

impl Inner {
    /// A new file's: no agents, the old header.
    fn new() -> Self {
        Self {
            agents: [const { None }; MAX_AGENTS],
            agent_flags: [0; MAX_AGENTS],
            recv: KVec::new(),
            sends: KVec::new(),
            use_pkey_index: false,
            already_used: false,
            agents_dead: false,
            next_context: 0,
        }
    }

    /// `ENABLE_PKEY`: `EINVAL` once an agent was registered.
    fn enable_pkey(&mut self) -> Result {
        if self.already_used {
            return Err(EINVAL);
        }
        self.use_pkey_index = true;
        Ok(())
    }

    /// The agent `UNREGISTER_AGENT` names, taken out of its slot: an id past the slots or of
    /// an empty one is `EINVAL`.
    fn take_agent(&mut self, id: usize) -> Result<Option<Arc<MadAgent>>> {
        if id >= MAX_AGENTS || self.agent(id).is_none() {
            return Err(EINVAL);
        }
        Ok(self.agents.get_mut(id).and_then(|a| a.take()))
    }

    /// The agent write() sends through: `EIO` when its slot is empty.
    fn sender(&self, id: usize) -> Result<Arc<MadAgent>> {
        self.agent(id).cloned().ok_or(EIO)
    }

    fn hdr_size(&self) -> usize {
        if self.use_pkey_index {
            HDR_NEW
        } else {
            HDR_OLD
        }
    }

    /// The agent in slot `id` (none once the file's agents are dead).
    fn agent(&self, id: usize) -> Option<&Arc<MadAgent>> {
        if self.agents_dead {
            return None;
        }
        self.agents.get(id)?.as_ref()
    }
}

/// A `umadN` file's state, shared with its agents' handlers.
#[pin_data]
pub(crate) struct UmadFileState {
    port: Arc<UmadPort>,
    #[pin]
    inner: Mutex<Inner>,
    #[pin]
    readable: PollCondVar,
}

impl UmadFileState {
    /// Queues `p` for read() if `agent` is still one of the file's agents (its slot becomes
    /// the header's id); received MADs are dropped past the queue's limit.
    fn queue(&self, agent: &MadAgent, mut p: KBox<Packet>, is_recv: bool) {
        let mut inner = self.inner.lock();
        if is_recv && inner.recv.len() > MAX_RECV_LIST {
            return;
        }
        let Some(id) =
            (0..MAX_AGENTS).find(|&i| inner.agent(i).is_some_and(|a| core::ptr::eq(&**a, agent)))
        else {
            return;
        };
        match &mut *p {
            Packet::Recv { hdr, .. } | Packet::Timeout { hdr, .. } => hdr.id = id as u32,
        }
        if inner.recv.push(p, GFP_KERNEL).is_ok() {
            self.readable.notify_all();
        }
    }
}

impl OpenFile for UmadFileState {
    /// The port is removed (C's part of `ib_umad_kill_port` for one file): the agents are
    /// unregistered, readers woken.
    fn device_gone(&self) {
        let agents = {
            let mut inner = self.inner.lock();
            inner.agents_dead = true;
            core::mem::replace(&mut inner.agents, [const { None }; MAX_AGENTS])
        };
        self.readable.notify_all();
        for a in agents.iter().flatten() {
            a.unregister();
        }
    }
}

/// The handler of a file's agents (C's `send_handler` and `recv_handler`).
struct AgentHandler {
    file: Arc<UmadFileState>,
}

impl MadHandler for AgentHandler {
    fn recv(&self, agent: &Arc<MadAgent>, r: KBox<ReceivedMad>) {
        let hdr_size = self.file.inner.lock().hdr_size();
        let mut h = UmadHdr {
            length: (hdr_size + r.mad_len) as u32,
            qpn: r.wc.src_qp,
            lid: r.wc.slid,
            sl: r.wc.sl,
            path_bits: r.wc.dlid_path_bits,
            pkey_index: r.wc.pkey_index,
            ..UmadHdr::default()
        };
        if let Some(g) = &r.grh {
            // C's `ib_init_ah_attr_from_wc`: the sender's GID, its flow label and traffic
            // class, the largest hop limit.
            let flow = get32(g, 0);
            h.grh_present = 1;
            h.gid.copy_from_slice(&g[8..24]);
            h.flow_label = flow & 0xf_ffff;
            h.traffic_class = ((flow >> 20) & 0xff) as u8;
            h.hop_limit = 0xff;
        }
        let r = KBox::into_inner(r);
        let (mad, more) = (r.mad, r.rmpp_data);
        if let Ok(p) = KBox::new(Packet::Recv { hdr: h, mad, more }, GFP_KERNEL) {
            self.file.queue(agent, p, true);
        }
    }

    fn send_done(&self, agent: &Arc<MadAgent>, d: SendDone) {
        let sent = {
            let mut inner = self.file.inner.lock();
            match inner.sends.iter().position(|s| s.context == d.context) {
                Some(i) => inner.sends.remove(i).ok(),
                None => None,
            }
        };
        let Some(s) = sent else {
            return;
        };
        if d.status == WcStatus::RespTimeoutErr {
            let mut hdr = s.hdr;
            hdr.status = STATUS_ETIMEDOUT;
            let mut head = [0u8; MAD_HDR_SIZE];
            head.copy_from_slice(&d.mad[..MAD_HDR_SIZE]);
            if let Ok(p) = KBox::new(Packet::Timeout { hdr, head }, GFP_KERNEL) {
                self.file.queue(agent, p, false);
            }
        }
    }
}

/// What an open `umadN` file holds.
pub(crate) struct UmadFile {
    state: Arc<UmadFileState>,
}

impl Drop for UmadFile {
    /// C's `ib_umad_close`: queued packets are freed, the agents unregistered.
    fn drop(&mut self) {
        let agents = {
            let mut inner = self.state.inner.lock();
            let dead = inner.agents_dead;
            inner.agents_dead = true;
            inner.recv.clear();
            let agents = core::mem::replace(&mut inner.agents, [const { None }; MAX_AGENTS]);
            if dead {
                None
            } else {
                Some(agents)
            }
        };
        for a in agents.iter().flatten().flatten() {
            a.unregister();
        }
        self.state.port.remove_file(&*self.state);
    }
}

fn user_read<const N: usize>(arg: usize) -> Result<[u8; N]> {
    let mut raw = [0u8; N];
    UserSlice::new(UserPtr::from_addr(arg), N)
        .reader()
        .read_slice(&mut raw)?;
    Ok(raw)
}

fn user_write(arg: usize, data: &[u8]) -> Result {
    UserSlice::new(UserPtr::from_addr(arg), data.len())
        .writer()
        .write_slice(data)
}

impl UmadFile {
    /// `REGISTER_AGENT` (`reg2` false: `struct ib_user_mad_reg_req`, 28 bytes) and
    /// `REGISTER_AGENT2` (40 bytes), C's `ib_umad_reg_agent` and `ib_umad_reg_agent2`.
    fn register(&self, arg: usize, reg2: bool) -> Result<isize> {
        let st = &self.state;
        let mut inner = st.inner.lock();
        let ib = st.port.ib_device().ok_or(EPIPE)?;
        let req = if reg2 {
            RegRequest::decode2(&user_read(arg)?)
        } else {
            RegRequest::decode(&user_read(arg)?)
        };
        match req.check() {
            Ok(()) => {}
            Err(Refused::Flags) => {
                user_write(arg + 12, &USER_RMPP.to_ne_bytes())?;
                return Err(EINVAL);
            }
            Err(r) => return Err(r.into()),
        }
        let id = (0..MAX_AGENTS)
            .find(|&i| inner.agent(i).is_none())
            .ok_or(ENOMEM)?;
        let reg = req.agent_request()?;
        let handler: Arc<dyn MadHandler> = Arc::new(AgentHandler { file: st.clone() }, GFP_KERNEL)?;
        let agent = MadAgent::register(
            &ib,
            st.port.port_num(),
            req.qp_type(),
            reg.as_ref(),
            req.rmpp_version,
            req.flags & USER_RMPP,
            handler,
        )?;
        let id_at = arg;
        if let Err(e) = user_write(id_at, &(id as u32).to_ne_bytes()) {
            drop(inner);
            agent.unregister();
            return Err(e);
        }
        if !inner.already_used {
            inner.already_used = true;
            if reg2 {
                inner.use_pkey_index = true;
            } else if !inner.use_pkey_index {
                pr_warn!("process did not enable P_Key index support.\n");
            }
        }
        let Inner {
            agents,
            agent_flags,
            ..
        } = &mut *inner;
        if let (Some(a), Some(f)) = (agents.get_mut(id), agent_flags.get_mut(id)) {
            *a = Some(agent);
            *f = req.flags;
        }
        Ok(0)
    }

    /// `UNREGISTER_AGENT` (C's `ib_umad_unreg_agent`).
    fn unregister(&self, arg: usize) -> Result<isize> {
        let raw: [u8; 4] = user_read(arg)?;
        let id = u32::from_ne_bytes(raw) as usize;
        let agent = self.state.inner.lock().take_agent(id)?;
        if let Some(a) = agent {
            a.unregister();
        }
        Ok(0)
    }

    /// One MAD from user space (C's `ib_umad_write`).
    fn send(&self, buf: usize, count: usize) -> Result<usize> {
        let st = &self.state;
        let hdr_size = st.inner.lock().hdr_size();
        room(count, hdr_size + hdr::RMPP_HDR)?;
        let mut raw = [0u8; HDR_NEW];
        let mut reader = UserSlice::new(UserPtr::from_addr(buf), count).reader();
        reader.read_slice(&mut raw[..hdr_size])?;
        let h = UmadHdr::decode(&raw, hdr_size == HDR_NEW);
        let slot = agent_slot(&h)?;
        let mut mad = KBox::new([0u8; MAD_SIZE], GFP_KERNEL)?;
        reader.read_slice(&mut mad[..hdr::RMPP_HDR])?;
        let mut inner = st.inner.lock();
        let agent = inner.sender(slot)?;
        let ah = AhAttr {
            dlid: h.lid,
            sl: h.sl,
            src_path_bits: h.path_bits,
            static_rate: 0,
            port_num: st.port.port_num() as u8,
            grh: (h.grh_present != 0).then_some(GlobalRoute {
                dgid: Gid(h.gid),
                flow_label: h.flow_label,
                sgid_index: h.gid_index,
                hop_limit: h.hop_limit,
                traffic_class: h.traffic_class,
                roce_dmac: None,
            }),
        };
        let flags = inner.agent_flags.get(slot).copied().unwrap_or(0);
        let written = count.checked_sub(hdr_size).ok_or(EINVAL)?;
        let (len, rmpp_len) = mad_len(&mad, written, agent.rmpp_version(), flags)?;
        reader.read_slice(&mut mad[hdr::RMPP_HDR..len])?;
        let rmpp_data = match rmpp_len {
            Some(n) => {
                // The RMPP header is the kernel's, not the user's (C's `ib_create_send_mad`
                // writes it, then only the common and class headers are copied in): the
                // agent's version, a DATA segment, active; the segments get their numbers
                // and lengths as they go.
                mad[rmpp::rhdr::VERSION..rmpp::RMPP_HDR].fill(0);
                mad[rmpp::rhdr::VERSION] = agent.rmpp_version();
                mad[rmpp::rhdr::TYPE] = rmpp::kind::DATA;
                mad[rmpp::rhdr::RTIME_FLAGS] = rmpp::flag::ACTIVE;
                let mut data = KVec::from_elem(0u8, n, GFP_KERNEL)?;
                reader.read_slice(&mut data)?;
                data
            }
            None => KVec::new(),
        };
        stamp_tid(&mut mad, agent.hi_tid());
        let mut head = [0u8; MAD_HDR_SIZE];
        head.copy_from_slice(&mad[..MAD_HDR_SIZE]);
        let sent = Sent {
            context: inner.next_context,
            hdr: h,
            head,
        };
        if is_duplicate(&inner.sends, &sent) {
            return Err(EINVAL);
        }
        inner.next_context += 1;
        let context = sent.context;
        inner.sends.push(sent, GFP_KERNEL)?;
        let s = MadSend {
            mad,
            ah,
            remote_qpn: h.qpn,
            pkey_index: h.pkey_index,
            timeout_ms: h.timeout_ms,
            retries: h.retries,
            context,
            rmpp_data,
        };
        if let Err(e) = agent.send(s) {
            if let Some(i) = inner.sends.iter().position(|x| x.context == context) {
                let _ = inner.sends.remove(i);
            }
            return Err(e);
        }
        Ok(count)
    }
}

/// A registration request as user space sent it (`struct ib_user_mad_reg_req` or
/// `ib_user_mad_reg_req2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RegRequest {
    qpn: u32,
    mgmt_class: u8,
    class_version: u8,
    /// The OUI, in its low 24 bits (`REGISTER_AGENT2`: as given, any 32).
    oui: u32,
    method_mask: [u64; 2],
    rmpp_version: u8,
    /// `REGISTER_AGENT2`'s flags (0 for `REGISTER_AGENT`).
    flags: u32,
    reg2: bool,
}

/// Why a registration request is refused before a slot is looked for (`EINVAL` either way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refused {
    /// A QP number above 1.
    Qpn,
    /// A flag other than `USER_RMPP`: the known flags are written back first.
    Flags,
}

impl From<Refused> for Error {
    fn from(_: Refused) -> Error {
        EINVAL
    }
}

fn ne64(r: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&r[at..at + 8]);
    u64::from_ne_bytes(b)
}

fn ne32(r: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&r[at..at + 4]);
    u32::from_ne_bytes(b)
}

impl RegRequest {
    /// `struct ib_user_mad_reg_req` (28 bytes): the QP number, class and version, OUI and
    /// RMPP version are bytes, the method mask four host-order words.
    fn decode(r: &[u8; 28]) -> Self {
        Self {
            qpn: u32::from(r[20]),
            mgmt_class: r[21],
            class_version: r[22],
            oui: u32::from_be_bytes([0, r[23], r[24], r[25]]),
            method_mask: [ne64(r, 4), ne64(r, 12)],
            rmpp_version: r[26],
            flags: 0,
            reg2: false,
        }
    }

    /// `struct ib_user_mad_reg_req2` (40 bytes), host-order words.
    fn decode2(r: &[u8; 40]) -> Self {
        Self {
            qpn: ne32(r, 4),
            mgmt_class: r[8],
            class_version: r[9],
            oui: ne32(r, 32),
            method_mask: [ne64(r, 16), ne64(r, 24)],
            rmpp_version: r[36],
            flags: ne32(r, 12),
            reg2: true,
        }
    }

    /// C's checks before a slot is looked for: the QP number, then the flags.
    fn check(&self) -> core::result::Result<(), Refused> {
        if self.qpn > 1 {
            return Err(Refused::Qpn);
        }
        if self.flags & !USER_RMPP != 0 {
            return Err(Refused::Flags);
        }
        Ok(())
    }

    /// What the agent registers for once it has a slot: `None` for a send-only agent (class
    /// 0), which cannot do RMPP itself (`EINVAL`); `REGISTER_AGENT2`'s OUI must fit 24 bits
    /// (`EINVAL`).
    fn agent_request(&self) -> Result<Option<MadRegReq>> {
        if self.mgmt_class == 0 {
            if self.flags & USER_RMPP != 0 {
                return Err(EINVAL);
            }
            return Ok(None);
        }
        if self.reg2 && self.oui & 0xff00_0000 != 0 {
            return Err(EINVAL);
        }
        let o = self.oui.to_be_bytes();
        Ok(Some(MadRegReq {
            mgmt_class: self.mgmt_class,
            class_version: self.class_version,
            oui: [o[1], o[2], o[3]],
            method_mask: self.method_mask,
        }))
    }

    /// QP1 is the GSI's, QP0 the SMI's.
    fn qp_type(&self) -> QpType {
        if self.qpn == 1 {
            QpType::Gsi
        } else {
            QpType::Smi
        }
    }
}

/// A read or write of `len` bytes where `need` are needed: `EINVAL` when shorter.
fn room(len: usize, need: usize) -> Result {
    if len < need {
        return Err(EINVAL);
    }
    Ok(())
}

/// The agent slot header `h` names: past the file's slots is `EINVAL`.
fn agent_slot(h: &UmadHdr) -> Result<usize> {
    let id = h.id as usize;
    if id >= MAX_AGENTS {
        return Err(EINVAL);
    }
    Ok(id)
}

/// How the `len` bytes written after the header (its first [`hdr::RMPP_HDR`] in `mad`) are
/// sent, through an agent of `rmpp_version` with `flags` (C's `ib_umad_write`): how many of them
/// fill the MAD, and for an active RMPP message the kernel segments (an RMPP agent without
/// `USER_RMPP`), how many bytes of data follow the class's header. `EINVAL` when shorter than
/// that header, or longer than one MAD without RMPP.
fn mad_len(mad: &Mad, len: usize, rmpp_version: u8, flags: u32) -> Result<(usize, Option<usize>)> {
    let class = mad[mh::MGMT_CLASS];
    let hdr_len = rmpp::data_offset(class);
    let data_len = len.checked_sub(hdr_len).ok_or(EINVAL)?;
    let kernel_rmpp = rmpp_version != 0 && flags & USER_RMPP == 0;
    if agent::is_rmpp_class(class) && kernel_rmpp && rmpp::is_active(mad) {
        return Ok((hdr_len, Some(data_len)));
    }
    if hdr_len + data_len > MAD_SIZE {
        return Err(EINVAL);
    }
    Ok((hdr_len + data_len, None))
}

/// A request's transaction id gets the agent's prefix `hi_tid` in its high 32 bits (C's
/// `ib_umad_write`); a response keeps the one it answers.
fn stamp_tid(m: &mut Mad, hi_tid: u32) {
    if !agent::is_response(m) {
        let tid = ib_core::mad::types::get64(m, mh::TID);
        let tid = (u64::from(hi_tid) << 32) | (tid & 0xffff_ffff);
        ib_core::mad::types::put64(m, mh::TID, tid);
    }
}

/// Whether `new` repeats a send in flight (C's `is_duplicate`): another request with its
/// transaction id and class, or a response with them to the same destination.
fn is_duplicate(sends: &[Sent], new: &Sent) -> bool {
    let class = new.head[mh::MGMT_CLASS];
    sends.iter().any(|s| {
        if s.tid() != new.tid() || s.head[mh::MGMT_CLASS] != class {
            return false;
        }
        match (new.is_response(), s.is_response()) {
            (false, false) => true,
            (true, true) => same_destination(&new.hdr, &s.hdr),
            _ => false,
        }
    })
}

/// C's `same_destination`: the same LID without GRHs, else the same GID.
fn same_destination(a: &UmadHdr, b: &UmadHdr) -> bool {
    if a.grh_present == 0 && b.grh_present == 0 {
        return a.lid == b.lid;
    }
    a.grh_present != 0 && b.grh_present != 0 && a.gid == b.gid
}

#[vtable]
impl FileOperations for UmadFile {
    type Ptr = KBox<Self>;

    type Device = Arc<UmadPort>;

    /// C's `ib_umad_open`.
    fn open(port: &Arc<UmadPort>, _file: &File) -> Result<KBox<Self>> {
        port.ib_device().ok_or(ENXIO)?;
        let file_port = port.clone();
        let state = Arc::pin_init(
            pin_init!(UmadFileState {
                port: file_port,
                inner <- new_mutex!(Inner::new()),
                readable <- new_poll_condvar!(),
            }),
            GFP_KERNEL,
        )?;
        port.add_file(state.clone())?;
        Ok(KBox::new(Self { state }, GFP_KERNEL)?)
    }

    /// C's `ib_umad_read`.
    fn read(this: &UmadFile, file: &File, mut buf: UserSliceWriter, len: usize) -> Result<usize> {
        let st = &this.state;
        let mut inner = st.inner.lock();
        let hdr_size = inner.hdr_size();
        room(len, hdr_size)?;
        if inner.agents_dead {
            return Err(EIO);
        }
        while inner.recv.is_empty() {
            if file.flags() & O_NONBLOCK != 0 {
                return Err(EAGAIN);
            }
            if st.readable.wait_interruptible(&mut inner) {
                return Err(ERESTARTSYS);
            }
        }
        if inner.agents_dead {
            return Err(EIO);
        }
        let p = inner.recv.remove(0)?;
        let (h, body, more): (&UmadHdr, &[u8], &[u8]) = match &*p {
            Packet::Recv { hdr, mad, more } => {
                // C's `copy_recv_mad`: the first segment, then the others' data up to the
                // message's length.
                let total = (hdr.length as usize).saturating_sub(hdr_size);
                let rest = total.saturating_sub(MAD_SIZE).min(more.len());
                (hdr, &mad[..total.min(MAD_SIZE)], &more[..rest])
            }
            Packet::Timeout { hdr, head } => (hdr, &head[..], &[]),
        };
        let size = hdr_size + body.len();
        let copied = if let Err(e) = room(len, size) {
            Err(e)
        } else {
            let raw = h.encode();
            buf.write_slice(&raw[..hdr_size])
                .and_then(|()| buf.write_slice(body))
                .and_then(|()| {
                    // A buffer that holds the first segment but not the message: ENOSPC, with
                    // the header (and its length) read, the message kept for a bigger read.
                    if more.is_empty() {
                        Ok(())
                    } else if len < size + more.len() {
                        Err(ENOSPC)
                    } else {
                        buf.write_slice(more)
                    }
                })
        };
        if let Err(e) = copied {
            // Put back first, as C does.
            let _ = inner.recv.insert_within_capacity(0, p);
            return Err(e);
        }
        Ok(size + more.len())
    }

    /// C's `ib_umad_write`.
    fn write(this: &UmadFile, _file: &File, buf: UserPtr, len: usize) -> Result<usize> {
        this.send(buf.as_const_ptr() as usize, len)
    }

    /// C's `ib_umad_poll`: always writable; readable with a packet queued; only an error once
    /// the agents are dead.
    fn poll(this: &UmadFile, file: &File, table: PollTable<'_>) -> u32 {
        table.register_wait(file, &this.state.readable);
        let inner = this.state.inner.lock();
        if inner.agents_dead {
            return kernel::anon_file::POLLERR;
        }
        let mut mask = kernel::anon_file::POLLOUT | kernel::anon_file::POLLWRNORM;
        if !inner.recv.is_empty() {
            mask |= kernel::anon_file::POLLIN | kernel::anon_file::POLLRDNORM;
        }
        mask
    }

    /// C's `ib_umad_ioctl`.
    fn ioctl(this: &UmadFile, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        match cmd {
            ioc::REGISTER_AGENT => this.register(arg, false),
            ioc::UNREGISTER_AGENT => this.unregister(arg),
            ioc::ENABLE_PKEY => {
                this.state.inner.lock().enable_pkey()?;
                Ok(0)
            }
            ioc::REGISTER_AGENT2 => this.register(arg, true),
            _ => Err(ENOIOCTLCMD),
        }
    }
}

/// What an open `issmN` file holds: the port, marked as having a subnet manager.
pub(crate) struct IssmFile {
    port: Arc<UmadPort>,
}

impl Drop for IssmFile {
    /// C's `ib_umad_sm_close`: the mark goes (if the port is still there), the port is free.
    fn drop(&mut self) {
        if let Some(ib) = self.port.ib_device() {
            let _ = ib.modify_port_caps(self.port.port_num(), 0, PORT_SM);
        }
        self.port.sm_give();
    }
}

#[vtable]
impl FileOperations for IssmFile {
    type Ptr = KBox<Self>;

    type Device = Arc<UmadPort>;

    /// C's `ib_umad_sm_open`: one holder per port (`EAGAIN` for a non-blocking open while it
    /// is held), then the port's `IsSM` capability is set.
    fn open(port: &Arc<UmadPort>, file: &File) -> Result<KBox<Self>> {
        port.sm_take(file.flags() & O_NONBLOCK != 0)?;
        let set = port
            .ib_device()
            .ok_or(ENXIO)
            .and_then(|ib| ib.modify_port_caps(port.port_num(), PORT_SM, 0));
        if let Err(e) = set {
            port.sm_give();
            return Err(e);
        }
        let keep = port.clone();
        match KBox::new(Self { port: keep }, GFP_KERNEL) {
            Ok(f) => Ok(f),
            Err(e) => {
                if let Some(ib) = port.ib_device() {
                    let _ = ib.modify_port_caps(port.port_num(), 0, PORT_SM);
                }
                port.sm_give();
                Err(e.into())
            }
        }
    }
}

#[kernel::macros::kunit_tests(rdma_rs_umad_reg)]
mod reg_tests {
    use super::*;
    use ib_core::mad::types::class;

    /// `struct ib_user_mad_reg_req` as the C program's `reg()` fills it.
    fn req(qpn: u8, mgmt_class: u8, version: u8, methods: u64) -> [u8; 28] {
        let mut r = [0u8; 28];
        r[4..12].copy_from_slice(&methods.to_ne_bytes());
        r[20] = qpn;
        r[21] = mgmt_class;
        r[22] = version;
        r
    }

    /// `struct ib_user_mad_reg_req2`.
    fn req2(qpn: u32, mgmt_class: u8, version: u8, flags: u32, oui: u32) -> [u8; 40] {
        let mut r = [0u8; 40];
        r[4..8].copy_from_slice(&qpn.to_ne_bytes());
        r[8] = mgmt_class;
        r[9] = version;
        r[12..16].copy_from_slice(&flags.to_ne_bytes());
        r[16..24].copy_from_slice(&(1u64 << 1).to_ne_bytes());
        r[24..32].copy_from_slice(&(1u64 << 63).to_ne_bytes());
        r[32..36].copy_from_slice(&oui.to_ne_bytes());
        r
    }

    /// What a registration gets before the port is looked at: umad's checks, then the MAD
    /// layer's (C's `ib_register_mad_agent`).
    fn register(r: &RegRequest) -> Result<Option<MadRegReq>> {
        r.check()?;
        let reg = r.agent_request()?;
        agent::check_registration(r.qp_type(), reg.as_ref(), r.rmpp_version)?;
        Ok(reg)
    }

    #[test]
    fn register_agent_as_umad_badinput_does() {
        let perf = |methods: u64| MadRegReq {
            mgmt_class: class::PERF_MGMT,
            class_version: 1,
            oui: [0; 3],
            method_mask: [methods, 0],
        };
        // PerfMgmt Get on QP1, and a send-only agent: accepted.
        let r = RegRequest::decode(&req(1, class::PERF_MGMT, 1, 1 << 1));
        assert_eq!(register(&r), Ok(Some(perf(1 << 1))));
        assert_eq!(r.qp_type(), QpType::Gsi);
        assert_eq!(register(&RegRequest::decode(&req(1, 0, 0, 0))), Ok(None));
        // QP 2: EINVAL (umad's own check).
        let r = RegRequest::decode(&req(2, class::PERF_MGMT, 1, 1 << 1));
        assert_eq!(r.check(), Err(Refused::Qpn));
        assert_eq!(register(&r), Err(EINVAL));
        assert_eq!(
            register(&RegRequest::decode(&req(255, 0, 0, 0))),
            Err(EINVAL)
        );
        // Class version 0x83: EINVAL; 0x82 is the last.
        let r = RegRequest::decode(&req(1, class::PERF_MGMT, 0x83, 1 << 1));
        assert_eq!(register(&r), Err(EINVAL));
        let r = RegRequest::decode(&req(1, class::PERF_MGMT, 0x82, 1 << 1));
        assert!(register(&r).is_ok());
        // Subnet management on QP1, PerfMgmt on QP0: EINVAL; subnet management on QP0 is fine.
        let r = RegRequest::decode(&req(1, class::SUBN_LID_ROUTED, 1, 1 << 1));
        assert_eq!(register(&r), Err(EINVAL));
        let r = RegRequest::decode(&req(0, class::PERF_MGMT, 1, 1 << 1));
        assert_eq!(register(&r), Err(EINVAL));
        let r = RegRequest::decode(&req(0, class::SUBN_LID_ROUTED, 1, 1 << 1));
        assert_eq!(r.qp_type(), QpType::Smi);
        assert!(register(&r).is_ok());
        // A vendor class of the OUI range without an OUI: EINVAL; with one, its bytes in
        // wire order.
        assert_eq!(
            register(&RegRequest::decode(&req(1, 0x30, 1, 1 << 1))),
            Err(EINVAL)
        );
        let mut raw = req(1, 0x30, 1, 1 << 1);
        raw[23..26].copy_from_slice(&[0x00, 0x14, 0x05]);
        assert!(register(&RegRequest::decode(&raw))
            .is_ok_and(|r| r.is_some_and(|r| r.oui == [0x00, 0x14, 0x05] && r.mgmt_class == 0x30)));
        // RMPP on a class without it: EINVAL; RMPP version 2: EINVAL; on SA: fine.
        let mut raw = req(1, class::PERF_MGMT, 1, 1 << 1);
        raw[26] = 1;
        assert_eq!(register(&RegRequest::decode(&raw)), Err(EINVAL));
        let mut raw = req(1, class::SUBN_ADM, 2, 1 << 1);
        raw[26] = 1;
        assert!(register(&RegRequest::decode(&raw)).is_ok());
        raw[26] = 2;
        assert_eq!(register(&RegRequest::decode(&raw)), Err(EINVAL));
        // Classes from 80 up, but for directed-route SMPs: EINVAL.
        let r = RegRequest::decode(&req(1, 80, 1, 1 << 1));
        assert_eq!(register(&r), Err(EINVAL));
        let r = RegRequest::decode(&req(0, class::SUBN_DIRECTED_ROUTE, 1, 1 << 1));
        assert!(register(&r).is_ok());
        // The method mask: four host-order words after the id, 128 methods.
        let mut raw = req(1, class::PERF_MGMT, 1, 0);
        raw[12..20].copy_from_slice(&(1u64 << 63).to_ne_bytes());
        let r = RegRequest::decode(&raw);
        assert_eq!(r.method_mask, [0, 1 << 63]);
        assert!(register(&r).is_ok_and(|m| m.is_some_and(|m| m.has_method(127))));
    }

    #[test]
    fn register_agent2_as_umad_badinput_does() {
        // An unknown flag: EINVAL, and the known flags are written back.
        let r = RegRequest::decode2(&req2(1, class::PERF_MGMT, 1, 2, 0));
        assert_eq!(r.check(), Err(Refused::Flags));
        assert_eq!(register(&r), Err(EINVAL));
        let r = RegRequest::decode2(&req2(1, class::PERF_MGMT, 1, 1 << 31, 0));
        assert_eq!(r.check(), Err(Refused::Flags));
        // The QP number first: a bad one is refused without the write-back.
        let r = RegRequest::decode2(&req2(2, class::PERF_MGMT, 1, 2, 0));
        assert_eq!(r.check(), Err(Refused::Qpn));
        let r = RegRequest::decode2(&req2(1 << 31, class::PERF_MGMT, 1, 0, 0));
        assert_eq!(register(&r), Err(EINVAL));
        // An OUI wider than 24 bits: EINVAL (only REGISTER_AGENT2 can give one).
        let r = RegRequest::decode2(&req2(1, 0x31, 1, 0, 0x0100_1405));
        assert_eq!(r.check(), Ok(()));
        assert_eq!(register(&r), Err(EINVAL));
        let r = RegRequest::decode2(&req2(1, 0x31, 1, 0, 0x1405));
        assert_eq!(
            register(&r),
            Ok(Some(MadRegReq {
                mgmt_class: 0x31,
                class_version: 1,
                oui: [0x00, 0x14, 0x05],
                method_mask: [1 << 1, 1 << 63],
            }))
        );
        // User-space RMPP needs a class: EINVAL for a send-only agent.
        let r = RegRequest::decode2(&req2(1, 0, 0, USER_RMPP, 0));
        assert_eq!(r.check(), Ok(()));
        assert_eq!(register(&r), Err(EINVAL));
        let r = RegRequest::decode2(&req2(1, class::SUBN_ADM, 2, USER_RMPP, 0));
        assert!(register(&r).is_ok());
        assert_eq!(r.flags, USER_RMPP);
        // The same PerfMgmt request as REGISTER_AGENT's.
        let r = RegRequest::decode2(&req2(1, class::PERF_MGMT, 0x83, 0, 0));
        assert_eq!(register(&r), Err(EINVAL));
        let r = RegRequest::decode2(&req2(0, class::PERF_MGMT, 1, 0, 0));
        assert_eq!(register(&r), Err(EINVAL));
    }
}

#[kernel::macros::kunit_tests(rdma_rs_umad_write)]
mod write_tests {
    use super::*;
    use ib_core::mad::types::{class, method};

    /// A MAD of `class` and `method` with transaction id `tid`.
    fn mad(mclass: u8, meth: u8, tid: u64) -> Mad {
        let mut m = [0u8; MAD_SIZE];
        m[mh::BASE_VERSION] = 1;
        m[mh::MGMT_CLASS] = mclass;
        m[mh::CLASS_VERSION] = 1;
        m[mh::METHOD] = meth;
        ib_core::mad::types::put64(&mut m, mh::TID, tid);
        m
    }

    #[test]
    fn lengths_agent_ids_and_the_files_state() {
        // write(): shorter than the header and the RMPP header, either header: EINVAL.
        for h in [HDR_OLD, HDR_NEW] {
            assert_eq!(room(h + hdr::RMPP_HDR - 1, h + hdr::RMPP_HDR), Err(EINVAL));
            assert_eq!(room(h + hdr::RMPP_HDR, h + hdr::RMPP_HDR), Ok(()));
        }
        // Agent ids past the 32 slots: EINVAL.
        let id = |id: u32| {
            agent_slot(&UmadHdr {
                id,
                ..UmadHdr::default()
            })
        };
        assert_eq!(id(31), Ok(31));
        assert_eq!(id(32), Err(EINVAL));
        assert_eq!(id(u32::MAX), Err(EINVAL));
        // A new file: the old header; write() through an agent never registered: EIO;
        // UNREGISTER_AGENT of an empty slot or past them: EINVAL.
        let mut f = Inner::new();
        assert_eq!(f.hdr_size(), HDR_OLD);
        assert_eq!(f.sender(0).err(), Some(EIO));
        assert_eq!(f.sender(31).err(), Some(EIO));
        assert_eq!(f.take_agent(5).err(), Some(EINVAL));
        assert_eq!(f.take_agent(40).err(), Some(EINVAL));
        // ENABLE_PKEY before any agent, and again: the 64-byte header; once one registered:
        // EINVAL.
        assert_eq!(f.enable_pkey(), Ok(()));
        assert_eq!(f.enable_pkey(), Ok(()));
        assert_eq!(f.hdr_size(), HDR_NEW);
        f.already_used = true;
        assert_eq!(f.enable_pkey(), Err(EINVAL));
        // read(): shorter than the header, or than the packet: EINVAL.
        assert_eq!(room(HDR_NEW - 1, HDR_NEW), Err(EINVAL));
        assert_eq!(
            room(HDR_NEW + MAD_SIZE - 1, HDR_NEW + MAD_SIZE),
            Err(EINVAL)
        );
        assert_eq!(room(HDR_NEW + 23, HDR_NEW + MAD_HDR_SIZE), Err(EINVAL));
        assert_eq!(room(HDR_NEW + MAD_SIZE + 64, HDR_NEW + MAD_SIZE), Ok(()));
        // The ioctl numbers: _IOWR/_IOW/_IO of magic 0x1b with the structures' sizes.
        let ioc = |dir: u32, nr: u32, size: u32| (dir << 30) | (size << 16) | (0x1b << 8) | nr;
        assert_eq!(ioc::REGISTER_AGENT, ioc(3, 1, 28));
        assert_eq!(ioc::UNREGISTER_AGENT, ioc(1, 2, 4));
        assert_eq!(ioc::ENABLE_PKEY, ioc(0, 3, 0));
        assert_eq!(ioc::REGISTER_AGENT2, ioc(3, 4, 40));
    }

    #[test]
    fn mad_lengths_by_class_and_rmpp() {
        let perf = mad(class::PERF_MGMT, method::GET, 1);
        // A whole MAD, its header alone; longer than a MAD: EINVAL.
        assert_eq!(mad_len(&perf, MAD_SIZE, 0, 0), Ok((MAD_SIZE, None)));
        assert_eq!(mad_len(&perf, MAD_HDR_SIZE + 12, 0, 0), Ok((36, None)));
        assert_eq!(mad_len(&perf, MAD_SIZE + 1, 0, 0), Err(EINVAL));
        // SA's header is 56 bytes, device management's 64, a vendor OUI class's 40: shorter
        // is EINVAL.
        let sa = mad(class::SUBN_ADM, method::GET, 1);
        assert_eq!(mad_len(&sa, 55, 0, 0), Err(EINVAL));
        assert_eq!(mad_len(&sa, 56, 0, 0), Ok((56, None)));
        let dm = mad(class::DEVICE_MGMT, method::GET, 1);
        assert_eq!(mad_len(&dm, 63, 0, 0), Err(EINVAL));
        let vendor = mad(0x30, method::GET, 1);
        assert_eq!(mad_len(&vendor, 39, 0, 0), Err(EINVAL));
        assert_eq!(mad_len(&vendor, 40, 0, 0), Ok((40, None)));
        // An active RMPP message the kernel segments (an RMPP agent without USER_RMPP): the
        // class's header, then data of any length; user-space RMPP, an agent without RMPP, or a
        // class without it send one MAD as it is.
        let mut seg = sa;
        seg[rmpp::rhdr::RTIME_FLAGS] = rmpp::flag::ACTIVE;
        assert_eq!(mad_len(&seg, MAD_SIZE, 1, 0), Ok((56, Some(200))));
        assert_eq!(mad_len(&seg, 1000, 1, 0), Ok((56, Some(944))));
        assert_eq!(mad_len(&seg, 55, 1, 0), Err(EINVAL));
        assert_eq!(mad_len(&seg, MAD_SIZE, 1, USER_RMPP), Ok((MAD_SIZE, None)));
        assert_eq!(mad_len(&seg, MAD_SIZE + 1, 1, USER_RMPP), Err(EINVAL));
        assert_eq!(mad_len(&seg, MAD_SIZE, 0, 0), Ok((MAD_SIZE, None)));
        assert_eq!(mad_len(&sa, MAD_SIZE, 1, 0), Ok((MAD_SIZE, None)));
        let mut pseg = perf;
        pseg[rmpp::rhdr::RTIME_FLAGS] = rmpp::flag::ACTIVE;
        assert_eq!(mad_len(&pseg, MAD_SIZE, 1, 0), Ok((MAD_SIZE, None)));
    }

    #[test]
    fn transaction_ids_and_duplicates() {
        // A request's TID gets the agent's prefix; a response's and a TrapRepress's are kept.
        let mut m = mad(class::PERF_MGMT, method::GET, 0xdead_beef_0000_0100);
        stamp_tid(&mut m, 0x12_3456);
        assert_eq!(
            ib_core::mad::types::get64(&m, mh::TID),
            0x0012_3456_0000_0100
        );
        let mut r = mad(
            class::PERF_MGMT,
            method::GET | method::RESP,
            0xdead_beef_0000_0100,
        );
        stamp_tid(&mut r, 0x12_3456);
        assert_eq!(
            ib_core::mad::types::get64(&r, mh::TID),
            0xdead_beef_0000_0100
        );
        let mut t = mad(class::SUBN_LID_ROUTED, method::TRAP_REPRESS, 7);
        stamp_tid(&mut t, 1);
        assert_eq!(ib_core::mad::types::get64(&t, mh::TID), 7);
        // A send in flight, and what repeats it (the write is EINVAL).
        let sent = |m: &Mad, lid: u16, gid: Option<u8>| {
            let mut head = [0u8; MAD_HDR_SIZE];
            head.copy_from_slice(&m[..MAD_HDR_SIZE]);
            let mut hdr = UmadHdr {
                lid,
                ..UmadHdr::default()
            };
            if let Some(g) = gid {
                hdr.grh_present = 1;
                hdr.gid = [g; 16];
            }
            Sent {
                context: 0,
                hdr,
                head,
            }
        };
        let get = mad(class::PERF_MGMT, method::GET, 0x200);
        let flight = [sent(&get, 0x77, None)];
        // The same request again, even to another LID: a duplicate.
        assert!(is_duplicate(&flight, &sent(&get, 0x77, None)));
        assert!(is_duplicate(&flight, &sent(&get, 5, None)));
        // Another TID or class, or a response with that TID: not one.
        let other = mad(class::PERF_MGMT, method::GET, 0x201);
        assert!(!is_duplicate(&flight, &sent(&other, 0x77, None)));
        let bm = mad(class::BM, method::GET, 0x200);
        assert!(!is_duplicate(&flight, &sent(&bm, 0x77, None)));
        let resp = mad(class::PERF_MGMT, method::GET | method::RESP, 0x200);
        assert!(!is_duplicate(&flight, &sent(&resp, 0x77, None)));
        // Responses: duplicates only to the same destination (LID, or GID with GRHs).
        let flight = [sent(&resp, 0x77, None), sent(&resp, 9, Some(0xfe))];
        assert!(is_duplicate(&flight, &sent(&resp, 0x77, None)));
        assert!(!is_duplicate(&flight, &sent(&resp, 0x78, None)));
        assert!(is_duplicate(&flight, &sent(&resp, 1, Some(0xfe))));
        assert!(!is_duplicate(&flight, &sent(&resp, 9, Some(0xfd))));
        assert!(!is_duplicate(
            &[sent(&resp, 9, Some(0xfe))],
            &sent(&resp, 9, None)
        ));
    }
}
