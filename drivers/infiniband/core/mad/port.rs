// SPDX-License-Identifier: GPL-2.0

//! A port's MAD queue pairs (C's `ib_mad_port_open` and `ib_mad_port_start`): a PD, one CQ
//! for both QPs, QP0 (where the port takes subnet management) and QP1 with 128 send and 512
//! receive entries, moved to RTS with the default P_Key's index and their Q_Keys, and the
//! buffers their work requests use: a receive slot per receive entry (a GRH and a MAD), a send
//! slot per send entry (a MAD).

use crate::{
    attrs::{PortImmutable, CORE_CAP_IB_SMI},
    device::ib_device::IbDevice,
    mad::types::{GRH_SIZE, MAD_SIZE},
    verbs::dma_buffer::DmaBuffer,
    verbs::types::{QpAttr, QpAttrField as F, QpCap, QpState, QpType},
    verbs::wr::{RecvWr, Sge},
    verbs::{Cq, Pd, Qp, QpInit},
};
use core::num::NonZeroUsize;
use kernel::{prelude::*, sync::Arc};

/// Send entries per QP (C's `send_queue_size` default).
pub(crate) const SEND_QUEUE_SIZE: u32 = 128;
/// Receive entries per QP (C's `recv_queue_size` default).
pub(crate) const RECV_QUEUE_SIZE: u32 = 512;
/// QP1's Q_Key (`IB_QP1_QKEY`).
pub(crate) const QP1_QKEY: u32 = 0x8001_0000;
/// A receive slot: the GRH area, then the MAD.
pub(crate) const RECV_SLOT: usize = GRH_SIZE + MAD_SIZE;
/// The bytes of a receive slot a completion of `byte_len` filled (the GRH area included);
/// the rest of the slot is not read.
pub(crate) fn recv_len(byte_len: u32) -> usize {
    (byte_len as usize).min(RECV_SLOT)
}

/// The P_Key a MAD QP uses if the port has it (`IB_DEFAULT_PKEY_FULL`).
const DEFAULT_PKEY_FULL: u16 = 0xffff;
/// Bytes per buffer page of a ring.
const PAGE: usize = 4096;

/// Slots of a fixed size in page-sized buffers the device can reach.
pub(crate) struct Ring {
    pages: KVec<DmaBuffer>,
    slot: usize,
    per_page: NonZeroUsize,
    count: u32,
}

impl Ring {
    fn new(dev: &Arc<IbDevice>, count: u32, slot: usize) -> Result<Self> {
        let per_page = NonZeroUsize::new(PAGE.checked_div(slot).unwrap_or(0)).ok_or(EINVAL)?;
        let n = (count as usize + per_page.get() - 1) / per_page;
        let mut pages = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            pages.push(DmaBuffer::alloc(dev, PAGE)?, GFP_KERNEL)?;
        }
        Ok(Self {
            pages,
            slot,
            per_page,
            count,
        })
    }

    fn place(&self, i: u32) -> Result<(&DmaBuffer, usize)> {
        if i >= self.count {
            return Err(EINVAL);
        }
        let i = i as usize;
        let page = self.pages.get(i / self.per_page).ok_or(EINVAL)?;
        Ok((page, (i % self.per_page) * self.slot))
    }

    /// The scatter/gather entry of slot `i`.
    pub(crate) fn sge(&self, i: u32, lkey: u32) -> Result<Sge> {
        let (p, off) = self.place(i)?;
        p.sge(off, self.slot as u32, lkey)
    }

    /// Copies slot `i` into `out`.
    pub(crate) fn read(&self, i: u32, out: &mut [u8]) -> Result {
        let (p, off) = self.place(i)?;
        p.read(off, out)
    }

    /// Copies `data` into slot `i`.
    pub(crate) fn write(&self, i: u32, data: &[u8]) -> Result {
        let (p, off) = self.place(i)?;
        p.write(off, data)
    }
}

/// One of a port's MAD QPs with its buffers. The QP is declared first: it is destroyed
/// before the buffers the device writes into are freed.
pub(crate) struct MadQp {
    pub(crate) qp: Arc<Qp>,
    pub(crate) recv: Ring,
    pub(crate) send: Ring,
    /// Send slots not in use.
    pub(crate) free: KVec<u32>,
    /// The QP type (SMI for QP0, GSI for QP1).
    pub(crate) qp_type: QpType,
}

/// Whether `port` takes subnet management MADs (C's `rdma_cap_ib_smi`).
pub(crate) fn has_smi(imm: &PortImmutable) -> bool {
    imm.core_cap_flags & CORE_CAP_IB_SMI != 0
}

/// The index of the full default P_Key in `port`'s table, else 0 (C's `ib_find_pkey` as
/// `ib_mad_port_start` uses it).
fn default_pkey_index(dev: &IbDevice, port: u32) -> u16 {
    let len = dev.port_immutable(port).map_or(0, |p| p.pkey_tbl_len);
    (0..len)
        .find(|&i| dev.cached_pkey(port, i.into()) == Some(DEFAULT_PKEY_FULL))
        .unwrap_or(0)
}

/// `wr_id` of a receive: bit 40 set, the QP index at bits 32..39, the slot below.
pub(crate) const WR_RECV: u64 = 1 << 40;

/// The `wr_id` of slot `slot` of QP `qpi`.
pub(crate) fn wr_id(recv: bool, qpi: usize, slot: u32) -> u64 {
    (if recv { WR_RECV } else { 0 }) | ((qpi as u64) << 32) | u64::from(slot)
}

/// The QP index and slot of a `wr_id`.
pub(crate) fn from_wr_id(id: u64) -> (bool, usize, u32) {
    (id & WR_RECV != 0, ((id >> 32) & 0xff) as usize, id as u32)
}

impl MadQp {
    /// Creates QP `qp_type` of `port` on `cq`, its buffers, moves it to RTS and posts every
    /// receive (C's `create_mad_qp`, `ib_mad_port_start`, `ib_mad_post_receive_mads`).
    pub(crate) fn open(
        dev: &Arc<IbDevice>,
        pd: &Arc<Pd>,
        cq: &Arc<Cq>,
        port: u32,
        qp_type: QpType,
        qpi: usize,
    ) -> Result<Self> {
        let qp = Qp::create(
            pd,
            QpInit {
                qp_type,
                send_cq: cq.clone(),
                recv_cq: cq.clone(),
                cap: QpCap {
                    max_send_wr: SEND_QUEUE_SIZE,
                    max_recv_wr: RECV_QUEUE_SIZE,
                    max_send_sge: 2,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                sq_sig_all: true,
                kern_name: crate::kern_name!(),
                srq: None,
                event_handler: None,
                port_num: port,
            },
        )?;
        let recv = Ring::new(dev, RECV_QUEUE_SIZE, RECV_SLOT)?;
        let send = Ring::new(dev, SEND_QUEUE_SIZE, MAD_SIZE)?;
        let mut free = KVec::with_capacity(SEND_QUEUE_SIZE as usize, GFP_KERNEL)?;
        for s in (0..SEND_QUEUE_SIZE).rev() {
            free.push(s, GFP_KERNEL)?;
        }
        let qkey = if qp_type == QpType::Gsi { QP1_QKEY } else { 0 };
        let init = QpAttr {
            qp_state: QpState::Init,
            pkey_index: default_pkey_index(dev, port),
            qkey,
            ..QpAttr::default()
        };
        qp.modify(&init, F::State | F::PkeyIndex | F::Qkey)?;
        let rtr = QpAttr {
            qp_state: QpState::Rtr,
            ..QpAttr::default()
        };
        qp.modify(&rtr, F::State.into())?;
        let rts = QpAttr {
            qp_state: QpState::Rts,
            sq_psn: 0,
            ..QpAttr::default()
        };
        qp.modify(&rts, F::State | F::SqPsn)?;
        let this = Self {
            qp,
            recv,
            send,
            free,
            qp_type,
        };
        let lkey = pd.local_dma_lkey();
        for slot in 0..RECV_QUEUE_SIZE {
            this.post_recv(qpi, slot, lkey)?;
        }
        Ok(this)
    }

    /// Posts receive slot `slot` again.
    pub(crate) fn post_recv(&self, qpi: usize, slot: u32, lkey: u32) -> Result {
        let sge = [self.recv.sge(slot, lkey)?];
        let wr = RecvWr {
            wr_id: wr_id(true, qpi, slot),
            sg_list: &sge,
        };
        self.qp.post_recv(&[wr]).map_err(Error::from)
    }
}
