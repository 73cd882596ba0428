// SPDX-License-Identifier: GPL-2.0

//! A C client's files in a port's sysfs directory: `ib_port_register_client_groups` and
//! `ib_port_unregister_client_groups`, with C's names and signatures (C's `sysfs.c`; ib_cm's
//! `cm_rx_msgs/`, `cm_tx_msgs/`, `cm_tx_retries/` and `cm_rx_duplicates/` counters of each
//! port). The groups go into `ports/<N>` of the device's own tree (not its copies in other
//! network namespaces, as in C), whose directory hands their files back here: a file's
//! `struct attribute` is inside C's `struct ib_port_attribute`, whose `show` and `store` get the
//! device's C structure and the port number, as C's `port_attr_show` calls them.

use crate::c_abi::face::{CFace, PortDir};
use kernel::{
    bindings,
    ffi::{c_char, c_int},
    prelude::*,
    sync::Arc,
};

/// The port directory of `port` of the face `ib`, for a C client's groups.
///
/// # Safety
///
/// `ib` is a face handed to the caller and not yet removed.
unsafe fn port_dir(ib: *mut bindings::ib_device, port: u32) -> Result<Arc<dyn PortDir>> {
    // SAFETY: The caller's contract.
    unsafe { CFace::owner_on_port(ib, port) }.map_err(Error::from_errno)?;
    // SAFETY: As above.
    unsafe { CFace::port_dir(ib, port) }.ok_or(ENODEV)
}

/// C's `ib_port_register_client_groups`: adds `groups` (a NULL-terminated list of groups of
/// `struct ib_port_attribute`s) to `port_num`'s directory; 0, `-EINVAL` for a port the device
/// does not have, `-ENODEV` for a device no longer registered or without sysfs, or sysfs's
/// error (`-EEXIST` for a group already there).
///
/// # Safety
///
/// `ibdev` was handed to the caller and not yet removed; `groups` stays valid until
/// [`ib_port_unregister_client_groups`] (or the device's removal) and its attributes are
/// `struct ib_port_attribute`s.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_port_register_client_groups(
    ibdev: *mut bindings::ib_device,
    port_num: u32,
    groups: *mut *const bindings::attribute_group,
) -> c_int {
    // SAFETY: The caller's contract.
    let dir = match unsafe { port_dir(ibdev, port_num) } {
        Ok(d) => d,
        Err(e) => return e.to_errno(),
    };
    // SAFETY: The groups live until they are removed (contract); the directory's files call
    // back into [`show`] and [`store`], which read them as `ib_port_attribute`s.
    match unsafe { dir.add_groups(groups) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// C's `ib_port_unregister_client_groups`: removes groups added by
/// [`ib_port_register_client_groups`], once their running callbacks have returned.
///
/// # Safety
///
/// As for [`ib_port_register_client_groups`]; `groups` was added to that port.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_port_unregister_client_groups(
    ibdev: *mut bindings::ib_device,
    port_num: u32,
    groups: *mut *const bindings::attribute_group,
) {
    // SAFETY: The caller's contract.
    if let Ok(dir) = unsafe { port_dir(ibdev, port_num) } {
        // SAFETY: Added to this directory (contract).
        unsafe { dir.remove_groups(groups) };
    }
}

/// The `struct ib_port_attribute` a C client's `attr` is in.
fn port_attribute(attr: *mut bindings::attribute) -> *mut bindings::ib_port_attribute {
    // SAFETY: Only the address is computed: `attr` is the first field.
    unsafe { kernel::container_of!(attr, bindings::ib_port_attribute, attr) }
}

/// A C client's file read: its `show(ibdev, port_num, attr, buf)`, `-EIO` without one (C's
/// `port_attr_show`).
///
/// # Safety
///
/// `ib` is a face's C structure, held; `attr` is in a group added by
/// [`ib_port_register_client_groups`] to `port`'s directory and still there; `buf` is a page.
pub(crate) unsafe fn show(
    ib: *mut bindings::ib_device,
    port: u32,
    attr: *mut bindings::attribute,
    buf: *mut c_char,
) -> isize {
    let a = port_attribute(attr);
    // SAFETY: `attr` is inside a live `ib_port_attribute` (contract).
    match unsafe { (*a).show } {
        // SAFETY: C's call, with what C passes.
        Some(f) => unsafe { f(ib, port, a, buf) },
        None => EIO.to_errno() as isize,
    }
}

/// A C client's file written: its `store(ibdev, port_num, attr, buf, count)`, `-EIO` without
/// one (C's `port_attr_store`).
///
/// # Safety
///
/// As for [`show`], except that `buf` is readable for `count` bytes.
pub(crate) unsafe fn store(
    ib: *mut bindings::ib_device,
    port: u32,
    attr: *mut bindings::attribute,
    buf: *const c_char,
    count: usize,
) -> isize {
    let a = port_attribute(attr);
    // SAFETY: `attr` is inside a live `ib_port_attribute` (contract).
    match unsafe { (*a).store } {
        // SAFETY: C's call, with what C passes.
        Some(f) => unsafe { f(ib, port, a, buf, count) },
        None => EIO.to_errno() as isize,
    }
}
