// SPDX-License-Identifier: GPL-2.0

//! A kernel consumer of the verbs API, as a ULP would be: an `ib_core` client that, on every
//! device serving kernel verbs, allocates a PD, a CQ with a completion handler, an RC QP and the
//! PD's DMA MR, walks the QP from RESET to RTS connected to itself (after checking that wrong
//! transitions are refused), then moves data through it and checks every byte and completion:
//!
//! - a 4096-byte SEND with immediate data into a posted receive, with a completion event;
//! - an RDMA write and an RDMA read of 4096 bytes;
//! - errors: a receive too short for the message (`LocLenErr` at the receiver, `RemInvReqErr`
//!   at the sender, the QP in error, later requests flushed), an RDMA write with a wrong rkey
//!   (`RemAccessErr`); after each, RESET and reconnect, and a SEND works again.
//!
//! Then the C twin's later phases (`tools/verbs-twin`), in its order and with its lines, each on
//! objects of its own freed at once: UD, SRQ, RC ring wrap-around, inline sends with 1000
//! messages each (`many.rs`), atomics (`atomics.rs`), errors with recovery (`errors.rs`), and
//! CQs the core polls with draining (`polled_cq.rs`); `env.rs` holds what they share. One phase
//! has no twin: a CQ resized larger and smaller with 1000 messages at each size (`many.rs`),
//! because C 7.3 has no kernel API to resize a CQ (only uverbs reaches the driver's
//! `resize_user_cq`).
//!
//! At the end it leaves receives posted on phase 1's QP and watches for the device's fatal error
//! (`fatal.rs`), which gives them back flushed.
//!
//! It frees everything when the device or the client goes away. It keeps the QP, the MR and the
//! buffers: they keep the PD, the CQ and the device alive.

use env::Events;
use ib_core::{
    device::registry::{Client, ClientRegistration},
    device::{DeviceEventRegistration, IbDevice},
    restrack::ResType,
    verbs::dma_buffer::DmaBuffer,
    verbs::wr::{send_flags, RecvWr, SendOpcode, SendWr, WorkCompletion},
    verbs::{
        Access, Cq, CqInit, Mr, Pd, Qp, QpAttr, QpAttrField as F, QpCap, QpInit, QpState, QpType,
    },
};
use kernel::{prelude::*, sync::Arc};

#[path = "ib_verbs_client/atomics.rs"]
mod atomics;
#[path = "ib_verbs_client/env.rs"]
mod env;
#[path = "ib_verbs_client/errors.rs"]
mod errors;
#[path = "ib_verbs_client/fatal.rs"]
mod fatal;
#[path = "ib_verbs_client/many.rs"]
mod many;
#[path = "ib_verbs_client/polled_cq.rs"]
mod polled_cq;

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
    /// The handler of the device's fatal error (dropped first: it holds the QP and the CQ).
    _fatal: DeviceEventRegistration,
    qp: Arc<Qp>,
    _mr: Arc<Mr>,
    _buffers: [DmaBuffer; 2],
}

/// Bytes per message.
const MSG: usize = 4096;

/// Immediate data of the SEND.
const IMM: u32 = 0x1234;

/// A QP with what it sends from and receives into.
struct Endpoint<'a> {
    qp: &'a Qp,
    /// The port's LID: the QP's destination (it is connected to itself).
    lid: u16,
    cq: &'a Cq,
    mr: &'a Mr,
    events: &'a Events,
    tx: &'a DmaBuffer,
    rx: &'a DmaBuffer,
}

/// Fills `buf` with the message made with `seed`.
fn fill(buf: &DmaBuffer, seed: u8) -> Result {
    env::fill_at(buf, 0, MSG, seed)
}

/// Whether `buf` holds the message made with `seed`.
fn holds(buf: &DmaBuffer, seed: u8) -> Result<bool> {
    env::holds_at(buf, 0, MSG, seed)
}

impl Endpoint<'_> {
    /// Polls until `n` completions are in, waiting for events in between.
    fn collect(&self, n: usize) -> Result<KVec<WorkCompletion>> {
        env::collect(self.cq, self.events, n)
    }

    /// Posts a receive of `rx_len` bytes and a SEND of the whole `tx` with immediate data;
    /// returns the send and the receive completions.
    fn send(&self, rx_len: u32) -> Result<(WorkCompletion, WorkCompletion)> {
        let rx = [self.rx.sge(0, rx_len, self.mr.lkey())?];
        self.qp.post_recv(&[RecvWr {
            wr_id: 1,
            sg_list: &rx,
        }])?;
        let tx = [self.tx.sge(0, MSG as u32, self.mr.lkey())?];
        self.qp.post_send(&[SendWr {
            wr_id: 2,
            opcode: SendOpcode::SendWithImm,
            sg_list: &tx,
            send_flags: send_flags::SIGNALED,
            imm_data: IMM,
            ..SendWr::default()
        }])?;
        let wcs = self.collect(2)?;
        let send = wcs.iter().find(|w| w.wr_id == 2).copied().ok_or(EIO)?;
        let recv = wcs.iter().find(|w| w.wr_id == 1).copied().ok_or(EIO)?;
        Ok((send, recv))
    }

    /// One signaled RDMA operation between `local` and `remote` (whole buffers); returns its
    /// completion.
    fn rdma(
        &self,
        opcode: SendOpcode,
        local: &DmaBuffer,
        remote: &DmaBuffer,
        rkey: u32,
    ) -> Result<WorkCompletion> {
        let sge = [local.sge(0, MSG as u32, self.mr.lkey())?];
        self.qp.post_send(&[SendWr {
            wr_id: 3,
            opcode,
            sg_list: &sge,
            send_flags: send_flags::SIGNALED,
            remote_addr: remote.dma_addr(),
            rkey,
            ..SendWr::default()
        }])?;
        let wcs = self.collect(1)?;
        wcs.first().copied().ok_or(EIO)
    }

    /// RESET, then RTS again.
    fn reconnect(&self) -> Result {
        env::reconnect(
            self.qp,
            self.lid,
            Access::RemoteWrite | Access::RemoteRead,
            7,
        )
    }

    /// The whole exercise; logs one line per part.
    fn exercise(&self, name: &kernel::str::BStr) -> Result {
        // SEND with immediate data into a posted receive, with a completion event.
        fill(self.tx, 0x11)?;
        let before = self.events.seen();
        self.cq.req_notify(false)?;
        let (send, recv) = self.send(MSG as u32)?;
        // The CQ was armed before the post, so an event is due; on hardware its interrupt may
        // come after the poll already found the completions.
        self.events.wait_past(before);
        let events = self.events.seen() - before;
        pr_info!(
            "{name}: send {:?} {:?}; recv {:?} {:?} {} bytes imm {:#x} from qp {:#x}; data {}; {} completion event(s)\n",
            send.opcode,
            send.status,
            recv.opcode,
            recv.status,
            recv.byte_len,
            recv.imm_data.map_or(-1, i64::from),
            recv.src_qp,
            if holds(self.rx, 0x11)? { "intact" } else { "CORRUPT" },
            events
        );
        // RDMA write of tx into rx, then RDMA read of rx back into tx.
        fill(self.tx, 0x22)?;
        let write = self.rdma(SendOpcode::RdmaWrite, self.tx, self.rx, self.mr.rkey())?;
        let written = holds(self.rx, 0x22)?;
        fill(self.tx, 0)?;
        let read = self.rdma(SendOpcode::RdmaRead, self.tx, self.rx, self.mr.rkey())?;
        pr_info!(
            "{name}: rdma write {:?} {:?} data {}; rdma read {:?} {:?} {} bytes data {}\n",
            write.opcode,
            write.status,
            if written { "intact" } else { "CORRUPT" },
            read.opcode,
            read.status,
            read.byte_len,
            if holds(self.tx, 0x22)? {
                "intact"
            } else {
                "CORRUPT"
            }
        );
        // A receive too short: both sides fail, the QP goes to error and flushes what follows.
        fill(self.tx, 0x33)?;
        let (send, recv) = self.send(1024)?;
        let rx = [self.rx.sge(0, MSG as u32, self.mr.lkey())?];
        self.qp.post_recv(&[RecvWr {
            wr_id: 4,
            sg_list: &rx,
        }])?;
        let flushed = self.collect(1)?;
        let flushed = flushed.first().map(|w| w.status);
        pr_info!(
            "{name}: short receive: recv {:?}, send {:?}, next recv {:?}; core says {:?}, driver says {:?}\n",
            recv.status,
            send.status,
            flushed,
            self.qp.state(),
            self.qp.query()?.qp_state
        );
        // A wrong rkey.
        self.reconnect()?;
        let bad = self.rdma(
            SendOpcode::RdmaWrite,
            self.tx,
            self.rx,
            self.mr.rkey() ^ 0x8000,
        )?;
        // And the QP works again after a reset.
        self.reconnect()?;
        fill(self.tx, 0x44)?;
        let (send, recv) = self.send(MSG as u32)?;
        pr_info!(
            "{name}: bad rkey: {:?}; after reset and reconnect: send {:?}, recv {:?}, data {}\n",
            bad.status,
            send.status,
            recv.status,
            if holds(self.rx, 0x44)? {
                "intact"
            } else {
                "CORRUPT"
            }
        );
        Ok(())
    }
}

/// Moves `qp` to RTS, looped back to itself.
fn connect(qp: &Qp, lid: u16) -> Result {
    env::connect_rc(
        qp,
        lid,
        qp.qp_num(),
        Access::RemoteWrite | Access::RemoteRead,
        7,
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
    if qp.modify(&skip, F::State.into()) == Err(EINVAL) {
        refused += 1;
    }
    // RESET to INIT without the port.
    let no_port = QpAttr {
        qp_state: QpState::Init,
        ..QpAttr::default()
    };
    if qp.modify(&no_port, F::State | F::PkeyIndex | F::AccessFlags) == Err(EINVAL) {
        refused += 1;
    }
    refused
}

impl Client for Sample {
    type Data = PerDevice;

    fn add(&self, dev: &Arc<IbDevice>) -> Result<PerDevice> {
        // Only phase 1's setup fails the add (a firmware error status, say): reported as the C
        // twin reports it; the device is then left without this client.
        self.attach(dev).inspect_err(|e| {
            let name = dev.name();
            pr_err!(
                "{}: setup failed: err {}\n",
                kernel::str::BStr::from_bytes(&name),
                e.to_errno()
            );
        })
    }

    fn remove(&self, dev: &IbDevice, data: PerDevice) {
        let qpn = data.qp.qp_num();
        drop(data);
        let r = dev.restrack();
        pr_info!(
            "{}: released qp {qpn:#x}; live: pd {} cq {} qp {} mr {}\n",
            kernel::str::BStr::from_bytes(&dev.name()),
            r.count_of(ResType::Pd, ib_core::kern_name!()),
            r.count_of(ResType::Cq, ib_core::kern_name!()),
            r.count_of(ResType::Qp, ib_core::kern_name!()),
            r.count_of(ResType::Mr, ib_core::kern_name!())
        );
    }
}

impl Sample {
    /// Phase 1's objects and exercise, then the later phases.
    fn attach(&self, dev: &Arc<IbDevice>) -> Result<PerDevice> {
        let name = dev.name();
        let name = kernel::str::BStr::from_bytes(&name);
        let pd = Pd::alloc(dev, ib_core::kern_name!()).inspect_err(|e| {
            pr_info!("{name}: no kernel verbs (alloc_pd: err {})\n", e.to_errno());
        })?;
        let (events, handler) = Events::new()?;
        let cq = Cq::create(
            dev,
            &CqInit {
                cqe: 64,
                comp_vector: 0,
                flags: 0,
            },
            Some(handler),
            ib_core::kern_name!(),
        )?;
        let qp = Qp::create(
            &pd,
            QpInit {
                qp_type: QpType::Rc,
                send_cq: cq.clone(),
                recv_cq: cq.clone(),
                cap: QpCap {
                    max_send_wr: 16,
                    max_recv_wr: 16,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                sq_sig_all: false,
                kern_name: ib_core::kern_name!(),
                srq: None,
                event_handler: None,
                port_num: 0,
            },
        )?;
        let mr = Mr::get_dma_mr(
            &pd,
            Access::LocalWrite | Access::RemoteWrite | Access::RemoteRead,
        )?;
        // Only the QP and the MR are kept: they hold the PD and the CQ.
        drop(pd);
        let refused = wrong_transitions_refused(&qp);
        // A hardware port routes by LID: the address vector names the port's own.
        let lid = u16::try_from(dev.query_port(1)?.lid).map_err(|_| EINVAL)?;
        connect(&qp, lid)?;
        let attr = qp.query()?;
        let r = dev.restrack();
        pr_info!(
            "{name}: qp {:#x} in state {:?} (driver says {:?}, dest qp {:#x}), {refused} wrong transition(s) refused, mr lkey {:#x}; live: pd {} cq {} qp {} mr {}\n",
            qp.qp_num(),
            qp.state(),
            attr.qp_state,
            attr.dest_qp_num,
            mr.lkey(),
            r.count_of(ResType::Pd, ib_core::kern_name!()),
            r.count_of(ResType::Cq, ib_core::kern_name!()),
            r.count_of(ResType::Qp, ib_core::kern_name!()),
            r.count_of(ResType::Mr, ib_core::kern_name!())
        );
        let buffers = [DmaBuffer::alloc(dev, MSG)?, DmaBuffer::alloc(dev, MSG)?];
        let endpoint = Endpoint {
            qp: &qp,
            lid,
            cq: &cq,
            mr: &mr,
            events: &events,
            tx: &buffers[0],
            rx: &buffers[1],
        };
        if let Err(e) = endpoint.exercise(name) {
            pr_err!("{name}: data path failed: err {}\n", e.to_errno());
        }
        // The later phases, as the C twin's, each on objects of its own freed before it ends.
        let phases: [(&str, &dyn Fn() -> Result); 8] = [
            ("ud", &|| many::ud(dev, name)),
            ("srq", &|| many::srq(dev, name)),
            ("rc wrap", &|| many::wrap(dev, name, false)),
            ("inline", &|| many::wrap(dev, name, true)),
            ("cq resize", &|| many::cq_resize(dev, name)),
            ("atomics", &|| atomics::exercise(dev, name)),
            ("errors", &|| errors::exercise(dev, name)),
            ("polled cq", &|| polled_cq::exercise(dev, name)),
        ];
        for (phase, run) in phases {
            if let Err(e) = run() {
                pr_err!("{name}: {phase} phase failed: err {}\n", e.to_errno());
            }
        }
        // Receives left on phase 1's QP, and the handler of a fatal error, which flushes them.
        fatal::post_left_receives(&qp, buffers[1].sge(0, MSG as u32, mr.lkey())?)?;
        let watch = fatal::watch(
            dev,
            cq.clone(),
            qp.clone(),
            buffers[0].sge(0, 64, mr.lkey())?,
        )?;
        pr_info!(
            "{name}: {} receive(s) left posted on qp {:#x} for a fatal error to flush\n",
            fatal::LEFT_POSTED,
            qp.qp_num()
        );
        Ok(PerDevice {
            _fatal: watch,
            qp,
            _mr: mr,
            _buffers: buffers,
        })
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
