// SPDX-License-Identifier: GPL-2.0

//! The subnet administration client (C's `sa_query.c`, part of `ib_core` as in C): on each port
//! with SA services, a send-only agent on QP1 for the SA class (version 2, RMPP), through which
//! consumers ask the subnet manager's SA for records.
//!
//! A query goes to the SM the port knows when it is made (its LID and SL, read from the port;
//! `EAGAIN` while the port is not ACTIVE, as C without an SM address), with the P_Key index of
//! the default key, and C's split of the timeout (a tenth of it, ten retries). Its callback runs
//! exactly once, in process context: with the records, or C's errno (`ETIMEDOUT` without an
//! answer, `EINTR` when cancelled or when the device goes, `EIO` for a send error, `EINVAL` for
//! an answer with an error status). Path records for now (C's `ib_sa_path_rec_get` with its
//! `Get` of one record); [`cancel`] is C's `ib_sa_cancel_query`.

pub mod path_record;

pub use path_record::PathRecord;

use crate::{
    attrs::{PortState, CORE_CAP_IB_SA},
    device::{ib_device::IbDevice, registry::Client},
    mad::types::{class, get16, hdr, method, put16, put64, Mad, MAD_SIZE},
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

/// What a path query ends with: the path, or C's errno (called once).
pub type PathCallback = KBox<dyn FnMut(Result<PathRecord>) + Send>;

/// A query waiting for its answer.
struct Query {
    id: u32,
    done: PathCallback,
}

impl Query {
    /// Ends the query with `r`.
    fn end(mut self, r: Result<PathRecord>) {
        (*self.done)(r);
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
        if get16(&r.mad, hdr::STATUS) != 0 {
            q.end(Err(EINVAL));
            return;
        }
        let mut rec = [0u8; path_record::SIZE];
        rec.copy_from_slice(&r.mad[DATA..DATA + path_record::SIZE]);
        q.end(Ok(PathRecord::decode(&rec)));
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
            q.end(Err(err));
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
fn find_port(dev: &IbDevice, port: u32) -> Option<Arc<SaPort>> {
    PORTS
        .lock()
        .iter()
        .find(|p| core::ptr::eq(&*p.dev, dev) && p.port == port)
        .cloned()
}

/// Asks the SA of `port` of `dev` for the path `rec` describes in the fields `comp_mask` names
/// ([`path_record::comp`]), waiting `timeout_ms` in all (C's `ib_sa_path_rec_get`). Returns the
/// query's id for [`cancel`]; `done` gets the path or the errno. `ENODEV` for a port without
/// SA services, `EAGAIN` while it has no SM to ask.
pub fn path_rec_get(
    dev: &IbDevice,
    port: u32,
    rec: &PathRecord,
    comp_mask: u64,
    timeout_ms: u32,
    done: PathCallback,
) -> Result<u32> {
    let sa = find_port(dev, port).ok_or(ENODEV)?;
    let attr = dev.query_port(port)?;
    let sm_lid = u16::try_from(attr.sm_lid).map_err(|_| EAGAIN)?;
    if attr.state != PortState::Active || sm_lid == 0 {
        return Err(EAGAIN);
    }
    let mut mad: KBox<Mad> = KBox::new([0u8; MAD_SIZE], GFP_KERNEL)?;
    mad[hdr::BASE_VERSION] = 1;
    mad[hdr::MGMT_CLASS] = class::SUBN_ADM;
    mad[hdr::CLASS_VERSION] = CLASS_VERSION;
    mad[hdr::METHOD] = method::GET;
    let tid = (u64::from(sa.agent.hi_tid()) << 32) | u64::from(NEXT_TID.fetch_add(1, Relaxed));
    put64(&mut mad[..], hdr::TID, tid);
    put16(&mut mad[..], hdr::ATTR_ID, path_record::ATTR_ID);
    put64(&mut mad[..], COMP_MASK, comp_mask);
    let mut data = [0u8; path_record::SIZE];
    rec.encode(&mut data);
    mad[DATA..DATA + path_record::SIZE].copy_from_slice(&data);
    let (timeout, retries) = match timeout_ms / RETRIES {
        0 => (1, timeout_ms),
        t => (t, RETRIES),
    };
    let pkey_index = (0..dev.cached_pkey_count(port).unwrap_or(0) as u32)
        .find(|&i| dev.cached_pkey(port, i) == Some(DEFAULT_PKEY))
        .unwrap_or(0);
    let id = NEXT_ID.fetch_add(1, Relaxed);
    sa.queries
        .list
        .lock()
        .push(Query { id, done }, GFP_KERNEL)?;
    let send = MadSend {
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
    if let Err(e) = sa.agent.send(send) {
        // Never sent: the callback is not called (C returns the error alone).
        drop(sa.queries.take(u64::from(id)));
        return Err(e);
    }
    Ok(id)
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

/// The SA client: opens the SA services of every port that has them (C's `sa_client`,
/// `ib_sa_add_one`, `ib_sa_remove_one`).
pub(crate) struct SaClient;

impl Client for SaClient {
    type Data = KVec<Arc<SaPort>>;

    fn add(&self, dev: &Arc<IbDevice>) -> Result<Self::Data> {
        let mut ports = KVec::new();
        for port in 1..=dev.port_count() {
            let sa = dev
                .port_immutable(port)
                .is_some_and(|imm| imm.core_cap_flags & CORE_CAP_IB_SA != 0);
            if !sa {
                continue;
            }
            let queries = Arc::pin_init(
                pin_init!(Queries {
                    list <- new_mutex!(KVec::new(), "ib_core::sa::Queries::list"),
                }),
                GFP_KERNEL,
            )?;
            let handler = Arc::new(
                SaHandler {
                    queries: queries.clone(),
                },
                GFP_KERNEL,
            )?;
            let agent = match MadAgent::register(dev, port, QpType::Gsi, None, 1, 0, handler) {
                Ok(a) => a,
                Err(e) => {
                    self.remove(dev, ports);
                    return Err(e);
                }
            };
            let listed = (|| -> Result {
                let p = Arc::new(
                    SaPort {
                        dev: dev.clone(),
                        port,
                        agent: agent.clone(),
                        queries,
                    },
                    GFP_KERNEL,
                )?;
                ports.push(p.clone(), GFP_KERNEL)?;
                PORTS.lock().push(p, GFP_KERNEL)?;
                Ok(())
            })();
            if let Err(e) = listed {
                // Unregistering twice is harmless: the port may be in `ports` already.
                agent.unregister();
                self.remove(dev, ports);
                return Err(e);
            }
        }
        Ok(ports)
    }

    fn remove(&self, _dev: &IbDevice, data: Self::Data) {
        for p in data.iter() {
            PORTS.lock().retain(|x| !Arc::ptr_eq(x, p));
            p.agent.unregister();
            // The queries still waiting end as C's flushed sends end them.
            let waiting = core::mem::replace(&mut *p.queries.list.lock(), KVec::new());
            for q in waiting {
                q.end(Err(EINTR));
            }
        }
    }
}
