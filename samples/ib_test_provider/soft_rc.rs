// SPDX-License-Identifier: GPL-2.0

//! The test provider's software data path: reliable-connected QPs of one device exchange SENDs
//! (with or without immediate data), RDMA writes, RDMA reads and atomics (8 bytes, aligned,
//! `REMOTE_ATOMIC` on the QP and the MR, host byte order) through memory the provider hands out
//! as DMA buffers, with the completions and errors an RC transport gives; UD QPs send datagrams
//! (at most the 4096-byte MTU) to a UD QP whose port LID and Q_Key match, into its next receive
//! after 40 bytes of GRH space (the GRH written when the AH has one), or drop them; QPs may
//! receive from an SRQ (its armed limit raises `SrqLimitReached` once; a QP of it going to
//! error raises `QpLastWqeReached`); a CQ overrun raises `CqErr`.
//!
//! - Device addresses: buffer `n` lives at `n << 32`; a scatter/gather entry must fall inside one
//!   buffer and carry the key of a memory region of the QP's PD (`0x1000 + PD number`), with
//!   `LOCAL_WRITE` to be written; otherwise the work request fails with `LocProtErr`.
//! - Work runs when it is posted (in the poster's context, so these verbs sleep): a send waits
//!   until its peer has a receive posted (RNR retries never run out), then moves the data.
//! - Errors are those of RC: a message longer than the receive completes the receive with
//!   `LocLenErr` and the send with `RemInvReqErr`; a remote key, range or right that does not
//!   allow an RDMA operation gives `RemAccessErr`; a peer that is not at RTR or RTS,
//!   `RetryExcErr`. A failed request moves its QP (and, for responder errors, the peer) to the
//!   error state, which completes every outstanding request with `WrFlushErr`.
//! - CQ events follow the arming: the next completion, or with "solicited" only the next
//!   solicited receive or failed completion. The consumer's handler runs at the end of the post
//!   that completed work, after the provider's locks are dropped; flushes caused by a modify to
//!   ERR are reported at the next post.

use ib_core::{
    verbs::dma_buffer::DmaMemory,
    verbs::wr::{
        send_flags, PostError, RecvWr, SendOpcode, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion,
    },
    verbs::{
        Access, AccessFlags, AhAttr, CqNotifier, EventNotifier, EventType, QpAttr, QpCap, QpState,
        QpType, SrqAttr, SrqAttrField, SrqAttrMask,
    },
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, Mutex,
    },
};

/// Each buffer gets a window of this many device addresses.
const BUFFER_WINDOW_SHIFT: u32 = 32;

/// Largest message (the port's `max_msg_sz`).
pub(crate) const MAX_MSG: usize = 1 << 30;

/// The most inline bytes a QP takes (`max_inline_data`).
pub(crate) const MAX_INLINE: u32 = 256;

/// The memory region key of PD `pd` (lkey and rkey of its DMA MRs).
pub(crate) fn mr_key(pd: u32) -> u32 {
    0x1000 + pd
}

/// A buffer's memory.
#[pin_data]
pub(crate) struct SoftBuffer {
    addr: u64,
    len: usize,
    #[pin]
    data: Mutex<KVec<u8>>,
}

/// What a device's QPs share: its buffers, memory regions and QPs, and its port LIDs.
#[pin_data]
pub(crate) struct Fabric {
    #[pin]
    buffers: Mutex<KVec<Arc<SoftBuffer>>>,
    /// (key, access) of each live memory region.
    #[pin]
    mrs: Mutex<KVec<(u32, AccessFlags)>>,
    #[pin]
    qps: Mutex<KVec<Arc<SoftQp>>>,
    next_window: Atomic<u64>,
    /// LID of port 0 (port `p` has `lid0 + p`).
    lid0: u32,
    /// The node GUID (GID 0 of every port is `fe80::<guid>`).
    guid: u64,
}

impl Fabric {
    /// An empty fabric for a device whose port `p` has LID `lid0 + p`.
    pub(crate) fn new(lid0: u32, guid: u64) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            buffers <- new_mutex!(KVec::new()),
            mrs <- new_mutex!(KVec::new()),
            qps <- new_mutex!(KVec::new()),
            next_window: Atomic::new(1),
            lid0,
            guid,
        }? Error)
    }

    /// Runs the send queues of the QPs that wait for a receive (after receives were posted to
    /// an SRQ, which any of them may be sending to).
    pub(crate) fn progress_waiting(&self) {
        let waiting = {
            let qps = self.qps.lock();
            let mut w = KVec::new();
            for q in qps.iter() {
                if q.state() == QpState::Rts && !q.queues.lock().sq.is_empty() {
                    // A QP missed here runs at its next post, as without an SRQ.
                    let _ = w.push(q.clone(), GFP_KERNEL);
                }
            }
            w
        };
        for q in waiting.iter() {
            self.progress(q);
        }
    }

    /// A new buffer of `len` zeroed bytes.
    pub(crate) fn alloc_buffer(self: &Arc<Self>, len: usize) -> Result<KBox<dyn DmaMemory>> {
        if len > 1 << BUFFER_WINDOW_SHIFT {
            return Err(EINVAL);
        }
        let mut data = KVec::with_capacity(len, GFP_KERNEL)?;
        data.resize(len, 0, GFP_KERNEL)?;
        let window = self.next_window.fetch_add(1, Relaxed);
        let buf = Arc::pin_init(
            try_pin_init!(SoftBuffer {
                addr: window << BUFFER_WINDOW_SHIFT,
                len,
                data <- new_mutex!(data),
            }? Error),
            GFP_KERNEL,
        )?;
        // The handle first: if listing fails, dropping it unlists nothing and frees the memory.
        let handle = KBox::new(
            BufferHandle {
                buf: buf.clone(),
                fabric: self.clone(),
            },
            GFP_KERNEL,
        )?;
        self.buffers.lock().push(buf, GFP_KERNEL)?;
        Ok(handle)
    }

    /// Records a memory region.
    pub(crate) fn add_mr(&self, key: u32, rights: AccessFlags) -> Result {
        self.mrs.lock().push((key, rights), GFP_KERNEL)?;
        Ok(())
    }

    /// Forgets a memory region.
    pub(crate) fn remove_mr(&self, key: u32, rights: AccessFlags) {
        let mut mrs = self.mrs.lock();
        if let Some(i) = mrs.iter().position(|&m| m == (key, rights)) {
            let _ = mrs.remove(i);
        }
    }

    /// Lists a new QP, so that its peer can reach it.
    pub(crate) fn add_qp(&self, qp: Arc<SoftQp>) -> Result {
        self.qps.lock().push(qp, GFP_KERNEL)?;
        Ok(())
    }

    /// Unlists a QP that is being destroyed.
    pub(crate) fn remove_qp(&self, qpn: u32) {
        self.qps.lock().retain(|q| q.qpn != qpn);
    }

    fn qp(&self, qpn: u32) -> Option<Arc<SoftQp>> {
        self.qps.lock().iter().find(|q| q.qpn == qpn).cloned()
    }

    /// Whether `key` names a live memory region of `pd` with every right in `rights`.
    fn key_allows(&self, key: u32, pd: u32, rights: AccessFlags) -> bool {
        key == mr_key(pd)
            && self
                .mrs
                .lock()
                .iter()
                .any(|&(k, r)| k == key && r.contains_all(rights))
    }

    /// The buffer holding `[addr, addr + len)` and the offset of `addr` in it.
    fn buffer(&self, addr: u64, len: usize) -> Option<(Arc<SoftBuffer>, usize)> {
        let buffers = self.buffers.lock();
        let buf = buffers
            .iter()
            .find(|b| addr >> BUFFER_WINDOW_SHIFT == b.addr >> BUFFER_WINDOW_SHIFT)?;
        let off = usize::try_from(addr - buf.addr).ok()?;
        let end = off.checked_add(len)?;
        (end <= buf.len).then(|| (buf.clone(), off))
    }

    /// Whether every entry of `sges` is local memory of `pd` that a key covers.
    fn local_ok(&self, sges: &[Sge], pd: u32) -> bool {
        sges.iter().all(|s| {
            self.key_allows(s.lkey, pd, AccessFlags::empty())
                && self.buffer(s.addr, s.length as usize).is_some()
        })
    }

    /// The bytes a send carries: its inline data, or what its `sges` describe.
    fn payload(&self, wr: &PendingSend, pd: u32) -> Result<KVec<u8>, WcStatus> {
        match &wr.inline {
            Some(data) => {
                let mut copy = KVec::with_capacity(data.len(), GFP_KERNEL)
                    .map_err(|_| WcStatus::GeneralErr)?;
                copy.extend_from_slice(data, GFP_KERNEL)
                    .map_err(|_| WcStatus::GeneralErr)?;
                Ok(copy)
            }
            None => self.gather(&wr.sges, pd),
        }
    }

    /// Copies out the bytes `sges` describe (local memory of `pd`).
    fn gather(&self, sges: &[Sge], pd: u32) -> Result<KVec<u8>, WcStatus> {
        let total = sges.iter().map(|s| s.length as usize).sum::<usize>();
        if total > MAX_MSG {
            return Err(WcStatus::LocLenErr);
        }
        let mut data = KVec::with_capacity(total, GFP_KERNEL).map_err(|_| WcStatus::GeneralErr)?;
        for s in sges {
            if !self.key_allows(s.lkey, pd, AccessFlags::empty()) {
                return Err(WcStatus::LocProtErr);
            }
            let (buf, off) = self
                .buffer(s.addr, s.length as usize)
                .ok_or(WcStatus::LocProtErr)?;
            let src = buf.data.lock();
            data.extend_from_slice(&src[off..off + s.length as usize], GFP_KERNEL)
                .map_err(|_| WcStatus::GeneralErr)?;
        }
        Ok(data)
    }

    /// Copies `data` into the memory `sges` describe (local memory of `pd`, written).
    fn scatter(&self, sges: &[Sge], pd: u32, data: &[u8]) -> Result<(), WcStatus> {
        self.scatter_at(sges, pd, 0, data)
    }

    /// Copies `data` into the memory `sges` describe, from byte `skip` of it on.
    fn scatter_at(&self, sges: &[Sge], pd: u32, skip: usize, data: &[u8]) -> Result<(), WcStatus> {
        let room = sges.iter().map(|s| s.length as usize).sum::<usize>();
        if data.len().saturating_add(skip) > room {
            return Err(WcStatus::LocLenErr);
        }
        let mut rest = data;
        let mut skip = skip;
        for s in sges {
            if rest.is_empty() {
                break;
            }
            let len = s.length as usize;
            if skip >= len {
                skip -= len;
                continue;
            }
            if !self.key_allows(s.lkey, pd, Access::LocalWrite.into()) {
                return Err(WcStatus::LocProtErr);
            }
            let n = rest.len().min(len - skip);
            let (buf, off) = self
                .buffer(s.addr + skip as u64, n)
                .ok_or(WcStatus::LocProtErr)?;
            buf.data.lock()[off..off + n].copy_from_slice(&rest[..n]);
            rest = &rest[n..];
            skip = 0;
        }
        Ok(())
    }

    /// The 40-byte GRH of a datagram of `len` bytes from port `port` to `ah`.
    fn grh(&self, ah: &AhAttr, len: usize) -> [u8; GRH_LEN] {
        let mut h = [0u8; GRH_LEN];
        let Some(g) = ah.grh else { return h };
        let first = (6u32 << 28) | (u32::from(g.traffic_class) << 20) | (g.flow_label & 0xf_ffff);
        h[0..4].copy_from_slice(&first.to_be_bytes());
        h[4..6].copy_from_slice(&(len as u16).to_be_bytes());
        // Next header: IBA transport.
        h[6] = 0x1b;
        h[7] = g.hop_limit;
        if g.sgid_index == 0 {
            h[8..16].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
            h[16..24].copy_from_slice(&self.guid.to_be_bytes());
        }
        h[24..40].copy_from_slice(&g.dgid.0);
        h
    }

    /// Carries out one UD send of `qp` (attributes `attr`): the datagram reaches a UD QP at
    /// RTR or RTS with the right Q_Key and a receive posted, or is dropped (the send succeeds
    /// either way, as on a fabric). Returns the outcome and the receiver to report to.
    fn execute_ud(
        &self,
        qp: &SoftQp,
        attr: &QpAttr,
        wr: &PendingSend,
    ) -> (Outcome, Option<Arc<SoftQp>>) {
        let Some(ud) = &wr.ud else {
            return (Outcome::failed(WcStatus::LocQpOpErr), None);
        };
        let data = match self.payload(wr, qp.pd) {
            Ok(d) => d,
            Err(s) => return (Outcome::failed(s), None),
        };
        if data.len() > UD_MTU {
            return (Outcome::failed(WcStatus::LocLenErr), None);
        }
        let Some(dest) = self.qp(ud.remote_qpn).filter(|d| {
            d.qp_type == QpType::Ud && matches!(d.state(), QpState::Rtr | QpState::Rts)
        }) else {
            return (Outcome::done(0), None);
        };
        let dest_attr = *dest.attr.lock();
        // A Q_Key with the top bit set means the sender's own (C's rule for privileged keys).
        let qkey = if ud.remote_qkey & 0x8000_0000 != 0 {
            attr.qkey
        } else {
            ud.remote_qkey
        };
        if qkey != dest_attr.qkey
            || u32::from(ud.ah.dlid) != self.lid0 + u32::from(dest_attr.port_num)
        {
            return (Outcome::done(0), None);
        }
        let Some(recv) = dest.take_recv() else {
            return (Outcome::done(0), None);
        };
        let mut wc = WorkCompletion {
            wr_id: recv.wr_id,
            opcode: WcOpcode::Recv,
            qp_num: dest.qpn,
            src_qp: qp.qpn,
            slid: (self.lid0 + u32::from(attr.port_num)) as u16,
            sl: ud.ah.sl,
            port_num: dest_attr.port_num,
            grh: ud.ah.grh.is_some(),
            imm_data: (wr.opcode == SendOpcode::SendWithImm).then_some(wr.imm_data),
            byte_len: (GRH_LEN + data.len()) as u32,
            ..WorkCompletion::default()
        };
        let grh = self.grh(&ud.ah, data.len());
        let written = if ud.ah.grh.is_some() {
            self.scatter_at(&recv.sges, dest.pd, 0, &grh)
        } else {
            Ok(())
        }
        .and_then(|()| self.scatter_at(&recv.sges, dest.pd, GRH_LEN, &data));
        if let Err(s) = written {
            wc.status = s;
            wc.byte_len = 0;
            dest.recv_cq.push(wc, false);
            dest.set_state(QpState::Err);
            dest.flush();
        } else {
            dest.recv_cq.push(wc, wr.flags & send_flags::SOLICITED != 0);
        }
        (Outcome::done(0), Some(dest))
    }

    /// The remote range of an RDMA operation on `peer`, if its key, range and rights allow it.
    fn remote(
        &self,
        peer: &SoftQp,
        rkey: u32,
        addr: u64,
        len: usize,
        right: Access,
    ) -> Option<(Arc<SoftBuffer>, usize)> {
        if !peer.attr.lock().qp_access_flags.contains(right)
            || !self.key_allows(rkey, peer.pd, right.into())
        {
            return None;
        }
        self.buffer(addr, len)
    }

    /// Runs `qp`'s send queue as far as it can go, then reports CQ events.
    pub(crate) fn progress(&self, qp: &Arc<SoftQp>) {
        let mut peer_seen: Option<Arc<SoftQp>> = None;
        {
            let _running = qp.progress.lock();
            loop {
                let attr = *qp.attr.lock();
                if attr.qp_state == QpState::Err {
                    qp.flush();
                    break;
                }
                if attr.qp_state != QpState::Rts {
                    break;
                }
                if qp.qp_type == QpType::Ud {
                    let wr = match qp.queues.lock().sq.remove(0) {
                        Ok(w) => w,
                        Err(_) => break,
                    };
                    let (out, dest) = self.execute_ud(qp, &attr, &wr);
                    qp.complete_send(&wr, &out);
                    if dest.is_some() {
                        peer_seen = dest;
                    }
                    continue;
                }
                // A send that needs a receive, and whose local memory is fine (a local error
                // completes at once, as at a real requester, before any receiver is asked).
                let needs_recv = match qp.queues.lock().sq.first() {
                    None => break,
                    Some(w) => {
                        matches!(
                            w.opcode,
                            SendOpcode::Send
                                | SendOpcode::SendWithImm
                                | SendOpcode::RdmaWriteWithImm
                        ) && (w.inline.is_some() || self.local_ok(&w.sges, qp.pd))
                    }
                };
                let peer = self
                    .qp(attr.dest_qp_num)
                    .filter(|p| matches!(p.state(), QpState::Rtr | QpState::Rts));
                if let Some(p) = &peer {
                    // Receiver not ready: not RC, or with `rnr_retry` 7 (retry for ever), the
                    // send waits for a receive; an RC send with fewer retries fails at once (RNR
                    // retries exhausted: there are no timers here, the retries are spent at once).
                    if needs_recv
                        && !p.has_recv()
                        && (qp.qp_type != QpType::Rc || attr.rnr_retry == 7)
                    {
                        peer_seen = peer;
                        break;
                    }
                }
                let wr = match qp.queues.lock().sq.remove(0) {
                    Ok(w) => w,
                    Err(_) => break,
                };
                let out = match &peer {
                    Some(p) => self.execute(qp, &attr, p, &wr),
                    None => Outcome::failed(WcStatus::RetryExcErr),
                };
                qp.complete_send(&wr, &out);
                if let Some(p) = &peer {
                    if out.peer_failed {
                        p.set_state(QpState::Err);
                        p.flush();
                    }
                }
                if peer.is_some() {
                    peer_seen = peer;
                }
            }
        }
        qp.send_cq.report();
        qp.recv_cq.report();
        qp.report_last_wqe();
        if let Some(p) = peer_seen {
            p.send_cq.report();
            p.recv_cq.report();
            p.report_last_wqe();
            if let Some(srq) = &p.srq {
                srq.report_limit();
            }
        }
    }

    /// Carries out one send work request of `qp` (with attributes `attr`) against `peer`.
    fn execute(&self, qp: &SoftQp, attr: &QpAttr, peer: &SoftQp, wr: &PendingSend) -> Outcome {
        let with_imm = matches!(
            wr.opcode,
            SendOpcode::SendWithImm | SendOpcode::RdmaWriteWithImm
        );
        match wr.opcode {
            SendOpcode::Send | SendOpcode::SendWithImm => {
                let data = match self.payload(wr, qp.pd) {
                    Ok(d) => d,
                    Err(s) => return Outcome::failed(s),
                };
                let Some(recv) = peer.take_recv() else {
                    return Outcome::failed(WcStatus::RnrRetryExcErr);
                };
                let mut wc = self.receive_completion(qp, attr, peer, recv.wr_id);
                match self.scatter(&recv.sges, peer.pd, &data) {
                    Ok(()) => {
                        wc.opcode = WcOpcode::Recv;
                        wc.byte_len = data.len() as u32;
                        wc.imm_data = with_imm.then_some(wr.imm_data);
                        peer.recv_cq.push(wc, wr.flags & send_flags::SOLICITED != 0);
                        Outcome::done(0)
                    }
                    Err(s) => {
                        wc.status = s;
                        peer.recv_cq.push(wc, false);
                        // The responder NAKs: an invalid request for a message too long, an
                        // operational error otherwise.
                        Outcome {
                            status: if s == WcStatus::LocLenErr {
                                WcStatus::RemInvReqErr
                            } else {
                                WcStatus::RemOpErr
                            },
                            byte_len: 0,
                            peer_failed: true,
                        }
                    }
                }
            }
            SendOpcode::RdmaWrite | SendOpcode::RdmaWriteWithImm => {
                let data = match self.payload(wr, qp.pd) {
                    Ok(d) => d,
                    Err(s) => return Outcome::failed(s),
                };
                let Some((buf, off)) = self.remote(
                    peer,
                    wr.rkey,
                    wr.remote_addr,
                    data.len(),
                    Access::RemoteWrite,
                ) else {
                    return Outcome::remote_access_error();
                };
                buf.data.lock()[off..off + data.len()].copy_from_slice(&data);
                if with_imm {
                    let Some(recv) = peer.take_recv() else {
                        return Outcome::failed(WcStatus::RnrRetryExcErr);
                    };
                    let mut wc = self.receive_completion(qp, attr, peer, recv.wr_id);
                    wc.opcode = WcOpcode::RecvRdmaWithImm;
                    wc.byte_len = data.len() as u32;
                    wc.imm_data = Some(wr.imm_data);
                    peer.recv_cq.push(wc, wr.flags & send_flags::SOLICITED != 0);
                }
                Outcome::done(0)
            }
            SendOpcode::AtomicCmpAndSwp | SendOpcode::AtomicFetchAndAdd => {
                let len = wr.sges.iter().map(|s| s.length as usize).sum::<usize>();
                if len != 8 {
                    return Outcome::failed(WcStatus::LocLenErr);
                }
                if wr.remote_addr % 8 != 0 {
                    return Outcome {
                        status: WcStatus::RemInvReqErr,
                        byte_len: 0,
                        peer_failed: true,
                    };
                }
                let Some((buf, off)) =
                    self.remote(peer, wr.rkey, wr.remote_addr, 8, Access::RemoteAtomic)
                else {
                    return Outcome::remote_access_error();
                };
                let old = {
                    let mut mem = buf.data.lock();
                    let word = &mut mem[off..off + 8];
                    let mut bytes = [0u8; 8];
                    bytes.copy_from_slice(word);
                    let old = u64::from_ne_bytes(bytes);
                    let new = if wr.opcode == SendOpcode::AtomicCmpAndSwp {
                        if old == wr.compare_add {
                            wr.swap
                        } else {
                            old
                        }
                    } else {
                        old.wrapping_add(wr.compare_add)
                    };
                    word.copy_from_slice(&new.to_ne_bytes());
                    old
                };
                match self.scatter(&wr.sges, qp.pd, &old.to_ne_bytes()) {
                    Ok(()) => Outcome::done(8),
                    Err(s) => Outcome::failed(s),
                }
            }
            SendOpcode::RdmaRead => {
                let len = wr.sges.iter().map(|s| s.length as usize).sum::<usize>();
                if len > MAX_MSG {
                    return Outcome::failed(WcStatus::LocLenErr);
                }
                let Some((buf, off)) =
                    self.remote(peer, wr.rkey, wr.remote_addr, len, Access::RemoteRead)
                else {
                    return Outcome::remote_access_error();
                };
                let mut data = KVec::new();
                if data
                    .extend_from_slice(&buf.data.lock()[off..off + len], GFP_KERNEL)
                    .is_err()
                {
                    return Outcome::failed(WcStatus::GeneralErr);
                }
                match self.scatter(&wr.sges, qp.pd, &data) {
                    Ok(()) => Outcome::done(len as u32),
                    Err(s) => Outcome::failed(s),
                }
            }
            // Refused at post (`queue_send`): never queued.
            SendOpcode::LocalInv | SendOpcode::SendWithInv | SendOpcode::RegMr => {
                Outcome::failed(WcStatus::LocQpOpErr)
            }
        }
    }

    /// A successful receive completion at `peer` of a message from `qp`, to be filled in.
    fn receive_completion(
        &self,
        qp: &SoftQp,
        attr: &QpAttr,
        peer: &SoftQp,
        wr_id: u64,
    ) -> WorkCompletion {
        let peer_port = peer.attr.lock().port_num;
        WorkCompletion {
            wr_id,
            qp_num: peer.qpn,
            src_qp: qp.qpn,
            slid: (self.lid0 + u32::from(attr.port_num)) as u16,
            port_num: peer_port,
            ..WorkCompletion::default()
        }
    }
}

/// What became of one send work request.
struct Outcome {
    status: WcStatus,
    byte_len: u32,
    /// The responder failed too and goes to the error state.
    peer_failed: bool,
}

impl Outcome {
    fn done(byte_len: u32) -> Self {
        Self {
            status: WcStatus::Success,
            byte_len,
            peer_failed: false,
        }
    }

    fn failed(status: WcStatus) -> Self {
        Self {
            status,
            byte_len: 0,
            peer_failed: false,
        }
    }

    fn remote_access_error() -> Self {
        Self {
            status: WcStatus::RemAccessErr,
            byte_len: 0,
            peer_failed: true,
        }
    }
}

/// The completion opcode of a send work request.
fn completed_opcode(op: SendOpcode) -> WcOpcode {
    match op {
        SendOpcode::Send | SendOpcode::SendWithImm => WcOpcode::Send,
        SendOpcode::RdmaWrite | SendOpcode::RdmaWriteWithImm => WcOpcode::RdmaWrite,
        SendOpcode::RdmaRead => WcOpcode::RdmaRead,
        SendOpcode::AtomicCmpAndSwp => WcOpcode::CompSwap,
        SendOpcode::AtomicFetchAndAdd => WcOpcode::FetchAdd,
        // Refused at post (`queue_send`): never queued.
        SendOpcode::LocalInv => WcOpcode::LocalInv,
        SendOpcode::SendWithInv => WcOpcode::Send,
        SendOpcode::RegMr => WcOpcode::RegMr,
    }
}

/// Bytes at the start of a UD receive buffer that hold the GRH (or nothing).
const GRH_LEN: usize = 40;

/// Largest datagram (the port's 4096-byte MTU).
const UD_MTU: usize = 4096;

/// A software address handle: its address.
pub(crate) struct SoftAh {
    pub(crate) attr: AhAttr,
}

/// An SRQ's receives and limits.
struct SrqState {
    rq: KVec<PendingRecv>,
    max_wr: u32,
    /// Armed limit (0: not armed).
    limit: u32,
    /// The limit was crossed: the event is raised once the provider's locks are dropped.
    limit_due: bool,
}

/// A software shared receive queue.
#[pin_data]
pub(crate) struct SoftSrq {
    pd: u32,
    max_sge: u32,
    events: EventNotifier,
    #[pin]
    state: Mutex<SrqState>,
}

impl SoftSrq {
    /// An SRQ of PD `pd` as `attr` asks.
    pub(crate) fn new(pd: u32, attr: &SrqAttr, events: EventNotifier) -> Result<Arc<Self>> {
        if attr.srq_limit > attr.max_wr {
            return Err(EINVAL);
        }
        Arc::pin_init(
            try_pin_init!(Self {
                pd,
                max_sge: attr.max_sge,
                events,
                state <- new_mutex!(SrqState {
                    rq: KVec::new(),
                    max_wr: attr.max_wr,
                    limit: attr.srq_limit,
                    limit_due: false,
                }),
            }? Error),
            GFP_KERNEL,
        )
    }

    /// Queues receives (at most `max_sge` entries each, `max_wr` in all).
    pub(crate) fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        queue_each(wrs, |wr| {
            if wr.sg_list.len() > self.max_sge as usize {
                return Err(EINVAL);
            }
            let mut sges = KVec::with_capacity(wr.sg_list.len(), GFP_KERNEL)?;
            sges.extend_from_slice(wr.sg_list, GFP_KERNEL)?;
            let mut st = self.state.lock();
            if st.rq.len() >= st.max_wr as usize {
                return Err(ENOMEM);
            }
            st.rq.push(
                PendingRecv {
                    wr_id: wr.wr_id,
                    sges,
                },
                GFP_KERNEL,
            )?;
            Ok(())
        })
    }

    /// The oldest receive; crossing the armed limit disarms it and makes its event due.
    fn take(&self) -> Option<PendingRecv> {
        let mut st = self.state.lock();
        let recv = st.rq.remove(0).ok()?;
        if st.limit != 0 && st.rq.len() < st.limit as usize {
            st.limit = 0;
            st.limit_due = true;
        }
        Some(recv)
    }

    fn has_recv(&self) -> bool {
        !self.state.lock().rq.is_empty()
    }

    /// Raises the limit event if it is due (no provider lock is held here).
    fn report_limit(&self) {
        let due = core::mem::take(&mut self.state.lock().limit_due);
        if due {
            self.events.raise(EventType::SrqLimitReached);
        }
    }

    /// Resizes (not below what is posted) or arms the limit (not above the size).
    pub(crate) fn modify(&self, attr: &SrqAttr, mask: SrqAttrMask) -> Result {
        let mut st = self.state.lock();
        let max_wr = if mask.contains(SrqAttrField::MaxWr) {
            attr.max_wr
        } else {
            st.max_wr
        };
        if max_wr == 0 || (max_wr as usize) < st.rq.len() {
            return Err(EINVAL);
        }
        if mask.contains(SrqAttrField::Limit) && attr.srq_limit > max_wr {
            return Err(EINVAL);
        }
        st.max_wr = max_wr;
        if mask.contains(SrqAttrField::Limit) {
            st.limit = attr.srq_limit;
        }
        Ok(())
    }

    /// Size, entries and the armed limit (0 once it fired).
    pub(crate) fn query(&self) -> SrqAttr {
        let st = self.state.lock();
        SrqAttr {
            max_wr: st.max_wr,
            max_sge: self.max_sge,
            srq_limit: st.limit,
        }
    }
}

/// A buffer as the core holds it; dropping it unlists the memory.
struct BufferHandle {
    buf: Arc<SoftBuffer>,
    fabric: Arc<Fabric>,
}

impl DmaMemory for BufferHandle {
    fn dma_addr(&self) -> u64 {
        self.buf.addr
    }

    fn len(&self) -> usize {
        self.buf.len
    }

    fn read(&self, offset: usize, out: &mut [u8]) -> Result {
        let data = self.buf.data.lock();
        let src = data.get(offset..offset + out.len()).ok_or(EINVAL)?;
        out.copy_from_slice(src);
        Ok(())
    }

    fn write(&self, offset: usize, data: &[u8]) -> Result {
        let mut mem = self.buf.data.lock();
        let dst = mem.get_mut(offset..offset + data.len()).ok_or(EINVAL)?;
        dst.copy_from_slice(data);
        Ok(())
    }
}

impl Drop for BufferHandle {
    fn drop(&mut self) {
        self.fabric
            .buffers
            .lock()
            .retain(|b| !Arc::ptr_eq(b, &self.buf));
    }
}

/// How a CQ is armed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Arm {
    Off,
    Next,
    Solicited,
}

/// A CQ's entries and arming.
struct Ring {
    entries: KVec<WorkCompletion>,
    arm: Arm,
    /// An event is due (reported once the provider's locks are dropped).
    event_due: bool,
    overflowed: bool,
    /// An overrun's `CqErr` is due.
    error_due: bool,
}

/// A software completion queue.
#[pin_data]
pub(crate) struct SoftCq {
    capacity: usize,
    notifier: CqNotifier,
    #[pin]
    ring: Mutex<Ring>,
}

impl SoftCq {
    /// A CQ of `capacity` entries reporting events to `notifier`.
    pub(crate) fn new(capacity: usize, notifier: CqNotifier) -> Result<Arc<Self>> {
        let entries = KVec::with_capacity(capacity.min(4096), GFP_KERNEL)?;
        Arc::pin_init(
            try_pin_init!(Self {
                capacity,
                notifier,
                ring <- new_mutex!(Ring {
                    entries,
                    arm: Arm::Off,
                    event_due: false,
                    overflowed: false,
                    error_due: false,
                }),
            }? Error),
            GFP_KERNEL,
        )
    }

    /// Adds a completion; notes an event if the CQ is armed for it.
    fn push(&self, wc: WorkCompletion, solicited: bool) {
        let mut r = self.ring.lock();
        if r.entries.len() >= self.capacity || r.entries.push(wc, GFP_KERNEL).is_err() {
            // Hardware reports an overflow as a CQ error event (raised once the provider's locks
            // are dropped); the completion is lost, as it would be there.
            if !r.overflowed {
                pr_err!("CQ overrun: completion of wr_id {:#x} lost\n", wc.wr_id);
                r.error_due = true;
            }
            r.overflowed = true;
            return;
        }
        let fire = match r.arm {
            Arm::Off => false,
            Arm::Next => true,
            Arm::Solicited => solicited || wc.status != WcStatus::Success,
        };
        if fire {
            r.arm = Arm::Off;
            r.event_due = true;
        }
    }

    /// Calls the consumer's handlers if an event is due (no provider lock is held here).
    pub(crate) fn report(&self) {
        let (due, error) = {
            let mut r = self.ring.lock();
            (
                core::mem::take(&mut r.event_due),
                core::mem::take(&mut r.error_due),
            )
        };
        if error {
            self.notifier.error();
        }
        if due {
            self.notifier.completion();
        }
    }

    /// Arms the CQ for one event.
    pub(crate) fn arm(&self, solicited_only: bool) {
        self.ring.lock().arm = if solicited_only {
            Arm::Solicited
        } else {
            Arm::Next
        };
    }

    /// Moves the oldest completions into `out`.
    pub(crate) fn poll(&self, out: &mut [WorkCompletion]) -> usize {
        let mut r = self.ring.lock();
        let n = out.len().min(r.entries.len());
        for (slot, wc) in out.iter_mut().zip(r.entries.iter()) {
            *slot = *wc;
        }
        // Keep the rest in order.
        let rest = r.entries.len() - n;
        r.entries.copy_within(n.., 0);
        r.entries.truncate(rest);
        n
    }
}

/// Queues work requests in order with `queue`, stopping at the first it refuses (C's `bad_wr`).
fn queue_each<W>(wrs: &[W], mut queue: impl FnMut(&W) -> Result) -> Result<(), PostError> {
    for (first_bad, wr) in wrs.iter().enumerate() {
        queue(wr).map_err(|err| PostError { first_bad, err })?;
    }
    Ok(())
}

/// A posted send.
struct PendingSend {
    wr_id: u64,
    opcode: SendOpcode,
    sges: KVec<Sge>,
    /// The bytes of an inline send, copied at post time (`sges` is then empty).
    inline: Option<KVec<u8>>,
    flags: u32,
    imm_data: u32,
    remote_addr: u64,
    rkey: u32,
    compare_add: u64,
    swap: u64,
    ud: Option<UdDest>,
}

/// Where a UD send goes.
struct UdDest {
    ah: AhAttr,
    remote_qpn: u32,
    remote_qkey: u32,
}

/// A posted receive.
struct PendingRecv {
    wr_id: u64,
    sges: KVec<Sge>,
}

/// A QP's work queues.
struct Queues {
    sq: KVec<PendingSend>,
    rq: KVec<PendingRecv>,
}

/// A software QP.
#[pin_data]
pub(crate) struct SoftQp {
    /// QP number.
    pub(crate) qpn: u32,
    pd: u32,
    qp_type: QpType,
    sq_sig_all: bool,
    pub(crate) cap: QpCap,
    send_cq: Arc<SoftCq>,
    recv_cq: Arc<SoftCq>,
    srq: Option<Arc<SoftSrq>>,
    events: EventNotifier,
    /// The QP went to the error state with an SRQ: `QpLastWqeReached` is due.
    last_wqe_due: Atomic<bool>,
    /// Attributes as last modified (and the error state the data path sets).
    #[pin]
    pub(crate) attr: Mutex<QpAttr>,
    #[pin]
    queues: Mutex<Queues>,
    /// Held while the send queue runs, so that its requests complete in order.
    #[pin]
    progress: Mutex<()>,
}

/// What a QP is created with.
pub(crate) struct SoftQpInit {
    pub(crate) qpn: u32,
    pub(crate) pd: u32,
    pub(crate) qp_type: QpType,
    pub(crate) sq_sig_all: bool,
    pub(crate) cap: QpCap,
    pub(crate) send_cq: Arc<SoftCq>,
    pub(crate) recv_cq: Arc<SoftCq>,
    pub(crate) srq: Option<Arc<SoftSrq>>,
    pub(crate) events: EventNotifier,
}

impl SoftQp {
    /// A QP in RESET.
    pub(crate) fn new(init: SoftQpInit) -> Result<Arc<Self>> {
        // Inline sends are copied at post time, up to `MAX_INLINE` bytes.
        if init.cap.max_inline_data > MAX_INLINE {
            return Err(EINVAL);
        }
        Arc::pin_init(
            try_pin_init!(Self {
                qpn: init.qpn,
                pd: init.pd,
                qp_type: init.qp_type,
                sq_sig_all: init.sq_sig_all,
                cap: init.cap,
                send_cq: init.send_cq,
                recv_cq: init.recv_cq,
                srq: init.srq,
                events: init.events,
                last_wqe_due: Atomic::new(false),
                attr <- new_mutex!(QpAttr::default()),
                queues <- new_mutex!(Queues {
                    sq: KVec::new(),
                    rq: KVec::new(),
                }),
                progress <- new_mutex!(()),
            }? Error),
            GFP_KERNEL,
        )
    }

    fn state(&self) -> QpState {
        self.attr.lock().qp_state
    }

    fn set_state(&self, state: QpState) {
        let was = core::mem::replace(&mut self.attr.lock().qp_state, state);
        if state == QpState::Err && was != QpState::Err && self.srq.is_some() {
            self.last_wqe_due.store(true, Relaxed);
        }
    }

    /// Raises `QpLastWqeReached` if it is due (no provider lock is held here).
    pub(crate) fn report_last_wqe(&self) {
        if self.last_wqe_due.xchg(false, Relaxed) {
            self.events.raise(EventType::QpLastWqeReached);
        }
    }

    fn take_recv(&self) -> Option<PendingRecv> {
        match &self.srq {
            Some(srq) => srq.take(),
            None => self.queues.lock().rq.remove(0).ok(),
        }
    }

    fn has_recv(&self) -> bool {
        match &self.srq {
            Some(srq) => srq.has_recv(),
            None => !self.queues.lock().rq.is_empty(),
        }
    }

    /// Completes a send as `out` says (signaled ones, and every failure, which also moves the
    /// QP to the error state).
    fn complete_send(&self, wr: &PendingSend, out: &Outcome) {
        let signaled = self.sq_sig_all || wr.flags & send_flags::SIGNALED != 0;
        if signaled || out.status != WcStatus::Success {
            self.send_cq.push(
                WorkCompletion {
                    wr_id: wr.wr_id,
                    status: out.status,
                    opcode: completed_opcode(wr.opcode),
                    byte_len: out.byte_len,
                    qp_num: self.qpn,
                    ..WorkCompletion::default()
                },
                false,
            );
        }
        if out.status != WcStatus::Success {
            self.set_state(QpState::Err);
        }
    }

    /// After a modify from `was`: RESET forgets the queues, ERR flushes them (and, entered from
    /// another state with an SRQ, makes last-WQE-reached due: once, as a device raises it). The events of a flush are
    /// reported at the next post (as `ib_drain_qp`'s marker requests do), not here: the core
    /// holds the QP while it modifies it, and a handler could modify it too.
    pub(crate) fn state_changed(&self, state: QpState, was: QpState) {
        match state {
            QpState::Reset => {
                let mut q = self.queues.lock();
                q.sq.clear();
                q.rq.clear();
            }
            QpState::Err => {
                self.flush();
                if self.srq.is_some() && was != QpState::Err {
                    self.last_wqe_due.store(true, Relaxed);
                }
            }
            _ => (),
        }
    }

    /// Completes every outstanding request with `WrFlushErr`.
    fn flush(&self) {
        let (sq, rq) = {
            let mut q = self.queues.lock();
            (core::mem::take(&mut q.sq), core::mem::take(&mut q.rq))
        };
        let flushed = |wr_id, opcode| WorkCompletion {
            wr_id,
            status: WcStatus::WrFlushErr,
            opcode,
            qp_num: self.qpn,
            ..WorkCompletion::default()
        };
        for w in sq.iter() {
            self.send_cq
                .push(flushed(w.wr_id, completed_opcode(w.opcode)), false);
        }
        for w in rq.iter() {
            self.recv_cq.push(flushed(w.wr_id, WcOpcode::Recv), false);
        }
    }

    /// Queues send work requests (rxe's rules: RTS or ERR only, an RC or UC QP, at most
    /// `max_send_sge` entries, at most `max_inline_data` inline bytes), then runs the send queue.
    /// `ah_of` gives the address of a UD work request's AH (`None`: the request is refused).
    pub(crate) fn post_send(
        self: &Arc<Self>,
        fabric: &Fabric,
        wrs: &[SendWr<'_>],
        ah_of: impl Fn(&SendWr<'_>) -> Option<AhAttr>,
    ) -> Result<(), PostError> {
        let result = queue_each(wrs, |wr| self.queue_send(wr, &ah_of));
        fabric.progress(self);
        result
    }

    fn queue_send(
        &self,
        wr: &SendWr<'_>,
        ah_of: &impl Fn(&SendWr<'_>) -> Option<AhAttr>,
    ) -> Result {
        // No fast-registration MRs here: their opcodes are refused on every QP.
        let fast_reg = matches!(
            wr.opcode,
            SendOpcode::LocalInv | SendOpcode::SendWithInv | SendOpcode::RegMr
        );
        let opcode_ok = !fast_reg
            && match self.qp_type {
                QpType::Ud => {
                    wr.ud.is_some()
                        && matches!(wr.opcode, SendOpcode::Send | SendOpcode::SendWithImm)
                }
                QpType::Uc => !matches!(
                    wr.opcode,
                    SendOpcode::RdmaRead
                        | SendOpcode::AtomicCmpAndSwp
                        | SendOpcode::AtomicFetchAndAdd
                ),
                QpType::Rc => true,
                // Not made by this provider.
                QpType::Smi | QpType::Gsi => false,
            };
        if !matches!(self.state(), QpState::Rts | QpState::Err)
            || !opcode_ok
            || wr.sg_list.len() > self.cap.max_send_sge as usize
        {
            return Err(EINVAL);
        }
        let inline = if wr.send_flags & send_flags::INLINE != 0 {
            let len = wr.inline_data.iter().map(|d| d.len()).sum::<usize>();
            if len > self.cap.max_inline_data as usize {
                // As C's mlx5 (`set_data_inl_seg`).
                return Err(ENOMEM);
            }
            let mut data = KVec::with_capacity(len, GFP_KERNEL)?;
            for d in wr.inline_data {
                data.extend_from_slice(d, GFP_KERNEL)?;
            }
            Some(data)
        } else {
            None
        };
        let ud = match (self.qp_type, &wr.ud) {
            (QpType::Ud, Some(ud)) => Some(UdDest {
                ah: ah_of(wr).ok_or(EINVAL)?,
                remote_qpn: ud.remote_qpn,
                remote_qkey: ud.remote_qkey,
            }),
            _ => None,
        };
        let mut sges = KVec::new();
        if inline.is_none() {
            sges.extend_from_slice(wr.sg_list, GFP_KERNEL)?;
        }
        let mut q = self.queues.lock();
        if q.sq.len() >= self.cap.max_send_wr as usize {
            return Err(ENOMEM);
        }
        q.sq.push(
            PendingSend {
                wr_id: wr.wr_id,
                opcode: wr.opcode,
                sges,
                inline,
                flags: wr.send_flags,
                imm_data: wr.imm_data,
                remote_addr: wr.remote_addr,
                rkey: wr.rkey,
                compare_add: wr.compare_add,
                swap: wr.swap,
                ud,
            },
            GFP_KERNEL,
        )?;
        Ok(())
    }

    /// Queues receive work requests (not in RESET; at most `max_recv_sge` entries), then lets
    /// the peer's waiting sends run.
    pub(crate) fn post_recv(
        self: &Arc<Self>,
        fabric: &Fabric,
        wrs: &[RecvWr<'_>],
    ) -> Result<(), PostError> {
        let result = queue_each(wrs, |wr| self.queue_recv(wr));
        let attr = *self.attr.lock();
        if attr.qp_state == QpState::Err {
            // Posted to a QP in error: flushed at once.
            fabric.progress(self);
        } else if let Some(p) = fabric.qp(attr.dest_qp_num) {
            fabric.progress(&p);
        }
        result
    }

    fn queue_recv(&self, wr: &RecvWr<'_>) -> Result {
        // A QP attached to an SRQ has no receive queue of its own.
        if self.srq.is_some()
            || self.state() == QpState::Reset
            || wr.sg_list.len() > self.cap.max_recv_sge as usize
        {
            return Err(EINVAL);
        }
        let mut sges = KVec::with_capacity(wr.sg_list.len(), GFP_KERNEL)?;
        sges.extend_from_slice(wr.sg_list, GFP_KERNEL)?;
        let mut q = self.queues.lock();
        if q.rq.len() >= self.cap.max_recv_wr as usize {
            return Err(ENOMEM);
        }
        q.rq.push(
            PendingRecv {
                wr_id: wr.wr_id,
                sges,
            },
            GFP_KERNEL,
        )?;
        Ok(())
    }
}
