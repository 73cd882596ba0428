// SPDX-License-Identifier: GPL-2.0

//! The subnet administration client (C's `sa_query.c` and `multicast.c`, part of `ib_core` as
//! in C): an `ib_core` client that opens, on each port with SA services, an agent for SA
//! queries ([`query`]) and the port's multicast groups ([`multicast`]), and the typed requests
//! consumers make: path records ([`path_rec_get`], C's `ib_sa_path_rec_get`), service records
//! ([`service_rec_get`]), a port's GUID blocks ([`guid_info_rec_query`]), multicast joins
//! ([`join_multicast`], [`get_mcmember_rec`]);
//! [`cancel`] is C's `ib_sa_cancel_query`. Path queries from tasks that cannot sleep
//! ([`path_rec_get_atomic`]) are sent from a work item ([`deferred`]).

pub mod deferred;
pub mod guid_info_record;
pub mod mcmember_record;
pub mod multicast;
pub mod path_record;
pub mod query;
pub mod service_record;

pub use guid_info_record::GuidInfoRecord;
pub use mcmember_record::McMemberRecord;
pub use path_record::PathRecord;
pub use query::{query, QueryCallback, Request};
pub use service_record::ServiceRecord;

use crate::{
    attrs::CORE_CAP_IB_SA,
    device::{
        events::{DeviceEventHandler, EventType},
        ib_device::{DeviceEventRegistration, IbDevice},
        registry::Client,
    },
    mad::types::method,
};
use kernel::{
    prelude::*,
    sync::{global_lock, Arc},
};
use multicast::McastPort;
use query::SaPort;

global_lock! {
    // SAFETY: Initialized by the module initializer before the SA client registers.
    unsafe(uninit) static MCAST: Mutex<KVec<(Arc<IbDevice>, u32, Arc<McastPort>)>> = KVec::new();
}

/// Initializes the tables of ports.
///
/// # Safety
///
/// Called once, at module load, before the SA client registers.
pub(crate) unsafe fn init() {
    // SAFETY: As this function's contract.
    unsafe {
        query::init();
        deferred::init();
        MCAST.init();
    }
}

/// Frees the tables' memory at unload (every port is gone by then).
pub(crate) fn clear() {
    query::clear();
    deferred::clear();
    *MCAST.lock() = KVec::new();
}

/// What a path query ends with (called once): its status and, when an answer came, the path.
pub type PathCallback = KBox<dyn FnMut(Result, Option<PathRecord>) + Send>;

/// The SA services of one device: its ports' agents and multicast groups, and the handler of
/// its events for the groups (C's `ib_sa_device` and `mcast_device`).
pub(crate) struct SaDevice {
    ports: KVec<Arc<SaPort>>,
    mcast: KVec<Arc<McastPort>>,
    events: Option<DeviceEventRegistration>,
}

/// Cancels query `id` (C's `ib_sa_cancel_query`): its callback gets `EINTR`, unless it has
/// ended already.
pub fn cancel(id: u32) {
    if !deferred::cancel(id) {
        query::cancel(id);
    }
}

/// The callback of a path query's answer, made with `flags`: the path is the answer's first
/// record.
fn path_answer(mut done: PathCallback, flags: kernel::alloc::Flags) -> Result<QueryCallback> {
    Ok(KBox::new(
        move |status: Result, answer: Option<&[u8]>| {
            let path = answer
                .and_then(|a| a.first_chunk::<{ path_record::SIZE }>())
                .map(PathRecord::decode);
            (*done)(status, path);
        },
        flags,
    )?)
}

/// [`path_rec_get`] from a task that cannot sleep (C's `GFP_ATOMIC` callers): sent from a work
/// item ([`deferred::query`]); errors other than `ENOMEM` reach `done`.
pub fn path_rec_get_atomic(
    dev: Arc<IbDevice>,
    port: u32,
    rec: &PathRecord,
    comp_mask: u64,
    timeout_ms: u32,
    done: PathCallback,
) -> Result<u32> {
    let on_answer = path_answer(done, GFP_ATOMIC)?;
    with_path_request(rec, comp_mask, |request| {
        deferred::query(dev, port, request, timeout_ms, on_answer)
    })
}

/// Calls `send` with the SA request for the path `rec` describes in the fields `comp_mask`
/// names (a `Get` of a PathRecord).
fn with_path_request<R>(
    rec: &PathRecord,
    comp_mask: u64,
    send: impl FnOnce(Request<'_>) -> R,
) -> R {
    let mut data = [0u8; path_record::SIZE];
    rec.encode(&mut data);
    send(Request {
        method: method::GET,
        attr_id: path_record::ATTR_ID,
        comp_mask,
        data: &data,
    })
}

/// Asks the SA of `port` of `dev` for the path `rec` describes in the fields `comp_mask` names
/// ([`path_record::comp`]), waiting `timeout_ms` in all (C's `ib_sa_path_rec_get`). Returns the
/// query's id for [`cancel`]; `done` gets the status and the path the answer carries (with
/// `EINVAL` too when the SA answered with an error status, as C). Errors as [`query`].
pub fn path_rec_get(
    dev: &IbDevice,
    port: u32,
    rec: &PathRecord,
    comp_mask: u64,
    timeout_ms: u32,
    done: PathCallback,
) -> Result<u32> {
    let on_answer = path_answer(done, GFP_KERNEL)?;
    with_path_request(rec, comp_mask, |request| {
        query(dev, port, request, timeout_ms, on_answer)
    })
}

/// What a service query ends with (called once): its status and, when an answer came, the
/// records it carries.
pub type ServiceCallback = KBox<dyn FnMut(Result, Option<&[ServiceRecord]>) + Send>;

/// Asks the SA of `port` of `dev` for the service records matching `rec` in the components
/// `comp_mask` names (a `GetTable`; C's `ib_sa_service_rec_get`). `done` gets the status and the
/// records (`ENODATA` for an answer without one, as C). Errors as [`query`].
pub fn service_rec_get(
    dev: &IbDevice,
    port: u32,
    rec: &ServiceRecord,
    comp_mask: u64,
    timeout_ms: u32,
    mut done: ServiceCallback,
) -> Result<u32> {
    let mut data = [0u8; service_record::SIZE];
    rec.encode(&mut data);
    let on_answer: QueryCallback = KBox::new(
        move |status: Result, answer: Option<&[u8]>| {
            let Some(a) = answer else {
                (*done)(status, None);
                return;
            };
            let mut recs = KVec::new();
            for chunk in a.chunks_exact(service_record::SIZE) {
                if let Ok(c) = <&[u8; service_record::SIZE]>::try_from(chunk) {
                    if recs.push(ServiceRecord::decode(c), GFP_KERNEL).is_err() {
                        (*done)(Err(ENOMEM), None);
                        return;
                    }
                }
            }
            if recs.is_empty() {
                (*done)(Err(ENODATA), None);
            } else {
                (*done)(status, Some(&recs));
            }
        },
        GFP_KERNEL,
    )?;
    let request = Request {
        method: method::GET_TABLE,
        attr_id: service_record::ATTR_ID,
        comp_mask,
        data: &data,
    };
    query(dev, port, request, timeout_ms, on_answer)
}

/// What a GUIDInfo query ends with (called once): its status and, when an answer came, the
/// record it carries.
pub type GuidInfoCallback = KBox<dyn FnMut(Result, Option<&GuidInfoRecord>) + Send>;

/// Sends `rec` to the SA of `port` of `dev` with `method` (`Get`, `Set` or `Delete`; `EINVAL`
/// for another), the components `comp_mask` names counting (C's `ib_sa_guid_info_rec_query`:
/// a port's GUID block, or alias GUIDs assigned or removed). `done` gets the status and the
/// record the answer carries (with `EINVAL` when the SA answered with an error status, as C).
/// With `atomic` the query is sent from a work item ([`deferred::query`]). Errors as [`query`].
#[expect(
    clippy::too_many_arguments,
    reason = "C's function's arguments, one for one"
)]
pub fn guid_info_rec_query(
    dev: Arc<IbDevice>,
    port: u32,
    rec: &GuidInfoRecord,
    comp_mask: u64,
    method: u8,
    timeout_ms: u32,
    atomic: bool,
    mut done: GuidInfoCallback,
) -> Result<u32> {
    if !matches!(
        method,
        method::GET | method::SET | guid_info_record::METHOD_DELETE
    ) {
        return Err(EINVAL);
    }
    let flags = if atomic { GFP_ATOMIC } else { GFP_KERNEL };
    let on_answer: QueryCallback = KBox::new(
        move |status: Result, answer: Option<&[u8]>| {
            let rec = answer
                .and_then(|a| a.first_chunk::<{ guid_info_record::SIZE }>())
                .map(|r| GuidInfoRecord(*r));
            (*done)(status, rec.as_ref());
        },
        flags,
    )?;
    let request = Request {
        method,
        attr_id: guid_info_record::ATTR_ID,
        comp_mask,
        data: &rec.0,
    };
    if atomic {
        deferred::query(dev, port, request, timeout_ms, on_answer)
    } else {
        query(&dev, port, request, timeout_ms, on_answer)
    }
}

/// The multicast groups of `port` of `dev`, if it has SA services (C's `mcast_client` data).
pub(crate) fn mcast_port(dev: &IbDevice, port: u32) -> Option<Arc<McastPort>> {
    MCAST
        .lock()
        .iter()
        .find(|(d, n, _)| core::ptr::eq(&**d, dev) && *n == port)
        .map(|(_, _, m)| m.clone())
}

/// Joins the multicast group `rec.mgid` on `port` of `dev` (C's `ib_sa_join_multicast`): the
/// join state and the components `comp_mask` names of `rec` are asked of the group; `handler`
/// hears how the join ends, and later if the membership is lost. `ENODEV` for a port without SA
/// services. [`multicast::free`] ends the membership.
pub fn join_multicast(
    dev: &IbDevice,
    port: u32,
    rec: &McMemberRecord,
    comp_mask: u64,
    handler: KBox<dyn multicast::JoinHandler>,
) -> Result<Arc<multicast::Member>> {
    let mcast = mcast_port(dev, port).ok_or(ENODEV)?;
    let member = multicast::prepare(&mcast, rec, comp_mask, handler)?;
    if let Err(e) = multicast::start(&member) {
        multicast::free(&member);
        return Err(e);
    }
    Ok(member)
}

/// The record of the multicast group `mgid` on `port` of `dev` as the SA last gave it (C's
/// `ib_sa_get_mcmember_rec`): `EADDRNOTAVAIL` when the port has no such group, `ENODEV` without
/// SA services.
pub fn get_mcmember_rec(
    dev: &IbDevice,
    port: u32,
    mgid: &crate::attrs::Gid,
) -> Result<McMemberRecord> {
    mcast_port(dev, port).ok_or(ENODEV)?.group_rec(mgid)
}

/// The SA client: opens the SA services of every port that has them (C's `sa_client`,
/// `ib_sa_add_one`, `ib_sa_remove_one`, and the multicast client's `mcast_add_one` and
/// `mcast_remove_one`).
pub(crate) struct SaClient;

impl Client for SaClient {
    type Data = SaDevice;

    fn add(&self, dev: &Arc<IbDevice>) -> Result<Self::Data> {
        let mut data = SaDevice {
            ports: KVec::new(),
            mcast: KVec::new(),
            events: None,
        };
        let added = (|| -> Result {
            for port in 1..=dev.port_count() {
                let sa = dev
                    .port_immutable(port)
                    .is_some_and(|imm| imm.core_cap_flags & CORE_CAP_IB_SA != 0);
                if !sa {
                    continue;
                }
                let p = query::add_port(dev, port)?;
                if let Err(e) = data.ports.push(p.clone(), GFP_KERNEL) {
                    query::remove_port(&p);
                    return Err(e.into());
                }
                let m = McastPort::new(dev, port)?;
                data.mcast.push(m.clone(), GFP_KERNEL)?;
                MCAST.lock().push((dev.clone(), port, m), GFP_KERNEL)?;
            }
            let mut groups = KVec::new();
            for (p, m) in data.ports.iter().zip(data.mcast.iter()) {
                groups.push((p.port(), m.clone()), GFP_KERNEL)?;
            }
            let handler: DeviceEventHandler = KBox::new(
                move |event: EventType, port: u32| {
                    for (n, mcast) in groups.iter() {
                        if *n == port {
                            mcast.event(event);
                        }
                    }
                },
                GFP_KERNEL,
            )?;
            data.events = Some(DeviceEventRegistration::new(dev, handler)?);
            Ok(())
        })();
        match added {
            Ok(()) => Ok(data),
            Err(e) => {
                self.remove(dev, data);
                Err(e)
            }
        }
    }

    fn remove(&self, _dev: &IbDevice, data: Self::Data) {
        // The multicast groups go first, as C's multicast client (registered after the SA
        // client) is removed before it: no event reaches them any more, and each port waits for
        // its members to be freed and its leaves answered.
        drop(data.events);
        for m in data.mcast.iter() {
            MCAST.lock().retain(|(_, _, x)| !Arc::ptr_eq(x, m));
            m.drain();
        }
        for p in data.ports.iter() {
            query::remove_port(p);
        }
    }
}
