// SPDX-License-Identifier: GPL-2.0

//! C modules' clients: `ib_register_client`, `ib_unregister_client`, `ib_set_client_data` and
//! `ib_get_net_dev_by_params` with C's names, signatures and semantics (C's `drivers/infiniband/core/device.c`), so that a
//! module built against `include/rdma/ib_verbs.h` registers its `struct ib_client` with this
//! core. A C client sits in the same list as the Rust ones ([`registry::Attached`]): it gets
//! `add` for every registered device in index order, devices that register later are added to
//! it in client registration order and removed from it in the reverse order, and `remove` is
//! called only if `add` succeeded. Its per-device data lives where C keeps it, in the device
//! structure's `client_data` xarray at the client's id, marked once `add` has returned, so
//! that C's inline `ib_get_client_data` finds it.

use crate::{
    attrs::CORE_CAP_PROT_IB,
    c_abi::face::{CFace, CLIENT_DATA_REGISTERED},
    device::ib_device::IbDevice,
    device::registry::{self, Attached},
};
use core::ptr::NonNull;
use kernel::{
    bindings,
    ffi::{c_int, c_void},
    prelude::*,
    sync::Arc,
};

/// A C module's `struct ib_client`, listed with the registry.
///
/// # Invariants
///
/// `raw` is valid from `ib_register_client` until `ib_unregister_client` returns (C's
/// contract for the structure a module passes).
struct CClient {
    raw: NonNull<bindings::ib_client>,
}

// SAFETY: The structure is the module's, read-only for us but the id and counts, which are
// written under the registry lock; its callbacks may be called from any thread.
unsafe impl Send for CClient {}
// SAFETY: As above.
unsafe impl Sync for CClient {}

impl CClient {
    fn client(&self) -> &bindings::ib_client {
        // SAFETY: Valid while listed (type invariant).
        unsafe { self.raw.as_ref() }
    }
}

/// The data of the client with id `id` on `face`'s device, if its `add` completed (the entry
/// is marked `CLIENT_DATA_REGISTERED`).
fn registered_data(face: &CFace, id: usize) -> Option<*mut c_void> {
    let ib = face.raw();
    // SAFETY: `ib` is the face's live structure; the xarray takes its own lock.
    unsafe {
        if !bindings::xa_get_mark(&raw mut (*ib).client_data, id, CLIENT_DATA_REGISTERED) {
            return None;
        }
        Some(bindings::xa_load(&raw mut (*ib).client_data, id))
    }
}

impl Attached for CClient {
    fn attach(&self, dev: &Arc<IbDevice>, face: Option<&CFace>) {
        let Some(face) = face else {
            return;
        };
        let client = self.client();
        // C's `add_client_context`: a device without kernel verbs only for a client that says
        // it needs none.
        if !dev.kverbs_provider() && client.no_kverbs_req() == 0 {
            return;
        }
        let ib = face.raw();
        let id = client.client_id as usize;
        // SAFETY: `ib` is the face's live structure; its xarray allocates, so a NULL store
        // reserves the index for the client's `ib_set_client_data`.
        let stored = unsafe {
            bindings::xa_store(
                &raw mut (*ib).client_data,
                id,
                core::ptr::null_mut(),
                bindings::GFP_KERNEL,
            )
        };
        // SAFETY: `xa_is_err` only reads the returned entry.
        if unsafe { bindings::rdma_rs_xa_is_err(stored) } {
            pr_warn!("no memory to add a C client to device {}\n", dev.index());
            return;
        }
        // `add` runs with the client data's semaphore read (C's `add_client_context`, which
        // holds it from the store on): the mark is set before another reader can look.
        // SAFETY: `ib` is the face's live structure, its semaphore initialised.
        unsafe { bindings::down_read(&raw mut (*ib).client_data_rwsem) };
        if let Some(add) = client.add {
            // SAFETY: The module's callback with the structure it expects, valid for the call.
            if unsafe { add(ib) } != 0 {
                // Its error is ignored and no more of its callbacks run for this device (C).
                // SAFETY: As above.
                unsafe {
                    bindings::xa_erase(&raw mut (*ib).client_data, id);
                    bindings::up_read(&raw mut (*ib).client_data_rwsem);
                }
                return;
            }
        }
        // SAFETY: As above: the entry exists (reserved or set by the client).
        unsafe {
            bindings::xa_set_mark(&raw mut (*ib).client_data, id, CLIENT_DATA_REGISTERED);
            bindings::up_read(&raw mut (*ib).client_data_rwsem);
        }
    }

    fn detach(&self, _dev: &IbDevice, face: Option<&CFace>) {
        let Some(face) = face else {
            return;
        };
        let client = self.client();
        let ib = face.raw();
        let id = client.client_id as usize;
        // C's `remove_client_context`: only a client whose `add` completed gets `remove`.
        let Some(data) = registered_data(face, id) else {
            return;
        };
        // The mark goes under the semaphore written (C's `remove_client_context`): once it is
        // clear, no `ib_get_net_dev_by_params` is in the client's callback for this device.
        // SAFETY: `ib` is the face's live structure, its semaphore initialised.
        unsafe {
            bindings::down_write(&raw mut (*ib).client_data_rwsem);
            bindings::xa_clear_mark(&raw mut (*ib).client_data, id, CLIENT_DATA_REGISTERED);
            bindings::up_write(&raw mut (*ib).client_data_rwsem);
        }
        if let Some(remove) = client.remove {
            // SAFETY: The module's callback, with the structure and the data it set.
            unsafe { remove(ib, data) };
        }
        // SAFETY: As above.
        unsafe { bindings::xa_erase(&raw mut (*ib).client_data, id) };
    }

    fn renamed(&self, face: &CFace) {
        let client = self.client();
        let Some(rename) = client.rename else {
            return;
        };
        let Some(data) = registered_data(face, client.client_id as usize) else {
            return;
        };
        // SAFETY: The module's callback, with the structure and the data it set.
        unsafe { rename(face.raw(), data) };
    }

    fn c_client(&self) -> *mut bindings::ib_client {
        self.raw.as_ptr()
    }
}

/// C's `ib_register_client`: registers `client` and calls its `add` for every registered
/// device. Returns 0, or `-ENOMEM`.
///
/// # Safety
///
/// `client` points to a `struct ib_client` that stays valid, and is not registered again,
/// until `ib_unregister_client(client)` returns.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_register_client(client: *mut bindings::ib_client) -> c_int {
    let Some(raw) = NonNull::new(client) else {
        return EINVAL.to_errno();
    };
    // SAFETY: `client` is valid (contract); C sets these first too.
    unsafe {
        bindings::refcount_set(&raw mut (*client).uses, 1);
        bindings::init_completion(&raw mut (*client).uses_zero);
    }
    let listed = match KBox::new(CClient { raw }, GFP_KERNEL) {
        Ok(b) => b,
        Err(e) => return Error::from(e).to_errno(),
    };
    let ptr: NonNull<dyn Attached> = NonNull::from(KBox::leak(listed));
    // SAFETY: `ptr` stays valid until `ib_unregister_client` takes it back; `client` as long
    // (contract).
    match unsafe { registry::list_c_client(ptr, client) } {
        Ok(()) => 0,
        Err(e) => {
            // SAFETY: Not listed: `ptr` is still ours, made by `KBox::leak` above.
            drop(unsafe { KBox::from_raw(ptr.cast::<CClient>().as_ptr()) });
            e.to_errno()
        }
    }
}

/// C's `ib_unregister_client`: calls `client`'s `remove` for every device it was added to and
/// unregisters it; no callback of it runs once this returns.
///
/// # Safety
///
/// `client` was registered with [`ib_register_client`] (or is not registered: then nothing
/// happens).
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_unregister_client(client: *mut bindings::ib_client) {
    if let Some(listed) = registry::unlist_c_client(client) {
        // The registration's use, then a wait for those `ib_get_net_dev_by_params` took (C).
        // SAFETY: `client` stays valid until this returns (contract).
        unsafe {
            client_put(client);
            bindings::wait_for_completion(&raw mut (*client).uses_zero);
        }
        // SAFETY: Made by `KBox::leak` in `ib_register_client` and unlisted now: ours again.
        drop(unsafe { KBox::from_raw(listed.cast::<CClient>().as_ptr()) });
    }
}

/// Drops a use of the C client `client` (C's `ib_client_put`): the last completes
/// `uses_zero`.
///
/// # Safety
///
/// `client` is registered or unregistering, and the caller holds the use it drops.
unsafe fn client_put(client: *mut bindings::ib_client) {
    // SAFETY: The caller's contract.
    unsafe {
        if bindings::refcount_dec_and_test(&raw mut (*client).uses) {
            bindings::complete(&raw mut (*client).uses_zero);
        }
    }
}

/// C's `ib_get_net_dev_by_params`: the net device a C client (IPoIB's) says serves the
/// connection request with `pkey`, `gid` and IP address `addr` on `port` of `dev`, held for
/// the caller (`dev_put`); null when none does, or on a port without InfiniBand. Asks each
/// client whose `add` completed on the device, in client id order, under the client data's
/// semaphore read, so that no client's `remove` for the device runs meanwhile. Sleeps.
///
/// # Safety
///
/// `dev` is a face handed to the caller and not yet removed; `gid` is null or readable, and
/// `addr` readable, for the clients' callbacks.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_get_net_dev_by_params(
    dev: *mut bindings::ib_device,
    port: u32,
    pkey: u16,
    gid: *const bindings::ib_gid,
    addr: *const bindings::sockaddr,
) -> *mut bindings::net_device {
    // SAFETY: The caller's contract.
    let Some(owner) = (unsafe { CFace::owner(dev) }) else {
        return core::ptr::null_mut();
    };
    let ib = owner
        .port_immutable(port)
        .is_some_and(|i| i.core_cap_flags & CORE_CAP_PROT_IB != 0);
    if !ib {
        return core::ptr::null_mut();
    }
    // Each client with the callback, in use until it has been asked (no lock of the registry
    // is held across the callbacks, nor taken that a client's removal holds: this runs from
    // ib_cm's work, which ib_cm's removal flushes).
    let Ok(clients) = registry::c_clients_in_use(|c| c.get_net_dev_by_params.is_some()) else {
        return core::ptr::null_mut();
    };
    let mut found: *mut bindings::net_device = core::ptr::null_mut();
    // SAFETY: `dev` is live (contract), its semaphore initialised.
    unsafe { bindings::down_read(&raw mut (*dev).client_data_rwsem) };
    for c in &clients {
        if !found.is_null() {
            break;
        }
        // SAFETY: In use (taken above): valid until its use is dropped below.
        let client = unsafe { c.as_ref() };
        let id = client.client_id as usize;
        // SAFETY: `dev` is live; the xarray takes its own lock.
        let data = unsafe {
            if !bindings::xa_get_mark(&raw mut (*dev).client_data, id, CLIENT_DATA_REGISTERED) {
                continue;
            }
            bindings::xa_load(&raw mut (*dev).client_data, id)
        };
        if let Some(cb) = client.get_net_dev_by_params {
            // SAFETY: The client's callback, its `add` done on `dev` and its `remove` held
            // off by the semaphore; the arguments are the caller's (contract).
            found = unsafe { cb(dev, port, pkey, gid, addr, data) };
        }
    }
    // SAFETY: As above.
    unsafe { bindings::up_read(&raw mut (*dev).client_data_rwsem) };
    for c in clients {
        // SAFETY: The use taken by `c_clients_in_use`.
        unsafe { client_put(c.as_ptr()) };
    }
    found
}

/// C's `ib_set_client_data`: sets `client`'s data for `device` (read back by C's inline
/// `ib_get_client_data`), normally from the client's `add`.
///
/// # Safety
///
/// `device` is a device handed to `client` by its `add`, not yet removed from it.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_set_client_data(
    device: *mut bindings::ib_device,
    client: *mut bindings::ib_client,
    data: *mut c_void,
) {
    // C warns about an error pointer and stores NULL instead.
    // SAFETY: `IS_ERR` only looks at the pointer's value.
    let data = if unsafe { bindings::IS_ERR(data) } {
        kernel::warn_on!(true);
        core::ptr::null_mut()
    } else {
        data
    };
    // SAFETY: `device` and `client` are valid (contract); the xarray takes its own lock.
    let old = unsafe {
        bindings::xa_store(
            &raw mut (*device).client_data,
            (*client).client_id as usize,
            data,
            bindings::GFP_KERNEL,
        )
    };
    // SAFETY: `xa_is_err` only reads the returned entry.
    kernel::warn_on!(unsafe { bindings::rdma_rs_xa_is_err(old) });
}
