// SPDX-License-Identifier: GPL-2.0

//! The SA client's C API (C's `sa_query.c`): `ib_sa_register_client` and its counted users,
//! `ib_sa_path_rec_get`, `ib_sa_service_rec_get`, `ib_sa_guid_info_rec_query`,
//! `ib_sa_cancel_query`, `ib_sa_pack_path`, `ib_sa_unpack_path`, `ib_sa_pack_service` and
//! `ib_sa_unpack_service`, over
//! the core's SA client ([`crate::sa`]), with C's names, signatures and errnos.
//!
//! Not as C: a query is never answered through the local service (ibacm's netlink, used by C
//! only while a listener is there); an OPA path record is refused with `-EINVAL` (this core
//! has no OPA port; C converts it to an InfiniBand record); the query pointer handed back is
//! a token that `ib_sa_cancel_query` does not compare (query ids are not reused); and a query
//! may sleep (C's may be made in atomic context with `GFP_ATOMIC`).

use crate::{
    attrs::Gid,
    c_abi::{
        face::CFace,
        object::{alloc_flags, atomic},
    },
    device::ib_device::IbDevice,
    sa::{self, PathRecord},
};
use core::sync::atomic::Ordering;
use kernel::{
    bindings,
    ffi::{c_int, c_uint, c_ulong, c_void},
    prelude::*,
};

/// A C client's counted use (C's `ib_sa_client_get`).
///
/// # Safety
///
/// `client` was registered and not yet unregistered.
pub(crate) unsafe fn client_get(client: *mut bindings::ib_sa_client) {
    // SAFETY: The caller's contract; `users` is only reached atomically.
    unsafe { atomic(&raw mut (*client).users) }.fetch_add(1, Ordering::Relaxed);
}

/// The end of a counted use; the last one completes the client (C's `ib_sa_client_put`).
///
/// # Safety
///
/// The caller holds one count of `client`.
pub(crate) unsafe fn client_put(client: *mut bindings::ib_sa_client) {
    // SAFETY: The caller's contract keeps the client alive until its count falls.
    if unsafe { atomic(&raw mut (*client).users) }.fetch_sub(1, Ordering::AcqRel) == 1 {
        // SAFETY: The completion was initialised at registration; the unregistering task
        // waits on it.
        unsafe { bindings::complete(&raw mut (*client).comp) };
    }
}

/// C's `ib_sa_register_client`: one user (the registration), the completion not done.
///
/// # Safety
///
/// `client` points to a writable `struct ib_sa_client` no one else uses yet.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_sa_register_client(client: *mut bindings::ib_sa_client) {
    // SAFETY: The caller's contract: nobody reads the structure concurrently.
    unsafe {
        (*client).users.counter = 1;
        bindings::init_completion(&raw mut (*client).comp);
    }
}

/// C's `ib_sa_unregister_client`: drops the registration's use and waits until every query
/// and membership made with the client has ended.
///
/// # Safety
///
/// `client` was registered and is unregistered once.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_sa_unregister_client(client: *mut bindings::ib_sa_client) {
    // SAFETY: The caller's contract: the registration's count is the caller's to drop.
    unsafe {
        client_put(client);
        bindings::wait_for_completion(&raw mut (*client).comp);
    }
}

/// The core's view of an InfiniBand `sa_path_rec` (the fields C's `path_rec_table` packs,
/// each cut to its width as `ib_pack` cuts it).
///
/// # Safety
///
/// `r.rec_type` is `SA_PATH_REC_TYPE_IB` (the union's `ib` member is the one in use).
unsafe fn from_c(r: &bindings::sa_path_rec) -> PathRecord {
    // SAFETY: The caller's contract names the union member; every bit pattern of the GID
    // unions is their raw bytes.
    let (ib, dgid, sgid) = unsafe { (r.__bindgen_anon_1.ib, r.dgid.raw, r.sgid.raw) };
    PathRecord {
        service_id: u64::from_be(r.service_id),
        dgid: Gid(dgid),
        sgid: Gid(sgid),
        dlid: u16::from_be(ib.dlid),
        slid: u16::from_be(ib.slid),
        raw_traffic: ib.raw_traffic & 1 != 0,
        flow_label: u32::from_be(r.flow_label),
        hop_limit: r.hop_limit,
        traffic_class: r.traffic_class,
        reversible: r.reversible & 1 != 0,
        numb_path: r.numb_path,
        pkey: u16::from_be(r.pkey),
        qos_class: u16::from_be(r.qos_class),
        sl: r.sl,
        mtu_selector: r.mtu_selector,
        mtu: r.mtu,
        rate_selector: r.rate_selector,
        rate: r.rate,
        packet_life_time_selector: r.packet_life_time_selector,
        packet_life_time: r.packet_life_time,
        preference: r.preference,
    }
}

/// Writes the fields of `p` that C's `path_rec_table` unpacks into `r` (the InfiniBand part of
/// the union among them); the rest of `r` is left as it is, as `ib_unpack` leaves it.
fn to_c(p: &PathRecord, r: &mut bindings::sa_path_rec) {
    r.service_id = p.service_id.to_be();
    r.dgid.raw = p.dgid.0;
    r.sgid.raw = p.sgid.0;
    r.__bindgen_anon_1.ib = bindings::sa_path_rec_ib {
        dlid: p.dlid.to_be(),
        slid: p.slid.to_be(),
        raw_traffic: u8::from(p.raw_traffic),
    };
    r.flow_label = p.flow_label.to_be();
    r.hop_limit = p.hop_limit;
    r.traffic_class = p.traffic_class;
    r.reversible = u8::from(p.reversible);
    r.numb_path = p.numb_path;
    r.pkey = p.pkey.to_be();
    r.qos_class = p.qos_class.to_be();
    r.sl = p.sl;
    r.mtu_selector = p.mtu_selector;
    r.mtu = p.mtu;
    r.rate_selector = p.rate_selector;
    r.rate = p.rate;
    r.packet_life_time_selector = p.packet_life_time_selector;
    r.packet_life_time = p.packet_life_time;
    r.preference = p.preference;
}

/// C's `ib_sa_pack_path`: `rec` (InfiniBand) as the 64 bytes of a PathRecord at `attribute`.
///
/// # Safety
///
/// `rec` is a readable InfiniBand path record; `attribute` has 64 writable bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_sa_pack_path(
    rec: *mut bindings::sa_path_rec,
    attribute: *mut c_void,
) {
    // SAFETY: The caller's contract.
    let p = unsafe { from_c(&*rec) };
    // SAFETY: The caller's contract: 64 writable bytes, any alignment.
    let out = unsafe { &mut *attribute.cast::<[u8; sa::path_record::SIZE]>() };
    p.encode(out);
}

/// C's `ib_sa_unpack_path`: the PathRecord at `attribute` into `rec`'s fields.
///
/// # Safety
///
/// `attribute` has 64 readable bytes; `rec` is writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_sa_unpack_path(
    attribute: *mut c_void,
    rec: *mut bindings::sa_path_rec,
) {
    // SAFETY: The caller's contract: 64 readable bytes, any alignment.
    let wire = unsafe { &*attribute.cast::<[u8; sa::path_record::SIZE]>() };
    // SAFETY: The caller's contract.
    to_c(&PathRecord::decode(wire), unsafe { &mut *rec });
}

/// A C path query's callback.
type CPathCallback = unsafe extern "C" fn(c_int, *mut bindings::sa_path_rec, c_uint, *mut c_void);

/// What a C query's end needs: the caller's callback and context, and its client's count.
struct CPathQuery {
    client: *mut bindings::ib_sa_client,
    callback: Option<CPathCallback>,
    context: *mut c_void,
}

// SAFETY: The C caller's context and callback may be used from any task (C calls them from the
// MAD layer's work); the client stays alive while it is counted.
unsafe impl Send for CPathQuery {}

impl CPathQuery {
    /// The query ended: the caller's callback, then the client's count goes (C's
    /// `ib_sa_path_rec_callback` and `send_handler`).
    fn end(&self, status: Result, path: Option<PathRecord>) {
        let status = status.err().map_or(0, |e| e.to_errno());
        if let Some(cb) = self.callback {
            match path {
                Some(p) => {
                    // SAFETY: `sa_path_rec` is a plain structure: all zeroes is valid (C's
                    // `rec = {}`).
                    let mut rec: bindings::sa_path_rec = unsafe { core::mem::zeroed() };
                    to_c(&p, &mut rec);
                    rec.rec_type = bindings::sa_path_rec_type_SA_PATH_REC_TYPE_IB;
                    // SAFETY: The caller of `ib_sa_path_rec_get` gave this callback and
                    // context; the record lives across the call.
                    unsafe { cb(status, &mut rec, 1, self.context) };
                }
                // SAFETY: As above.
                None => unsafe { cb(status, core::ptr::null_mut(), 0, self.context) },
            }
        }
        // SAFETY: The query held one count of its client.
        unsafe { client_put(self.client) };
    }
}

/// C's `ib_sa_path_rec_get`: asks the SA of `port_num` for the path `rec` describes in the
/// components `comp_mask` names (C's big-endian mask), waiting `timeout_ms` in all; `callback`
/// gets the status and the record (once; with `-EINVAL` and the record when the SA answered an
/// error status). Returns the query's id (for `ib_sa_cancel_query`, with `*sa_query`), or
/// `-ENODEV` (no SA on the port), `-EINVAL` (not an InfiniBand record), `-EAGAIN` (no SM
/// yet), `-ENOMEM`; the callback is not called then and `*sa_query` is null. With a `gfp_mask`
/// that cannot sleep (`GFP_ATOMIC`) the query is sent from a work item (`sa::deferred`):
/// `-ENODEV` and `-EAGAIN` then reach the callback instead.
///
/// # Safety
///
/// `client` is registered; `device` was handed to the caller and not yet removed; `rec` is
/// readable; `sa_query` is writable; `callback` and `context` stay valid until the callback
/// has run.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_sa_path_rec_get(
    client: *mut bindings::ib_sa_client,
    device: *mut bindings::ib_device,
    port_num: u32,
    rec: *mut bindings::sa_path_rec,
    comp_mask: bindings::ib_sa_comp_mask,
    timeout_ms: c_ulong,
    gfp_mask: bindings::gfp_t,
    callback: Option<CPathCallback>,
    context: *mut c_void,
    sa_query: *mut *mut bindings::ib_sa_query,
) -> c_int {
    let flags = alloc_flags(gfp_mask);
    // The port's checks first, as C (a caller that cannot sleep: from the work item, below).
    let checked = if flags == GFP_ATOMIC {
        None
    } else {
        // SAFETY: The caller's contract.
        match unsafe { sa_device(device, port_num) } {
            Ok(d) => Some(d),
            Err(e) => return e,
        }
    };
    // SAFETY: The caller's contract.
    let r = unsafe { &*rec };
    if r.rec_type != bindings::sa_path_rec_type_SA_PATH_REC_TYPE_IB {
        return EINVAL.to_errno();
    }
    // SAFETY: The record is InfiniBand (checked above).
    let path = unsafe { from_c(r) };
    let query = CPathQuery {
        client,
        callback,
        context,
    };
    let timeout = u32::try_from(timeout_ms).unwrap_or(u32::MAX);
    let comp_mask = u64::from_be(comp_mask);
    let Some(dev) = checked else {
        // A caller that cannot sleep (IPoIB, under its lock): the query is sent from a work
        // item, and the port's checks are made there (their errors reach the callback).
        // SAFETY: The caller's contract.
        let Some(dev) = (unsafe { CFace::owner_arc(device) }) else {
            return ENODEV.to_errno();
        };
        // SAFETY: The caller's contract.
        return unsafe {
            send_c_query(client, sa_query, flags, query, |q, flags| {
                let done: sa::PathCallback = KBox::new(
                    move |status: Result, p: Option<PathRecord>| q.end(status, p),
                    flags,
                )?;
                sa::path_rec_get_atomic(dev, port_num, &path, comp_mask, timeout, done)
            })
        };
    };
    // SAFETY: The caller's contract.
    unsafe {
        send_c_query(client, sa_query, flags, query, |q, flags| {
            let done: sa::PathCallback = KBox::new(
                move |status: Result, p: Option<PathRecord>| q.end(status, p),
                flags,
            )?;
            sa::path_rec_get(dev, port_num, &path, comp_mask, timeout, done)
        })
    }
}

/// The device behind `device` if `port` has SA services (C's `ib_get_client_data` of the SA
/// client); `-ENODEV` otherwise.
///
/// # Safety
///
/// `device` was handed to the caller and not yet removed.
unsafe fn sa_device<'a>(
    device: *mut bindings::ib_device,
    port: u32,
) -> core::result::Result<&'a IbDevice, c_int> {
    // SAFETY: The caller's contract.
    let dev = unsafe { CFace::owner(device) }.ok_or(ENODEV.to_errno())?;
    if sa::mcast_port(dev, port).is_none() {
        return Err(ENODEV.to_errno());
    }
    Ok(dev)
}

/// What C's query functions share once their arguments are checked: `state` (what the query's
/// end needs) goes into its own allocation, whose address is the token `*sa_query` gets; the
/// client is counted and the token written before `send` sends the query (its callback, which
/// `send` makes of the state, may run before this returns, as in C); when the query cannot be
/// sent, the count goes, `*sa_query` is null and C's errno is returned. Otherwise the query's
/// id.
///
/// # Safety
///
/// `client` is registered; `sa_query` is writable.
unsafe fn send_c_query<Q>(
    client: *mut bindings::ib_sa_client,
    sa_query: *mut *mut bindings::ib_sa_query,
    flags: kernel::alloc::Flags,
    state: Q,
    send: impl FnOnce(KBox<Q>, kernel::alloc::Flags) -> Result<u32>,
) -> c_int {
    let Ok(state) = KBox::new(state, flags) else {
        return ENOMEM.to_errno();
    };
    // The token handed back: the query's own allocation, which lives until it ends.
    let token = core::ptr::from_ref(&*state)
        .cast_mut()
        .cast::<bindings::ib_sa_query>();
    // SAFETY: The caller's contract: registered client, writable `sa_query`.
    unsafe {
        client_get(client);
        sa_query.write(token);
    }
    match send(state, flags) {
        Ok(id) => c_int::try_from(id).unwrap_or(c_int::MAX),
        Err(e) => {
            // Never sent: the state (which held the client's count) is gone unused.
            // SAFETY: The count taken above; `sa_query` is writable (contract).
            unsafe {
                client_put(client);
                sa_query.write(core::ptr::null_mut());
            }
            e.to_errno()
        }
    }
}

/// C's `ib_sa_cancel_query`: the query `id`, if it has not ended, ends with `-EINTR`.
///
/// # Safety
///
/// None beyond C's: `query` is not dereferenced.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_sa_cancel_query(id: c_int, _query: *mut bindings::ib_sa_query) {
    if let Ok(id) = u32::try_from(id) {
        sa::cancel(id);
    }
}

// C's structure is the wire record, byte for byte.
const _: () = assert!(core::mem::size_of::<bindings::sa_service_rec>() == sa::service_record::SIZE);

/// A C service query's callback.
type CServiceCallback =
    unsafe extern "C" fn(c_int, *mut bindings::sa_service_rec, c_uint, *mut c_void);

/// What a C service query's end needs (as [`CPathQuery`]).
struct CServiceQuery {
    client: *mut bindings::ib_sa_client,
    callback: Option<CServiceCallback>,
    context: *mut c_void,
}

// SAFETY: As for `CPathQuery`.
unsafe impl Send for CServiceQuery {}

impl CServiceQuery {
    /// The query ended: the caller's callback with the records (C's
    /// `ib_sa_service_rec_callback`), then the client's count goes.
    fn end(&self, status: Result, recs: Option<&[sa::ServiceRecord]>) {
        let status = status.err().map_or(0, |e| e.to_errno());
        if let Some(cb) = self.callback {
            let n = recs.map_or(0, |r| r.len());
            let mut out = KVec::<bindings::sa_service_rec>::new();
            let mut status = status;
            if out.reserve(n, GFP_KERNEL).is_err() {
                status = ENOMEM.to_errno();
            } else if let Some(recs) = recs {
                for r in recs {
                    // SAFETY: `sa_service_rec` is plain bytes (176 of them, checked above):
                    // any bit pattern is valid.
                    let c = unsafe {
                        core::mem::transmute::<
                            [u8; sa::service_record::SIZE],
                            bindings::sa_service_rec,
                        >(r.0)
                    };
                    // Cannot fail: reserved above.
                    let _ = out.push(c, GFP_KERNEL);
                }
            }
            let (ptr, n) = if out.is_empty() {
                (core::ptr::null_mut(), 0)
            } else {
                (out.as_mut_ptr(), out.len())
            };
            // SAFETY: The caller of `ib_sa_service_rec_get` gave this callback and context; the
            // records live across the call.
            unsafe { cb(status, ptr, n as c_uint, self.context) };
        }
        // SAFETY: The query held one count of its client.
        unsafe { client_put(self.client) };
    }
}

/// C's `ib_sa_service_rec_get`: asks the SA of `port_num` for the service records matching
/// `rec` in the components `comp_mask` names (a `GetTable`); `callback` gets the status and the
/// records (once; `-ENODATA` and none for an answer without one). Returns the query's id, or
/// `-ENODEV`, `-EAGAIN`, `-ENOMEM` as [`ib_sa_path_rec_get`].
///
/// # Safety
///
/// As for [`ib_sa_path_rec_get`], with `rec` a readable service record.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_sa_service_rec_get(
    client: *mut bindings::ib_sa_client,
    device: *mut bindings::ib_device,
    port_num: u32,
    rec: *mut bindings::sa_service_rec,
    comp_mask: bindings::ib_sa_comp_mask,
    timeout_ms: c_ulong,
    gfp_mask: bindings::gfp_t,
    callback: Option<CServiceCallback>,
    context: *mut c_void,
    sa_query: *mut *mut bindings::ib_sa_query,
) -> c_int {
    // SAFETY: The caller's contract.
    let dev = match unsafe { sa_device(device, port_num) } {
        Ok(d) => d,
        Err(e) => return e,
    };
    // SAFETY: The caller's contract; the structure is 176 plain bytes (checked above).
    let wanted = sa::ServiceRecord(unsafe {
        core::mem::transmute::<bindings::sa_service_rec, [u8; sa::service_record::SIZE]>(*rec)
    });
    let query = CServiceQuery {
        client,
        callback,
        context,
    };
    let timeout = u32::try_from(timeout_ms).unwrap_or(u32::MAX);
    // SAFETY: The caller's contract.
    unsafe {
        send_c_query(
            client,
            sa_query,
            alloc_flags(gfp_mask),
            query,
            |q, flags| {
                let done: sa::ServiceCallback = KBox::new(
                    move |status: Result, recs: Option<&[sa::ServiceRecord]>| q.end(status, recs),
                    flags,
                )?;
                sa::service_rec_get(
                    dev,
                    port_num,
                    &wanted,
                    u64::from_be(comp_mask),
                    timeout,
                    done,
                )
            },
        )
    }
}

/// C's `ib_sa_pack_service`: `rec` as the 176 bytes of a ServiceRecord at `attribute`, its
/// reserved bytes zero.
///
/// # Safety
///
/// `rec` is a readable service record; `attribute` has 176 writable bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_sa_pack_service(
    rec: *mut bindings::sa_service_rec,
    attribute: *mut c_void,
) {
    // SAFETY: The caller's contract; the structure is 176 plain bytes (checked above).
    let r = sa::ServiceRecord(unsafe {
        core::mem::transmute::<bindings::sa_service_rec, [u8; sa::service_record::SIZE]>(*rec)
    });
    // SAFETY: The caller's contract: 176 writable bytes, any alignment.
    r.encode(unsafe { &mut *attribute.cast::<[u8; sa::service_record::SIZE]>() });
}

/// C's `ib_sa_unpack_service`: the ServiceRecord at `attribute` into `rec`'s fields (its
/// reserved bytes left as they were, as C's unpacking skips them).
///
/// # Safety
///
/// `attribute` has 176 readable bytes; `rec` is writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_sa_unpack_service(
    attribute: *mut c_void,
    rec: *mut bindings::sa_service_rec,
) {
    // SAFETY: The caller's contract: 176 readable bytes, any alignment.
    let wire = unsafe { &*attribute.cast::<[u8; sa::service_record::SIZE]>() };
    let fields = sa::ServiceRecord::decode(wire);
    // SAFETY: `rec` is writable (contract) and 176 plain bytes (checked above).
    let out = unsafe { &mut *rec.cast::<[u8; sa::service_record::SIZE]>() };
    let reserved = sa::service_record::RESERVED;
    let kept = [out[reserved.start], out[reserved.start + 1]];
    *out = fields.0;
    out[reserved].copy_from_slice(&kept);
}

// C's structure is the wire record, byte for byte.
const _: () =
    assert!(core::mem::size_of::<bindings::ib_sa_guidinfo_rec>() == sa::guid_info_record::SIZE);

/// A C GUIDInfo query's callback.
type CGuidInfoCallback =
    unsafe extern "C" fn(c_int, *mut bindings::ib_sa_guidinfo_rec, *mut c_void);

/// What a C GUIDInfo query's end needs (as [`CPathQuery`]).
struct CGuidInfoQuery {
    client: *mut bindings::ib_sa_client,
    callback: Option<CGuidInfoCallback>,
    context: *mut c_void,
}

// SAFETY: As for `CPathQuery`.
unsafe impl Send for CGuidInfoQuery {}

impl CGuidInfoQuery {
    /// The query ended: the caller's callback with the record, or null when no answer came
    /// (C's `ib_sa_guidinfo_rec_callback`), then the client's count goes.
    fn end(&self, status: Result, rec: Option<&sa::GuidInfoRecord>) {
        if let Some(cb) = self.callback {
            // SAFETY: `ib_sa_guidinfo_rec` is 72 plain bytes (checked above): any bit pattern
            // is valid.
            let mut c =
                rec.map(|r| unsafe {
                    core::mem::transmute::<
                        [u8; sa::guid_info_record::SIZE],
                        bindings::ib_sa_guidinfo_rec,
                    >(r.0)
                });
            let ptr = c
                .as_mut()
                .map_or(core::ptr::null_mut(), core::ptr::from_mut);
            let status = status.err().map_or(0, |e| e.to_errno());
            // SAFETY: The caller of `ib_sa_guid_info_rec_query` gave this callback and context;
            // the record lives across the call.
            unsafe { cb(status, ptr, self.context) };
        }
        // SAFETY: The query held one count of its client.
        unsafe { client_put(self.client) };
    }
}

/// C's `ib_sa_guid_info_rec_query`: sends the GUIDInfo record `rec` to the SA of `port_num`
/// with `method` (`Get`, `Set`, `Delete`; `-EINVAL` for another), the components `comp_mask`
/// names counting; `callback`, if given, gets the status and the record of the answer (null
/// when none came). Returns the query's id, or `-ENODEV`, `-EINVAL`, `-EAGAIN`, `-ENOMEM` as
/// [`ib_sa_path_rec_get`]. A caller that cannot sleep (`GFP_ATOMIC`) has its query sent from a
/// work item, the port's checks made there.
///
/// # Safety
///
/// As for [`ib_sa_path_rec_get`], with `rec` a readable GUIDInfo record.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_sa_guid_info_rec_query(
    client: *mut bindings::ib_sa_client,
    device: *mut bindings::ib_device,
    port_num: u32,
    rec: *mut bindings::ib_sa_guidinfo_rec,
    comp_mask: bindings::ib_sa_comp_mask,
    method: u8,
    timeout_ms: c_ulong,
    gfp_mask: bindings::gfp_t,
    callback: Option<CGuidInfoCallback>,
    context: *mut c_void,
    sa_query: *mut *mut bindings::ib_sa_query,
) -> c_int {
    let flags = alloc_flags(gfp_mask);
    let atomic = flags == GFP_ATOMIC;
    if !atomic {
        // SAFETY: The caller's contract.
        if let Err(e) = unsafe { sa_device(device, port_num) } {
            return e;
        }
    }
    // SAFETY: The caller's contract.
    let Some(dev) = (unsafe { CFace::owner_arc(device) }) else {
        return ENODEV.to_errno();
    };
    // SAFETY: The caller's contract; the structure is 72 plain bytes (checked above).
    let wanted = sa::GuidInfoRecord(unsafe {
        core::mem::transmute::<bindings::ib_sa_guidinfo_rec, [u8; sa::guid_info_record::SIZE]>(*rec)
    });
    let query = CGuidInfoQuery {
        client,
        callback,
        context,
    };
    let timeout = u32::try_from(timeout_ms).unwrap_or(u32::MAX);
    let comp_mask = u64::from_be(comp_mask);
    // SAFETY: The caller's contract.
    unsafe {
        send_c_query(client, sa_query, flags, query, |q, flags| {
            let done: sa::GuidInfoCallback = KBox::new(
                move |status: Result, r: Option<&sa::GuidInfoRecord>| q.end(status, r),
                flags,
            )?;
            sa::guid_info_rec_query(
                dev, port_num, &wanted, comp_mask, method, timeout, atomic, done,
            )
        })
    }
}
