// SPDX-License-Identifier: GPL-2.0

//! Multicast joins' C API (C's `multicast.c`): `ib_sa_join_multicast`, `ib_sa_free_multicast`,
//! `ib_sa_get_mcmember_rec` and `ib_init_ah_from_mcmember`, over the core's multicast groups
//! ([`crate::sa::multicast`]), with C's names, signatures and errnos. The `struct
//! ib_sa_multicast` a C consumer gets is the first field of an allocation that also holds the
//! core's member; its `rec` is written before each callback, as C's `join_group` writes it.
//! A join from a caller that cannot sleep (`GFP_ATOMIC`) begins from a work item
//! ([`DeferredJoin`]).

use crate::{
    attrs::{Gid, LinkLayer},
    c_abi::{
        face::CFace,
        gid::find_on_port,
        object::{alloc_flags, err_ptr},
        sa_client::{client_get, client_put},
    },
    device::ib_device::IbDevice,
    sa::{
        self,
        multicast::{self, JoinHandler, Member},
        McMemberRecord,
    },
};
use kernel::{
    bindings,
    ffi::c_int,
    prelude::*,
    sync::{atomic::Atomic, Arc, Completion},
    workqueue::{Work, WorkItem},
};

/// A C consumer's membership: the structure it holds, then the core's member.
#[repr(C)]
struct CMember {
    multicast: bindings::ib_sa_multicast,
    member: Option<Arc<Member>>,
    client: *mut bindings::ib_sa_client,
    /// A join asked for by a caller that cannot sleep, begun from a work item.
    deferred: Option<Arc<DeferredJoin>>,
}

/// Where a deferred join stands ([`DeferredJoin::state`]).
const WAITING: u32 = 0;
const BEGINNING: u32 = 1;
const CANCELLED: u32 = 2;

/// A join asked for by a caller that cannot sleep (C's `GFP_ATOMIC` callers: IPoIB joins under
/// its device lock): the core's join takes mutexes, so it begins from the `infiniband`
/// workqueue. An error C returns at once (no SA on the port) reaches the callback instead.
#[pin_data]
struct DeferredJoin {
    #[pin]
    work: Work<DeferredJoin>,
    dev: Arc<IbDevice>,
    port: u32,
    /// The membership (used by the work only once it moved the state from `WAITING` to
    /// `BEGINNING`; freed by the consumer only after `begun`, unless it cancelled first).
    c: *mut CMember,
    state: Atomic<u32>,
    /// Completed when the work has begun the join (or failed to).
    #[pin]
    begun: Completion,
}

// SAFETY: `c` is used under the state protocol above, from one task at a time; the rest is
// shared safely.
unsafe impl Send for DeferredJoin {}
// SAFETY: As above.
unsafe impl Sync for DeferredJoin {}

kernel::impl_has_work! {
    impl HasWork<Self> for DeferredJoin { self.work }
}

impl WorkItem for DeferredJoin {
    type Pointer = Arc<DeferredJoin>;

    fn run(this: Arc<DeferredJoin>) {
        if this
            .state
            .cmpxchg(WAITING, BEGINNING, kernel::sync::atomic::Full)
            .is_err()
        {
            // Freed before it began: the consumer released the membership.
            return;
        }
        let c = this.c;
        // SAFETY: The state moved to `BEGINNING`: the consumer frees `c` only after `begun`.
        let result = unsafe { begin(&this.dev, this.port, c) };
        if let Err(e) = result {
            // What C would have returned from the join comes through the callback; a free
            // under way waits for it (`begun`, below).
            // SAFETY: `c` is live: the consumer frees it only after `begun`.
            let free_it = unsafe {
                (*c).multicast
                    .callback
                    .is_some_and(|cb| cb(e.to_errno(), &raw mut (*c).multicast) != 0)
            };
            if free_it {
                // The callback asks the core to free the membership (C's semantics): the
                // consumer does not free it then.
                this.begun.complete_all();
                // SAFETY: As above; nothing uses `c` any more.
                unsafe { release(c) };
                return;
            }
        }
        this.begun.complete_all();
    }
}

/// Begins the join of the C membership `c` on `port` of `dev`: its core member made, stored
/// and started. On an error nothing is left in `c.member`.
///
/// # Safety
///
/// `c` came from [`ib_sa_join_multicast`] and is not used by another task meanwhile.
unsafe fn begin(dev: &IbDevice, port: u32, c: *mut CMember) -> Result {
    let mcast = sa::mcast_port(dev, port).ok_or(ENODEV)?;
    // SAFETY: The caller's contract.
    let (r, comp_mask) = unsafe { ((*c).multicast.rec, (*c).multicast.comp_mask) };
    let handler: KBox<dyn JoinHandler> = KBox::new(CJoinHandler { c }, GFP_KERNEL)?;
    let member = multicast::prepare(&mcast, &from_c(&r), u64::from_be(comp_mask), handler)?;
    // SAFETY: The member is stored before its join starts (its callback may free the
    // membership before this returns).
    unsafe { (*c).member = Some(member.clone()) };
    if let Err(e) = multicast::start(&member) {
        // SAFETY: As above: the join never started.
        unsafe { (*c).member = None };
        multicast::free(&member);
        return Err(e);
    }
    Ok(())
}

/// The core's view of a C record.
fn from_c(r: &bindings::ib_sa_mcmember_rec) -> McMemberRecord {
    // SAFETY: Every bit pattern of the GID unions is their raw bytes.
    let (mgid, port_gid) = unsafe { (r.mgid.raw, r.port_gid.raw) };
    McMemberRecord {
        mgid: Gid(mgid),
        port_gid: Gid(port_gid),
        qkey: u32::from_be(r.qkey),
        mlid: u16::from_be(r.mlid),
        mtu_selector: r.mtu_selector,
        mtu: r.mtu,
        traffic_class: r.traffic_class,
        pkey: u16::from_be(r.pkey),
        rate_selector: r.rate_selector,
        rate: r.rate,
        packet_life_time_selector: r.packet_life_time_selector,
        packet_life_time: r.packet_life_time,
        sl: r.sl,
        flow_label: u32::from_be(r.flow_label),
        hop_limit: r.hop_limit,
        scope: r.scope,
        join_state: r.join_state,
        proxy_join: r.proxy_join & 1 != 0,
    }
}

/// A record as C's structure holds it.
fn to_c(m: &McMemberRecord) -> bindings::ib_sa_mcmember_rec {
    // SAFETY: `ib_sa_mcmember_rec` is a plain structure: all zeroes is valid.
    let mut r: bindings::ib_sa_mcmember_rec = unsafe { core::mem::zeroed() };
    r.mgid.raw = m.mgid.0;
    r.port_gid.raw = m.port_gid.0;
    r.qkey = m.qkey.to_be();
    r.mlid = m.mlid.to_be();
    r.mtu_selector = m.mtu_selector;
    r.mtu = m.mtu;
    r.traffic_class = m.traffic_class;
    r.pkey = m.pkey.to_be();
    r.rate_selector = m.rate_selector;
    r.rate = m.rate;
    r.packet_life_time_selector = m.packet_life_time_selector;
    r.packet_life_time = m.packet_life_time;
    r.sl = m.sl;
    r.flow_label = m.flow_label.to_be();
    r.hop_limit = m.hop_limit;
    r.scope = m.scope;
    r.join_state = m.join_state;
    r.proxy_join = u8::from(m.proxy_join);
    r
}

/// The handler of a C membership: the consumer's callback on its structure.
struct CJoinHandler {
    c: *mut CMember,
}

// SAFETY: The structure lives until the membership is freed, which waits for the callbacks
// under way; the consumer's callback may run in any task (C runs it from a workqueue).
unsafe impl Send for CJoinHandler {}
// SAFETY: As above; the core calls the handler of one member one call at a time.
unsafe impl Sync for CJoinHandler {}

impl JoinHandler for CJoinHandler {
    fn joined(&self, member: &Arc<Member>, status: Result) -> bool {
        let c = self.c;
        // SAFETY: The structure is live while a callback of its member is under way (type
        // invariant); C's core writes the record the same way before the callback.
        unsafe {
            (*c).multicast.rec = to_c(&member.rec());
            match (*c).multicast.callback {
                Some(cb) => {
                    cb(
                        status.err().map_or(0, |e| e.to_errno()),
                        &raw mut (*c).multicast,
                    ) != 0
                }
                None => false,
            }
        }
    }

    fn released(&self) {
        // SAFETY: The core freed the membership on the consumer's request: the structure is
        // the core's to free, once (C's `ib_sa_free_multicast` from its work handler).
        unsafe { release(self.c) };
    }
}

/// Frees a C membership's structure and drops its client's count.
///
/// # Safety
///
/// `c` came from [`ib_sa_join_multicast`], its member is freed, and nothing uses it any more.
unsafe fn release(c: *mut CMember) {
    // SAFETY: The caller's contract.
    let c = unsafe { KBox::from_raw(c) };
    // SAFETY: The membership held one count of its client.
    unsafe { client_put(c.client) };
}

/// C's `ib_sa_join_multicast`: joins the group `rec->mgid` on `port_num` with the join state and
/// the components `comp_mask` (C's big-endian mask) names; `callback` hears how the join ends
/// (and later `-ENETRESET` if the membership is lost) and may return non-zero to have it freed.
/// Returns the membership, or `ERR_PTR(-ENODEV)` (no SA on the port) or `ERR_PTR(-ENOMEM)`.
///
/// # Safety
///
/// `client` is registered; `device` was handed to the caller and not yet removed; `rec` is
/// readable; `callback` and `context` stay valid until the membership is freed.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_sa_join_multicast(
    client: *mut bindings::ib_sa_client,
    device: *mut bindings::ib_device,
    port_num: u32,
    rec: *mut bindings::ib_sa_mcmember_rec,
    comp_mask: bindings::ib_sa_comp_mask,
    gfp_mask: bindings::gfp_t,
    callback: Option<
        unsafe extern "C" fn(status: c_int, multicast: *mut bindings::ib_sa_multicast) -> c_int,
    >,
    context: *mut core::ffi::c_void,
) -> *mut bindings::ib_sa_multicast {
    let flags = alloc_flags(gfp_mask);
    // SAFETY: The caller's contract.
    let Some(dev) = (unsafe { CFace::owner_arc(device) }) else {
        return err_ptr(ENODEV);
    };
    // The port's check first, as C (a caller that cannot sleep: from the work item).
    if flags != GFP_ATOMIC && sa::mcast_port(&dev, port_num).is_none() {
        return err_ptr(ENODEV);
    }
    // SAFETY: The caller's contract.
    let r = unsafe { *rec };
    let c = match KBox::new(
        CMember {
            multicast: bindings::ib_sa_multicast {
                rec: r,
                comp_mask,
                callback,
                context,
            },
            member: None,
            client,
            deferred: None,
        },
        flags,
    ) {
        Ok(c) => KBox::into_raw(c),
        Err(_) => return err_ptr(ENOMEM),
    };
    // SAFETY: The client is registered (contract); the membership holds a count until freed.
    unsafe { client_get(client) };
    if flags == GFP_ATOMIC {
        let queued = crate::device::workqueues::queues().ok_or(ENODEV).and_then(|q| {
            let d = Arc::pin_init(
                pin_init!(DeferredJoin {
                    work <- kernel::new_work!("ib_core::c_abi::sa_multicast::DeferredJoin::work"),
                    dev,
                    port: port_num,
                    c,
                    state: Atomic::new(WAITING),
                    begun <- Completion::new(),
                }),
                GFP_ATOMIC,
            )?;
            // SAFETY: Nothing else has seen `c` yet.
            unsafe { (*c).deferred = Some(d.clone()) };
            let _ = q.general.enqueue(d);
            Ok(())
        });
        return match queued {
            // SAFETY: `c` is live until the consumer frees it.
            Ok(()) => unsafe { &raw mut (*c).multicast },
            Err(e) => {
                // SAFETY: Nothing else has seen `c`.
                unsafe { release(c) };
                err_ptr(e)
            }
        };
    }
    // SAFETY: `c` is live and not yet handed out.
    if let Err(e) = unsafe { begin(&dev, port_num, c) } {
        // SAFETY: The join never started: nothing else uses `c`.
        unsafe { release(c) };
        return err_ptr(e);
    }
    // SAFETY: `c` is live; C returns the pointer it saved before the join was queued.
    unsafe { &raw mut (*c).multicast }
}

/// C's `ib_sa_free_multicast`: ends the membership (its join states left with the SA when no
/// other member needs them) once no callback of it is under way, and frees it.
///
/// # Safety
///
/// `multicast` came from [`ib_sa_join_multicast`] and was not freed (by this function or by
/// a callback's non-zero return); not called from its own callback.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_sa_free_multicast(multicast: *mut bindings::ib_sa_multicast) {
    // `multicast` is the first field of its `CMember` (`repr(C)`).
    let c = multicast.cast::<CMember>();
    // A deferred join: cancelled if it has not begun, else waited for.
    // SAFETY: The caller's contract: the structure is live and the caller's to free.
    if let Some(d) = unsafe { (*c).deferred.take() } {
        let began = d
            .state
            .cmpxchg(WAITING, CANCELLED, kernel::sync::atomic::Full)
            .is_err();
        if began {
            d.begun.wait_for_completion();
        }
    }
    // SAFETY: As above; the join, if deferred, has begun (or never will).
    if let Some(member) = unsafe { (*c).member.take() } {
        multicast::free(&member);
    }
    // SAFETY: The member is freed: no callback runs any more.
    unsafe { release(c) };
}

/// C's `ib_sa_get_mcmember_rec`: the record of the group `mgid` on `port_num` as the SA last
/// gave it; `-EADDRNOTAVAIL` when the port has no such group, `-ENODEV` without SA.
///
/// # Safety
///
/// `device` was handed to the caller and not yet removed; `mgid` is readable and `rec`
/// writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_sa_get_mcmember_rec(
    device: *mut bindings::ib_device,
    port_num: u32,
    mgid: *mut bindings::ib_gid,
    rec: *mut bindings::ib_sa_mcmember_rec,
) -> c_int {
    // SAFETY: The caller's contract.
    let Some(dev) = (unsafe { CFace::owner(device) }) else {
        return ENODEV.to_errno();
    };
    // SAFETY: The caller's contract; every bit pattern of the union is its raw bytes.
    let mgid = Gid(unsafe { (*mgid).raw });
    match sa::get_mcmember_rec(dev, port_num, &mgid) {
        Ok(r) => {
            // SAFETY: The caller's contract.
            unsafe { rec.write(to_c(&r)) };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// C's `ib_init_ah_from_mcmember`: `ah_attr` (zeroed first) addresses the group `rec` from
/// `port_num`: its MLID, SL and rate, and a GRH to its MGID from the port's entry of the
/// record's port GID (held; the caller drops it with `rdma_destroy_ah_attr`). `-EINVAL` for a
/// port that is not InfiniBand (this core has no RoCE port), `-ENOENT` when the port has no
/// such GID of `gid_type`, `-ENODEV` for a device no longer registered.
///
/// # Safety
///
/// `device` was handed to the caller and not yet removed; `rec` is readable; `ah_attr` is
/// writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_init_ah_from_mcmember(
    device: *mut bindings::ib_device,
    port_num: u32,
    rec: *mut bindings::ib_sa_mcmember_rec,
    _ndev: *mut bindings::net_device,
    gid_type: bindings::ib_gid_type,
    ah_attr: *mut bindings::rdma_ah_attr,
) -> c_int {
    // SAFETY: The caller's contract.
    let Some(dev) = (unsafe { CFace::owner(device) }) else {
        return ENODEV.to_errno();
    };
    if dev.link_layer(port_num) != Some(LinkLayer::Infiniband) {
        // C: a port that is neither InfiniBand nor RoCE; an invalid port has no link layer.
        return if dev.is_valid_port(port_num) {
            EINVAL.to_errno()
        } else {
            ENOENT.to_errno()
        };
    }
    // SAFETY: The caller's contract.
    let r = unsafe { &*rec };
    // An InfiniBand port's table holds InfiniBand GIDs only.
    if gid_type != bindings::ib_gid_type_IB_GID_TYPE_IB {
        return ENOENT.to_errno();
    }
    // SAFETY: Every bit pattern of the union is its raw bytes.
    let want = Gid(unsafe { r.port_gid.raw });
    let sgid = match find_on_port(
        device,
        dev,
        port_num,
        &want,
        crate::attrs::GidType::Ib,
        core::ptr::null_mut(),
    ) {
        Ok(a) => a.as_ptr().cast_const(),
        Err(e) => return e.to_errno(),
    };
    // SAFETY: The caller's contract.
    let out = unsafe { &mut *ah_attr };
    // SAFETY: `rdma_ah_attr` is a plain structure: all zeroes is valid (C's memset).
    *out = unsafe { core::mem::zeroed() };
    out.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB;
    out.__bindgen_anon_1.ib = bindings::ib_ah_attr {
        dlid: u16::from_be(r.mlid),
        src_path_bits: 0,
    };
    out.sl = r.sl;
    out.port_num = port_num;
    out.static_rate = r.rate;
    out.ah_flags = bindings::ib_ah_flags_IB_AH_GRH as u8;
    out.grh.dgid = r.mgid;
    out.grh.flow_label = u32::from_be(r.flow_label);
    // SAFETY: `sgid` is held (found above).
    out.grh.sgid_index = unsafe { (*sgid).index } as u8;
    out.grh.hop_limit = r.hop_limit;
    out.grh.traffic_class = r.traffic_class;
    out.grh.sgid_attr = sgid;
    0
}
