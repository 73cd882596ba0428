// SPDX-License-Identifier: GPL-2.0

//! A kernel consumer of the MAD layer, as a management agent in a ULP would be: an `ib_core`
//! client that, on port 1 of every device with MAD services, registers
//!
//! - a **responder** on QP1 for `Get` of a vendor class of the OUI range (0x30, OUI 00:14:05,
//!   version 1), which answers every request with a `GetResp` carrying a fixed text;
//! - a **requester** (send-only) on QP1, which sends, to the port's own LID:
//!   1. a `Get` of that vendor class (answered by the responder: request and response both go
//!      through the device, looped back to QP1);
//!   2. a PerfMgmt `Get` of ClassPortInfo (answered by the driver's `process_mad`);
//!   3. a PerfMgmt `Get` to a LID nobody has (0x77), 100 ms and one retry: it ends with
//!      `RespTimeoutErr`;
//!   4. a vendor `Get` whose TID carries the responder's prefix: the responder answers it, the
//!      answer is routed back to the responder, which has no request waiting for it (its own
//!      answer is no request), so it is dropped and the `Get` ends with `RespTimeoutErr`;
//!
//! and logs what comes back (`ib_mad_agent: mlx5_0: ...`). Both agents are unregistered when the
//! device or the client goes.
//!
//! With `sa_path_to=LID`, it also asks the subnet administrator (ib_core's SA client, as
//! rdma_cm or IPoIB would) for the path from port 1 to that LID and logs the record.

use ib_core::{
    device::registry::{Client, ClientRegistration},
    device::IbDevice,
    mad::agent::MadRegReq,
    mad::types::{get16, get64, hdr, method, put16, put64, Mad, MAD_SIZE},
    mad::{MadAgent, MadHandler, MadSend, ReceivedMad, SendDone},
    sa,
    verbs::types::{AhAttr, QpType},
    verbs::wr::WcStatus,
};
use kernel::{prelude::*, str::BStr, sync::Arc};

module! {
    type: MadAgentSample,
    name: "ib_mad_agent",
    authors: ["rdma-rs developers"],
    description: "Sample MAD agent: a vendor-class responder and a requester on every port 1",
    license: "GPL",
    params: {
        sa_path_to: u32 {
            default: 0,
            description: "A LID to ask the SA the path to from port 1 (0: none)",
        },
    },
}

/// The vendor class of the OUI range the responder serves, its OUI and version.
const VENDOR_CLASS: u8 = 0x30;
const OUI: [u8; 3] = [0x00, 0x14, 0x05];
/// PerfMgmt and its ClassPortInfo attribute.
const PERF_MGMT: u8 = 0x04;
const CLASS_PORT_INFO: u16 = 0x0001;
/// Where a vendor MAD of the OUI range carries its OUI, and its data.
const VENDOR_OUI: usize = 37;
const VENDOR_DATA: usize = 40;
/// What the responder answers.
const ANSWER: &[u8] = b"rdma-rs sample agent";
/// A LID no port has.
const NOBODY: u16 = 0x77;
/// The contexts of the requester's three sends.
const CTX_VENDOR: u64 = 1;
const CTX_PMA: u64 = 2;
const CTX_NOBODY: u64 = 3;
const CTX_MISROUTED: u64 = 4;

/// A request of `class` (version 1), method `Get`, attribute `attr`, transaction id `tid`.
fn request(class: u8, attr: u16, tid: u64) -> Result<KBox<Mad>> {
    let mut m = KBox::new([0u8; MAD_SIZE], GFP_KERNEL)?;
    m[hdr::BASE_VERSION] = 1;
    m[hdr::MGMT_CLASS] = class;
    m[hdr::CLASS_VERSION] = 1;
    m[hdr::METHOD] = method::GET;
    put64(&mut m[..], hdr::TID, tid);
    put16(&mut m[..], hdr::ATTR_ID, attr);
    if class == VENDOR_CLASS {
        m[VENDOR_OUI..VENDOR_OUI + 3].copy_from_slice(&OUI);
    }
    Ok(m)
}

/// The device's name, for the log.
fn name(dev: &IbDevice) -> KVec<u8> {
    let mut v = KVec::new();
    let _ = v.extend_from_slice(&dev.name(), GFP_KERNEL);
    v
}

/// Answers every vendor `Get` with [`ANSWER`].
struct Responder;

impl MadHandler for Responder {
    fn recv(&self, agent: &Arc<MadAgent>, r: KBox<ReceivedMad>) {
        let Ok(mut out) = KBox::new(r.mad, GFP_KERNEL) else {
            return;
        };
        out[hdr::METHOD] = method::GET_RESP;
        put16(&mut out[..], hdr::STATUS, 0);
        out[VENDOR_DATA..VENDOR_DATA + ANSWER.len()].copy_from_slice(ANSWER);
        let reply = MadSend {
            mad: out,
            ah: AhAttr {
                dlid: r.wc.slid,
                sl: r.wc.sl,
                port_num: agent.port() as u8,
                ..AhAttr::default()
            },
            remote_qpn: r.wc.src_qp,
            pkey_index: r.wc.pkey_index,
            timeout_ms: 0,
            retries: 0,
            context: 0,
            rmpp_data: KVec::new(),
        };
        let n = name(agent.device());
        match agent.send(reply) {
            Ok(()) => pr_info!(
                "{}: responder: a Get from LID {} QP {}, answered\n",
                BStr::from_bytes(&n),
                r.wc.slid,
                r.wc.src_qp
            ),
            Err(e) => pr_info!(
                "{}: responder: cannot answer: err {}\n",
                BStr::from_bytes(&n),
                e.to_errno()
            ),
        }
    }

    fn send_done(&self, _agent: &Arc<MadAgent>, _d: SendDone) {}
}

/// Logs the answers to its requests and how its sends end.
struct Requester;

impl MadHandler for Requester {
    fn recv(&self, agent: &Arc<MadAgent>, r: KBox<ReceivedMad>) {
        let n = name(agent.device());
        let n = BStr::from_bytes(&n);
        let m = &r.mad;
        let tid_hi = (get64(m, hdr::TID) >> 32) as u32;
        match m[hdr::MGMT_CLASS] {
            VENDOR_CLASS => {
                let text = BStr::from_bytes(&m[VENDOR_DATA..VENDOR_DATA + ANSWER.len()]);
                let status = get16(m, hdr::STATUS);
                let ours = tid_hi == agent.hi_tid();
                pr_info!(
                    "{}: requester: vendor GetResp status {:#06x}, TID ours ({}), data \"{}\"\n",
                    n,
                    status,
                    ours,
                    text
                );
            }
            PERF_MGMT => {
                let status = get16(m, hdr::STATUS);
                let caps = get16(m, 64 + 2);
                pr_info!(
                    "{}: requester: ClassPortInfo GetResp status {:#06x}, capability mask {:#06x}\n",
                    n,
                    status,
                    caps
                );
            }
            c => pr_info!("{}: requester: an answer of class {:#04x}\n", n, c),
        }
    }

    fn send_done(&self, agent: &Arc<MadAgent>, d: SendDone) {
        let n = name(agent.device());
        let what = match d.context {
            CTX_VENDOR => "vendor Get",
            CTX_PMA => "ClassPortInfo Get",
            CTX_NOBODY => "Get to LID 0x77",
            CTX_MISROUTED => "vendor Get with the responder's TID",
            _ => "send",
        };
        let status = match d.status {
            WcStatus::Success => "success",
            WcStatus::RespTimeoutErr => "response timeout",
            WcStatus::WrFlushErr => "flushed",
            _ => "error",
        };
        pr_info!(
            "{}: requester: {} ended: {}\n",
            BStr::from_bytes(&n),
            what,
            status
        );
    }
}

/// What the client keeps per device: its two agents.
struct PerDevice {
    responder: Arc<MadAgent>,
    requester: Arc<MadAgent>,
}

impl Drop for PerDevice {
    fn drop(&mut self) {
        self.requester.unregister();
        self.responder.unregister();
    }
}

struct Sample;

impl Sample {
    fn send(
        requester: &Arc<MadAgent>,
        lid: u16,
        mad: KBox<Mad>,
        timeout_ms: u32,
        ctx: u64,
    ) -> Result {
        let retries = if ctx == CTX_NOBODY { 1 } else { 0 };
        requester.send(MadSend {
            mad,
            ah: AhAttr {
                dlid: lid,
                port_num: requester.port() as u8,
                ..AhAttr::default()
            },
            remote_qpn: 1,
            pkey_index: 0,
            timeout_ms,
            retries,
            context: ctx,
            rmpp_data: KVec::new(),
        })
    }

    /// Asks the SA for the path from `slid` (port 1) to `dlid`; the answer is logged.
    fn ask_path(dev: &IbDevice, slid: u16, dlid: u16) -> Result {
        let rec = sa::PathRecord {
            slid,
            dlid,
            ..Default::default()
        };
        let n = name(dev);
        let done: sa::PathCallback = KBox::new(
            move |status: Result, path: Option<sa::PathRecord>| {
                match (status, path) {
                (Ok(()), Some(p)) => pr_info!(
                    "{}: SA path {} -> {}: sl {} mtu {} rate {} pkey {:#06x} packet_life_time {} reversible {} hop_limit {}\n",
                    BStr::from_bytes(&n),
                    p.slid,
                    p.dlid,
                    p.sl,
                    p.mtu,
                    p.rate,
                    p.pkey,
                    p.packet_life_time,
                    u8::from(p.reversible),
                    p.hop_limit
                ),
                (status, _) => pr_info!(
                    "{}: SA path {} -> {}: error {}\n",
                    BStr::from_bytes(&n),
                    slid,
                    dlid,
                    status.err().unwrap_or(EIO).to_errno()
                ),
            }
            },
            GFP_KERNEL,
        )?;
        let comp = sa::path_record::comp::SLID | sa::path_record::comp::DLID;
        if let Err(e) = sa::path_rec_get(dev, 1, &rec, comp, 1000, done) {
            let n = name(dev);
            pr_info!(
                "{}: SA path {} -> {}: not asked, error {}\n",
                BStr::from_bytes(&n),
                slid,
                dlid,
                e.to_errno()
            );
        }
        Ok(())
    }
}

impl Client for Sample {
    type Data = PerDevice;

    fn add(&self, dev: &Arc<IbDevice>) -> Result<PerDevice> {
        let mut methods = [0u64; 2];
        methods[0] |= 1 << method::GET;
        let reg = MadRegReq {
            mgmt_class: VENDOR_CLASS,
            class_version: 1,
            oui: OUI,
            method_mask: methods,
        };
        let responder = MadAgent::register(
            dev,
            1,
            QpType::Gsi,
            Some(&reg),
            0,
            0,
            Arc::new(Responder, GFP_KERNEL)?,
        )?;
        let requester = match MadAgent::register(
            dev,
            1,
            QpType::Gsi,
            None,
            0,
            0,
            Arc::new(Requester, GFP_KERNEL)?,
        ) {
            Ok(a) => a,
            Err(e) => {
                responder.unregister();
                return Err(e);
            }
        };
        let data = PerDevice {
            responder,
            requester,
        };
        let n = name(dev);
        let lid = u16::try_from(dev.query_port(1)?.lid).map_err(|_| EINVAL)?;
        pr_info!(
            "{}: agents registered on port 1 (LID {}): responder for vendor class {:#04x}, requester with hi_tid {}\n",
            BStr::from_bytes(&n),
            lid,
            VENDOR_CLASS,
            data.requester.hi_tid()
        );
        let r = &data.requester;
        // A kernel agent puts its hi_tid in the TID's high half itself: the responses are
        // routed back by it.
        let tid = |n: u64| (u64::from(r.hi_tid()) << 32) | n;
        Self::send(
            r,
            lid,
            request(VENDOR_CLASS, 0x0010, tid(1))?,
            1000,
            CTX_VENDOR,
        )?;
        Self::send(
            r,
            lid,
            request(PERF_MGMT, CLASS_PORT_INFO, tid(2))?,
            1000,
            CTX_PMA,
        )?;
        Self::send(
            r,
            NOBODY,
            request(PERF_MGMT, CLASS_PORT_INFO, tid(3))?,
            100,
            CTX_NOBODY,
        )?;
        // A request carrying the responder's TID prefix: its answer is routed to the responder,
        // whose own answer (a send without timeout) must not take it (C: a response never
        // answers a response), so it is dropped and this send times out.
        let misrouted = (u64::from(data.responder.hi_tid()) << 32) | 4;
        Self::send(
            r,
            lid,
            request(VENDOR_CLASS, 0x0010, misrouted)?,
            200,
            CTX_MISROUTED,
        )?;
        if let Ok(to @ 1..0xc000) = u16::try_from(module_parameters::sa_path_to.value()) {
            Self::ask_path(dev, lid, to)?;
        }
        Ok(data)
    }

    fn remove(&self, dev: &IbDevice, data: PerDevice) {
        drop(data);
        let n = name(dev);
        pr_info!("{}: agents unregistered\n", BStr::from_bytes(&n));
    }
}

#[pin_data]
struct MadAgentSample {
    #[pin]
    registration: ClientRegistration<Sample>,
}

impl kernel::InPlaceModule for MadAgentSample {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            registration <- ClientRegistration::new(Sample),
        })
    }
}
