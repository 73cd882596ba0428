// SPDX-License-Identifier: GPL-2.0

//! C modules' clients: `ib_register_client`, `ib_unregister_client` and `ib_set_client_data`
//! with C's names, signatures and semantics (C's `drivers/infiniband/core/device.c`), so that a
//! module built against `include/rdma/ib_verbs.h` registers its `struct ib_client` with this
//! core. A C client sits in the same list as the Rust ones ([`registry::Attached`]): it gets
//! `add` for every registered device in index order, devices that register later are added to
//! it in client registration order and removed from it in the reverse order, and `remove` is
//! called only if `add` succeeded. Its per-device data lives where C keeps it, in the device
//! structure's `client_data` xarray at the client's id, marked once `add` has returned, so
//! that C's inline `ib_get_client_data` finds it.

use crate::{
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
        if let Some(add) = client.add {
            // SAFETY: The module's callback with the structure it expects, valid for the call.
            if unsafe { add(ib) } != 0 {
                // Its error is ignored and no more of its callbacks run for this device (C).
                // SAFETY: As above.
                unsafe { bindings::xa_erase(&raw mut (*ib).client_data, id) };
                return;
            }
        }
        // SAFETY: As above: the entry exists (reserved or set by the client).
        unsafe { bindings::xa_set_mark(&raw mut (*ib).client_data, id, CLIENT_DATA_REGISTERED) };
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
        // SAFETY: `ib` is the face's live structure.
        unsafe { bindings::xa_clear_mark(&raw mut (*ib).client_data, id, CLIENT_DATA_REGISTERED) };
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
        // SAFETY: Made by `KBox::leak` in `ib_register_client` and unlisted now: ours again.
        drop(unsafe { KBox::from_raw(listed.cast::<CClient>().as_ptr()) });
    }
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
