// SPDX-License-Identifier: GPL-2.0

//! A kernel consumer of the verbs API, as a ULP would be: an `ib_core` client that, on every
//! device, allocates a PD, a CQ, an RC QP and the PD's DMA MR, walks the QP from RESET to RTS
//! (after checking that wrong transitions are refused), and frees everything when the device or
//! the client goes away. It only keeps the QP and the MR: they keep the PD and the CQ alive.

use ib_core::{
    device::IbDevice,
    registry::{Client, ClientRegistration},
    restrack::ResType,
    verbs::{
        access, Cq, CqInit, Mr, Pd, Qp, QpAttr, QpAttrMask as M, QpCap, QpInit, QpState, QpType,
    },
};
use kernel::{prelude::*, sync::Arc};

module! {
    type: VerbsClient,
    name: "ib_verbs_client",
    authors: ["rdma-rs developers"],
    description: "Sample kernel verbs consumer: PD, CQ, QP and MR on every RDMA device",
    license: "GPL",
}

/// The client.
struct Sample;

/// What it keeps per device.
struct PerDevice {
    qp: Arc<Qp>,
    _mr: Arc<Mr>,
}

/// `IB_MTU_4096`.
const MTU_4096: u8 = 5;

/// Moves `qp` to RTS, looped back to itself.
fn connect(qp: &Qp) -> Result {
    let to_init = QpAttr {
        qp_state: QpState::Init,
        port_num: 1,
        pkey_index: 0,
        qp_access_flags: access::REMOTE_WRITE | access::REMOTE_READ,
        ..QpAttr::default()
    };
    qp.modify(
        &to_init,
        M(M::STATE | M::PORT | M::PKEY_INDEX | M::ACCESS_FLAGS),
    )?;
    let to_rtr = QpAttr {
        qp_state: QpState::Rtr,
        path_mtu: MTU_4096,
        dest_qp_num: qp.qp_num(),
        rq_psn: 0x1234,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        ..QpAttr::default()
    };
    qp.modify(
        &to_rtr,
        M(M::STATE
            | M::AV
            | M::PATH_MTU
            | M::DEST_QPN
            | M::RQ_PSN
            | M::MAX_DEST_RD_ATOMIC
            | M::MIN_RNR_TIMER),
    )?;
    let to_rts = QpAttr {
        qp_state: QpState::Rts,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        sq_psn: 0x1234,
        max_rd_atomic: 1,
        ..QpAttr::default()
    };
    qp.modify(
        &to_rts,
        M(M::STATE | M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::SQ_PSN | M::MAX_QP_RD_ATOMIC),
    )
}

/// How many wrong modifies the core refused with `EINVAL` (of the two tried).
fn wrong_transitions_refused(qp: &Qp) -> u32 {
    let mut refused = 0;
    // RESET to RTR skips INIT.
    let skip = QpAttr {
        qp_state: QpState::Rtr,
        ..QpAttr::default()
    };
    if qp.modify(&skip, M(M::STATE)) == Err(EINVAL) {
        refused += 1;
    }
    // RESET to INIT without the port.
    let no_port = QpAttr {
        qp_state: QpState::Init,
        ..QpAttr::default()
    };
    if qp.modify(&no_port, M(M::STATE | M::PKEY_INDEX | M::ACCESS_FLAGS)) == Err(EINVAL) {
        refused += 1;
    }
    refused
}

impl Client for Sample {
    type Data = PerDevice;

    fn add(&self, dev: &Arc<IbDevice>) -> Result<PerDevice> {
        let name = dev.name();
        let name = kernel::str::BStr::from_bytes(&name);
        let pd = Pd::alloc(dev).inspect_err(|e| {
            pr_info!("{name}: no kernel verbs (alloc_pd: err {})\n", e.to_errno());
        })?;
        let cq = Cq::create(
            dev,
            &CqInit {
                cqe: 64,
                comp_vector: 0,
            },
            None,
        )?;
        let qp = Qp::create(
            &pd,
            QpInit {
                qp_type: QpType::Rc,
                send_cq: cq.clone(),
                recv_cq: cq,
                cap: QpCap {
                    max_send_wr: 16,
                    max_recv_wr: 16,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                sq_sig_all: false,
            },
        )?;
        let mr = Mr::get_dma_mr(&pd, access::LOCAL_WRITE)?;
        // Only the QP and the MR are kept: they hold the PD and the CQ.
        drop(pd);
        let refused = wrong_transitions_refused(&qp);
        connect(&qp)?;
        let attr = qp.query()?;
        let r = dev.restrack();
        pr_info!(
            "{name}: qp {:#x} in state {:?} (driver says {:?}, dest qp {:#x}), {refused} wrong transition(s) refused, mr lkey {:#x}; live: pd {} cq {} qp {} mr {}\n",
            qp.qp_num(),
            qp.state(),
            attr.qp_state,
            attr.dest_qp_num,
            mr.lkey(),
            r.count(ResType::Pd),
            r.count(ResType::Cq),
            r.count(ResType::Qp),
            r.count(ResType::Mr)
        );
        Ok(PerDevice { qp, _mr: mr })
    }

    fn remove(&self, dev: &IbDevice, data: PerDevice) {
        let qpn = data.qp.qp_num();
        drop(data);
        let r = dev.restrack();
        pr_info!(
            "{}: released qp {qpn:#x}; live: pd {} cq {} qp {} mr {}\n",
            kernel::str::BStr::from_bytes(&dev.name()),
            r.count(ResType::Pd),
            r.count(ResType::Cq),
            r.count(ResType::Qp),
            r.count(ResType::Mr)
        );
    }
}

/// The module: the client registration.
#[pin_data]
struct VerbsClient {
    #[pin]
    registration: ClientRegistration<Sample>,
}

impl kernel::InPlaceModule for VerbsClient {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            registration <- ClientRegistration::new(Sample),
        })
    }
}
