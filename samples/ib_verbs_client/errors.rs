// SPDX-License-Identifier: GPL-2.0

//! The errors phase, as the C twin's: a SEND with no receive and `rnr_retry` 0 (RNR retries
//! exhausted, the next SEND flushed), a SEND from a wrong lkey (local protection), an RDMA read
//! with a wrong rkey (remote access); after each, RESET and reconnect; then a SEND works.

use super::env::{connect_rc, fill_at, holds_at, intact, reconnect, Env};
use ib_core::{
    device::IbDevice,
    verbs::wr::{send_flags, RecvWr, SendOpcode, SendWr, WorkCompletion},
    verbs::{Access, AccessFlags, Qp},
};
use kernel::{prelude::*, str::BStr, sync::Arc};

/// Bytes per message.
const MSG: usize = 4096;

/// One signalled work request of `opcode` from all of tx (lkey `lkey`; RDMA: to rx with
/// `rkey`); its completion.
fn one(
    e: &Env,
    qp: &Qp,
    wr_id: u64,
    opcode: SendOpcode,
    lkey: u32,
    rkey: u32,
) -> Result<WorkCompletion> {
    let sge = [e.tx.sge(0, MSG as u32, lkey)?];
    qp.post_send(&[SendWr {
        wr_id,
        opcode,
        sg_list: &sge,
        send_flags: send_flags::SIGNALED,
        remote_addr: e.rx.dma_addr(),
        rkey,
        ..SendWr::default()
    }])?;
    e.collect(1)?.first().copied().ok_or(EIO)
}

/// The phase on `dev`.
pub(crate) fn exercise(dev: &Arc<IbDevice>, name: &BStr) -> Result {
    let rw: AccessFlags = Access::RemoteWrite | Access::RemoteRead;
    let e = Env::create(dev, 64, MSG, rw | Access::LocalWrite)?;
    let qp = e.rc_qp(16, 16, 0, None)?;
    connect_rc(&qp, e.lid, qp.qp_num(), rw, 0)?;
    let (lkey, rkey) = (e.mr.lkey(), e.mr.rkey());
    fill_at(&e.tx, 0, MSG, 0x55)?;
    let rnr = one(&e, &qp, 6, SendOpcode::Send, lkey, 0)?;
    let flush = one(&e, &qp, 7, SendOpcode::Send, lkey, 0)?;
    reconnect(&qp, e.lid, rw, 7)?;
    let prot = one(&e, &qp, 8, SendOpcode::Send, lkey ^ 0x8000, 0)?;
    reconnect(&qp, e.lid, rw, 7)?;
    let rd = one(&e, &qp, 9, SendOpcode::RdmaRead, lkey, rkey ^ 0x8000)?;
    reconnect(&qp, e.lid, rw, 7)?;
    fill_at(&e.tx, 0, MSG, 0x66)?;
    let rs = [e.rx.sge(0, MSG as u32, lkey)?];
    qp.post_recv(&[RecvWr {
        wr_id: 10,
        sg_list: &rs,
    }])?;
    let ss = [e.tx.sge(0, MSG as u32, lkey)?];
    qp.post_send(&[SendWr {
        wr_id: 11,
        opcode: SendOpcode::Send,
        sg_list: &ss,
        send_flags: send_flags::SIGNALED,
        ..SendWr::default()
    }])?;
    let wcs = e.collect(2)?;
    let find =
        |id| -> Result<WorkCompletion> { wcs.iter().find(|w| w.wr_id == id).copied().ok_or(EIO) };
    let (send, recv) = (find(11)?, find(10)?);
    pr_info!(
        "{name}: errors: send without receive, rnr_retry 0: {:?}, next send {:?}; wrong lkey: {:?}; rdma read with wrong rkey: {:?}; after reset and reconnect: send {:?}, recv {:?}, data {}\n",
        rnr.status,
        flush.status,
        prot.status,
        rd.status,
        send.status,
        recv.status,
        intact(holds_at(&e.rx, 0, MSG, 0x66)?)
    );
    Ok(())
}
