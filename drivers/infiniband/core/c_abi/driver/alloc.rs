// SPDX-License-Identifier: GPL-2.0

//! A C driver's device structure (C's `device.c`): `_ib_alloc_device`, `ib_set_device_ops` and
//! `ib_device_put` (`ib_dealloc_device` is with the registrations it ends).

use crate::c_abi::face;
use core::{mem::offset_of, ptr};
use kernel::{bindings, prelude::*};

/// C's `_ib_alloc_device`: a zeroed device structure of `size` bytes (the driver's structure,
/// `struct ib_device` first) set up as C's: null when `size` is smaller than `struct
/// ib_device` or memory is short. Every device lives in the initial network namespace here
/// (C's shared mode, which it forces for `net` too).
///
/// # Safety
///
/// Callable from process context; `net` is not read.
#[no_mangle]
pub(crate) unsafe extern "C" fn _ib_alloc_device(
    size: usize,
    _net: *mut bindings::net,
) -> *mut bindings::ib_device {
    match face::alloc_driver_device(size) {
        Ok(ib) => ib.as_ptr(),
        Err(e) => {
            if e == EINVAL {
                pr_warn!(
                    "_ib_alloc_device: {} bytes is smaller than struct ib_device\n",
                    size
                );
            }
            ptr::null_mut()
        }
    }
}

/// C's `ib_device_put`: drops a reference of `ib_device_get_by_netdev` (or C's inline
/// `ib_device_try_get`); the last one lets an unregistration waiting for it go on.
///
/// # Safety
///
/// The caller holds a reference on `device`.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_device_put(device: *mut bindings::ib_device) {
    // SAFETY: The caller's contract: the count and completion are the structure's.
    unsafe {
        if bindings::refcount_dec_and_test(&raw mut (*device).refcount) {
            bindings::complete(&raw mut (*device).unreg_completion);
        }
    }
}

/// Where `struct ib_device_ops`' function pointers and object sizes begin: from `device_group`
/// to its end every field is a pointer or a `size_t`, and C copies each one the device has
/// not set yet.
const FIRST_COPIED: usize = offset_of!(bindings::ib_device_ops, device_group);

const _: () = {
    assert!((size_of::<bindings::ib_device_ops>() - FIRST_COPIED) % size_of::<usize>() == 0);
    assert!(FIRST_COPIED % align_of::<usize>() == 0);
};

/// C's `ib_set_device_ops`: merges `ops` into the device's table: the driver id and owner when
/// given, the user ABI version when not 0, the flag bits or'ed, and every function and object
/// size the device does not have yet.
///
/// # Safety
///
/// `dev` is a structure of `_ib_alloc_device` not yet registered; `ops` is a readable table.
#[no_mangle]
pub(crate) unsafe extern "C" fn ib_set_device_ops(
    dev: *mut bindings::ib_device,
    ops: *const bindings::ib_device_ops,
) {
    // SAFETY: The caller's contract; the two tables do not overlap (one is the device's).
    let (d, o) = unsafe { (&mut (*dev).ops, &*ops) };
    if o.driver_id != bindings::rdma_driver_id_RDMA_DRIVER_UNKNOWN {
        if d.driver_id != bindings::rdma_driver_id_RDMA_DRIVER_UNKNOWN && d.driver_id != o.driver_id
        {
            pr_warn!(
                "ib_set_device_ops: driver id {} over {}\n",
                o.driver_id,
                d.driver_id
            );
        }
        d.driver_id = o.driver_id;
    }
    if !o.owner.is_null() {
        d.owner = o.owner;
    }
    if o.uverbs_abi_ver != 0 {
        d.uverbs_abi_ver = o.uverbs_abi_ver;
    }
    d.set_uverbs_no_driver_id_binding(
        d.uverbs_no_driver_id_binding() | o.uverbs_no_driver_id_binding(),
    );
    d.set_uverbs_robust_udata(d.uverbs_robust_udata() | o.uverbs_robust_udata());
    let words = (size_of::<bindings::ib_device_ops>() - FIRST_COPIED) / size_of::<usize>();
    let dst = ptr::from_mut(d).cast::<u8>();
    let src = ptr::from_ref(o).cast::<u8>();
    for i in 0..words {
        let at = FIRST_COPIED + i * size_of::<usize>();
        // SAFETY: Within both tables (checked at compile time above), aligned; each word is a
        // pointer or a size, which C tests against zero and copies as here.
        unsafe {
            let s = src.add(at).cast::<usize>().read();
            let t = dst.add(at).cast::<usize>();
            if s != 0 && t.read() == 0 {
                t.write(s);
            }
        }
    }
}
