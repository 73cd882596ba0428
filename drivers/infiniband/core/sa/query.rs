// SPDX-License-Identifier: GPL-2.0

//! SA queries (C's `send_mad`, `recv_handler` and `send_handler` in `sa_query.c`): on each port
//! with SA services a send-only agent on QP1 for the SA class (version 2, RMPP), the queries
//! waiting for their answers, and [`query`], which sends one.
//!
//! A query goes to the SM the port knows when it is made (its LID and SL, read from the port;
//! `EAGAIN` while the port is not ACTIVE, as C without an SM address), with the P_Key index of
//! the default key, and C's split of the timeout (a tenth of it, ten retries). Its callback runs
//! exactly once, in process context: with the answer's attribute data, or C's errno
//! (`ETIMEDOUT` without an answer, `EINTR` when cancelled or when the device goes, `EIO` for a
//! send error); an answer with an error status gives `EINVAL` with the data, as C.

use crate::{
    attrs::PortState,
    device::ib_device::IbDevice,
    mad::types::{class, get16, hdr, put16, put64, Mad, MAD_SIZE},
    mad::{MadAgent, MadHandler, MadSend, ReceivedMad, SendDone},
    verbs::types::{AhAttr, QpType},
    verbs::wr::WcStatus,
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        global_lock, Arc, Mutex,
    },
};

/// The SA class's version (`IB_SA_CLASS_VERSION`).
const CLASS_VERSION: u8 = 2;
/// Where the SA header's component mask and the attribute's data sit in an SA MAD.
const COMP_MASK: usize = 48;
const DATA: usize = 56;
/// C's split of a query's timeout: this many sends, each with a tenth of it.
const RETRIES: u32 = 10;
/// The default full-member P_Key the SM is reached with (`IB_DEFAULT_PKEY_FULL`).
const DEFAULT_PKEY: u16 = 0xffff;

/// What a query ends with (called once): its status (C's errno) and, when an answer came, the
/// answer's attribute data (the SA MAD from its attribute on).
pub type QueryCallback = KBox<dyn FnMut(Result, Option<&[u8]>) + Send>;

/// A query waiting for its answer.
struct Query {
    id: u32,
    done: QueryCallback,
}

impl Query {
    /// Ends the query with `status` and the answer's attribute data, if any.
    fn end(mut self, status: Result, data: Option<&[u8]>) {
        (*self.done)(status, data);
    }
}

/// The queries of one port, shared by the port and its agent's handler.
#[pin_data]
struct Queries {
    #[pin]
    list: Mutex<KVec<Query>>,
}

impl Queries {
    /// Takes query `id` out, if it is still waiting.
    fn take(&self, id: u64) -> Option<Query> {
        let mut list = self.list.lock();
        let i = list.iter().position(|q| u64::from(q.id) == id)?;
        list.remove(i).ok()
    }
}

/// The SA services of one port (C's `ib_sa_port`).
pub(crate) struct SaPort {
    dev: Arc<IbDevice>,
    port: u32,
    agent: Arc<MadAgent>,
    queries: Arc<Queries>,
}

impl SaPort {
    /// The port's number.
    pub(crate) fn port(&self) -> u32 {
        self.port
    }
}

/// The agent's handler: answers and ends of sends to their queries' callbacks (C's
/// `recv_handler` and `send_handler`).
struct SaHandler {
    queries: Arc<Queries>,
}

impl MadHandler for SaHandler {
    fn recv(&self, _agent: &Arc<MadAgent>, r: KBox<ReceivedMad>) {
        let Some(q) = r.request.and_then(|id| self.queries.take(id)) else {
            return;
        };
        // C's `recv_handler`: an error status is `EINVAL`, with the answer.
        let status = match get16(&r.mad, hdr::STATUS) {
            0 => Ok(()),
            _ => Err(EINVAL),
        };
        // The attribute data: the first MAD's, then, for an RMPP answer, every other segment's,
        // as long as the message says (C's `mad_len`).
        let len = r.mad_len.saturating_sub(DATA);
        if r.rmpp_data.is_empty() {
            q.end(status, Some(&r.mad[DATA..DATA + len.min(MAD_SIZE - DATA)]));
            return;
        }
        let mut all = KVec::new();
        let joined = all
            .extend_from_slice(&r.mad[DATA..], GFP_KERNEL)
            .and_then(|()| all.extend_from_slice(&r.rmpp_data, GFP_KERNEL));
        match joined {
            Ok(()) => {
                all.truncate(len);
                q.end(status, Some(&all));
            }
            Err(_) => q.end(Err(ENOMEM), None),
        }
    }

    fn send_done(&self, _agent: &Arc<MadAgent>, d: SendDone) {
        let err = match d.status {
            // Answered: the answer ended the query already.
            WcStatus::Success => return,
            WcStatus::RespTimeoutErr => ETIMEDOUT,
            WcStatus::WrFlushErr => EINTR,
            _ => EIO,
        };
        if let Some(q) = self.queries.take(d.context) {
            q.end(Err(err), None);
        }
    }
}

global_lock! {
    // SAFETY: Initialized by the module initializer before the SA client registers.
    unsafe(uninit) static PORTS: Mutex<KVec<Arc<SaPort>>> = KVec::new();
}

/// Query ids (C's `queries` xarray ids).
static NEXT_ID: Atomic<u32> = Atomic::new(1);
/// The low half of the transaction ids (C's `tid`).
static NEXT_TID: Atomic<u32> = Atomic::new(0);

/// Initializes the table of ports.
///
/// # Safety
///
/// Called once, at module load, before the SA client registers.
pub(crate) unsafe fn init() {
    // SAFETY: As this function's contract.
    unsafe { PORTS.init() };
}

/// Frees the table's memory at unload (every port is gone by then).
pub(crate) fn clear() {
    *PORTS.lock() = KVec::new();
}

/// The SA port `port` of `dev`.
pub(crate) fn find_port(dev: &IbDevice, port: u32) -> Option<Arc<SaPort>> {
    PORTS
        .lock()
        .iter()
        .find(|p| core::ptr::eq(&*p.dev, dev) && p.port == port)
        .cloned()
}

/// Sends the SA of `port` of `dev` a request (`method`, of attribute `attr_id` with `data`, the
/// fields `comp_mask` names), waiting `timeout_ms` in all (C's `send_mad` of a query). Returns
/// the query's id for [`cancel`]; `done` gets the answer or the errno. `ENODEV` for a port
/// without SA services, `EAGAIN` while it has no SM to ask; `done` is not called then.
pub fn query(
    dev: &IbDevice,
    port: u32,
    request: Request<'_>,
    timeout_ms: u32,
    done: QueryCallback,
) -> Result<u32> {
    send(dev, port, request, timeout_ms, done, new_id()).map_err(|(e, _)| e)
}

/// A new query id.
pub(crate) fn new_id() -> u32 {
    NEXT_ID.fetch_add(1, Relaxed)
}

/// [`query`] with the id `id` (from [`new_id`]); when it is not sent, the error and `done`
/// (not called) come back.
pub(crate) fn send(
    dev: &IbDevice,
    port: u32,
    request: Request<'_>,
    timeout_ms: u32,
    done: QueryCallback,
    id: u32,
) -> core::result::Result<u32, (Error, QueryCallback)> {
    let Some(sa) = find_port(dev, port) else {
        return Err((ENODEV, done));
    };
    let attr = match dev.query_port(port) {
        Ok(a) => a,
        Err(e) => return Err((e, done)),
    };
    let sm_lid = match u16::try_from(attr.sm_lid) {
        Ok(l) if l != 0 && attr.state == PortState::Active => l,
        _ => return Err((EAGAIN, done)),
    };
    if request.data.len() > MAD_SIZE - DATA {
        return Err((EINVAL, done));
    }
    let mut mad: KBox<Mad> = match KBox::new([0u8; MAD_SIZE], GFP_KERNEL) {
        Ok(m) => m,
        Err(e) => return Err((e.into(), done)),
    };
    mad[hdr::BASE_VERSION] = 1;
    mad[hdr::MGMT_CLASS] = class::SUBN_ADM;
    mad[hdr::CLASS_VERSION] = CLASS_VERSION;
    mad[hdr::METHOD] = request.method;
    let tid = (u64::from(sa.agent.hi_tid()) << 32) | u64::from(NEXT_TID.fetch_add(1, Relaxed));
    put64(&mut mad[..], hdr::TID, tid);
    put16(&mut mad[..], hdr::ATTR_ID, request.attr_id);
    put64(&mut mad[..], COMP_MASK, request.comp_mask);
    mad[DATA..DATA + request.data.len()].copy_from_slice(request.data);
    let (timeout, retries) = match timeout_ms / RETRIES {
        0 => (1, timeout_ms),
        t => (t, RETRIES),
    };
    let pkey_index = (0..dev.cached_pkey_count(port).unwrap_or(0) as u32)
        .find(|&i| dev.cached_pkey(port, i) == Some(DEFAULT_PKEY))
        .unwrap_or(0);
    {
        let mut list = sa.queries.list.lock();
        if let Err(e) = list.reserve(1, GFP_KERNEL) {
            return Err((e.into(), done));
        }
        if let Err(q) = list.push_within_capacity(Query { id, done }) {
            // Reserved above, under the same lock: not reached.
            return Err((ENOMEM, q.0.done));
        }
    }
    let mad_send = MadSend {
        mad,
        ah: AhAttr {
            dlid: sm_lid,
            sl: attr.sm_sl,
            port_num: port as u8,
            ..AhAttr::default()
        },
        remote_qpn: 1,
        pkey_index: pkey_index as u16,
        timeout_ms: timeout,
        retries,
        context: u64::from(id),
        rmpp_data: KVec::new(),
    };
    if let Err(e) = sa.agent.send(mad_send) {
        // Never sent: the callback is not called (C returns the error alone).
        return match sa.queries.take(u64::from(id)) {
            Some(q) => Err((e, q.done)),
            // Taken by a cancel meanwhile, which ended it.
            None => Ok(id),
        };
    }
    Ok(id)
}

/// What a query asks the SA: the method, the attribute and its data, the fields that count.
pub struct Request<'a> {
    /// The method (`Get`, `Set`, `Delete`).
    pub method: u8,
    /// The attribute's id.
    pub attr_id: u16,
    /// The fields of `data` that count (the attribute's component mask bits).
    pub comp_mask: u64,
    /// The attribute, as the SA reads it.
    pub data: &'a [u8],
}

/// Cancels query `id` (C's `ib_sa_cancel_query`): its callback gets `EINTR`, unless it has
/// ended already.
pub fn cancel(id: u32) {
    let port = PORTS
        .lock()
        .iter()
        .find(|p| p.queries.list.lock().iter().any(|q| q.id == id))
        .cloned();
    if let Some(p) = port {
        let _ = p.agent.modify_send(u64::from(id), 0);
    }
}

/// Opens the SA services of `port` of `dev` (C's `ib_sa_add_one` for one port): its agent,
/// listed for [`query`].
pub(crate) fn add_port(dev: &Arc<IbDevice>, port: u32) -> Result<Arc<SaPort>> {
    let queries = Arc::pin_init(
        pin_init!(Queries {
            list <- new_mutex!(KVec::new(), "ib_core::sa::query::Queries::list"),
        }),
        GFP_KERNEL,
    )?;
    let handler = Arc::new(
        SaHandler {
            queries: queries.clone(),
        },
        GFP_KERNEL,
    )?;
    let agent = MadAgent::register(dev, port, QpType::Gsi, None, 1, 0, handler)?;
    let listed = (|| -> Result<Arc<SaPort>> {
        let p = Arc::new(
            SaPort {
                dev: dev.clone(),
                port,
                agent: agent.clone(),
                queries,
            },
            GFP_KERNEL,
        )?;
        PORTS.lock().push(p.clone(), GFP_KERNEL)?;
        Ok(p)
    })();
    if listed.is_err() {
        agent.unregister();
    }
    listed
}

/// Closes the SA services of a port (C's `ib_sa_remove_one`): no query starts on it any more,
/// its agent goes, and the queries still waiting end with `EINTR`, as C's flushed sends end
/// them.
pub(crate) fn remove_port(p: &Arc<SaPort>) {
    PORTS.lock().retain(|x| !Arc::ptr_eq(x, p));
    p.agent.unregister();
    let waiting = core::mem::replace(&mut *p.queries.list.lock(), KVec::new());
    for q in waiting {
        q.end(Err(EINTR), None);
    }
}
