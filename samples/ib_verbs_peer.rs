// SPDX-License-Identifier: GPL-2.0

//! A kernel verbs consumer that talks to a peer on another host (test-only), so that traffic
//! between two HCAs, and between the Rust and the C stack, can be checked: its C twin
//! `tools/verbs-twin/ib_verbs_peer.c` does the same on the C stack with the same lines.
//!
//! On every device serving kernel verbs it makes a PD, one CQ, a DMA MR, an RC QP (at RESET) and
//! a UD QP (at RTS), and a debugfs file `ib_verbs_peer/<device>/ctl`:
//!
//! - reading it gives what the peer needs: `lid L rc_qpn Q ud_qpn U rkey K addr A` (the port's
//!   LID, the two QP numbers, the DMA MR's rkey and the address of a 4096-byte buffer the peer
//!   may write and read);
//! - `connect L Q U K A` (the peer's line, numbers as read) connects the RC QP to the peer's, makes
//!   an address handle to the peer's LID and posts 1000 receives on each QP;
//! - `traffic` sends 1000 RC SENDs of 512 bytes and 1000 UD SENDs of 256 bytes to the peer and
//!   waits for the peer's 1000 of each (bytes, length, source QP and, for UD, source LID
//!   checked), then RDMA-writes 4096 bytes into the peer's buffer and reads them back;
//! - `verify` checks that the peer's RDMA write landed in this side's buffer.
//!
//! Each command logs one line per part; a command that cannot run fails the write with the
//! errno (`ENOTCONN` before `connect`, `EISCONN` after, `EINVAL` for a malformed line).
//! Message `i` of each kind is the test pattern with seed `i`, so both sides can check what they
//! receive; the RDMA pattern's seed is the writer's LID.

use ib_core::{
    device::registry::{Client, ClientRegistration},
    device::IbDevice,
    verbs::dma_buffer::DmaBuffer,
    verbs::wr::{send_flags, RecvWr, SendOpcode, SendWr, UdWr, WcStatus, WorkCompletion},
    verbs::{Access, Ah, AhAttr, Qp},
};
use kernel::{
    debugfs::{Dir, File},
    fmt, new_mutex,
    prelude::*,
    str::{BStr, CString},
    sync::{Arc, Mutex},
    uaccess::UserSliceReader,
};

// The sample client's shared pieces: counting completion events, connecting an RC QP, the
// test pattern.
#[allow(dead_code)]
#[path = "ib_verbs_client/env.rs"]
mod env;

use env::{connect_rc, fill_at, holds_at, Env};

#[path = "ib_verbs_peer/flow.rs"]
mod flow;

module! {
    type: PeerModule,
    name: "ib_verbs_peer",
    authors: ["rdma-rs developers"],
    description: "Kernel verbs traffic with a peer host (test-only)",
    license: "GPL",
}

/// Messages of each kind, each way.
const MANY: usize = 1000;
/// Bytes of an RC message.
const RC_LEN: usize = 512;
/// Bytes of a UD message.
const UD_LEN: usize = 256;
/// Bytes of the GRH area at the start of a UD receive.
const GRH: usize = 40;
/// Bytes per receive (and send) slot.
const SLOT: usize = 512;
/// Send slots, reused round-robin.
const TX_SLOTS: usize = 64;
/// Sends outstanding at most (below [`TX_SLOTS`], so a slot is free when reused).
const WINDOW: usize = 32;
/// Bytes of the RDMA buffer.
const RDMA_LEN: usize = 4096;
/// The UD QPs' Q_Key.
const QKEY: u32 = 0x1111_1111;
/// Completion-queue entries: every receive of both QPs and the outstanding sends.
const CQE: u32 = 2048;

/// What a work request was, in the top half of its `wr_id` (the bottom half is its index).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
enum Kind {
    RcRecv = 0,
    UdRecv = 1,
    RcSend = 2,
    UdSend = 3,
    Rdma = 4,
}

/// Number of [`Kind`]s.
const KINDS: usize = 5;

impl Kind {
    fn wr_id(self, index: usize) -> u64 {
        ((self as u64) << 32) | index as u64
    }

    fn of(wr_id: u64) -> Option<(Kind, usize)> {
        let kind = match wr_id >> 32 {
            0 => Kind::RcRecv,
            1 => Kind::UdRecv,
            2 => Kind::RcSend,
            3 => Kind::UdSend,
            4 => Kind::Rdma,
            _ => return None,
        };
        Some((kind, (wr_id & 0xffff_ffff) as usize))
    }
}

/// What the peer told us (its `ctl` line).
#[derive(Clone, Copy)]
struct Remote {
    lid: u16,
    rc_qpn: u32,
    ud_qpn: u32,
    rkey: u32,
    addr: u64,
}

/// What `connect` made.
struct Connection {
    remote: Remote,
    ah: Arc<Ah>,
}

/// Completions counted by kind: all of them, the good ones, the failed ones.
#[derive(Default)]
struct Counts {
    done: [usize; KINDS],
    good: [usize; KINDS],
    failed: [usize; KINDS],
    /// The last RDMA completion.
    rdma: Option<WorkCompletion>,
}

/// One device's objects and the state of the exchange.
#[pin_data]
struct Peer {
    name: CString,
    e: Env,
    rc: Arc<Qp>,
    ud: Arc<Qp>,
    /// UD receive slots (the RC ones are `e.rx`).
    ud_rx: DmaBuffer,
    /// The buffer the peer writes and reads.
    target: DmaBuffer,
    /// What this side RDMA-writes and reads back into.
    own: DmaBuffer,
    #[pin]
    conn: Mutex<Option<Connection>>,
}

impl Peer {
    /// The objects on `dev`, the UD QP at RTS.
    fn create(dev: &Arc<IbDevice>) -> Result<impl PinInit<Peer, Error>> {
        let name = CString::try_from_fmt(fmt!("{}", BStr::from_bytes(&dev.name())))?;
        let e = Env::create(
            dev,
            CQE,
            MANY * SLOT,
            Access::LocalWrite | Access::RemoteWrite | Access::RemoteRead,
        )?;
        let rc = e.rc_qp(64, MANY as u32 + 24, 0, None)?;
        let ud = e.ud_qp(64, MANY as u32 + 24, false, QKEY)?;
        let ud_rx = DmaBuffer::alloc(dev, MANY * SLOT)?;
        let target = DmaBuffer::alloc(dev, RDMA_LEN)?;
        let own = DmaBuffer::alloc(dev, RDMA_LEN)?;
        Ok(try_pin_init!(Peer {
            name,
            e,
            rc,
            ud,
            ud_rx,
            target,
            own,
            conn <- new_mutex!(None),
        }? Error))
    }

    /// The `ctl` line: what the peer needs.
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "lid {} rc_qpn {:#x} ud_qpn {:#x} rkey {:#x} addr {:#x}",
            self.e.lid,
            self.rc.qp_num(),
            self.ud.qp_num(),
            self.e.mr.rkey(),
            self.target.dma_addr()
        )
    }

    /// Runs one command written to `ctl`.
    fn command(&self, line: &str) -> Result {
        let mut words = line.split_ascii_whitespace();
        let name = BStr::from_bytes(self.name.to_bytes());
        match (words.next(), words.clone().count()) {
            (Some("connect"), 5) => {
                let mut n = [0u64; 5];
                for (v, w) in n.iter_mut().zip(words) {
                    *v = number(w)?;
                }
                let remote = Remote {
                    lid: u16::try_from(n[0]).map_err(|_| EINVAL)?,
                    rc_qpn: u32::try_from(n[1]).map_err(|_| EINVAL)?,
                    ud_qpn: u32::try_from(n[2]).map_err(|_| EINVAL)?,
                    rkey: u32::try_from(n[3]).map_err(|_| EINVAL)?,
                    addr: n[4],
                };
                self.connect(name, remote)
            }
            (Some("traffic"), 0) => self.traffic(name),
            (Some("verify"), 0) => {
                let ok = holds_at(&self.target, 0, RDMA_LEN, self.seed_of(self.remote()?.lid))?;
                pr_info!(
                    "{name}: verify: the peer's rdma write in our buffer: {RDMA_LEN} bytes {}\n",
                    env::intact(ok)
                );
                Ok(())
            }
            _ => Err(EINVAL),
        }
    }

    /// The RDMA pattern's seed of the side with LID `lid`.
    fn seed_of(&self, lid: u16) -> u8 {
        lid as u8
    }

    /// The peer, once connected.
    fn remote(&self) -> Result<Remote> {
        self.conn.lock().as_ref().map(|c| c.remote).ok_or(ENOTCONN)
    }

    /// Connects the RC QP to the peer's, makes the AH, posts the receives.
    fn connect(&self, name: &BStr, remote: Remote) -> Result {
        let mut conn = self.conn.lock();
        if conn.is_some() {
            return Err(EISCONN);
        }
        let ah = Ah::create(
            &self.e.pd,
            &AhAttr {
                dlid: remote.lid,
                port_num: 1,
                ..AhAttr::default()
            },
        )?;
        // RC: RESET to RTS, connected to the peer's QP.
        connect_rc(
            &self.rc,
            remote.lid,
            remote.rc_qpn,
            Access::RemoteWrite | Access::RemoteRead,
            7,
        )?;
        for i in 0..MANY {
            let rs = [self.e.rx.sge(i * SLOT, RC_LEN as u32, self.e.mr.lkey())?];
            self.rc.post_recv(&[RecvWr {
                wr_id: Kind::RcRecv.wr_id(i),
                sg_list: &rs,
            }])?;
            let us = [self
                .ud_rx
                .sge(i * SLOT, (GRH + UD_LEN) as u32, self.e.mr.lkey())?];
            self.ud.post_recv(&[RecvWr {
                wr_id: Kind::UdRecv.wr_id(i),
                sg_list: &us,
            }])?;
        }
        pr_info!(
            "{name}: connected: rc qp {:#x} to lid {} qp {:#x}, ud qp {:#x} to qp {:#x} through an AH; {MANY} receives posted on each\n",
            self.rc.qp_num(),
            remote.lid,
            remote.rc_qpn,
            self.ud.qp_num(),
            remote.ud_qpn
        );
        *conn = Some(Connection { remote, ah });
        Ok(())
    }

    /// Whether completion `wc` is what the peer (or this side) should have produced.
    fn check(
        &self,
        remote: &Remote,
        kind: Kind,
        index: usize,
        wc: &WorkCompletion,
    ) -> Result<bool> {
        Ok(match kind {
            Kind::RcRecv => {
                index < MANY
                    && wc.byte_len as usize == RC_LEN
                    && wc.src_qp == remote.rc_qpn
                    && holds_at(&self.e.rx, index * SLOT, RC_LEN, index as u8)?
            }
            Kind::UdRecv => {
                index < MANY
                    && wc.byte_len as usize == GRH + UD_LEN
                    && wc.src_qp == remote.ud_qpn
                    && wc.slid == remote.lid
                    && holds_at(&self.ud_rx, index * SLOT + GRH, UD_LEN, index as u8)?
            }
            Kind::RcSend | Kind::UdSend | Kind::Rdma => true,
        })
    }

    /// Polls (waiting for completion events in between) until `until` holds; `ETIMEDOUT` after
    /// 30 s without a completion.
    fn pump(&self, remote: &Remote, c: &mut Counts, until: impl Fn(&Counts) -> bool) -> Result {
        let mut wc = [WorkCompletion::default(); 16];
        let mut idle = 0;
        while !until(c) {
            let mut n = self.e.cq.poll(&mut wc)?;
            if n == 0 {
                // Arm, then poll once more before sleeping: a completion may have come in
                // between.
                let seen = self.e.events.seen();
                self.e.cq.req_notify(false)?;
                n = self.e.cq.poll(&mut wc)?;
                if n == 0 {
                    if !self.e.events.wait_past(seen) {
                        idle += 1;
                        if idle == 6 {
                            return Err(ETIMEDOUT);
                        }
                    }
                    continue;
                }
            }
            idle = 0;
            for w in &wc[..n] {
                let Some((kind, index)) = Kind::of(w.wr_id) else {
                    continue;
                };
                let k = kind as usize;
                c.done[k] += 1;
                if w.status != WcStatus::Success {
                    c.failed[k] += 1;
                } else if self.check(remote, kind, index, w)? {
                    c.good[k] += 1;
                }
                if kind == Kind::Rdma {
                    c.rdma = Some(*w);
                }
            }
        }
        Ok(())
    }

    /// Sends [`MANY`] messages on `qp` (UD through `ud`) and waits for as many from the peer.
    fn stream(
        &self,
        remote: &Remote,
        c: &mut Counts,
        qp: &Qp,
        ud: Option<UdWr<'_>>,
        (send, recv): (Kind, Kind),
    ) -> Result {
        let len = if ud.is_some() { UD_LEN } else { RC_LEN };
        for i in 0..MANY {
            self.pump(remote, c, |c| i - c.done[send as usize] < WINDOW)?;
            let o = (i % TX_SLOTS) * SLOT;
            fill_at(&self.e.tx, o, len, i as u8)?;
            let ss = [self.e.tx.sge(o, len as u32, self.e.mr.lkey())?];
            qp.post_send(&[SendWr {
                wr_id: send.wr_id(i),
                opcode: SendOpcode::Send,
                sg_list: &ss,
                send_flags: send_flags::SIGNALED,
                ud: ud.as_ref().map(|u| UdWr {
                    ah: u.ah,
                    remote_qpn: u.remote_qpn,
                    remote_qkey: u.remote_qkey,
                }),
                ..SendWr::default()
            }])?;
        }
        self.pump(remote, c, |c| {
            c.done[send as usize] == MANY && c.done[recv as usize] == MANY
        })
    }

    /// One signalled RDMA operation of [`RDMA_LEN`] bytes between `own` and the peer's buffer.
    fn rdma(&self, remote: &Remote, c: &mut Counts, opcode: SendOpcode) -> Result<WorkCompletion> {
        let sge = [self.own.sge(0, RDMA_LEN as u32, self.e.mr.lkey())?];
        let before = c.done[Kind::Rdma as usize];
        self.rc.post_send(&[SendWr {
            wr_id: Kind::Rdma.wr_id(before),
            opcode,
            sg_list: &sge,
            send_flags: send_flags::SIGNALED,
            remote_addr: remote.addr,
            rkey: remote.rkey,
            ..SendWr::default()
        }])?;
        self.pump(remote, c, |c| c.done[Kind::Rdma as usize] > before)?;
        c.rdma.ok_or(EIO)
    }

    /// The `traffic` command: RC, UD, then RDMA; one line each.
    fn traffic(&self, name: &BStr) -> Result {
        let conn = self.conn.lock();
        let conn = conn.as_ref().ok_or(ENOTCONN)?;
        let remote = &conn.remote;
        let mut c = Counts::default();
        let rc = self.stream(remote, &mut c, &self.rc, None, (Kind::RcSend, Kind::RcRecv));
        let (s, r) = (Kind::RcSend as usize, Kind::RcRecv as usize);
        pr_info!(
            "{name}: rc: {MANY} messages of {RC_LEN} bytes each way: {} sends completed, {} received intact from the peer's qp, {} failed completion(s)\n",
            c.good[s],
            c.good[r],
            c.failed[s] + c.failed[r]
        );
        rc?;
        let ud = UdWr {
            ah: &conn.ah,
            remote_qpn: remote.ud_qpn,
            remote_qkey: QKEY,
        };
        let res = self.stream(
            remote,
            &mut c,
            &self.ud,
            Some(ud),
            (Kind::UdSend, Kind::UdRecv),
        );
        let (s, r) = (Kind::UdSend as usize, Kind::UdRecv as usize);
        pr_info!(
            "{name}: ud: {MANY} messages of {UD_LEN} bytes each way through an AH: {} sends completed, {} received intact from the peer's qp and lid (byte_len {}), {} failed completion(s)\n",
            c.good[s],
            c.good[r],
            GRH + UD_LEN,
            c.failed[s] + c.failed[r]
        );
        res?;
        fill_at(&self.own, 0, RDMA_LEN, self.seed_of(self.e.lid))?;
        let write = self.rdma(remote, &mut c, SendOpcode::RdmaWrite)?;
        fill_at(&self.own, 0, RDMA_LEN, 0)?;
        let read = self.rdma(remote, &mut c, SendOpcode::RdmaRead)?;
        pr_info!(
            "{name}: rdma: write of {RDMA_LEN} bytes into the peer's buffer {:?} {:?}; read back {:?} {:?} {} bytes, data {}\n",
            write.opcode,
            write.status,
            read.opcode,
            read.status,
            read.byte_len,
            env::intact(holds_at(&self.own, 0, RDMA_LEN, self.seed_of(self.e.lid))?)
        );
        Ok(())
    }
}

/// A number as `ctl` prints it: `0x` and hex, or decimal.
fn number(word: &str) -> Result<u64> {
    match word.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => word.parse(),
    }
    .map_err(|_| EINVAL)
}

/// Reading `ctl`.
fn ctl_read(peer: &Peer, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    peer.describe(f)
}

/// Writing `ctl`: one command of at most 127 bytes.
fn ctl_write(peer: &Peer, reader: &mut UserSliceReader) -> Result {
    let mut buf = [0u8; 128];
    let n = reader.len();
    if n >= buf.len() {
        return Err(EINVAL);
    }
    reader.read_slice(&mut buf[..n])?;
    let line = core::str::from_utf8(&buf[..n]).map_err(|_| EINVAL)?;
    peer.command(line).inspect_err(|e| {
        pr_info!(
            "{}: command {:?} failed: err {}\n",
            BStr::from_bytes(peer.name.to_bytes()),
            line.trim(),
            e.to_errno()
        );
    })
}

/// The client: the debugfs directory of its devices.
struct Peers {
    dir: Dir,
}

/// What it keeps per device: the `ctl` file (which owns the device's [`Peer`]) in the device's
/// directory.
struct PerDevice {
    _ctl: Pin<KBox<File<Peer>>>,
    /// Dropping it stops the flow.
    _flow: Pin<KBox<File<flow::FlowCtl>>>,
    _dir: Dir,
}

impl Client for Peers {
    type Data = PerDevice;

    fn add(&self, dev: &Arc<IbDevice>) -> Result<PerDevice> {
        let dev_name = dev.name();
        let name = BStr::from_bytes(&dev_name);
        let peer = Peer::create(dev).inspect_err(|e| {
            pr_err!("{name}: setup failed: err {}\n", e.to_errno());
        })?;
        let cname = CString::try_from_fmt(fmt!("{name}"))?;
        let dir = self.dir.subdir(&cname);
        let ctl = KBox::pin_init(
            dir.read_write_callback_file(c"ctl", peer, &ctl_read, &ctl_write),
            GFP_KERNEL,
        )?;
        let flow = KBox::pin_init(
            dir.read_write_callback_file(
                c"flow",
                flow::FlowCtl::new(dev)?,
                &flow::flow_read,
                &flow::flow_write,
            ),
            GFP_KERNEL,
        )?;
        pr_info!("{name}: ready: debugfs ib_verbs_peer/{name}/ctl\n");
        Ok(PerDevice {
            _ctl: ctl,
            _flow: flow,
            _dir: dir,
        })
    }

    fn remove(&self, dev: &IbDevice, data: PerDevice) {
        drop(data);
        pr_info!("{}: released\n", BStr::from_bytes(&dev.name()));
    }
}

/// The module: the client registration.
#[pin_data]
struct PeerModule {
    #[pin]
    registration: ClientRegistration<Peers>,
}

impl kernel::InPlaceModule for PeerModule {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            registration <- ClientRegistration::new(Peers {
                dir: Dir::new(c"ib_verbs_peer"),
            }),
        })
    }
}
