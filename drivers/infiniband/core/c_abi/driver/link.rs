// SPDX-License-Identifier: GPL-2.0

//! Link types of software drivers (C's `nldev.c`): `rdma_link_register` and
//! `rdma_link_unregister` (rxe's `rxe`, siw's `siw`), and what `rdma link add` does with them
//! ([`newlink`]): the type's driver, loaded on demand (`rdma-link-<type>`), makes a device on a
//! net device.

use kernel::{
    bindings,
    ffi::c_char,
    net::route::NetDevice,
    prelude::*,
    str::{CStr, CString},
    sync::global_lock,
};

/// A registered `struct rdma_link_ops`, by address.
struct LinkOps(*mut bindings::rdma_link_ops);

// SAFETY: The table is the registering module's static data, alive until it unregisters it;
// it is only read.
unsafe impl Send for LinkOps {}

impl LinkOps {
    /// The type name (`ops->type`).
    fn kind(&self) -> &[u8] {
        // SAFETY: A registered table and its type string live until it is unregistered (C's
        // contract), which takes the list's lock, held by the caller.
        unsafe { CStr::from_char_ptr((*self.0).type_) }.to_bytes()
    }
}

global_lock! {
    // SAFETY: Initialized by the module initializer before the core's exports can be called.
    unsafe(uninit) static LINK_OPS: Mutex<KVec<LinkOps>> = KVec::new();
}

global_lock! {
    // SAFETY: As above.
    pub(crate) unsafe(uninit) static DELLINK: Mutex<()> = ();
}

/// Initializes the list of link types.
///
/// # Safety
///
/// Called once, at module load, before any C module can call the exports.
pub(crate) unsafe fn init() {
    // SAFETY: As this function's contract.
    unsafe {
        LINK_OPS.init();
        DELLINK.init();
    }
}

/// Frees the list's memory at unload (every link type's module, which depends on ib_core, has
/// gone).
pub(crate) fn clear() {
    let left = core::mem::replace(&mut *LINK_OPS.lock(), KVec::new());
    drop(left);
}

/// Serialises the drivers' `dellink` calls (C's `nldev_dellink_mutex`).
pub(crate) fn dellink_lock() -> kernel::sync::GlobalGuard<DELLINK> {
    DELLINK.lock()
}

/// C's `rdma_link_register`: makes link type `ops->type` known to `rdma link add` (a second
/// table of the same type is refused with a warning, as C's `WARN_ON_ONCE`).
///
/// # Safety
///
/// `ops` points to a table (with its type string) that stays valid until
/// [`rdma_link_unregister`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_link_register(ops: *mut bindings::rdma_link_ops) {
    let new = LinkOps(ops);
    let mut list = LINK_OPS.lock();
    if list.iter().any(|o| o.kind() == new.kind()) {
        pr_warn!(
            "rdma_link_register: link type {} registered twice\n",
            kernel::str::BStr::from_bytes(new.kind())
        );
        return;
    }
    if list.push(new, GFP_KERNEL).is_err() {
        // C's list cannot fail; without memory the type is not known and `rdma link add`
        // answers as for an unknown one.
        pr_warn!("rdma_link_register: no memory for a link type\n");
    }
}

/// C's `rdma_link_unregister`: forgets `ops`, waiting for a `rdma link add` using it.
///
/// # Safety
///
/// `ops` was registered with [`rdma_link_register`] (or is not listed).
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_link_unregister(ops: *mut bindings::rdma_link_ops) {
    let mut list = LINK_OPS.lock();
    if let Some(i) = list.iter().position(|o| o.0 == ops) {
        let _ = list.remove(i);
    }
}

/// `rdma link add NAME type KIND netdev NDEV` once its arguments are checked (C's
/// `nldev_newlink`): the link type's `newlink` makes the device, the type's module loaded first
/// if no table of that type is registered; `EINVAL` for a type nobody registers.
pub(crate) fn newlink(kind: &[u8], ibdev_name: &[u8], ndev: &NetDevice) -> Result {
    let name = CString::try_from_fmt(fmt!("{}", kernel::str::BStr::from_bytes(ibdev_name)))?;
    let find = |list: &KVec<LinkOps>| {
        list.iter().find(|o| o.kind() == kind).and_then(|o| {
            // SAFETY: A registered table (the lock is held by the caller of `find`).
            unsafe { (*o.0).newlink }
        })
    };
    let mut list = LINK_OPS.lock();
    if !list.iter().any(|o| o.kind() == kind) {
        drop(list);
        let alias =
            CString::try_from_fmt(fmt!("rdma-link-{}", kernel::str::BStr::from_bytes(kind)))?;
        let _ = kernel::kmod::request_module(&alias);
        list = LINK_OPS.lock();
    }
    let newlink = find(&list).ok_or(EINVAL)?;
    // SAFETY: The type's op, called with a NUL-terminated name and a live, held net device,
    // while its table stays registered (the lock is held, as C holds `link_ops_rwsem`).
    let r = unsafe { newlink(name.as_char_ptr().cast::<c_char>(), ndev.as_raw()) };
    drop(list);
    kernel::error::to_result(r)
}
