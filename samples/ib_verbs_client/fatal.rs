// SPDX-License-Identifier: GPL-2.0

//! The device's fatal error, as a kernel ULP meets it (the C twin's "fatal" section): phase 1's
//! QP is left with receives posted, and a device event handler waits for `DEVICE_FATAL`. When
//! it comes (in process context, from the core's event work), the handler polls the QP's CQ,
//! which gives the receives back flushed (the driver completes them in software: the device
//! completes nothing any more), and posts a send, which the driver refuses with `EIO`.

use ib_core::{
    device::events::EventType,
    device::{DeviceEventRegistration, IbDevice},
    verbs::wr::{RecvWr, SendOpcode, SendWr, Sge, WcStatus, WorkCompletion},
    verbs::{Cq, Qp},
};
use kernel::{prelude::*, str::CString, sync::Arc};

/// Receives left posted on phase 1's QP.
pub(crate) const LEFT_POSTED: u64 = 4;
/// The request id of the first of them (the others follow).
pub(crate) const FIRST_WR_ID: u64 = 100;

/// Posts the receives left for the fatal error to flush; each into `rx`.
pub(crate) fn post_left_receives(qp: &Qp, rx: Sge) -> Result {
    for i in 0..LEFT_POSTED {
        qp.post_recv(&[RecvWr {
            wr_id: FIRST_WR_ID + i,
            sg_list: &[rx],
        }])
        .map_err(|e| e.err)?;
    }
    Ok(())
}

/// What the handler reports after the fatal error.
fn report(name: &CStr, cq: &Cq, qp: &Qp, tx: Sge) {
    let mut wc = [WorkCompletion::default(); 8];
    let (mut flushed, mut other) = (0u32, 0u32);
    let (mut first, mut last) = (u64::MAX, 0u64);
    // Bounded: a CQ gives back at most what was posted.
    for _ in 0..64 {
        let n = match cq.poll(&mut wc) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for w in wc.iter().take(n) {
            if w.status == WcStatus::WrFlushErr {
                flushed += 1;
                first = first.min(w.wr_id);
                last = last.max(w.wr_id);
            } else {
                other += 1;
            }
        }
    }
    let sent = qp.post_send(&[SendWr {
        wr_id: 200,
        opcode: SendOpcode::Send,
        sg_list: &[tx],
        ..SendWr::default()
    }]);
    let err = match sent {
        Ok(()) => 0,
        Err(e) => e.err.to_errno(),
    };
    if flushed == 0 {
        first = 0;
    }
    pr_info!(
        "{}: after the fatal error: {flushed} completion(s) flushed (WrFlushErr, wr_id {first}..{last}), {other} other; a send fails with err {err}\n",
        name
    );
}

/// Registers the handler of `dev`'s events for phase 1's `cq` and `qp` (`tx`: what the send
/// after the error would carry). Kept until the client's `remove`.
pub(crate) fn watch(
    dev: &Arc<IbDevice>,
    cq: Arc<Cq>,
    qp: Arc<Qp>,
    tx: Sge,
) -> Result<DeviceEventRegistration> {
    let name = CString::try_from_fmt(fmt!("{}", kernel::str::BStr::from_bytes(&dev.name())))?;
    DeviceEventRegistration::new(
        dev,
        KBox::new(
            move |event: EventType, port: u32| {
                if event != EventType::DeviceFatal {
                    return;
                }
                pr_info!("{}: event DEVICE_FATAL on port {port}\n", &*name);
                report(&name, &cq, &qp, tx);
            },
            GFP_KERNEL,
        )?,
    )
}
