// SPDX-License-Identifier: GPL-2.0

//! The atomics phase, as the C twin's: compare-and-swap (matching and not) and fetch-and-add,
//! signalled and not, on an RC QP connected to itself; the old values and the memory checked.
//! A driver may refuse atomics from kernel consumers (C's mlx5_ib does, with `EOPNOTSUPP`):
//! then the line says so and that memory stayed.

use super::env::{connect_rc, Env};
use ib_core::{
    device::IbDevice,
    verbs::dma_buffer::DmaBuffer,
    verbs::wr::{send_flags, SendOpcode, SendWr, WorkCompletion},
    verbs::{Access, AccessFlags, Qp},
};
use kernel::{prelude::*, str::BStr, sync::Arc};

/// The 8-byte word at the start of `buf`.
fn word(buf: &DmaBuffer) -> Result<u64> {
    let mut b = [0u8; 8];
    buf.read(0, &mut b)?;
    Ok(u64::from_ne_bytes(b))
}

/// One atomic on the word at rx[0], its old value landing in tx[0]; with `SIGNALED` in
/// `flags`, its completion.
fn atomic(
    e: &Env,
    qp: &Qp,
    opcode: SendOpcode,
    compare_add: u64,
    swap: u64,
    flags: u32,
) -> Result<Option<WorkCompletion>> {
    let sge = [e.tx.sge(0, 8, e.mr.lkey())?];
    qp.post_send(&[SendWr {
        wr_id: 5,
        opcode,
        sg_list: &sge,
        send_flags: flags,
        remote_addr: e.rx.dma_addr(),
        rkey: e.mr.rkey(),
        compare_add,
        swap,
        ..SendWr::default()
    }])?;
    if flags & send_flags::SIGNALED == 0 {
        return Ok(None);
    }
    Ok(e.collect(1)?.first().copied())
}

/// The phase on `dev`.
pub(crate) fn exercise(dev: &Arc<IbDevice>, name: &BStr) -> Result {
    if dev.attr().atomic_cap == 0 {
        pr_info!("{name}: atomics: not supported (atomic_cap none)\n");
        return Ok(());
    }
    let acc: AccessFlags = Access::RemoteAtomic | Access::RemoteRead | Access::RemoteWrite;
    let e = Env::create(dev, 64, 64, acc | Access::LocalWrite)?;
    let qp = e.rc_qp(16, 16, 0, None)?;
    connect_rc(&qp, e.lid, qp.qp_num(), acc, 7)?;
    e.rx.write(0, &0x1111u64.to_ne_bytes())?;
    let signaled = send_flags::SIGNALED;
    use SendOpcode::{AtomicCmpAndSwp as Cas, AtomicFetchAndAdd as Faa};
    // Compare-and-swap that matches.
    let w0 = match atomic(&e, &qp, Cas, 0x1111, 0x2222, signaled) {
        Err(err) if err == EOPNOTSUPP => {
            // The driver refuses atomics from kernel consumers (as C mlx5_ib).
            let more = atomic(&e, &qp, Faa, 0x10, 0, signaled).map_or_else(|e| e.to_errno(), |_| 0);
            pr_info!(
                "{name}: atomics: post_send refuses compare-and-swap (err {}) and fetch-and-add (err {}) on a kernel QP; memory {:#x} untouched\n",
                err.to_errno(),
                more,
                word(&e.rx)?
            );
            return Ok(());
        }
        r => r?.ok_or(EIO)?,
    };
    let (o0, m0) = (word(&e.tx)?, word(&e.rx)?);
    // Compare-and-swap that does not match: memory stays.
    let w1 = atomic(&e, &qp, Cas, 0x1111, 0x3333, signaled)?.ok_or(EIO)?;
    let (o1, m1) = (word(&e.tx)?, word(&e.rx)?);
    let w2 = atomic(&e, &qp, Faa, 0x10, 0, signaled)?.ok_or(EIO)?;
    let (o2, m2) = (word(&e.tx)?, word(&e.rx)?);
    // An unsignalled fetch-and-add, then a signalled one: one completion for both.
    atomic(&e, &qp, Faa, 1, 0, 0)?;
    let w3 = atomic(&e, &qp, Faa, 1, 0, signaled)?.ok_or(EIO)?;
    let (o3, m3) = (word(&e.tx)?, word(&e.rx)?);
    let mut extra = [WorkCompletion::default(); 1];
    let more = e.cq.poll(&mut extra)?;
    pr_info!(
        "{name}: atomics: cas 0x1111->0x2222 {:?} {:?} old {o0:#x} mem {m0:#x}; cas 0x1111->0x3333 {:?} old {o1:#x} mem {m1:#x}; fetch-add 0x10 {:?} {:?} old {o2:#x} mem {m2:#x}; unsignalled fetch-add 1 then signalled fetch-add 1: {:?} old {o3:#x} mem {m3:#x}, {more} more completion(s)\n",
        w0.opcode,
        w0.status,
        w1.status,
        w2.opcode,
        w2.status,
        w3.status
    );
    Ok(())
}
