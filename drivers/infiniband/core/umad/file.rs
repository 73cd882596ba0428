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
    mad::agent::{self, MadRegReq},
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
/// `IB_USER_MAD_USER_RMPP`: the only flag of `REGISTER_AGENT2`.
const USER_RMPP: u32 = 1;

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
    /// A received MAD.
    Recv { hdr: UmadHdr, mad: Mad },
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
            length: (hdr_size + MAD_SIZE) as u32,
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
        if let Ok(p) = KBox::new(Packet::Recv { hdr: h, mad: r.mad }, GFP_KERNEL) {
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
        let (qpn, class_version, mgmt_class, oui, mask, rmpp_version, flags) = if reg2 {
            let r: [u8; 40] = user_read(arg)?;
            let qpn = u32::from_ne_bytes([r[4], r[5], r[6], r[7]]);
            let flags = u32::from_ne_bytes([r[12], r[13], r[14], r[15]]);
            if qpn > 1 {
                return Err(EINVAL);
            }
            if flags & !USER_RMPP != 0 {
                user_write(arg + 12, &USER_RMPP.to_ne_bytes())?;
                return Err(EINVAL);
            }
            let lo = u64::from_ne_bytes([r[16], r[17], r[18], r[19], r[20], r[21], r[22], r[23]]);
            let hi = u64::from_ne_bytes([r[24], r[25], r[26], r[27], r[28], r[29], r[30], r[31]]);
            let oui = u32::from_ne_bytes([r[32], r[33], r[34], r[35]]);
            (qpn, r[9], r[8], oui, [lo, hi], r[36], flags)
        } else {
            let r: [u8; 28] = user_read(arg)?;
            if r[20] > 1 {
                return Err(EINVAL);
            }
            let lo = u64::from_ne_bytes([r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11]]);
            let hi = u64::from_ne_bytes([r[12], r[13], r[14], r[15], r[16], r[17], r[18], r[19]]);
            let oui = u32::from_be_bytes([0, r[23], r[24], r[25]]);
            (u32::from(r[20]), r[22], r[21], oui, [lo, hi], r[26], 0)
        };
        let id = (0..MAX_AGENTS)
            .find(|&i| inner.agent(i).is_none())
            .ok_or(ENOMEM)?;
        let reg = if mgmt_class != 0 {
            if reg2 && oui & 0xff00_0000 != 0 {
                return Err(EINVAL);
            }
            let o = oui.to_be_bytes();
            Some(MadRegReq {
                mgmt_class,
                class_version,
                oui: [o[1], o[2], o[3]],
                method_mask: mask,
            })
        } else {
            if flags & USER_RMPP != 0 {
                return Err(EINVAL);
            }
            None
        };
        let qp_type = if qpn == 1 { QpType::Gsi } else { QpType::Smi };
        let handler: Arc<dyn MadHandler> = Arc::new(AgentHandler { file: st.clone() }, GFP_KERNEL)?;
        let agent = MadAgent::register(
            &ib,
            st.port.port_num(),
            qp_type,
            reg.as_ref(),
            rmpp_version,
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
            *f = flags;
        }
        Ok(0)
    }

    /// `UNREGISTER_AGENT` (C's `ib_umad_unreg_agent`).
    fn unregister(&self, arg: usize) -> Result<isize> {
        let raw: [u8; 4] = user_read(arg)?;
        let id = u32::from_ne_bytes(raw) as usize;
        let agent = {
            let mut inner = self.state.inner.lock();
            if id >= MAX_AGENTS || inner.agent(id).is_none() {
                return Err(EINVAL);
            }
            inner.agents.get_mut(id).and_then(|a| a.take())
        };
        if let Some(a) = agent {
            a.unregister();
        }
        Ok(0)
    }

    /// One MAD from user space (C's `ib_umad_write`).
    fn send(&self, buf: usize, count: usize) -> Result<usize> {
        let st = &self.state;
        let hdr_size = st.inner.lock().hdr_size();
        if count < hdr_size + hdr::RMPP_HDR {
            return Err(EINVAL);
        }
        let mut raw = [0u8; HDR_NEW];
        let mut reader = UserSlice::new(UserPtr::from_addr(buf), count).reader();
        reader.read_slice(&mut raw[..hdr_size])?;
        let h = UmadHdr::decode(&raw, hdr_size == HDR_NEW);
        if h.id as usize >= MAX_AGENTS {
            return Err(EINVAL);
        }
        let mut mad = KBox::new([0u8; MAD_SIZE], GFP_KERNEL)?;
        reader.read_slice(&mut mad[..hdr::RMPP_HDR])?;
        let mut inner = st.inner.lock();
        let agent = inner.agent(h.id as usize).cloned().ok_or(EIO)?;
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
            }),
        };
        let class = mad[mh::MGMT_CLASS];
        let hdr_len = hdr::data_offset(class);
        let data_len = count.checked_sub(hdr_size + hdr_len).ok_or(EINVAL)?;
        let kernel_rmpp = agent.rmpp_version() != 0
            && inner.agent_flags.get(h.id as usize).copied().unwrap_or(0) & USER_RMPP == 0;
        let rmpp_active = agent::is_rmpp_class(class)
            && kernel_rmpp
            && mad[hdr::RMPP_FLAGS] & hdr::RMPP_FLAG_ACTIVE != 0;
        // Segmenting an RMPP message is not implemented: only single MADs go.
        if rmpp_active || hdr_len + data_len > MAD_SIZE {
            return Err(EINVAL);
        }
        reader.read_slice(&mut mad[hdr::RMPP_HDR..hdr_len + data_len])?;
        let m: &mut Mad = &mut mad;
        if !agent::is_response(m) {
            let tid = ib_core::mad::types::get64(m, mh::TID);
            let tid = (u64::from(agent.hi_tid()) << 32) | (tid & 0xffff_ffff);
            ib_core::mad::types::put64(m, mh::TID, tid);
        }
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
                inner <- new_mutex!(Inner {
                    agents: [const { None }; MAX_AGENTS],
                    agent_flags: [0; MAX_AGENTS],
                    recv: KVec::new(),
                    sends: KVec::new(),
                    use_pkey_index: false,
                    already_used: false,
                    agents_dead: false,
                    next_context: 0,
                }),
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
        if len < hdr_size {
            return Err(EINVAL);
        }
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
        let (h, body): (&UmadHdr, &[u8]) = match &*p {
            Packet::Recv { hdr, mad } => (hdr, &mad[..]),
            Packet::Timeout { hdr, head } => (hdr, &head[..]),
        };
        let size = hdr_size + body.len();
        let copied = if len < size {
            Err(EINVAL)
        } else {
            let raw = h.encode();
            buf.write_slice(&raw[..hdr_size])
                .and_then(|()| buf.write_slice(body))
        };
        if let Err(e) = copied {
            // Put back first, as C does.
            let _ = inner.recv.insert_within_capacity(0, p);
            return Err(e);
        }
        Ok(size)
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
                let mut inner = this.state.inner.lock();
                if inner.already_used {
                    return Err(EINVAL);
                }
                inner.use_pkey_index = true;
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
