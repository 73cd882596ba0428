// SPDX-License-Identifier: GPL-2.0

//! C's `rdma_restrack_add` and `rdma_restrack_del` as C modules call them: the entry listed in
//! (or taken out of) its device's C roots (`c_abi::restrack`), and an rdma_cm ID's also in the
//! device's own tracking, which netlink reads (`rdma res show cm_id`, the `cm_id` count of
//! `rdma res show`): `crate::restrack::cm_id`.

use crate::{
    c_abi::{face::CFace, restrack},
    restrack::{cm_id::CmIdEntry, ResType},
};
use kernel::{bindings, prelude::*};

/// Whether `res` is an rdma_cm ID's entry.
///
/// # Safety
///
/// `res` is readable.
unsafe fn is_cm_id(res: *const bindings::rdma_restrack_entry) -> bool {
    // SAFETY: The caller's contract.
    unsafe { (*res).type_ == bindings::rdma_restrack_type_RDMA_RESTRACK_CM_ID }
}

/// C's `rdma_restrack_add` (see [`restrack::add`]); an rdma_cm ID's entry, once listed, goes
/// into its device's own tracking too.
///
/// # Safety
///
/// As for [`restrack::add`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_restrack_add(res: *mut bindings::rdma_restrack_entry) {
    // SAFETY: The caller's contract.
    unsafe {
        restrack::add(res);
        if is_cm_id(res) && (*res).valid && (*res).no_track() == 0 {
            track_cm_id(res);
        }
    }
}

/// C's `rdma_restrack_del` (see [`restrack::del`]); an rdma_cm ID leaves its device's own
/// tracking first.
///
/// # Safety
///
/// As for [`restrack::del`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_restrack_del(res: *mut bindings::rdma_restrack_entry) {
    // SAFETY: The caller's contract.
    unsafe {
        if is_cm_id(res) && (*res).valid && (*res).no_track() == 0 {
            untrack_cm_id(res);
        }
        restrack::del(res);
    }
}

/// The device an rdma_cm ID's entry `res` belongs to (its `id.device`, a face), if it is one of
/// this core's, still registered.
///
/// # Safety
///
/// `res` is the entry of a live `rdma_id_private`, whose device, if it is a face, is live.
unsafe fn cm_id_device<'a>(
    res: *mut bindings::rdma_restrack_entry,
) -> Option<&'a crate::device::ib_device::IbDevice> {
    // SAFETY: The caller's contract: an ID's entry, so `device_of` reads its `id.device`.
    let ib = unsafe { restrack::device_of(res) };
    if ib.is_null() {
        return None;
    }
    // SAFETY: A listed ID's device is a face rdma_cm got from a client's `add`, live while
    // the ID is on it (contract).
    unsafe { CFace::owner(ib) }
}

/// Lists the rdma_cm ID whose entry is `res` in its device's own tracking too, under the id
/// the root gave it, for netlink (`rdma res show cm_id`) and the `RES_GET` count.
///
/// # Safety
///
/// `res` is the valid, listed entry of a live `rdma_id_private` whose device is a live face.
unsafe fn track_cm_id(res: *mut bindings::rdma_restrack_entry) {
    // SAFETY: The caller's contract.
    let Some(dev) = (unsafe { cm_id_device(res) }) else {
        return;
    };
    // SAFETY: As above: `res` is an ID's entry, unlisted (`untrack_cm_id`) before rdma_cm
    // frees the ID.
    let Some(entry) = (unsafe { CmIdEntry::new(res) }) else {
        return;
    };
    let Ok(entry) = KBox::new(entry, GFP_KERNEL) else {
        return;
    };
    let ptr = KBox::into_raw(entry);
    // SAFETY: As above.
    let id = unsafe { (*res).id };
    // SAFETY: `ptr` stays alive and in place until `untrack_cm_id` unlists and frees it.
    if unsafe { dev.restrack().track(ResType::CmId, Some(id), ptr) }.is_some() {
        dev.restrack().add(ResType::CmId);
    } else {
        // SAFETY: Not listed: ours to free.
        drop(unsafe { KBox::from_raw(ptr) });
    }
}

/// Unlists an rdma_cm ID from its device's own tracking ([`track_cm_id`]) and frees its entry;
/// nothing if it is not listed there. Returns once no netlink fill reads it.
///
/// # Safety
///
/// `res` is the valid entry of a live `rdma_id_private` whose device is a live face.
unsafe fn untrack_cm_id(res: *mut bindings::rdma_restrack_entry) {
    // SAFETY: The caller's contract.
    let Some(dev) = (unsafe { cm_id_device(res) }) else {
        return;
    };
    // SAFETY: As above.
    let id = unsafe { (*res).id };
    let listed = dev.restrack().with(ResType::CmId, id, |_, obj| {
        let any: &dyn core::any::Any = obj;
        any.downcast_ref::<CmIdEntry>()
            .filter(|e| e.res() == res)
            .map(|e| core::ptr::from_ref(e).cast_mut())
    });
    if let Some(Some(ptr)) = listed {
        dev.restrack().untrack(ResType::CmId, ptr);
        dev.restrack().remove(ResType::CmId);
        // SAFETY: Made by `track_cm_id` with `KBox::into_raw`, unlisted now: no one else uses it.
        drop(unsafe { KBox::from_raw(ptr) });
    }
}
