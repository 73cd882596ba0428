// SPDX-License-Identifier: GPL-2.0

//! The sample's second phase, on objects of its own that it frees before `add` returns: a UD
//! datagram through an address handle (with a GRH) into a QP receiving from an SRQ whose limit
//! fires, the last-WQE event of that QP when it goes to error, and the two atomics on an RC QP
//! connected to itself. One line per part.

use ib_core::{
    device::IbDevice,
    dma_buffer::DmaBuffer,
    verbs::{
        Access, Ah, AhAttr, Cq, CqInit, EventHandler, EventType, GlobalRoute, Mr, Pd, Qp, QpAttr,
        QpAttrField as F, QpCap, QpInit, QpState, QpType, Srq, SrqAttr, SrqAttrField,
    },
    wr::{send_flags, RecvWr, SendOpcode, SendWr, UdWr, WorkCompletion},
};
use kernel::{
    prelude::*,
    str::BStr,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
    time::{delay::fsleep, Delta},
};

/// The Q_Key of the UD QPs.
const QKEY: u32 = 0x1111_1111;
/// Bytes of the datagram.
const DGRAM: usize = 256;
/// Room for the GRH at the start of a UD receive.
const GRH: usize = 40;
/// Bytes of each buffer.
const BUF: usize = 4096;
/// Where the atomics' target word is in the receive buffer.
const WORD: usize = 2048;

/// Counts the events of `kind` it is given.
fn counter(kind: EventType) -> Result<(Arc<Atomic<u32>>, EventHandler)> {
    let count = Arc::new(Atomic::new(0u32), GFP_KERNEL)?;
    let c = count.clone();
    let handler: EventHandler = KBox::new(
        move |e: EventType| {
            if e == kind {
                c.fetch_add(1, Relaxed);
            }
        },
        GFP_KERNEL,
    )?;
    Ok((count, handler))
}

/// Polls `cq` until `n` completions are in (about 1 s at most).
fn poll(cq: &Cq, n: usize) -> Result<KVec<WorkCompletion>> {
    let mut got = KVec::new();
    let mut wc = [WorkCompletion::default(); 4];
    for _ in 0..100 {
        let k = cq.poll(&mut wc)?;
        got.extend_from_slice(&wc[..k], GFP_KERNEL)?;
        if got.len() >= n {
            return Ok(got);
        }
        if k == 0 {
            fsleep(Delta::from_millis(10));
        }
    }
    Err(ETIMEDOUT)
}

/// Byte `i` of the datagram.
fn pattern(i: usize) -> u8 {
    (i as u8).wrapping_mul(13).wrapping_add(5)
}

/// Reads the 8-byte word at `offset` of `buf`.
fn word(buf: &DmaBuffer, offset: usize) -> Result<u64> {
    let mut b = [0u8; 8];
    buf.read(offset, &mut b)?;
    Ok(u64::from_ne_bytes(b))
}

/// RESET to RTS for a UD QP on port 1.
fn ud_ready(qp: &Qp) -> Result {
    let init = QpAttr {
        qp_state: QpState::Init,
        port_num: 1,
        qkey: QKEY,
        ..QpAttr::default()
    };
    qp.modify(&init, F::State | F::PkeyIndex | F::Port | F::Qkey)?;
    let rtr = QpAttr {
        qp_state: QpState::Rtr,
        ..QpAttr::default()
    };
    qp.modify(&rtr, F::State.into())?;
    let rts = QpAttr {
        qp_state: QpState::Rts,
        sq_psn: 0x77,
        ..QpAttr::default()
    };
    qp.modify(&rts, F::State | F::SqPsn)
}

/// RESET to RTS for an RC QP connected to itself, with remote atomics allowed.
fn rc_loop(qp: &Qp) -> Result {
    let init = QpAttr {
        qp_state: QpState::Init,
        port_num: 1,
        qp_access_flags: Access::RemoteAtomic | Access::RemoteRead | Access::RemoteWrite,
        ..QpAttr::default()
    };
    qp.modify(&init, F::State | F::Port | F::PkeyIndex | F::AccessFlags)?;
    let rtr = QpAttr {
        qp_state: QpState::Rtr,
        path_mtu: 5,
        dest_qp_num: qp.qp_num(),
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        ..QpAttr::default()
    };
    qp.modify(
        &rtr,
        F::State | F::Av | F::PathMtu | F::DestQpn | F::RqPsn | F::MaxDestRdAtomic | F::MinRnrTimer,
    )?;
    let rts = QpAttr {
        qp_state: QpState::Rts,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 1,
        ..QpAttr::default()
    };
    qp.modify(
        &rts,
        F::State | F::Timeout | F::RetryCnt | F::RnrRetry | F::SqPsn | F::MaxQpRdAtomic,
    )
}

/// One signaled atomic of `qp` on the word of `rx`, its old value landing in `tx`; returns the
/// completion, the value returned and the word afterwards.
fn atomic(
    qp: &Qp,
    cq: &Cq,
    mr: &Mr,
    bufs: &[DmaBuffer; 2],
    opcode: SendOpcode,
    compare_add: u64,
    swap: u64,
) -> Result<(WorkCompletion, u64, u64)> {
    let [tx, rx] = bufs;
    let sge = [tx.sge(0, 8, mr.lkey())?];
    qp.post_send(&[SendWr {
        wr_id: 9,
        opcode,
        sg_list: &sge,
        send_flags: send_flags::SIGNALED,
        remote_addr: rx.dma_addr() + WORD as u64,
        rkey: mr.rkey(),
        compare_add,
        swap,
        ..SendWr::default()
    }])?;
    let wc = poll(cq, 1)?.first().copied().ok_or(EIO)?;
    Ok((wc, word(tx, 0)?, word(rx, WORD)?))
}

/// The phase on `dev`.
pub(crate) fn exercise(dev: &Arc<IbDevice>, name: &BStr) -> Result {
    let pd = Pd::alloc(dev, ib_core::kern_name!())?;
    let mr = Mr::get_dma_mr(
        &pd,
        Access::LocalWrite | Access::RemoteWrite | Access::RemoteRead | Access::RemoteAtomic,
    )?;
    let cq = Cq::create(
        dev,
        &CqInit {
            cqe: 64,
            comp_vector: 0,
        },
        None,
        ib_core::kern_name!(),
    )?;
    let (limit_events, on_limit) = counter(EventType::SrqLimitReached)?;
    let srq = Srq::create(
        &pd,
        &SrqAttr {
            max_wr: 16,
            max_sge: 1,
            srq_limit: 0,
        },
        Some(on_limit),
    )?;
    let (last_wqe_events, on_last_wqe) = counter(EventType::QpLastWqeReached)?;
    let cap = QpCap {
        max_send_wr: 8,
        max_recv_wr: 8,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let qp_init = |qp_type, srq: Option<Arc<Srq>>, handler| QpInit {
        qp_type,
        send_cq: cq.clone(),
        recv_cq: cq.clone(),
        cap,
        sq_sig_all: false,
        kern_name: ib_core::kern_name!(),
        srq,
        event_handler: handler,
    };
    let sender = Qp::create(&pd, qp_init(QpType::Ud, None, None))?;
    let receiver = Qp::create(
        &pd,
        qp_init(QpType::Ud, Some(srq.clone()), Some(on_last_wqe)),
    )?;
    ud_ready(&sender)?;
    ud_ready(&receiver)?;
    let port = dev.query_port(1)?;
    let dgid = dev.cached_gid(1, 0).unwrap_or_default();
    let ah = Ah::create(
        &pd,
        &AhAttr {
            dlid: port.lid as u16,
            sl: 3,
            port_num: 1,
            grh: Some(GlobalRoute {
                dgid,
                hop_limit: 64,
                ..GlobalRoute::default()
            }),
            ..AhAttr::default()
        },
    )?;
    let bufs = [DmaBuffer::alloc(dev, BUF)?, DmaBuffer::alloc(dev, BUF)?];
    let [tx, rx] = &bufs;
    // Two receives on the SRQ, then its limit armed at 2: the first datagram crosses it.
    for i in 0..2u64 {
        let sge = [rx.sge(i as usize * 1024, 1024, mr.lkey())?];
        srq.post_recv(&[RecvWr {
            wr_id: 20 + i,
            sg_list: &sge,
        }])?;
    }
    srq.modify(
        &SrqAttr {
            srq_limit: 2,
            ..SrqAttr::default()
        },
        SrqAttrField::Limit.into(),
    )?;
    let mut data = KVec::with_capacity(DGRAM, GFP_KERNEL)?;
    for i in 0..DGRAM {
        data.push(pattern(i), GFP_KERNEL)?;
    }
    tx.write(0, &data)?;
    let sge = [tx.sge(0, DGRAM as u32, mr.lkey())?];
    sender.post_send(&[SendWr {
        wr_id: 10,
        opcode: SendOpcode::Send,
        sg_list: &sge,
        send_flags: send_flags::SIGNALED,
        ud: Some(UdWr {
            ah: &ah,
            remote_qpn: receiver.qp_num(),
            remote_qkey: QKEY,
        }),
        ..SendWr::default()
    }])?;
    let wcs = poll(&cq, 2)?;
    let send = wcs.iter().find(|w| w.wr_id == 10).copied().ok_or(EIO)?;
    let recv = wcs.iter().find(|w| w.wr_id == 20).copied().ok_or(EIO)?;
    let mut got = KVec::new();
    got.resize(DGRAM, 0, GFP_KERNEL)?;
    rx.read(GRH, &mut got)?;
    let mut gid = [0u8; 16];
    rx.read(24, &mut gid)?;
    let intact = got[..] == data[..] && gid == dgid.0;
    let limit_now = srq.query()?.srq_limit;
    pr_info!(
        "{name}: ud: send {:?} {:?}; recv {:?} {:?} {} bytes from qp {:#x} sl {} grh {}; data {}; srq limit event(s) {}, limit now {}\n",
        send.opcode,
        send.status,
        recv.opcode,
        recv.status,
        recv.byte_len,
        recv.src_qp,
        recv.sl,
        if recv.grh { "yes" } else { "no" },
        if intact { "intact" } else { "CORRUPT" },
        limit_events.load(Relaxed),
        limit_now
    );
    // The receiver goes to error: it takes no more of the SRQ's receives.
    let err = QpAttr {
        qp_state: QpState::Err,
        ..QpAttr::default()
    };
    receiver.modify(&err, F::State.into())?;
    pr_info!(
        "{name}: srq: qp {:#x} in error: last wqe reached event(s) {}\n",
        receiver.qp_num(),
        last_wqe_events.load(Relaxed)
    );
    // Atomics on an RC QP connected to itself.
    let rc = Qp::create(&pd, qp_init(QpType::Rc, None, None))?;
    rc_loop(&rc)?;
    rx.write(WORD, &5u64.to_ne_bytes())?;
    let (faa, faa_old, faa_now) =
        atomic(&rc, &cq, &mr, &bufs, SendOpcode::AtomicFetchAndAdd, 3, 0)?;
    let (cas, cas_old, cas_now) =
        atomic(&rc, &cq, &mr, &bufs, SendOpcode::AtomicCmpAndSwp, 8, 100)?;
    let (_, miss_old, miss_now) = atomic(&rc, &cq, &mr, &bufs, SendOpcode::AtomicCmpAndSwp, 7, 1)?;
    pr_info!(
        "{name}: atomics: fetch-add {:?} {:?} {} bytes old {} now {}; cmp-swap {:?} {:?} old {} now {}; unequal cmp-swap old {} now {}\n",
        faa.opcode,
        faa.status,
        faa.byte_len,
        faa_old,
        faa_now,
        cas.opcode,
        cas.status,
        cas_old,
        cas_now,
        miss_old,
        miss_now
    );
    Ok(())
}
